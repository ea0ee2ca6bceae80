"""Loading rank files in worker processes: Stop, closing the generator or an error return at once and
leave no worker process; the parallel load equals the one-process load and the analysis' model."""
from __future__ import annotations

import os
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.engine.api import Progress, TraceResult
from gpuperf_gui.core.trace.ingest.load import iter_per_file
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace


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


def test_iter_result_stops_without_a_result(tmp_path: Path) -> None:
    paths = [write_synth_trace("healthy", tmp_path / f"rank{r}.json", steps=3, rank=r) for r in range(3)]
    stop = threading.Event()
    items = []
    for item in Trace(paths, workers=2).iter_result(stop):
        items.append(item)
        stop.set()  # Stop pressed after the first progress report
    assert items and all(isinstance(i, Progress) for i in items)
    full = list(Trace(paths, workers=2).iter_result(threading.Event()))
    assert isinstance(full[-1], TraceResult) and [r.trace.rank for r in full[-1].ranks] == [0, 1, 2]
    assert [p.fraction for p in full[:-1]] == sorted(p.fraction for p in full[:-1])


def test_parallel_load_matches_one_process_and_the_analysed_model(tmp_path: Path) -> None:
    paths = [write_synth_trace("comm_bound", tmp_path / f"r{r}.json", steps=3, rank=r, seed=r) for r in range(3)]
    serial, parallel = Trace(paths, workers=1).model(), Trace([tmp_path], workers=2).model()
    analysed = Trace(paths, workers=2).result().model
    for model in (parallel, analysed):
        assert [r.rank for r in model.ranks] == [r.rank for r in serial.ranks] == [0, 1, 2]
        assert [r.n_events for r in model.ranks] == [r.n_events for r in serial.ranks]
        assert [r.origin_us for r in model.ranks] == [r.origin_us for r in serial.ranks]
    (tmp_path / "bad.json").write_text("hello")  # one broken file: the others load, it is named
    with_bad = Trace([tmp_path], workers=2).model()
    assert [r.rank for r in with_bad.ranks] == [0, 1, 2]
    assert len(with_bad.notes) == 1 and "bad.json" in with_bad.notes[0] and "not JSON" in with_bad.notes[0]
