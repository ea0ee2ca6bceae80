"""Per-rank analysis of a :class:`.trace_model.RankTrace`: busy/idle, communication, kernel classes, launches.

Definitions follow HTA (docs/reference/metrics.md, trace analysis §1.1) where HTA has one:

* GPU busy = union of kernel/memcpy/memset intervals (``gpu_user_annotation`` and ``cuda_sync``
  rows never count).
* compute = kernels of classes other than communication and copy; exposed communication = the
  communication union minus its overlap with the compute union; HTA's comm/compute overlap = that
  overlap divided by the communication union.
* idle split per stream, exactly HTA's ``get_idle_time_breakdown`` (:func:`hta_idle_by_stream`, its
  rule :func:`hta_idle_split`); ``idle_breakdown`` sums it over the compute streams.

The analysis window is the steady-state steps (:data:`WARMUP_MIN_STEPS`; a step's span:
:func:`step_bounds`), without steps the span of device activity. The DataLoader share alone is
measured over the kept steps' CPU spans, as the TB plugin's step-time breakdown does.

Idle attribution (:class:`IdleCauses`): every microsecond in which no compute kernel runs is given
to one cause, in this order: a gap touching point-to-point send/recv (pipeline), the part of a gap
from the first collective running in it to the last one's end (a GPU collective or a CPU-side
collective blocking the host), a GPU-side wait (the next kernel was already queued), the
DataLoader, then what the CPU does in the rest: a stretch of more than ``LAUNCH_SPACING_MAX_US``
without a launch call is a host stall (a blocking call, CPU ops that launch nothing, or code the
profiler does not see); the rest, which the CPU fills with launch calls, is launch overhead.
"""
from __future__ import annotations

import re
from copy import copy
from dataclasses import asdict, dataclass, field

import numpy as np

from . import intervals as iv
from ..vocabulary.categories import (DATALOADER_NAME_RE, HTOD_NAME_RE, LAUNCH_CATEGORIES, LAUNCH_NAME_RE,
                                     MEMCPY_ASYNC_RE)
from ..model.host_sync import SYNC_CALL_RE, sync_stalls
from .kernel_evidence import KernelEvidence, kernel_evidence, launch_flows
from ..vocabulary.kernel_classes import KERNEL_CLASSES, P2P_KERNEL_NAME_RE
from ..model.trace_model import Lane, RankTrace
from ..model.name_masks import member_mask, pattern_mask, predicate_mask, step_name_mask

KERNEL_WAIT_MAX_US = 30.0
"""HTA's ``consecutive_kernel_delay``: gaps shorter than this (and not host wait) are kernel wait."""
IDLE_CAUSES = ("host_wait", "kernel_wait", "other")
"""The parts of HTA's idle split (:func:`hta_idle_split`)."""
WARMUP_MIN_STEPS = 3
"""With at least this many steps the first is treated as warm-up and left out of the window."""

_P2P_OP_RE = re.compile(r"^(nccl|gloo):(send|recv)|^c10d::(send|recv)|batch_isend_irecv|^aten::i?(send|recv)$"
                        r"|\bP2POp\b", re.I)
CPU_COLLECTIVE_RE = re.compile(
    r"^gloo:(?!.*(send|recv))|^c10d::(allreduce|allgather|broadcast|barrier|reduce_scatter|alltoall)|"
    r"all_?to_?all.*wait|awaitable.*wait|^record_param_comms$|^nccl:.*wait|^c10d::wait", re.I)
"""CPU-side collectives and waits on them (gloo, c10d, torchrec awaitables)."""
_BLOCKING_CALL_RE = re.compile(f"{SYNC_CALL_RE.pattern}|{MEMCPY_ASYNC_RE.pattern}", re.I)
"""Where a host stall's time counts as spent waiting in a call: the syncs, and the async copies (of
pageable memory they wait; of pinned memory they last a launch's few µs)."""
_CPU_P2P_RE = re.compile(r"^nccl:(send|recv)|^c10d::(send|recv)|^gloo:.*(send|recv)", re.I)
_OPTIMIZER_KERNEL_RE = re.compile(r"multi_tensor_apply|adam|\bsgd|lamb(?!da)|fused_optim|_foreach_|optimizer", re.I)
_LEAF_SKIP_CATEGORIES = LAUNCH_CATEGORIES | {"python_function"}
LAUNCH_SPACING_MAX_US = 1000.0 / 3.0
"""A host-wait gap with at least one launch call per this many µs is launch overhead: the CPU spends
the gap issuing work (eager PyTorch costs 10-50 µs of host time per op; a thread launching less often
is busy with something else). The same 3 launches/ms as diagnose.THRESHOLDS["launch_density_min_per_ms"]."""
P2P_TOUCH_US = 50.0
"""A compute gap within this distance of a send/recv belongs to the pipeline bubble."""

_COMM = KERNEL_CLASSES.index("communication")
_COPY = KERNEL_CLASSES.index("copy")


def _median(values: np.ndarray) -> float:
    """``float(np.median(values))`` of a non-empty 1-D array, without np.median's ``numpy.ma`` import."""
    a = values.astype(np.float64) if values.dtype.kind in "biu" else values
    if np.isnan(a).any():
        return float("nan")
    half = a.size // 2
    if a.size % 2:
        return float(np.partition(a, half)[half])
    part = np.partition(a, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)


@dataclass
class StepStats:
    """One ``ProfilerStep``: durations in seconds, fractions of its CPU span."""

    number: int
    duration_s: float
    gpu_busy_fraction: float
    gpu_idle_s: float
    warmup: bool = False
    partial: bool = False   # the step in progress when `gpuperf profile` stopped: cut short, not steady


