"""Entry points for the GUI and the CLI: load + analyse + diagnose, with progress and cancel.

>>> result = analyse_paths([Path("job/")])                     # doctest: +SKIP
>>> for item in iter_load_and_analyse([Path("t.json.gz")], stop):  # worker thread  # doctest: +SKIP
...     ...  # Progress(fraction, message) items, then one TraceResult
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

from .analysis import RankAnalysis, analyse_rank
from .decode import DEFAULT_MAX_BYTES
from .analysis import CPU_COLLECTIVE_RE
from .diagnose import THRESHOLDS, Diagnosis, StragglerEvidence, diagnose_job, diagnose_rank
from .budget import MemoryBudget
from .load import FileFailure, dedupe_ranks, discover_files, failure_notes, iter_per_file, load_rank, plan_workers
from .model import RankTrace, TraceModel
from .name_masks import pattern_mask, predicate_mask
from .op_points import OpPoint, op_points, op_table_and_points
from .optable import OpRow
from .what_if import MfuModel, WhatIf, for_result


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
    points: list[OpPoint] | None = None
    """:func:`.op_points.op_points` of the trace, found with the op table (None: not yet)."""

    def op_points(self) -> list[OpPoint]:
        """The rank's roofline points (found now if the engine did not)."""
        if self.points is None:
            self.points = op_points(self.trace)
        return self.points


@dataclass
class MultiRankSummary:
    """Cross-rank figures: step-time skew and straggler ranks (HTA's "starts late" rule, plus the
    others' wait that the lag explains; see :func:`multi_rank_summary`)."""

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
        """The ``gpuperf diagnose --json`` object (DESIGN.md contract, plus extra keys)."""
        ranks = [rank_json(r.analysis, r.diagnosis, r.ops[:top], [p.to_json() for p in r.op_points()])
                 for r in self.ranks]  # the points are the ones "Show on roofline" draws
        obj = job_json(self.diagnosis, ranks, self.multi_rank, self.model.notes)
        wi = self.what_if()
        obj.update(json_safe(wi.to_json() if wi else {"what_if": [], "critical_path": None}))
        return obj


def rank_json(analysis: RankAnalysis, diagnosis: Diagnosis, top_ops: list[OpRow], roofline_points: list[dict]
              ) -> dict:
    """One rank of ``gpuperf diagnose --json``: its figures, verdict, op-table top rows and points
    (the local and the Dask engines both build it here, so their output is the same)."""
    obj = analysis.to_json()
    obj["diagnosis"] = diagnosis.to_json()
    obj["op_table"] = [row.to_json() for row in top_ops]
    obj["roofline_points"] = list(roofline_points)
    return obj


def job_json(diagnosis: Diagnosis, ranks: list[dict], multi_rank: MultiRankSummary, notes: Sequence[str]) -> dict:
    """The whole ``gpuperf diagnose --json`` object from its ranks' objects (SI units, no NaN/inf)."""
    return json_safe({"diagnosis": diagnosis.to_json(), "ranks": ranks, "multi_rank": multi_rank.to_json(),
                      "load_notes": list(notes)})


_Loaded = tuple[RankTrace, RankAnalysis, list[OpRow], list[OpPoint]]


def _analyse_one(path: Path, *, max_bytes: int | None, order_index: int,
                 memory_budget: MemoryBudget | int | None = None) -> _Loaded:
    """One file's work, all of it per rank (so it runs in the worker processes): load, analyse,
    op table and roofline points (found together: they share the op nesting). All read the rank's
    own clock, before :meth:`TraceModel.aligned` shifts it."""
    rt = load_rank(path, max_bytes=max_bytes, order_index=order_index, memory_budget=memory_budget)
    analysis = analyse_rank(rt)
    ops, points = op_table_and_points(rt)
    return rt, analysis, ops, points


def iter_load_and_analyse(paths: Sequence[Path | str], stop: threading.Event | None = None, *,
                          max_bytes: int | None = DEFAULT_MAX_BYTES, workers: int | None = None,
                          memory_budget: MemoryBudget | int | None = None
                          ) -> Iterator[Progress | TraceResult]:
    """Load, analyse and diagnose; yield :class:`Progress` items, then one :class:`TraceResult`.

    Checks ``stop`` between files and every 0.1 s while files are decoded (and returns without a
    result when it is set). Several files are loaded in parallel processes (``workers``, default:
    up to the CPU count) by :func:`.load.iter_per_file`, which terminates the workers still busy
    when it stops early, fails, or this generator is closed. Errors (:class:`TraceFormatError`)
    propagate to the caller.
    """
    stop = stop or threading.Event()
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
    result = _assemble([x for x in loaded if x is not None])
    result.model.notes = notes
    yield result


def _assemble(loaded: list[_Loaded]) -> TraceResult:
    traces = dedupe_ranks([rt for rt, *_ in loaded])
    for rt, a, *_ in loaded:
        a.rank = rt.rank
    model = TraceModel.aligned(traces)
    by_trace = {id(rt): rest for rt, *rest in loaded}
    ranks = []
    for rt in model.ranks:
        a, ops, points = by_trace[id(rt)]
        ranks.append(RankResult(rt, a, diagnose_rank(a), ops, points))
    summary = multi_rank_summary(ranks)
    diagnosis = diagnose_job([(r.analysis, r.diagnosis) for r in ranks], summary.evidence)
    return TraceResult(model, ranks, diagnosis, summary)


def load_one(path: Path, *, max_bytes: int | None = DEFAULT_MAX_BYTES,
             memory_budget: MemoryBudget | int | None = None) -> RankTrace:
    """One file loaded, not analysed (the Trace tab shows a big file's lanes before its analysis:
    :func:`analyse_loaded` follows)."""
    _, budget = plan_workers([path], MemoryBudget.of(memory_budget), 1)
    return load_rank(path, max_bytes=max_bytes, memory_budget=budget)


