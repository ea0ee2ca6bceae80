"""The nesting of a lane's events in one pass (``_nest.c``), where the extension is built: the op
table's parents, levels, subtree sums and sums by name, and the lanes' depths.

Each function returns None where it does not run (the package installs without a compiler, an
array too long for int32 indices, a parent that does not precede its child): the caller then runs
its numpy version (:mod:`.optable`), which gives the same arrays (tests/core/test_nest.py).
"""
from __future__ import annotations

import numpy as np

try:
    from . import _nest
except ImportError:  # built without a C compiler: the numpy passes of optable
    _nest = None

_MAX_ROWS = 2**31 - 1
"""int32 row indices (the numpy versions switch to int64 beyond them)."""


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def enclosing_events(end: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray | None:
    """:func:`.optable._enclosing_events` (int32 parents), by one stack walk."""
    n = end.size
    if _nest is None or n >= _MAX_ROWS:
        return None
    parent = np.empty(n, dtype=np.int32)
    _nest.enclosing(_f64(end), _f64(q_start), _f64(q_end), parent)
    return parent


def levels(parent: np.ndarray) -> np.ndarray | None:
    """:func:`.optable._levels` (int32), one forward pass."""
    if _nest is None or parent.size >= _MAX_ROWS:
        return None
    level = np.empty(parent.size, dtype=np.int32)
    return level if _nest.levels(np.ascontiguousarray(parent, dtype=np.int32), level) else None


def subtree_sums(own: np.ndarray, parent: np.ndarray) -> np.ndarray | None:
    """:func:`.optable._subtree_sums`, the same additions in the same order, one backward pass."""
    if _nest is None or parent.size >= _MAX_ROWS:
        return None
    total = np.empty(own.size, dtype=np.float64)
    ok = _nest.subtree_sums(_f64(own), np.ascontiguousarray(parent, dtype=np.int32), total)
    return total if ok else None


def add_at(target: np.ndarray, index: np.ndarray, values: np.ndarray, skip_negative: bool = False
           ) -> np.ndarray | None:
    """:func:`.optable.add_at` (a float64 ``target``) in one pass; ``skip_negative``: entries
    whose index is negative left out (None where an index is out of range)."""
    if _nest is None:
        return None
    if index.dtype not in (np.int32, np.int64):
        index = index.astype(np.int64)
    out = np.empty(target.size, dtype=np.float64)
    ok = _nest.add_at(_f64(target), np.ascontiguousarray(index), _f64(values), out, skip_negative)
    return out if ok else None


def depths(start: np.ndarray, sorted_ends: np.ndarray) -> np.ndarray | None:
    """:func:`.build._depths` of a lane (``start`` sorted, ``sorted_ends`` its ends sorted) by one
    merge of the two arrays, not a binary search per start."""
    if _nest is None:
        return None
    depth = np.empty(start.size, dtype=np.int16)
    ok = _nest.depths(_f64(start), _f64(sorted_ends), depth)
    return depth if ok else None


def rows_by_lane(lane: np.ndarray, n_lanes: int) -> list[np.ndarray] | None:
    """``[np.flatnonzero(lane == k) for k in range(n_lanes)]`` (``lane`` int32, -1: no lane) by
    one counting sort: two passes whatever the number of lanes."""
    if _nest is None or lane.dtype != np.int32:
        return None
    counts = np.empty(n_lanes, dtype=np.int64)
    if not _nest.lane_counts(np.ascontiguousarray(lane), counts):
        return None
    bounds = np.concatenate([[0], np.cumsum(counts)])
    rows = np.empty(int(bounds[-1]), dtype=np.int64)
    if not _nest.lane_rows(np.ascontiguousarray(lane), bounds[:-1].copy(), rows):
        return None
    return [rows[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def lane_keys(role_base: np.ndarray, cat: np.ndarray, pid: np.ndarray, tid: np.ndarray, n_tids: int,
              bound: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each event's lane key ``role_base[cat] + pid * n_tids + tid`` (int32) and which keys below
    ``bound`` occur (bool), in one pass."""
    if _nest is None or bound >= 2**31 or any(a.dtype != np.int32 for a in (cat, pid, tid)):
        return None
    packed = np.empty(cat.size, dtype=np.int32)
    present = np.zeros(bound, dtype=np.uint8)
    ok = _nest.lane_keys(np.ascontiguousarray(role_base, dtype=np.int64), np.ascontiguousarray(cat),
                         np.ascontiguousarray(pid), np.ascontiguousarray(tid), n_tids, packed, present)
    return (packed, present.view(bool)) if ok else None
