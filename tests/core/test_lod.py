"""Tests of Tracy-style folding (gpuperf_gui.core.trace.lod); no Qt."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf_gui.core.trace.lod import FoldedRow, RowIndex, fold_row, visible_range


def _reference_fold(starts, ends, view_start, view_end, width_px, min_block_px=3.0, grid_px=None):
    """Plain-Python statement of the folding rule (see lod.py's docstring)."""
    n = len(starts)
    block = min_block_px * (view_end - view_start) / width_px
    grid = None if grid_px is None else grid_px * (view_end - view_start) / width_px

    def cell(s):
        return math.floor((max(s, view_start) - view_start) / grid)
    cm, m = [], -np.inf
    for end in ends:
        m = max(m, end)
        cm.append(m)
    vis = [i for i in range(n) if cm[i] > view_start and starts[i] < view_end]
    if not vis:
        return []
    i0, i1 = vis[0], vis[-1] + 1
    blocks, first = [], i0
    for j in range(i0, i1 - 1):
        key = max(ends[j] - starts[j], ends[j + 1] - starts[j + 1], starts[j + 1] - cm[j])
        if key >= block or (grid is not None and cell(starts[j]) != cell(starts[j + 1])):
            blocks.append((first, j - first + 1))
            first = j + 1
    blocks.append((first, i1 - first))
    return blocks


def _disjoint_row(rng: np.random.Generator, n: int, tiny_fraction: float = 0.9):
    """A realistic row: mostly tiny events, some long ones, gaps of all sizes."""
    dur = np.where(rng.random(n) < tiny_fraction, rng.exponential(2.0, n), rng.exponential(400.0, n))
    gap = rng.exponential(3.0, n) * (rng.random(n) < 0.98) + rng.exponential(500.0, n) * (rng.random(n) < 0.02)
    starts = np.cumsum(gap + np.concatenate(([0.0], dur[:-1])))
    return starts, starts + dur


def test_empty_and_degenerate_inputs():
    empty = np.empty(0)
    assert len(fold_row(empty, empty, 0, 10, 100)) == 0
    s, e = np.array([1.0, 5.0]), np.array([2.0, 6.0])
    assert len(fold_row(s, e, 0, 0, 100)) == 0          # empty window
    assert len(fold_row(s, e, 0, 10, 0)) == 0           # no pixels
    assert len(fold_row(s, e, 20, 30, 100)) == 0        # window after the row
    assert len(fold_row(RowIndex(empty, empty), None, 0, 1, 10)) == 0
    assert isinstance(FoldedRow.empty(), FoldedRow)
    with pytest.raises(TypeError):
        fold_row(s)


def test_wide_events_are_drawn_exactly():
    starts = np.array([0.0, 10.0, 20.0, 35.0])
    ends = np.array([5.0, 18.0, 30.0, 40.0])
    for row in (fold_row(starts, ends, 0.0, 40.0, 400), fold_row(RowIndex(starts, ends), None, 0.0, 40.0, 400)):
        np.testing.assert_array_equal(row.count, [1, 1, 1, 1])
        np.testing.assert_array_equal(row.first, [0, 1, 2, 3])
        np.testing.assert_array_equal(row.start_us, starts)
        np.testing.assert_array_equal(row.end_us, ends)
        assert not row.folded.any()


def test_tiny_neighbours_fold_into_one_block_with_a_count():
    # ten 0.1-wide events 0.1 apart, then one wide event; 1 px = 1 time unit
    starts = np.concatenate((np.arange(10) * 0.2, [10.0]))
    ends = np.concatenate((starts[:10] + 0.1, [30.0]))
    row = fold_row(starts, ends, 0.0, 100.0, 100)
    np.testing.assert_array_equal(row.count, [10, 1])
    gridded = fold_row(starts, ends, 0.0, 100.0, 100, grid_px=1.0)   # a 1-px grid cuts the run
    np.testing.assert_array_equal(gridded.count, [5, 5, 1])
    np.testing.assert_array_equal(row.first, [0, 10])
    assert row.start_us[0] == 0.0 and row.end_us[0] == pytest.approx(3.0)  # widened to 3 px
    assert row.end_us[1] == 30.0


def test_a_large_gap_splits_blocks():
    starts = np.array([0.0, 0.5, 1.0, 50.0, 50.5])
    ends = starts + 0.2
    row = fold_row(starts, ends, 0.0, 100.0, 100)  # 1 px per unit; gap 49 px
    np.testing.assert_array_equal(row.count, [3, 2])


def test_zooming_in_unfolds():
    starts = np.arange(100, dtype=float)
    ends = starts + 0.5
    assert len(fold_row(starts, ends, 0, 100, 30, grid_px=None)) == 1    # all in 30 px
    assert len(fold_row(starts, ends, 0, 100, 30)) == 3                  # cut by the 12-px grid
    row = fold_row(starts, ends, 0, 100, 100_000)
    assert len(row) == 100 and (row.count == 1).all()


def test_visible_range_uses_running_max_of_ends():
    starts = np.array([0.0, 1.0, 2.0])
    ends = np.array([100.0, 1.5, 2.5])       # the first event covers the others
    cm = np.maximum.accumulate(ends)
    assert visible_range(starts, cm, 50.0, 60.0) == (0, 3)
    assert visible_range(starts, cm, 200.0, 300.0) == (3, 3)


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.floats(0, 50, allow_nan=False), st.floats(0, 20, allow_nan=False)),
        min_size=0,
        max_size=40,
    ),
    view=st.tuples(st.floats(-10, 200, allow_nan=False), st.floats(0.01, 300, allow_nan=False)),
    width_px=st.integers(1, 2000),
    grid_px=st.sampled_from([None, 12.0, 5.0]),
)
def test_both_paths_match_the_reference_rule(data, view, width_px, grid_px):
    gaps = np.array([g for g, _ in data], dtype=float)
    durs = np.array([d for _, d in data], dtype=float)
    starts = np.cumsum(gaps) if data else np.empty(0)
    ends = starts + durs
    view_start, view_end = view[0], view[0] + view[1]
    expected = _reference_fold(list(starts), list(ends), view_start, view_end, width_px, grid_px=grid_px)
    for row in (
        fold_row(starts, ends, view_start, view_end, width_px, grid_px=grid_px),
        fold_row(RowIndex(starts, ends), None, view_start, view_end, width_px, grid_px=grid_px),
    ):
        assert list(zip(row.first.tolist(), row.count.tolist())) == expected
        assert (row.end_us >= row.start_us).all()


