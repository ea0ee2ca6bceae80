"""Regression tests for the engine review: cancelling parallel loads, world size vs ranks loaded,
interval complements, one per-file loop, kernel-row shares."""
from __future__ import annotations

import json
import os
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace import intervals as iv
from gpuperf_gui.core.trace.api import Progress, TraceResult, analyse_paths, iter_load_and_analyse
from gpuperf_gui.core.trace.figures import mfu_figures
from gpuperf_gui.core.trace.load import iter_per_file, load_rank, load_trace
from gpuperf_gui.core.trace.model import TraceFormatError
from gpuperf_gui.core.trace.optable import op_table
from gpuperf_gui.core.trace.synth import DEVICE, synth_trace, write_synth_trace

from trace_support import loaded

DATA = Path(__file__).resolve().parents[1] / "data"
SLOW_S = 20.0
"""A worker "decoding" a file this long: the old ``shutdown(wait=True)`` would wait for it."""


def _slow_work(path: Path, *, order_index: int, pid_dir: Path) -> int:
    """Module-level (picklable) stand-in for a slow decode: records its pid and file, then sleeps."""
    (pid_dir / f"{os.getpid()}-{path.stem}").write_text("")
    if path.name.startswith("bad"):
        raise TraceFormatError(f"{path}: not a trace")
    if not path.name.startswith("fast"):
        time.sleep(SLOW_S)
    return order_index


def _worker_pids(pid_dir: Path, at_least: int, timeout_s: float = 10.0) -> list[int]:
    """The pids of the workers once ``at_least`` files have started (one worker may take both)."""
    deadline = time.monotonic() + timeout_s
    while len(list(pid_dir.iterdir())) < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
    return sorted({int(p.name.split("-")[0]) for p in pid_dir.iterdir()})


def _assert_gone(pids: list[int]) -> None:
    for pid in pids:
        assert pid != os.getpid()
        with pytest.raises(ProcessLookupError):  # terminated and reaped, not a zombie
            os.kill(pid, 0)


def _files(tmp_path: Path, *names: str) -> tuple[list[Path], Path]:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    return [tmp_path / n for n in names], pid_dir


# 1. cancelling a parallel load ------------------------------------------------------------------

def test_stop_during_a_parallel_load_returns_at_once_and_leaves_no_worker(tmp_path: Path) -> None:
    files, pid_dir = _files(tmp_path, "a.json", "b.json")
    stop = threading.Event()
    work = partial(_slow_work, pid_dir=pid_dir)
    results = iter_per_file(files, work, stop, workers=2)
    pids: list[int] = []
    threading.Thread(target=lambda: (pids.extend(_worker_pids(pid_dir, 2)), stop.set())).start()
    t0 = time.monotonic()
    assert list(results) == []
    assert time.monotonic() - t0 < SLOW_S / 2
    assert len(pids) == 2
    _assert_gone(pids)


def test_closing_the_generator_or_an_error_terminates_the_busy_workers(tmp_path: Path) -> None:
    files, pid_dir = _files(tmp_path, "fast.json", "slow.json")
    results = iter_per_file(files, partial(_slow_work, pid_dir=pid_dir), workers=2)
    t0 = time.monotonic()
    assert next(results) == (0, 0)
    pids = _worker_pids(pid_dir, 2)
    results.close()  # the consumer (a worker thread's generator) goes away mid-load
    assert time.monotonic() - t0 < SLOW_S / 2
    _assert_gone(pids)

    (tmp_path / "err").mkdir()
    files, pid_dir = _files(tmp_path / "err", "bad.json", "slow.json")
    t0 = time.monotonic()
    with pytest.raises(TraceFormatError, match="not a trace"):  # one bad file among slow ones
        list(iter_per_file(files, partial(_slow_work, pid_dir=pid_dir), workers=2))
    assert time.monotonic() - t0 < SLOW_S / 2
    _assert_gone(_worker_pids(pid_dir, 0))


