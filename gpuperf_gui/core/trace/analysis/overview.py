"""The overview page of a loaded trace (the TensorBoard plugin's overview, per rank), no Qt.

* **Step-time breakdown** per ``ProfilerStep``, inside :func:`.rank_analysis.step_window` (its length
  is the engine's step time): compute (union of non-communication, non-copy kernels),
  exposed communication (communication not overlapped by compute), exposed copies (memcpy/memset under
  neither), and idle split by cause with HTA's rule (:func:`.rank_analysis.hta_idle_split`) applied
  to the gaps of all device work. The parts sum to the step time.
* **GPU utilisation**: the engine's busy fraction of the steady-state window.
* **Tensor-core share** and **top kernels**: :mod:`.kernel_table`'s rows (an op's FLOPs on its
  GEMM/attention kernels only, each kernel's precision), judged against their roofs by
  :mod:`.kernel_roof` (the trace's GPU at each kernel's own precision).
* :func:`selection_summary`: what a selected time range holds (Perfetto's area selection).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...units import json_safe
from . import intervals as iv
from .rank_analysis import (CPU_COLLECTIVE_RE, IDLE_CAUSES, cpu_union, device_events, hta_idle_split, next_launch_us,
                            step_window)
from .kernel_roof import RankKernels, rank_kernels
from .kernel_table import KernelRow
from ..vocabulary.glossary import COMM_KERNELS_EXPOSED, hta_idle_label
from ..model.host_sync import sync_gap_classifier
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..model.trace_model import RankTrace

_COMM = KERNEL_CLASSES.index("communication")
_COPY = KERNEL_CLASSES.index("copy")

def display_kernel_name(name: str, max_chars: int = 100) -> str:
    """A kernel name short enough to read in a table: without ``void``, its parameter list and
    template arguments nested deeper than one level (``<…>``)."""
    text = name.strip().replace("(anonymous namespace)", "{anon}")
    templated = text.startswith("void ") or "<" in text
    text = text.removeprefix("void ")
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
            if depth <= 2:
                out.append("<" if depth == 1 else "…")
            continue
        if ch == ">":
            depth -= 1
            if depth == 0:
                out.append(">")
            continue
        if ch == "(" and depth == 0 and templated:
            break                                   # the parameter list
        if depth <= 1:
            out.append(ch)
    short = "".join(out).strip() or name
    return short if len(short) <= max_chars else short[:max_chars - 1] + "…"


@dataclass(frozen=True)
class StepBreakdown:
    """One step's time split into parts that sum to ``duration_us``."""

    number: int
    start_us: float
    duration_us: float
    compute_us: float
    comm_exposed_us: float
    copy_us: float
    idle_us: dict[str, float]
    warmup: bool = False
    host_comm_idle_us: float = 0.0
    """GPU idle while a host-side collective (gloo, c10d waits) runs: part of ``idle_us``, not added."""
    host_sync_idle_us: float = 0.0
    """GPU idle in gaps that follow a blocking sync (:class:`.host_sync.SyncGapClassifier`, the gaps the
    Trace lanes draw in the host-sync colour): part of ``idle_us``, not added."""

    @property
    def busy_us(self) -> float:
        return self.compute_us + self.comm_exposed_us + self.copy_us

    @property
    def comm_wait_us(self) -> float:
        """Communication the step waits for: NCCL kernels not hidden by compute, or host-side
        collectives while the GPU idles, whichever is larger (never their sum: a host waiting on an
        NCCL collective would count twice); as the ranks table reads it."""
        return max(self.comm_exposed_us, self.host_comm_idle_us)

    def to_json(self) -> dict:
        """SI units (seconds)."""
        return {"number": self.number, "step_time_s": self.duration_us / 1e6, "compute_s": self.compute_us / 1e6,
                "comm_exposed_s": self.comm_exposed_us / 1e6, "copy_s": self.copy_us / 1e6,
                "idle_s": {k: v / 1e6 for k, v in self.idle_us.items()},
                "host_collective_gpu_idle_s": self.host_comm_idle_us / 1e6,
                "host_sync_gpu_idle_s": self.host_sync_idle_us / 1e6, "warmup": self.warmup}

    def parts(self) -> list[tuple[str, float]]:
        """(part name, µs) in drawing order: compute, exposed comm, copy, idle by cause."""
        return ([("compute", self.compute_us), (COMM_KERNELS_EXPOSED.name, self.comm_exposed_us),
                 ("copy", self.copy_us)]
                + [(hta_idle_label(c), self.idle_us.get(c, 0.0)) for c in IDLE_CAUSES])


