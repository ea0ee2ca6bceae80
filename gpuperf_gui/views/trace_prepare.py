"""Worker-side preparation of a loaded trace for drawing (runs in the loading thread).

Turns the engine's :class:`~gpuperf_gui.core.trace.model.TraceModel` into lane specs: depth rows indexed
for folding, a colour key per event, the idle gaps of compute streams. Pure numpy; nothing here
touches a widget, so it can run off the GUI thread. No metrics are computed here: idle gaps are
geometry (drawn red above a threshold), the numbers come from the engine.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from gpuperf_gui.core.trace.lod import LaneRows, idle_gaps
from gpuperf_gui.core.trace.model import RankTrace, TraceModel
from gpuperf_gui.views.trace_style import SHADES, cpu_base, gpu_base_offset
from gpuperf_gui.views.trace_timeline import LaneSpec, RankSpec

if TYPE_CHECKING:
    from gpuperf_gui.core.roofline import RooflinePoint
    from gpuperf_gui.core.trace.analysis import RankAnalysis
    from gpuperf_gui.core.trace.figures import TraceMfuFigures
    from gpuperf_gui.views.trace_panels import DiagnosisView, OpTable

SHOWN_KINDS = ("cpu", "gpu_compute", "gpu_comm", "gpu_copy")
KIND_ORDER = {"cpu": 0, "gpu_compute": 1, "gpu_comm": 2, "gpu_copy": 3}
KIND_LABEL = {"gpu_compute": "compute", "gpu_comm": "comm", "gpu_copy": "copy"}
MAX_CPU_ROWS = 12           # deeper CPU nesting is not drawn (the op table still has it)
MAX_CPU_ROWS_MULTI_RANK = 4
DEFAULT_IDLE_THRESHOLD_US = 10.0


@dataclass
class LoadProgress:
    """A progress report from the loading worker."""

    text: str
    done: int
    total: int


@dataclass
class PreparedTrace:
    """Everything the tab shows, built off the GUI thread."""

    model: TraceModel
    ranks: list[RankSpec]
    lanes: list[LaneSpec]
    full_range_us: tuple[float, float]
    files: list[str] = field(default_factory=list)
    analysis: list[RankAnalysis] = field(default_factory=list)   # the engine's, one per rank
    diagnosis: DiagnosisView | None = None
    op_tables: dict[int, dict[str, OpTable]] = field(default_factory=dict)  # rank -> view -> table
    mfu_figures: TraceMfuFigures | None = None    # None when they could not be computed (see notes)
    roofline_points: list[RooflinePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)         # truncation and other warnings
    idle_threshold_us: float = DEFAULT_IDLE_THRESHOLD_US


def _name_lookup(rank: RankTrace, name_id: np.ndarray) -> Callable[[int], str]:
    strings = rank.strings

    def name_of(i: int) -> str:
        return strings[int(name_id[i])]

    return name_of


def color_keys(rank: RankTrace, lane) -> np.ndarray:  # noqa: ANN001 (Lane)
    """Palette key per event: category colour (CPU) or kernel-class colour (GPU), three shades."""
    shade = (lane.name_id.astype(np.int64) % SHADES) if len(lane) else np.zeros(0, np.int64)
    if lane.kind == "cpu":
        cats = np.unique(lane.category_id)
        lut = np.zeros(int(cats.max()) + 1 if cats.size else 1, dtype=np.int64)
        for c in cats.tolist():
            lut[c] = cpu_base(rank.strings[c])
        base = lut[lane.category_id]
    else:
        other = 5
        cls = lane.kernel_class.astype(np.int64)
        base = gpu_base_offset() + np.where(cls >= 0, cls, other)
    return base * SHADES + shade


def lane_order(rank: RankTrace) -> list:
    """Lanes to draw, in reading order: CPU threads (busiest first), compute, comm, copy streams."""
    shown = [lane for lane in rank.lanes if lane.kind in SHOWN_KINDS and len(lane)]
    return sorted(shown, key=lambda ln: (KIND_ORDER[ln.kind],
                                         -len(ln) if ln.kind == "cpu" else 0, ln.lane_id))


def lane_label(lane) -> str:  # noqa: ANN001 (Lane)
    if lane.kind == "cpu":
        return lane.label or f"thread {lane.tid}"   # the timeline elides it to the axis width
    kind = KIND_LABEL.get(lane.kind, lane.kind)
    stream = lane.stream if lane.stream is not None else lane.tid
    return f"GPU {lane.device if lane.device is not None else lane.pid} · stream {stream} · {kind}"


def rank_title(rank: RankTrace) -> str:
    device = (rank.device_name or "").replace("NVIDIA ", "")
    title = f"rank {rank.rank}"
    return f"{title} · {device}" if device else title


def step_tuples(rank: RankTrace) -> list[tuple[int, float, float, float, float]]:
    return [(s.number, s.cpu_start_us, s.cpu_end_us, s.gpu_start_us, s.gpu_end_us) for s in rank.steps]


def prepare_lanes(model: TraceModel, idle_threshold_us: float = DEFAULT_IDLE_THRESHOLD_US,
                  stop: threading.Event | None = None) -> tuple[list[RankSpec], list[LaneSpec]]:
    """Lane specs for every rank of ``model`` (returns early, partially, if ``stop`` is set)."""
    ranks: list[RankSpec] = []
    lanes: list[LaneSpec] = []
    max_rows = MAX_CPU_ROWS if len(model.ranks) <= 1 else MAX_CPU_ROWS_MULTI_RANK
    for ri, rank in enumerate(model.ranks):
        ranks.append(RankSpec(rank_title(rank), step_tuples(rank)))
        for lane in lane_order(rank):
            if stop is not None and stop.is_set():
                return ranks, lanes
            # Work on one GPU stream runs serially: overlaps of a few hundred ns are timestamp
            # rounding, not nesting, so device lanes are drawn as a single row.
            depth = lane.depth if lane.kind == "cpu" else np.zeros_like(lane.depth)
            rows = LaneRows.build(lane.start_us, lane.duration_us, depth,
                                  max_rows=max_rows if lane.kind == "cpu" else None)
            gaps = None
            if lane.kind == "gpu_compute":
                gaps = idle_gaps(lane.start_us, lane.start_us + lane.duration_us, idle_threshold_us)
            lanes.append(LaneSpec(ri, lane.lane_id, lane_label(lane), lane.kind, rows,
                                  color_keys(rank, lane), gaps, _name_lookup(rank, lane.name_id)))
    return ranks, lanes


def full_range(model: TraceModel) -> tuple[float, float]:
    a, b = model.span_us
    if not math.isfinite(a) or not math.isfinite(b) or b <= a:
        return (0.0, 1.0)
    return (a, b)
