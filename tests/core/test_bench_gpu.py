"""The measuring loop on a CUDA device (skipped where there is none; run on the H200 machine)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
from gpuperf_gui.core.bench.measure import iter_measurements
from gpuperf_gui.core.bench.plans import BenchPlan, PlannedPoint, TimingPolicy
from gpuperf_gui.core.bench.points import MeasuredPoint

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_cuda_points_counted_flops_and_ceilings(tmp_path: Path) -> None:
    points = (PlannedPoint("matmul", "bf16", 4096), PlannedPoint("matmul", "fp32", 2048),
              PlannedPoint("copy", "fp32", 1 << 28), PlannedPoint("add", "fp32", 1 << 12))
    plan = BenchPlan(device="cuda", suite="custom", points=points,
                     timing=TimingPolicy(warmup_s=0.025, rep_s=0.1),
                     results_path=tmp_path / "runs" / "gpu.jsonl")
    items = list(iter_measurements(plan, threading.Event()))
    measured = [i for i in items if isinstance(i, MeasuredPoint)]
    assert len(measured) == len(points)
    bf16 = next(p for p in measured if p.kernel == "matmul" and p.dtype == "bf16")
    assert bf16.counted_flops == 2 * 4096**3  # FlopCounterMode agrees with 2·n³
    assert bf16.method.startswith("cuda-events")
    assert 50e12 < bf16.flops_per_s < 2.5e15  # any current datacenter GPU, far below any sparse peak
    tiny = next(p for p in measured if p.kernel == "add")
    assert "graph" in tiny.method  # kernels under ~20 µs are timed in a CUDA graph
    ceilings = items[-1]
    assert isinstance(ceilings, MeasuredCeilings) and ceilings.bandwidth_bytes_per_s > 1e11
