"""The dependency graph of a step and its critical path, over the trace's columns (numpy, no Qt).

The graph is a set of *chains* (one per CPU thread, one per GPU stream, per rank) and *edges*
between them. A chain is a row of nodes in time order; node ``i`` of a chain happens at

    t[i] = max(t[i-1], ready[i], fixed[i]) + d[i]

where ``d[i]`` is the work between the node and its predecessor (a kernel's duration, the host time
between two points of a thread) and ``ready[i] = max(t[src] + w)`` over the edges into it. Walking
that recurrence chain by chain until nothing moves (:func:`replay`) gives every node's time; with
the durations of the trace it gives the trace back (the graph is checked against it), with some
durations shrunk it gives the step a fix would leave (:mod:`.what_if`).

What becomes a node and an edge, and why (HTA's ``critical_path_analysis`` has the same edge kinds;
docs/what-if.md tables them and says where we differ):

* **CPU threads** — the points of a thread that something else depends on: launch calls, blocking
  calls (start and end: the host waits on the device there), step boundaries, collectives, and the
  first and last point of each burst of a helper thread. The time between two such points is split
  by what the thread was doing (the innermost event open: :data:`CPU_CATEGORIES`), so a what-if can
  shrink one kind of host time. On a thread other than the main one, a stretch with no event open
  is idle (waiting for work): it costs nothing, and the burst after it waits for the latest point
  of another thread before it (*trigger* edge). An op that ends within ``JOIN_TOL_US`` of another
  thread's burst, which it spans, waits for that burst (*join* edge).
* **launch -> kernel** (flows, by correlation id): the kernel waits for its launch call's start plus
  the launch latency. **Stream order**: a kernel waits for the previous one on its stream.
* **cross-stream waits** (``cudaStreamWaitEvent`` after ``cudaEventRecord``): a kernel that started
  later than both its stream and its launch allow waits for the kernel of another stream of its rank,
  launched before it, that ended last before it started.
* **host blocks on the device** (device, stream and event synchronize, ``cudaMemcpy``, a
  ``cudaMemcpyAsync`` that returned after its copy): the call ends once the device work launched
  before it has ended, plus the call's own time after that.
* **collectives across ranks**: the n-th collective of a step on each rank (GPU communication
  kernels, else gloo ops) ends, on every rank, when the last rank has arrived plus the transfer (the
  shortest rank's duration after the last arrival). **Point-to-point**: the n-th send of a step
  from rank a to rank b and the n-th recv of that step on b from a (NCCL SendRecv kernels, which one
  by the op that launched them; else gloo's send/recv spans) are a group of two, as a collective
  (two-rank jobs: the trace does not name a send's peer).

The critical path (:func:`critical_path`) is walked back from the window's last node: through a
node's chain while its predecessor was later than its ready edges, through the edge otherwise.
"""
from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field

import numpy as np

from .rank_analysis import CPU_COLLECTIVE_RE, LAUNCH_SPACING_MAX_US, analysis_window, device_events, main_thread
from ..vocabulary.categories import (DATALOADER_NAME_RE, HOST_SYNC_CALL_RE, LAUNCH_CATEGORIES, LAUNCH_NAME_RE,
                                     MEMCPY_ASYNC_RE)
from ..vocabulary.kernel_classes import KERNEL_CLASSES, P2P_KERNEL_NAME_RE
from ..model.trace_model import Lane, RankTrace
from ..model.name_masks import member_mask, pattern_mask, step_lane, step_name_mask

try:
    from . import _replay
except ImportError:  # built without a C compiler: the numpy passes (_replay_numpy)
    _replay = None

CPU_CATEGORIES = ("dataloader", "collective_cpu", "sync", "launch", "cpu_op", "dispatch", "host_stall", "cpu_gap",
                  "profiler", "idle")
"""What a CPU thread does between two nodes, in priority order (an op inside the DataLoader is the
DataLoader's). ``cpu_op``: ops that issue device work (and short ones around them); ``host_stall``:
an op that launches nothing for longer than ``analysis.LAUNCH_SPACING_MAX_US`` (host work: CPU
preprocessing, a sleep in an op); ``dispatch``: a short stretch (under ``LAUNCH_SPACING_MAX_US``)
of code no op covers on a thread that launches, the Python between the ops that issue kernels;
``cpu_gap``: code no op covers (Python, directly under a ``record_function`` annotation or
``ProfilerStep``); ``profiler``: torch.profiler's own ``prof.step()`` between two steps (from the end
of a step's last event to the next step's first: the ``ProfilerStep`` range is closed and reopened
there, and its bookkeeping grows with the step's events; an unprofiled loop has none of it);
``idle``: a helper thread waiting for work (never on the critical path)."""
EDGE_CATEGORIES = ("kernel_gap", "launch_latency", "gpu_wait", "cpu_wait")
"""Time on the path between device work: the gap between two queued kernels of a stream (HTA's
kernel-kernel delay), launch -> kernel latency, a kernel waiting for another stream, a thread
waiting for another thread."""
CATEGORIES = CPU_CATEGORIES + KERNEL_CLASSES + EDGE_CATEGORIES
N_CPU = len(CPU_CATEGORIES)

MAX_STEPS = 8
"""The replay walks at most this many steady-state steps (the projection is per step, and the cost
stays bounded for a trace of thousands of steps)."""
TOL_US = 2.0
"""Slack when asking whether one time explains another (trace times are rounded to 1 µs or less)."""
JOIN_TOL_US = 50.0
JOIN_TOL_FRACTION = 0.1
"""A thread idle across another thread's whole burst that goes on within the larger of
``JOIN_TOL_US`` and this fraction of the burst after it ended was waiting for it (the main thread
returns from ``backward()`` a few hundred µs after the autograd thread's last op)."""
IDLE_GAP_US = 20.0
"""On a helper thread, a stretch this long with no event open is idle (waiting for work)."""
DEFAULT_LAUNCH_LATENCY_US = 5.0
CAUSALITY_TOL_US = 50.0
"""An edge whose source the trace has later than its destination by more than this is dropped."""
KERNEL_GAP_MAX_US = 30.0
"""A queued kernel starting this soon after the previous one on its stream waited for nothing but
the device's own gap between kernels (HTA's kernel-wait threshold, ``consecutive_kernel_delay``);
a longer gap was a wait on something else (another stream's event)."""

_BLOCKING_RE = re.compile(f"{HOST_SYNC_CALL_RE.pattern}|{MEMCPY_ASYNC_RE.pattern}", re.I)
"""Host calls that may wait for the device: the syncs, and the async copies that waited for their copy."""
_P2P_HOST_RE = re.compile(r"^gloo:(send|recv)$", re.I)
"""A gloo point-to-point transfer: the span from the call to the transfer's end (on the host)."""
_P2P_OP_RE = re.compile(r"(send|recv)", re.I)
"""The op that launched a NCCL SendRecv kernel says which it is (nccl:send, c10d::recv_)."""
_COMM = KERNEL_CLASSES.index("communication")

_ANNOTATION_CATEGORIES = frozenset({"user_annotation", "python_function"})
EDGE_KINDS = ("launch", "stream_wait", "sync", "trigger", "join")
"""Collectives are no edges: their nodes share a group (:attr:`Graph.group`)."""
_EDGE_CATEGORY = {kind: CATEGORIES.index(cat) for kind, cat in (
    ("launch", "launch_latency"), ("stream_wait", "gpu_wait"), ("trigger", "cpu_wait"), ("join", "cpu_wait"))}
"""The category an edge's weight on the path counts in (a sync edge weighs nothing)."""


class NotSettled(RuntimeError):
    """The replay did not settle: the edges make a cycle (data that breaks causality)."""


@dataclass
class Chain:
    """One thread or stream of one rank: nodes ``lo:hi`` of the graph."""

    rank: int
    lane_id: int
    kind: str  # "cpu" or "gpu"
    lo: int
    hi: int