@dataclass
class RankOverview:
    """The overview figures of one rank."""

    rank: int
    device: str
    gpu_busy_fraction: float
    comm_exposed_fraction: float
    tensor_core_share: float | None
    """Tensor-core kernel time over all kernel time (None without kernels)."""
    kernel_seconds: float
    step_time_median_s: float | None
    steps: list[StepBreakdown] = field(default_factory=list)
    top_kernels: list[KernelRow] = field(default_factory=list)
    kernels: RankKernels | None = None
    """The rank's precision and every math kernel, when known."""
    comm_wait_fraction: float = 0.0
    """:data:`.glossary.COMM_WAIT`: the diagnosis's communication share of the step."""

    def to_json(self) -> dict:
        return {"rank": self.rank, "device": self.device or None, "gpu_busy_fraction": self.gpu_busy_fraction,
                "comm_exposed_fraction": self.comm_exposed_fraction, "comm_wait_fraction": self.comm_wait_fraction,
                "tensor_core_share": self.tensor_core_share, "kernel_time_s": self.kernel_seconds,
                "step_time_median_s": self.step_time_median_s, "steps": [s.to_json() for s in self.steps],
                "top_kernels": [k.to_json() for k in self.top_kernels],
                "precision": self.kernels.precision.to_json() if self.kernels is not None else None}


_HEATMAP_VALUE = {   # fractions of the step, and the step time in seconds
    "busy": lambda s: s.busy_us / s.duration_us,
    "exposed comm": lambda s: s.comm_wait_us / s.duration_us,
    "idle": lambda s: sum(s.idle_us.values()) / s.duration_us,
    "host-sync idle": lambda s: s.host_sync_idle_us / s.duration_us,
    "step time": lambda s: s.duration_us / 1e6,
}
HEATMAP_METRICS = tuple(_HEATMAP_VALUE)
HEATMAP_METRIC_SIGNATURE = {"host-sync idle": "host_sync_bound"}
"""A heatmap metric that is one signature's own figure (drawn in that signature's colour)."""


@dataclass
class Overview:
    """Per rank overview figures, in rank order, and the late ranks (the engine's)."""

    ranks: list[RankOverview]
    stragglers: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        """The overview page's figures, SI units (what ``gpuperf diagnose --json`` can print beside
        the diagnosis)."""
        return json_safe({"ranks": [r.to_json() for r in self.ranks], "stragglers": list(self.stragglers)})

    def rank_step_matrix(self, metric: str) -> tuple[list[int], list[int], np.ndarray]:
        """A rank × step heatmap of one of :data:`HEATMAP_METRICS`: (ranks, step numbers, values), late
        ranks first, then by rank; NaN where a rank lacks the step. Warm-up steps are left out."""
        if metric not in HEATMAP_METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(HEATMAP_METRICS)}")
        late = {r: k for k, r in enumerate(self.stragglers)}
        order = sorted(self.ranks, key=lambda r: (late.get(r.rank, len(late)), r.rank))
        numbers = sorted({s.number for r in self.ranks for s in r.steps if not s.warmup})
        col = {n: j for j, n in enumerate(numbers)}
        values = np.full((len(order), len(numbers)), np.nan)
        for i, r in enumerate(order):
            for s in r.steps:
                if s.number in col and s.duration_us > 0:
                    values[i, col[s.number]] = _HEATMAP_VALUE[metric](s)
        return [r.rank for r in order], numbers, values


def build_overview(result) -> Overview:  # noqa: ANN001 (api.TraceResult; api imports session)
    """The overview of every rank of an analysed trace."""
    ranks = []
    for r in result.ranks:
        a = r.analysis
        steps = step_breakdown(r.trace, {s.number for s in a.steps if s.warmup})
        ranks.append(rank_overview(r.trace, a, steps))
    return Overview(ranks, list(result.multi_rank.stragglers))


