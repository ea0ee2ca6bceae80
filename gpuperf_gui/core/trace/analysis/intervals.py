"""Interval arithmetic on numpy arrays: unions, intersections, complements, clipping (all times in µs)."""
from __future__ import annotations

import numpy as np

Spans = tuple[np.ndarray, np.ndarray]
"""Intervals as (starts, ends) arrays."""


def union(starts: np.ndarray, ends: np.ndarray) -> Spans:
    """Merge possibly overlapping intervals into sorted disjoint ``(starts, ends)``."""
    if starts.size == 0:
        return np.zeros(0), np.zeros(0)
    s, e = sorted_by(starts, ends)
    e = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], e[last]


def sorted_by(keys: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """``keys`` and ``others`` in the stable order of ``keys``; as given (no sort, no copy) when
    ``keys`` never decrease already (one device stream's starts; a NaN fails the test and sorts)."""
    if np.all(keys[1:] >= keys[:-1]):
        return (keys, *others)
    order = np.argsort(keys, kind="stable")
    return (keys[order], *(a[order] for a in others))


def length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of disjoint intervals."""
    return float(np.sum(ends - starts))


def clip(starts: np.ndarray, ends: np.ndarray, t0: float, t1: float) -> Spans:
    """Clip intervals to ``[t0, t1]``, dropping those outside."""
    s = np.maximum(starts, t0)
    e = np.minimum(ends, t1)
    keep = e > s
    return s[keep], e[keep]


def intersection_length(a: Spans, b: Spans) -> float:
    """Length of the intersection of two sets of *disjoint* intervals (HTA's +1/+2 sweep)."""
    if a[0].size == 0 or b[0].size == 0:
        return 0.0
    t = np.concatenate([a[0], a[1], b[0], b[1]])
    w = np.concatenate([np.ones(a[0].size), -np.ones(a[1].size),
                        2 * np.ones(b[0].size), -2 * np.ones(b[1].size)])
    order = np.argsort(t, kind="stable")
    t, w = t[order], w[order]
    level = np.cumsum(w)
    both = level[:-1] == 3
    return float(np.sum(np.diff(t)[both]))


def clip_each(spans: Spans, windows: list[tuple[float, float]]) -> list[Spans]:
    """Disjoint sorted ``spans`` clipped to each of ``windows``, each reading only the intervals that
    can reach into it (ending after its start, starting before its end)."""
    s, e = spans
    lo = np.searchsorted(e, [w0 for w0, _ in windows], side="right").tolist()
    hi = np.searchsorted(s, [w1 for _, w1 in windows], side="left").tolist()
    return [clip(s[a:z], e[a:z], w0, w1) for a, z, (w0, w1) in zip(lo, hi, windows)]


def complement(starts: np.ndarray, ends: np.ndarray, t0: float, t1: float) -> Spans:
    """The gaps of disjoint sorted intervals (as :func:`union` returns them) inside ``[t0, t1]``.

    Intervals reaching outside the window are clipped first; empty gaps are dropped.

    >>> complement(np.array([2.0, 6.0]), np.array([4.0, 12.0]), 0.0, 10.0)
    (array([0., 4.]), array([2., 6.]))
    """
    s, e = clip(starts, ends, t0, t1)
    gap_starts = np.concatenate([[t0], e])
    gap_ends = np.concatenate([s, [t1]])
    keep = gap_ends > gap_starts
    return gap_starts[keep], gap_ends[keep]


def covered_before(b: Spans, t: np.ndarray) -> np.ndarray:
    """The length of the disjoint sorted intervals ``b`` (at least one) before each time in ``t``."""
    bs, be = b
    cum = np.concatenate([[0.0], np.cumsum(be - bs)])
    k = np.searchsorted(bs, t, side="right")  # intervals starting at or before t
    last = np.maximum(k - 1, 0)
    partial = np.where(k > 0, np.clip(t - bs[last], 0.0, be[last] - bs[last]), 0.0)
    return cum[last] * (k > 0) + partial


def overlap_each(gs: np.ndarray, ge: np.ndarray, b: Spans) -> np.ndarray:
    """For each interval ``[gs[i], ge[i]]``, its overlap with the disjoint sorted intervals ``b``.

    >>> overlap_each(np.array([0.0, 5.0]), np.array([4.0, 9.0]), (np.array([1.0, 6.0]), np.array([2.0, 8.0])))
    array([1., 2.])
    """
    if b[0].size == 0 or gs.size == 0:
        return np.zeros(gs.size)
    return np.maximum(covered_before(b, ge) - covered_before(b, gs), 0.0)
