"""The op table of ``prof.key_averages().table(sort_by="cuda_time_total")``, rebuilt from a trace.

Rows: host events (``cpu_op``/``Operator``, ``user_annotation``, runtime/driver calls, and the
``python_function`` frames of a ``with_stack=True`` trace, which torch lists and nests too) grouped by
name, and device rows (kernels, copies, and ``gpu_user_annotation`` spans, which torch lists with
their span as "self CUDA" time) grouped by name. ``ProfilerStep#N`` is grouped as ``ProfilerStep*``
as torch does.

* Nesting is torch's (``EventList._populate_cpu_children``): on one thread, an event's parent is the
  innermost earlier event that *contains* it (starts no later, ends no earlier, and the child starts
  before the parent ends). An event that merely overlaps another is not its child.
* self CPU = duration minus the durations of its direct children, never below 0 (torch prints a
  negative self time when a parent's children overlap, e.g. a Python frame and a record_function
  that straddles it); total CPU = duration.
* Profiler overhead: Kineto writes CUPTI's own overhead ("Command Buffer Full", ``cat: overhead``,
  ``pid -1``) on a row of its own. torch files these spans under the thread that drives the
  profiler (the one with the ``ProfilerStep`` annotations), so they count as children of the
  innermost op of that thread enclosing them and are not that op's self time. We do the same: it is
  the profiler's time, not the step's.
* self device = device work launched by the op itself: each kernel goes (through the correlation
  id) to its launch call and from there, as torch links them, to the enclosing op whose External id
  the launch call carries; failing that, to the innermost enclosing op that is not a runtime/driver
  call or a Python frame (torch credits kernels to the op, never to ``cudaLaunchKernel``); total
  device = self + children's.
* Nested same-name ops are one call, as in torch's ``EventList._remove_dup_nodes``: an event whose
  parent has the same (grouped) name and no other child (overhead spans count as children on the
  profiling thread) is dropped; the parent takes over its children and its kernels (replacing its
  own, as torch does). ``aten::sum`` calling ``aten::sum`` is 1 call, its device time counted once.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ..model.name_masks import member_mask, pattern_mask, step_lane, step_name_mask
from ..model.nesting import nest
from ..vocabulary.categories import GPU_ACTIVITY_CATEGORIES, LAUNCH_CATEGORIES
from ..model.trace_model import GPU_ACTIVITY_KINDS, Lane, RankTrace

PYTHON_CATEGORIES = frozenset({"python_function"})
"""``with_stack=True`` Python frames: rows and tree nodes in torch's table, never owners of kernels."""
HOST_ROW_CATEGORIES = frozenset({"cpu_op", "Operator", "user_annotation"}) | LAUNCH_CATEGORIES | PYTHON_CATEGORIES
OVERHEAD_CATEGORIES = frozenset({"overhead"})
"""Kineto's profiler-overhead spans (CUPTI buffer flushes): children time of the profiling thread."""
CONTAINMENT_SLACK_US = 1e-3
"""A child may end this much after its parent: Kineto writes ``ts`` and ``dur`` rounded to 1 ns
separately, and ``ts`` near 5e12 µs is a double with a 0.001 µs step, so a child ending with its
parent can read 1 ns later (torch, on integer ns, sees it inside)."""


@dataclass
class OpRow:
    """One row; times in seconds. ``kind`` is "host" or "device".

    ``mean_device_s`` is ``device_total_s / calls`` (None without calls). ``device_share`` is, for
    device rows of kernels/copies/memsets, their device time over the rank's total of that work
    (``gpu_user_annotation`` time excluded from both; the shares of those rows sum to 1); None for
    host rows and annotation-only rows, so the kernel view is the rows with a ``device_share``.
    """

    name: str
    kind: str
    calls: int
    self_cpu_s: float
    cpu_total_s: float
    self_device_s: float
    device_total_s: float
    flops: float | None = None
    mean_device_s: float | None = None
    device_share: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