def rank_overview(rt: RankTrace, a, steps: list[StepBreakdown]) -> RankOverview:  # noqa: ANN001 (RankAnalysis)
    """One rank's overview from its analysis (its kernels found now if the engine did not)."""
    k = a.kernels if a.kernels is not None else rank_kernels(rt, a.gpu_busy_fraction)
    return RankOverview(rank=rt.rank, device=rt.device_name, gpu_busy_fraction=a.gpu_busy_fraction,
                        comm_exposed_fraction=a.comm_exposed_fraction, tensor_core_share=k.tensor_core_share,
                        kernel_seconds=k.kernel_seconds, step_time_median_s=a.step_time_median_s, steps=steps,
                        top_kernels=list(k.top), kernels=k, comm_wait_fraction=a.idle_causes.communication)


# -- step breakdown ---------------------------------------------------------------------------------
def step_breakdown(rt: RankTrace, warmup: set[int] | frozenset[int] = frozenset()) -> list[StepBreakdown]:
    """Every step of a rank split into compute, exposed comm, copy and idle by cause."""
    if not rt.steps:
        return []
    dev = device_events(rt)
    starts, ends, launch, cls = iv.sorted_by(dev.start_us, dev.end_us, dev.launch_start_us, dev.kernel_class)
    is_comm, is_copy = cls == _COMM, cls == _COPY
    unions = {
        "all": iv.union(starts, ends),
        "compute": iv.union(starts[~is_comm & ~is_copy], ends[~is_comm & ~is_copy]),
        "comm": iv.union(starts[is_comm], ends[is_comm]),
        "copy": iv.union(starts[is_copy], ends[is_copy]),
        "host comm": cpu_union(rt, CPU_COLLECTIVE_RE, -np.inf, np.inf),
    }
    classify = sync_gap_classifier(rt)
    windows = [step_window(rt, i) for i in range(len(rt.steps))]
    per_step = {k: iv.clip_each(u, windows) for k, u in unions.items()}
    out = []
    for i, step in enumerate(rt.steps):
        w0, w1 = windows[i]
        clip = {k: spans[i] for k, spans in per_step.items()}
        compute = iv.length(*clip["compute"])
        comm = iv.length(*clip["comm"])
        comm_exposed = comm - iv.intersection_length(clip["comm"], clip["compute"])
        busy = iv.length(*clip["all"])
        copy = busy - compute - comm_exposed
        gaps = iv.complement(*clip["all"], w0, w1)
        idle = hta_idle_split(gaps[1] - gaps[0], next_launch_us(starts, launch, gaps[1]) > gaps[0])
        host_comm = iv.intersection_length(gaps, clip["host comm"])
        after_sync = float((gaps[1] - gaps[0])[classify(*gaps) != 0].sum()) if gaps[0].size else 0.0
        out.append(StepBreakdown(step.number, w0, w1 - w0, compute, comm_exposed, max(copy, 0.0), idle,
                                 step.number in warmup, host_comm, after_sync))
    return out


# -- a selected range ---------------------------------------------------------------------------------
@dataclass
class SelectionSummary:
    """What [t0_us, t1_us] holds over the chosen ranks (times clipped to the range, µs).

    ``gpu_busy_us`` is the union of device work per rank, summed over ranks (so it can exceed the
    range with several ranks); ``kernel_class_us`` and ``cpu_category_us`` sum event time
    (CPU: outermost events only, so nested ops are not counted twice)."""

    t0_us: float
    t1_us: float
    n_ranks: int
    gpu_busy_us: float
    kernel_class_us: dict[str, float]
    cpu_category_us: dict[str, float]
    top_kernels: list[tuple[str, int, float]]     # (name, events overlapping the range, µs in it)
    n_events: int

    @property
    def duration_us(self) -> float:
        return self.t1_us - self.t0_us

    @property
    def gpu_busy_fraction(self) -> float:
        span = self.duration_us * max(self.n_ranks, 1)
        return self.gpu_busy_us / span if span > 0 else 0.0