@dataclass
class LaunchStats:
    """Launch-call statistics over the window (HTA ``get_cuda_kernel_launch_stats`` quantities)."""

    launches: int = 0
    launches_per_ms: float = 0.0
    median_launch_call_us: float = 0.0
    median_launch_delay_us: float = 0.0
    kernels_shorter_than_launch_fraction: float = 0.0
    median_kernel_us: float = 0.0
    kernels: int = 0
    graph_launches: int = 0
    """CUDA/HIP graph replays (``cudaGraphLaunch``) among the launches."""


@dataclass
class IdleCauses:
    """Compute-idle time in the window, each µs given to one cause (fractions of the window).

    ``pipeline + communication + gpu_wait + dataloader + launch + host_stall + unattributed ==
    compute_idle``. The ``stall_*`` figures split ``host_stall`` by what the CPU does (blocking
    sync/copy calls, CPU ops that launch nothing, code the profiler does not see);
    ``cpu_ops_in_stall`` are the innermost CPU ops inside host-stall gaps, (name, seconds) longest first.
    """

    compute_idle: float = 0.0
    pipeline: float = 0.0
    communication: float = 0.0
    communication_cpu: float = 0.0
    gpu_wait: float = 0.0
    dataloader: float = 0.0
    launch: float = 0.0
    host_stall: float = 0.0
    stall_blocking: float = 0.0
    stall_cpu_ops: float = 0.0
    stall_uninstrumented: float = 0.0
    stall_before_htod: float = 0.0
    stall_gaps: int = 0
    stall_longest_s: float = 0.0
    launch_gaps: int = 0
    launch_gap_median_us: float = 0.0
    p2p_cpu_blocking: float = 0.0
    unattributed: float = 0.0
    """Host-side idle of a trace without launch calls (no CPU runtime events): cause unknown."""
    cpu_ops_in_stall: list[tuple[str, float]] = field(default_factory=list)
    stall_after_sync: float = 0.0
    """The part of ``host_stall`` that follows a blocking sync and has no data tell (:mod:`.host_sync`)."""
    sync_recoverable: float = 0.0
    """Of ``stall_after_sync``, what reading the values later would give back (:mod:`.host_sync`)."""
    sync_stalls: int = 0
    syncs: int = 0
    """Blocking runtime syncs in the window (stream/device/event synchronize, synchronous cudaMemcpy)."""
    sync_idle_median_s: float = 0.0
    sync_issuers: list[tuple[str, int]] = field(default_factory=list)
    """(op, stalls it issued) of the stalls after a sync, most first."""

    @property
    def host(self) -> float:
        """Idle the host is responsible for: DataLoader, launch overhead and host stalls."""
        return self.dataloader + self.launch + self.host_stall

    @property
    def data(self) -> float:
        """Idle of a starved GPU: DataLoader plus host stalls."""
        return self.dataloader + self.host_stall


@dataclass
class DeviceEvents:
    """All device work of a rank as flat arrays (concatenated over GPU lanes)."""

    start_us: np.ndarray
    end_us: np.ndarray
    kernel_class: np.ndarray
    lane: np.ndarray
    name_id: np.ndarray
    launch_start_us: np.ndarray  # NaN where no launch call is known
    launch_end_us: np.ndarray
    on_compute_lane: np.ndarray

    @property
    def duration_us(self) -> np.ndarray:
        return self.end_us - self.start_us


@dataclass
class RankAnalysis:
    """Everything computed for one rank; ``to_json()`` gives the docs/cli.md rank object."""

    rank: int
    file: str
    device: str
    window_us: tuple[float, float]
    steps: list[StepStats]
    step_time_median_s: float | None
    step_time_spread_s: float | None
    gpu_busy_fraction: float
    compute_busy_fraction: float
    comm_fraction: float
    comm_exposed_fraction: float
    comm_overlap_fraction: float | None
    idle_breakdown: dict[str, float]
    idle_breakdown_s: dict[str, float]
    kernel_time_share: dict[str, float]
    kernel_time_s: dict[str, float]
    launch: LaunchStats
    dataloader_fraction: float
    host_starved_fraction: float
    p2p_adjacent_idle_fraction: float
    p2p_kernels: int
    cpu_collective_exposed_fraction: float
    comm_critical_fraction: float
    hta_temporal_idle_fraction: float | None
    hta_comm_overlap_fraction: float | None
    has_device_work: bool
    warnings: list[str] = field(default_factory=list)
    truncation: str | None = None
    truncation_gpu_missing: bool = False
    """The file was cut short and the kept part has no GPU events (they are written last)."""
    world_size: int | None = None
    """``distributedInfo.world_size`` when the trace records it."""
    idle_causes: IdleCauses = field(default_factory=IdleCauses)
    top_kernels: list[tuple[str, float]] = field(default_factory=list)
    """The longest kernels by total time in the window: (name, share of kernel time)."""
    p2p_cpu_ops: int = 0
    """CPU-side point-to-point ops (gloo/nccl send and recv) in the window."""
    optimizer_kernel_share: float = 0.0
    """Share of kernel time in optimizer kernels (AdamW/SGD foreach, multi_tensor_apply, fused)."""
    hta_idle_by_stream_s: dict[int, dict[str, float]] = field(default_factory=dict)
    """HTA's idle split per stream (every stream, seconds), as ``get_idle_time_breakdown`` gives it."""
    kernels: object | None = None
    """The rank's :class:`.kernel_roof.RankKernels` (precision, FLOPs per kernel), set by the engines."""
    profiler_overhead: dict | None = None
    """The profiler's cost where the trace carries unprofiled step timings (``gpuperf profile``):
    :meth:`.profiler_overhead.ProfilerOverhead.to_json`, with its spread; None otherwise."""
    kernel_evidence: KernelEvidence = field(default_factory=KernelEvidence)
    """Skinny GEMMs by name, graph-replayed and unlaunched kernel time (:mod:`.kernel_evidence`)."""

    @property
    def window_s(self) -> float:
        return (self.window_us[1] - self.window_us[0]) / 1e6

    def to_json(self) -> dict:
        """The rank object of the ``gpuperf diagnose --json`` contract (SI units, fractions)."""
        out = {k: copy(getattr(self, k, None)) for k in _RANK_JSON_KEYS}  # dicts and lists: copies
        # the keys whose value is made here (updated in place, a key keeps its position)
        out.update(device=self.device or None, steps=[asdict(s) for s in self.steps], launch=asdict(self.launch),
                   idle_causes=_causes_json(self.idle_causes), kernel_evidence=self.kernel_evidence.to_json())
        out["hta"] = {"temporal_idle_fraction": self.hta_temporal_idle_fraction,
                      "comm_comp_overlap_fraction": self.hta_comm_overlap_fraction,
                      "idle_by_stream_s": {str(k): dict(v) for k, v in self.hta_idle_by_stream_s.items()}}
        if self.truncation:
            out["truncation"] = self.truncation
        if self.profiler_overhead is not None:
            out["profiler_overhead"] = dict(self.profiler_overhead)
        return out


