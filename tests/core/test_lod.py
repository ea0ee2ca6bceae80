"""Tests of Tracy-style folding (gpuperf_gui.core.trace.model.lod); no Qt."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuperf_gui.core.trace.model.lod import FoldedRow, RowIndex, fold_row, refold_row, visible_range


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
        assert not (row.count > 1).any()


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
    import gpuperf_gui.core.trace.model.lod as lod

    def _boom(*args, **kwargs):
        raise AssertionError("scanned the visible slice")

    monkeypatch.setattr(lod, "_pair_keys", _boom)
    row = fold_row(index, None, starts[0], ends[-1], 1600)
    assert row.count.sum() == 100_000
    assert len(row) <= 1600 / 12 + 1600 / 3 + 2


def test_lane_rows_split_by_depth_and_keep_indices():
    from gpuperf_gui.core.trace.model.lod import LaneRows

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


@pytest.mark.parametrize("deepest", [3, 31, 32, 33, 200])
def test_lane_rows_split_is_a_stable_sort_by_depth(deepest: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of splitting (a pass per row, a sort of the depths) give numpy's stable grouping."""
    from gpuperf_gui.core.trace.model import lod

    rng = np.random.default_rng(deepest)
    depth = rng.integers(0, deepest + 1, 5000).astype(np.int16)
    start = np.sort(rng.uniform(0, 100, 5000))
    order = np.argsort(depth, kind="stable")
    want = [order[depth[order] == d] for d in range(deepest + 1)]
    for passes_up_to in (0, 1000):
        monkeypatch.setattr(lod, "SPLIT_PASSES_MAX_ROWS", passes_up_to)
        _, _, rows = lod.LaneRows.split(start, np.ones(5000), depth, max_rows=None)
        assert [r.tolist() for r in rows] == [w.tolist() for w in want]
        _, _, capped = lod.LaneRows.split(start, np.ones(5000), depth, max_rows=2)
        assert [r.tolist() for r in capped] == [w.tolist() for w in want[:2]]


def test_idle_gaps_merge_overlaps_and_respect_threshold():
    from gpuperf_gui.core.trace.model.lod import idle_gaps

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


# --- the max-tree of pair keys in RowIndex: its query must be a scan of the keys, exactly ---

