"""The local engine: load + analyse + diagnose, with progress and cancel, and the JSON it prints.

The program asks :class:`.trace.Trace`, which runs this (or the compact engine of :mod:`.cluster`).
"""
from __future__ import annotations

import threading
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from gpuperf_gui.core.units import json_safe

from ..analysis.kernel_roof import attach_kernels
from ..analysis.rank_analysis import CPU_COLLECTIVE_RE, RankAnalysis, analyse_rank, device_events
from ..ingest.decode import DEFAULT_MAX_BYTES
from ..diagnosis.diagnose import (THRESHOLDS, Diagnosis, StragglerEvidence, diagnose_job, diagnose_rank,
                                  late_rank_diagnoses)
from ..ingest.budget import MemoryBudget
from ..ingest.load import (FileFailure, dedupe_ranks, discover_files, failure_notes, iter_per_file, load_rank,
                           plan_workers)
from ..model.trace_model import RankTrace, TraceModel
from ..model.name_masks import pattern_mask, predicate_mask
from ..analysis.op_points import OpPoint, op_table_and_points
from ..analysis.optable import OpRow
from ..diagnosis.stragglers import RankCollectives, launch_steps, per_step_lags
from ..analysis.what_if import MfuModel, WhatIf, for_result


@dataclass(frozen=True)
class Progress:
    """A progress report: ``fraction`` in [0, 1] and a human message."""

    fraction: float
    message: str


@dataclass
class RankResult:
    """One rank: the model (for drawing), its analysis, diagnosis, op table and roofline points."""

    trace: RankTrace
    analysis: RankAnalysis
    diagnosis: Diagnosis
    ops: list[OpRow]
    points: list[OpPoint]
    """:func:`.op_points.op_points` of the trace, found with the op table."""


@dataclass
class MultiRankSummary:
    """Cross-rank figures: step-time skew and straggler ranks (:func:`multi_rank_summary`)."""

    step_time_skew_s: float | None
    stragglers: list[int]
    collective_start_lag_s: dict[int, float] = field(default_factory=dict)
    evidence: list[StragglerEvidence] = field(default_factory=list)
    pipeline: bool = False
    """Ranks exchange point-to-point send/recv: stages offset by design, never stragglers."""

    def to_json(self) -> dict:
        return {"step_time_skew_s": self.step_time_skew_s, "stragglers": list(self.stragglers),
                "collective_start_lag_s": {str(k): v for k, v in self.collective_start_lag_s.items()},
                "straggler_wait_s": {str(e.rank): e.wait_s for e in self.evidence},
                "pipeline": self.pipeline}


@dataclass
class TraceResult:
    """Everything about one job (one or more ranks)."""

    model: TraceModel
    ranks: list[RankResult]
    diagnosis: Diagnosis
    multi_rank: MultiRankSummary
    mfu_model: MfuModel | None = None
    """The model's FLOPs and the peak, when given (``--params/--tokens-per-step``): MFU per projection."""
    _what_if: WhatIf | None = field(default=None, repr=False)
    _what_if_done: bool = field(default=False, repr=False)

    def what_if(self) -> WhatIf | None:
        """The critical path and the projection per cause (:mod:`.what_if`), found once."""
        if not self._what_if_done:
            self._what_if = for_result(self, self.mfu_model, keep_graph=True)
            self._what_if_done = True
        return self._what_if

    def to_json(self, top: int = 10) -> dict:
        """The ``gpuperf diagnose --json`` object (docs/cli.md contract, plus extra keys)."""
        ranks = [rank_json(r.analysis, r.diagnosis, r.ops[:top], [p.to_json() for p in r.points])
                 for r in self.ranks]  # the points are the ones "Show on roofline" draws
        obj = job_json(self.diagnosis, ranks, self.multi_rank, self.model.notes)
        wi = self.what_if()
        obj.update(json_safe(wi.to_json() if wi else {"what_if": [], "critical_path": None}))
        return obj