def op_table(rt: RankTrace, host_windows_us: Sequence[tuple[float, float]] | None = None,
             device_keep: dict[int, np.ndarray] | None = None, *,
             on_point_rows: Callable[[Lane, HostRows], None] | None = None) -> list[OpRow]:
    """All rows, sorted by total device time then total CPU time, descending.

    A selection (e.g. some steps): only host events starting in one of ``host_windows_us``
    (``[t0, t1)``, lane times) and the device events ``device_keep[lane_id]`` marks count (a lane
    missing from it counts none); nesting is still read from the whole lane.

    ``on_point_rows(lane, rows)`` is called for each CPU lane with FLOP counts with the host rows
    :mod:`.op_points` reads (:func:`point_rows`), made from this table's own where they are the
    same (the containment search is most of the time of both).
    """
    # Overhead spans are rows too (torch lists "Command Buffer Full"; its "Self CPU time total"
    # includes them), on their own row of the trace where nothing nests in them.
    host_cat = member_mask(rt.strings, HOST_ROW_CATEGORIES | OVERHEAD_CATEGORIES)
    n_strings = len(rt.strings)
    self_cpu, total_cpu, self_dev, total_dev, flops = (np.zeros(n_strings) for _ in range(5))
    calls = np.zeros(n_strings, dtype=np.int64)
    host_rows = np.zeros(n_strings, dtype=bool)
    device_rows = np.zeros(n_strings, dtype=bool)

    ctx = host_context(rt)
    overhead = _overhead_spans(rt)
    profiling_thread = step_lane(rt)
    for lane in rt.cpu_lanes:
        tree = _host_tree(lane, host_cat, ctx)
        if tree is None:
            continue
        name_group = ctx.group[lane.name_id[tree.rows]]
        lane_overhead = overhead if lane is profiling_thread else None
        with_over, extra = _with_overhead(tree, lane.start_us[tree.rows], lane_overhead)
        got = _collapse_same_name(with_over, name_group, extra)
        if on_point_rows is not None and has_flops(lane):
            on_point_rows(lane, _point_rows_from(lane, tree, got, extra, name_group, ctx))
        rows, level, parent, dur, dev_op, overhead_us = got
        child_cpu = nest.add_at(overhead_us, parent, dur, skip_negative=True)  # roots (-1) left out
        if child_cpu is None:
            nested = parent >= 0
            child_cpu = add_at(overhead_us, parent[nested], dur[nested])
        dev_total = _subtree_sums(dev_op, parent, level)
        if host_windows_us is not None:
            keep = starts_in(lane.start_us[rows], host_windows_us)
            rows, dur, dev_op, dev_total, child_cpu = (a[keep] for a in (rows, dur, dev_op, dev_total, child_cpu))
        names = lane.name_id[rows]
        self_cpu = add_at(self_cpu, names, np.maximum(dur - child_cpu, 0.0))
        total_cpu = add_at(total_cpu, names, dur)
        self_dev = add_at(self_dev, names, dev_op)
        total_dev = add_at(total_dev, names, dev_total)
        calls += np.bincount(names, minlength=n_strings)
        f = lane.flops[rows]
        ok = ~np.isnan(f)
        flops = add_at(flops, names[ok], f[ok])
        host_rows[names] = True
    out = _merge_rows(rt, host_rows, "host", calls, self_cpu, total_cpu, self_dev, total_dev, flops)

    d_calls = np.zeros(n_strings, dtype=np.int64)
    d_time, work_us = np.zeros(n_strings), np.zeros(n_strings)  # work: kernels/copies/memsets, not annotations
    for lane in rt.lanes_of_kind("gpu_compute", "gpu_comm", "gpu_copy", "gpu_annotation"):
        names, dur = lane.name_id, lane.duration_us
        if device_keep is not None:
            keep = device_keep.get(lane.lane_id, np.zeros(len(lane), dtype=bool))
            names, dur = names[keep], dur[keep]
        d_calls += np.bincount(names, minlength=n_strings)
        d_time = add_at(d_time, names, dur)
        if lane.kind in GPU_ACTIVITY_KINDS:
            work_us = add_at(work_us, names, dur)
        device_rows[names] = True
    zeros = np.zeros(n_strings)
    device = _merge_rows(rt, device_rows, "device", d_calls, zeros, zeros, d_time, d_time, zeros)
    _set_device_shares(rt, device, work_us, device_rows)
    out += device
    for row in out:
        row.mean_device_s = row.device_total_s / row.calls if row.calls else None
    out.sort(key=lambda r: (-r.device_total_s, -r.cpu_total_s, r.name))
    return out