def test_iter_load_and_analyse_stops_without_a_result(tmp_path: Path) -> None:
    paths = [write_synth_trace("healthy", tmp_path / f"rank{r}.json", steps=3, rank=r) for r in range(3)]
    stop = threading.Event()
    items = []
    for item in iter_load_and_analyse(paths, stop, workers=2):
        items.append(item)
        stop.set()  # Stop pressed after the first progress report
    assert items and all(isinstance(i, Progress) for i in items)
    full = list(iter_load_and_analyse(paths, threading.Event(), workers=2))
    assert isinstance(full[-1], TraceResult) and [r.trace.rank for r in full[-1].ranks] == [0, 1, 2]
    assert [p.fraction for p in full[:-1]] == sorted(p.fraction for p in full[:-1])


# 2. world size: recorded or unknown; ranks loaded on their own -----------------------------------

def test_one_rank_file_without_distributed_info_does_not_claim_a_world_size(tmp_path: Path) -> None:
    _, a = loaded(DATA / "backward_thread.json")  # no distributedInfo
    fig = mfu_figures([a])
    assert (fig.world_size, fig.ranks_loaded) == (None, 1)
    one_of_eight = write_synth_trace("healthy", tmp_path / "rank3.json", steps=3, rank=3, world_size=8)
    fig = mfu_figures([r.analysis for r in analyse_paths([one_of_eight]).ranks])
    assert (fig.world_size, fig.ranks_loaded) == (8, 1)
    assert mfu_figures([]).ranks_loaded == 0


# 3. interval complement ---------------------------------------------------------------------------

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


# 4. one per-file loop for load_trace and the analysis ---------------------------------------------

def test_load_trace_in_parallel_matches_one_process_and_analyse_paths(tmp_path: Path) -> None:
    paths = [write_synth_trace("comm_bound", tmp_path / f"r{r}.json", steps=3, rank=r, seed=r) for r in range(3)]
    serial, parallel = load_trace(paths, workers=1), load_trace(tmp_path, workers=2)
    analysed = analyse_paths(paths, workers=2).model
    for model in (parallel, analysed):
        assert [r.rank for r in model.ranks] == [r.rank for r in serial.ranks] == [0, 1, 2]
        assert [r.n_events for r in model.ranks] == [r.n_events for r in serial.ranks]
        assert [r.origin_us for r in model.ranks] == [r.origin_us for r in serial.ranks]
    (tmp_path / "bad.json").write_text("hello")  # one broken file: the others load, it is named
    with_bad = load_trace(tmp_path, workers=2)
    assert [r.rank for r in with_bad.ranks] == [0, 1, 2]
    assert len(with_bad.notes) == 1 and "bad.json" in with_bad.notes[0] and "not JSON" in with_bad.notes[0]


# 6. kernel rows: mean per call and share of the kernel time ----------------------------------------

def test_kernel_rows_carry_mean_and_share_without_annotations(tmp_path: Path) -> None:
    trace = synth_trace("healthy", steps=3)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    t0 = min(e["ts"] for e in kernels)
    t1 = max(e["ts"] + e["dur"] for e in kernels)
    trace["traceEvents"].append({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1",
                                 "pid": DEVICE, "tid": kernels[0]["tid"], "ts": t0, "dur": t1 - t0})
    path = tmp_path / "annotated.json"
    path.write_text(json.dumps(trace))
    rows = op_table(load_rank(path))
    kernel_us = {}
    for e in kernels:
        kernel_us[e["name"]] = kernel_us.get(e["name"], 0.0) + e["dur"]
    total_us = sum(kernel_us.values())
    shared = {r.name: r for r in rows if r.device_share is not None}
    assert set(shared) == set(kernel_us) and all(r.kind == "device" for r in shared.values())
    for name, us in kernel_us.items():
        assert shared[name].device_share == pytest.approx(us / total_us, rel=1e-6)
    assert sum(r.device_share for r in shared.values()) == pytest.approx(1.0)
    (step,) = [r for r in rows if r.kind == "device" and r.name == "ProfilerStep*"]
    assert step.device_share is None and step.mean_device_s == pytest.approx((t1 - t0) / 1e6, rel=1e-6)
    for r in rows:
        assert r.mean_device_s == (pytest.approx(r.device_total_s / r.calls) if r.calls else None)
    assert {"mean_device_s", "device_share"} <= set(rows[0].to_json())