_RANK_JSON_KEYS = (  # the rank object's keys in their docs/cli.md order (RankAnalysis attributes, but "hta")
    "rank", "file", "device", "world_size", "steps", "step_time_median_s", "step_time_spread_s", "window_s",
    "gpu_busy_fraction", "compute_busy_fraction", "comm_fraction", "idle_breakdown", "idle_breakdown_s",
    "comm_exposed_fraction", "comm_overlap_fraction", "comm_critical_fraction", "cpu_collective_exposed_fraction",
    "kernel_time_share", "kernel_time_s", "launch", "dataloader_fraction", "host_starved_fraction",
    "p2p_adjacent_idle_fraction", "idle_causes", "optimizer_kernel_share", "kernel_evidence", "hta", "warnings")


def _causes_json(c: IdleCauses) -> dict:
    out = asdict(c)
    out["cpu_ops_in_stall"] = [{"name": n, "seconds": sec} for n, sec in c.cpu_ops_in_stall]
    out["sync_issuers"] = [{"name": n, "stalls": k} for n, k in c.sync_issuers]
    return out


def device_events(rt: RankTrace) -> DeviceEvents:
    """Flatten the device-work lanes, attaching each event's launch call through the flows."""
    lanes = rt.gpu_lanes
    if not lanes:
        z = np.zeros(0)
        zi = np.zeros(0, dtype=np.int64)
        return DeviceEvents(z, z, zi.astype(np.int8), zi, zi, z, z, zi.astype(bool))
    start = np.concatenate([lane.start_us for lane in lanes])
    dur = np.concatenate([lane.duration_us for lane in lanes])
    launch_start = np.full(start.size, np.nan)
    launch_end = np.full(start.size, np.nan)
    if len(rt.flows):
        pos, src_lane, src_index = launch_flows(rt)
        for lane_id in np.flatnonzero(np.bincount(src_lane)).tolist():  # np.unique imports numpy.ma
            m = src_lane == lane_id
            cpu = rt.lanes[lane_id]
            launch_start[pos[m]] = cpu.start_us[src_index[m]]
            launch_end[pos[m]] = launch_start[pos[m]] + cpu.duration_us[src_index[m]]
    return DeviceEvents(
        start_us=start, end_us=start + dur,
        kernel_class=np.concatenate([lane.kernel_class for lane in lanes]),
        lane=np.concatenate([np.full(len(lane), lane.lane_id, dtype=np.int64) for lane in lanes]),
        name_id=np.concatenate([lane.name_id for lane in lanes]),
        launch_start_us=launch_start, launch_end_us=launch_end,
        on_compute_lane=np.concatenate([np.full(len(lane), lane.kind == "gpu_compute") for lane in lanes]),
    )


def step_bounds(steps: list) -> list[tuple[float, float]]:
    """Where each step occupies the device: ``(start_us, end_us)`` per :class:`StepWindow`.

    Start: the CPU start, or the end of the previous step's device work when that is later (the GPU
    is still busy with the previous step). For the first step, whose predecessor is not in the trace,
    device work starting only after the step's CPU end means the GPU was busy with work launched
    before profiling began, so the step starts with its own device work. End: the later of the CPU
    end and the device work's end. Steps are thus contiguous and never overlap: each device
    microsecond belongs to one step.
    """
    out = []
    prev_gpu_end = float("nan")
    for s in steps:
        start = s.cpu_start_us
        if not np.isnan(prev_gpu_end):
            start = max(start, prev_gpu_end)
        elif not np.isnan(s.gpu_start_us) and s.gpu_start_us > s.cpu_end_us:
            start = s.gpu_start_us
        end = s.cpu_end_us if np.isnan(s.gpu_end_us) else max(s.cpu_end_us, s.gpu_end_us)
        out.append((start, max(end, start)))
        if not np.isnan(s.gpu_end_us):
            prev_gpu_end = s.gpu_end_us if np.isnan(prev_gpu_end) else max(prev_gpu_end, s.gpu_end_us)
    return out


def analysis_window(rt: RankTrace, dev: DeviceEvents) -> tuple[tuple[float, float], list[int]]:
    """The steady-state window and the warm-up step numbers left out of it."""
    steps = rt.steps
    if steps:
        warmup = [steps[0].number] if len(steps) >= WARMUP_MIN_STEPS else []
        bounds = step_bounds(steps)
        kept = bounds[1:] if warmup else bounds
        return (kept[0][0], max(e for _, e in kept)), warmup
    if dev.start_us.size:
        return (float(dev.start_us.min()), float(dev.end_us.max())), []
    return rt.span_us, []