def _clipped(lane, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001 (Lane)
    """(event indices overlapping [t0, t1], their time inside it)."""
    longest = float(lane.duration_us.max()) if len(lane) else 0.0
    sl = lane.window(t0 - longest, t1)
    idx = np.arange(sl.start, sl.stop)
    s = lane.start_us[sl]
    e = s + lane.duration_us[sl]
    inside = np.minimum(e, t1) - np.maximum(s, t0)
    keep = (inside > 0) | ((lane.duration_us[sl] == 0) & (s >= t0) & (s <= t1))
    return idx[keep], np.maximum(inside[keep], 0.0)


def selection_summary(ranks: list[RankTrace], t0_us: float, t1_us: float, top: int = 10) -> SelectionSummary:
    """Time by kernel class and CPU category, GPU busy time and the top kernels in a range."""
    t0, t1 = min(t0_us, t1_us), max(t0_us, t1_us)
    by_class = np.zeros(len(KERNEL_CLASSES))
    by_cat: dict[str, float] = {}
    kernels: dict[str, list[float]] = {}
    busy = 0.0
    n_events = 0
    for rt in ranks:
        starts, ends = [], []
        for lane in rt.gpu_lanes:
            idx, inside = _clipped(lane, t0, t1)
            if not idx.size:
                continue
            n_events += int(idx.size)
            cls = lane.kernel_class[idx].astype(np.int64)
            by_class += np.bincount(np.where(cls >= 0, cls, len(KERNEL_CLASSES) - 1), weights=inside,
                                    minlength=len(KERNEL_CLASSES))
            starts.append(np.maximum(lane.start_us[idx], t0))
            ends.append(np.minimum(lane.start_us[idx] + lane.duration_us[idx], t1))
            names, inv = np.unique(lane.name_id[idx], return_inverse=True)
            per = np.bincount(inv, weights=inside)
            cnt = np.bincount(inv)
            for j, nid in enumerate(names.tolist()):
                acc = kernels.setdefault(rt.strings[int(nid)], [0, 0.0])
                acc[0] += int(cnt[j])
                acc[1] += float(per[j])
        if starts:
            busy += iv.length(*iv.union(np.concatenate(starts), np.concatenate(ends)))
        for lane in rt.cpu_lanes:
            idx, inside = _clipped(lane, t0, t1)
            if not idx.size:
                continue
            n_events += int(idx.size)
            outer = lane.depth[idx] == 0 if len(lane.depth) else np.ones(idx.size, bool)
            cats, inv = np.unique(lane.category_id[idx][outer], return_inverse=True)
            per = np.bincount(inv, weights=inside[outer], minlength=cats.size)
            for j, c in enumerate(cats.tolist()):
                key = rt.strings[int(c)]
                by_cat[key] = by_cat.get(key, 0.0) + float(per[j])
    top_rows = sorted(((n, int(c), float(us)) for n, (c, us) in kernels.items()), key=lambda r: -r[2])[:top]
    return SelectionSummary(t0, t1, len(ranks), busy,
                            {k: float(v) for k, v in zip(KERNEL_CLASSES, by_class) if v > 0},
                            dict(sorted(by_cat.items(), key=lambda kv: -kv[1])), top_rows, n_events)


# -- the minimap -------------------------------------------------------------------------------------
@dataclass
class ActivityProfile:
    """GPU busy fraction per rank in equal time bins over [start_us, end_us] (the minimap track)."""

    start_us: float
    end_us: float
    busy: np.ndarray
    """Shape (ranks, bins): the fraction of each bin covered by any device work of the rank."""


def activity_profile(ranks: list[RankTrace], start_us: float, end_us: float, bins: int = 800) -> ActivityProfile:
    """The busy fraction of every rank's device work per bin (union over streams)."""
    edges = np.linspace(start_us, end_us, bins + 1)
    width = max((end_us - start_us) / bins, 1e-12)
    out = np.zeros((len(ranks), bins))
    for r, rt in enumerate(ranks):
        lanes = [lane for lane in rt.gpu_lanes if len(lane)]
        if not lanes:
            continue
        s, e = iv.union(np.concatenate([lane.start_us for lane in lanes]),
                        np.concatenate([lane.start_us + lane.duration_us for lane in lanes]))
        out[r] = np.diff(iv.covered_before((s, e), edges)) / width
    return ActivityProfile(start_us, end_us, np.clip(out, 0.0, 1.0))

