"""The one background-work pattern (STYLE.md section 2): a QObject worker moved to a QThread that
iterates a core generator and only emits signals. Cancel sets a threading.Event; never terminate()."""

from __future__ import annotations

import threading
from typing import Callable, Iterator

from PySide6.QtCore import QObject, QThread, Signal, Slot


class GeneratorWorker(QObject):
    """Runs ``produce(stop)`` in a worker thread and emits each item it yields.

    The generator checks ``stop`` between items and ends itself; what it yields after the stop
    (a "stopped" message, the ceilings of the points measured so far) is still delivered."""

    item_produced = Signal(object)
    run_failed = Signal(str)
    run_finished = Signal()

    def __init__(self, produce: Callable[[threading.Event], Iterator[object]]) -> None:
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
