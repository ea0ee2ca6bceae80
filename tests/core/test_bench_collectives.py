"""Collective bandwidth: the nccl-tests bus factors and a real gloo run with two processes."""
from __future__ import annotations

import threading

import pytest

from gpuperf_gui.core.bench.ceilings import compute_ceilings
from gpuperf_gui.core.bench.collectives import (
    CollectivePlan,
    bus_factor,
    default_collective_plan,
    iter_collective_measurements,
)
from gpuperf_gui.core.bench.points import MeasuredPoint


def test_bus_factors_follow_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        bus_factor("broadcast_all", 2)


def test_default_plan_on_cpu_is_gloo_with_two_ranks() -> None:
    plan = default_collective_plan("quick", backend="gloo")
    assert plan.backend == "gloo" and plan.world_size == 2 and plan.sizes_bytes[0] < plan.sizes_bytes[-1]


def test_gloo_collectives_with_two_processes(monkeypatch) -> None:
    from gpuperf_gui.core.bench import points as point_module

    # three 3-sample points on a shared CI machine can spread wide: the noise rule that keeps such points
    # out of the ceilings has its own tests (test_bench_noise.py); here every op must reach its ceiling
    monkeypatch.setattr(point_module, "UNRELIABLE_IQR_FRACTION", float("inf"))
    plan = CollectivePlan(backend="gloo", world_size=2, sizes_bytes=(4096, 1 << 20), iters=3, samples=3)
    items = list(iter_collective_measurements(plan, threading.Event()))
    points = [i for i in items if isinstance(i, MeasuredPoint)]
    assert [(p.kernel, p.size) for p in points] == [
        (op, size) for op in ("all_reduce", "all_gather", "reduce_scatter") for size in (4096, 1 << 20)]
    for point in points:
        assert point.world_size == 2 and point.seconds > 0 and point.method.startswith("gloo")
        assert point.busbw_bytes_per_s == pytest.approx(point.bytes_per_s * bus_factor(point.kernel, 2))
    ceilings = compute_ceilings(points, "cpu")
    assert set(ceilings.collective_busbw_bytes_per_s) == {"all_reduce", "all_gather", "reduce_scatter"}


def test_one_rank_is_skipped() -> None:
    items = list(iter_collective_measurements(CollectivePlan(world_size=1), threading.Event()))
    assert items[0].kind == "skipped"
