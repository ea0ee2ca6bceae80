"""The Trace tab's state without Qt (core/trace/session/tab_state.py): the search and its matches, the
range, the idle threshold, what the trace enables, and the tab's messages."""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.load_state import Ending
from gpuperf_gui.core.trace.session.loaded_trace import AnalysisUpdate, LoadedTrace, iter_loaded_trace
from gpuperf_gui.core.trace.session.tab_state import (TraceTabState, ending_text, failure_text, notes_text,
                                                      ranks_shown_after, reveal_range)

TRACE = Path(__file__).resolve().parents[1] / "data" / "h200" / "eager_tiny.json.gz"


@pytest.fixture(scope="module")
def items() -> list:
    return [i for i in iter_loaded_trace([TRACE], 10.0, threading.Event(), isolate=False)
            if isinstance(i, (LoadedTrace, AnalysisUpdate))]


def device_events(*categories: str) -> list[dict]:
    """The trace's events of ``categories``, read with json (not the loader)."""
    events = json.load(gzip.open(TRACE))["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in categories]


@pytest.fixture(scope="module")
def kernels() -> list[dict]:
    return device_events("kernel")


def shown(items: list) -> TraceTabState:
    state = TraceTabState()
    state.open()
    state.lanes_ready(items[0])
    return state


def drawn(state: TraceTabState) -> list[tuple[int, int]]:
    return [(s.rank_index, s.lane_id) for s in state.trace.lanes]


def test_a_search_finds_every_launch_of_a_kernel_and_steps_through_them(items, kernels):
    name, calls = Counter(e["name"] for e in kernels).most_common(1)[0]   # 68 launches, counted in the JSON
    state = shown(items)
    found = state.search(name, "exact", drawn(state))
    assert len(found.matches) == calls and found.label == f"{calls:,} matches" and len(found.texts) == calls
    assert state.enter(name, "exact") == "search"          # Enter searched nothing yet
    state.last_query = ("exact", name)
    assert state.enter(name, "exact") == "next" and state.enter("", "exact") == "clear"
    assert state.step_match(+1) == 0
    ref = state.go_to_match(0)
    assert state.trace.details(ref).name == name and state.match_pos == 0
    assert state.step_match(-1) == calls - 1                # wraps around
    assert state.go_to_match(calls) is None and state.match_pos == 0
    assert state.rerun_search() == (name, "exact")
    assert state.op_filter(True) and state.op_filter(False) is None


def test_a_bad_regex_says_so_and_clears_the_matches(items):
    state = shown(items)
    state.search("aten", "name", drawn(state))
    found = state.search("(", "regex", drawn(state))
    assert len(found.matches) == 0 and found.label.startswith("bad regex: ")
    assert state.step_match(+1) is None and state.op_filter(True) is None


def test_no_trace_no_matches():
    state = TraceTabState()
    assert len(state.search("aten", "name", []).matches) == 0 and state.partners(None) == []
    assert not state.select_range(1.0, 2.0) and state.rank_index(0) is None


def test_a_range_is_a_drag_not_a_click_and_zooming_ends_it(items):
    state = shown(items)
    assert not state.select_range(5.0, 5.0) and state.selected_range is None
    assert state.select_range(5.0, 9.0)
    assert state.take_range() == (5.0, 9.0) and state.take_range() is None


def test_the_idle_threshold_redraws_the_compute_gaps(items):
    # the gaps counted by hand from the JSON: per stream, its work (kernels, memsets, copies) by
    # start, the gaps of >= 100 µs
    streams = defaultdict(list)
    for e in device_events("kernel", "gpu_memset", "gpu_memcpy"):
        streams[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    expected = 0
    for spans in streams.values():
        spans.sort()
        end = spans[0][1]
        for s, e in spans[1:]:
            expected += s - end >= 100.0
            end = max(end, e)
    state = shown(items)
    assert not state.threshold_differs(10.0) and state.threshold_differs(100.0)
    before = state.trace
    changed = state.apply_idle_threshold(100.0)
    assert state.trace is not before and state.trace.idle_threshold_us == 100.0   # a new trace, not patched
    assert changed and {s.kind for s in changed} == {"gpu_compute"}
    assert sum(len(s.gaps[0]) for s in changed) == expected


def test_what_the_trace_enables(items):
    state = TraceTabState()
    assert state.controls().lanes is False and state.controls().send_to_mfu is False
    state = shown(items)
    lanes = state.controls()
    assert lanes.lanes and lanes.roofline_pending and not lanes.roofline and not lanes.ranks_page
    state.analysis_ready(items[1])
    assert state.controls().send_to_mfu          # the analysis brings the MFU figures


def test_an_event_is_brought_into_view():
    assert reveal_range((10.0, 20.0), (0.0, 100.0)) is None                       # in view
    assert reveal_range((200.0, 210.0), (0.0, 100.0)) == ("pan", 155.0, 255.0)   # centred, same width
    assert reveal_range((0.0, 500.0), (0.0, 100.0)) == ("zoom", 0.0, 500.0)      # wider than the view


def test_showing_and_hiding_ranks():
    assert ranks_shown_after(None, 4, 2, False) == {0, 1, 3}
    assert ranks_shown_after({0, 1, 3}, 4, 2, True) is None        # all of them again
    assert ranks_shown_after({1}, 4, 1, False) == set()


def test_the_tabs_messages():
    assert failure_text("TraceFormatError: x.json: not JSON") == "x.json: not JSON"
    assert "please report it" in failure_text("KeyError: 'ts'")
    assert ending_text(Ending.CANCELLED_BEFORE_LANES, True) == (
        "Loading cancelled. The trace shown before is still open.", False)
    assert ending_text(Ending.CANCELLED_BEFORE_ANALYSIS, False)[1] is True
    assert ending_text(Ending.DONE, True) is None
    assert notes_text(["a", "file truncated at 3 MB", "b"]) == "Truncated trace: file truncated at 3 MB"
    assert notes_text(["a", "b", "c", "d"]) == "a; b; c" and notes_text([]) == ""


def test_kernels_are_judged_on_the_traces_gpu_else_the_toolbars(items):
    from gpuperf_gui.core.hardware import load_database
    from gpuperf_gui.core.trace.session.tab_state import roof_device

    database = load_database()
    toolbar = database.get("h100-sxm")
    device, label = roof_device(items[0], database, toolbar)   # the trace ran on an H200 (its deviceProperties)
    assert device.id == "h200" and label.endswith("(the trace's GPU)")
    device, label = roof_device(None, database, toolbar)
    assert device is toolbar and "the trace names no GPU" in label
    assert roof_device(None, database, None) == (None, "")


def test_the_demo_menu_lists_every_scenario_and_writes_one_when_opened(tmp_path):
    from gpuperf_gui.core.trace.synthetic import synth
    from gpuperf_gui.core.trace.session.demos import SHIPPED_DEMOS, demo_entries

    entries = dict(demo_entries(lambda: tmp_path))
    assert "Synthetic: launch bound" in entries and "Synthetic: straggler (4 ranks)" in entries
    assert "Synthetic: inconclusive (a CPU-only profile)" in entries
    assert len(entries) == len(synth.SCENARIOS) + len(SHIPPED_DEMOS)     # every shipped demo is in the wheel
    assert not any(tmp_path.iterdir())                                  # nothing written before it is opened
    (path,) = entries["Synthetic: launch bound"]()
    assert path.parent == tmp_path and path.is_file()
