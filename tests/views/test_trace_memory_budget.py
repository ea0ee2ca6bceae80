"""File ▸ Trace memory budget…: the window's setting for core/trace/ingest/budget.py, kept in QSettings."""
from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
# 216,092 events in a 3 MB gzip (SOURCES.md): decoding it needs far more than 16 MB.
BIG = DATA / "shared_traces/hta/df_index_resolver/df_index_resolver.json.gz"
SMALL = DATA / "backward_thread.json"


def test_a_load_over_the_budget_is_refused_with_the_budget_named(make_main_window, qtbot) -> None:
    window = make_main_window()
    assert window.trace_tab.memory_budget_bytes is None  # nothing saved: core's default
    assert window.set_trace_memory_budget("16MB")
    tab = window.trace_tab
    tab.open_paths([BIG])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=60_000)
    assert tab.loaded is None
    text = tab.message.text()
    assert "16 MB memory budget" in text and "Trace memory budget" in text
    tab.open_paths([SMALL])  # a 4 kB trace fits in 16 MB
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=60_000)
    assert tab.loaded is not None


def test_the_budget_is_kept_for_the_next_window_and_bad_values_are_refused(make_main_window) -> None:
    first = make_main_window()
    assert first.set_trace_memory_budget("8 GiB")
    assert first.trace_tab.memory_budget_bytes == 8 * 2**30
    assert not first.set_trace_memory_budget("lots")           # not a size
    assert not first.set_trace_memory_budget("1kB")            # under the 16 MB minimum
    assert "not changed" in first.statusBar().currentMessage()
    assert first.trace_tab.memory_budget_bytes == 8 * 2**30    # unchanged
    first.close()
    second = make_main_window()
    assert second.trace_tab.memory_budget_bytes == 8 * 2**30
    assert second.set_trace_memory_budget("")                  # back to the default
    assert second.trace_tab.memory_budget_bytes is None