def rank_json(analysis: RankAnalysis, diagnosis: Diagnosis, top_ops: list[OpRow], roofline_points: list[dict]
              ) -> dict:
    """One rank of ``gpuperf diagnose --json`` (both engines build it here, so their output is the same)."""
    obj = analysis.to_json()
    obj["diagnosis"] = diagnosis.to_json()
    obj["op_table"] = [row.to_json() for row in top_ops]
    obj["roofline_points"] = list(roofline_points)
    if analysis.kernels is not None:   # the Overview's figures (tensor cores, achieved, % of roof)
        obj["kernels"] = analysis.kernels.to_json()  # type: ignore[attr-defined]
    return obj


def job_json(diagnosis: Diagnosis, ranks: list[dict], multi_rank: MultiRankSummary, notes: Sequence[str]) -> dict:
    """The whole ``gpuperf diagnose --json`` object from its ranks' objects (SI units, no NaN/inf)."""
    return json_safe({"diagnosis": diagnosis.to_json(), "ranks": ranks, "multi_rank": multi_rank.to_json(),
                      "load_notes": list(notes)})


_Loaded = tuple[RankTrace, RankAnalysis, list[OpRow], list[OpPoint]]


def _analyse_one(path: Path, *, max_bytes: int | None, order_index: int,
                 memory_budget: MemoryBudget | int | None = None) -> _Loaded:
    """One file's work, in a worker process: load and :func:`analyse_loaded_rank`, on the rank's own clock."""
    rt = load_rank(path, max_bytes=max_bytes, order_index=order_index, memory_budget=memory_budget)
    return (rt, *analyse_loaded_rank(rt))


def analyse_loaded_rank(rt: RankTrace) -> tuple[RankAnalysis, list[OpRow], list[OpPoint]]:
    """What every engine finds of a loaded rank: its analysis with its kernels' precision and roofs,
    its op table and its roofline points (found together: they share the op nesting)."""
    return (attach_kernels(rt, analyse_rank(rt)), *op_table_and_points(rt))


def iter_load_and_analyse(paths: Sequence[Path | str], stop: threading.Event, *,
                          max_bytes: int | None = DEFAULT_MAX_BYTES, workers: int | None = None,
                          memory_budget: MemoryBudget | int | None = None
                          ) -> Iterator[Progress | TraceResult]:
    """Load, analyse and diagnose; yield :class:`Progress` items, then one :class:`TraceResult`
    (nothing once ``stop`` is set). Several files are loaded in parallel processes (``workers``,
    default: up to the CPU count) by :func:`.load.iter_per_file`. Errors (:class:`TraceFormatError`)
    propagate to the caller."""
    files = discover_files(paths)
    n = len(files)
    yield Progress(0.0, f"reading {n} file{'s' if n != 1 else ''}")
    loaded: list[_Loaded | None] = [None] * n
    failures: list[FileFailure] = []
    n_workers, budget = plan_workers(files, MemoryBudget.of(memory_budget), workers)  # budget shared
    work = partial(_analyse_one, max_bytes=max_bytes, memory_budget=budget)
    with closing(iter_per_file(files, work, stop, workers=n_workers, collect_failures=n > 1)) as results:
        for done_count, (i, item) in enumerate(results, 1):
            if isinstance(item, FileFailure):  # a run folder's other JSON, or one broken rank
                failures.append(item)
            else:
                loaded[i] = item
            yield Progress(0.9 * done_count / n, f"analysed {files[i].name}")
    if stop.is_set():
        return
    notes = failure_notes(failures, n)
    yield Progress(0.95, "diagnosing")
    result = assemble_job([x for x in loaded if x is not None])
    result.model.notes = notes
    yield result