def analyse_rank(rt: RankTrace) -> RankAnalysis:
    """Compute every per-rank figure (see the module docstring for definitions)."""
    dev = device_events(rt)
    (t0, t1), warmup = analysis_window(rt, dev)
    span = max(t1 - t0, 1e-9)
    in_window = (dev.end_us > t0) & (dev.start_us < t1)
    is_comm = dev.kernel_class == _COMM
    is_copy = dev.kernel_class == _COPY
    is_compute = ~is_comm & ~is_copy
    kernels = in_window & ~is_copy
    in_window_us = np.maximum(np.minimum(dev.end_us, t1) - np.maximum(dev.start_us, t0), 0.0)

    def clipped_union(mask: np.ndarray) -> iv.Spans:
        m = mask & in_window
        return iv.clip(*iv.union(dev.start_us[m], dev.end_us[m]), t0, t1)

    busy = clipped_union(np.ones_like(in_window))
    compute = clipped_union(is_compute)
    comm = clipped_union(is_comm)
    busy_us, compute_us, comm_us = iv.length(*busy), iv.length(*compute), iv.length(*comm)
    overlap_us = iv.intersection_length(comm, compute)

    share_s, share = _kernel_time_share(dev, in_window, in_window_us)
    hta_idle, hta_overlap, hta_idle_streams = _hta_figures(rt, dev, is_comm, is_compute)
    idle_s = _compute_stream_idle(rt, hta_idle_streams)
    idle_total = sum(idle_s.values())
    idle_frac = {k: (v / idle_total if idle_total > 0 else 0.0) for k, v in idle_s.items()}

    dataloader_all = iv.union(*_cpu_spans(rt, DATALOADER_NAME_RE))
    dataloader = iv.clip(*dataloader_all, t0, t1)
    kept = [s for s in rt.steps if s.number not in warmup]  # the host window: the kept steps' CPU span
    h0, h1 = (kept[0].cpu_start_us, kept[-1].cpu_end_us) if kept else (t0, t1)
    dataloader_fraction = iv.length(*iv.clip(*dataloader_all, h0, h1)) / max(h1 - h0, 1e-9)
    comm_blocking_cpu = cpu_union(rt, CPU_COLLECTIVE_RE, t0, t1)
    compute_idle = iv.complement(*compute, t0, t1)
    cpu_collective_exposed = iv.intersection_length(compute_idle, comm_blocking_cpu)
    any_comm = iv.union(np.concatenate([comm[0], comm_blocking_cpu[0]]),
                        np.concatenate([comm[1], comm_blocking_cpu[1]]))
    comm_critical = iv.intersection_length(compute_idle, any_comm)
    p2p = _p2p_kernel_mask(rt, dev, in_window)
    p2p_starts = _cpu_spans(rt, _CPU_P2P_RE)[0]
    causes = _idle_causes(rt, dev, in_window, p2p, (t0, t1), compute_idle, comm, any_comm, dataloader)
    steps = _step_stats(rt, dev, warmup)
    durations = np.array([s.duration_s for s in steps if not s.warmup and not s.partial])
    evidence = kernel_evidence(rt, dev, kernels, in_window_us)
    launch = _launch_stats(rt, dev, kernels, t0, t1)
    # a replay begun before the window counts
    launch.graph_launches = max(launch.graph_launches, evidence.graph_launches)
    return RankAnalysis(
        rank=rt.rank, file=rt.file, device=rt.device_name, window_us=(t0, t1), steps=steps,
        step_time_median_s=_median(durations) if durations.size else None,
        step_time_spread_s=float(durations.max() - durations.min()) if durations.size else None,
        gpu_busy_fraction=busy_us / span, compute_busy_fraction=compute_us / span,
        comm_fraction=comm_us / span, comm_exposed_fraction=(comm_us - overlap_us) / span,
        comm_overlap_fraction=(overlap_us / comm_us) if comm_us > 0 else None,
        idle_breakdown=idle_frac, idle_breakdown_s={k: v / 1e6 for k, v in idle_s.items()},
        kernel_time_share=share, kernel_time_s=share_s,
        launch=launch,
        dataloader_fraction=dataloader_fraction,
        host_starved_fraction=causes.data,
        p2p_adjacent_idle_fraction=causes.pipeline, p2p_kernels=int(p2p.sum()),
        cpu_collective_exposed_fraction=cpu_collective_exposed / span,
        comm_critical_fraction=comm_critical / span,
        hta_temporal_idle_fraction=hta_idle, hta_comm_overlap_fraction=hta_overlap,
        has_device_work=bool(dev.start_us.size),
        warnings=list(rt.warnings),
        truncation=rt.truncation.describe() if rt.truncation else None,
        truncation_gpu_missing=bool(rt.truncation and rt.truncation.gpu_events_may_be_missing),
        world_size=_world_size(rt),
        idle_causes=causes, top_kernels=_top_kernels(rt, dev, kernels, in_window_us),
        p2p_cpu_ops=int(np.sum((p2p_starts >= t0) & (p2p_starts < t1))),
        hta_idle_by_stream_s={k: {c: v / 1e6 for c, v in d.items()} for k, d in hta_idle_streams.items()},
        optimizer_kernel_share=_optimizer_share(rt, dev, kernels, in_window_us),
        profiler_overhead=_overhead_json(rt),
        kernel_evidence=evidence,
    )


def _overhead_json(rt: RankTrace) -> dict | None:
    from .profiler_overhead import overhead_of  # small module; kept out of the import-time path
    o = overhead_of(rt)
    return o.to_json() if o is not None else None


def _world_size(rt: RankTrace) -> int | None:
    info = rt.distributed_info or {}
    size = info.get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def _kernel_time_share(dev: DeviceEvents, in_window: np.ndarray, in_window_us: np.ndarray
                       ) -> tuple[dict[str, float], dict[str, float]]:
    per_class = np.bincount(dev.kernel_class[in_window].astype(np.int64), weights=in_window_us[in_window],
                            minlength=len(KERNEL_CLASSES))
    total = float(per_class.sum())
    seconds = {name: float(per_class[i]) / 1e6 for i, name in enumerate(KERNEL_CLASSES)}
    share = {name: (float(per_class[i]) / total if total > 0 else 0.0) for i, name in enumerate(KERNEL_CLASSES)}
    return seconds, share


