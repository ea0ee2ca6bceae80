"""The one background-work pattern (STYLE.md section 2), and the task-state helper every tab uses.

Two layers:

* :class:`GeneratorWorker` — a QObject moved to a QThread that iterates a core generator
  ``produce(stop: threading.Event) -> Iterator[object]`` and only emits signals. Cancel sets the
  Event; never ``terminate()``.
* :class:`TaskRunner` — the per-tab bookkeeping (Orange3's ``ConcurrentWidgetMixin`` + ``TaskState``
  are the anchor) that each tab used to re-implement as ``_worker/_thread/_pending/_cancelled``.
  One task at a time; it lives in the GUI thread and re-emits the worker's signals there, so its
  signals may be waited on with ``qtbot.waitSignal`` (STYLE.md R19).

TaskRunner API (composition, not a mixin: a tab owns one ``self.task = TaskRunner(self)``)::

    runner = TaskRunner(parent, stop_timeout_ms=5000)
    runner.item_produced.connect(on_item)      # object: each item the generator yields (GUI thread)
    runner.run_failed.connect(on_failed)       # str: "ExcType: message" when the generator raised
    runner.run_finished.connect(on_finished)   # always, once per task, after the thread has ended
    runner.start(produce) -> bool              # False (and nothing started) while a task runs
    runner.restart(produce)                    # cancel the running task (if any), start this one
                                               # when it has finished; only the newest is kept
    runner.cancel() -> bool                    # ask the task to stop after its current item
    runner.is_running() -> bool                # a task is running (or one is queued by restart)
    runner.cancel_requested -> bool            # cancel() was called for the task that just ran
    runner.failure -> str | None               # run_failed's text for the task that just ran
    runner.shutdown(timeout_ms=None)           # closeEvent: drop the queued task, stop, wait

In ``run_finished`` handlers ``cancel_requested`` and ``failure`` still describe the task that
ended (they reset at the next start), and ``is_running()`` is False unless ``restart`` queued a
task, which starts right after the handlers return. What a generator yields after the stop (a
"stopped" message, partial results) is still delivered before ``run_finished``.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

from PySide6.QtCore import QObject, QThread, Signal, Slot

Produce = Callable[[threading.Event], Iterator[object]]


class GeneratorWorker(QObject):
    """Runs ``produce(stop)`` in a worker thread and emits each item it yields.

    The generator checks ``stop`` between items and ends itself; what it yields after the stop
    (a "stopped" message, the ceilings of the points measured so far) is still delivered."""

    item_produced = Signal(object)
    run_failed = Signal(str)
    run_finished = Signal()

    def __init__(self, produce: Produce) -> None:
        super().__init__()  # no parent: it is moved to another thread
        self._produce = produce
        self._stop = threading.Event()

    def request_stop(self) -> None:
        """GUI thread: sets a flag, queues nothing (the worker thread runs no event loop)."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    @Slot()
    def run(self) -> None:  # worker thread
        try:
            for item in self._produce(self._stop):
                self.item_produced.emit(item)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the user
            self.run_failed.emit(f"{type(exc).__name__}: {exc}")
        finally:
            self.run_finished.emit()


def start_in_thread(worker: GeneratorWorker, parent: QObject) -> QThread:
    """Move ``worker`` to a new QThread owned by ``parent`` and start it. The caller must
    ``request_stop(); thread.quit(); thread.wait()`` before the parent goes away."""
    thread = QThread(parent)
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    worker.run_finished.connect(thread.quit)
    thread.finished.connect(worker.deleteLater)
    thread.start()
    return thread


def stop_thread(worker: GeneratorWorker | None, thread: QThread | None, timeout_ms: int = 5000) -> None:
    """Ask the worker to stop and wait for its thread (closeEvent, tab shutdown)."""
    if worker is not None:
        try:
            worker.request_stop()
        except RuntimeError:  # the C++ object is already deleted
            pass
    if thread is not None:
        try:
            thread.quit()
            thread.wait(timeout_ms)
        except RuntimeError:
            pass


