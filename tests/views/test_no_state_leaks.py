"""Opening another trace leaves nothing of the first: its search text and matches, its selected time
range (band and panel), and the Compare page's "Before" when the tab filled it (a "Before" the user
chose stays) (pytest-qt, offscreen)."""
from __future__ import annotations

LOAD_TIMEOUT_MS = 60_000


def _load(qtbot, tab, paths) -> None:
    tab.open_paths(paths)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)


def test_a_second_trace_starts_clean(qtbot, tab, shared_traces, test_data):
    first = shared_traces / "h200" / "launch_bound_tiny.json.gz"
    second = test_data / "h200" / "nested_sum.json.gz"
    _load(qtbot, tab, [first])
    assert tab.compare.before_edit.text() == str(first)      # the open trace is the natural "before"
    tab.search_edit.setText("aten::mm")
    tab._on_search_entered()
    assert len(tab.matches) > 0
    a, b = tab.loaded.full_range_us
    band = tab.timeline.view_box.selection             # what a right-drag leaves: the band and the range
    band.setRegion((a + 0.1 * (b - a), a + 0.3 * (b - a)))
    band.show()
    tab.timeline.view_box.range_selected.emit(a + 0.1 * (b - a), a + 0.3 * (b - a))
    assert tab.state.selected_range is not None and tab.timeline.view_box.selection.isVisible()

    _load(qtbot, tab, [second])
    assert tab.search_edit.text() == "" and len(tab.matches) == 0
    assert tab.state.selected_range is None and not tab.timeline.view_box.selection.isVisible()
    assert tab.compare.before_edit.text() == str(second)     # not the session's first trace

    tab.compare.before_edit.setText(str(first))             # a "Before" the user chose stays
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    assert tab.compare.before_edit.text() == str(first)


def test_one_wording_of_a_verdict_in_the_tab_and_the_job_overview():
    from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
    from gpuperf_gui.views.trace.panels import verdict_words

    assert verdict_words("comm_bound", 1.0) == f"{REGISTRY['comm_bound'].label}, 100 %"
    assert verdict_words("comm_bound", 0.29, ("comm_bound", "launch_bound")) == (
        f"{REGISTRY['comm_bound'].label} ~ {REGISTRY['launch_bound'].label}, 29 %")
    import inspect

    from gpuperf_gui.views import cluster_dialog
    from gpuperf_gui.views.trace import panels as trace_panels

    for module in (cluster_dialog, trace_panels):   # both screens word it through the one function
        assert "verdict_words(" in inspect.getsource(module)