def assemble_job(loaded: list[_Loaded]) -> TraceResult:
    """The job from its ranks' (trace, analysis, op table, points), deduplicated, aligned and diagnosed."""
    model = TraceModel.aligned(dedupe_ranks([rt for rt, *_ in loaded]))
    by_trace = {id(rt): rest for rt, *rest in loaded}
    ranks = []
    for rt in model.ranks:
        a, ops, points = by_trace[id(rt)]
        a.rank = rt.rank
        ranks.append(RankResult(rt, a, diagnose_rank(a), ops, points))
    summary = multi_rank_summary(ranks)
    return TraceResult(model, ranks, diagnose_ranks(ranks, summary), summary)


def diagnose_ranks(ranks: Sequence[RankResult], summary: MultiRankSummary) -> Diagnosis:
    """The job's verdict (either engine's ranks); a late rank's own verdict names it a straggler."""
    diagnosed = [(r.analysis, r.diagnosis) for r in ranks]
    diagnosis = diagnose_job(diagnosed, summary.evidence)
    late = late_rank_diagnoses(diagnosed, summary.evidence)
    for r in ranks:
        r.diagnosis = late.get(r.analysis.rank, r.diagnosis)
    return diagnosis


def multi_rank_summary(ranks: list[RankResult], spans: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
                       by_step: dict[int, RankCollectives] | None = None) -> MultiRankSummary:
    """Step-time skew across ranks and straggler ranks.

    Straggler rule (after HTA ``get_potential_stragglers``): the n-th collective of every rank is the
    same collective (GPU communication kernels; CPU-side collectives where a rank has none, as with
    gloo). Where the ranks' steps are known, collectives are matched step by step, each in the step
    that launched it, and in each step the one whose duration differs most across ranks counts
    (:mod:`.stragglers`): the one the others waited in. Without steps, every collective counts. A
    rank's lag is the median of its start minus the median start of the other ranks. A rank is a
    straggler when its lag exceeds ``straggler_lag_min_step`` of the median step and
    ``straggler_lag_min_s``, *and* the other ranks' collectives last longer than its own by at least
    ``straggler_wait_explained_min`` of the lag: they wait inside the collective for it (over NCCL
    their kernels spin), so the lag explains their exposed communication. Ranks that exchange
    point-to-point send/recv (pipeline stages, offset by design) are never stragglers.
    ``spans`` and ``by_step`` are given by the compact engine, else found here.
    """
    if len(ranks) < 2:
        return MultiRankSummary(None, [])
    medians = [r.analysis.step_time_median_s for r in ranks if r.analysis.step_time_median_s]
    skew = float(max(medians) - min(medians)) if len(medians) >= 2 else None
    pipeline = any(r.analysis.p2p_kernels or r.analysis.p2p_cpu_ops for r in ranks)
    step = float(np.median(medians)) if medians else 0.0
    t = THRESHOLDS
    threshold_s = max(t["straggler_lag_min_step"] * step, t["straggler_lag_min_s"])
    per_step = all(len(r.analysis.steps) >= 2 for r in ranks)
    if per_step and by_step is None and spans is None:
        by_step = {r.trace.rank: c for r in ranks if (c := rank_collectives_by_step(r.trace)) is not None}
    matched = per_step_lags(by_step) if per_step and by_step else {}
    if matched:
        lags = {rk: (lag / 1e6, wait / 1e6, n) for rk, (lag, wait, n) in matched.items()}
        counted = "steps, each at the collective the ranks wait in"
    else:
        spans = _collective_spans(ranks) if spans is None else spans
        counted = "steps' first collectives" if per_step else "collectives"
        lags = _lags_in_order(spans)
    lag_by_rank, evidence = {}, []
    for rank, (lag_s, wait_s, n) in lags.items():
        lag_by_rank[rank] = lag_s
        if not pipeline and lag_s > threshold_s and wait_s >= t["straggler_wait_explained_min"] * lag_s:
            evidence.append(StragglerEvidence(rank, lag_s, wait_s, n, step, counted))
    evidence.sort(key=lambda e: -e.lag_s)
    return MultiRankSummary(skew, [e.rank for e in evidence], lag_by_rank, evidence, pipeline)