@dataclass(eq=False)
class Graph:
    """Nodes (flat over chains) and edges, with what each node stands for.

    ``dcat`` splits each node's ``d`` by category (columns of :data:`CATEGORIES`); a GPU node's
    duration is all in its kernel class. ``lane``/``index`` say which trace event a GPU node is (a
    CPU node: the lane and the event whose boundary it is, -1 for none).
    """

    chains: list[Chain]
    t_orig: np.ndarray
    dcat: np.ndarray
    fixed: np.ndarray
    node_rank: np.ndarray
    node_lane: np.ndarray
    node_index: np.ndarray
    is_gpu: np.ndarray
    kernel_class: np.ndarray
    p2p: np.ndarray
    """GPU nodes that are point-to-point send/recv kernels (pipeline stages)."""
    e_src: np.ndarray
    e_dst: np.ndarray
    e_w: np.ndarray
    e_kind: np.ndarray
    group: np.ndarray
    """Collective id per node (the n-th collective of the window, the same on every rank), -1 else."""
    cpu_events: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per CPU node, the trace events that start between its predecessor and it (the profiler's
    own cost grows with them)."""
    steps: dict[int, list[tuple[int, int, np.ndarray]]] = field(default_factory=dict)
    """Per rank, per replayed step: (start node, end node, GPU nodes launched in the step)."""
    p2p_groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Group ids (of :attr:`group`) that are a point-to-point send matched with its recv."""
    cache: dict = field(default_factory=dict, repr=False)
    """What is derived from the graph once and shared by its replays and projections (the chains'
    bounds and running maxima, the what-if's base durations and fusion plan), by what derives it."""

    @property
    def d(self) -> np.ndarray:
        return self.dcat.sum(axis=1)

    @property
    def n_steps(self) -> int:
        """The most steps replayed on one rank."""
        return max(map(len, self.steps.values()), default=0)

    def __len__(self) -> int:
        return int(self.t_orig.size)


# ----------------------------------------------------------------------------------------------
# Building


def _replay_steps(rt: RankTrace) -> list:
    """The steady-state steps the replay walks: every step but the warm-up, at most MAX_STEPS."""
    if not rt.steps:
        return []
    _, warmup = analysis_window(rt, device_events(rt))
    kept = [s for s in rt.steps if s.number not in warmup] or list(rt.steps)
    return kept[:MAX_STEPS]


def _lower_quartile(values: np.ndarray) -> float:
    """``np.percentile(values, 25)`` (numpy's linear interpolation), without its ``numpy.ma`` import."""
    v = np.sort(values)
    pos = 0.25 * (v.size - 1)
    lo = int(pos)
    hi = min(lo + 1, v.size - 1)
    a, b, t = float(v[lo]), float(v[hi]), pos - lo
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def _distinct(values: np.ndarray) -> list[int]:
    """The distinct non-negative ints of ``values``, sorted (np.unique would import numpy.ma)."""
    return np.flatnonzero(np.bincount(values)).tolist() if values.size else []


def _parents(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of each event's enclosing event (one thread's, sorted by start), -1 for top level."""
    n = starts.size
    parent = np.full(n, -1, dtype=np.int64)
    if _replay is not None and starts.dtype == ends.dtype == np.float64:   # the same stack in C
        _replay.parents(np.ascontiguousarray(starts), np.ascontiguousarray(ends), parent)
        return parent
    # Events are sorted by start, parents first on ties: a running stack gives the nesting.
    stack: list[int] = []
    s_list, e_list = starts.tolist(), ends.tolist()
    for i in range(n):
        s = s_list[i]
        while stack and e_list[stack[-1]] <= s:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        if e_list[i] > s:
            stack.append(i)
    return parent


@dataclass
class _Builder:
    """Accumulates nodes and edges rank by rank. Each list of per-node columns starts with an
    empty one (a job without chains, or a graph without edges, is empty)."""

    chains: list[Chain] = field(default_factory=list)
    t: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0)])
    dcat: list[np.ndarray] = field(default_factory=lambda: [np.zeros((0, len(CATEGORIES)))])
    fixed: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0)])
    index: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0, np.int64)])
    kclass: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0, np.int8)])
    p2p: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0, bool)])
    events: list[np.ndarray] = field(default_factory=lambda: [np.zeros(0)])
    edges: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=lambda: [
        (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int8))])
    """(sources, destinations, weights, kinds)."""
    chain_at: dict[int, int] = field(default_factory=dict)
    """Where in the lists of columns the chain whose nodes start at a node is."""
    n: int = 0

    def add_chain(self, rank: int, lane: Lane, kind: str, t: np.ndarray, dcat: np.ndarray, fixed: np.ndarray,
                  index: np.ndarray, kclass: np.ndarray | None = None, p2p: np.ndarray | None = None,
                  events: np.ndarray | None = None) -> int:
        lo = self.n
        self.chain_at[lo] = len(self.t)
        self.chains.append(Chain(rank, lane.lane_id, kind, lo, lo + t.size))
        self.t.append(t)
        self.dcat.append(dcat)
        self.fixed.append(fixed)
        self.index.append(index.astype(np.int64))
        self.kclass.append(kclass if kclass is not None else np.full(t.size, -1, dtype=np.int8))
        self.p2p.append(p2p if p2p is not None else np.zeros(t.size, dtype=bool))
        self.events.append(events if events is not None else np.zeros(t.size))
        self.n += t.size
        return lo

    def add_edges(self, src: np.ndarray, dst: np.ndarray, w: np.ndarray, kind: str) -> None:
        if src.size:
            self.edges.append((src.astype(np.int64), dst.astype(np.int64), w.astype(np.float64),
                               np.full(src.size, EDGE_KINDS.index(kind), dtype=np.int8)))


@dataclass
class _CpuLane:
    """One CPU thread's nodes: their times, the event each is a boundary of, and masks."""

    lo: int
    t: np.ndarray
    event: np.ndarray       # index into the lane of the event whose boundary the node is
    is_start: np.ndarray
    lane: Lane
    burst_start: np.ndarray  # node indices (local) that start a burst after idle: sorted, never node 0
    burst_end: np.ndarray    # and that end one: sorted, never the last node (its segment is empty)

    def end_of(self, i: int) -> int:
        """The node that ends node ``i``'s event (the next end of the same event), -1 for none."""
        j = i + 1
        while j < self.t.size and not (self.event[j] == self.event[i] and not self.is_start[j]):
            j += 1
        return j if j < self.t.size else -1


