"""The faster post-load paths give the figures of the plain ones, bit for bit.

* :func:`optable.add_at` against numpy's own ``np.add.at`` (the oracle), onto a target with values;
* :func:`optable._subtree_sums` against the level-by-level ``np.add.at`` loop it replaced;
* the engine's op table with its roofline points (:func:`op_points.op_table_and_points`, the points
  from the table's rows) against the op table and :func:`op_points.op_points` found apart, on a
  trace whose profiler-overhead span keeps a same-name child apart in the table only, and on the
  H200 traces (one with 57 overhead spans);
* the vectorised launch-free stretches against the gap-by-gap loop, and interval unions (sorted
  input skips the sort) against a plain merge loop.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.analysis import intervals as iv
from gpuperf_gui.core.trace.analysis.rank_analysis import LAUNCH_SPACING_MAX_US, _launch_free_stretches, _may_overlap
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.analysis.op_points import op_points, op_table_and_points
from gpuperf_gui.core.trace.analysis.optable import (CONTAINMENT_SLACK_US, _levels, _subtree_sums, add_at,
                                                     containment_parents, op_table)


@pytest.mark.parametrize("seed", range(10))
def test_add_at_is_np_add_at_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    target = rng.exponential(1e3, n) * (rng.random(n) < 0.5)  # half zeros, half values
    target[rng.random(n) < 0.1] = np.nan
    index = rng.integers(0, n, 500)
    values = rng.exponential(1e3, 500) * 10.0 ** rng.integers(-6, 9, 500)  # sums that round
    want = target.copy()
    np.add.at(want, index, values)
    got = add_at(target, index, values)
    assert got.tobytes() == want.tobytes()
    assert np.isnan(target).sum() == np.isnan(got).sum() or not n  # the target itself is left alone


@pytest.mark.parametrize("seed", range(10))
def test_subtree_sums_are_the_level_loops(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(1, 400))
    start = np.sort(np.round(rng.uniform(0, 100, n)))
    dur = np.round(rng.exponential(20, n))
    parent = containment_parents(start, dur)
    level = _levels(parent)
    own = rng.exponential(1e3, n) * 10.0 ** rng.integers(-6, 9, n) * (rng.random(n) < 0.7)
    want = own.copy()
    for d in range(int(level.max()), 0, -1):
        at = np.flatnonzero(level == d)
        np.add.at(want, parent[at], want[at])
    assert _subtree_sums(own, parent, level).tobytes() == want.tobytes()


def _op(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _mm(ts: float, dur: float) -> dict:
    return _op("aten::mm", ts, dur, **{"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"],
                                       "External id": 1})


def _launch(corr: int, ts: float, dur: float) -> list[dict]:
    return [_op("cudaLaunchKernel", ts, 1, "cuda_runtime", correlation=corr, **{"External id": 1}),
            {"ph": "X", "cat": "kernel", "name": f"gemm{corr}", "pid": 0, "tid": 7, "ts": ts + 2, "dur": dur,
             "args": {"correlation": corr, "device": 0, "stream": 7, "External id": 1}}]


def test_points_with_the_table_are_the_points_alone(tmp_path: Path) -> None:
    """aten::mm(0-100) > aten::mm(10-60) > launch, plus a profiler-overhead span at 70-80 inside the
    outer mm only: in the table the overhead span is the outer mm's second child, so the inner mm
    stays a call of its own; the points, which read no overhead, collapse the chain into one call."""
    events = [_op("ProfilerStep#1", 0, 300, "user_annotation"), _mm(0, 100), _mm(10, 50), *_launch(1, 20, 9),
              {"ph": "X", "cat": "overhead", "name": "Command Buffer Full", "pid": -1, "tid": 0, "ts": 70, "dur": 10},
              _mm(150, 40), *_launch(2, 160, 5)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    ops, points = op_table_and_points(load_rank(path))
    alone = op_points(load_rank(path))
    assert points == alone
    assert ops == op_table(load_rank(path))
    (mm,) = [r for r in ops if r.name == "aten::mm"]
    assert mm.calls == 3  # the overhead span keeps the first chain apart in the table
    (point,) = points
    assert point.calls == 2 and point.seconds == pytest.approx(14e-6)  # 9 + 5 µs of gemm
    assert point.flops == pytest.approx(2 * 2 * 64 * 128 * 256)


@pytest.mark.parametrize("name", ["shared_traces/h200/healthy_gpt_small.json.gz", "h200/attention.json.gz",
                                  "h200/compiled_tiny_cudagraphs.json.gz", "h200/eager_small.json.gz"])
def test_points_with_the_table_on_h200_traces(name: str) -> None:
    path = Path(__file__).resolve().parents[1] / "data" / name
    if not path.exists():
        pytest.skip(f"{name} not in this checkout")
    ops, points = op_table_and_points(load_rank(path))
    assert points == op_points(load_rank(path))
    assert ops == op_table(load_rank(path))


def _stretches_by_gap(gs: np.ndarray, ge: np.ndarray, calls: np.ndarray) -> tuple[list, list, list]:
    """The launch-free stretches gap by gap, as a loop (the rule of analysis._launch_free_stretches)."""
    out_s, out_e, out_i = [], [], []
    for i in range(gs.size):
        if ge[i] - gs[i] <= LAUNCH_SPACING_MAX_US:
            continue
        points = [gs[i], *[c for c in calls if gs[i] <= c <= ge[i]], ge[i]]
        for a, b in zip(points, points[1:]):
            if b - a > LAUNCH_SPACING_MAX_US:
                out_s.append(a), out_e.append(b), out_i.append(i)
    return out_s, out_e, out_i


@pytest.mark.parametrize("seed", range(20))
def test_launch_free_stretches_are_the_loops(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    gs = np.sort(rng.uniform(0, 20_000, int(rng.integers(0, 30))))
    ge = gs + rng.exponential(600, gs.size)
    calls = np.sort(np.round(rng.uniform(0, 21_000, int(rng.integers(0, 200)))))
    if rng.random() < 0.3 and gs.size:
        calls = np.sort(np.concatenate([calls, gs[:3], ge[-3:]]))  # calls exactly at gap ends
    s, e, i = _launch_free_stretches(gs, ge, calls)
    want = _stretches_by_gap(gs, ge, calls)
    assert (s.tolist(), e.tolist(), i.tolist()) == want
    assert i.dtype == np.int64


def _merged_by_loop(starts: list[float], ends: list[float]) -> tuple[list[float], list[float]]:
    out_s: list[float] = []
    out_e: list[float] = []
    for s, e in sorted(zip(starts, ends), key=lambda se: se[0]):
        if out_s and s <= out_e[-1]:
            out_e[-1] = max(out_e[-1], e)
        else:
            out_s.append(s), out_e.append(e)
    return out_s, out_e


@pytest.mark.parametrize("seed", range(10))
def test_union_of_sorted_and_unsorted_starts(seed: int) -> None:
    """The sorted-input path (no argsort) and the general one both merge as the loop does."""
    rng = np.random.default_rng(300 + seed)
    starts = np.round(rng.uniform(0, 100, int(rng.integers(1, 80))))
    ends = starts + np.round(rng.exponential(5, starts.size))
    for s, e in ((starts, ends), (np.sort(starts), ends[np.argsort(starts, kind="stable")])):
        got = iv.union(s, e)
        assert (got[0].tolist(), got[1].tolist()) == _merged_by_loop(s.tolist(), e.tolist())


def _tree_lane(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ops as a profiler writes them: runs of siblings (1-40) nested up to 8 deep, a few partial
    overlaps and zero-length calls; sorted by start, ties longest first."""
    starts, durs = [], []

    def fill(t0: float, t1: float, depth: int) -> None:
        t = t0
        while t < t1 and len(starts) < n:
            d = float(min(rng.integers(1, 60), t1 - t))
            starts.append(t), durs.append(0.0 if rng.random() < 0.05 else d)
            if depth < 8 and d > 4 and rng.random() < 0.5:
                fill(t + 1, t + d - 1, depth + 1)
            t += d + float(rng.integers(0, 3)) - (1.0 if rng.random() < 0.03 else 0.0)

    fill(0.0, 1e9, 0)
    start, dur = np.array(starts), np.array(durs)
    order = np.lexsort((-dur, start))
    return start[order], dur[order]


