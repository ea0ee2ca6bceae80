"""The loading worker hands the Trace tab snapshots; it never patches a trace the GUI thread holds.

The race this pins down: one file's lanes arrive first, its analysis after them. When the GUI thread
is busy (here: stalled ~100 ms) while the worker finishes the analysis, both items wait in the
event queue. Before, the worker had already written the analysis into the LoadedTrace the first
item carried, so the tab saw "analysis done" on the lanes item *and* on the analysis item:
``trace_loaded`` fired twice and the diagnosis was drawn twice ([1, 1, 2, 2, 1] times over five
opens; docs/ARCHITECTURE.md, One trace object, snapshots across threads). Each open must show its analysis exactly once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace

TRACES = ("eager_tiny", "attention", "nested_sum", "compiled_tiny", "packed_elementwise")
LOAD_TIMEOUT_MS = 60_000
STALL_S = 0.1


@pytest.fixture
def analysed_signal(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set (on the worker thread) when a file's analysis has been computed."""
    monkeypatch.setenv("GPUPERF_TRACE_INPROCESS", "1")   # the worker thread runs the generator here
    done = threading.Event()
    real = Trace._analyse_model

    def analyse(model):  # noqa: ANN001, ANN202
        result = real(model)
        done.set()
        return result

    monkeypatch.setattr(Trace, "_analyse_model", staticmethod(analyse))
    return done


def test_each_open_shows_its_analysis_once_with_the_gui_thread_stalled(qtbot, tab, test_data: Path,
                                                                        analysed_signal: threading.Event) -> None:
    loaded_counts, diagnosis_counts = [], []
    fired: list[str] = []
    shown: list[object] = []
    tab.trace_loaded.connect(lambda: fired.append("loaded"))
    real_show = tab.diagnosis.show_diagnosis

    def show_diagnosis(view):  # noqa: ANN001, ANN202
        if view is not None:
            shown.append(view)
        return real_show(view)

    tab.diagnosis.show_diagnosis = show_diagnosis
    for name in TRACES:
        fired.clear()
        shown.clear()
        analysed_signal.clear()
        tab.open_paths([test_data / "h200" / f"{name}.json.gz"])
        # The GUI thread does not run its event loop until the worker has analysed the file and
        # had another STALL_S to hand the analysis over: lanes and analysis wait in the queue together.
        assert analysed_signal.wait(30)
        time.sleep(STALL_S)
        qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
        qtbot.wait(50)     # anything queued late would land now
        loaded_counts.append(len(fired))
        diagnosis_counts.append(len(shown))
        assert tab.loaded is not None and not tab.loaded.analysis_pending
        assert tab.loaded.diagnosis is not None and tab.diagnosis.signature == tab.loaded.diagnosis.signature
        assert Path(tab.loaded.files[0]).name == f"{name}.json.gz"
    assert loaded_counts == [1] * len(TRACES)
    assert diagnosis_counts == [1] * len(TRACES)


def test_a_replaced_opens_late_lanes_are_not_shown(qtbot, tab, test_data: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Open A; A's lanes are queued for the GUI thread; B is opened before the GUI thread takes
    them. A's lanes belong to a replaced run: only B is shown, and ``trace_loaded`` fires once."""
    monkeypatch.setenv("GPUPERF_TRACE_INPROCESS", "1")
    entered, gate = threading.Event(), threading.Event()
    real = Trace._analyse_model

    def analyse(model):  # noqa: ANN001, ANN202 - A's worker waits here, its lanes already sent
        if not entered.is_set():
            entered.set()
            gate.wait(30)
        return real(model)

    monkeypatch.setattr(Trace, "_analyse_model", staticmethod(analyse))
    shown: list[str] = []
    tab.lanes_shown.connect(lambda: shown.append(("lanes", Path(tab.loaded.files[0]).name)))
    tab.trace_loaded.connect(lambda: shown.append(("loaded", Path(tab.loaded.files[0]).name)))
    tab.open_paths([test_data / "h200" / "eager_tiny.json.gz"])
    assert entered.wait(30)          # A's lanes wait in the GUI thread's queue
    tab.open_paths([test_data / "h200" / "attention.json.gz"])   # before the GUI thread took them
    gate.set()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    qtbot.wait(50)
    assert shown == [("lanes", "attention.json.gz"), ("loaded", "attention.json.gz")]