def _compute_stream_idle(rt: RankTrace, by_stream: dict[int, dict[str, float]]) -> dict[str, float]:
    """HTA's idle split (µs) summed over the compute streams (communication and copy streams idle
    by design between their transfers)."""
    compute = {int(lane.stream) if lane.stream is not None else lane.lane_id
               for lane in rt.gpu_lanes if lane.kind == "gpu_compute"}
    out = dict.fromkeys(IDLE_CAUSES, 0.0)
    for stream, split in by_stream.items():
        if stream in compute:
            for k, v in split.items():
                out[k] += v
    return out


def cpu_union(rt: RankTrace, pattern: re.Pattern, t0: float, t1: float) -> iv.Spans:
    """The union of the CPU events whose name matches ``pattern``, clipped to ``[t0, t1]``."""
    return iv.clip(*iv.union(*_cpu_spans(rt, pattern)), t0, t1)


def _cpu_spans(rt: RankTrace, pattern: re.Pattern) -> iv.Spans:
    """``rt.cpu_spans`` of the names matching ``pattern``, without reading every CPU event when no
    name matches (most patterns on most traces: collectives, send/recv, DataLoader)."""
    matches = pattern_mask(rt.strings, pattern)
    if not matches.any():
        return np.zeros(0), np.zeros(0)
    return rt.cpu_spans(matches)


def main_thread(rt: RankTrace):  # noqa: ANN201 (Lane | None)
    """The CPU lane that issues the most launch calls (else the one with most events)."""
    launch_cats = member_mask(rt.strings, LAUNCH_CATEGORIES)
    return max(rt.cpu_lanes, key=lambda lane: (int(launch_cats[lane.category_id].sum()), len(lane)), default=None)


def _p2p_kernel_mask(rt: RankTrace, dev: DeviceEvents, in_window: np.ndarray) -> np.ndarray:
    # NCCL runs all-to-all as SendRecv kernels too: only count them as point-to-point when the host
    # issued send/recv ops (pipeline parallelism), not all_to_all (DLRM, torchrec).
    if not pattern_mask(rt.strings, _P2P_OP_RE).any():
        return np.zeros(dev.start_us.size, dtype=bool)
    p2p_names = pattern_mask(rt.strings, P2P_KERNEL_NAME_RE)
    return in_window & (dev.kernel_class == _COMM) & p2p_names[dev.name_id]


def _launch_calls(rt: RankTrace) -> list[tuple[Lane, np.ndarray]]:
    """The CPU lanes that issue kernel/copy launch calls, each with the mask of those calls."""
    launch_cats = member_mask(rt.strings, LAUNCH_CATEGORIES)
    launch_names = pattern_mask(rt.strings, LAUNCH_NAME_RE)
    masks = [(lane, launch_cats[lane.category_id] & launch_names[lane.name_id]) for lane in rt.cpu_lanes]
    return [(lane, m) for lane, m in masks if m.any()]


