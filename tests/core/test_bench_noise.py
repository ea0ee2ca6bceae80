"""Ceilings from noisy points (docs/conventions.md, Benchmark points that are not trusted): a point whose interquartile spread is wide is marked
unreliable, is never saved as a ceiling, and the run says the machine was busy."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.bench import measure, noise
from gpuperf_gui.core.bench.ceilings import compute_ceilings, load_ceilings, update_saved_ceilings
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _matmul(n: int, seconds: float, iqr: tuple[float, float], dtype: str = "fp32") -> MeasuredPoint:
    return MeasuredPoint("matmul", dtype, n, 2.0 * n**3, 3 * 4.0 * n * n, seconds, "cpu-perf_counter",
                         iqr[0], iqr[1], 20, device_id="cpu")


# The point: an fp32 matmul of 83.2 GFLOP/s with ±508 % spread (IQR 10.16x its median),
# beside a quiet point of 40 GFLOP/s (±2 %)
NOISY = _matmul(1024, 2 * 1024**3 / 83.2e9, (0.0, 10.16 * 2 * 1024**3 / 83.2e9))
QUIET = _matmul(512, 2 * 512**3 / 40e9, (0.98 * 2 * 512**3 / 40e9, 1.02 * 2 * 512**3 / 40e9))


def test_the_idle_h200_runs_have_no_unreliable_point() -> None:
    """The threshold against what an idle device measures (the widest: 0.35 for a 6 µs matmul)."""
    spreads = []
    for name in ("h200_full_run.jsonl", "h200_quick_final.jsonl"):
        for line in (RESULTS / name).read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "point":
                record.pop("type")
                spreads.append(MeasuredPoint.from_json_dict(record))
    assert len(spreads) >= 100
    assert all(p.reliable for p in spreads)
    assert max(p.iqr_fraction for p in spreads) < noise.UNRELIABLE_IQR_FRACTION < 10.16


def test_a_wide_point_is_marked_and_never_a_ceiling(tmp_path: Path) -> None:
    assert not NOISY.reliable and QUIET.reliable and NOISY.to_json_dict()["reliable"] is False
    ceilings = compute_ceilings([NOISY, QUIET], "cpu")
    assert ceilings.matmul_flops_per_s["fp32"] == pytest.approx(40e9)  # the quiet point, not 83.2 G
    assert ceilings.unreliable_points == 1 and "1 unreliable point" in ceilings.summary()
    alone = compute_ceilings([NOISY], "cpu")
    assert alone.matmul_flops_per_s == {}  # no ceiling at all rather than a wrong one
    update_saved_ceilings(ceilings, tmp_path)
    assert load_ceilings("cpu", tmp_path).matmul_flops_per_s["fp32"] == pytest.approx(40e9)


def test_the_run_says_the_machine_was_busy(monkeypatch) -> None:
    monkeypatch.setattr(noise.os, "getloadavg", lambda: (9.5, 8.0, 7.0))
    monkeypatch.setattr(noise.os, "cpu_count", lambda: 2)
    msg = measure._busy_message([NOISY, QUIET], None)
    assert isinstance(msg, BenchMessage) and msg.kind == "warning"
    assert msg.text.startswith("the machine was busy: 1 of 2 points")
    assert "matmul fp32 1024³ (±508%)" in msg.text and "load average 9.5 on 2 cores (busy)" in msg.text
    assert measure._busy_message([QUIET], None) is None


def test_clocks_below_base_and_other_gpu_processes_are_named() -> None:
    slow = MeasuredPoint("matmul", "bf16", 4096, 2.0 * 4096**3, 6.0 * 4096**2, 1e-3, "cuda-events", 0.4e-3,
                         1.6e-3, 20, device="cuda:0", device_id="h200", sm_clock_hz=1.2e9)
    report = noise.busy_report([slow], base_sm_clock_hz=1.755e9, other_gpu_processes=2)
    reasons = "; ".join(report.reasons())
    assert "2 other processes on the GPU" in reasons and "1200 < 1755 MHz" in reasons