def _cpu_categories(rt: RankTrace, lane: Lane, m: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Category (index into CPU_CATEGORIES) of the time inside each event (innermost first)."""
    names, cats = lane.name_id[m], lane.category_id[m]
    dl, coll, block = (pattern_mask(rt.strings, pattern)[names]
                       for pattern in (DATALOADER_NAME_RE, CPU_COLLECTIVE_RE, _BLOCKING_RE))
    item = np.isin(names, [rt.strings.find("aten::item"), rt.strings.find("aten::_local_scalar_dense")])
    launch = member_mask(rt.strings, LAUNCH_CATEGORIES)[cats] & pattern_mask(rt.strings, LAUNCH_NAME_RE)[names]
    annotation = member_mask(rt.strings, _ANNOTATION_CATEGORIES)[cats]
    # An ancestor's kind wins over the event's own (an op inside the DataLoader is the DataLoader's).
    dl, coll, item = (_inherited(flag, parent) for flag in (dl, coll, item))
    issues = _raised(launch, parent)  # the op or one inside it launches device work
    dur = lane.duration_us[m]
    cat = np.full(names.size, CPU_CATEGORIES.index("cpu_op"), dtype=np.int64)
    cat[~issues & (dur >= LAUNCH_SPACING_MAX_US)] = CPU_CATEGORIES.index("host_stall")
    # Under an annotation, Python runs: the framework code that issues the kernels inside it (a CUDA
    # graph replays that away), or, directly under the step or an annotation that issues nothing,
    # the training loop's own code.
    step = step_name_mask(rt.strings)[names]
    cat[annotation & (step | ~issues)] = CPU_CATEGORIES.index("cpu_gap")
    cat[launch] = CPU_CATEGORIES.index("launch")
    cat[block | item] = CPU_CATEGORIES.index("sync")
    cat[coll] = CPU_CATEGORIES.index("collective_cpu")
    cat[dl] = CPU_CATEGORIES.index("dataloader")
    return cat


def _inherited(flag: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``flag`` or any ancestor's (``parent``: -1 for a root, parents before children), one level
    of ancestors per pass."""
    if not flag.any():
        return flag
    out = flag.copy()
    idx = np.flatnonzero(parent >= 0)
    anc = parent[idx]
    while idx.size:
        out[idx] |= flag[anc]
        up = parent[anc]
        keep = (up >= 0) & ~out[idx]   # a node already flagged needs no higher ancestor
        idx, anc = idx[keep], up[keep]
    return out


def _raised(flag: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``flag`` or any descendant's: every ancestor of a flagged node flagged, one level per pass."""
    out = flag.copy()
    up = parent[np.flatnonzero(flag)]
    up = up[up >= 0]
    while up.size:
        up = up[~out[up]]   # an ancestor already flagged has had its own ancestors walked (or will)
        out[up] = True
        up = parent[up]
        up = up[up >= 0]
    return out


@dataclass
class _Fine:
    """Every event boundary of one thread in the window, with what the thread does after it."""

    lane: Lane
    idx: np.ndarray      # lane indices of the window's events
    pt: np.ndarray       # point times, sorted
    ev: np.ndarray       # event (index into idx) whose boundary each point is
    is_start: np.ndarray
    seg_cat: np.ndarray  # category of the time from each point to the next
    seg_len: np.ndarray
    idle: np.ndarray     # the time after the point is a helper thread's idle
    event_cat: np.ndarray  # category of each event (index into idx)


def _fine_points(rt: RankTrace, lane: Lane, w0: float, w1: float, is_main: bool) -> _Fine | None:
    m = (lane.start_us >= w0) & (lane.start_us < w1)
    if not m.any():
        return None
    idx = np.flatnonzero(m)
    starts = lane.start_us[m]
    ends = starts + lane.duration_us[m]
    parent = _parents(starts, ends)
    cat = _cpu_categories(rt, lane, m, parent)
    n = idx.size
    # After a start, the time is that event's; after an end, its parent's (or nothing: a gap).
    pt = np.concatenate([starts, ends])
    ev = np.concatenate([np.arange(n), np.arange(n)])
    is_start = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    order = np.lexsort((is_start, pt))  # at equal times, ends before starts
    pt, ev, is_start = pt[order], ev[order], is_start[order]
    owner = np.where(is_start, ev, parent[ev])
    seg_cat = np.where(owner >= 0, cat[np.maximum(owner, 0)], CPU_CATEGORIES.index("cpu_gap"))
    seg_len = np.diff(pt, append=pt[-1])
    seg_cat[_profiler_segments(rt, lane, idx, ev, is_start, owner)] = CPU_CATEGORIES.index("profiler")
    idle = (owner < 0) & (seg_len > IDLE_GAP_US) & (not is_main)
    gap = seg_cat == CPU_CATEGORIES.index("cpu_gap")
    if (cat == CPU_CATEGORIES.index("launch")).any():
        seg_cat[gap & (seg_len < LAUNCH_SPACING_MAX_US)] = CPU_CATEGORIES.index("dispatch")
    seg_cat[idle] = CPU_CATEGORIES.index("idle")
    return _Fine(lane, idx, pt, ev, is_start, seg_cat, seg_len, idle, cat)


def _profiler_segments(rt: RankTrace, lane: Lane, idx: np.ndarray, ev: np.ndarray, is_start: np.ndarray,
                       owner: np.ndarray) -> np.ndarray:
    """The segments (from each point to the next) that are ``prof.step()``: a ``ProfilerStep``'s
    tail after its last inner event ends, and the gap from its end to the next step's start."""
    step = step_name_mask(rt.strings)[lane.name_id[idx]]
    if not step.any():
        return np.zeros(ev.size, dtype=bool)
    nxt_ev, nxt_start = np.r_[ev[1:], -1], np.r_[is_start[1:], False]
    own_step = (owner >= 0) & step[np.maximum(owner, 0)]
    tail = own_step & (nxt_ev == owner) & ~nxt_start          # up to the step's own end
    at_step_end = ~is_start & step[ev]
    gap = (owner < 0) & at_step_end & nxt_start & step[np.maximum(nxt_ev, 0)]
    return tail | gap


def _refine_idle(fine: dict[int, _Fine]) -> None:
    """A helper thread's gap is idle (waiting for work) only if another thread did something in it
    that could have woken it; a gap with no other thread's point inside is the thread's own work that
    the profiler does not show (the autograd engine between two backward ops)."""
    if not fine:
        return
    pts = np.sort(np.concatenate([f.pt for f in fine.values()]))
    for f in fine.values():
        k = np.flatnonzero(f.idle)
        if not k.size:
            continue
        a, z = f.pt[k], f.pt[np.minimum(k + 1, f.pt.size - 1)]
        inside = np.searchsorted(pts, z, side="left") - np.searchsorted(pts, a, side="right")
        own = k[inside <= 0]
        f.idle[own] = False
        f.seg_cat[own] = CPU_CATEGORIES.index("cpu_gap")


def _build_cpu_lane(b: _Builder, rt: RankTrace, f: _Fine, keep_points: np.ndarray, before: np.ndarray,
                    after: np.ndarray) -> _CpuLane:
    """The thread's nodes: the boundaries of the events in ``keep_points`` (a mask over the lane),
    the first and last point, the ends of idle stretches, and the last point before each time in
    ``before`` and the first after each in ``after`` (where other threads' bursts start and end)."""
    pt, ev = f.pt, f.ev
    # Every event inside a host collective is a node: the collective completes inside it (gloo's
    # span holds the wait for the peers between its own copies).
    keep = keep_points[f.idx][ev] | (f.event_cat == CPU_CATEGORIES.index("collective_cpu"))[ev]
    keep[0] = keep[-1] = True
    burst_start_fine = np.flatnonzero(f.idle[:-1]) + 1
    burst_end_fine = np.flatnonzero(f.idle)
    keep[burst_start_fine] = True
    keep[burst_end_fine] = True
    k = np.searchsorted(pt, before, side="right") - 1
    keep[k[k >= 0]] = True
    k = np.searchsorted(pt, after, side="left")
    keep[k[k < pt.size]] = True
    nodes = np.flatnonzero(keep)
    # A node's d: the fine segments between the previous node and it, by category.
    seg_node = np.searchsorted(nodes, np.arange(pt.size) + 1, side="left")
    valid = seg_node < nodes.size
    dcat = np.zeros((nodes.size, len(CATEGORIES)))
    np.add.at(dcat, (seg_node[valid], f.seg_cat[valid]), f.seg_len[valid])
    dcat[:, CPU_CATEGORIES.index("idle")] = 0.0  # idle costs nothing
    fixed = np.full(nodes.size, -np.inf)
    fixed[0] = pt[nodes[0]]
    starts = f.is_start & valid
    events = np.bincount(seg_node[starts], minlength=nodes.size).astype(np.float64)
    lo = b.add_chain(rt.rank, f.lane, "cpu", pt[nodes], dcat, fixed, f.idx[ev[nodes]], events=events)
    return _CpuLane(lo, pt[nodes], f.idx[ev[nodes]], f.is_start[nodes], f.lane,
                    np.searchsorted(nodes, burst_start_fine), np.searchsorted(nodes, burst_end_fine))


def build_graph(ranks: list[RankTrace]) -> Graph:
    """The dependency graph of the replayed steps of every rank (times on the model's clock)."""
    b = _Builder()
    steps: dict[int, list] = {}
    collectives: list[tuple[np.ndarray, np.ndarray, list]] = []  # per rank: (nodes, arrivals, keys)
    p2p_nodes: dict[int, list[tuple[str, int, float, int]]] = {}
    for rt in ranks:
        info = _build_rank(b, rt)
        if info is not None:
            steps[rt.rank], coll, p2p_nodes[rt.rank] = info
            collectives.append(coll)
    t = np.concatenate(b.t)
    dcat = np.concatenate(b.dcat)
    fixed = np.concatenate(b.fixed)
    group = np.full(t.size, -1, dtype=np.int64)
    xfer = np.zeros(t.size)
    if len(collectives) >= 2:
        _match_collectives(collectives, t, group, xfer)
    p2p_groups = _match_p2p(p2p_nodes, [rt.rank for rt in ranks], t, group, xfer)
    col = np.flatnonzero(group >= 0)
    total = dcat[col].sum(axis=1)
    dcat[col] *= np.where(total > 0, xfer[col] / np.maximum(total, 1e-12), 0.0)[:, None]
    src, dst, w, kind = map(np.concatenate, zip(*b.edges))
    # An edge that runs back in the trace's time is data that breaks causality (a kernel that ends
    # before its launch call starts, clocks of different hosts): drop it and keep the node where the
    # trace has it.
    bad = t[src] - t[dst] > CAUSALITY_TOL_US
    if bad.any():
        nodes = dst[bad]
        fixed[nodes] = np.maximum(fixed[nodes], t[nodes] - dcat.sum(axis=1)[nodes])
        src, dst, w, kind = src[~bad], dst[~bad], w[~bad], kind[~bad]
    order = np.argsort(dst, kind="stable")
    p2p = np.concatenate(b.p2p)
    p2p[np.isin(group, p2p_groups)] = True   # a gloo transfer's end on the host
    sizes = np.array([c.hi - c.lo for c in b.chains], dtype=np.int64)
    rank = np.repeat(np.array([c.rank for c in b.chains], dtype=np.int64), sizes)
    lane = np.repeat(np.array([c.lane_id for c in b.chains], dtype=np.int32), sizes)
    is_gpu = np.repeat(np.array([c.kind == "gpu" for c in b.chains], dtype=bool), sizes)
    return Graph(b.chains, t, dcat, fixed, rank, lane, np.concatenate(b.index), is_gpu, np.concatenate(b.kclass),
                 p2p, src[order], dst[order], w[order], kind[order], group, np.concatenate(b.events), steps,
                 p2p_groups=p2p_groups)


def _match_collectives(collectives: list[tuple[np.ndarray, np.ndarray, list]], t: np.ndarray,
                       group: np.ndarray, xfer: np.ndarray) -> None:
    """The n-th collective of a step on each rank is the same collective (keys present on every rank
    only: a rank whose collectives fall outside its steps matches nothing): one group, and what is
    left of it on each rank once the last rank arrived is the transfer."""
    common = set.intersection(*(set(keys) for _, _, keys in collectives))
    gid = {key: i for i, key in enumerate(sorted(common))}
    last = np.full(len(gid), -np.inf)
    for _, arr, keys in collectives:
        for a, key in zip(arr.tolist(), keys):
            if key in gid:
                last[gid[key]] = max(last[gid[key]], a)
    for nodes, _, keys in collectives:
        for node, key in zip(nodes.tolist(), keys):
            if key in gid:
                group[node] = gid[key]
                xfer[node] = max(t[node] - last[gid[key]], 0.0)


def _window(rt: RankTrace, steps: list) -> tuple[float, float]:
    if steps:
        return steps[0].cpu_start_us, max(max(s.cpu_end_us for s in steps),
                                          max((s.gpu_end_us for s in steps if not np.isnan(s.gpu_end_us)),
                                              default=-np.inf))
    return rt.span_us


def _build_rank(b: _Builder, rt: RankTrace):  # noqa: ANN202, C901 (one pass over the rank's columns)
    steps = _replay_steps(rt)
    w0, w1 = _window(rt, steps)
    if not np.isfinite(w0) or w1 <= w0:
        return None
    main = step_lane(rt) or main_thread(rt)
    # The launch calls (the sources of the flows: kernel <- launch call; the window's are read).
    fl = rt.flows
    launch_points: dict[int, np.ndarray] = {lane.lane_id: np.zeros(len(lane), bool) for lane in rt.cpu_lanes}
    for cl in _distinct(fl.src_lane):
        if rt.lanes[cl].kind == "cpu":
            launch_points[cl][fl.src_index[fl.src_lane == cl]] = True
    # Which CPU events are nodes: launches, blocking calls, step annotations, collectives, DataLoader.
    interesting = (pattern_mask(rt.strings, _BLOCKING_RE) | pattern_mask(rt.strings, CPU_COLLECTIVE_RE)
                   | step_name_mask(rt.strings) | pattern_mask(rt.strings, DATALOADER_NAME_RE)
                   | pattern_mask(rt.strings, _P2P_HOST_RE))
    fine = {lane.lane_id: f for lane in rt.cpu_lanes
            if (f := _fine_points(rt, lane, w0, w1, lane is main)) is not None}
    _refine_idle(fine)
    # Where helper threads' bursts start and end: the other threads get a node just before each
    # start (the trigger's source) and just after each end (where a join may land).
    b_start = {lid: np.r_[f.pt[:1], f.pt[np.flatnonzero(f.idle[:-1]) + 1]] for lid, f in fine.items()
               if main is None or lid != main.lane_id}
    b_end = {lid: np.r_[f.pt[np.flatnonzero(f.idle)], f.pt[-1:]] for lid, f in fine.items()}
    cpu: dict[int, _CpuLane] = {}
    for lid, f in fine.items():
        keep = launch_points[lid] | interesting[f.lane.name_id]
        before = np.concatenate([v for k, v in b_start.items() if k != lid] or [np.zeros(0)])
        after = np.concatenate([v for k, v in b_end.items() if k != lid] or [np.zeros(0)])
        cpu[lid] = _build_cpu_lane(b, rt, f, keep, before, after)
    if not cpu:
        return None
    _thread_edges(b, cpu, main)
    # GPU chains.
    gpu: _Gpu = {}
    start_node: dict[int, np.ndarray] = {}  # CPU lane -> per event, the node of its start (-1: none)
    for lane in rt.gpu_lanes:
        l_node = np.full(len(lane), -1, dtype=np.int64)
        sel = fl.dst_lane == lane.lane_id
        d_idx, c_lane, c_idx = fl.dst_index[sel], fl.src_lane[sel], fl.src_index[sel]   # kernel <- launch call
        for cl in _distinct(c_lane):
            if cl not in cpu:
                continue
            c = cpu[cl]
            sel = c_lane == cl
            # The node of the launch call's start: the node whose event is that call, a start.
            if cl not in start_node:
                start_node[cl] = np.full(len(c.lane), -1, dtype=np.int64)
                start_node[cl][c.event[c.is_start]] = np.flatnonzero(c.is_start)
            calls = c_idx[sel]
            known = (calls >= 0) & (calls < start_node[cl].size)
            nodes = np.where(known, start_node[cl][np.where(known, calls, 0)], -1)
            ok = nodes >= 0
            l_node[d_idx[sel][ok]] = c.lo + nodes[ok]
        s, e = lane.start_us, lane.start_us + lane.duration_us
        inwin = (l_node >= 0) | ((s >= w0) & (s < w1))
        if not inwin.any():
            continue
        idx = np.flatnonzero(inwin)
        dcat = np.zeros((idx.size, len(CATEGORIES)))
        kc = lane.kernel_class[idx].astype(np.int64)
        dcat[np.arange(idx.size), N_CPU + np.maximum(kc, 0)] = lane.duration_us[idx]
        fixed = np.where(l_node[idx] >= 0, -np.inf, s[idx])
        p2p = pattern_mask(rt.strings, P2P_KERNEL_NAME_RE)[lane.name_id[idx]] & (kc == _COMM)
        lo = b.add_chain(rt.rank, lane, "gpu", e[idx], dcat, fixed, idx, kc.astype(np.int8), p2p)
        gpu[lane.lane_id] = (lo, idx, l_node[idx])
    _gpu_edges(b, rt, gpu)
    _sync_edges(b, rt, cpu, gpu)
    coll_nodes, coll_arrive, coll_issue = _collective_nodes(rt, b, cpu, gpu)
    coll = (coll_nodes, coll_arrive, _collective_keys(steps, coll_issue))
    return _step_nodes(rt, b, steps, cpu, gpu), coll, _p2p_nodes(rt, b, cpu, gpu, steps)


_Gpu = dict[int, tuple[int, np.ndarray, np.ndarray]]
"""A rank's GPU chains: lane -> (first node, the lane's events, the node of each one's launch call or -1)."""


def _thread_edges(b: _Builder, cpu: dict[int, _CpuLane], main: Lane | None) -> None:
    """Trigger and join edges between the threads (the module docstring)."""
    all_t = np.concatenate([c.t for c in cpu.values()])
    all_node = np.concatenate([c.lo + np.arange(c.t.size) for c in cpu.values()])
    all_lane = np.concatenate([np.full(c.t.size, lid) for lid, c in cpu.items()])
    order = np.argsort(all_t, kind="stable")
    all_t, all_node, all_lane = all_t[order], all_node[order], all_lane[order]
    for lid, c in cpu.items():
        starts = np.r_[0, c.burst_start]
        if main is None or lid != main.lane_id:
            # The latest point of another thread before each burst start (by position in all_t).
            other = np.maximum.accumulate(np.where(all_lane != lid, np.arange(all_t.size), -1))
            k = np.searchsorted(all_t, c.t[starts], side="left") - 1
            k = np.where(k >= 0, other[np.maximum(k, 0)], -1)
            ok = starts[k >= 0]
            k = k[k >= 0]
            b.add_edges(all_node[k], c.lo + ok, c.t[ok] - all_t[k], "trigger")
            b.fixed[b.chain_at[c.lo]][ok] = -np.inf
        # Joins: another thread that had nothing to do across this thread's whole burst and goes on
        # just after it ends was waiting for it (the main thread in backward(), for the autograd
        # thread).
        ends = np.r_[c.burst_end, c.t.size - 1]
        first = starts[np.maximum(np.searchsorted(starts, ends, side="right") - 1, 0)]
        for oid, o in cpu.items():
            if oid == lid:
                continue
            k = np.searchsorted(o.t, c.t[ends], side="left")
            ok = (k < o.t.size) & (k > 0)
            k, e_loc, f_loc = k[ok], ends[ok], first[ok]
            tol = np.maximum(JOIN_TOL_US, JOIN_TOL_FRACTION * (c.t[e_loc] - c.t[f_loc]))
            near = (o.t[k] - c.t[e_loc] <= tol) & (o.t[k - 1] <= c.t[f_loc] + TOL_US)
            if not near.any():
                continue
            loc, burst_end = k[near], c.t[e_loc[near]]
            b.add_edges(c.lo + e_loc[near], o.lo + loc, o.t[loc] - burst_end, "join")
            # The op's own time is only what follows the burst's end: the rest was waiting.
            dc = b.dcat[b.chain_at[o.lo]]
            own = o.t[loc] - np.maximum(o.t[loc - 1], burst_end)
            total = dc[loc].sum(axis=1)
            scale = np.where(total > 0, np.clip(own / np.maximum(total, 1e-12), 0.0, 1.0), 0.0)
            dc[loc] *= scale[:, None]


def _gpu_edges(b: _Builder, rt: RankTrace, gpu: _Gpu) -> None:
    """Launch edges and inferred cross-stream waits, over all the rank's kernels at once (its GPU
    chains are one run of nodes)."""
    if not gpu:
        return
    t_cpu = np.concatenate(b.t)  # node times so far (CPU chains come first)
    lo0 = min(lo for lo, _, _ in gpu.values())
    spans = [(lo - lo0, lo - lo0 + idx.size) for lo, idx, _ in gpu.values()]   # each stream's kernels
    s = np.concatenate([rt.lanes[lid].start_us[idx] for lid, (_, idx, _) in gpu.items()])
    e = s + np.concatenate([rt.lanes[lid].duration_us[idx] for lid, (_, idx, _) in gpu.items()])
    prev_end = np.concatenate([np.r_[-np.inf, np.maximum.accumulate(e[a:z])[:-1]] for a, z in spans])
    ln = np.concatenate([ln for _, _, ln in gpu.values()])
    lane = np.concatenate([np.full(idx.size, lid) for lid, (_, idx, _) in gpu.items()])
    node = lo0 + np.arange(s.size)
    has = ln >= 0
    ls = np.where(has, t_cpu[np.maximum(ln, 0)], np.nan)
    lat = s - ls
    idle_launch = has & (ls >= prev_end - TOL_US)   # launched onto an idle stream: it waited for it
    # The typical launch latency: the lower quartile of the kernels that waited for their launch (a
    # median would count the ones that also waited for an event on another stream).
    waited = lat[idle_launch]
    typ = _lower_quartile(waited[waited >= 0]) if (waited >= 0).any() else DEFAULT_LAUNCH_LATENCY_US
    # All kernels of the rank by end (for cross-stream inference).
    order = np.argsort(e, kind="stable")
    ends, nodes, lanes, launch_t = e[order], node[order], lane[order], ls[order]
    gap = s - np.where(np.isfinite(prev_end), prev_end, s)
    queued = ~idle_launch & (gap <= KERNEL_GAP_MAX_US)  # behind the previous kernel: the device's gap
    # A queued kernel's launch edge must not bind: at most the time from the launch to the
    # previous kernel's end.
    w = np.where(idle_launch, lat, np.where(has, np.minimum(np.minimum(lat, typ), prev_end - ls), 0.0))
    # Anything else waited on another stream (the module docstring). So did a kernel launched onto
    # an idle stream that started long after its launch, just as a kernel of another stream ended
    # (an event: a send after the compute that makes its data).
    late = idle_launch & (lat > typ + KERNEL_GAP_MAX_US)
    src_n, dst_n, w_n = [], [], []
    for i in np.flatnonzero((~idle_launch & ~queued) | late).tolist():
        k = int(np.searchsorted(ends, s[i] + TOL_US, side="right")) - 1
        found = -1
        floor = max(prev_end[i], ls[i]) if late[i] else prev_end[i]
        while k >= 0 and ends[k] > floor:
            if lanes[k] != lane[i] and (not has[i] or not (launch_t[k] > ls[i])):
                found = k
                break
            k -= 1
        if late[i] and (found < 0 or s[i] - ends[found] > KERNEL_GAP_MAX_US):
            continue   # nothing ended just before it: the launch edge keeps the wait
        if late[i]:
            w[i] = min(lat[i], typ)
        if found >= 0:
            src_n.append(nodes[found])
            dst_n.append(node[i])
            w_n.append(max(s[i] - ends[found], 0.0))
        elif has[i]:
            w[i] = lat[i]  # nothing else explains the wait: keep it on the launch edge
    # (Into a kernel, its stream wait comes before its launch edge, as build_graph's sort keeps them.)
    b.add_edges(np.array(src_n, dtype=np.int64), np.array(dst_n, dtype=np.int64), np.array(w_n), "stream_wait")
    b.add_edges(ln[has], node[has], np.maximum(w[has], 0.0), "launch")
    # A kernel with no launch in the trace and no wait found keeps its start.
    fixed = np.where(np.isin(node, np.array(dst_n, dtype=np.int64)), -np.inf, s)
    for (lo, _, _), (a, z) in zip(gpu.values(), spans):
        ci = b.chain_at[lo]
        b.dcat[ci][queued[a:z], CATEGORIES.index("kernel_gap")] = np.maximum(gap[a:z][queued[a:z]], 0.0)
        b.fixed[ci][~has[a:z]] = fixed[a:z][~has[a:z]]


def _sync_edges(b: _Builder, rt: RankTrace, cpu: dict[int, _CpuLane], gpu: _Gpu) -> None:
    """Host blocks on the device: a blocking call's end waits for the device work launched before it."""
    t_all = np.concatenate(b.t)
    blocking = pattern_mask(rt.strings, _BLOCKING_RE)
    memcpy_async = pattern_mask(rt.strings, MEMCPY_ASYNC_RE)
    # Per GPU lane: kernels in launch order (launch time, node, end).
    per_stream = []
    own_copy: dict[int, int] = {}  # launch call's node -> gpu node launched by it
    for lo, _, ln in gpu.values():
        has = ln >= 0
        if not has.any():
            continue
        lt = t_all[ln[has]]
        order = np.argsort(lt, kind="stable")
        nodes = lo + np.flatnonzero(has)[order]
        per_stream.append((lt[order], nodes, t_all[nodes]))
        own_copy.update(zip(ln[has].tolist(), (lo + np.flatnonzero(has)).tolist()))
    for c in cpu.values():
        names = c.lane.name_id[c.event]
        for i in np.flatnonzero(blocking[names] & c.is_start).tolist():
            j = c.end_of(i)
            if j < 0:
                continue
            t_start, t_end = c.t[i], c.t[j]
            srcs = []
            if memcpy_async[names[i]]:
                g = own_copy.get(c.lo + i, -1)
                if g >= 0 and t_all[g] <= t_end + TOL_US:
                    srcs.append(g)  # a copy that the call waited for (pageable / DtoH)
            else:
                for lt, nodes, ends in per_stream:
                    k = int(np.searchsorted(lt, t_start, side="left")) - 1
                    if k >= 0 and ends[k] <= t_end + TOL_US:
                        srcs.append(int(nodes[k]))  # the stream runs in order: its last launch ends last
            if not srcs:
                continue
            src = np.array(srcs, dtype=np.int64)
            floor = t_end - max(t_start, float(t_all[src].max()))
            dc = b.dcat[b.chain_at[c.lo]]
            total = dc[j].sum()
            if total > 0:
                dc[j] *= max(floor, 0.0) / total
            b.add_edges(src, np.full(src.size, c.lo + j), np.zeros(src.size), "sync")


def _step_nodes(rt: RankTrace, b: _Builder, steps: list, cpu: dict[int, _CpuLane], gpu: _Gpu
                ) -> list[tuple[int, int, np.ndarray]]:
    """Per step: its start node and end node on the thread that holds the steps, and the GPU nodes
    it launched (the step lasts until the last of them ends)."""
    lane = step_lane(rt)
    if lane is None or lane.lane_id not in cpu or not steps:
        # No steps: the window is one step from the first to the last node.
        allv = np.concatenate([c.lo + np.arange(c.t.size) for c in cpu.values()]
                              + [lo + np.arange(idx.size) for lo, idx, _ in gpu.values()])
        return [(int(allv.min()), -1, allv)]
    c = cpu[lane.lane_id]
    t_all = np.concatenate(b.t)
    # When each GPU node was launched, on any thread (NaN: no launch in the trace).
    launch_t = [(lo, np.where(ln >= 0, t_all[np.maximum(ln, 0)], np.nan)) for lo, _, ln in gpu.values()]
    out = []
    for s in steps:
        i = int(np.searchsorted(c.t, s.cpu_start_us - TOL_US, side="left"))
        j = int(np.searchsorted(c.t, s.cpu_end_us + TOL_US, side="right")) - 1
        if i >= c.t.size or j < i:
            continue
        launched = [lo + np.flatnonzero((lt >= s.cpu_start_us - TOL_US) & (lt <= s.cpu_end_us + TOL_US))
                    for lo, lt in launch_t]
        out.append((c.lo + i, c.lo + j, np.concatenate(launched) if launched else np.zeros(0, np.int64)))
    return out


def _step_numbers(steps: list, times_us: np.ndarray | list[float]) -> list[int]:
    """The number of the step (by the steps' CPU starts) each time falls in; -1 before the first."""
    at = np.searchsorted(np.array([s.cpu_start_us for s in steps]), times_us, side="right") - 1
    return [steps[i].number if i >= 0 else -1 for i in at.tolist()]


def _collective_keys(steps: list, issued_us: np.ndarray) -> list[tuple[int, int]]:
    """(step number, n-th collective of that step) per collective, by when the host issued it."""
    seen: dict[int, int] = {}
    keys = []
    for number in _step_numbers(steps, issued_us):
        keys.append((number, seen.get(number, 0)))
        seen[number] = keys[-1][1] + 1
    return keys


def _collective_nodes(rt: RankTrace, b: _Builder, cpu: dict[int, _CpuLane], gpu: _Gpu
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rank's collectives in start order: their end nodes, original arrival (start) times and
    when the host issued them (the launch call; a gloo op's own start). GPU communication kernels
    (point-to-point ones left out), else gloo ops on CPU threads."""
    t_all = np.concatenate(b.t)
    nodes, arrive, issued = [], [], []
    for lid, (lo, idx, ln) in gpu.items():
        start = rt.lanes[lid].start_us[idx]
        ci = b.chain_at[lo]
        sel = (b.kclass[ci] == _COMM) & ~b.p2p[ci]
        nodes.append(lo + np.flatnonzero(sel))
        arrive.append(start[sel])
        issued.append(np.where(ln[sel] >= 0, t_all[np.maximum(ln[sel], 0)], start[sel]))
    if not any(n.size for n in nodes):
        gloo = pattern_mask(rt.strings, re.compile(r"^gloo:(?!.*(send|recv))"))
        for c in cpu.values():
            for i in np.flatnonzero(c.is_start & gloo[c.lane.name_id[c.event]]).tolist():
                j = c.end_of(i)
                if j < 0:
                    continue
                # The collective completes at the end of the longest stretch inside its span (the
                # wait for the peers): that node is the group's, the one before it the arrival.
                k = i + 1 + int(np.argmax(np.diff(c.t[i:j + 1])))
                nodes.append(np.array([c.lo + k]))
                arrive.append(np.array([c.t[k - 1]]))
                issued.append(np.array([c.t[i]]))
    if not any(n.size for n in nodes):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    arr = np.concatenate(arrive)
    order = np.argsort(arr, kind="stable")
    return np.concatenate(nodes)[order].astype(np.int64), arr[order], np.concatenate(issued)[order]


def _p2p_nodes(rt: RankTrace, b: _Builder, cpu: dict[int, _CpuLane], gpu: _Gpu, steps: list
               ) -> list[tuple[str, int, float, int]]:
    """The rank's point-to-point transfers: (``send``/``recv``, completion node, arrival time, step
    number), in arrival order. NCCL SendRecv kernels (which one: the op that launched them), else
    gloo's send/recv spans on the host (arriving at the call, completing at the span's end)."""
    out: list[tuple[str, int, float]] = []
    op_kind = pattern_mask(rt.strings, _P2P_OP_RE)
    for lid, (lo, idx, ln) in gpu.items():
        for k in np.flatnonzero(b.p2p[b.chain_at[lo]]).tolist():
            kind = _launching_op_kind(rt, cpu, int(ln[k]), op_kind) if ln[k] >= 0 else None
            if kind is not None:
                out.append((kind, lo + k, float(rt.lanes[lid].start_us[idx[k]])))
    if not out:
        host = pattern_mask(rt.strings, _P2P_HOST_RE)
        for c in cpu.values():
            names = c.lane.name_id[c.event]
            for i in np.flatnonzero(c.is_start & host[names]).tolist():
                j = c.end_of(i)
                if j >= 0:
                    kind = "send" if "send" in rt.strings[int(names[i])].lower() else "recv"
                    out.append((kind, c.lo + j, float(c.t[i])))
    out.sort(key=lambda x: x[2])
    return [(*x, n) for x, n in zip(out, _step_numbers(steps, [arrive for _, _, arrive in out]))]


def _launching_op_kind(rt: RankTrace, cpu: dict[int, _CpuLane], launch: int, op_kind: np.ndarray) -> str | None:
    """``send``/``recv`` from the innermost event around the launch call (a node of one of ``cpu``)
    whose name says which."""
    c = next(c for c in cpu.values() if c.lo <= launch < c.lo + c.t.size)
    lane, call = c.lane, int(c.event[launch - c.lo])
    t0 = lane.start_us[call]
    cand = np.arange(max(call - 256, 0), call + 1)   # the op around a launch starts just before it
    around = cand[(lane.start_us[cand] <= t0) & (lane.start_us[cand] + lane.duration_us[cand] >= t0)
                  & op_kind[lane.name_id[cand]]]
    if not around.size:
        return None
    name = rt.strings[int(lane.name_id[around[-1]])].lower()
    return "send" if "send" in name else "recv" if "recv" in name else None


def _match_p2p(p2p_nodes: dict[int, list[tuple[str, int, float, int]]], ranks: list[int], t: np.ndarray,
               group: np.ndarray, xfer: np.ndarray) -> np.ndarray:
    """The n-th send of a step on rank a to rank b with the n-th recv of that step on rank b from
    rank a, in a two-rank job: one group (both end when the later of the two arrived, plus their
    own transfer)."""
    if len(ranks) != 2 or not all(p2p_nodes.get(r) for r in ranks):
        return np.zeros(0, np.int64)
    keyed: dict[tuple, tuple[int, float]] = {}
    for rank in ranks:
        peer = ranks[1] if rank == ranks[0] else ranks[0]
        seen: dict[tuple, int] = {}
        for kind, node, arrive, step in p2p_nodes[rank]:
            pair = (rank, peer) if kind == "send" else (peer, rank)
            base = (step, *pair, kind)
            n = seen.get(base, 0)
            seen[base] = n + 1
            keyed[(step, *pair, n, kind)] = (node, arrive)
    gid = int(group.max()) + 1 if group.size else 0
    out = []
    for key, (s_node, s_arrive) in keyed.items():
        if key[-1] != "send" or (*key[:-1], "recv") not in keyed:
            continue
        r_node, r_arrive = keyed[(*key[:-1], "recv")]
        last = max(s_arrive, r_arrive)
        if t[s_node] < last - TOL_US or t[r_node] < last - TOL_US:
            continue   # one side ended before the other arrived: it did not wait for it
        group[[s_node, r_node]] = gid
        xfer[s_node], xfer[r_node] = t[s_node] - last, t[r_node] - last
        out.append(gid)
        gid += 1
    return np.array(out, dtype=np.int64)


# ----------------------------------------------------------------------------------------------
# Replay


def replay(g: Graph, d: np.ndarray | None = None, w: np.ndarray | None = None,
           edge_on: np.ndarray | None = None, max_iter: int = 1_000, group: np.ndarray | None = None) -> np.ndarray:
    """Every node's time under durations ``d`` and edge weights ``w`` (default: the trace's).

    Chain by chain (a closed-form scan each), using the newest times of the chains before it, until
    nothing moves. Every edge runs forward in the trace's time (a node depends only on nodes that
    happened before it, within the trace's rounding), so once nothing before time T changed, what is
    before T is final: each pass walks only the nodes from the earliest change of the pass before.

    The passes run in C (``_replay.c``) where the extension is built, else in numpy
    (:func:`_replay_numpy`): the same float operations in the same order, the same times to the bit
    (tests/core/test_replay_c.py).
    """
    d = g.d if d is None else d
    w = g.e_w if w is None else w
    src, dst = g.e_src, g.e_dst
    if edge_on is not None:
        src, dst, w = src[edge_on], dst[edge_on], w[edge_on]
    t = np.full(len(g), -np.inf)
    if not len(g):
        return t
    # How far an edge may run back in the trace's time (sync edges allow TOL_US): the frontier's slack.
    slack = float(max((g.t_orig[src] - g.t_orig[dst]).max(), 0.0)) if src.size else 0.0
    group = g.group if group is None else group   # a projection may unbind some (no pipeline waits)
    if "replay" not in g.cache:   # per chain, its bounds and the running maximum of the trace's times
        lo = np.array([c.lo for c in g.chains], dtype=np.int64)
        hi = np.array([c.hi for c in g.chains], dtype=np.int64)
        reach = np.concatenate([np.maximum.accumulate(g.t_orig[c.lo:c.hi]) for c in g.chains])
        g.cache["replay"] = (reach, lo, hi)
    reach, lo, hi = g.cache["replay"]
    f8, i8 = (functools.partial(np.ascontiguousarray, dtype=x) for x in (np.float64, np.int64))
    walk = _replay.replay if _replay is not None else _replay_numpy
    if not walk(f8(g.t_orig), f8(d), f8(g.fixed), reach, i8(group), lo, hi, i8(src), i8(dst), f8(w),
                slack, max_iter, t):
        raise NotSettled(f"the graph's times still move after {max_iter} passes (a cycle the trace's data makes)")
    return t


def _replay_numpy(t_orig: np.ndarray, d: np.ndarray, fixed: np.ndarray, reach: np.ndarray, group: np.ndarray,
                  chain_lo: np.ndarray, chain_hi: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray,
                  slack: float, max_iter: int, t: np.ndarray) -> bool:
    """:func:`replay`'s passes in numpy (where the C extension is not built), into ``t``, as
    ``_replay.replay`` takes them: settled or not."""
    grp = np.flatnonzero(group >= 0)
    grp_id = group[grp]
    is_lo = np.zeros(t.size, dtype=bool)
    is_lo[chain_lo[chain_lo < chain_hi]] = True
    n_groups = int(grp_id.max()) + 1 if grp.size else 0
    into = np.flatnonzero(group[dst] >= 0)   # the edges into collective nodes, and where each lands
    into_at = np.searchsorted(grp, dst[into])
    chains = list(zip(chain_lo.tolist(), chain_hi.tolist()))
    inputs = [_chain_inputs(lo, hi, src, dst, w, group) for lo, hi in chains]
    frontier = -np.inf
    for _ in range(max_iter):
        # Collectives: every rank's arrival, from the newest times.
        ready = np.full(grp.size, -np.inf)
        np.maximum.at(ready, into_at, t[src[into]] + w[into])
        r_grp = np.maximum(fixed[grp], ready)   # max(fixed, the latest incoming edge)
        arrival = np.maximum(np.where(is_lo[grp], -np.inf, t[np.maximum(grp - 1, 0)]), r_grp)
        last = np.full(n_groups, -np.inf)
        np.maximum.at(last, grp_id, arrival)
        earliest = np.inf
        for (lo, hi), (at, first, e_src, e_w, gp, gid) in zip(chains, inputs):
            k = lo + int(reach[lo:hi].searchsorted(frontier, side="left"))   # (methods: no wrapper per call)
            if k >= hi:
                continue
            # max(fixed, the latest incoming edge) from node k on.
            o = k - lo
            r = fixed[k:hi].copy()
            j = int(at.searchsorted(o, side="left"))
            if j < at.size:
                e0 = first[j]
                red = np.maximum.reduceat(t[e_src[e0:]] + e_w[e0:], first[j:] - e0)
                pos = at[j:] - o
                r[pos] = np.maximum(r[pos], red)
            j = int(gp.searchsorted(o, side="left"))
            if j < gp.size:
                pos = gp[j:] - o
                r[pos] = np.maximum(r[pos], last[gid[j:]])
            carry = t[k - 1] if k > lo else -np.inf
            dd = d[k:hi]
            D = dd.cumsum()
            a = r - (D - dd)
            a[0] = max(a[0], carry)
            new = D + np.maximum.accumulate(a)
            # Moved: changed by more than 1e-6 (a NaN moved); only the nodes that changed are
            # subtracted (-inf against -inf has not moved, and is not subtracted).
            changed = (new != t[k:hi]).nonzero()[0]
            moved = ~(np.abs(new[changed] - t[k + changed]) <= 1e-6)
            if moved.any():
                earliest = min(earliest, float(t_orig[k + int(changed[moved.argmax()])]))
                t[k:hi] = new
        if earliest == np.inf:
            return True
        frontier = earliest - slack - 1e-6
    return False


def _chain_inputs(lo: int, hi: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray, group: np.ndarray
                  ) -> tuple:
    """The incoming edges of the chain ``lo:hi``, once per replay: the nodes (offsets in the chain)
    that have edges, sorted, the first edge of each among the chain's edges, the edges' sources and
    weights; its collective nodes (offsets) and their groups."""
    e_lo = int(np.searchsorted(dst, lo, side="left"))
    e_hi = max(int(np.searchsorted(dst, hi - 1, side="right")), e_lo)
    dd = dst[e_lo:e_hi] - lo
    first = np.flatnonzero(np.concatenate([[True], dd[1:] != dd[:-1]])) if dd.size else np.zeros(0, np.int64)
    gp = np.flatnonzero(group[lo:hi] >= 0)
    return dd[first], first, src[e_lo:e_hi], w[e_lo:e_hi], gp, group[lo + gp]


# ----------------------------------------------------------------------------------------------
# Measuring a replay and its critical path


def step_span_us(g: Graph, t: np.ndarray) -> float:
    """The replayed step of the job, µs: per rank, from the end of its first replayed step to the end
    of its last, over the steps between (a step ends at its CPU end or its device work's end,
    whichever is later), so every step measured starts where the one before it left the device;
    with one step, that step from its start. The job's step is its slowest rank's."""
    best = 0.0
    for steps in g.steps.values():
        if not steps:
            continue
        ends = [max(t[hi] if hi >= 0 else -np.inf, float(t[gpu].max()) if gpu.size else -np.inf)
                for _, hi, gpu in steps]
        if len(ends) >= 2 and np.isfinite(ends[0]) and np.isfinite(ends[-1]):
            per = (ends[-1] - ends[0]) / (len(ends) - 1)
        elif np.isfinite(ends[-1]):
            per = ends[-1] - t[steps[0][0]]
        else:
            continue
        best = max(best, float(per))
    return best


@dataclass
class CriticalPath:
    """The path's length, its share per category, and its nodes (for drawing)."""

    length_us: float
    share: dict[str, float]
    seconds: dict[str, float]
    nodes: np.ndarray
    """Graph node indices on the path, in time order."""

    def to_json(self) -> dict:
        return {"length_s": self.length_us / 1e6, "share": dict(self.share),
                "seconds": dict(self.seconds)}


def _end_node(g: Graph, t: np.ndarray) -> tuple[int, int]:
    """The node the window ends at (the latest step end or device end of any rank) and the node it
    starts at."""
    best, best_t, start = -1, -np.inf, -1
    for steps in g.steps.values():
        cand = [hi for _, hi, _ in steps if hi >= 0] + [int(gp[np.argmax(t[gp])]) for _, _, gp in steps if gp.size]
        for c in cand:
            if t[c] > best_t:
                best, best_t, start = c, t[c], steps[0][0]
    return best, start


def critical_path(g: Graph, t: np.ndarray, d: np.ndarray | None = None, w: np.ndarray | None = None
                  ) -> CriticalPath:
    """Walk back from the window's last node: along the chain while the predecessor set the time,
    across the binding edge otherwise; sum what each step of the walk costs by category.
    ``d``: ``g.d`` where the caller has it (the sum over categories costs more than the walk)."""
    d = g.d if d is None else d
    w = g.e_w if w is None else w
    end, start = _end_node(g, t)
    if end < 0:
        return CriticalPath(0.0, {}, {}, np.zeros(0, np.int64))
    t0 = t[start]
    chain_lo = [c.lo for c in g.chains]
    chain_of = np.repeat(np.arange(len(g.chains)), [c.hi - c.lo for c in g.chains])   # chains back to back
    val = t[g.e_src] + w
    # Per destination: the edge with the latest ready time (edges are sorted by destination).
    best_edge = np.full(len(g), -1, dtype=np.int64)
    ready = np.full(len(g), -np.inf)
    if g.e_src.size:
        dst, best = _latest_edges(g.e_dst, val)
        best_edge[dst] = best
        ready[dst] = val[best]
    r = np.maximum(ready, g.fixed)
    prev_t = np.r_[-np.inf, t[:-1]]
    lo_mask = np.zeros(len(g), bool)
    lo_mask[chain_lo] = True
    prev_t[lo_mask] = -np.inf
    jumps = np.flatnonzero((r > prev_t + 1e-9) & (best_edge >= 0) & (ready >= g.fixed))
    stop_fixed = np.flatnonzero(lo_mask | (g.fixed > prev_t + 1e-9))
    secs = np.zeros(len(CATEGORIES))
    on_path = []
    node = end
    dcat = g.dcat
    scale = np.where(d > 0, d / np.maximum(d, 1e-12), 0.0)
    # The walk in Python ints (a step costs a few µs, not a dozen numpy calls), the sums in numpy.
    jumps_l, stop_l = jumps.tolist(), stop_fixed.tolist()
    floor_t = t0 - 1e-9
    for _ in range(1_000_000):
        c_lo = chain_lo[chain_of[node]]
        # The nearest node at or before ``node`` on its chain where the walk leaves the chain.
        kj = bisect.bisect_right(jumps_l, node) - 1
        ks = bisect.bisect_right(stop_l, node) - 1
        j = jumps_l[kj] if kj >= 0 and jumps_l[kj] >= c_lo else -1
        s = stop_l[ks] if ks >= 0 and stop_l[ks] >= c_lo else c_lo
        lo = max(j, s)
        # Stop at the window start.
        inside = t[lo:node + 1] > floor_t
        every = bool(inside.all())
        seg = slice(lo, node + 1) if every else np.arange(lo, node + 1)[inside]   # (a slice: no copy)
        secs += (dcat[seg] * scale[seg, None]).sum(axis=0)
        on_path.append(np.arange(lo, node + 1) if every else seg)
        if not every or lo != j or t[lo] <= t0:
            break
        e = int(best_edge[lo])
        col = _EDGE_CATEGORY.get(EDGE_KINDS[g.e_kind[e]])
        if col is not None:
            secs[col] += w[e]
        node = int(g.e_src[e])
    length = float(t[end] - t0)
    total = float(secs.sum())
    seconds = {CATEGORIES[i]: float(secs[i]) / 1e6 for i in range(len(CATEGORIES)) if secs[i] > 0}
    share = {k: v * 1e6 / total for k, v in seconds.items()} if total > 0 else {}
    nodes = np.sort(np.concatenate(on_path))   # never empty: the walk's first stretch is on it before any stop
    return CriticalPath(length, share, seconds, nodes)


def _latest_edges(e_dst: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per destination, the edge with the latest ``val``: the last of np.lexsort((val, e_dst)) per
    destination (a NaN last, ties to the later edge); (destinations, edges). One pass over the
    edges, sorted by destination (build_graph sorts them)."""
    first = np.flatnonzero(np.r_[True, e_dst[1:] != e_dst[:-1]])
    top = np.repeat(np.maximum.reduceat(val, first), np.diff(np.r_[first, e_dst.size]))
    is_top = np.where(np.isnan(top), np.isnan(val), val == top)
    tops = np.flatnonzero(is_top)
    ends = np.r_[first[1:], e_dst.size] - 1
    best = tops[np.searchsorted(tops, ends, side="right") - 1]
    return e_dst[first], best


def path_masks(g: Graph, nodes: np.ndarray, ranks: list[RankTrace]) -> dict[tuple[int, int], np.ndarray]:
    """The critical path as masks over lane events, keyed ``(rank index in ranks, lane id)`` (the
    timeline's keys): a GPU node's kernel, a CPU node's event (the op or call whose boundary it is)."""
    index_of = {rt.rank: i for i, rt in enumerate(ranks)}
    out: dict[tuple[int, int], np.ndarray] = {}
    for rank, lane_id, ev in zip(g.node_rank[nodes].tolist(), g.node_lane[nodes].tolist(),
                                 g.node_index[nodes].tolist()):
        if rank not in index_of or ev < 0:
            continue
        key = (index_of[rank], lane_id)
        if key not in out:
            out[key] = np.zeros(len(ranks[index_of[rank]].lanes[lane_id]), dtype=bool)
        out[key][ev] = True
    return out
