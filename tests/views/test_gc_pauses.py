"""While a trace is shown, the objects alive when it was shown are out of the garbage collector's
reach (a full collection of them, ~30 ms, would land in some frame); opening the next trace and
closing the tab hand them back (pytest-qt, offscreen)."""
from __future__ import annotations

import gc

LOAD_TIMEOUT_MS = 60_000


def test_shown_trace_is_frozen_until_the_next_open(qtbot, tab, shared_traces, test_data):
    gc.unfreeze()
    tab.open_paths([shared_traces / "h200" / "launch_bound_tiny.json.gz"])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded is not None
    assert gc.get_freeze_count() > 10_000             # the window and the trace's panels and lanes
    tab.open_paths([test_data / "h200" / "nested_sum.json.gz"])
    assert gc.get_freeze_count() == 0                 # loading: every object is collectable again
    gc.freeze()
    tab.shutdown()
    assert gc.get_freeze_count() == 0                 # and when the tab goes
