"""The what-if in the window: the critical path on the lanes, the Overview's projections, the MFU
tab's "What if" (pytest-qt). The numbers are core's (tests/core/test_what_if.py checks them), and
the loading worker finds them: the views only draw the snapshot (core/trace/session/what_if_shown.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import grimp

from gpuperf_gui.core.trace.analysis import critical_path, what_if
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.diagnosis.figures import mfu_figures
from gpuperf_gui.core.trace.analysis.what_if import for_result
from gpuperf_gui.core.trace.session.what_if_shown import what_if_shown

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
TRACE = H200 / "data_starved_loader0.json.gz"
LOAD_TIMEOUT_MS = 60_000


def _load(qtbot, tab, paths: list[Path]) -> None:  # noqa: ANN001
    with qtbot.waitSignal(tab.trace_loaded, timeout=LOAD_TIMEOUT_MS):
        tab.open_paths(paths)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)


def _no_walking(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("the GUI walked the dependency graph (the loading worker does)")


def test_views_never_import_the_graph() -> None:
    """No view module imports the what-if's or the critical path's engine: what they show comes
    with the loaded trace (AnalysisUpdate.what_if), found off the GUI thread."""
    graph = grimp.build_graph("gpuperf_gui")
    views = [m for m in graph.modules if m.startswith("gpuperf_gui.views")]
    for engine in ("gpuperf_gui.core.trace.analysis.what_if", "gpuperf_gui.core.trace.analysis.critical_path"):
        assert not [m for m in views if graph.direct_import_exists(importer=m, imported=engine)], engine


@pytest.mark.slow
def test_critical_path_toggle_and_overview_list(qtbot, tab, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    _load(qtbot, tab, [TRACE])
    expected = [p.cause for p in for_result(Trace([TRACE]).result()).projections]   # what diagnose finds
    # Everything below draws what the worker sent: walking the graph now would fail.
    for module, name in ((what_if, "project"), (critical_path, "build_graph"), (critical_path, "replay")):
        monkeypatch.setattr(module, name, _no_walking)
    tab._build_ranks_menu()  # noqa: SLF001 (the menu is made when it opens)
    action = next(a for a in tab.ranks_menu.actions() if a.text().startswith("Highlight the critical path"))
    action.setChecked(True)
    masks = tab.timeline._highlight_masks  # noqa: SLF001
    assert masks and any(m.any() for m in masks.values())
    gpu_lanes = {lid for (ri, lid) in masks if tab.loaded.model.ranks[ri].lanes[lid].kind != "cpu"}
    assert gpu_lanes  # kernels are on a data-starved step's path too (62 % DataLoader, the rest GPU)
    tab.show_critical_path(False)
    assert tab.timeline._highlight_masks is None  # noqa: SLF001
    tab.show_page("overview")
    table = tab.overview.what_if.table
    causes = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert causes == expected and causes[0] == "data_stall"


def test_mfu_tab_what_if_selector(qtbot) -> None:  # noqa: ANN001
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.mfu.tab import MfuTab

    tab = MfuTab(AppContext(device_id="h200", precision="bf16"))
    qtbot.addWidget(tab)
    result = Trace([H200 / "eager_tiny.json.gz"]).result()
    wi = what_if_shown(result)
    figures = replace(mfu_figures([r.analysis for r in result.ranks]), what_if=wi.rows)
    tab.apply_trace_figures(figures)
    sel = tab.what_if
    assert sel.combo.count() == len(wi.rows) + 1
    sel.set_mfu(0.10)
    sel.combo.setCurrentIndex(1)  # the largest gain first
    p = wi.rows[0]
    assert sel.selected() is p
    assert f"MFU 10.0 % → {10 * p.speedup_upper_bound:.1f} %" in sel.readout.text()
    assert f"then dominant: {p.new_dominant}" in sel.readout.text()


def test_try_first_carries_the_clis_projection(qtbot, tab) -> None:  # noqa: ANN001
    """The diagnosis panel's "Try first" carries the fix's projected speedup, the same line
    `gpuperf diagnose` prints (GUI = CLI), on a trace whose fix has a projection (.item() per
    micro-batch: host syncs)."""
    import contextlib
    import io

    from gpuperf_gui import cli

    trace = H200 / "item_per_microbatch.json.gz"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["diagnose", str(trace)]) == 0
    cli_line = next(line for line in out.getvalue().splitlines() if line.startswith("Try first: "))
    _load(qtbot, tab, [trace])
    qtbot.waitUntil(lambda: tab.loaded is not None and tab.loaded.diagnosis is not None, timeout=LOAD_TIMEOUT_MS)
    assert "projected <= " in cli_line
    assert tab.loaded.diagnosis.projection == cli_line.removeprefix("Try first: ")
    assert "projected &lt;= " in tab.diagnosis.toHtml() or "projected <= " in tab.diagnosis.toPlainText()