def _leaf_ops(rt: RankTrace, lanes: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name_id) of the innermost CPU ops (ops and annotations with no op inside; runtime
    calls, python functions and ProfilerStep annotations left out) on ``lanes``. An annotation's own
    time between its ops is Python the profiler does not see."""
    op_cat = ~member_mask(rt.strings, _LEAF_SKIP_CATEGORIES)
    op_name = ~step_name_mask(rt.strings)
    out_s, out_e, out_n = [], [], []
    for lane in lanes:
        idx = np.flatnonzero(op_cat[lane.category_id] & op_name[lane.name_id])
        if not idx.size:
            continue
        st = lane.start_us[idx]
        en = st + lane.duration_us[idx]
        # Leaves: the next op starts after this one ends (events are sorted by start, parents first).
        leaf = np.empty(idx.size, dtype=bool)
        np.greater_equal(st[1:], en[:-1], out=leaf[:-1])
        leaf[-1] = True
        out_s.append(st[leaf]), out_e.append(en[leaf]), out_n.append(lane.name_id[idx[leaf]])
    if not out_s:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_s), np.concatenate(out_e), np.concatenate(out_n)


def _idle_causes(rt: RankTrace, dev: DeviceEvents, in_window: np.ndarray, p2p: np.ndarray,
                 window: tuple[float, float], compute_idle: iv.Spans, gpu_comm: iv.Spans, any_comm: iv.Spans,
                 dataloader: iv.Spans) -> IdleCauses:
    """Attribute compute-idle time (the gaps ``compute_idle``) to causes (see :class:`IdleCauses` and
    the module docstring); ``any_comm``: the union of GPU and CPU-side collectives."""
    t0, t1 = window
    span = max(t1 - t0, 1e-9)
    gs, ge = compute_idle
    glen = ge - gs
    out = IdleCauses(compute_idle=float(glen.sum()) / span)
    if gs.size == 0:
        return out
    # Pipeline: gaps touching a p2p kernel (widened) or a CPU-side send/recv.
    cpu_p2p = cpu_union(rt, _CPU_P2P_RE, t0, t1)
    ps = np.concatenate([dev.start_us[p2p] - P2P_TOUCH_US, cpu_p2p[0]])
    pe = np.concatenate([dev.end_us[p2p] + P2P_TOUCH_US, cpu_p2p[1]])
    touched = iv.overlap_each(gs, ge, iv.union(ps, pe)) > 0
    out.pipeline = float(glen[touched].sum()) / span
    out.p2p_cpu_blocking = iv.intersection_length((gs, ge), cpu_p2p) / span
    # Communication (the module docstring). Before it, the gap is the host's (it issued the
    # collective at the end of that piece); after it, too, unless the kernel ending the gap was
    # already queued (it waited on the collective as well).
    cs, ce = any_comm
    n_comm = cs.size
    lo = np.searchsorted(ce, gs, side="right")  # first collective ending after the gap starts
    hi = np.searchsorted(cs, ge, side="left") - 1  # last collective starting before the gap ends
    has = ~touched & (lo <= hi) & (lo < n_comm) if n_comm else np.zeros(gs.size, dtype=bool)
    c_first = np.where(has, np.maximum(cs[np.minimum(lo, n_comm - 1)], gs), gs) if n_comm else gs.copy()
    c_last = np.where(has, np.minimum(ce[np.clip(hi, 0, n_comm - 1)], ge), gs) if n_comm else gs.copy()
    cm = in_window & (dev.kernel_class != _COMM) & (dev.kernel_class != _COPY)
    launch = next_launch_us(*iv.sorted_by(dev.start_us[cm], dev.launch_start_us[cm]), ge)
    queued = ~touched & ~np.isnan(launch) & (launch <= c_last)
    comm_part = np.where(has, np.where(queued, ge, c_last) - c_first, 0.0)
    gpu_comm_gap = has & (iv.overlap_each(gs, ge, gpu_comm) > 0)
    out.communication = float(comm_part.sum()) / span
    out.communication_cpu = float(comm_part[~gpu_comm_gap].sum()) / span
    out.gpu_wait = float(glen[queued & ~has].sum()) / span
    # What is left for the host: the piece before the first collective, and the piece after the
    # last one (or the whole gap) unless the next kernel was queued.
    free = ~touched
    pre = free & has & (c_first > gs)
    post = free & ~queued & (c_last < ge)
    ogs, oge = gs, ge  # each piece remembers its gap (an HtoD copy anywhere in it is a data tell)
    gs = np.concatenate([gs[pre], c_last[post]])
    ge = np.concatenate([c_first[pre], ge[post]])
    piece_gap = np.concatenate([np.flatnonzero(pre), np.flatnonzero(post)])
    order = np.argsort(gs, kind="stable")
    gs, ge, piece_gap = gs[order], ge[order], piece_gap[order]
    glen = ge - gs
    # DataLoader, then host stall or launch overhead (the module docstring).
    dl = np.minimum(iv.overlap_each(gs, ge, dataloader), glen)
    out.dataloader = float(dl.sum()) / span
    launch_calls = _launch_calls(rt)
    calls = np.sort(np.concatenate([lane.start_us[m] for lane, m in launch_calls] or [np.zeros(0)]))
    lanes = [lane for lane, _ in launch_calls]  # the launching threads: the stalls' CPU ops are read there
    if calls.size == 0:  # no launch call in the trace: what the host did cannot be told
        out.unattributed = max(float(glen.sum()) / span - out.dataloader, 0.0)
        return out
    host = glen > 0
    stall_s, stall_e, stall_gap = _launch_free_stretches(gs[host], ge[host], calls)
    gap_index = np.flatnonzero(host)[stall_gap]
    rest = glen - dl
    stall_len = (stall_e - stall_s) - iv.overlap_each(stall_s, stall_e, dataloader)
    stall_per_gap = np.minimum(np.bincount(gap_index, weights=stall_len, minlength=gs.size), rest)
    launch_part = rest - stall_per_gap
    launch_gaps = launch_part > 0
    out.launch = float(launch_part.sum()) / span
    out.launch_gaps = int(launch_gaps.sum())
    out.launch_gap_median_us = _median(glen[launch_gaps]) if launch_gaps.any() else 0.0
    if stall_per_gap.sum() <= 0:  # no stretch (or none left after the DataLoader): no host stall
        return out
    out.host_stall = float(stall_per_gap.sum()) / span
    out.stall_gaps = int((stall_per_gap > 0).sum())
    out.stall_longest_s = float(stall_len.max()) / 1e6
    r = np.maximum(stall_len, 0.0)
    scale = out.host_stall * span / max(float(r.sum()), 1e-9)  # stretches capped to the gap's rest
    blocking = cpu_union(rt, _BLOCKING_CALL_RE, t0, t1)
    op_s, op_e, op_n = _leaf_ops(rt, lanes)
    ops = iv.clip(*iv.union(op_s, op_e), t0, t1)
    b = np.minimum(iv.overlap_each(stall_s, stall_e, blocking), r)
    o = np.minimum(np.maximum(iv.overlap_each(stall_s, stall_e, ops) - b, 0.0), r - b)
    out.stall_blocking = float(b.sum()) * scale / span
    out.stall_cpu_ops = float(o.sum()) * scale / span
    out.stall_uninstrumented = max(out.host_stall - out.stall_blocking - out.stall_cpu_ops, 0.0)
    htod = pattern_mask(rt.strings, HTOD_NAME_RE)
    hm = in_window & (dev.kernel_class == _COPY) & htod[dev.name_id]
    h_start = np.sort(dev.start_us[hm])
    sg, se = ogs[piece_gap[gap_index]], oge[piece_gap[gap_index]]  # the gap each stretch lies in
    before = (np.searchsorted(h_start, se, side="right") - np.searchsorted(h_start, sg, side="left")) > 0
    out.stall_before_htod = float(r[before].sum()) * scale / span
    sync = sync_stalls(rt, stall_s, r, before, scale, span, (t0, t1))
    out.stall_after_sync, out.sync_recoverable, out.sync_stalls = sync.fraction, sync.recoverable, sync.stalls
    out.sync_idle_median_s, out.sync_issuers, out.syncs = sync.idle_median_s, sync.issuers, sync.syncs
    if op_s.size:
        order = np.argsort(stall_s)
        stretches = (stall_s[order], stall_e[order])
        near = np.flatnonzero(_may_overlap(op_s, op_e, stretches))  # the same overlaps, fewer ops
        ov = iv.overlap_each(op_s[near], op_e[near], stretches)
        keep = ov > 0
        per_name: dict[int, float] = {}
        for nid, sec in zip(op_n[near[keep]].tolist(), ov[keep].tolist()):
            per_name[nid] = per_name.get(nid, 0.0) + sec
        top = sorted(per_name.items(), key=lambda kv: -kv[1])[:3]
        out.cpu_ops_in_stall = [(rt.strings[nid], sec / 1e6) for nid, sec in top]
    return out


def next_launch_us(starts: np.ndarray, launch_us: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The launch-call start of the first event starting at or after each time in ``t`` (``starts``
    sorted); NaN where there is none or its launch call is not known."""
    if not starts.size:
        return np.full(t.size, np.nan)
    k = np.searchsorted(starts, t, side="left")
    return np.where(k < starts.size, launch_us[np.minimum(k, starts.size - 1)], np.nan)


