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
from .diagnose import Diagnosis, diagnose_job, diagnose_rank
from .load import dedupe_ranks, discover_files, iter_per_file, load_rank
from .model import RankTrace, TraceModel
from .op_points import op_points
from .optable import OpRow, op_table


@dataclass(frozen=True)
class Progress:
    """A progress report: ``fraction`` in [0, 1] and a human message."""

    fraction: float
    message: str


@dataclass
class RankResult:
    """One rank: the model (for drawing), its analysis, diagnosis and op table."""

    trace: RankTrace
    analysis: RankAnalysis
    diagnosis: Diagnosis
    ops: list[OpRow]


@dataclass
class MultiRankSummary:
    """Cross-rank figures: step-time skew and straggler ranks (HTA's "starts late" rule)."""

    step_time_skew_s: float | None
    stragglers: list[int]
    collective_start_lag_s: dict[int, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"step_time_skew_s": self.step_time_skew_s, "stragglers": list(self.stragglers),
                "collective_start_lag_s": {str(k): v for k, v in self.collective_start_lag_s.items()}}


@dataclass
class TraceResult:
    """Everything about one job (one or more ranks)."""

    model: TraceModel
    ranks: list[RankResult]
    diagnosis: Diagnosis
    multi_rank: MultiRankSummary

    def to_json(self, top: int = 10) -> dict:
        """The ``gpuperf diagnose --json`` object (DESIGN.md contract, plus extra keys)."""
        ranks = []
        for r in self.ranks:
            obj = r.analysis.to_json()
            obj["diagnosis"] = r.diagnosis.to_json()
            obj["op_table"] = [row.to_json() for row in r.ops[:top]]
            obj["roofline_points"] = [p.to_json() for p in op_points(r.trace)]  # = "Show on roofline"
            ranks.append(obj)
        return json_safe({"diagnosis": self.diagnosis.to_json(), "ranks": ranks,
                        "multi_rank": self.multi_rank.to_json()})


_Loaded = tuple[RankTrace, RankAnalysis, list[OpRow]]


def _analyse_one(path: Path, *, max_bytes: int, order_index: int) -> _Loaded:
    """One file's work, all of it per rank (so it runs in the worker processes): load, analyse,
    op table. Both read the rank's own clock, before :meth:`TraceModel.aligned` shifts it."""
    rt = load_rank(path, max_bytes=max_bytes, order_index=order_index)
    return rt, analyse_rank(rt), op_table(rt)


def iter_load_and_analyse(paths: Sequence[Path | str], stop: threading.Event | None = None, *,
                          max_bytes: int = DEFAULT_MAX_BYTES, workers: int | None = None
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
    work = partial(_analyse_one, max_bytes=max_bytes)
    with closing(iter_per_file(files, work, stop, workers=workers)) as results:
        for done_count, (i, item) in enumerate(results, 1):
            loaded[i] = item
            yield Progress(0.9 * done_count / n, f"analysed {files[i].name}")
    if stop.is_set():
        return
    yield Progress(0.95, "diagnosing")
    yield _assemble([x for x in loaded if x is not None])


def _assemble(loaded: list[_Loaded]) -> TraceResult:
    traces = dedupe_ranks([rt for rt, _, _ in loaded])
    for rt, a, _ in loaded:
        a.rank = rt.rank
    model = TraceModel.aligned(traces)
    by_trace = {id(rt): (a, ops) for rt, a, ops in loaded}
    ranks = []
    for rt in model.ranks:
        a, ops = by_trace[id(rt)]
        ranks.append(RankResult(rt, a, diagnose_rank(a), ops))
    diagnosis = diagnose_job([(r.analysis, r.diagnosis) for r in ranks])
    return TraceResult(model, ranks, diagnosis, multi_rank_summary(ranks))


def analyse_paths(paths: Sequence[Path | str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                  workers: int | None = None) -> TraceResult:
    """Blocking version of :func:`iter_load_and_analyse` (returns the result)."""
    result = None
    for item in iter_load_and_analyse(paths, None, max_bytes=max_bytes, workers=workers):
        if isinstance(item, TraceResult):
            result = item
    assert result is not None
    return result


def multi_rank_summary(ranks: list[RankResult]) -> MultiRankSummary:
    """Step-time skew across ranks and straggler ranks.

    Straggler rule (after HTA ``get_potential_stragglers``): for each rank take the start times of
    its communication kernels in order; the k-th collective of every rank is the same collective,
    so a rank whose collectives start *late* relative to the median of the ranks is the straggler
    candidate that makes everyone else wait. A rank is flagged when its median lag exceeds both
    20 % of the median step time and 100 µs.
    """
    if len(ranks) < 2:
        return MultiRankSummary(None, [])
    medians = [r.analysis.step_time_median_s for r in ranks if r.analysis.step_time_median_s]
    skew = float(max(medians) - min(medians)) if len(medians) >= 2 else None
    starts = {}
    for r in ranks:
        comm = [lane for lane in r.trace.gpu_lanes if lane.kind == "gpu_comm"]
        if comm:
            starts[r.trace.rank] = np.sort(np.concatenate([lane.start_us for lane in comm]))
    if len(starts) < 2:
        return MultiRankSummary(skew, [])
    k = min(len(v) for v in starts.values())
    if k == 0:
        return MultiRankSummary(skew, [])
    mat = np.stack([v[:k] for v in starts.values()])
    lag = mat - np.median(mat, axis=0, keepdims=True)
    lag_by_rank = {rank: float(np.median(lag[i])) / 1e6 for i, rank in enumerate(starts)}
    step = float(np.median(medians)) if medians else 0.0
    threshold = max(0.2 * step, 100e-6)
    stragglers = sorted([rk for rk, v in lag_by_rank.items() if v > threshold],
                        key=lambda rk: -lag_by_rank[rk])
    return MultiRankSummary(skew, stragglers, lag_by_rank)
