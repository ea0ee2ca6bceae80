"""The op table's one-pass nesting (``_nest.c`` through core/trace/model/nesting/nest.py) against its numpy version.

The C extension is optional, as the scanner is: where it is not built (no compiler) the numpy passes
of core/trace/analysis/optable.py run, and both must give the same arrays bit for bit. The parents are also
checked against torch's rule written out as a loop (test_op_containment.py), the sums against
``np.add.at`` one addition at a time, and the op table and roofline points of real traces with the
extension against the same without it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.model.nesting import nest
from gpuperf_gui.core.trace.analysis import optable
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.analysis.op_points import op_table_and_points

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_op_containment import _lane, _torch_parents  # noqa: E402

pytestmark = pytest.mark.skipif(nest._nest is None, reason="the nesting extension is not built (no C compiler)")
DATA = Path(__file__).resolve().parents[1] / "data"
BUILT = nest._nest


def _both(monkeypatch: pytest.MonkeyPatch, fn, *args):  # noqa: ANN001, ANN202
    """``fn(*args)`` with the extension, then with numpy alone."""
    monkeypatch.setattr(nest, "_nest", BUILT)
    fast = fn(*args)
    monkeypatch.setattr(nest, "_nest", None)
    slow = fn(*args)
    monkeypatch.setattr(nest, "_nest", BUILT)
    return fast, slow


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(30))
def test_parents_levels_and_subtree_sums_are_numpys(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    start, dur = _lane(rng, int(rng.integers(0, 400)), float(rng.choice([0.001, 0.5, 1.0, 5.0])))
    if seed % 3 == 0:  # near 5e12 µs a double steps by ~0.001 µs: ends within the slack
        start = start + 5e12
    parent, numpy_parent = _both(monkeypatch, optable.containment_parents, start, dur)
    assert _same(parent, numpy_parent)
    assert parent.tolist() == _torch_parents(start, dur)
    level, numpy_level = _both(monkeypatch, optable._levels, parent)
    assert _same(level, numpy_level)
    own = rng.exponential(1.0, parent.size) * 10.0 ** rng.integers(-6, 7, parent.size)
    own[rng.random(parent.size) < 0.5] = 0.0
    sums, numpy_sums = _both(monkeypatch, optable._subtree_sums, own, parent, level)
    assert _same(sums, numpy_sums)
    wide, _ = _both(monkeypatch, optable._subtree_sums, own, parent.astype(np.int64), level)
    assert _same(wide, sums)


def test_subtree_sums_add_each_nodes_children_in_row_order() -> None:
    # 0 -> (1 -> 2, 3): node 0 adds 1's total, then 3's; node 1 adds 2's. In the other order node 0
    # would read 1.5 ((1e16 + -1e16) + 1.5); in this one 1e16 + 1.5 rounds to 1e16 + 2 first.
    own = np.array([1e16, 1.0, 0.5, -1e16])
    parent = np.array([-1, 0, 1, 0], dtype=np.int32)
    assert nest.subtree_sums(own, parent).tolist() == [2.0, 1.5, 0.5, -1e16]


def test_a_parent_after_its_child_is_left_to_numpy() -> None:
    parent = np.array([1, -1], dtype=np.int32)
    assert nest.levels(parent) is None
    assert nest.subtree_sums(np.ones(2), parent) is None


@pytest.mark.parametrize("seed", range(20))
def test_add_at_is_add_at_one_addition_at_a_time(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1000 + seed)
    m, k = int(rng.integers(1, 40)), int(rng.integers(0, 300))
    target = rng.random(m) * (rng.random(m) < 0.5)
    target[rng.integers(0, m)] = (np.nan, -0.0, 3.0)[seed % 3]
    index = rng.integers(0, m, k).astype((np.int32, np.int64)[seed % 2])
    values = rng.exponential(1.0, k) * 10.0 ** rng.integers(-8, 9, k)
    fast, numpy_sums = _both(monkeypatch, optable.add_at, target, index, values)
    assert _same(fast, numpy_sums)
    expected = np.where(target != 0, target, 0.0)   # bincount starts at 0.0: a -0.0 target reads 0.0
    np.add.at(expected, index, values)
    assert _same(fast, expected)
    parent = rng.integers(-1, m, k)
    kept = parent >= 0
    assert _same(nest.add_at(target, parent, values, skip_negative=True),
                 optable.add_at(target, parent[kept], values[kept]))


def test_add_at_out_of_range_is_left_to_numpy() -> None:
    assert nest.add_at(np.zeros(3), np.array([3]), np.array([1.0])) is None
    assert nest.add_at(np.zeros(3), np.array([-1]), np.array([1.0])) is None


@pytest.mark.parametrize("name", ["h200/eager_small.json.gz", "h200/compiled_tiny_cudagraphs.json.gz",
                                  "h200/data_starved_python.json.gz",
                                  "shared_traces/h200/healthy_gpt_small.json.gz"])  # with overhead spans
def test_op_table_and_points_of_real_traces_are_the_numpy_ones(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = load_rank(DATA / name)
    fast, slow = _both(monkeypatch, op_table_and_points, rt)
    assert fast[0] and repr(fast) == repr(slow)
