"""What if a cause were gone: the step time with its edges shrunk on the dependency graph.

Each projection changes the durations or edges of :mod:`.critical_path`'s graph the way the fix
would, re-walks the graph (:func:`.critical_path.replay`) and measures the replayed steps. It is an
upper bound of what the fix gives: it removes the cause completely and leaves everything else as
traced (the work that overlapped the cause, the launches behind it, now show on the path). The
speedup is the ratio of the replayed window without and with the change (both walked by the same
graph, so the graph's own error cancels); the projected step time is the measured median step
divided by it.

Each cause is a function of :data:`SCENARIOS` whose docstring says what it changes;
:data:`ASSUMPTIONS` says it to the user and docs/what-if.md tables them.

Every projection leaves the profiler's own cost out of the baseline and the changed graph alike
(:data:`PROFILER_US_PER_EVENT`, :data:`PROFILER_STEP_CUT`); its cost per event is a range, and the
projection is the largest speedup over it. :func:`project` also combines the two causes with the
largest gains.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

import numpy as np

from . import critical_path as cp
from .kernel_roof import trace_device
from .kernel_table import join_ops, kernel_precision_of
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..model.trace_model import RankTrace

GEMM_CEILING_FRACTION = 0.70
"""A realistic GEMM ceiling: 70 % of the dense peak (cuBLAS reaches 70-80 % on large H100/H200
GEMMs; metrics.md's efficiency bands call > 70 % good)."""

ASSUMPTIONS = {
    "data_stall": "data ready when the step starts (the DataLoader, host work that launches nothing and "
                  "long stretches of the host's own code take no time)",
    "host_syncs": "no host sync: .item()/synchronize/synchronous copies neither wait for the device nor take time",
    "launch_overhead": "kernels issued at no host cost (CUDA graph replay): launch calls, the ops that "
                       "issue them and the Python between them take no host time",
    "exposed_comm": "collectives fully overlapped (communication costs nothing on the path)",
    "pipeline_bubble": "no pipeline bubble: stages never wait for each other (send/recv take no time and a "
                       "recv does not wait for the other stage's send)",
    "late_rank": "the late rank arrives with the others (its host time outside ops, host stalls and "
                 "DataLoader removed)",
    "gemm_ceiling": f"GEMMs at {GEMM_CEILING_FRACTION:.0%} of the dense peak",
    "memory_bound": "each run of back-to-back elementwise kernels fused into one pass over the data "
                    "(its input read once and its output written once at the peak memory bandwidth; "
                    "the host issues one launch for it, the other ops' host work stays)",
}
FIX_LABELS = {
    "data_stall": "DataLoader workers",
    "host_syncs": "no host syncs",
    "launch_overhead": "CUDA graphs / torch.compile",
    "exposed_comm": "overlap communication",
    "pipeline_bubble": "more micro-batches",
    "late_rank": "fix the late rank",
    "gemm_ceiling": "faster GEMMs",
    "memory_bound": "fuse the elementwise chain (torch.compile)",
}
SIGNATURE_CAUSE = {"data_starved": "data_stall", "launch_bound": "launch_overhead", "comm_bound": "exposed_comm",
                   "pipeline_bubble": "pipeline_bubble", "straggler": "late_rank", "memory_bound": "memory_bound",
                   "host_sync_bound": "host_syncs", "host_bound": "data_stall"}
"""The projection that goes with a diagnosis's signature (its "Try first" fix). host_bound's is the
data stall's (host stalls that launch nothing take no time), under its own words (SIGNATURE_FIX_LABELS)."""
SIGNATURE_FIX_LABELS = {"host_bound": "host work off the step"}
"""A signature whose fix is not its projection's usual one (FIX_LABELS)."""

_C = cp.CATEGORIES.index


@dataclass
class Projection:
    """One cause removed: the step it leaves, the speedup, and the MFU that would give."""

    cause: str
    assumption: str
    step_time_s: float
    speedup_upper_bound: float
    mfu: float | None = None
    new_dominant: str | None = None
    """The largest category on the new critical path."""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class WhatIf:
    """The graph's baseline and every projection, largest gain first."""

    step_time_s: float
    critical_path: cp.CriticalPath
    projections: list[Projection] = field(default_factory=list)
    mfu: float | None = None
    replay_error: float = 0.0
    """|replayed window - traced window| / traced window: how well the graph explains the trace."""
    graph: cp.Graph | None = None

    def for_cause(self, cause: str) -> Projection | None:
        return next((p for p in self.projections if p.cause == cause), None)

    def to_json(self) -> dict:
        return {"what_if": [p.to_json() for p in self.projections],
                "critical_path": {**self.critical_path.to_json(), "replay_error": self.replay_error}}


class Change(NamedTuple):
    """A cause's change of the graph: durations by category, edge weights, the edges kept, and the
    collective groups (None: the graph's; a change may unbind some)."""

    dcat: np.ndarray
    w: np.ndarray
    on: np.ndarray
    group: np.ndarray | None = None


PROFILER_US_PER_EVENT = (0.0, 5.0)
"""The range of host time the profiler adds per recorded CPU event (µs), taken out of the host's op
time (launch calls, ops, the Python between them). The cost is not in the trace, and which end
makes a projection larger depends on whether the host is on its path. 0: the profiler adds
nothing; 5.0: the most measured on the H200 traces, (profiled - unprofiled step) / CPU events per
step on host-bound steps (docs/what-if.md has each)."""


PROFILER_STEP_CUT = True
"""Leave ``prof.step()`` out of the baseline and every projection: the host time from the end of a
step's last event to the next step's first (critical_path's ``profiler`` category), which the
unprofiled loop does not have."""

_HOST_ISSUE = [_C("launch"), _C("cpu_op"), _C("dispatch")]
"""The host time that issues device work: the profiler's cost per event comes out of it."""


def _base(g: cp.Graph, ctx: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph as traced, less the profiler's own cost: the host time per recorded event
    (:data:`PROFILER_US_PER_EVENT`) and the gap between queued kernels of a stream (CUPTI records
    every kernel: 2-4 µs between queued kernels, about 1 µs without it), so a fix that leaves the
    device on the path is not charged the profiler's gaps, and a cause with no effect reads 1.0x."""
    return _base_dcat(g, ctx).copy(), g.e_w.copy(), np.ones(g.e_src.size, dtype=bool)


def _base_dcat(g: cp.Graph, ctx: dict) -> np.ndarray:
    """:func:`_base`'s durations by category, once per graph and profiler cost: not to be written
    (a change writes its own copy)."""
    key = ("base", ctx.get("profiler_us", PROFILER_US_PER_EVENT[0]), PROFILER_STEP_CUT)
    if key not in g.cache:
        dc = g.dcat.copy()
        dc[:, _C("kernel_gap")] = 0.0
        if PROFILER_STEP_CUT:
            dc[:, _C("profiler")] = 0.0
        part = dc[:, _HOST_ISSUE]
        total = part.sum(axis=1)
        cut = np.minimum(g.cpu_events * key[1], total)
        scale = np.where(total > 0, 1.0 - cut / np.maximum(total, 1e-12), 1.0)
        dc[:, _HOST_ISSUE] = part * scale[:, None]
        g.cache[key] = dc
    return g.cache[key]


def _data_stall(g: cp.Graph, ctx: dict) -> Change | None:
    """Data ready when the step starts: the DataLoader's host time, host ops that launch nothing for
    longer than 333 µs and longer stretches of code no op covers are 0 (the analysis's host stalls)."""
    dc, w, on = _base(g, ctx)
    cols = [_C("dataloader"), _C("host_stall"), _C("cpu_gap")]
    if dc[:, cols].sum() <= 0:
        return None
    dc[:, cols] = 0.0
    return Change(dc, w, on)


def _host_syncs(g: cp.Graph, ctx: dict) -> Change | None:
    """Blocking calls (``.item()``, synchronize, a synchronous copy) neither wait nor take time."""
    dc, w, on = _base(g, ctx)
    sync = g.e_kind == cp.EDGE_KINDS.index("sync")
    if not sync.any() and dc[:, _C("sync")].sum() <= 0:
        return None
    dc[:, _C("sync")] = 0.0
    on &= ~sync
    return Change(dc, w, on)


def _launch_overhead(g: cp.Graph, ctx: dict) -> Change | None:
    """The host issues kernels for free (a CUDA graph replays them): launch calls, the ops that issue
    them and the short Python between them take no host time, kernels start as soon as their stream
    and inputs allow; the rest of the host's time (longer code, host stalls, syncs) stays."""
    dc, w, on = _base(g, ctx)
    launch = g.e_kind == cp.EDGE_KINDS.index("launch")
    if not launch.any():
        return None
    dc[:, _HOST_ISSUE] = 0.0
    w[launch] = 0.0
    return Change(dc, w, on)


def _exposed_comm(g: cp.Graph, ctx: dict) -> Change | None:
    """Collectives fully overlapped: communication kernels and host collectives cost 0."""
    dc, w, on = _base(g, ctx)
    comm = g.is_gpu & (g.kernel_class == KERNEL_CLASSES.index("communication")) & ~g.p2p
    if not comm.any() and dc[:, _C("collective_cpu")].sum() <= 0:
        return None
    dc[comm] = 0.0
    dc[:, _C("collective_cpu")] = 0.0
    return Change(dc, w, on)


def _pipeline_bubble(g: cp.Graph, ctx: dict) -> Change | None:
    """Stages never wait for each other: send/recv cost nothing and a recv no longer waits for the
    other rank's send (critical_path's point-to-point groups are unbound)."""
    if not g.p2p.any():
        return None
    dc, w, on = _base(g, ctx)
    dc[g.p2p] = 0.0
    group = g.group.copy()
    group[np.isin(group, g.p2p_groups)] = -1
    return Change(dc, w, on, group)


def _late_rank(g: cp.Graph, ctx: dict) -> Change | None:
    """The late ranks arrive with the others: their host time outside ops, host stalls and the
    DataLoader is 0."""
    late = ctx.get("late_ranks")
    if not late:
        return None
    dc, w, on = _base(g, ctx)
    m = np.isin(g.node_rank, late) & ~g.is_gpu
    dc[np.ix_(m, [_C("cpu_gap"), _C("dataloader"), _C("host_stall")])] = 0.0
    return Change(dc, w, on)


def _gemm_ceiling(g: cp.Graph, ctx: dict) -> Change | None:
    """GEMMs at :data:`GEMM_CEILING_FRACTION` of the dense peak (those whose FLOPs the trace gives)."""
    ideal = ctx.get("gemm_ideal_us")
    if ideal is None or not np.isfinite(ideal).any():
        return None
    dc, w, on = _base(g, ctx)
    col = cp.N_CPU + KERNEL_CLASSES.index("gemm")
    ok = np.isfinite(ideal)
    dc[ok, col] = np.minimum(dc[ok, col], ideal[ok])
    return Change(dc, w, on)


def _memory_bound(g: cp.Graph, ctx: dict) -> Change | None:
    """Fuse each run of back-to-back elementwise kernels of a stream into one pass over the data,
    removing only what fusion removes (docs/what-if.md):

    * the device: the fused kernel reads the run's input once and writes its output once, so it
      takes at least (the first op's largest input + the last op's output, sized as its largest
      input) / the device's peak bandwidth; without recorded shapes or a known device, the run's
      shortest kernel (a unary kernel reads and writes the data once, as the fused one does);
    * the host: the ops that issue the run and the Python between them become one launch (the
      run's shortest launch call); the host work before the run's first launch, and every other op,
      stays (launch overhead is its own cause).

    Not "each kernel at its roof": a kernel already near its roof gains little on its own, the
    passes that fusion saves are what pays (the H200 chain: 10.5x measured, ~1.1x at the roof)."""
    plan = _fusion_plan(g, ctx.get("kernel_names"))
    if plan is None:
        return None
    dc, w, on = _base(g, ctx)
    col = cp.N_CPU + KERNEL_CLASSES.index("elementwise")
    launch = _C("launch")
    # The device: each run's shortest kernel (np.argmin's: the first minimum, a NaN first) or the
    # run's bytes at the peak bandwidth, where shorter, is the run; the others are 0 (gaps: _base).
    dur = dc[plan.nodes, col]
    low = np.minimum.reduceat(dur, plan.at)
    low_each = np.repeat(low, plan.size)
    is_low = np.where(np.isnan(low_each), np.isnan(dur), dur == low_each)
    lows = np.flatnonzero(is_low)
    first = lows[np.searchsorted(lows, plan.at)]
    fused = dur[first]
    io, bw = ctx.get("io_bandwidth", lambda: (None, None))()   # cached: read once a run to fuse is found
    if io is not None and bw is not None:
        floor = (io[plan.lo] + io[plan.hi - 1]) / bw[plan.lo] * 1e6   # NaN: an unknown size
        fused = np.where(np.isfinite(floor) & (floor > 0) & (floor < fused), floor, fused)
    dc[plan.nodes, col] = 0.0
    dc[plan.nodes[first], col] = fused
    # The host issues each run as one launch (_fuse_host's stretches, thread by thread).
    if plan.host_apart:   # no stretch reads or writes another's: all at once
        one = np.minimum.reduceat(dc[plan.host_ends, launch], plan.host_at)
        dc[plan.host_rows[:, None], _HOST_ISSUE] = 0.0
        dc[plan.host_first, launch] = one
    else:
        for ends, start, stop in plan.host:   # in run order, as they were planned
            one = float(dc[ends, launch].min())
            dc[start:stop, _HOST_ISSUE] = 0.0
            dc[start, launch] = one
    return Change(dc, w, on)


@dataclass
class _Fusion:
    """The runs to fuse of a graph (every profiler cost and pair walks the same runs)."""

    lo: np.ndarray
    hi: np.ndarray
    """Each run's nodes, ``lo:hi`` (at least two)."""
    nodes: np.ndarray
    at: np.ndarray
    size: np.ndarray
    """Every run's nodes one run after the other, where each run starts among them, its length."""
    host: list[tuple[np.ndarray, int, int]]
    """Per run, per thread that launched it (run order): :func:`_fuse_host`'s launch-call end nodes
    and the host stretch ``start:stop`` that becomes one launch."""
    host_apart: bool
    """No stretch reads or writes another's nodes (then they are fused all at once)."""
    host_ends: np.ndarray
    host_at: np.ndarray
    host_rows: np.ndarray
    host_first: np.ndarray


def _fusion_plan(g: cp.Graph, names: np.ndarray | None) -> _Fusion | None:
    """The runs of elementwise kernels to fuse, once per graph (None: none)."""
    cached = g.cache.get("fusion")
    if cached is not None and cached[0] is names:
        return cached[1]
    ew = g.is_gpu & (g.kernel_class == KERNEL_CLASSES.index("elementwise"))
    launch = g.e_kind == cp.EDGE_KINDS.index("launch")
    src_of = np.full(len(g), -1, dtype=np.int64)
    src_of[g.e_dst[launch]] = g.e_src[launch]
    chain_lo = np.array([c.lo for c in g.chains])
    runs, host = [], []
    for c in g.chains:
        if c.kind != "gpu":
            continue
        for a, z in _runs(ew[c.lo:c.hi], names, c.lo):
            if z - a >= 2:
                runs.append((c.lo + a, c.lo + z))
                host += _fuse_host(g, src_of[c.lo + a:c.lo + z], chain_lo)
    plan = _plan(runs, host) if runs else None
    g.cache["fusion"] = (names, plan)
    return plan


def _plan(runs: list[tuple[int, int]], host: list[tuple[np.ndarray, int, int]]) -> _Fusion:
    lo = np.array([a for a, _ in runs], dtype=np.int64)
    hi = np.array([z for _, z in runs], dtype=np.int64)
    size = hi - lo
    nodes = np.concatenate([np.arange(a, z) for a, z in runs])
    at = np.cumsum(size) - size
    # Each stretch's nodes, read or written: its launch-call ends, start (written) to stop.
    foot = sorted((min(int(ends.min()), start), max(stop, start + 1)) for ends, start, stop in host)
    apart = all(b[0] >= a[1] for a, b in zip(foot, foot[1:]))
    ends = [e for e, _, _ in host]
    sizes = np.array([e.size for e in ends], dtype=np.int64)
    return _Fusion(lo, hi, nodes, at, size, host, apart,
                   np.concatenate(ends) if ends else np.zeros(0, np.int64), np.cumsum(sizes) - sizes,
                   np.concatenate([np.arange(a, z) for _, a, z in host]) if host else np.zeros(0, np.int64),
                   np.array([a for _, a, _ in host], dtype=np.int64))


def _runs(m: np.ndarray, names: np.ndarray | None, lo: int) -> list[tuple[int, int]]:
    """Maximal stretches of consecutive elementwise nodes of a stream, cut where the kernel names
    repeat with a period (a loop over the same chain: each turn is one chain to fuse)."""
    edges = np.diff(np.r_[0, m.astype(np.int8), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    runs = []
    for a, z in zip(starts.tolist(), ends.tolist()):
        period = _period(names[lo + a:lo + z]) if names is not None else 0
        step = period or (z - a)
        runs += [(x, min(x + step, z)) for x in range(a, z, step)]
    return runs


def _fuse_host(g: cp.Graph, src: np.ndarray, chain_lo: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    """The host issues the fused run as one launch: on each thread that launched it, the host time
    from its first launch call to the end of its last (ops, launches, the Python between them) is
    that thread's shortest launch call of the run. Per thread: the launch calls' end nodes (whose
    shortest launch time is kept) and the stretch ``first:end`` that becomes it (``src``: the run's
    launch-call nodes, -1 for none)."""
    src = np.sort(src[src >= 0])
    if not src.size:
        return []
    chain = np.searchsorted(chain_lo, src, side="right") - 1
    out = []
    for ci in sorted(set(chain.tolist())):  # (np.unique would import numpy.ma)
        s = src[chain == ci]
        hi = min(int(s[-1]) + 2, g.chains[ci].hi)   # through the last launch call's end node
        out.append((np.minimum(s + 1, hi - 1), int(s[0]) + 1, hi))
    return out


def _period(names: np.ndarray, max_period: int = 64, min_match: float = 0.9) -> int:
    """The smallest p with names[i] == names[i + p] for ``min_match`` of the run (0: none)."""
    n = names.size
    for p in range(2, min(max_period, n // 2) + 1):
        # np.mean of the matches, exactly: a count over a count, one rounding (no np.mean overhead).
        if np.count_nonzero(names[:-p] == names[p:]) / (n - p) >= min_match:
            return p
    return 0


def kernel_name_ids(g: cp.Graph, ranks: list[RankTrace]) -> np.ndarray:
    """Per graph node, its event's name id (-1 for none): GPU nodes name their kernel."""
    out = np.full(len(g), -1, dtype=np.int64)
    by_rank = {rt.rank: rt for rt in ranks}
    for c in g.chains:
        if c.kind == "gpu":
            lane = by_rank[c.rank].lanes[c.lane_id]
            out[c.lo:c.hi] = lane.name_id[g.node_index[c.lo:c.hi]]
    return out


def kernel_io_bytes(g: cp.Graph, ranks: list[RankTrace]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per elementwise kernel node, the bytes of its launching op's largest recorded input (NaN:
    unknown; by External id), and per node its device's peak memory bandwidth (B/s, NaN: unknown
    device). (None, None) when no rank recorded shapes."""
    io = np.full(len(g), np.nan)
    bw = np.full(len(g), np.nan)
    found = False
    for _, nodes, _, got, device in _by_rank(g, ranks, "elementwise", "io_bytes"):
        if device.memory_bandwidth_bytes_per_s:
            io[nodes] = got
            bw[nodes] = float(device.memory_bandwidth_bytes_per_s)
            found = True
    return (io, bw) if found else (None, None)


def _by_rank(g: cp.Graph, ranks: list[RankTrace], kernel_class: str, column: str
             ) -> Iterator[tuple[RankTrace, np.ndarray, np.ndarray, np.ndarray, object]]:
    """Per rank with a known device: its kernel nodes of ``kernel_class``, their External ids (-1:
    none) and the largest positive ``column`` of the CPU events with each id (NaN: none), and the
    device (:func:`.kernel_roof.trace_device`, looked up only for a rank whose events have some ``column``)."""
    kc = KERNEL_CLASSES.index(kernel_class)
    for rt in ranks:
        nodes = np.flatnonzero(g.is_gpu & (g.node_rank == rt.rank) & (g.kernel_class == kc))
        if not nodes.size or not rt.device_name:
            continue
        ext = np.full(nodes.size, -1, dtype=np.int64)
        lanes = g.node_lane[nodes]
        for lid in np.flatnonzero(np.bincount(lanes)).tolist():
            sel = lanes == lid
            ext[sel] = rt.lanes[lid].external_id[g.node_index[nodes[sel]]]
        values = _max_by_external_id(rt, column, ext)
        if not np.isfinite(values).any():
            continue
        device = trace_device(rt.device_name)
        if device is not None:
            yield rt, nodes, ext, values, device


def _max_by_external_id(rt: RankTrace, column: str, ext: np.ndarray) -> np.ndarray:
    """Per External id in ``ext``, the largest positive ``column`` value of the rank's CPU events
    with that id (NaN: none), without a Python loop over the trace's events."""
    need = np.sort(ext[ext >= 0])
    keys, vals = [], []
    for lane in rt.cpu_lanes:
        v = getattr(lane, column)
        if not len(v) or not need.size:
            continue
        m = np.isfinite(v) & (v > 0) & (lane.external_id >= 0)
        e = lane.external_id[m]
        hit = join_ops(need, e)[1]
        keys.append(e[hit])
        vals.append(v[m][hit].astype(np.float64))
    out = np.full(ext.size, np.nan)
    if not keys or not sum(k.size for k in keys):
        return out
    k, v = np.concatenate(keys), np.concatenate(vals)
    order = np.lexsort((v, k))
    k, v = k[order], v[order]
    last = np.r_[k[1:] != k[:-1], True]          # the largest value of each id
    k, v = k[last], v[last]
    pos, ok = join_ops(k, ext)
    out[ok] = v[pos[ok]]
    return out


SCENARIOS: dict[str, Callable[[cp.Graph, dict], Change | None]] = {
    "data_stall": _data_stall, "host_syncs": _host_syncs, "launch_overhead": _launch_overhead,
    "exposed_comm": _exposed_comm, "pipeline_bubble": _pipeline_bubble, "late_rank": _late_rank,
    "gemm_ceiling": _gemm_ceiling, "memory_bound": _memory_bound,
}


def _combine(a: Change, b: Change) -> Change:
    """Both changes: the smaller of each duration and weight, an edge only if both keep it, a
    group only if both keep it."""
    ga, gb = a.group, b.group
    group = ga if gb is None else gb if ga is None else np.where((ga < 0) | (gb < 0), -1, ga)
    return Change(np.minimum(a.dcat, b.dcat), np.minimum(a.w, b.w), a.on & b.on, group)


def gemm_ideal_us(g: cp.Graph, ranks: list[RankTrace]) -> np.ndarray | None:
    """Per graph node, the time a GEMM kernel would take at :data:`GEMM_CEILING_FRACTION` of the
    device's dense peak at the kernel's own precision (NaN where unknown): its launching op's FLOPs
    (recorded or estimated from shapes), shared among the op's GEMM kernels by their duration. The
    precision and the peak are the Overview's (:func:`.kernel_table.kernel_precision_of`, the
    kernel roof's ``dense_flops_per_s``): a kernel without either gets no ideal time."""
    out = np.full(len(g), np.nan)
    found = False
    for rt, nodes, ext, flops, device in _by_rank(g, ranks, "gemm", "flops"):
        dur = g.dcat[nodes, cp.N_CPU + KERNEL_CLASSES.index("gemm")]
        # Share an op's FLOPs among its GEMM kernels by duration (split-K GEMM + its reduction).
        total: dict[int, float] = {}
        for e, dd in zip(ext.tolist(), dur.tolist()):
            total[e] = total.get(e, 0.0) + dd
        share = np.array([dd / total[e] if total[e] > 0 else 1.0 for e, dd in zip(ext.tolist(), dur.tolist())])
        names = [rt.strings[rt.lanes[int(g.node_lane[i])].name_id[int(g.node_index[i])]] for i in nodes]
        precisions = kernel_precision_of(rt, names, ext)
        peak = np.array([(device.dense_flops_per_s.get(p) or np.nan) if p else np.nan for p in precisions])
        out[nodes] = flops * share / (GEMM_CEILING_FRACTION * peak) * 1e6
        found = found or bool(np.isfinite(out[nodes]).any())
    return out if found else None


def project(ranks: list[RankTrace], step_time_s: float | None, *, late_ranks: list[int] | None = None,
            mfu_model: MfuModel | None = None, keep_graph: bool = False) -> WhatIf | None:
    """Build the graph of ``ranks`` (one job), walk it as traced and without each cause.

    ``step_time_s``: the measured median step (the projections divide it by their speedup). MFU is
    given with the model's FLOPs per step and the per-GPU peak (``mfu_model``).
    """
    g = cp.build_graph(ranks)
    if not len(g) or not step_time_s:
        return None
    try:
        t = cp.replay(g)
    except cp.NotSettled:
        return None  # the trace's data makes a cycle: no projection rather than a wrong one
    orig_span = cp.step_span_us(g, g.t_orig)
    replayed = cp.step_span_us(g, t)
    if replayed <= 0:
        return None
    path = cp.critical_path(g, t)
    mfu_at = (mfu_model or MfuModel(0.0, 0.0)).at
    ctx = {"late_ranks": late_ranks or [], "kernel_names": kernel_name_ids(g, ranks)}
    # Only a trace with a run of elementwise kernels to fuse reads the device database for them.
    ctx["io_bandwidth"] = functools.cache(lambda: kernel_io_bytes(g, ranks))
    ctx["gemm_ideal_us"] = gemm_ideal_us(g, ranks)   # None: no rank with a device and FLOPs
    best: dict[str, Projection] = {}
    combos = {cause: (cause,) for cause in SCENARIOS}
    for _ in range(2):   # each cause, then the two largest together
        for us in PROFILER_US_PER_EVENT:   # the largest speedup over the profiler's unknown cost
            try:
                found = _project_at(g, {**ctx, "profiler_us": us}, combos, step_time_s, mfu_at)
            except cp.NotSettled:
                return None
            for p in found:
                if p.cause not in best or p.speedup_upper_bound > best[p.cause].speedup_upper_bound:
                    best[p.cause] = p
        real = sorted((p for p in best.values() if p.speedup_upper_bound > 1.0 + 1e-3),
                      key=lambda p: -p.speedup_upper_bound)
        if len(real) < 2:
            break
        combos = {f"{real[0].cause}+{real[1].cause}": (real[0].cause, real[1].cause)}
    out = sorted(best.values(), key=lambda p: ("+" in p.cause, -p.speedup_upper_bound))
    wi = WhatIf(step_time_s, path, out, mfu_at(step_time_s),
                abs(replayed - orig_span) / orig_span if orig_span > 0 else 0.0)
    if keep_graph:
        wi.graph = g
    return wi


def _project_at(g: cp.Graph, ctx: dict, combos: dict[str, tuple[str, ...]], step_time_s: float,
                mfu_at: Callable[[float], float | None]) -> list[Projection]:
    """The projection of each of ``combos`` (its causes' changes together) at one profiler cost per
    event (``ctx["profiler_us"]``); the baseline is walked at the same cost."""
    base_span = cp.step_span_us(g, cp.replay(g, _base_dcat(g, ctx).sum(axis=1)))
    if base_span <= 0:
        return []
    out: list[Projection] = []
    for name, causes in combos.items():
        changes = [SCENARIOS[c](g, ctx) for c in causes]
        if any(ch is None for ch in changes):
            continue
        assumption = "; and ".join(ASSUMPTIONS[c] for c in causes)
        try:
            out.append(_walk(g, name, assumption, functools.reduce(_combine, changes), base_span, step_time_s,
                             mfu_at))
        except cp.NotSettled:
            continue
    return out


def _walk(g: cp.Graph, cause: str, assumption: str, ch: Change, base_span: float, step_time_s: float,
          mfu_at: Callable[[float], float | None]) -> Projection:
    dc, w, on, group = ch
    d = dc.sum(axis=1)
    t = cp.replay(g, d, w, on, group=group)
    span = cp.step_span_us(g, t)
    speedup = base_span / span if span > 0 else float("inf")
    speedup = max(speedup, 1.0)  # removing a cause never slows the step (the graph's rounding aside)
    step = step_time_s / speedup
    sub = dataclasses.replace(g, dcat=dc, cache={})  # the changed graph, for its new path (its d is d)
    share = cp.critical_path(sub, t, d, np.where(on, w, -np.inf)).share
    dominant = max(share, key=share.get) if share else None
    return Projection(cause, assumption, step, speedup, mfu_at(step), dominant)


# ----------------------------------------------------------------------------------------------
# A job's projections, the "Try first" line and the before/after check


@dataclass(frozen=True)
class MfuModel:
    """What MFU needs beyond the trace: the model's FLOPs per step (6·N·tokens) and the peak per GPU."""

    model_flops_per_step: float
    peak_flops_per_s: float
    gpus: int = 1

    def at(self, step_s: float) -> float | None:
        """The MFU of a step of ``step_s`` seconds (None without the model's FLOPs or the peak)."""
        if not self.model_flops_per_step or not self.peak_flops_per_s or step_s <= 0:
            return None
        return self.model_flops_per_step / (step_s * self.peak_flops_per_s * max(self.gpus, 1))


def for_result(result, mfu_model: MfuModel | None = None, *, keep_graph: bool = False  # noqa: ANN001
               ) -> WhatIf | None:
    """:func:`project` for an analysed job (an :class:`.api.TraceResult`): every rank's trace, the
    median step of the slowest rank, the late ranks the straggler rule found."""
    ranks = [r.trace for r in result.ranks]
    steps = [r.analysis.step_time_median_s for r in result.ranks if r.analysis.step_time_median_s]
    step = max(steps) if steps else (max(r.analysis.window_s for r in result.ranks) if result.ranks else None)
    return project(ranks, step, late_ranks=list(result.multi_rank.stragglers), mfu_model=mfu_model,
                   keep_graph=keep_graph)


def cause_for_signature(wi: WhatIf, signature: str) -> Projection | None:
    """The projection of the diagnosis's own fix, else the largest one."""
    cause = SIGNATURE_CAUSE.get(signature)
    p = wi.for_cause(cause) if cause else None
    return p or next((q for q in wi.projections if "+" not in q.cause), None)


def try_first_line(wi: WhatIf, signature: str) -> str | None:
    """``fix: DataLoader workers — projected <= 2.4x faster (step 134 ms -> 56 ms), MFU 12 % -> 29 %``."""
    p = cause_for_signature(wi, signature)
    if p is None:
        return None
    own = SIGNATURE_FIX_LABELS.get(signature) if p.cause == SIGNATURE_CAUSE.get(signature) else None
    text = (f"fix: {own or FIX_LABELS.get(p.cause, p.cause)} — projected <= {p.speedup_upper_bound:.2f}x faster "
            f"(step {wi.step_time_s * 1e3:.3g} ms -> {p.step_time_s * 1e3:.3g} ms; assumes {p.assumption})")
    if wi.mfu is not None and p.mfu is not None:
        text += f", MFU {100 * wi.mfu:.0f} % -> {100 * p.mfu:.0f} %"
    return text


def diff_check(wi: WhatIf | None, signature_before: str, measured_speedup: float | None) -> dict | None:
    """The before-trace's projection for the cause it was diagnosed with, against the speedup the
    after-trace measured: ``within_bound`` when the measured speedup does not exceed the projection,
    ``ratio`` = projected / measured (1.0: the fix got all the projection promised)."""
    if wi is None:
        return None
    p = cause_for_signature(wi, signature_before)
    if p is None:
        return None
    ratio = p.speedup_upper_bound / measured_speedup if measured_speedup else None
    return {"cause": p.cause, "assumption": p.assumption, "projected_speedup_upper_bound": p.speedup_upper_bound,
            "projected_step_time_s": p.step_time_s, "measured_speedup": measured_speedup,
            "within_bound": (measured_speedup <= p.speedup_upper_bound * (1 + 1e-9)) if measured_speedup else None,
            "ratio": ratio}
