"""Per-rank analysis of a :class:`.model.RankTrace`: busy/idle, communication, kernel classes, launches.

Definitions follow HTA (shared/reference/metrics.md §1.1) where HTA has one:

* GPU busy = union of kernel/memcpy/memset intervals (``gpu_user_annotation`` and ``cuda_sync``
  rows never count).
* compute = kernels of classes other than communication and copy; exposed communication = the
  communication union minus its overlap with the compute union; HTA's comm/compute overlap = that
  overlap divided by the communication union.
* idle split per stream: for each gap between consecutive kernels, ``host_wait`` if the CPU launch
  call of the next kernel started after the previous kernel ended; else ``kernel_wait`` if the gap is
  under 30 µs; else ``other``.

The analysis window is the steady-state steps: every ``ProfilerStep`` but the first when there are
at least three (the first is flagged as warm-up), from the first kept step's CPU start to the last
kept step's end (CPU or GPU, whichever is later). Without steps it is the span of device activity.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from . import intervals as iv
from .build import LAUNCH_CATEGORIES
from .model import KERNEL_CLASSES, RankTrace

KERNEL_WAIT_MAX_US = 30.0
"""HTA's ``consecutive_kernel_delay``: gaps shorter than this (and not host wait) are kernel wait."""
WARMUP_MIN_STEPS = 3
"""With at least this many steps the first is treated as warm-up and left out of the window."""

_DATALOADER_RE = re.compile(r"enumerate\(DataLoader\)|DataLoader.*__next__|_next_data|dataloader", re.I)
_P2P_RE = re.compile(r"sendrecv|_send|_recv|send_|recv_|nccl:send|nccl:recv|p2p", re.I)
_P2P_OP_RE = re.compile(r"^(nccl|gloo):(send|recv)|^c10d::(send|recv)|batch_isend_irecv|^aten::i?(send|recv)$"
                        r"|\bP2POp\b", re.I)
_CPU_COLLECTIVE_RE = re.compile(
    r"^gloo:|^c10d::(allreduce|allgather|broadcast|barrier|reduce_scatter|alltoall|recv|send)|"
    r"all_?to_?all.*wait|awaitable.*wait|^record_param_comms$|^nccl:.*wait|^c10d::wait", re.I)
_LAUNCH_NAME_RE = re.compile(r"launch|graphlaunch|memcpy|memset", re.I)
_SYNC_CALL_RE = re.compile(r"synchronize|cudaMemcpy$|hipMemcpy$|StreamWait", re.I)

_COMM = KERNEL_CLASSES.index("communication")
_COPY = KERNEL_CLASSES.index("copy")
_ELEMENTWISE = KERNEL_CLASSES.index("elementwise")


@dataclass
class StepStats:
    """One ``ProfilerStep``: durations in seconds, fractions of its CPU span."""

    number: int
    duration_s: float
    gpu_busy_fraction: float
    gpu_idle_s: float
    warmup: bool = False


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
    """Everything computed for one rank; ``to_json()`` gives the DESIGN.md rank object."""

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
    step_idle_cv: float | None
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

    @property
    def window_s(self) -> float:
        return (self.window_us[1] - self.window_us[0]) / 1e6

    def to_json(self) -> dict:
        """The rank object of the ``gpuperf diagnose --json`` contract (SI units, fractions)."""
        out = {
            "rank": self.rank, "file": self.file, "device": self.device or None,
            "world_size": self.world_size,
            "steps": [asdict(s) for s in self.steps],
            "step_time_median_s": self.step_time_median_s,
            "step_time_spread_s": self.step_time_spread_s,
            "window_s": self.window_s,
            "gpu_busy_fraction": self.gpu_busy_fraction,
            "compute_busy_fraction": self.compute_busy_fraction,
            "comm_fraction": self.comm_fraction,
            "idle_breakdown": dict(self.idle_breakdown),
            "idle_breakdown_s": dict(self.idle_breakdown_s),
            "comm_exposed_fraction": self.comm_exposed_fraction,
            "comm_overlap_fraction": self.comm_overlap_fraction,
            "comm_critical_fraction": self.comm_critical_fraction,
            "cpu_collective_exposed_fraction": self.cpu_collective_exposed_fraction,
            "kernel_time_share": dict(self.kernel_time_share),
            "kernel_time_s": dict(self.kernel_time_s),
            "launch": asdict(self.launch),
            "dataloader_fraction": self.dataloader_fraction,
            "host_starved_fraction": self.host_starved_fraction,
            "p2p_adjacent_idle_fraction": self.p2p_adjacent_idle_fraction,
            "hta": {"temporal_idle_fraction": self.hta_temporal_idle_fraction,
                    "comm_comp_overlap_fraction": self.hta_comm_overlap_fraction},
            "warnings": list(self.warnings),
        }
        if self.truncation:
            out["truncation"] = self.truncation
        return out


