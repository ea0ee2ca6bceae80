"""The lanes of a small synthetic trace, as the presentation's signature panels draw them (no Qt).

Each scenario of :mod:`.synth` is written to a file, read back by the trace loader and diagnosed,
as a user's trace would be; a panel keeps one row per lane kind the audience should read (the
CPU's outermost ops, the compute and comm streams, in :func:`.lanes.lane_order`'s order), the
compute streams' idle time, and the verdict.

>>> panels = list(iter_signature_lanes(folder, threading.Event(), ("launch_bound",)))  # doctest: +SKIP
>>> view_span_us(panels[0], 300.0)      # its first ZOOM_KERNELS kernels: a solid bar otherwise  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..model.lanes import lane_order
from ..model.lod import idle_gaps
from ..model.name_masks import step_name_mask
from ..model.trace_model import Lane, RankTrace

ZOOM_KERNELS = 40
"""A panel too dense to show its kernels one by one shows the first this many (and their gaps)."""
MIN_KERNEL_PX = 6
"""Fewer pixels per kernel (and per gap) than this and the compute lane reads as a solid bar."""
ROW_LABELS = {"cpu": "CPU", "gpu_compute": "GPU compute", "gpu_comm": "GPU comm"}
"""The lane kinds a panel draws, and the row label of each."""
CPU_CLASS = -1
"""The kernel class of a CPU row's events (GPU rows carry their kernels' class index)."""


@dataclass(frozen=True)
class SignatureLanes:
    """What one small trace panel draws: rectangles (start_us, duration_us) per lane, and the verdict."""

    scenario: str
    signature: str
    lanes: tuple[tuple[str, np.ndarray, np.ndarray, np.ndarray], ...]  # label, start, duration, class
    idle: tuple[np.ndarray, np.ndarray]   # compute-stream gaps: start, duration
    span_us: tuple[float, float]


def outermost_ops(rank: RankTrace, lane: Lane) -> np.ndarray:
    """Mask of a CPU lane's outermost ops inside the ProfilerStep annotations (the steps themselves
    would cover the whole row)."""
    ops = ~step_name_mask(rank.strings)[lane.name_id]
    return ops & (lane.depth == (lane.depth[ops].min() if ops.any() else 0))


def compute_idle(compute: list[Lane], span_us: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(start_us, duration_us) of the time in ``span_us`` when no compute stream runs a kernel (edges too)."""
    if not compute:
        return np.array([span_us[0]]), np.array([span_us[1] - span_us[0]])
    starts = np.concatenate([lane.start_us for lane in compute])
    ends = np.concatenate([lane.start_us + lane.duration_us for lane in compute])
    order = np.argsort(starts, kind="stable")
    # the smallest positive gap: touching kernels leave none (idle_gaps keeps gaps >= its minimum)
    gap_start, gap_end = idle_gaps(starts[order], ends[order], np.finfo(np.float64).tiny, window=span_us)
    return gap_start, gap_end - gap_start


def signature_lanes(scenario: str, rank: RankTrace, signature: str) -> SignatureLanes:
    """The panel of one loaded, diagnosed rank."""
    rows: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
    compute: list[Lane] = []
    for lane in lane_order(rank):
        label = ROW_LABELS.get(lane.kind)
        if label is None:
            continue
        if lane.kind == "cpu":
            keep = outermost_ops(rank, lane)
            rows.append((label, lane.start_us[keep], lane.duration_us[keep],
                         np.full(int(keep.sum()), CPU_CLASS, np.int8)))
        else:
            rows.append((label, lane.start_us, lane.duration_us, lane.kernel_class))
            if lane.kind == "gpu_compute":
                compute.append(lane)
    span = rank.span_us
    return SignatureLanes(scenario, signature, tuple(rows), compute_idle(compute, span), span)


def iter_signature_lanes(folder: Path, stop: threading.Event, scenarios: tuple[str, ...]
                         ) -> Iterator[SignatureLanes]:
    """Write each synthetic trace (two steps) to ``folder``, read it back with the trace loader and
    diagnose it: a generator for a worker thread, checking ``stop`` between traces."""
    from ..analysis.rank_analysis import analyse_rank
    from ..diagnosis.diagnose import diagnose_rank
    from ..ingest.load import load_rank
    from ..synthetic.synth import write_synth_trace

    for scenario in scenarios:
        if stop.is_set():
            return
        rank = load_rank(write_synth_trace(scenario, folder / f"{scenario}.json", steps=2))
        yield signature_lanes(scenario, rank, diagnose_rank(analyse_rank(rank)).signature)


def view_span_us(lanes: SignatureLanes, width_px: float) -> tuple[float, float]:
    """The whole trace, or, where the compute lane has too many kernels to tell apart in
    ``width_px`` (a launch-bound trace: a solid bar), its first ZOOM_KERNELS kernels and the gaps
    between them."""
    gaps = len(lanes.idle[0])
    for label, starts, durations, _classes in lanes.lanes:
        if label == ROW_LABELS["gpu_compute"] and len(starts) > width_px / MIN_KERNEL_PX \
                and gaps > width_px / MIN_KERNEL_PX:
            order = np.argsort(starts, kind="stable")[:ZOOM_KERNELS]
            first, last = order[0], order[-1]
            return float(starts[first]), float(starts[last] + durations[last])
    return lanes.span_us