def analyse_loaded(model: TraceModel) -> TraceResult:
    """:func:`iter_load_and_analyse`'s result for the one rank of ``model``, loaded by :func:`load_one`
    (its own clock is the model's: nothing is shifted and ``model`` is kept)."""
    if len(model.ranks) != 1:
        raise ValueError("analyse_loaded takes a model of one rank")
    result = _assemble([(rt, analyse_rank(rt), *op_table_and_points(rt)) for rt in model.ranks])
    result.model = model   # the same rank, in the model the tab holds (its notes)
    return result


def analyse_paths(paths: Sequence[Path | str], *, max_bytes: int | None = DEFAULT_MAX_BYTES,
                  workers: int | None = None, memory_budget: MemoryBudget | int | None = None) -> TraceResult:
    """Blocking version of :func:`iter_load_and_analyse` (returns the result)."""
    result = None
    for item in iter_load_and_analyse(paths, None, max_bytes=max_bytes, workers=workers,
                                      memory_budget=memory_budget):
        if isinstance(item, TraceResult):
            result = item
    assert result is not None
    return result


def multi_rank_summary(ranks: list[RankResult], spans: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
                       ) -> MultiRankSummary:
    """Step-time skew across ranks and straggler ranks.

    Straggler rule (after HTA ``get_potential_stragglers``): the k-th collective of every rank is the
    same collective (GPU communication kernels; CPU-side collectives where a rank has none, as with
    gloo). Where the ranks' steps are known, only the first collective of each step counts: a late
    rank makes the others wait in the step's first collective (DDP's first bucket), the later ones
    queue behind it on every rank and start together. A rank's lag is the median over collectives of its start minus the median start of the
    other ranks. A rank is a straggler when its lag exceeds ``straggler_lag_min_step`` of the median
    step and ``straggler_lag_min_s``, *and* the other ranks' collectives last longer than its own by
    at least ``straggler_wait_explained_min`` of the lag: they wait inside the collective for it, so
    the lag explains their exposed communication. Ranks that exchange point-to-point send/recv
    (pipeline stages, offset by design) are never stragglers.
    """
    if len(ranks) < 2:
        return MultiRankSummary(None, [])
    medians = [r.analysis.step_time_median_s for r in ranks if r.analysis.step_time_median_s]
    skew = float(max(medians) - min(medians)) if len(medians) >= 2 else None
    pipeline = any(r.analysis.p2p_kernels or r.analysis.p2p_cpu_ops for r in ranks)
    spans = _collective_spans(ranks) if spans is None else spans  # given: cluster.py, from compact results
    per_step = all(len(r.analysis.steps) >= 2 for r in ranks)  # rank_collectives kept one per step
    counted = "steps' first collectives" if per_step else "collectives"
    if len(spans) < 2:
        return MultiRankSummary(skew, [], pipeline=pipeline)
    k = min(len(v[0]) for v in spans.values())
    if k == 0:
        return MultiRankSummary(skew, [], pipeline=pipeline)
    order = list(spans)
    start = np.stack([spans[rk][0][:k] for rk in order])
    dur = np.stack([spans[rk][1][:k] - spans[rk][0][:k] for rk in order])
    lag_by_rank, evidence = {}, []
    step = float(np.median(medians)) if medians else 0.0
    t = THRESHOLDS
    threshold_s = max(t["straggler_lag_min_step"] * step, t["straggler_lag_min_s"])
    for i, rank in enumerate(order):
        others = np.delete(np.arange(len(order)), i)
        lag_s = float(np.median(start[i] - np.median(start[others], axis=0))) / 1e6
        lag_by_rank[rank] = lag_s
        wait_s = float(np.median(np.median(dur[others], axis=0) - dur[i])) / 1e6
        if not pipeline and lag_s > threshold_s and wait_s >= t["straggler_wait_explained_min"] * lag_s:
            evidence.append(StragglerEvidence(rank, lag_s, wait_s, k, step, counted))
    evidence.sort(key=lambda e: -e.lag_s)
    return MultiRankSummary(skew, [e.rank for e in evidence], lag_by_rank, evidence, pipeline)


def _collective_spans(ranks: list[RankResult]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank, (start_us, end_us) of its collectives in start order (:func:`rank_collectives`)."""
    out = {}
    for r in ranks:
        starts, durations, _ = rank_collectives(r.trace)
        if starts is not None and starts.size:
            out[r.trace.rank] = (starts, starts + durations)
    return out


def rank_collectives(rt: RankTrace) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
    """The collectives the straggler rule compares, in start order: (start_us, duration_us, whether
    they are GPU kernels). GPU communication kernels, else CPU-side collective ops (gloo). With two
    or more ProfilerSteps, only each step's first collective: a late rank makes the others wait in
    the step's first collective (DDP's first bucket); the later ones queue behind it on every rank
    and start together, so their lags say nothing. Runs rank-side in the Dask path too."""
    comm = [lane for lane in rt.gpu_lanes if lane.kind == "gpu_comm"]
    if comm:
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
            return None, None, False
        starts = np.concatenate([p[0] for p in picked])
        durations = np.concatenate([p[1] for p in picked])
    order = np.argsort(starts, kind="stable")
    starts, durations = starts[order], durations[order]
    if len(rt.steps) >= 2:
        bounds = np.array([st.cpu_start_us for st in rt.steps] + [np.inf])
        first = np.searchsorted(starts, bounds[:-1], side="left")
        ok = (first < starts.size) & (starts[np.minimum(first, max(starts.size - 1, 0))] < bounds[1:])
        starts, durations = starts[first[ok]], durations[first[ok]]
    return starts, durations, bool(comm)