def device_events(rt: RankTrace) -> DeviceEvents:
    """Flatten the device-work lanes, attaching each event's launch call through the flows."""
    lanes = rt.gpu_lanes
    if not lanes:
        z = np.zeros(0)
        zi = np.zeros(0, dtype=np.int64)
        return DeviceEvents(z, z, zi.astype(np.int8), zi, zi, z, z, zi.astype(bool))
    offsets = {}
    total = 0
    for lane in lanes:
        offsets[lane.lane_id] = total
        total += len(lane)
    start = np.concatenate([lane.start_us for lane in lanes])
    dur = np.concatenate([lane.duration_us for lane in lanes])
    launch_start = np.full(total, np.nan)
    launch_end = np.full(total, np.nan)
    flows = rt.flows
    if len(flows):
        base = np.array([offsets.get(i, -1) for i in range(len(rt.lanes))], dtype=np.int64)
        ok = base[flows.dst_lane] >= 0
        pos = base[flows.dst_lane[ok]] + flows.dst_index[ok]
        src_lane, src_index = flows.src_lane[ok], flows.src_index[ok]
        for lane_id in np.unique(src_lane).tolist():
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


def analysis_window(rt: RankTrace, dev: DeviceEvents) -> tuple[tuple[float, float], list[int]]:
    """The steady-state window and the warm-up step numbers left out of it."""
    steps = rt.steps
    if steps:
        warmup = [steps[0].number] if len(steps) >= WARMUP_MIN_STEPS else []
        kept = steps[1:] if warmup else steps
        t0 = kept[0].cpu_start_us
        ends = [kept[-1].cpu_end_us]
        if not np.isnan(kept[-1].gpu_end_us):
            ends.append(kept[-1].gpu_end_us)
        return (t0, max(ends)), warmup
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

    def clipped_union(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = mask & in_window
        return iv.clip(*iv.union(dev.start_us[m], dev.end_us[m]), t0, t1)

    busy = clipped_union(np.ones_like(in_window))
    compute = clipped_union(is_compute)
    comm = clipped_union(is_comm)
    busy_us, compute_us, comm_us = iv.length(*busy), iv.length(*compute), iv.length(*comm)
    overlap_us = iv.intersection_length(comm, compute)

    share_s, share = _kernel_time_share(dev, in_window, t0, t1)
    idle_s = _idle_breakdown(dev, in_window)
    idle_total = sum(idle_s.values())
    idle_frac = {k: (v / idle_total if idle_total > 0 else 0.0) for k, v in idle_s.items()}

    idle = iv.complement(*busy, t0, t1)
    dataloader = _cpu_union(rt, _DATALOADER_RE, t0, t1)
    host_gaps = _main_thread_gaps(rt, t0, t1)
    starved_us = iv.intersection_length(idle, iv.union(np.concatenate([dataloader[0], host_gaps[0]]),
                                                       np.concatenate([dataloader[1], host_gaps[1]])))
    comm_blocking_cpu = _cpu_collective_union(rt, t0, t1)
    compute_idle = iv.complement(*compute, t0, t1)
    cpu_collective_exposed = iv.intersection_length(compute_idle, comm_blocking_cpu)
    any_comm = iv.union(np.concatenate([comm[0], comm_blocking_cpu[0]]),
                        np.concatenate([comm[1], comm_blocking_cpu[1]]))
    comm_critical = iv.intersection_length(compute_idle, any_comm)
    p2p_idle, p2p_count = _p2p_adjacent_idle(rt, dev, in_window, compute_idle)
    steps = _step_stats(rt, dev, warmup)
    steady = [s for s in steps if not s.warmup]
    durations = np.array([s.duration_s for s in steady])
    hta_idle, hta_overlap = _hta_figures(rt, dev, is_comm, is_compute)
    return RankAnalysis(
        rank=rt.rank, file=rt.file, device=rt.device_name, window_us=(t0, t1), steps=steps,
        step_time_median_s=float(np.median(durations)) if durations.size else None,
        step_time_spread_s=float(durations.max() - durations.min()) if durations.size else None,
        gpu_busy_fraction=busy_us / span, compute_busy_fraction=compute_us / span,
        comm_fraction=comm_us / span, comm_exposed_fraction=(comm_us - overlap_us) / span,
        comm_overlap_fraction=(overlap_us / comm_us) if comm_us > 0 else None,
        idle_breakdown=idle_frac, idle_breakdown_s={k: v / 1e6 for k, v in idle_s.items()},
        kernel_time_share=share, kernel_time_s=share_s,
        launch=_launch_stats(rt, dev, in_window, t0, t1),
        dataloader_fraction=iv.length(*dataloader) / span,
        host_starved_fraction=starved_us / span,
        p2p_adjacent_idle_fraction=p2p_idle / span, p2p_kernels=p2p_count,
        step_idle_cv=_cv([s.gpu_idle_s for s in steady]),
        cpu_collective_exposed_fraction=cpu_collective_exposed / span,
        comm_critical_fraction=comm_critical / span,
        hta_temporal_idle_fraction=hta_idle, hta_comm_overlap_fraction=hta_overlap,
        has_device_work=bool(dev.start_us.size),
        warnings=list(rt.warnings),
        truncation=rt.truncation.describe() if rt.truncation else None,
        truncation_gpu_missing=bool(rt.truncation and rt.truncation.gpu_events_may_be_missing),
        world_size=_world_size(rt),
    )


def _world_size(rt: RankTrace) -> int | None:
    info = rt.distributed_info or {}
    size = info.get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def _cv(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    arr = np.asarray(values)
    mean = float(arr.mean())
    return float(arr.std() / mean) if mean > 0 else None


def _kernel_time_share(dev: DeviceEvents, in_window: np.ndarray, t0: float, t1: float
                       ) -> tuple[dict[str, float], dict[str, float]]:
    dur = np.minimum(dev.end_us, t1) - np.maximum(dev.start_us, t0)
    dur = np.where(in_window, np.maximum(dur, 0.0), 0.0)
    per_class = np.bincount(dev.kernel_class[in_window].astype(np.int64),
                            weights=dur[in_window], minlength=len(KERNEL_CLASSES)) \
        if in_window.any() else np.zeros(len(KERNEL_CLASSES))
    total = float(per_class.sum())
    seconds = {name: float(per_class[i]) / 1e6 for i, name in enumerate(KERNEL_CLASSES)}
    share = {name: (float(per_class[i]) / total if total > 0 else 0.0) for i, name in enumerate(KERNEL_CLASSES)}
    return seconds, share


def _idle_breakdown(dev: DeviceEvents, in_window: np.ndarray) -> dict[str, float]:
    """HTA's idle split summed over compute streams (µs)."""
    out = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    m = in_window & dev.on_compute_lane
    for lane_id in np.unique(dev.lane[m]).tolist():
        sel = np.flatnonzero(m & (dev.lane == lane_id))
        if sel.size < 2:
            continue
        sel = sel[np.argsort(dev.start_us[sel], kind="stable")]
        prev_end = np.maximum.accumulate(dev.end_us[sel])[:-1]
        nxt = sel[1:]
        gap = dev.start_us[nxt] - prev_end
        pos = gap > 0
        launch = dev.launch_start_us[nxt]
        host = pos & (launch > prev_end)
        kernel = pos & ~host & (gap < KERNEL_WAIT_MAX_US)
        other = pos & ~host & ~kernel
        out["host_wait"] += float(gap[host].sum())
        out["kernel_wait"] += float(gap[kernel].sum())
        out["other"] += float(gap[other].sum())
    return out


def _cpu_union(rt: RankTrace, pattern: re.Pattern, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    starts, ends = rt.cpu_spans(rt.strings.ids_matching(lambda s: bool(pattern.search(s))))
    if not len(starts):
        return starts, ends
    return iv.clip(*iv.union(starts, ends), t0, t1)


def main_thread(rt: RankTrace):  # noqa: ANN201 (Lane | None)
    """The CPU lane that issues the most launch calls (else the one with most events)."""
    launch_cats = rt.strings.ids_matching(lambda s: s in LAUNCH_CATEGORIES)
    best, best_score = None, (-1, -1)
    for lane in rt.cpu_lanes:
        score = (int(launch_cats[lane.category_id].sum()), len(lane))
        if score > best_score:
            best, best_score = lane, score
    return best


def _main_thread_gaps(rt: RankTrace, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """Time the main thread spends outside any op (under the step annotation), in the window."""
    lane = main_thread(rt)
    if lane is None or not len(lane):
        return np.zeros(0), np.zeros(0)
    step = rt.strings.ids_matching(lambda s: s.startswith("ProfilerStep"))
    python = rt.strings.ids_matching(lambda s: s == "python_function")
    m = ~step[lane.name_id] & ~python[lane.category_id]
    return iv.complement(*iv.union(lane.start_us[m], lane.start_us[m] + lane.duration_us[m]), t0, t1)


def _cpu_collective_union(rt: RankTrace, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """CPU-side collectives and waits on them (gloo, c10d, torchrec awaitables) as intervals."""
    return _cpu_union(rt, _CPU_COLLECTIVE_RE, t0, t1)


def _p2p_adjacent_idle(rt: RankTrace, dev: DeviceEvents, in_window: np.ndarray,
                       idle: tuple[np.ndarray, np.ndarray]) -> tuple[float, int]:
    """Compute-idle time in gaps that touch (within 50 µs) a point-to-point communication kernel."""
    # NCCL runs all-to-all as SendRecv kernels too: only count them as point-to-point when the host
    # issued send/recv ops (pipeline parallelism), not all_to_all (DLRM, torchrec).
    if not rt.strings.ids_matching(lambda s: bool(_P2P_OP_RE.search(s))).any():
        return 0.0, 0
    p2p_names = rt.strings.ids_matching(lambda s: bool(_P2P_RE.search(s)))
    m = in_window & (dev.kernel_class == _COMM) & p2p_names[dev.name_id]
    count = int(m.sum())
    if not count or idle[0].size == 0:
        return 0.0, count
    ps, pe = dev.start_us[m] - 50.0, dev.end_us[m] + 50.0
    # An idle gap counts if some p2p kernel (widened by 50 µs) overlaps it.
    ps_sorted_idx = np.argsort(ps)
    ps_s, pe_s = ps[ps_sorted_idx], np.maximum.accumulate(pe[ps_sorted_idx])
    gs, ge = idle
    k = np.searchsorted(ps_s, ge, side="left")
    touched = (k > 0) & (pe_s[np.maximum(k - 1, 0)] > gs)
    return float(np.sum((ge - gs)[touched])), count


def _step_stats(rt: RankTrace, dev: DeviceEvents, warmup: list[int]) -> list[StepStats]:
    out = []
    if not rt.steps:
        return out
    u = iv.union(dev.start_us, dev.end_us)
    steps = rt.steps
    for i, step in enumerate(steps):
        # Step time: the longer of the CPU span and the GPU span (start of this step's device work
        # to the start of the next step's, or to its last end for the final step).
        s, e = step.cpu_start_us, step.cpu_end_us
        gpu_dur = 0.0
        if not np.isnan(step.gpu_start_us):
            nxt = steps[i + 1].gpu_start_us if i + 1 < len(steps) else float("nan")
            gpu_dur = (nxt if not np.isnan(nxt) else step.gpu_end_us) - step.gpu_start_us
        duration = max(e - s, gpu_dur)
        busy = iv.length(*iv.clip(*u, s, e))
        span = max(e - s, 1e-9)
        out.append(StepStats(number=step.number, duration_s=duration / 1e6, gpu_busy_fraction=busy / span,
                             gpu_idle_s=(span - busy) / 1e6, warmup=step.number in warmup))
    return out


def _launch_stats(rt: RankTrace, dev: DeviceEvents, in_window: np.ndarray, t0: float, t1: float) -> LaunchStats:
    launch_cats = rt.strings.ids_matching(lambda s: s in LAUNCH_CATEGORIES)
    launch_names = rt.strings.ids_matching(lambda s: bool(_LAUNCH_NAME_RE.search(s)))
    n_launch = 0
    for lane in rt.cpu_lanes:
        m = launch_cats[lane.category_id] & launch_names[lane.name_id]
        m &= (lane.start_us >= t0) & (lane.start_us < t1)
        n_launch += int(m.sum())
    kernels = in_window & ~np.isin(dev.kernel_class, [_COPY])
    has_launch = kernels & ~np.isnan(dev.launch_start_us)
    call = dev.launch_end_us[has_launch] - dev.launch_start_us[has_launch]
    delay = np.maximum(dev.start_us[has_launch] - dev.launch_end_us[has_launch], 0.0)
    kdur = dev.duration_us[has_launch]
    all_kdur = dev.duration_us[kernels & dev.on_compute_lane]
    return LaunchStats(
        launches=n_launch, launches_per_ms=n_launch / max((t1 - t0) / 1e3, 1e-9),
        median_launch_call_us=float(np.median(call)) if call.size else 0.0,
        median_launch_delay_us=float(np.median(delay)) if delay.size else 0.0,
        kernels_shorter_than_launch_fraction=float(np.mean(kdur < call)) if call.size else 0.0,
        median_kernel_us=float(np.median(all_kdur)) if all_kdur.size else 0.0,
        kernels=int(kernels.sum()))


def _hta_figures(rt: RankTrace, dev: DeviceEvents, is_comm: np.ndarray, is_compute: np.ndarray
                 ) -> tuple[float | None, float | None]:
    """HTA's temporal-breakdown idle fraction and comm/compute overlap, reproducing its filtering.

    HTA keeps device events launched inside a ProfilerStep but drops those of the last step
    (``include_last_profiler_step=False``); with fewer than two steps it keeps everything.
    """
    if dev.start_us.size == 0:
        return None, None
    keep = np.ones(dev.start_us.size, dtype=bool)
    if len(rt.steps) >= 2:
        kept = rt.steps[:-1]
        keep = np.zeros_like(keep)
        for s in kept:
            keep |= (dev.launch_start_us >= s.cpu_start_us) & (dev.launch_start_us < s.cpu_end_us)
    if not keep.any():
        return None, None
    s, e = dev.start_us[keep], dev.end_us[keep]
    if rt.dialect == "kineto-ns":  # HTA rounds float ts up and ends down to whole µs (PR 122425)
        off = rt.file_ts_offset_us
        s, e = np.ceil(s + off) - off, np.floor(e + off) - off
        e = np.maximum(e, s)
    span = float(e.max() - s.min())
    busy = iv.length(*iv.union(s, e))
    idle = 1.0 - busy / span if span > 0 else 0.0
    cm, cp = is_comm[keep], is_compute[keep]
    comm = iv.union(s[cm], e[cm])
    comp = iv.union(s[cp], e[cp])
    comm_len = iv.length(*comm)
    overlap = iv.intersection_length(comm, comp) / comm_len if comm_len > 0 else None
    return idle, overlap
