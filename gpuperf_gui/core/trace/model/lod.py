"""Level of detail for timeline rows: Tracy's folding, vectorised with numpy (no Qt).

A row is a sequence of events sorted by start time (one depth row of a CPU thread, one GPU
stream). At a given zoom level an event narrower than :data:`MIN_BLOCK_PX` pixels cannot be seen on
its own, so runs of such events that lie within that width of each other are merged into one
*folded block* that remembers how many events it holds (Tracy's ``MinVisSize = 3`` and
``TimelineDrawType::Folded``): a row draws at most about ``width_px / MIN_BLOCK_PX`` folded blocks
plus the events that are wide enough to be seen.

The rule, stated once so that both code paths agree exactly: with ``T`` the time that
:data:`MIN_BLOCK_PX` pixels cover and ``cm`` the running maximum of the end times, events ``j`` and
``j + 1`` belong to the same block iff

    key[j] = max(duration[j], duration[j + 1], start[j + 1] - cm[j]) < T

``key`` does not depend on the zoom level, so a :class:`RowIndex` keeps, in O(n) time and under a
byte an event, a max-tree of it and its largest keys sorted. Folding at any zoom finds the
boundaries (``key >= T``) inside the visible range from those, or from the keys of the visible slice
when the boundaries are dense: work proportional to ``min(visible events, block boundaries)``, never
to the row length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

MIN_BLOCK_PX = 3.0
"""Narrowest drawn rectangle in pixels; narrower events are folded (Tracy's MinVisSize)."""
GRID_PX = 12.0
"""Folded blocks are cut at a grid this wide, so a dense run shows its density along time."""

TREE_LEAF_KEYS = 16
"""Keys under one leaf of :attr:`RowIndex.key_max_tree`: the tree holds 1/16 + 1/512 + ... of a
float64 an event (0.52 bytes), and a query recomputes 16 keys per leaf that may hold a boundary."""
TREE_FANOUT = 32
"""Children of a node above the leaves: few levels, so few numpy calls per query."""
TREE_START_NODES = 8192
"""A query starts at the lowest level where its range spans fewer nodes than this: one compare
over them costs less than the numpy calls of a level of descent."""
TREE_MIN_EVENTS = 16384
"""Below this many visible events fold_row computes the keys of the slice: cheaper than the index."""
TREE_MAX_CHECKED = 0.125
"""fold_row gives up the descent once it would recompute more keys than this fraction of the
visible events: the boundaries are dense there, and the slice's keys come cheaper in one pass."""
TOP_KEYS_PER = 128
"""RowIndex keeps the largest key of every this many, sorted with their indices (12 bytes each:
0.09 bytes an event)."""

SPLIT_PASSES_MAX_ROWS = 32
"""Up to this many depth rows a lane is split by one pass per row (cheaper than a stable sort of the
depths); deeper lanes by the sort."""

_EMPTY_F = np.empty(0, dtype=np.float64)
_EMPTY_I = np.empty(0, dtype=np.int64)
_FANOUT_RANGE = np.arange(TREE_FANOUT)
_LEAF_COLUMN = np.arange(TREE_LEAF_KEYS + 1)[:, None]


@dataclass(frozen=True)
class FoldedRow:
    """Rectangles of one row at one zoom level, sorted by start (times in the row's unit)."""

    start_us: np.ndarray
    end_us: np.ndarray        # widened to at least MIN_BLOCK_PX
    count: np.ndarray         # events in each: 1 a single event (in its own colour), more a folded block
    first: np.ndarray         # index of each one's first event: its events are first[i] : first[i] + count[i]
    busy_us: np.ndarray
    """Summed duration of each rectangle's events; over its extent, how full a folded block is (a block of a
    thousand 1 µs kernels 30 µs apart is 3 % busy and must not look like a packed lane)."""
    last_end_us: np.ndarray   # end of each rectangle's last event (its extent before widening)
    apart: tuple[int, int, float] | None = None
    """(i0, i1, block_us) when every pair of the events ``i0..i1-1`` in view was cut by its own
    key at that block width (:func:`refold_row` may keep such a fold)."""

    def density(self) -> np.ndarray:
        """Busy fraction of each rectangle's true extent (1 for single events), in [0, 1]."""
        extent = self.last_end_us - self.start_us
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(extent > 0, self.busy_us / extent, 1.0)
        return np.clip(d, 0.0, 1.0)

    def __len__(self) -> int:
        return int(self.count.size)

    @classmethod
    def empty(cls) -> FoldedRow:
        return cls(_EMPTY_F, _EMPTY_F, _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F)


class RowIndex:
    """Zoom-independent precomputation for :func:`fold_row` on one row (``starts`` sorted, ``ends``
    need not be), built once per row in O(n) in the loading worker.

    ``key_max_tree``: maxima of the pair keys over blocks of :data:`TREE_LEAF_KEYS` keys, then over
    groups of :data:`TREE_FANOUT` of those, up to one root: all levels, leaves first, in one float64
    array (layout: :func:`_tree_layout`) that travels between processes like any other array. The
    keys are not kept (8 bytes an event): a query recomputes the few it needs from the event times.
    ``top_keys``, ``top_index``: the keys above ``top_floor`` (at most one in :data:`TOP_KEYS_PER`),
    sorted, and their indices: zoomed out, the few boundaries of a long row are among them, found by
    one ``searchsorted`` instead of a descent of the tree.
    """

    __slots__ = ("starts", "ends", "running_max_end", "key_max_tree", "top_keys", "top_index",
                 "top_floor", "cum_duration")

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        self.starts = np.ascontiguousarray(starts, dtype=np.float64)
        self.ends = np.ascontiguousarray(ends, dtype=np.float64)
        if self.starts.shape != self.ends.shape or self.starts.ndim != 1:
            raise ValueError("starts and ends must be 1-D arrays of the same length")
        self.running_max_end = np.maximum.accumulate(self.ends)
        self.cum_duration = np.zeros(self.starts.size + 1, dtype=np.float64)  # cum[j] - cum[i]: i..j-1 busy
        np.cumsum(self.ends - self.starts, out=self.cum_duration[1:])
        key = _pair_keys(self.starts, self.ends, self.running_max_end)
        self.key_max_tree = _build_max_tree(key)
        self.top_keys, self.top_index, self.top_floor = _top_keys(key, key.size // TOP_KEYS_PER)

    def __len__(self) -> int:
        return int(self.starts.size)

    def breaks(self, i0: int, i1: int, threshold_us: float, max_checked: int | None = None) -> np.ndarray | None:
        """Sorted ``j`` in ``[i0, i1 - 1)`` with ``key[j] >= threshold_us`` (int64): the block
        boundaries among events ``i0..i1-1``. None when that would recompute more than about
        ``max_checked`` keys (the boundaries are dense: scanning the slice is cheaper)."""
        lo, hi = max(int(i0), 0), min(int(i1) - 1, self.starts.size - 1)
        if hi <= lo:
            return _EMPTY_I
        if threshold_us > self.top_floor:   # every key >= threshold is among the top keys
            first = int(self.top_keys.searchsorted(threshold_us))
            if self.top_keys.size - first <= hi - lo:
                found = self.top_index[first:]
                found = found[(found >= lo) & (found < hi)].astype(np.int64)
                found.sort()
                return found
        return self._tree_breaks(lo, hi, threshold_us,
                                 math.inf if max_checked is None else max_checked / TREE_LEAF_KEYS)

    def _tree_breaks(self, lo: int, hi: int, threshold_us: float, max_leaves: float) -> np.ndarray | None:
        """:meth:`breaks` by a descent of the tree, level by level over the nodes whose maximum
        reaches the threshold; every numpy call works on that frontier only."""
        layout = _tree_layout(self.starts.size - 1)
        level = 0   # start at the lowest level where one compare over the range's nodes is cheap
        while level + 1 < len(layout) and (hi - lo) // layout[level][2] >= TREE_START_NODES:
            level += 1
        tree = self.key_max_tree
        offset, _, span = layout[level]
        first = lo // span
        nodes = (tree[offset + first:offset + (hi - 1) // span + 1] >= threshold_us).nonzero()[0]
        nodes += first
        while level > 0 and 0 < nodes.size <= max_leaves:   # each node holds a leaf to check
            level -= 1
            offset, _, span = layout[level]
            child = (nodes * TREE_FANOUT)[:, None] + _FANOUT_RANGE   # sorted, as the nodes
            # children past the level's end (the last node's) read what follows in the array,
            # clipped to its end; like all children outside the range, the cut drops them
            child = child[tree[offset:].take(child, mode="clip") >= threshold_us]
            nodes = _within(child, lo // span, (hi - 1) // span + 1)
        if nodes.size > max_leaves:
            return None
        if nodes.size == 0:
            return _EMPTY_I
        return self._leaf_breaks(nodes, lo, hi, threshold_us)

    def _leaf_breaks(self, leaves: np.ndarray, lo: int, hi: int, threshold_us: float) -> np.ndarray:
        """The keys of the given leaf blocks, recomputed with :func:`_pair_keys`' arithmetic (so
        bit for bit its values), that are ``>= threshold_us`` and in ``[lo, hi)``."""
        ev = leaves * TREE_LEAF_KEYS + _LEAF_COLUMN   # (LEAF + 1, leaves): contiguous key slices
        s = self.starts.take(ev, mode="clip")         # past the row's end: cut below
        e = self.ends.take(ev, mode="clip")
        duration = e - s
        key = np.maximum(duration[:-1], duration[1:])
        np.maximum(key, s[1:] - self.running_max_end.take(ev[:-1], mode="clip"), out=key)
        j = ev[:-1][key >= threshold_us]
        j.sort()
        return _within(j, lo, hi)


def _within(values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The sorted ``values`` in ``[lo, hi)``."""
    if values.size and (values[0] < lo or values[-1] >= hi):
        return values[int(values.searchsorted(lo)):int(values.searchsorted(hi))]
    return values


@lru_cache(maxsize=512)
def _tree_layout(n_keys: int) -> tuple[tuple[int, int, int], ...]:
    """(offset in the tree array, node count, keys under one node) of each level, leaves first."""
    layout, offset, span = [], 0, TREE_LEAF_KEYS
    size = -(-n_keys // span)
    while size > 0:
        layout.append((offset, size, span))
        if size == 1:
            break
        offset += size
        span *= TREE_FANOUT
        size = -(-size // TREE_FANOUT)
    return tuple(layout)


def _build_max_tree(key: np.ndarray) -> np.ndarray:
    """All levels of the max-tree of ``key`` in one array (see :attr:`RowIndex.key_max_tree`)."""
    if key.size == 0:
        return _EMPTY_F
    levels = [np.maximum.reduceat(key, np.arange(0, key.size, TREE_LEAF_KEYS))]
    while levels[-1].size > 1:
        below = levels[-1]
        levels.append(np.maximum.reduceat(below, np.arange(0, below.size, TREE_FANOUT)))
    return np.concatenate(levels)


def _top_keys(key: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(keys above the floor, sorted; their indices; the floor): at most the ``count`` largest
    keys, every one above the floor (keys equal to it may have been left out)."""
    if count == 0:
        return _EMPTY_F, np.empty(0, dtype=index_dtype(key.size)), math.inf
    largest = np.argpartition(key, key.size - count)[key.size - count:]   # O(n), not a sort
    floor = float(key[largest[0]])   # the count-th largest; the rest are >= it
    largest = largest[key[largest] > floor]
    largest = largest[np.argsort(key[largest], kind="stable")].astype(index_dtype(key.size))
    return key[largest], largest, floor


def index_dtype(n: int) -> type:
    """The narrowest index type for ``n`` events: int32 below 2**31 (half the memory of int64, and
    half the bytes the loading helper sends to the GUI process)."""
    return np.int32 if n < 2**31 else np.int64


def _pair_keys(starts: np.ndarray, ends: np.ndarray, running_max_end: np.ndarray) -> np.ndarray:
    """key[j] for the pair (j, j+1): the block joins them iff key[j] < T (no key for fewer than two events)."""
    duration = ends - starts
    key = np.maximum(duration[:-1], duration[1:])
    np.maximum(key, starts[1:] - running_max_end[:-1], out=key)
    return key


def visible_range(
    starts: np.ndarray, running_max_end: np.ndarray, view_start: float, view_end: float
) -> tuple[int, int]:
    """Indices ``[i0, i1)`` of the events that may overlap ``[view_start, view_end]``."""
    i0 = int(np.searchsorted(running_max_end, view_start, side="right"))
    i1 = int(np.searchsorted(starts, view_end, side="left"))
    return i0, max(i0, i1)


class BlockKinds:
    """The kind each folded rectangle of a row is drawn with (the Trace lanes' idle gaps: a block of
    launch gaps with one sync gap in it stays plain idle unless the sync's idle dominates it): a single
    event's own; a folded block's first non-zero kind when events of non-zero kinds hold at least half
    of its summed duration, else 0. The running sums over the row are made once here, so each fold
    costs only its rectangles (a frame refolds; a 10 M-event trace has millions of gaps)."""

    def __init__(self, kind: np.ndarray, index: RowIndex) -> None:
        self.kind = kind
        self._marked = np.concatenate(([0.0], np.cumsum(np.where(kind != 0, index.ends - index.starts, 0.0))))
        self._total = index.cum_duration
        self._nonzero = np.flatnonzero(kind)
        self._kind_after = np.append(kind[self._nonzero], 0)  # the k-th non-zero kind, 0 past the last

    def of(self, f: FoldedRow) -> np.ndarray:
        hi = f.first + f.count
        part = self._marked[hi] - self._marked[f.first]
        whole = self._total[hi] - self._total[f.first]
        # the first non-zero kind at or after each block's start
        first_kind = self._kind_after[np.searchsorted(self._nonzero, f.first)]
        return np.where((part > 0) & (2 * part >= whole), first_kind, 0).astype(self.kind.dtype)


def fold_row(
    starts: np.ndarray | RowIndex,
    ends: np.ndarray | None = None,
    view_start: float = 0.0,
    view_end: float = 1.0,
    width_px: float = 1.0,
    grid_px: float | None = GRID_PX,
) -> FoldedRow:
    """Fold one row (event times sorted by start, or a :class:`RowIndex` as ``starts`` and ``ends``
    None: the fast path) for drawing ``[view_start, view_end]`` across ``width_px`` pixels: events
    narrower than :data:`MIN_BLOCK_PX` are folded with their neighbours, into at most about ``width_px /
    MIN_BLOCK_PX + width_px / grid_px`` folded blocks besides the visible events that are wider.

    Folded blocks do not cross the lines of a grid ``grid_px`` pixels wide (anchored at
    ``view_start``; None: no grid), so that a long run of tiny events becomes a strip of blocks whose
    busy fractions show where the row was dense and where sparse.
    """
    if isinstance(starts, RowIndex):
        index: RowIndex | None = starts
        s, e, cm, cum = starts.starts, starts.ends, starts.running_max_end, starts.cum_duration
    else:
        if ends is None:
            raise TypeError("fold_row needs ends unless starts is a RowIndex")
        index, cum = None, None
        s, e = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
        cm = np.maximum.accumulate(e)
    span = float(view_end) - float(view_start)
    if s.size == 0 or not (span > 0.0) or not (width_px > 0.0):
        return FoldedRow.empty()
    block_us = MIN_BLOCK_PX * span / float(width_px)
    i0, i1 = visible_range(s, cm, view_start, view_end)
    if i1 <= i0:
        return FoldedRow.empty()
    breaks = None
    if index is not None and i1 - i0 >= TREE_MIN_EVENTS:   # from the index, unless dense
        breaks = index.breaks(i0, i1, block_us, max_checked=int(TREE_MAX_CHECKED * (i1 - i0)))
    gridded = grid_px is not None and grid_px > 0 and i1 - i0 > 1
    grid_us = float(grid_px) * span / float(width_px) if gridded else 0.0
    if breaks is None:   # the slice's keys, and its grid cells, in one pass each
        cut = _pair_keys(s[i0:i1], e[i0:i1], cm[i0:i1]) >= block_us
        apart = bool(cut.all())
        if gridded:
            cell = _grid_cell(s[i0:i1], float(view_start), grid_us)
            cut |= cell[1:] != cell[:-1]
        breaks = np.flatnonzero(cut) + i0
    else:
        apart = breaks.size == i1 - i0 - 1
        if gridded:
            breaks = _sorted_union(breaks, _grid_breaks(s, i0, i1, float(view_start), grid_us))
    cum_offset = 0
    if cum is None:  # prefix sums over the visible slice only
        cum = np.zeros(i1 - i0 + 1, dtype=np.float64)
        np.cumsum(e[i0:i1] - s[i0:i1], out=cum[1:])
        cum_offset = i0
    first = np.concatenate(([i0], breaks + 1))
    last = np.concatenate((breaks, [i1 - 1]))
    start_us = s[first]
    last_end = e[last]
    # a folded block is all small events: its true end lies in [end of last, start of
    # last + T); widening every rectangle to the minimum block covers the difference.
    end_us = np.maximum(last_end, start_us + block_us)
    busy_us = cum[last + 1 - cum_offset] - cum[first - cum_offset]
    return FoldedRow(start_us, end_us, last - first + 1, first, busy_us, last_end,
                     (i0, i1, block_us) if apart else None)


def refold_row(index: RowIndex, previous: FoldedRow, view_start: float, view_end: float,
               width_px: float) -> FoldedRow:
    """:func:`fold_row` of ``index`` for a new view, or ``previous`` (its fold for the last view)
    when that cannot change: the same events are in view, every neighbouring pair of them is
    cut by its own key (no folded block whatever the grid, the only input that moves with a pan)
    and the block width is unchanged. The width is compared to 1e-9 of itself: a pan's span is
    ``(x1 + d) - (x0 + d)``, rounded apart from ``x1 - x0`` by an ulp, and a difference that small
    moves no rectangle by a pixel (it widens an event narrower than a block by 1e-9 of a block)."""
    if previous.apart is not None:
        i0, i1, block_us = previous.apart
        span = float(view_end) - float(view_start)
        if span > 0.0 and width_px > 0.0 and visible_range(
                index.starts, index.running_max_end, view_start, view_end) == (i0, i1):
            new_block_us = MIN_BLOCK_PX * span / float(width_px)
            if new_block_us == block_us or (abs(new_block_us - block_us) <= 1e-9 * block_us and (
                    new_block_us < block_us or _keys_cut_all(index, i0, i1, new_block_us))):
                return previous
    return fold_row(index, None, view_start, view_end, width_px)


def _keys_cut_all(index: RowIndex, i0: int, i1: int, block_us: float) -> bool:
    """Whether every pair of events ``i0..i1-1`` is cut by its key at ``block_us`` (the check
    :func:`refold_row` needs when the block width moved by an ulp: a key may sit on it)."""
    return bool((_pair_keys(index.starts[i0:i1], index.ends[i0:i1],
                            index.running_max_end[i0:i1]) >= block_us).all())


def _grid_cell(s: np.ndarray, view_start: float, grid_us: float) -> np.ndarray:
    """Grid cell of each start time; everything that starts before the view is in cell 0."""
    return np.floor((np.maximum(s, view_start) - view_start) / grid_us)


def _sorted_union(*arrays: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a few small integer arrays (``np.union1d`` without numpy 2's
    hashing ``np.unique``, slow on arrays this small)."""
    values = np.concatenate(arrays)
    values.sort()
    if values.size > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def _grid_breaks(s: np.ndarray, i0: int, i1: int, view_start: float, grid_us: float) -> np.ndarray:
    """Pairs (j, j + 1) in [i0, i1) whose starts fall in different grid cells, found from the grid
    lines (a few hundred) rather than from every start in view."""
    last_cell = float(_grid_cell(s[i1 - 1:i1], view_start, grid_us)[0])
    if last_cell < 1:
        return _EMPTY_I
    lines = view_start + np.arange(1, last_cell + 1) * grid_us
    j = np.searchsorted(s[i0:i1], lines, side="left") - 1 + i0
    # check the pair at each line and its neighbours with the exact cell rule (rounding)
    cand = _sorted_union(j - 1, j, j + 1)
    cand = cand[(cand >= i0) & (cand < i1 - 1)]
    cells = _grid_cell(s[cand], view_start, grid_us)
    cells_next = _grid_cell(s[cand + 1], view_start, grid_us)
    return cand[cells != cells_next].astype(np.int64)


@dataclass(frozen=True)
class LaneRows:
    """The depth rows of one lane, each ready to fold."""

    rows: tuple[RowIndex, ...]             # one per depth (0 = outermost), empty rows included
    event_index: tuple[np.ndarray, ...]    # each row's events: their indices in the lane (sorted by start)

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @classmethod
    def build(cls, start_us: np.ndarray, duration_us: np.ndarray, depth: np.ndarray | None = None,
              max_rows: int | None = None) -> LaneRows:
        """Split a lane (events sorted by start) into depth rows (``depth`` None: one row) and index
        each row; events deeper than ``max_rows`` rows are not drawn (None keeps all)."""
        start_us, end_us, indices = cls.split(start_us, duration_us, depth, max_rows)
        return cls(tuple(row_index(start_us, end_us, idx) for idx in indices), tuple(indices))

    @staticmethod
    def split(start_us: np.ndarray, duration_us: np.ndarray, depth: np.ndarray | None = None,
              max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(start_us, end_us, the event indices of each depth row): :meth:`build` without the
        RowIndex of each row, which :func:`row_index` makes (the rows may be indexed in parallel)."""
        start_us = np.asarray(start_us, dtype=np.float64)
        end_us = start_us + np.asarray(duration_us, dtype=np.float64)
        itype = index_dtype(start_us.size)
        if depth is None or start_us.size == 0:
            return start_us, end_us, [np.arange(start_us.size, dtype=itype)]
        depth = np.asarray(depth)
        n_rows = int(depth.max()) + 1 if max_rows is None else min(int(depth.max()) + 1, max_rows)
        if n_rows <= SPLIT_PASSES_MAX_ROWS:  # a pass per row beats sorting millions of depths
            return start_us, end_us, [np.flatnonzero(depth == d).astype(itype) for d in range(n_rows)]
        order = np.argsort(depth, kind="stable")  # within a depth the start order is kept
        bounds = np.searchsorted(depth[order], np.arange(n_rows + 1), side="left")
        return start_us, end_us, [order[bounds[d]:bounds[d + 1]].astype(itype) for d in range(n_rows)]


def row_index(start_us: np.ndarray, end_us: np.ndarray, idx: np.ndarray) -> RowIndex:
    """The RowIndex of the events ``idx`` of a lane; all of them (an identity ``idx``) share the
    lane's arrays."""
    if idx.size == start_us.size:   # the whole lane, in order (split keeps the start order)
        return RowIndex(start_us, end_us)
    return RowIndex(start_us[idx], end_us[idx])


def idle_gaps(start_us: np.ndarray, end_us: np.ndarray, min_gap_us: float,
              window: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(gap_start_us, gap_end_us)``: the gaps of at least ``min_gap_us`` between the busy intervals
    of a row (sorted by start; overlapping events are one busy interval). With ``window`` the idle
    time before the first and after the last event inside that window counts as well."""
    s = np.asarray(start_us, dtype=np.float64)
    e = np.asarray(end_us, dtype=np.float64)
    if s.size == 0:
        if window is not None and window[1] - window[0] >= min_gap_us:
            return np.array([window[0]]), np.array([window[1]])
        return _EMPTY_F, _EMPTY_F
    cm = np.maximum.accumulate(e)
    gap_start = cm[:-1]
    gap_end = s[1:]
    if window is not None:
        gap_start = np.concatenate(([window[0]], gap_start, [cm[-1]]))
        gap_end = np.concatenate(([s[0]], gap_end, [window[1]]))
    keep = (gap_end - gap_start) >= min_gap_us
    return gap_start[keep], gap_end[keep]
