"""Adapter between the trace engine (gpuperf_gui.core.trace) and the Trace tab.

The loading worker runs :func:`load_job`: the engine's load + analyse + diagnose generator (progress
and cancel between files), then the engine's MFU figures and roofline points, the op tables reshaped
for the table view, and the lanes prepared for drawing. Derived figures that fail become notes
shown in the tab (the lanes still open). Everything here runs in the worker thread and touches no widget.
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from gpuperf_gui.core.child_stream import iter_in_child
from gpuperf_gui.core.roofline import RooflinePoint
from gpuperf_gui.core.trace import figures
from gpuperf_gui.core.trace.analysis import RankAnalysis
from gpuperf_gui.core.trace.api import Progress, RankResult, TraceResult, iter_load_and_analyse
from gpuperf_gui.core.trace.figures import TraceMfuFigures
from gpuperf_gui.core.trace.model import TraceModel
from gpuperf_gui.views.trace_panels import DiagnosisView, OpTable
from gpuperf_gui.views.trace_prepare import LoadProgress, PreparedTrace, full_range, prepare_lanes


ENGINE = "gpuperf_gui.core.trace.api:iter_load_and_analyse"


def load_job(paths: list[Path], idle_threshold_us: float,
             isolate: bool | None = None) -> Callable[[threading.Event], Iterator[object]]:
    """A generator factory for :class:`~gpuperf_gui.views.workers.GeneratorWorker`.

    It runs the engine's :func:`~gpuperf_gui.core.trace.api.iter_load_and_analyse` (progress and
    cancel between files), then derives what the tab shows. With ``isolate`` (the default unless
    ``GPUPERF_TRACE_INPROCESS=1``) the engine runs in a helper interpreter
    (:mod:`gpuperf_gui.core.child_stream`): its JSON decoder holds the GIL for ~0.2 s on a 50 MB
    trace, which would freeze the window that long; cancel kills the helper at once.
    """
    if isolate is None:
        isolate = os.environ.get("GPUPERF_TRACE_INPROCESS", "") != "1"

    def produce(stop: threading.Event) -> Iterator[object]:
        if isolate:
            items = iter_in_child(ENGINE, ([str(p) for p in paths],), stop=stop, grace_s=0.0)
        else:
            items = iter_load_and_analyse(paths, stop)
        result: TraceResult | None = None
        for item in items:
            if stop.is_set():
                return
            if isinstance(item, Progress):
                yield LoadProgress(item.message, int(round(800 * item.fraction)), 1000)
            else:
                result = item
        if result is None or stop.is_set():
            return
        yield LoadProgress("preparing the lanes", 900, 1000)
        yield prepare(result, idle_threshold_us, stop)

    return produce


def prepare(result: TraceResult, idle_threshold_us: float,
            stop: threading.Event | None = None) -> PreparedTrace:
    """Turn the engine's TraceResult into what the tab draws and shows."""
    model: TraceModel = result.model
    notes: list[str] = []
    analyses = [r.analysis for r in result.ranks]
    stragglers = list(result.multi_rank.stragglers)
    mfu_figures, roofline_points = _mfu_and_roofline(result, analyses, notes)
    rank_specs, lanes = prepare_lanes(model, idle_threshold_us, stop)
    for ri, rank in enumerate(model.ranks):
        if ri < len(analyses):
            rank_specs[ri].step_durations_us = {s.number: s.duration_s * 1e6 for s in analyses[ri].steps}
        if rank.rank in stragglers:
            rank_specs[ri].straggler = True
            rank_specs[ri].title += " ⚠ straggler"
        if rank.truncation is not None:
            notes.insert(0, f"{Path(rank.file).name}: {rank.truncation.describe()}")
        for w in rank.warnings[:3]:
            if "truncated" not in w:
                notes.append(f"{Path(rank.file).name}: {w}")
    return PreparedTrace(model=model, ranks=rank_specs, lanes=lanes, full_range_us=full_range(model),
                         files=[r.file for r in model.ranks], analysis=analyses,
                         diagnosis=_diagnosis_view(result, stragglers), op_tables=_op_tables(result),
                         mfu_figures=mfu_figures, roofline_points=roofline_points, notes=notes,
                         idle_threshold_us=idle_threshold_us)


def _op_tables(result: TraceResult) -> dict[int, dict[str, OpTable]]:
    """Per rank, the "ops" (host) and "kernels" (device work: the rows with a ``device_share``)
    views; every figure is the engine's (OpRow), only converted to µs here."""
    out: dict[int, dict[str, OpTable]] = {}
    for r in result.ranks:
        ops = [(o.name, o.calls, o.self_cpu_s * 1e6, o.cpu_total_s * 1e6, o.self_device_s * 1e6,
                o.device_total_s * 1e6, o.flops if o.flops else None) for o in r.ops if o.kind == "host"]
        kernels = [(o.name, o.calls, o.device_total_s * 1e6,
                    o.mean_device_s * 1e6 if o.mean_device_s is not None else None, o.device_share)
                   for o in r.ops if o.kind == "device" and o.device_share is not None]
        out[r.trace.rank] = {
            "ops": OpTable(["Name", "Calls", "Self CPU", "CPU total", "Self device", "Device total", "FLOPs"],
                           ["text", "count", "us", "us", "us", "us", "flops"], ops),
            "kernels": OpTable(["Kernel", "Calls", "Device total", "Mean", "Share"],
                               ["text", "count", "us", "us", "percent"], kernels),
        }
    return out


def _rank_dict(rank: RankResult) -> dict:
    """The diagnosis panel's row of one rank: the engine's rank object plus the median in µs."""
    a = rank.analysis
    d = a.to_json()
    d["step_median_us"] = a.step_time_median_s * 1e6 if a.step_time_median_s else None
    d["rank"] = a.rank
    return d


def _diagnosis_view(result: TraceResult, stragglers: list[int]) -> DiagnosisView:
    d = result.diagnosis
    per_rank = [_rank_dict(r) for r in result.ranks]
    steps = []
    if len(result.ranks) == 1:
        steps = [(s.number, s.duration_s * 1e6, s.gpu_busy_fraction, s.warmup) for s in result.ranks[0].analysis.steps]
    notes = []
    skew = result.multi_rank.step_time_skew_s
    if skew is not None and len(result.ranks) > 1:
        notes.append(f"step-time skew across ranks: {skew * 1e3:.3g} ms")
    return DiagnosisView(signature=d.signature, confidence=d.confidence, evidence=list(d.evidence),
                         fix=d.fix, secondary=list(d.secondary), per_rank=per_rank, steps=steps,
                         straggler=stragglers[0] if stragglers else None, notes=notes)


def _mfu_and_roofline(result: TraceResult, analyses: list[RankAnalysis],
                      notes: list[str]) -> tuple[TraceMfuFigures | None, list[RooflinePoint]]:
    """The MFU tab's figures and the roofline points; a failure becomes a note (the lanes still open)."""
    mfu_figures = None
    try:
        mfu_figures = figures.mfu_figures(analyses)
    except Exception as exc:  # noqa: BLE001 - shown as a note; the lanes still open
        notes.append(f"MFU figures failed: {type(exc).__name__}: {exc}")
    points: list[RooflinePoint] = []
    try:
        for r in result.ranks:
            pts = figures.roofline_points(r.trace)
            if len(result.ranks) > 1:
                pts = [replace(p, label=f"rank {r.trace.rank}: {p.label}") for p in pts]
            points += pts
    except Exception as exc:  # noqa: BLE001
        notes.append(f"roofline points failed: {type(exc).__name__}: {exc}")
    return mfu_figures, points