def add_at(target: np.ndarray, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.add.at(target, index, values)`` on a float64 ``target``, into a new array, with the same
    sums bit for bit: np.bincount adds in input order from 0.0 as add.at adds onto each element,
    so the target's own nonzero values go first."""
    fast = nest.add_at(target, index, values)
    if fast is not None:
        return fast
    base = np.flatnonzero(target)  # NaN counts as nonzero; 0.0 + x is x
    if base.size:
        index = np.concatenate([base, index])
        values = np.concatenate([target[base], values])
    return np.bincount(index, weights=values, minlength=target.size)


def _subtree_sums(own: np.ndarray, parent: np.ndarray, level: np.ndarray) -> np.ndarray:
    """``own`` plus every descendant's, adding each level's rows into their parents from the
    deepest level up, children in row order (the order, so the sums, of ``np.add.at`` level by
    level)."""
    fast = nest.subtree_sums(own, parent)
    if fast is not None:
        return fast
    total = own.copy()
    if not level.size:
        return total
    local = np.empty(parent.size, dtype=np.int64)   # a row's position among the rows of its level
    deepest = int(level.max())
    at = np.flatnonzero(level == deepest)
    for d in range(deepest, 0, -1):
        up = np.flatnonzero(level == d - 1)
        local[up] = np.arange(up.size)
        index = local[parent[at]]
        sums = np.bincount(np.concatenate([np.arange(up.size), index]),
                           weights=np.concatenate([total[up], total[at]]), minlength=up.size)
        has = np.bincount(index, minlength=up.size) > 0
        total[up[has]] = sums[has]
        at = up
    return total


def starts_in(times_us: np.ndarray, windows_us: Sequence[tuple[float, float]]) -> np.ndarray:
    """Mask of the times inside any ``[t0, t1)`` of ``windows_us``."""
    out = np.zeros(times_us.shape, dtype=bool)
    for t0, t1 in windows_us:
        out |= (times_us >= t0) & (times_us < t1)
    return out


def _set_device_shares(rt: RankTrace, rows: list[OpRow], work_us: np.ndarray, device_rows: np.ndarray) -> None:
    """``device_share`` of the rows with device work: their share of the rank's total of it."""
    by_name: dict[str, float] = {}
    has_work = np.zeros(work_us.size, dtype=bool)
    for lane in rt.gpu_lanes:
        has_work[lane.name_id] = True
    step = step_name_mask(rt.strings)
    for i in np.flatnonzero(device_rows & has_work).tolist():
        name = "ProfilerStep*" if step[i] else rt.strings[i]
        by_name[name] = by_name.get(name, 0.0) + float(work_us[i])
    total_us = sum(by_name.values())
    for row in rows:
        if row.name in by_name:
            row.device_share = by_name[row.name] / total_us if total_us > 0 else 0.0


class HostRows(NamedTuple):
    """Host rows of one CPU lane as torch's event tree (see :func:`_host_tree`)."""

    rows: np.ndarray
    """Indices into the lane."""
    level: np.ndarray | None
    """Depth of each row (roots 0); None before the collapse, and after one asked for none (points)."""
    parent: np.ndarray
    """Index into ``rows`` of each row's parent, -1 for roots."""
    duration_us: np.ndarray
    self_device_us: np.ndarray
    overhead_us: np.ndarray
    """Profiler-overhead time whose innermost enclosing row this is (0 without ``overhead``)."""


def name_groups(rt: RankTrace) -> np.ndarray:
    """Per string id, the id of its group name (every ``ProfilerStep#N`` maps to one id)."""
    group = np.arange(len(rt.strings), dtype=np.int64)
    step = np.flatnonzero(step_name_mask(rt.strings))
    if step.size:
        group[step] = step[0]
    return group


class HostContext(NamedTuple):
    """What a rank's host rows are read with, once per rank: per CPU lane the device µs each event
    launched, the string ids of the launch and Python categories, :func:`name_groups`, and the mask
    of :data:`HOST_ROW_CATEGORIES` (:func:`point_rows`' categories)."""

    kernel_us: dict[int, np.ndarray]
    launch_ids: np.ndarray
    python_ids: np.ndarray
    group: np.ndarray
    point_cat: np.ndarray


def host_context(rt: RankTrace) -> HostContext:
    return HostContext(_kernel_time_by_launch(rt), _ids(rt, LAUNCH_CATEGORIES), _ids(rt, PYTHON_CATEGORIES),
                       name_groups(rt), member_mask(rt.strings, HOST_ROW_CATEGORIES))


def _host_tree(lane, host_cat: np.ndarray, ctx: HostContext) -> HostRows | None:  # noqa: ANN001
    """Host rows of a CPU lane (``host_cat``) with nesting and the device µs each op launched itself,
    before overhead spans and the same-name collapse (``overhead_us`` zeros, ``level`` None:
    :func:`_collapse_same_name` finds the levels); None when the lane has no host rows.

    ``parent`` follows :func:`containment_parents`; kernels launched by a runtime/driver call are
    credited as :func:`_kernel_owners` says (torch links kernels to ops, never to Python frames)."""
    rows = np.flatnonzero(host_cat[lane.category_id])
    if rows.size == 0:
        return None
    def of_rows(column: np.ndarray) -> np.ndarray:  # read only: a lane of host rows alone is not copied
        return column if rows.size == column.size else column[rows]

    start, dur = of_rows(lane.start_us), of_rows(lane.duration_us)
    parent = containment_parents(start, dur)
    own_dev = ctx.kernel_us.get(lane.lane_id)
    dev_op = own_dev[rows] if own_dev is not None else np.zeros(rows.size)
    cats = of_rows(lane.category_id)
    is_launch = _id_mask(ctx.launch_ids, host_cat.size)[cats]
    moved = np.flatnonzero(is_launch & (parent >= 0) & (dev_op > 0))
    if moved.size:
        skip = is_launch | _id_mask(ctx.python_ids, host_cat.size)[cats]
        target = _kernel_owners(moved, parent, skip, of_rows(lane.external_id))
        ok = target >= 0
        dev_op = add_at(dev_op, target[ok], dev_op[moved[ok]])
        dev_op[moved[ok]] = 0.0
    return HostRows(rows, None, parent, dur, dev_op, np.zeros(rows.size))


def _id_mask(ids: np.ndarray | Sequence[int], n_strings: int) -> np.ndarray:
    """A lookup table over string ids, True at ``ids`` (``mask[col]`` is ``np.isin(col, ids)`` in
    one gather; one entry more, False, for the id -1)."""
    mask = np.zeros(n_strings + 1, dtype=bool)
    mask[np.asarray(ids, dtype=np.int64)] = True
    return mask


def _with_overhead(tree: HostRows, start: np.ndarray, overhead: tuple[np.ndarray, np.ndarray] | None
                   ) -> tuple[HostRows, np.ndarray]:
    """``tree`` (rows starting at ``start``) with the ``overhead`` spans (start, end sorted) given
    to the rows enclosing them: (rows with ``overhead_us``, spans per row)."""
    if overhead is None or not overhead[0].size:
        return tree, np.zeros(tree.rows.size, dtype=np.int64)
    owner = _span_owners(start, tree.duration_us, overhead, tree.parent)
    ok = owner >= 0
    over_us = np.bincount(owner[ok], weights=(overhead[1] - overhead[0])[ok], minlength=tree.rows.size)
    over_n = np.bincount(owner[ok], minlength=tree.rows.size).astype(np.int64)
    return tree._replace(overhead_us=over_us), over_n


def has_flops(lane) -> bool:  # noqa: ANN001 (Lane)
    """Whether any event of ``lane`` has a FLOP count (only such lanes give roofline points)."""
    return bool(np.any(~np.isnan(lane.flops)))


def point_rows(lane, ctx: HostContext) -> HostRows | None:  # noqa: ANN001
    """The host rows :mod:`.op_points` reads: those of :data:`HOST_ROW_CATEGORIES`, same-name chains
    collapsed, no overhead spans."""
    tree = _host_tree(lane, ctx.point_cat, ctx)
    if tree is None:
        return None
    return _collapse_same_name(tree, ctx.group[lane.name_id[tree.rows]], np.zeros(tree.rows.size, dtype=np.int64),
                               levels=False)


def _point_rows_from(lane, tree: HostRows, collapsed: HostRows, extra_children: np.ndarray,  # noqa: ANN001
                     name_group: np.ndarray, ctx: HostContext) -> HostRows | None:
    """:func:`point_rows` from the op table's rows of the lane (``tree`` before, ``collapsed``
    after the same-name collapse with ``extra_children`` overhead spans): the same rows unless
    the lane has overhead-category rows (then found afresh); collapsed again without the overhead
    children where there were some (they can keep a same-name child apart)."""
    if not ctx.point_cat[lane.category_id[tree.rows]].all():
        return point_rows(lane, ctx)
    if extra_children.any():
        return _collapse_same_name(tree, name_group, np.zeros(tree.rows.size, dtype=np.int64), levels=False)
    return collapsed


def _kernel_owners(launch: np.ndarray, parent: np.ndarray, skip: np.ndarray, external_id: np.ndarray
                   ) -> np.ndarray:
    """The row credited with each launch's kernels (-1: none), by the module docstring's self-device
    rule (a CUDA-graph replay inside an ``## Call CompiledFxGraph`` annotation belongs to
    ``CompiledFunction``, the op that launched it); ``skip``: runtime calls and Python frames."""
    want = external_id[launch]
    target = parent[launch]
    fallback = np.full(launch.size, -1, dtype=np.int64)
    while True:  # one ancestor up per round: every walk ends at a root's parent (-1) at the latest
        live = target >= 0
        at = np.maximum(target, 0)
        usable = live & ~skip[at]
        fallback = np.where(usable & (fallback < 0), target, fallback)
        done = ~live | (usable & (want >= 0) & (external_id[at] == want))
        if done.all():
            return np.where(target >= 0, target, fallback)
        target = np.where(done, target, parent[at])


def _collapse_same_name(h: HostRows, name_group: np.ndarray, extra_children: np.ndarray,
                        levels: bool = True) -> HostRows:
    """torch's ``_remove_dup_nodes`` (the module docstring): the parent keeps its own span (its self
    CPU becomes its span minus the grandchildren); chains collapse into their top row. The result's
    ``level`` is found here (None without ``levels``: the roofline points need none)."""
    parent = h.parent
    has_parent = parent >= 0
    safe = np.maximum(parent, 0)
    n_children = np.bincount(parent[has_parent], minlength=parent.size) + extra_children
    merge = has_parent & (name_group == name_group[safe]) & (n_children[safe] == 1)
    merged = np.flatnonzero(merge)
    if not merged.size:
        if levels:
            return h._replace(level=_levels(parent))
        return h
    top = np.arange(parent.size)
    top[merged] = parent[merged]
    chained = merged[merge[top[merged]]]
    while chained.size:  # pointer jumping: each merged row to the kept row at the top of its chain
        top[chained] = top[top[chained]]
        chained = chained[merge[top[chained]]]
    dev = h.self_device_us.copy()
    deepest = np.full(parent.size, -1)
    np.maximum.at(deepest, top[merged], merged)  # a chain is a path: its last row is the deepest
    owners = np.flatnonzero(deepest >= 0)
    dev[owners] = h.self_device_us[deepest[owners]]
    over = add_at(h.overhead_us, top[merged], h.overhead_us[merged])
    keep = ~merge
    new_index = np.cumsum(keep) - 1
    kept_parent = parent[keep]
    new_parent = np.where(kept_parent >= 0, new_index[top[np.maximum(kept_parent, 0)]], -1)
    return HostRows(h.rows[keep], _levels(new_parent) if levels else None, new_parent, h.duration_us[keep],
                    dev[keep], over[keep])


def containment_parents(start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Innermost enclosing event of each event of one thread; -1 for roots.

    ``start`` is sorted, ties longest first (as in a :class:`.trace_model.Lane`). The parent of ``i`` is
    the latest ``j < i`` with ``end[j] >= end[i]`` and ``start[i] < end[j]`` (torch's rule, on integer
    ns; here within :data:`CONTAINMENT_SLACK_US` of float rounding); events that only overlap are
    not nested.
    """
    n = start.size
    if n < 2:
        return np.full(n, -1, dtype=np.int64)
    end = start + duration
    return _enclosing_events(end, start, end - CONTAINMENT_SLACK_US)


def _climb(cand: np.ndarray, active: np.ndarray, parents: np.ndarray, end: np.ndarray, q_start: np.ndarray,
           q_end: np.ndarray) -> None:
    """Move the candidate of each ``active`` query up ``parents``, in place, until it encloses the
    query or is -1. An event does not enclose ``(q_start, q_end)`` when it ends before ``q_end``, or
    at or before ``q_start`` (a zero-length query at exactly its end is not inside)."""
    while active.size:
        e = end[cand[active]]
        active = active[(e < q_end[active]) | (e <= q_start[active])]
        cand[active] = parents[cand[active]]
        active = active[cand[active] >= 0]


def _enclosing_events(end: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """For each event ``i`` (two or more, sorted by start), the latest ``j < i`` that encloses its
    query (see :func:`_climb`), -1 if none.

    Every candidate starts at ``i - 1``; one that does not enclose is replaced by its own current
    candidate, all at once (pointer jumping). That skip is safe: what a candidate ``c`` skipped
    does not enclose ``c``'s query, so it ends before ``c`` does (minus the slack) or at or before
    ``c``'s start, both at or before what ``i`` needs, as ``c`` ends before ``i``'s query or at
    or before ``i``'s start, which is no earlier than ``c``'s. Siblings and ancestors are skipped
    in O(log) rounds, in O(n) memory.

    The first round settles the roots at once (an event that no earlier end reaches, by the running
    maximum of the ends, has no enclosing event: a root would walk its whole lane back) and skips
    runs of siblings in one step (below).
    """
    fast = nest.enclosing_events(end, q_start, q_end)
    if fast is not None:
        return fast
    index = np.int32 if end.size < 2**31 else np.int64  # half the temporaries of int64
    cand = np.arange(-1, end.size - 1, dtype=index)
    qs, qe = q_start[1:], q_end[1:]
    reach = np.maximum.accumulate(end[:-1])
    root = (reach < qe) | (reach <= qs)
    cand[1:][root] = -1
    first = end[:-1]
    failed = (first < qe) | (first <= qs)
    failed &= ~root
    del reach, root, first
    # A run of events each not enclosed by its predecessor (siblings one after the other): every
    # event of the run skips to the candidate of the event before the run, settled already (its
    # parent, or -1), in one step. Safe by the rule above, applied down the run: each event fails
    # the next one's query, so every one of them, and the event before the run, fails the last's.
    settled = np.where(failed, 0, np.arange(1, end.size, dtype=index))
    np.maximum.accumulate(settled, out=settled)   # the latest event at or before each not in a run
    active = np.flatnonzero(failed).astype(index) + 1
    cand[active] = cand[settled[active - 1]]
    del failed, settled
    _climb(cand, active[cand[active] >= 0], cand, end, q_start, q_end)
    return cand  # int32 where it fits, as the searches and the op table index with it


def _span_owners(start: np.ndarray, duration: np.ndarray, spans: tuple[np.ndarray, np.ndarray],
                 parents: np.ndarray) -> np.ndarray:
    """Per foreign span (sorted by start), the index of its innermost enclosing event (``parents``:
    the events' :func:`containment_parents`), -1 if none: from the last event starting before it up
    the ``parents`` chains (safe skips, as in :func:`_enclosing_events`)."""
    s, e = spans
    cand = (np.searchsorted(start, s, side="right") - 1).astype(np.int64)
    _climb(cand, np.flatnonzero(cand >= 0), parents, start + duration, s, e)
    return cand


def _levels(parent: np.ndarray) -> np.ndarray:
    """Depth of each node of a parent-pointer forest (roots 0); parents precede children. Pointer
    jumping: O(n log depth), not O(n * depth)."""
    fast = nest.levels(parent)
    if fast is not None:
        return fast
    index = np.int32 if parent.size < 2**31 else np.int64
    level = (parent >= 0).astype(index)
    anc = parent.astype(index)
    while True:
        has = anc >= 0
        if not has.any():
            return level
        up = np.maximum(anc, 0)
        level = np.where(has, level + level[up], level)
        anc = np.where(has, anc[up], -1)


def _overhead_spans(rt: RankTrace) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of Kineto's profiler-overhead spans, sorted by start."""
    overhead = member_mask(rt.strings, OVERHEAD_CATEGORIES)
    if not overhead.any():  # most traces: no lane to read
        return np.zeros(0), np.zeros(0)
    s, e = rt.cpu_spans(overhead, "category_id")
    order = np.argsort(s, kind="stable")
    return s[order], e[order]


def _ids(rt: RankTrace, names: frozenset[str]) -> np.ndarray:
    return np.array([rt.strings.find(n) for n in names if rt.strings.find(n) >= 0], dtype=np.int32)


def _merge_rows(rt: RankTrace, mask: np.ndarray, kind: str, calls: np.ndarray, self_cpu: np.ndarray,
                total_cpu: np.ndarray, self_dev: np.ndarray, total_dev: np.ndarray, flops: np.ndarray
                ) -> list[OpRow]:
    merged: dict[str, OpRow] = {}
    ids = np.flatnonzero(mask)
    step = step_name_mask(rt.strings)[ids].tolist()
    columns = (a[ids].tolist() for a in (calls, self_cpu, total_cpu, self_dev, total_dev, flops))
    for i, is_step, n, s_cpu, t_cpu, s_dev, t_dev, f in zip(ids.tolist(), step, *columns):
        name = "ProfilerStep*" if is_step else rt.strings[i]
        row = merged.get(name)
        if row is None:
            row = merged[name] = OpRow(name, kind, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
        row.calls += n   # Python ints and floats: the values numpy's scalars gave, without them
        row.self_cpu_s += s_cpu / 1e6
        row.cpu_total_s += t_cpu / 1e6
        row.self_device_s += s_dev / 1e6
        row.device_total_s += t_dev / 1e6
        row.flops = (row.flops or 0.0) + f
    for row in merged.values():
        row.flops = row.flops or None
    return list(merged.values())


def _kernel_time_by_launch(rt: RankTrace) -> dict[int, np.ndarray]:
    """Per CPU lane: device µs launched by each of its events (through the launch flows)."""
    out: dict[int, np.ndarray] = {}
    flows = rt.flows
    if not len(flows):
        return out
    dur = np.empty(len(flows))
    gpu_cat = member_mask(rt.strings, GPU_ACTIVITY_CATEGORIES)
    for lane_id in np.flatnonzero(np.bincount(flows.dst_lane)).tolist():  # np.unique imports numpy.ma
        m = flows.dst_lane == lane_id
        lane = rt.lanes[lane_id]
        idx = flows.dst_index[m]
        dur[m] = np.where(gpu_cat[lane.category_id[idx]], lane.duration_us[idx], 0.0)
    for lane_id in np.flatnonzero(np.bincount(flows.src_lane)).tolist():
        m = flows.src_lane == lane_id
        acc = np.zeros(len(rt.lanes[lane_id]))
        np.add.at(acc, flows.src_index[m], dur[m])
        out[lane_id] = acc
    return out
