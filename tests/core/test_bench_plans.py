"""Benchmark plans: formulas, expansion per device, validation (torch only for FlopCounterMode)."""
from __future__ import annotations

import pytest

from gpuperf_gui.core.bench.plans import (
    BenchPlan,
    DeviceLimits,
    PlannedPoint,
    build_plan,
    estimate_point_cost_s,
    expand_plan,
)

GIB = 1024**3


def test_matmul_formula_is_2n3_and_bytes_are_three_matrices() -> None:
    point = PlannedPoint("matmul", "bf16", 8192)
    assert point.flops == 2 * 8192**3
    assert point.bytes == 3 * 8192 * 8192 * 2
    fp8 = PlannedPoint("matmul", "fp8", 1024)
    assert fp8.bytes == 2 * 1024 * 1024 * 1 + 1024 * 1024 * 2  # fp8 inputs, bf16 output


@pytest.mark.parametrize(("kernel", "flops_per_element", "arrays"), [
    ("copy", 0, 2), ("add", 1, 3), ("triad", 2, 3)])
def test_memory_kernel_formulas(kernel: str, flops_per_element: int, arrays: int) -> None:
    point = PlannedPoint(kernel, "fp32", 1000)
    assert point.flops == flops_per_element * 1000
    assert point.bytes == arrays * 4000


def test_fma_chain_intensity_grows_with_k() -> None:
    points = [PlannedPoint("fma_chain", "fp32", 1 << 20, k) for k in (1, 4, 64)]
    intensities = [p.flops / p.bytes for p in points]
    assert intensities == [0.25, 1.0, 16.0]  # 2k FLOPs per 8 bytes


def test_invalid_points_and_plans_are_refused() -> None:
    with pytest.raises(ValueError):
        PlannedPoint("conv", "fp32", 10)
    with pytest.raises(ValueError):
        PlannedPoint("fma_chain", "fp32", 10)
    with pytest.raises(ValueError):
        build_plan("huge")
    with pytest.raises(ValueError):
        build_plan("quick", device="tpu")
    with pytest.raises(ValueError):
        build_plan("quick", dtypes=("int4",))


def test_cuda_quick_plan_spans_cache_to_beyond_and_sweeps_intensity() -> None:
    limits = DeviceLimits("cuda", 140 * GIB, 60 * 1024**2, ("fp32", "tf32", "bf16", "fp16", "fp8"))
    points = expand_plan(build_plan("quick", "cuda"), limits)
    matmul = [p for p in points if p.kernel == "matmul"]
    assert {p.dtype for p in matmul} == {"fp32", "tf32", "bf16", "fp16", "fp8"}
    assert max(p.size for p in matmul) == 8192
    copies = [p.working_set_bytes for p in points if p.kernel == "copy"]
    assert min(copies) < 60 * 1024**2 < 8 * 60 * 1024**2 <= max(copies)
    ks = [p.fma_per_element for p in points if p.kernel == "fma_chain"]
    assert ks[0] == 1 and ks[-1] >= 256
    full = expand_plan(build_plan("full", "cuda"), limits)
    assert max(p.size for p in full if p.kernel == "matmul") == 16384


def test_cpu_plan_and_explicit_points() -> None:
    limits = DeviceLimits("cpu", 16 * GIB, 32 * 1024**2, ("fp32", "bf16", "fp16"))
    points = expand_plan(build_plan("quick", "cpu", dtypes=("fp32",), matmul_sizes=(64, 128)), limits)
    assert [p.size for p in points if p.kernel == "matmul"] == [64, 128]
    explicit = BenchPlan(points=(PlannedPoint("copy", "fp32", 10),))
    assert expand_plan(explicit, limits) == explicit.points
    assert all(estimate_point_cost_s(p, explicit.timing) > 0 for p in points)


def test_flop_counter_mode_counts_2n3_for_the_measured_matmul() -> None:
    from gpuperf_gui.core.bench.device import resolve_device
    from gpuperf_gui.core.bench.kernels import _matmul_kernel

    info = resolve_device("cpu")
    for n in (64, 96):
        kernel = _matmul_kernel(PlannedPoint("matmul", "fp32", n), info)
        assert kernel.counted_flops == 2 * n**3 == PlannedPoint("matmul", "fp32", n).flops
