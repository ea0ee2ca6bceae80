"""What the timeline draws, built off the GUI thread: lane and rank specs (no Qt).

:func:`prepare_lanes` turns a :class:`~.trace_model.TraceModel` into :class:`LaneSpec` objects (depth rows
indexed for folding, a colour key per event, the idle gaps of compute streams) and :class:`RankSpec`
headers. A colour key is ``base * SHADES + shade``: ``base`` indexes :data:`CPU_COLOR_BASES` followed
by :data:`~.kernel_classes.KERNEL_CLASSES` (the view maps each base to a colour), ``shade`` is one of three
variants so that neighbouring events of one category stay distinguishable.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass, field
from typing import Callable

import numpy as np

from .host_sync import SyncGapClassifier, sync_gap_classifier
from .lod import LaneRows, RowIndex, idle_gaps, row_index
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from .trace_model import Lane, RankTrace, StringTable, TraceModel

KIND_ORDER = {"cpu": 0, "gpu_compute": 1, "gpu_comm": 2, "gpu_copy": 3}   # the kinds drawn, in reading order
KIND_LABEL = {"gpu_compute": "compute", "gpu_comm": "comm", "gpu_copy": "copy"}
MAX_CPU_ROWS = 12           # deeper CPU nesting is not drawn (the op table still has it)
MAX_CPU_ROWS_MULTI_RANK = 4
DEFAULT_IDLE_THRESHOLD_US = 10.0

CPU_COLOR_BASES: tuple[str, ...] = ("cpu_op", "user_annotation", "runtime", "python", "other")
"""Colour bases of CPU events, then the GPU bases follow in KERNEL_CLASSES order."""
SHADES = 3
_CPU_CATEGORY_BASE = {
    "cpu_op": 0, "operator": 0,
    "user_annotation": 1, "gpu_user_annotation": 1,
    "cuda_runtime": 2, "cuda_driver": 2, "runtime": 2,
    "python_function": 3,
}


@dataclass(frozen=True)
class EventRef:
    """One event: the rank (index into the model's ranks), the lane id and the event index."""

    rank_index: int
    lane_id: int
    index: int


class IdleGaps(tuple):
    """A lane's idle gaps ``(start_us, end_us)`` with ``kind`` per gap (an index into
    :data:`~.host_sync.GAP_KINDS`: plain idle, idle after a blocking sync). A pair, so it unpacks
    and indexes as the plain ``(start_us, end_us)`` it replaces."""

    kind: np.ndarray

    def __new__(cls, start_us: np.ndarray, end_us: np.ndarray, kind: np.ndarray | None = None) -> IdleGaps:
        self = super().__new__(cls, (start_us, end_us))
        self.kind = np.zeros(len(start_us), dtype=np.uint8) if kind is None else np.asarray(kind, dtype=np.uint8)
        return self

    def __reduce__(self) -> tuple:
        return IdleGaps, (self[0], self[1], self.kind)


def classified_gaps(gaps: tuple[np.ndarray, np.ndarray], classify: SyncGapClassifier | None) -> IdleGaps:
    """``gaps`` with each gap's kind (all plain idle without a classifier)."""
    return IdleGaps(gaps[0], gaps[1], classify(gaps[0], gaps[1]) if classify is not None else None)


@dataclass
class LaneSpec:
    """What the timeline needs to draw one lane."""

    rank_index: int
    lane_id: int
    label: str
    kind: str
    rows: LaneRows
    color_key: np.ndarray
    gaps: tuple[np.ndarray, np.ndarray] | None = None
    name_of: Callable[[int], str] | None = None
    thread_group: str = ""
    """Lanes of one rank with the same group collapse together ("CPU", "GPU")."""
    gap_index: RowIndex | None = None
    """``gaps`` indexed for folding (built with them off the GUI thread; None: build it from ``gaps``)."""
    classify_gaps: SyncGapClassifier | None = None
    """Gives each idle gap its kind (:data:`~.host_sync.GAP_KINDS`); compute lanes only."""

    def set_gaps(self, gaps: tuple[np.ndarray, np.ndarray] | None) -> None:
        """New idle gaps (another threshold), each given its kind; their index is built when drawn."""
        self.gaps = classified_gaps(gaps, self.classify_gaps) if gaps is not None else None
        self.gap_index = None

    @property
    def gap_kind(self) -> np.ndarray | None:
        """Per idle gap, its kind (index into :data:`~.host_sync.GAP_KINDS`), None without gaps."""
        return getattr(self.gaps, "kind", None)


@dataclass
class RankSpec:
    """A rank's header and its steps (cpu and gpu spans) for the backdrop."""

    title: str
    steps: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    straggler: bool = False
    # the engine's step time per step number (µs): the longer of the CPU span and the GPU span
    # (this step's first kernel to the next step's first kernel), see core/trace/analysis/rank_analysis.py
    step_durations_us: dict[int, float] = field(default_factory=dict)
    rank: int = 0


class NameLookup:
    """``name_of(i)``: the name of a lane's event ``i`` (a class, not a closure: it pickles, so lane
    specs built in the loading helper travel to the GUI process)."""

    __slots__ = ("strings", "name_id")

    def __init__(self, strings: StringTable, name_id: np.ndarray) -> None:
        self.strings, self.name_id = strings, name_id

    def __call__(self, i: int) -> str:
        return self.strings[int(self.name_id[i])]


def color_keys(rank: RankTrace, lane: Lane) -> np.ndarray:
    """Colour key per event (int16): category base (CPU) or kernel-class base (GPU), three shades."""
    shade = (lane.name_id % SHADES).astype(np.int16)
    if lane.kind == "cpu":
        used = np.flatnonzero(np.bincount(lane.category_id))
        lut = np.zeros(int(used.max()) + 1 if used.size else 1, dtype=np.int16)
        for c in used.tolist():
            lut[c] = _CPU_CATEGORY_BASE.get(rank.strings[c].lower(), len(CPU_COLOR_BASES) - 1) * SHADES
        base = lut[lane.category_id]
    else:
        other = KERNEL_CLASSES.index("other")
        first = len(CPU_COLOR_BASES)   # the GPU bases follow the CPU ones
        lut = ((first + np.append(np.arange(len(KERNEL_CLASSES)), other)) * SHADES).astype(np.int16)
        base = lut[lane.kernel_class]   # class -1 (not a kernel) reads the last entry: "other"
    base += shade
    return base


def lane_order(rank: RankTrace) -> list[Lane]:
    """Lanes to draw, in reading order: CPU threads (busiest first), compute, comm, copy streams."""
    shown = [lane for lane in rank.lanes if lane.kind in KIND_ORDER and len(lane)]
    return sorted(shown, key=lambda ln: (KIND_ORDER[ln.kind],
                                         -len(ln) if ln.kind == "cpu" else 0, ln.lane_id))


def lane_label(lane: Lane) -> str:
    if lane.kind == "cpu":
        return lane.label or f"thread {lane.tid}"   # the timeline elides it to the axis width
    kind = KIND_LABEL.get(lane.kind, lane.kind)
    stream = lane.stream if lane.stream is not None else lane.tid
    return f"GPU {lane.device if lane.device is not None else lane.pid} · stream {stream} · {kind}"


def rank_title(rank: RankTrace) -> str:
    device = (rank.device_name or "").replace("NVIDIA ", "")
    title = f"rank {rank.rank}"
    return f"{title} · {device}" if device else title


def compute_gaps(lane: Lane, threshold_us: float) -> tuple[np.ndarray, np.ndarray]:
    """Idle gaps of at least ``threshold_us`` between a compute stream's kernels."""
    return idle_gaps(lane.start_us, lane.start_us + lane.duration_us, threshold_us)


def prepare_lanes(model: TraceModel, idle_threshold_us: float = DEFAULT_IDLE_THRESHOLD_US,
                  stop: threading.Event | None = None, workers: int | None = None
                  ) -> tuple[list[RankSpec], list[LaneSpec]]:
    """Lane specs for every rank of ``model`` (returns early, partially, if ``stop`` is set).

    The depth rows of all lanes are indexed on ``workers`` threads (default: the CPU count, at most
    8): the work is numpy's sorts and copies, which run without the GIL, and a big CPU thread's
    dozen rows spread over the cores."""
    ranks = [RankSpec(rank_title(rank), [astuple(s) for s in rank.steps], rank=rank.rank)
             for rank in model.ranks]
    max_rows = MAX_CPU_ROWS if len(model.ranks) <= 1 else MAX_CPU_ROWS_MULTI_RANK
    plans = []
    for ri, rank in enumerate(model.ranks):
        for lane in lane_order(rank):
            if stop is not None and stop.is_set():
                break
            # Work on one GPU stream runs serially: overlaps of a few hundred ns are timestamp
            # rounding, not nesting, so device lanes are drawn as a single row (sharing start_us).
            plans.append((ri, rank, lane, LaneRows.split(lane.start_us, lane.duration_us,
                                                         lane.depth if lane.kind == "cpu" else None,
                                                         max_rows if lane.kind == "cpu" else None)))
    n_workers = max(1, workers or min(os.cpu_count() or 1, 8))
    classifiers = {ri: sync_gap_classifier(rank) for ri, rank, lane, _ in plans if lane.kind == "gpu_compute"}
    with ThreadPoolExecutor(n_workers, thread_name_prefix="lanes") as pool:
        jobs = [([pool.submit(row_index, s, e, idx) for idx in indices],
                 pool.submit(color_keys, rank, lane),
                 pool.submit(compute_gaps, lane, idle_threshold_us) if lane.kind == "gpu_compute" else None)
                for _, rank, lane, (s, e, indices) in plans]
        lanes: list[LaneSpec] = []
        for (ri, rank, lane, (_, _, indices)), (rows, keys, gaps_job) in zip(plans, jobs):
            classify = classifiers.get(ri) if gaps_job is not None else None
            gaps = classified_gaps(gaps_job.result(), classify) if gaps_job is not None else None
            lanes.append(LaneSpec(ri, lane.lane_id, lane_label(lane), lane.kind,
                                  LaneRows(tuple(r.result() for r in rows), tuple(indices)), keys.result(), gaps,
                                  NameLookup(rank.strings, lane.name_id), "CPU" if lane.kind == "cpu" else "GPU",
                                  RowIndex(gaps[0], gaps[1]) if gaps is not None and len(gaps[0]) else None,
                                  classify))
    return ranks, lanes


def full_range(model: TraceModel) -> tuple[float, float]:
    a, b = model.span_us
    if not math.isfinite(a) or not math.isfinite(b) or b <= a:
        return (0.0, 1.0)
    return (a, b)