class TaskRunner(QObject):
    """One background task at a time for a tab: start, cancel, restart, shutdown (see the module
    docstring). Lives in the GUI thread; the worker's signals reach it queued and are re-emitted."""

    item_produced = Signal(object)
    run_failed = Signal(str)
    run_finished = Signal()

    def __init__(self, parent: QObject, *, stop_timeout_ms: int = 5000) -> None:
        super().__init__(parent)
        self._stop_timeout_ms = stop_timeout_ms
        self._worker: GeneratorWorker | None = None
        self._thread: QThread | None = None
        self._relay: _Relay | None = None
        self._queued: Produce | None = None
        self._cancel_requested = False
        self._failure: str | None = None

    # state ------------------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self._thread is not None or self._queued is not None

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    @property
    def failure(self) -> str | None:
        return self._failure

    # control ----------------------------------------------------------------------------------
    def start(self, produce: Produce) -> bool:
        """Run ``produce(stop)`` in a new worker thread; False while another task runs."""
        if self.is_running():
            return False
        self._launch(produce)
        return True

    def restart(self, produce: Produce) -> None:
        """Start ``produce`` now, or, while a task runs, cancel it and start ``produce`` once it has
        finished (a later restart replaces an earlier queued one)."""
        if self._thread is None:
            self._launch(produce)
            return
        self._queued = produce
        self.cancel()

    def cancel(self) -> bool:
        """Ask the running task to stop after its current item (sets a flag; never terminate())."""
        if self._worker is None:
            return False
        self._cancel_requested = True
        try:
            self._worker.request_stop()
        except RuntimeError:  # already deleted: its thread has ended
            pass
        return True

    def shutdown(self, timeout_ms: int | None = None) -> None:
        """Drop any queued task, stop the running one and wait for its thread (closeEvent)."""
        self._queued = None
        worker, thread = self._worker, self._thread
        self._worker = self._thread = self._relay = None
        if worker is not None:
            self._cancel_requested = True
        stop_thread(worker, thread, self._stop_timeout_ms if timeout_ms is None else timeout_ms)

    # internals ----------------------------------------------------------------------------------
    def _launch(self, produce: Produce) -> None:
        self._cancel_requested = False
        self._failure = None
        worker = GeneratorWorker(produce)
        relay = _Relay(self)  # GUI thread: the worker's signals reach it queued
        worker.item_produced.connect(relay.on_item_produced)
        worker.run_failed.connect(relay.on_run_failed)
        worker.run_finished.connect(relay.on_run_finished)
        self._worker, self._relay = worker, relay
        self._thread = start_in_thread(worker, self)

    def _relay_item(self, relay: _Relay, item: object) -> None:
        if relay is self._relay:  # nothing from a task that shutdown() let go
            self.item_produced.emit(item)

    def _relay_failure(self, relay: _Relay, message: str) -> None:
        if relay is self._relay:
            self._failure = message
            self.run_failed.emit(message)

    def _relay_finished(self, relay: _Relay) -> None:
        relay.deleteLater()
        if relay is not self._relay:
            return
        thread = self._thread
        self._worker = self._thread = self._relay = None
        stop_thread(None, thread, self._stop_timeout_ms)  # the generator has ended: just join
        self.run_finished.emit()
        queued, self._queued = self._queued, None
        if queued is not None and self._thread is None:
            self._launch(queued)


class _Relay(QObject):
    """One task's signals, received in the GUI thread and passed to the runner with their origin,
    so a task let go by ``shutdown`` cannot be taken for the current one."""

    def __init__(self, runner: TaskRunner) -> None:
        super().__init__(runner)
        self._runner = runner

    @Slot(object)
    def on_item_produced(self, item: object) -> None:
        self._runner._relay_item(self, item)  # noqa: SLF001 - a private helper of TaskRunner

    @Slot(str)
    def on_run_failed(self, message: str) -> None:
        self._runner._relay_failure(self, message)  # noqa: SLF001

    @Slot()
    def on_run_finished(self) -> None:
        self._runner._relay_finished(self)  # noqa: SLF001


__all__ = ["GeneratorWorker", "Produce", "TaskRunner", "start_in_thread", "stop_thread"]
