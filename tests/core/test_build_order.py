"""The builder's O(n) orderings (core/trace/ingest/build.py) against numpy's sorts, their definition."""
from __future__ import annotations

import numpy as np
import pytest

from gpuperf_gui.core.trace.ingest import build
from gpuperf_gui.core.trace.model.nesting import nest
from gpuperf_gui.core.trace.ingest.build import _distinct_codes, _lane_time_order


@pytest.mark.parametrize("in_c", [True, False])
@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_lane_time_order_is_lexsort_by_lane_start_and_longest_first(seed: int, threads: bool, in_c: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if threads:  # big traces sort their lanes on two threads
        monkeypatch.setattr(build, "LANE_THREADS_MIN_EVENTS", 0)
    if not in_c:  # the lanes' rows by numpy, as where the C extension is not built (core/trace/model/nesting/nest.py)
        monkeypatch.setattr(nest, "_nest", None)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 4000))
    lanes = int(rng.integers(1, 120))  # both ways of grouping: a pass per lane (<= 64) and a sort
    lane = rng.integers(0, lanes, n).astype(np.int32)
    ts = np.round(rng.uniform(0, 50, n), int(rng.integers(0, 3)))  # many equal starts
    if seed % 2:
        ts = np.sort(ts)  # nearly sorted, as a trace's lanes are
    ts[rng.integers(0, max(n, 1), n // 10)] = -0.0 if seed % 3 == 0 else 0.0
    dur = np.round(rng.uniform(0, 5, n), int(rng.integers(0, 2)))
    if seed % 5 == 4:  # a lane in reverse start order
        ts = np.sort(ts)[::-1].copy()
    assert np.array_equal(_lane_time_order(lane, ts, dur), np.lexsort((-dur, ts, lane)))
    dropped = lane.copy()
    dropped[rng.random(n) < 0.2] = -1   # events of lanes not kept (-1) are left out
    kept = np.flatnonzero(dropped >= 0)
    expected = kept[np.lexsort((-dur[kept], ts[kept], dropped[kept]))]
    assert np.array_equal(_lane_time_order(dropped, ts, dur), expected)


@pytest.mark.parametrize("bound", [1, 7, 1000, 10**9])
def test_distinct_codes_are_numpys_unique(bound: int) -> None:
    values = np.random.default_rng(bound).integers(0, bound, 5000)
    uniq, inverse = np.unique(values, return_inverse=True)
    got_uniq, got_inverse = _distinct_codes(values, bound)
    assert np.array_equal(got_uniq, uniq) and np.array_equal(got_inverse, inverse.reshape(-1))
