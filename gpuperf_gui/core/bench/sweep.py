"""Sweeps with collectives, and the one place a run's ceilings are saved.

:func:`iter_run` chains the measuring loop (:func:`~gpuperf_gui.core.bench.measure.iter_measurements`)
and, optionally, the collectives. :func:`save_ceilings_on_the_way` passes any run's items through
and saves its ceilings as they go by: the loops yield, the caller saves. The Benchmarks tab runs
:func:`iter_run_and_save` in its helper process; `gpuperf bench` wraps its loop the same way.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from gpuperf_gui.core.bench import collectives as collectives_module
from gpuperf_gui.core.bench import measure
from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    compute_ceilings,
    reset_saved_ceilings,
    save_ceilings,
    update_saved_ceilings,
)
from gpuperf_gui.core.bench.device import gpu_device_id
from gpuperf_gui.core.bench.measure import BenchItem, run_name
from gpuperf_gui.core.bench.plans import BenchPlan
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import ResultsWriter


def iter_measurements(plan: BenchPlan, stop: threading.Event) -> Iterator[BenchItem]:
    """The measuring loop (looked up at call time, so tests can stand in for it)."""
    return measure.iter_measurements(plan, stop)


def save_run_ceilings(ceilings: MeasuredCeilings, results_dir: Path | None = None,
                      reset: bool = False) -> None:
    """Save a run's ceilings: merged into the device's best so far, or, with ``reset``
    (``gpuperf bench --reset-ceilings``), in place of them."""
    if reset:
        reset_saved_ceilings(ceilings.device_id, results_dir)
        save_ceilings(ceilings, results_dir)
    else:
        update_saved_ceilings(ceilings, results_dir)


def save_ceilings_on_the_way(items: Iterable[BenchItem], results_dir: Path | None = None,
                             reset: bool = False) -> Iterator[BenchItem]:
    """Yield ``items`` unchanged; each :class:`MeasuredCeilings` that carries a measurement is
    saved (:func:`save_run_ceilings`) before it is passed on. With ``reset`` the first save of a
    device replaces its saved ceilings and later ones merge into it."""
    replaced: set[str] = set()
    for item in items:
        if isinstance(item, MeasuredCeilings) and _has_measurements(item):
            save_run_ceilings(item, results_dir, reset and item.device_id not in replaced)
            replaced.add(item.device_id)
        yield item


def _has_measurements(ceilings: MeasuredCeilings) -> bool:
    return bool(ceilings.matmul_flops_per_s or ceilings.bandwidth_bytes_per_s
                or ceilings.collective_busbw_bytes_per_s)


def iter_run_and_save(plan: BenchPlan, stop: threading.Event, *, results_dir: Path | None = None,
                      collectives: Any = None, reset_ceilings: bool = False) -> Iterator[BenchItem]:
    """:func:`iter_run`, saving its ceilings under ``results_dir`` (the Benchmarks tab's target).

    ``collectives`` may be a suite name ("quick", "full"): its default plan is made here, in the
    helper process, because choosing the backend counts the GPUs, which imports torch."""
    if isinstance(collectives, str):
        collectives = collectives_module.default_collective_plan(collectives)
    yield from save_ceilings_on_the_way(iter_run(plan, stop, collectives=collectives), results_dir,
                                        reset_ceilings)


def iter_run(
    plan: BenchPlan,
    stop: threading.Event,
    *,
    collectives: Any = None,
) -> Iterator[BenchItem]:
    """:func:`iter_measurements`, then (optionally) the collectives of ``collectives`` (a
    ``CollectivePlan``); the final ceilings carry both. Collective points go to the same file.

    The sweep's own "finished" message is held back: one "finished" message comes at the very end
    (after the collectives), then the ceilings (the collectives' alone when the sweep gave none).
    Nothing is saved beyond the run file: wrap it in :func:`save_ceilings_on_the_way`."""
    started = time.monotonic()
    ceilings: MeasuredCeilings | None = None
    finished: BenchMessage | None = None
    sweep_points = 0
    for item in iter_measurements(plan, stop):
        if isinstance(item, MeasuredCeilings):
            ceilings = item
        elif isinstance(item, BenchMessage) and item.kind == "finished":
            finished = item
        else:
            sweep_points += isinstance(item, MeasuredPoint)
            yield item
    if collectives is not None and not stop.is_set():
        points: list[MeasuredPoint] = []
        writer = ResultsWriter(plan.results_path) if plan.results_path else None
        try:
            for item in collectives_module.iter_collective_measurements(collectives, stop):
                if isinstance(item, MeasuredPoint):
                    points.append(item)
                    if writer:
                        writer.write_point(item)
                yield item
            if points:
                ceilings = with_collective_ceilings(ceilings, points, run_name(plan))
                if writer:
                    writer.write_ceilings(ceilings)
        finally:
            if writer:
                writer.close()
        if finished is not None or points:
            measured = sweep_points + len(points)
            summary = ceilings.summary() if ceilings is not None else "no ceilings measured"
            finished = BenchMessage("finished", f"{measured} points in {time.monotonic() - started:.1f} s; "
                                                f"{summary}", measured, measured, eta_s=0.0)
    if finished is not None:
        yield finished
    if ceilings is not None:
        yield ceilings


def _collective_device_id(points: list[MeasuredPoint]) -> str:
    """The device id of collective points: the local GPU's on CUDA, else "cpu"."""
    if not points[0].device.startswith("cuda"):
        return "cpu"
    import torch

    return gpu_device_id(torch.cuda.get_device_name(points[0].device))


def with_collective_ceilings(ceilings: MeasuredCeilings | None, points: list[MeasuredPoint],
                             run: str) -> MeasuredCeilings:
    """``ceilings`` with the busbw of collective ``points`` added; the collective ceilings alone
    (for their device) when the sweep gave none."""
    device_id = ceilings.device_id if ceilings is not None else _collective_device_id(points)
    collective = compute_ceilings(points, device_id, run=run)
    if ceilings is None:
        return collective
    return replace(ceilings, collective_busbw_bytes_per_s=collective.collective_busbw_bytes_per_s,
                   collective_runs=collective.collective_runs)

__all__ = ["iter_run", "iter_run_and_save", "save_ceilings_on_the_way", "save_run_ceilings",
           "with_collective_ceilings"]