def _may_overlap(gs: np.ndarray, ge: np.ndarray, b: iv.Spans) -> np.ndarray:
    """Which intervals ``[gs, ge]`` can overlap the sorted disjoint intervals ``b`` (of positive
    length): the last of ``b`` starting before ``ge`` ends after ``gs``. The others'
    :func:`.intervals.overlap_each` is 0.0 (the covered length reads the same at both ends)."""
    bs, be = b
    k = np.searchsorted(bs, ge, side="left")
    return (k > 0) & (be[np.maximum(k - 1, 0)] > gs)


def _launch_free_stretches(gs: np.ndarray, ge: np.ndarray, calls: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Within each gap ``[gs[i], ge[i]]``, the stretches between consecutive launch calls (and the
    gap's ends) longer than ``LAUNCH_SPACING_MAX_US``: (starts, ends, index of the gap)."""
    gaps = np.flatnonzero(ge - gs > LAUNCH_SPACING_MAX_US)
    # Every long gap's points, one after the other: its start, the launch calls in it, its end.
    lo = np.searchsorted(calls, gs[gaps], side="left")
    hi = np.searchsorted(calls, ge[gaps], side="right")
    counts = hi - lo + 2
    first = np.cumsum(counts) - counts
    last = first + counts - 1
    gap_of = np.repeat(np.arange(gaps.size), counts)  # each point's gap (index into ``gaps``)
    inner = np.ones(gap_of.size, dtype=bool)
    inner[first] = inner[last] = False
    points = np.empty(gap_of.size)
    points[first], points[last] = gs[gaps], ge[gaps]
    at = np.flatnonzero(inner)
    points[at] = calls[at - first[gap_of[at]] - 1 + lo[gap_of[at]]]
    d = np.diff(points)
    d[last[:-1]] = -np.inf  # from one gap's end to the next gap's start: not a stretch
    long = np.flatnonzero(d > LAUNCH_SPACING_MAX_US)
    return points[long], points[long + 1], gaps[gap_of[long]].astype(np.int64)


def _optimizer_share(rt: RankTrace, dev: DeviceEvents, kernels: np.ndarray, in_window_us: np.ndarray) -> float:
    """Share of kernel time (``kernels``: copies left out) in optimizer kernels (:data:`_OPTIMIZER_KERNEL_RE`)."""
    total = float(in_window_us[kernels].sum())
    if total <= 0:
        return 0.0
    names = pattern_mask(rt.strings, _OPTIMIZER_KERNEL_RE)
    return float(in_window_us[kernels & names[dev.name_id]].sum()) / total


def _top_kernels(rt: RankTrace, dev: DeviceEvents, kernels: np.ndarray, in_window_us: np.ndarray,
                 n: int = 5) -> list[tuple[str, float]]:
    """The ``n`` kernels with the most device time in the window, with their share of kernel time."""
    if not kernels.any():
        return []
    ids, inv = np.unique(dev.name_id[kernels], return_inverse=True)
    per = np.bincount(inv, weights=in_window_us[kernels])
    total = float(per.sum())
    order = np.argsort(-per)[:n]
    return [(rt.strings[int(ids[i])], float(per[i]) / total if total > 0 else 0.0) for i in order]


def step_window(rt: RankTrace, i: int) -> tuple[float, float]:
    """The window of step ``i`` whose length is the step time: the GPU span (this step's first
    device event to the next step's) when it is the longer, else the CPU span."""
    step = rt.steps[i]
    cpu = (step.cpu_start_us, step.cpu_end_us)
    if np.isnan(step.gpu_start_us):
        return cpu
    nxt = rt.steps[i + 1].gpu_start_us if i + 1 < len(rt.steps) else float("nan")
    gpu_end = nxt if not np.isnan(nxt) else step.gpu_end_us
    if gpu_end - step.gpu_start_us > cpu[1] - cpu[0]:
        return (step.gpu_start_us, gpu_end)
    return cpu


def _step_stats(rt: RankTrace, dev: DeviceEvents, warmup: list[int]) -> list[StepStats]:
    """Per step: duration (the length of :func:`step_window`), and busy/idle inside :func:`step_bounds`
    (as the rank's window is, so a packed GPU reads the same busy fraction per step as per rank)."""
    out = []
    if not rt.steps:
        return out
    bounds = step_bounds(rt.steps)
    # `gpuperf profile` stopped mid-step (Stop, or the script ended): its last step is cut short
    last_partial = bool((rt.gpuperf_unprofiled or {}).get("last_step_partial"))
    busy_in = iv.clip_each(iv.union(dev.start_us, dev.end_us), bounds)
    for i, (step, (s, e)) in enumerate(zip(rt.steps, bounds)):
        w0, w1 = step_window(rt, i)
        busy = iv.length(*busy_in[i])
        span = max(e - s, 1e-9)
        out.append(StepStats(number=step.number, duration_s=(w1 - w0) / 1e6, gpu_busy_fraction=busy / span,
                             gpu_idle_s=(span - busy) / 1e6, warmup=step.number in warmup,
                             partial=last_partial and i == len(rt.steps) - 1))
    return out


def _launch_stats(rt: RankTrace, dev: DeviceEvents, kernels: np.ndarray, t0: float, t1: float) -> LaunchStats:
    graph_names = predicate_mask(rt.strings, "graphlaunch", lambda s: "graphlaunch" in s.lower())
    n_launch = n_graph = 0
    for lane, m in _launch_calls(rt):
        m = m & (lane.start_us >= t0) & (lane.start_us < t1)
        n_launch += int(m.sum())
        n_graph += int((m & graph_names[lane.name_id]).sum())
    has_launch = kernels & ~np.isnan(dev.launch_start_us)
    call = dev.launch_end_us[has_launch] - dev.launch_start_us[has_launch]
    delay = np.maximum(dev.start_us[has_launch] - dev.launch_end_us[has_launch], 0.0)
    kdur = dev.duration_us[has_launch]
    all_kdur = dev.duration_us[kernels & dev.on_compute_lane]
    return LaunchStats(
        launches=n_launch, launches_per_ms=n_launch / max((t1 - t0) / 1e3, 1e-9),
        median_launch_call_us=_median(call) if call.size else 0.0,
        median_launch_delay_us=_median(delay) if delay.size else 0.0,
        kernels_shorter_than_launch_fraction=float(np.mean(kdur < call)) if call.size else 0.0,
        median_kernel_us=_median(all_kdur) if all_kdur.size else 0.0,
        kernels=int(kernels.sum()), graph_launches=n_graph)


def hta_kept(rt: RankTrace, dev: DeviceEvents) -> np.ndarray:
    """HTA's ``_filter_irrelevant_gpu_kernels``: with two or more ProfilerSteps, the device events
    whose launch call (joined on correlation) starts before the last step starts; else every one.

    HTA takes "the last step's start" over every row named ProfilerStep that is not a kernel, so the
    ``gpu_user_annotation`` copies of the steps (newer Kineto draws them on the GPU lanes, starting
    at the step's first device work) count too: a later start than the CPU step's when the GPU lags.
    """
    if len(rt.steps) < 2:
        return np.ones(dev.start_us.size, dtype=bool)
    last_start = max(s.cpu_start_us for s in rt.steps)
    step_names = step_name_mask(rt.strings)
    for lane in rt.lanes_of_kind("gpu_annotation"):
        m = step_names[lane.name_id]
        if m.any():
            last_start = max(last_start, float(lane.start_us[m].max()))
    return ~np.isnan(dev.launch_start_us) & (dev.launch_start_us < last_start)


def _hta_figures(rt: RankTrace, dev: DeviceEvents, is_comm: np.ndarray, is_compute: np.ndarray
                 ) -> tuple[float | None, float | None, dict[int, dict[str, float]]]:
    """HTA's temporal-breakdown idle fraction, comm/compute overlap and idle split per stream
    (:func:`hta_idle_by_stream`), reproducing its filtering (:func:`hta_kept`) and rounding."""
    keep = hta_kept(rt, dev)
    s, e = dev.start_us, dev.end_us
    if rt.dialect == "kineto-ns":  # HTA rounds float ts up and ends down to whole µs (PR 122425)
        off = rt.file_ts_offset_us
        s, e = np.ceil(s + off) - off, np.floor(e + off) - off
        e = np.maximum(e, s)
    by_stream = hta_idle_by_stream(rt, dev, keep, s, e)
    if not keep.any():
        return None, None, by_stream
    s, e, cm, cp = s[keep], e[keep], is_comm[keep], is_compute[keep]
    span = float(e.max() - s.min())
    busy = iv.length(*iv.union(s, e))
    idle = 1.0 - busy / span if span > 0 else 0.0
    comm = iv.union(s[cm], e[cm])
    comp = iv.union(s[cp], e[cp])
    comm_len = iv.length(*comm)
    overlap = iv.intersection_length(comm, comp) / comm_len if comm_len > 0 else None
    return idle, overlap, by_stream


def hta_idle_by_stream(rt: RankTrace, dev: DeviceEvents, keep: np.ndarray, start_us: np.ndarray,
                       end_us: np.ndarray) -> dict[int, dict[str, float]]:
    """HTA's ``get_idle_time_breakdown`` per stream, in µs, over the ``keep`` events with HTA's spans
    (``start_us``, ``end_us``): on each stream, sorted by start, the gaps to the latest end before an
    event (overlapping events leave none), split by :func:`hta_idle_split`."""
    out: dict[int, dict[str, float]] = {}
    for lane_id in np.flatnonzero(np.bincount(dev.lane[keep])).tolist():  # lane ids, sorted
        m = keep & (dev.lane == lane_id)
        if m.sum() < 2:
            continue
        s, e, launch = iv.sorted_by(start_us[m], end_us[m], dev.launch_start_us[m])
        reach = np.maximum.accumulate(e)
        gap = np.maximum(s[1:] - reach[:-1], 0.0)
        stream = rt.lanes[lane_id].stream
        key = int(stream) if stream is not None else lane_id
        split = out.setdefault(key, dict.fromkeys(IDLE_CAUSES, 0.0))
        for cause, us in hta_idle_split(gap, launch[1:] > reach[:-1]).items():
            split[cause] += us
    return out


def hta_idle_split(gap_us: np.ndarray, host: np.ndarray) -> dict[str, float]:
    """HTA's idle rule, µs per part: a gap is ``host_wait`` where ``host`` (the launch call of the
    event ending it started after the gap began), else ``kernel_wait`` when under
    ``KERNEL_WAIT_MAX_US``, else ``other``."""
    kernel = ~host & (gap_us < KERNEL_WAIT_MAX_US)
    return {"host_wait": float(gap_us[host].sum()), "kernel_wait": float(gap_us[kernel].sum()),
            "other": float(gap_us[~host & ~kernel].sum())}