@pytest.mark.parametrize("zoom", [1.0, 0.1, 0.01, 0.001, 0.0001])
def test_rect_count_is_bounded_by_width(zoom):
    rng = np.random.default_rng(7)
    starts, ends = _disjoint_row(rng, 200_000)
    index = RowIndex(starts, ends)
    total = ends[-1] - starts[0]
    width_px = 1600
    view_start = starts[0] + 0.37 * total * (1 - zoom)
    view_end = view_start + zoom * total
    row = fold_row(index, None, view_start, view_end, width_px)
    row_direct = fold_row(starts, ends, view_start, view_end, width_px)
    np.testing.assert_array_equal(row.first, row_direct.first)
    np.testing.assert_array_equal(row.count, row_direct.count)
    # every visible event is accounted for exactly once
    i0, i1 = visible_range(starts, index.running_max_end, view_start, view_end)
    assert row.count.sum() == i1 - i0
    n_singletons = int((row.count == 1).sum())
    n_folded = len(row) - n_singletons
    assert n_folded <= width_px / 3 + width_px / 12 + 2
    assert len(row) <= 2 * (width_px / 3 + width_px / 12 + 2) + 1
    no_grid = fold_row(index, None, view_start, view_end, width_px, grid_px=None)
    assert int((no_grid.count > 1).sum()) <= width_px / 3 + 2
    assert n_singletons <= width_px / 3 + 2 + n_folded


def test_fast_path_does_not_scan_the_row(monkeypatch):
    """Zoomed out on a long row, folding works from the sorted keys, not the slice."""
    rng = np.random.default_rng(1)
    starts, ends = _disjoint_row(rng, 100_000)
    index = RowIndex(starts, ends)
    import gpuperf_gui.core.trace.lod as lod

    def _boom(*args, **kwargs):
        raise AssertionError("scanned the visible slice")

    monkeypatch.setattr(lod, "_pair_keys", _boom)
    row = fold_row(index, None, starts[0], ends[-1], 1600)
    assert row.count.sum() == 100_000
    assert len(row) <= 1600 / 12 + 1600 / 3 + 2


def test_lane_rows_split_by_depth_and_keep_indices():
    from gpuperf_gui.core.trace.lod import LaneRows

    start = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    dur = np.array([9.0, 0.5, 3.0, 5.0, 1.0])
    depth = np.array([0, 1, 1, 0, 1], dtype=np.int16)
    rows = LaneRows.build(start, dur, depth)
    assert rows.n_rows == 2
    np.testing.assert_array_equal(rows.event_index[0], [0, 3])
    np.testing.assert_array_equal(rows.event_index[1], [1, 2, 4])
    np.testing.assert_array_equal(rows.rows[1].starts, [1.0, 2.0, 11.0])
    assert LaneRows.build(start, dur, depth, max_rows=1).n_rows == 1
    assert LaneRows.build(start, dur).n_rows == 1


def test_idle_gaps_merge_overlaps_and_respect_threshold():
    from gpuperf_gui.core.trace.lod import idle_gaps

    s = np.array([0.0, 2.0, 3.0, 20.0])
    e = np.array([5.0, 4.0, 6.0, 25.0])
    gs, ge = idle_gaps(s, e, 10.0)
    np.testing.assert_array_equal(gs, [6.0])
    np.testing.assert_array_equal(ge, [20.0])
    gs, ge = idle_gaps(s, e, 10.0, window=(-20.0, 40.0))
    np.testing.assert_array_equal(gs, [-20.0, 6.0, 25.0])
    np.testing.assert_array_equal(ge, [0.0, 20.0, 40.0])
    gs, _ = idle_gaps(np.empty(0), np.empty(0), 1.0, window=(0.0, 5.0))
    assert gs.tolist() == [0.0]


def test_busy_time_and_density_of_folded_blocks():
    # 100 events of 1 unit every 10 units: a block 10 % busy when zoomed out
    starts = np.arange(100) * 10.0
    ends = starts + 1.0
    for row in (fold_row(starts, ends, 0, 1000, 50, grid_px=None),
                fold_row(RowIndex(starts, ends), None, 0, 1000, 50, grid_px=None)):
        assert len(row) == 1
        assert row.busy_us[0] == pytest.approx(100.0)
        assert row.density()[0] == pytest.approx(100.0 / 991.0)
    wide = fold_row(starts, ends, 0, 20, 2000)           # zoomed in: single events, fully busy
    assert (wide.density() == 1.0).all()
    np.testing.assert_allclose(wide.busy_us, 1.0)
