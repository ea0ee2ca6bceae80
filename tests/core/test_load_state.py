"""The Trace tab's state machine (core/trace/session/load_state.py), without Qt: each open shows its lanes,
then its analysis exactly once, and ends ready, failed or cancelled; snapshots replace the trace."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.load_state import (TRANSITIONS, Ending, Failure, IllegalTransition, LoadState,
                                                       Phase, RunItem, tag_items)
from gpuperf_gui.core.trace.session.loaded_trace import AnalysisUpdate, LoadedTrace, RooflineUpdate, iter_loaded_trace

TRACE = Path(__file__).resolve().parents[1] / "data" / "h200" / "eager_tiny.json.gz"


@pytest.fixture(scope="module")
def items() -> list:
    """One file's items, in process: progress, lanes (analysis pending), analysis, roofline points."""
    return [i for i in iter_loaded_trace([TRACE], 10.0, threading.Event(), isolate=False)
            if isinstance(i, (LoadedTrace, AnalysisUpdate, RooflineUpdate))]


def test_one_open_goes_idle_loading_lanes_analysing_ready(items: list) -> None:
    lanes, analysis, roofline = items
    state = LoadState()
    assert state.phase is Phase.IDLE and state.trace is None
    state.open()
    assert state.lanes_ready(lanes) is False           # the analysis follows: draw the lanes alone
    assert state.trace is lanes and state.phase is Phase.LANES_SHOWN and state.roofline_pending
    assert state.analysis_ready(analysis) is True
    assert state.trace is not lanes and lanes.analysis_pending and lanes.diagnosis is None  # not patched
    assert state.trace.diagnosis is analysis.diagnosis and state.phase is Phase.ANALYSING
    assert state.analysis_ready(analysis) is False     # the same analysis again: shown once
    with pytest.raises(dataclasses.FrozenInstanceError):
        lanes.diagnosis = analysis.diagnosis             # a trace handed over cannot be patched
    assert state.roofline_ready(roofline) and not state.roofline_pending
    assert state.trace.roofline_points == list(roofline.points)
    assert state.analysis_shown() is True and state.phase is Phase.READY
    assert state.analysis_shown() is False             # trace_loaded: once per open
    assert state.finished(cancelled=False) is Ending.DONE and state.phase is Phase.READY
    assert state.history == [Phase.LOADING, Phase.LANES_SHOWN, Phase.ANALYSING, Phase.READY]


def test_lanes_with_their_analysis_skip_lanes_shown(items: list) -> None:
    lanes, analysis, _ = items
    state = LoadState()
    state.open()
    assert state.lanes_ready(lanes.with_analysis(analysis)) is True   # the one-step path: draw both
    assert state.phase is Phase.ANALYSING
    assert state.analysis_ready(analysis) is False


def test_a_cancel_before_the_lanes_keeps_the_trace_shown_before(items: list) -> None:
    lanes, analysis, _ = items
    state = LoadState()
    state.open()
    state.lanes_ready(lanes.with_analysis(analysis))
    state.analysis_shown()
    before = state.trace
    state.open()
    assert state.trace is before and state.phase is Phase.LOADING   # still on screen while loading
    state.cancel()
    assert state.lanes_ready(lanes) is None and state.trace is before   # a late item is dropped
    assert state.finished(cancelled=True) is Ending.CANCELLED_BEFORE_LANES and state.phase is Phase.CANCELLED


def test_a_cancel_after_the_lanes_ends_without_the_analysis(items: list) -> None:
    lanes, analysis, _ = items
    state = LoadState()
    state.open()
    state.lanes_ready(lanes)
    state.cancel()
    assert state.analysis_ready(analysis) is False and state.trace is lanes
    assert state.finished(cancelled=True) is Ending.CANCELLED_BEFORE_ANALYSIS and state.phase is Phase.CANCELLED


def test_failures_say_what_is_left_on_screen(items: list) -> None:
    lanes, _, _ = items
    state = LoadState()
    state.open()
    assert state.failed() is Failure.NOT_OPENED and state.phase is Phase.FAILED
    assert state.finished(cancelled=False) is Ending.DONE
    state.open()
    state.lanes_ready(lanes)
    assert state.failed() is Failure.ANALYSIS_FAILED and state.phase is Phase.FAILED
    assert state.trace is lanes


def test_illegal_moves_raise() -> None:
    state = LoadState()
    with pytest.raises(IllegalTransition):
        state._go(Phase.READY)   # noqa: SLF001 - idle -> ready skips the load
    assert all(Phase.LOADING in targets for phase, targets in TRANSITIONS.items())  # a new open from anywhere
    assert set(TRANSITIONS) == set(Phase)


def test_items_of_a_replaced_open_are_dropped(items: list) -> None:
    lanes = items[0]
    state = LoadState()
    first, second = state.open(), state.open()
    assert state.current(RunItem(first, lanes)) is None       # still queued from the replaced open
    assert state.current(RunItem(second, lanes)) is lanes
    assert state.current(lanes) is None                       # untagged: no open's
    tagged = list(tag_items(lambda stop: iter([1, 2]), second)(threading.Event()))
    assert tagged == [RunItem(second, 1), RunItem(second, 2)]
