"""The what-if's replay loop in C (``_replay.c`` through critical_path.replay) against its numpy passes.

The extension is optional, as the scanner and the nesting are: where it is not built (no compiler),
critical_path._replay_numpy walks the graph, and both must give every node's time bit for bit (the
projections, and so ``gpuperf diagnose --json``, are then the same bytes). The oracle is the numpy
passes, on real multi-rank jobs (collectives, point-to-point groups, host collectives, NCCL
send/recv kernels) under the baseline and every cause's change at both ends of the profiler's cost.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.analysis import critical_path as cp
from gpuperf_gui.core.trace.analysis import what_if
from gpuperf_gui.core.trace.session.trace import Trace

pytestmark = pytest.mark.skipif(cp._replay is None, reason="the replay extension is not built (no C compiler)")
DATA = Path(__file__).resolve().parents[1] / "data"
BUILT = cp._replay
JOBS = {
    "dlrm_8_ranks_nccl": DATA / "shared_traces" / "param" / "dlrm_kineto",
    "pipeline_p2p_gloo": DATA / "h200" / "pipeline_8mb_gloo",
    "gloo_allreduce": DATA / "h200" / "gloo_cpu_allreduce",
    "nccl_send_recv_kernels": DATA / "shared_traces" / "hta" / "trace_filter" / "sampled_rank-0.json.gz",
    "straggler_gloo": DATA / "h200" / "ddp_straggler_gloo",
}


def _changes(g: cp.Graph, ranks: list) -> list[tuple]:
    """The baseline and every cause's change, at both ends of the profiler's cost per event."""
    ctx = {"late_ranks": [rt.rank for rt in ranks[:1]], "kernel_names": what_if.kernel_name_ids(g, ranks),
           "io_bandwidth": functools.cache(lambda: what_if.kernel_io_bytes(g, ranks))}
    out: list[tuple] = [()]
    for us in what_if.PROFILER_US_PER_EVENT:
        at = {**ctx, "profiler_us": us}
        out.append(what_if._base(g, at))
        out += [ch for make in what_if.SCENARIOS.values() if (ch := make(g, at)) is not None]
    return out


def _walk(g: cp.Graph, ch: tuple, monkeypatch: pytest.MonkeyPatch, ext: object) -> np.ndarray | str:
    monkeypatch.setattr(cp, "_replay", ext)
    try:
        if not ch:
            return cp.replay(g)
        return cp.replay(g, ch[0].sum(axis=1), ch[1], ch[2], group=ch[3] if len(ch) > 3 else None)
    except cp.NotSettled:
        return "not settled"


@pytest.mark.parametrize("job", sorted(JOBS))
def test_replay_in_c_is_the_numpy_replay_to_the_bit(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ranks = [r.trace for r in Trace([JOBS[job]]).result().ranks]
    g = cp.build_graph(ranks)
    assert len(g) > 100
    changes = _changes(g, ranks)
    assert len(changes) >= 8
    if job == "pipeline_p2p_gloo":
        unbound = [ch for ch in changes if len(ch) > 3 and ch[3] is not None and (ch[3] != g.group).any()]
        assert g.p2p_groups.size and unbound   # the unbound groups are walked
    for ch in changes:
        fast = _walk(g, ch, monkeypatch, BUILT)
        slow = _walk(g, ch, monkeypatch, None)
        assert isinstance(fast, np.ndarray) and isinstance(slow, np.ndarray)
        assert fast.dtype == slow.dtype and fast.tobytes() == slow.tobytes()


def _cycle() -> cp.Graph:
    """Two one-node chains that wait for each other (+1 µs each way): the times never settle."""
    chains = [cp.Chain(0, 0, "cpu", 0, 1), cp.Chain(0, 1, "cpu", 1, 2)]
    z, zi = np.zeros(2), np.zeros(2, dtype=np.int64)
    dcat = np.zeros((2, len(cp.CATEGORIES)))
    dcat[:, 0] = 1.0
    return cp.Graph(chains, np.array([0.0, 1.0]), dcat, np.array([0.0, -np.inf]), zi, zi, zi, zi.astype(bool),
                    np.full(2, -1, np.int8), zi.astype(bool), np.array([1, 0]), np.array([0, 1]), np.ones(2),
                    zi.astype(np.int8), np.full(2, -1, dtype=np.int64), z)


def test_a_cycle_does_not_settle_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    g = _cycle()
    for ext in (BUILT, None):
        monkeypatch.setattr(cp, "_replay", ext)
        with pytest.raises(cp.NotSettled):
            cp.replay(g, max_iter=50)
    # Without the back edge it settles: node 0 at 0 + 1, node 1 one µs after it + its own 1 µs.
    on = np.array([False, True])   # edges by destination: 1 -> 0 left out, 0 -> 1 kept
    assert _walk(g, (g.dcat, g.e_w, on), monkeypatch, BUILT).tolist() == [1.0, 3.0]
    assert _walk(g, (g.dcat, g.e_w, on), monkeypatch, None).tolist() == [1.0, 3.0]


def test_bad_indices_are_refused_before_the_walk() -> None:
    f = np.zeros(2)
    i = np.full(2, -1, dtype=np.int64)
    lo, hi = np.array([0], dtype=np.int64), np.array([2], dtype=np.int64)
    t = np.full(2, -np.inf)
    with pytest.raises(ValueError, match="edge"):
        BUILT.replay(f, f, f, f, i, lo, hi, np.array([5]), np.array([1]), np.zeros(1), 0.0, 10, t)
    with pytest.raises(ValueError, match="edge"):   # not sorted by destination
        BUILT.replay(f, f, f, f, i, lo, hi, np.array([0, 0]), np.array([1, 0]), np.zeros(2), 0.0, 10, t)
    with pytest.raises(ValueError, match="chain"):
        BUILT.replay(f, f, f, f, i, lo, np.array([3], dtype=np.int64), np.zeros(0, np.int64),
                     np.zeros(0, np.int64), np.zeros(0), 0.0, 10, t)


def _python_parents(start: np.ndarray, dur: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setattr(cp, "_replay", BUILT)
    fast = cp._parents(start, start + dur)
    monkeypatch.setattr(cp, "_replay", None)
    slow = cp._parents(start, start + dur)
    return fast, slow


@pytest.mark.parametrize("seed", range(20))
def test_parents_in_c_are_the_python_stacks(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random threads with ties, zero-length events and partial overlaps (a child that outlives its
    parent stays on the stack), against the Python loop."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    start = np.sort(np.round(rng.uniform(0, 100, n), int(rng.integers(0, 3))))
    dur = rng.choice([0.0, 0.5, 1.0, 5.0, 40.0], n) * rng.uniform(0.5, 1.5, n).round(1)
    fast, slow = _python_parents(start, dur, monkeypatch)
    assert fast.dtype == slow.dtype == np.int64 and fast.tolist() == slow.tolist()


def test_parents_in_c_are_the_python_stacks_on_real_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    ranks = [r.trace for r in Trace([JOBS["dlrm_8_ranks_nccl"]]).result().ranks]
    lanes = [lane for rt in ranks for lane in rt.cpu_lanes if len(lane)]
    assert len(lanes) >= 8
    nested = 0
    for lane in lanes:
        fast, slow = _python_parents(lane.start_us, lane.duration_us, monkeypatch)
        assert fast.tolist() == slow.tolist()
        nested += int((fast >= 0).sum())
    assert nested > 1000