def _lags_in_order(spans: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, tuple[float, float, int]]:
    """Per rank (lag_s, wait_s, collectives compared): the k-th collective of every rank matched."""
    if len(spans) < 2:
        return {}
    k = min(len(v[0]) for v in spans.values())
    if k == 0:
        return {}
    order = list(spans)
    start = np.stack([spans[rk][0][:k] for rk in order])
    dur = np.stack([spans[rk][1][:k] - spans[rk][0][:k] for rk in order])
    out = {}
    for i, rank in enumerate(order):
        others = np.delete(np.arange(len(order)), i)
        lag_s = float(np.median(start[i] - np.median(start[others], axis=0))) / 1e6
        wait_s = float(np.median(np.median(dur[others], axis=0) - dur[i])) / 1e6
        out[rank] = (lag_s, wait_s, k)
    return out


def _collective_spans(ranks: list[RankResult]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank, (start_us, end_us) of its collectives in start order (:func:`rank_collectives`)."""
    out = {}
    for r in ranks:
        starts, durations = rank_collectives(r.trace)
        if starts is not None and starts.size:
            out[r.trace.rank] = (starts, starts + durations)
    return out


def rank_collectives(rt: RankTrace) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The collectives the straggler rule compares without steps (:func:`_all_collectives`): (start_us,
    duration_us). With two or more ProfilerSteps, only each step's first collective."""
    found = _all_collectives(rt)
    if found is None:
        return None, None
    starts, durations, _, _ = found
    if len(rt.steps) >= 2:
        bounds = np.array([st.cpu_start_us for st in rt.steps] + [np.inf])
        first = np.searchsorted(starts, bounds[:-1], side="left")
        ok = (first < starts.size) & (starts[np.minimum(first, max(starts.size - 1, 0))] < bounds[1:])
        starts, durations = starts[first[ok]], durations[first[ok]]
    return starts, durations


def rank_collectives_by_step(rt: RankTrace) -> RankCollectives | None:
    """Every collective with the step that launched it (:mod:`.stragglers`); None without any."""
    found = _all_collectives(rt)
    if found is None:
        return None
    starts, durations, launch, on_gpu = found
    step = launch_steps(rt, launch)
    order = np.lexsort((starts, step))
    return RankCollectives(starts[order], durations[order], step[order], on_gpu)


def _all_collectives(rt: RankTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
    """(start_us, duration_us, launch_us, on GPU) of every collective, in start order: GPU
    communication kernels (launch: their launch call, NaN without one), else CPU-side collective
    ops (launch: their start)."""
    comm = [lane for lane in rt.gpu_lanes if lane.kind == "gpu_comm"]
    if comm:
        dev = device_events(rt)
        ids = np.array([lane.lane_id for lane in comm])
        launch = dev.launch_start_us[np.isin(dev.lane, ids)]  # device_events keeps the lanes' order
        starts = np.concatenate([lane.start_us for lane in comm])
        durations = np.concatenate([lane.duration_us for lane in comm])
    else:
        # gloo's own spans (on its run-loop threads) last as long as the collective, waits included;
        # c10d's enqueue ops around them return at once, so they are used only without gloo spans.
        any_cpu = pattern_mask(rt.strings, CPU_COLLECTIVE_RE)  # cached: the analysis asked it too
        gloo = any_cpu & predicate_mask(rt.strings, "gloo:", lambda n: n.startswith("gloo:"))
        matches = gloo if any(gloo[lane.name_id].any() for lane in rt.cpu_lanes) else any_cpu
        picked = [(lane.start_us[matches[lane.name_id]], lane.duration_us[matches[lane.name_id]])
                  for lane in rt.cpu_lanes if matches[lane.name_id].any()]
        if not picked:
            return None
        starts = np.concatenate([p[0] for p in picked])
        durations = np.concatenate([p[1] for p in picked])
        launch = starts
    order = np.argsort(starts, kind="stable")
    return starts[order], durations[order], launch[order], bool(comm)
