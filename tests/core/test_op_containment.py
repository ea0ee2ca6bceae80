"""The op table's nesting search (binary lifting over a sparse table) against torch's rule written
out as a plain loop: the parent of event i is the latest j < i with end[j] >= end[i] (within the
1 ns slack) and start[i] < end[j]; a profiler-overhead span goes to the latest event starting no
later that ends at or after it and after its start."""
from __future__ import annotations

import numpy as np
import pytest

from gpuperf_gui.core.trace.analysis.optable import CONTAINMENT_SLACK_US, _span_owners, containment_parents


def _torch_parents(start: np.ndarray, dur: np.ndarray) -> list[int]:
    end = start + dur
    out = []
    for i in range(start.size):
        out.append(next((j for j in range(i - 1, -1, -1)
                         if end[j] >= end[i] - CONTAINMENT_SLACK_US and start[i] < end[j]), -1))
    return out


def _owners(start: np.ndarray, dur: np.ndarray, s: np.ndarray, e: np.ndarray) -> list[int]:
    end = start + dur
    return [next((j for j in range(start.size - 1, -1, -1) if start[j] <= a and end[j] >= b and end[j] > a), -1)
            for a, b in zip(s, e)]


def _lane(rng: np.random.Generator, n: int, grid: float) -> tuple[np.ndarray, np.ndarray]:
    """Random spans on a coarse grid (ties, zero lengths, shared ends, overlaps), sorted by start,
    ties longest first as in a Lane."""
    start = np.round(rng.uniform(0, 100, n) / grid) * grid
    dur = np.round(rng.exponential(15, n) / grid) * grid
    dur[rng.random(n) < 0.15] = 0.0
    order = np.lexsort((-dur, start))
    return start[order], dur[order]


@pytest.mark.parametrize("seed", range(40))
def test_parents_are_torchs_on_random_lanes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    start, dur = _lane(rng, int(rng.integers(0, 300)), float(rng.choice([0.5, 1.0, 5.0])))
    assert containment_parents(start, dur).tolist() == _torch_parents(start, dur)


def test_parents_of_a_deep_chain_and_of_siblings() -> None:
    # 64 nested spans, then 64 siblings in the innermost: each searches back past its elder siblings
    start = np.concatenate([np.arange(64.0), 100.0 + np.arange(64.0)])
    dur = np.concatenate([1000.0 - 2 * np.arange(64.0), np.full(64, 0.5)])
    got = containment_parents(start, dur).tolist()
    assert got == _torch_parents(start, dur)
    assert got[:3] == [-1, 0, 1] and got[64:] == [63] * 64


@pytest.mark.parametrize("seed", range(20))
def test_overhead_spans_go_to_the_innermost_enclosing_event(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    start, dur = _lane(rng, int(rng.integers(1, 200)), 1.0)
    s = np.sort(np.round(rng.uniform(-5, 110, 30)))
    e = s + np.round(rng.exponential(3, 30))
    got = _span_owners(start, dur, (s, e), containment_parents(start, dur))
    assert got.tolist() == _owners(start, dur, s, e)
