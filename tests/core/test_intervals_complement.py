"""Interval complement: the gaps inside a window, clipped, and consistent with union and length."""
from __future__ import annotations

import numpy as np
import pytest

from gpuperf_gui.core.trace.analysis import intervals as iv


def test_complement_is_the_gaps_inside_the_window() -> None:
    s, e = np.array([2.0, 6.0]), np.array([4.0, 12.0])
    gs, ge = iv.complement(s, e, 0.0, 10.0)
    assert (gs.tolist(), ge.tolist()) == ([0.0, 4.0], [2.0, 6.0])
    gs, ge = iv.complement(np.array([-5.0, 20.0]), np.array([1.0, 30.0]), 0.0, 10.0)  # outside: clipped
    assert (gs.tolist(), ge.tolist()) == ([1.0], [10.0])
    gs, ge = iv.complement(np.zeros(0), np.zeros(0), 3.0, 5.0)
    assert (gs.tolist(), ge.tolist()) == ([3.0], [5.0])
    assert iv.complement(np.array([0.0]), np.array([10.0]), 0.0, 10.0)[0].size == 0
    rng = np.random.default_rng(0)
    starts = rng.uniform(-10, 110, 200)
    busy = iv.union(starts, starts + rng.uniform(0, 3, 200))
    gaps = iv.complement(*busy, 0.0, 100.0)
    assert iv.length(*gaps) + iv.length(*iv.clip(*busy, 0.0, 100.0)) == pytest.approx(100.0)
    assert iv.intersection_length(gaps, busy) == 0.0
    assert not hasattr(iv, "gaps") and not hasattr(iv, "subtract_length")