@pytest.mark.parametrize("seed", range(6))
def test_parents_of_sibling_runs_are_the_loops(seed: int) -> None:
    """The containment search's run skip against torch's rule as a loop (the latest earlier event
    ending at or after the event's end, within the slack, and after its start)."""
    start, dur = _tree_lane(np.random.default_rng(400 + seed), 1500)
    end = start + dur
    want = []
    for i in range(start.size):
        want.append(next((j for j in range(i - 1, -1, -1)
                          if end[j] >= end[i] - CONTAINMENT_SLACK_US and start[i] < end[j]), -1))
    assert containment_parents(start, dur).tolist() == want


@pytest.mark.parametrize("seed", range(10))
def test_ops_left_out_of_the_stall_overlaps_overlap_nothing(seed: int) -> None:
    """analysis._may_overlap only leaves out intervals whose overlap_each is exactly 0.0 (ends on
    stretch ends and starts included)."""
    rng = np.random.default_rng(500 + seed)
    edges = np.sort(rng.choice(np.arange(0.0, 400.0), 2 * int(rng.integers(1, 12)), replace=False))
    stretches = (edges[0::2], edges[1::2])
    gs = np.round(rng.uniform(-10, 410, 300))
    gs[:20] = rng.choice(edges, 20)  # starts and ends exactly on stretch edges
    ge = gs + np.round(rng.exponential(8, gs.size)) * (rng.random(gs.size) < 0.9)
    may = _may_overlap(gs, ge, stretches)
    ov = iv.overlap_each(gs, ge, stretches)
    assert np.all(ov[~may] == 0.0)
    assert np.array_equal(iv.overlap_each(gs[may], ge[may], stretches), ov[may])