def _keys_by_the_rule(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """key[j] of the module docstring, written out here (not lod's helper)."""
    duration = ends - starts
    cm = np.maximum.accumulate(ends)
    return np.maximum(np.maximum(duration[:-1], duration[1:]), starts[1:] - cm[:-1])


def _rows_of_all_shapes(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Short rows around the leaf and node sizes, rows of equal keys, overlapping and long rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in (0, 1, 2, 3, 15, 16, 17, 18, 33, 255, 256, 257, 4097, 9000):
        rows.append(_disjoint_row(rng, n))
    grid = np.arange(3000, dtype=float)                       # every key 1.0: all equal
    rows.append((grid, grid + 1.0))
    ints = np.cumsum(rng.integers(0, 3, 5000)).astype(float)  # integer times: many equal keys
    rows.append((ints, ints + rng.integers(0, 4, 5000)))
    nested = np.sort(rng.uniform(0, 1000, 20000))             # overlapping events, long ones
    rows.append((nested, nested + rng.exponential(5.0, 20000) * (1 + 100 * (rng.random(20000) < 0.01))))
    return rows


def _thresholds(key: np.ndarray, rng: np.random.Generator) -> list[float]:
    if key.size == 0:
        return [0.0, 1.0]
    picked = rng.choice(key, size=min(6, key.size))           # ties with existing keys
    return [-np.inf, 0.0, float(key.max()), float(np.nextafter(key.max(), np.inf)), np.inf,
            *map(float, picked), *map(float, np.nextafter(picked, -np.inf)),
            *map(float, np.quantile(key, [0.5, 0.9, 0.99, 0.999]))]


def _windows(n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    fixed = [(0, n), (0, 0), (0, 1), (0, 2), (n - 1, n), (1, n - 1), (17, 18), (15, 49), (n, n)]
    drawn = [tuple(sorted(rng.integers(0, n + 1, 2).tolist())) for _ in range(12)]
    return [(i0, i1) for i0, i1 in fixed + drawn if 0 <= i0 <= i1 <= n]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_query_equals_a_scan_of_the_keys(seed):
    rng = np.random.default_rng(seed)
    for starts, ends in _rows_of_all_shapes(seed):
        index = RowIndex(starts, ends)
        key = _keys_by_the_rule(starts, ends) if starts.size > 1 else np.empty(0)
        for threshold in _thresholds(key, rng):
            at = np.flatnonzero(key >= threshold)[:1].tolist()   # windows ending/starting there
            edges = [(j - 20, j + 1) for j in at] + [(j - 20, j + 2) for j in at] + [(j, j + 30) for j in at]
            for i0, i1 in _windows(starts.size, rng) + [(max(a, 0), min(b, starts.size)) for a, b in edges]:
                expected = np.flatnonzero(key[i0:max(i1 - 1, i0)] >= threshold) + i0
                got = index.breaks(i0, i1, threshold)
                assert got is not None and got.dtype == np.int64
                context = f"n={starts.size} {i0}:{i1} T={threshold}"
                np.testing.assert_array_equal(got, expected, err_msg=context)
                limited = index.breaks(i0, i1, threshold, max_checked=64)   # gives up, or is exact
                if limited is not None:
                    np.testing.assert_array_equal(limited, expected)


def test_tree_query_descends_many_levels_of_a_long_row():
    rng = np.random.default_rng(11)
    starts, ends = _disjoint_row(rng, 600_000)                # 600k keys: 4 levels above the leaves
    index = RowIndex(starts, ends)
    key = _keys_by_the_rule(starts, ends)
    ranked = np.sort(key)
    # keys themselves (ties at every level of the tree), below and above the sorted top keys
    for threshold in (*ranked[[-1, -3, -600, -3000, -30_000]], float(np.quantile(key, 0.99)), 100.0):
        for i0, i1 in ((0, 600_000), (12_345, 598_761), (200_001, 200_001 + 140_000), (5, 9000)):
            expected = np.flatnonzero(key[i0:i1 - 1] >= threshold) + i0
            np.testing.assert_array_equal(index.breaks(i0, i1, threshold), expected)
    # dense boundaries: a small budget gives up instead of answering in part
    assert index.breaks(0, 600_000, 0.0, max_checked=10_000) is None


def test_tree_levels_are_block_maxima_of_the_keys():
    rng = np.random.default_rng(5)
    starts, ends = _disjoint_row(rng, 5000)
    index = RowIndex(starts, ends)
    key = _keys_by_the_rule(starts, ends)
    leaves = [key[i:i + 16].max() for i in range(0, key.size, 16)]
    np.testing.assert_array_equal(index.key_max_tree[:len(leaves)], leaves)
    assert index.key_max_tree[-1] == key.max()                # the root
    assert index.key_max_tree.dtype == np.float64
    assert index.key_max_tree.nbytes <= starts.size           # under a byte an event
    top = np.sort(key)[-(key.size // 128):]                   # the largest keys, by a sort
    top = top[top > index.top_floor]
    np.testing.assert_array_equal(index.top_keys, top)
    np.testing.assert_array_equal(key[index.top_index], top)
    assert index.top_floor == np.sort(key)[-(key.size // 128)]
    assert RowIndex(starts[:1], ends[:1]).key_max_tree.size == 0


_FOLD_FIELDS = ("start_us", "end_us", "count", "first", "busy_us", "last_end_us")


def _assert_same_fold(a: FoldedRow, b: FoldedRow, context: str, exact_busy: bool = True) -> None:
    for name in _FOLD_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, f"{context}: {name} dtype"
        if name == "busy_us" and not exact_busy:
            # the index sums durations from the row's start, the direct path from the window's:
            # the same sums, rounded differently
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9 * float(np.abs(y).max(initial=1.0)))
        else:
            np.testing.assert_array_equal(x, y, err_msg=f"{context}: {name}")


_TREE_SETTINGS = {"default": None, "always_descend": (0, 1e9), "always_give_up": (0, 0.0)}
"""(TREE_MIN_EVENTS, TREE_MAX_CHECKED) forcing each path of fold_row with a RowIndex."""


def test_indexed_fold_equals_direct_fold(monkeypatch):
    """fold_row(RowIndex) on each of its paths against fold_row(starts, ends) (keys of the
    visible slice), array by array, at many zooms and windows."""
    import gpuperf_gui.core.trace.model.lod as lod

    defaults = (lod.TREE_MIN_EVENTS, lod.TREE_MAX_CHECKED)
    answers = {"tree": 0, "gave up": 0}
    query = RowIndex.breaks

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        got = query(self, *args, **kwargs)
        answers["gave up" if got is None else "tree"] += 1
        return got

    monkeypatch.setattr(RowIndex, "breaks", counted)
    rng = np.random.default_rng(3)
    for starts, ends in _rows_of_all_shapes(3) + [_disjoint_row(rng, 100_000)]:
        if starts.size == 0:
            continue
        index = RowIndex(starts, ends)
        t0, total = float(starts[0]), max(float(ends.max() - starts[0]), 1.0)
        for zoom in (2.0, 1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5):
            for where in (-0.1, 0.0, 0.37, 0.5, 1.0):
                vs = t0 + where * total * (1 - min(zoom, 1.0))
                ve = vs + zoom * total
                for width_px, grid_px in ((1600, 12.0), (1600, None), (333, 5.0)):
                    context = f"n={starts.size} zoom={zoom} at {where} {width_px}px grid={grid_px}"
                    direct = fold_row(starts, ends, vs, ve, width_px, grid_px=grid_px)
                    folds = {}
                    for name, setting in _TREE_SETTINGS.items():
                        min_events, max_checked = setting or defaults
                        monkeypatch.setattr(lod, "TREE_MIN_EVENTS", min_events)
                        monkeypatch.setattr(lod, "TREE_MAX_CHECKED", max_checked)
                        folds[name] = fold_row(index, None, vs, ve, width_px, grid_px=grid_px)
                    for name, row in folds.items():
                        _assert_same_fold(row, folds["default"], f"{context} {name}")
                        _assert_same_fold(row, direct, f"{context} {name} vs direct", exact_busy=False)
    assert answers["tree"] > 500 and answers["gave up"] > 500   # both paths were compared


def test_row_index_pickles_out_of_band():
    """The loading helper sends RowIndex by pickle protocol 5, arrays out of band (child_stream)."""
    import pickle

    rng = np.random.default_rng(8)
    starts, ends = _disjoint_row(rng, 50_000)
    index = RowIndex(starts, ends)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(index, protocol=5, buffer_callback=buffers.append)
    back = pickle.loads(data, buffers=buffers)
    arrays = [name for name in RowIndex.__slots__ if isinstance(getattr(index, name), np.ndarray)]
    assert len(buffers) == len(arrays) >= 5                   # every array out of band
    for name in RowIndex.__slots__:
        np.testing.assert_array_equal(getattr(back, name), getattr(index, name), err_msg=name)
    _assert_same_fold(fold_row(back, None, starts[0], ends[-1], 1600),
                      fold_row(index, None, starts[0], ends[-1], 1600), "unpickled")


def _assert_refold_equals_fold(again, fresh):
    for name in ("first", "count", "busy_us", "last_end_us", "start_us"):
        np.testing.assert_array_equal(getattr(again, name), getattr(fresh, name), err_msg=name)
    # a kept fold's widening is that of a block width equal to 1e-9 of itself (refold_row)
    np.testing.assert_allclose(again.end_us, fresh.end_us, rtol=0, atol=1e-9 * max(fresh.end_us.max(initial=0), 1))


@settings(max_examples=120, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.floats(0, 50, allow_nan=False), st.floats(0, 20, allow_nan=False)),
        min_size=0,
        max_size=40,
    ),
    view=st.tuples(st.floats(-10, 200, allow_nan=False), st.floats(0.01, 300, allow_nan=False)),
    width_px=st.integers(1, 2000),
    moves=st.lists(st.tuples(st.sampled_from(["pan", "zoom"]), st.floats(-0.5, 0.5, allow_nan=False)),
                   min_size=1, max_size=6),
)
def test_refold_row_equals_a_fresh_fold_after_pans_and_zooms(data, view, width_px, moves):
    gaps = np.array([g for g, _ in data], dtype=float)
    durs = np.array([d for _, d in data], dtype=float)
    starts = np.cumsum(gaps) if data else np.empty(0)
    index = RowIndex(starts, starts + durs)
    x0, x1 = view[0], view[0] + view[1]
    folded = fold_row(index, None, x0, x1, width_px)
    for kind, amount in moves:   # the timeline's A/D pans and W/S zooms
        d = (x1 - x0) * amount
        x0, x1 = (x0 + d, x1 + d) if kind == "pan" else (x0 + d / 2, x1 - d / 2)
        folded = refold_row(index, folded, x0, x1, width_px)
        _assert_refold_equals_fold(folded, fold_row(index, None, x0, x1, width_px))


def test_refold_row_keeps_the_fold_of_a_pan_over_the_same_wide_events():
    starts = np.array([0.0, 100.0, 200.0, 300.0])
    index = RowIndex(starts, starts + 50.0)   # 50 µs events 50 µs apart: ~100 px each, none folded
    first = fold_row(index, None, -10.0, 400.0, 800)
    assert first.apart == (0, 4, pytest.approx(3.0 * 410.0 / 800))
    assert refold_row(index, first, -5.0, 405.0, 800) is first       # same events, same zoom: kept
    moved = refold_row(index, first, 120.0, 530.0, 800)               # the first left the view
    assert moved is not first and moved.first.tolist() == [1, 2, 3]
    zoomed = refold_row(index, first, -10.0, 300.0, 800)              # another block width: folded again
    assert zoomed is not first
    tiny = RowIndex(np.array([0.0, 0.1, 0.2]), np.array([0.05, 0.15, 0.25]))
    packed = fold_row(tiny, None, 0.0, 400.0, 800)                     # one folded block: never kept
    assert packed.apart is None and refold_row(tiny, packed, 0.0, 400.0, 800) is not packed
