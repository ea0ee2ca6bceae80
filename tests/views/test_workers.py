"""TaskRunner: one background task at a time, cancel, restart, failure, shutdown (GUI-thread signals)."""
from __future__ import annotations

import threading
from typing import Iterator

import pytest
from PySide6.QtWidgets import QWidget

from gpuperf_gui.views.workers import TaskRunner


def counting(n: int, gate: threading.Event | None = None):
    """A generator factory yielding 0..n-1; with a gate it waits for it before each item."""
    def produce(stop: threading.Event) -> Iterator[object]:
        for i in range(n):
            if stop.is_set():
                yield "stopped"
                return
            if gate is not None:
                gate.wait(5)
            yield i
    return produce


@pytest.fixture
def runner(qtbot):
    owner = QWidget()
    qtbot.addWidget(owner)
    task = TaskRunner(owner)
    received: list[object] = []
    task.item_produced.connect(received.append)
    task.received = received  # type: ignore[attr-defined]
    yield task
    task.shutdown()


def test_items_arrive_in_order_then_finished(qtbot, runner):
    with qtbot.waitSignal(runner.run_finished, timeout=5000):
        assert runner.start(counting(5))
    assert runner.received == [0, 1, 2, 3, 4]
    assert not runner.is_running() and runner.failure is None and not runner.cancel_requested


def test_second_start_refused_while_running(qtbot, runner):
    gate = threading.Event()
    assert runner.start(counting(3, gate))
    assert runner.is_running()
    assert not runner.start(counting(1))
    with qtbot.waitSignal(runner.run_finished, timeout=5000):
        gate.set()
    assert runner.received == [0, 1, 2]


def test_cancel_stops_after_current_item_and_delivers_what_follows(qtbot, runner):
    gate = threading.Event()
    runner.start(counting(100, gate))
    with qtbot.waitSignal(runner.run_finished, timeout=5000):
        assert runner.cancel()
        gate.set()
    assert runner.cancel_requested
    assert runner.received[-1] == "stopped" and len(runner.received) < 100


def test_failure_reported_then_finished(qtbot, runner):
    def broken(stop):
        yield 1
        raise OSError("disk gone")
    failures: list[str] = []
    runner.run_failed.connect(failures.append)
    with qtbot.waitSignal(runner.run_finished, timeout=5000):
        runner.start(broken)
    assert failures == ["OSError: disk gone"] and runner.failure == "OSError: disk gone"
    assert runner.received == [1]


def test_restart_cancels_then_runs_only_the_newest(qtbot, runner):
    gate = threading.Event()
    finished: list[bool] = []
    runner.run_finished.connect(lambda: finished.append(runner.cancel_requested))
    runner.start(counting(100, gate))
    runner.restart(lambda stop: iter(["second"]))
    runner.restart(lambda stop: iter(["third"]))   # replaces "second" in the queue
    assert runner.is_running()
    gate.set()
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=5000)
    assert finished == [True, False]               # the first was cancelled, the third was not
    assert "third" in runner.received and "second" not in runner.received
    assert not runner.is_running()


def test_shutdown_waits_and_ignores_the_abandoned_task(qtbot, runner):
    gate = threading.Event()
    finished: list[int] = []
    runner.run_finished.connect(lambda: finished.append(1))
    runner.start(counting(100, gate))
    gate.set()
    runner.shutdown(timeout_ms=5000)
    assert not runner.is_running()
    count = len(runner.received)
    qtbot.wait(100)                                # queued signals of the abandoned task
    assert len(runner.received) == count and finished == []
