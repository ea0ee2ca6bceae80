"""The Trace tab's pages and lane tools: overview, minimap, range summary, search modes, collapse/pin/
filter ranks, the late-rank highlight, the rank × step heatmap and the Compare page (pytest-qt)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from trace_builders import hand_trace, straggler_job  # noqa: E402 (tests/core/trace_builders.py)

LOAD_TIMEOUT_MS = 60_000


def _load(qtbot, tab, paths: list[Path]) -> None:
    with qtbot.waitSignal(tab.trace_loaded, timeout=LOAD_TIMEOUT_MS):
        tab.open_paths(paths)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    tab.timeline.refold()


def test_overview_page_draws_the_step_breakdown_and_top_kernels(qtbot, tab, tmp_path):
    _load(qtbot, tab, [hand_trace(tmp_path / "hand.json")])
    tab.pages.setCurrentWidget(tab.overview)
    plot = tab.overview.step_plot
    # two steps: 1100 µs and 1000 µs tall (hand-counted in tests/core/test_trace_session.py)
    assert plot.totals_ms == pytest.approx([1.1, 1.0])
    legend = {item[1].text for item in plot.legend.items}
    assert {"compute", "exposed comm kernels", "idle (HTA's): host wait", "idle (HTA's): kernel wait",
            "idle (HTA's): other"} <= legend
    table = tab.overview.kernels
    names = {table.item(r, 0).toolTip() for r in range(table.rowCount())}
    from gpuperf_gui.core.trace.synthetic.synth import ALLREDUCE, ELEMENTWISE, GEMM

    assert names == {GEMM, ALLREDUCE, ELEMENTWISE}
    gemm_row = next(r for r in range(table.rowCount()) if table.item(r, 0).toolTip() == GEMM)
    assert table.item(gemm_row, 2).text() == "3"                       # three GEMM launches
    assert table.item(gemm_row, 3).text() == "690 µs"                  # 300 + 90 + 300
    assert table.item(gemm_row, 5).text() == "yes"                     # sm90_xmma_gemm_bf16...
    cards = tab.overview.cards.text()
    assert "GPU utilisation" in cards and "Tensor cores" in cards


def test_overview_percent_of_roof_follows_the_device(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    page = tab.overview
    assert page.kernels.rowCount() == 0            # a hidden page is drawn when first shown
    tab.show_page("overview")
    assert page.kernels.rowCount() > 0
    from dataclasses import replace

    from gpuperf_gui.core.hardware import load_database

    h200 = load_database().get("h200")   # the trace's GPU, at the kernel's own precision (bf16)
    page.set_roof(h200, "H200")
    top = page.rank.top_kernels[0]
    texts = [page.kernels.item(r, 0).toolTip() for r in range(page.kernels.rowCount())]
    row = texts.index(top.name)
    assert page.kernels.item(row, 8).text() == "bf16"
    first = page.kernels.item(row, 7).text()
    assert first.endswith("%") and 0 < float(first.split()[0]) <= 100
    twice = replace(h200, dense_flops_per_s={k: 2 * v for k, v in h200.dense_flops_per_s.items()},
                    memory_bandwidth_bytes_per_s=2 * h200.memory_bandwidth_bytes_per_s)
    page.set_roof(twice, "twice the roof")
    second = page.kernels.item(row, 7).text()
    assert float(second.split()[0]) == pytest.approx(float(first.split()[0]) / 2, abs=0.1)
    page.set_roof(None, "")
    assert page.kernels.item(row, 7).text() == "–"
    # a double-click on a kernel finds its launches in the timeline
    page.kernels.itemDoubleClicked.emit(page.kernels.item(row, 2))
    assert tab.pages.currentWidget() is tab.main_split
    assert len(tab.matches) == top.calls and tab.loaded.details(tab.selected_event).name == top.name
    # and the open trace is offered as the Compare page's "before"
    assert tab.compare.before_edit.text() == tab.loaded.files[0]


def test_right_drag_summarises_the_range(qtbot, tab, tmp_path):
    _load(qtbot, tab, [hand_trace(tmp_path / "hand.json")])
    t0 = tab.loaded.full_range_us[0]
    tab.timeline.zoom_to(t0, t0 + 2000, pad_fraction=0.0)
    vb = tab.timeline.view_box
    qtbot.wait(20)

    def to_widget(x_us: float) -> QPointF:
        scene = vb.mapViewToScene(QPointF(x_us, 40.0))
        return QPointF(tab.timeline.mapFromScene(scene))

    start, end = to_widget(t0 + 300), to_widget(t0 + 750)
    viewport = tab.timeline.viewport()
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    def send(kind, pos, buttons):  # noqa: ANN001
        ev = QMouseEvent(kind, pos, viewport.mapToGlobal(pos), Qt.MouseButton.RightButton, buttons,
                         Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, ev)

    send(QMouseEvent.Type.MouseButtonPress, start, Qt.MouseButton.RightButton)
    for k in range(1, 11):
        send(QMouseEvent.Type.MouseMove, start + (end - start) * (k / 10), Qt.MouseButton.RightButton)
    send(QMouseEvent.Type.MouseButtonRelease, end, Qt.MouseButton.NoButton)
    summary = tab.range_panel.summary
    assert summary is not None, "the drag selected no range"
    assert summary.t0_us - t0 == pytest.approx(300, abs=5) and summary.t1_us - t0 == pytest.approx(750, abs=5)
    assert tab.bottom_tabs.currentWidget() is tab.range_panel
    text = tab.range_panel.toPlainText()
    assert "Device time by kernel class" in text and "gemm" in text and "Top kernels in the range" in text


def test_minimap_marks_the_view_and_pans_the_lanes(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    a, b = tab.loaded.full_range_us
    assert tab.minimap.profile.busy.shape[0] == 1
    assert tab.minimap.profile.busy.mean() == pytest.approx(
        tab.loaded.activity(tab.minimap.profile.busy.shape[1]).busy.mean())
    tab.timeline.zoom_to(a + 0.1 * (b - a), a + 0.2 * (b - a), pad_fraction=0.0)
    qtbot.wait(10)
    lo, hi = tab.minimap.window.getRegion()
    assert lo == pytest.approx(a + 0.1 * (b - a)) and hi == pytest.approx(a + 0.2 * (b - a))
    # dragging the window (here: setting it as a drag does) moves the lanes
    tab.minimap.window.setRegion((a + 0.5 * (b - a), a + 0.6 * (b - a)))
    (x0, x1), _ = tab.timeline.view_box.viewRange()
    assert (x0, x1) == pytest.approx((a + 0.5 * (b - a), a + 0.6 * (b - a)))
    # a click centres the window where it lands
    tab.minimap._on_clicked(a + 0.8 * (b - a))
    (x0, x1), _ = tab.timeline.view_box.viewRange()
    assert (x0 + x1) / 2 == pytest.approx(a + 0.8 * (b - a))


def test_search_modes_and_the_op_table_filter(qtbot, tab, shared_traces):
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    _load(qtbot, tab, [path])
    with gzip.open(path, "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    drawn = {(s.rank_index, s.lane_id) for s in tab.timeline.lane_specs}
    assert drawn
    tab.search_mode.setCurrentIndex(tab.search_mode.findData("regex"))
    tab.search_edit.setText(r"^aten::(addmm|mm)$")
    qtbot.keyClick(tab.search_edit, Qt.Key.Key_Return)
    expected = sum(1 for e in raw if e["name"] in ("aten::addmm", "aten::mm"))
    assert len(tab.matches) == expected
    tab.filter_ops_check.setChecked(True)
    proxy = tab.op_panel.proxy
    shown = {proxy.data(proxy.index(r, 0)) for r in range(proxy.rowCount())}
    assert shown == {n for n in ("aten::addmm", "aten::mm") if any(e["name"] == n for e in raw)}
    # a kernel class: the kernel view filtered to the GEMM kernels
    tab.op_panel.kernel_button.setChecked(True)
    tab.search_mode.setCurrentIndex(tab.search_mode.findData("class"))
    tab.search_edit.setText("gemm")
    qtbot.keyClick(tab.search_edit, Qt.Key.Key_Return)
    shown = {proxy.data(proxy.index(r, 0)) for r in range(proxy.rowCount())}
    nvjet = {e["name"] for e in raw if e.get("cat") == "kernel" and e["name"].startswith("nvjet")}
    assert nvjet <= shown <= tab.matches.names          # cuBLAS' Hopper GEMMs, among the class's kernels
    assert not any("elementwise" in n for n in shown)
    # a bad regex says so and clears the filter
    tab.search_mode.setCurrentIndex(tab.search_mode.findData("regex"))
    tab.search_edit.setText("(unclosed")
    qtbot.keyClick(tab.search_edit, Qt.Key.Key_Return)
    assert "bad regex" in tab.match_label.text() and len(tab.matches) == 0
    assert proxy.rowCount() == tab.op_panel.model.rowCount()
    tab.filter_ops_check.setChecked(False)


def test_late_rank_is_highlighted_and_listed_first(qtbot, tab, tmp_path):
    _load(qtbot, tab, [straggler_job(tmp_path / "job")])
    specs = tab.timeline.rank_specs
    assert [s.straggler for s in specs] == [False, True]
    assert "late" in specs[1].title
    # the backdrop paints the late rank's header in its own colour
    from gpuperf_gui.views.trace.timeline import STRAGGLER_HEADER

    image = tab.timeline.grab().toImage()
    header_y = next(y0 for y0, _, ri in tab.timeline.header_spans if ri == 1)
    scene = tab.timeline.view_box.mapViewToScene(QPointF(tab.loaded.full_range_us[0], header_y + 4))
    pos = tab.timeline.mapFromScene(scene)
    x = int(tab.timeline.left_axis.width()) + 40
    color = image.pixelColor(x, pos.y())
    assert (color.red(), color.green(), color.blue()) == (
        STRAGGLER_HEADER.red(), STRAGGLER_HEADER.green(), STRAGGLER_HEADER.blue())
    text = tab.diagnosis.toPlainText()
    assert "Late: rank 1" in text
    assert text.index("1 late") < text.index("\n0")  # the ranks table lists the late rank first
    assert tab.minimap.late_items, "the minimap marks the late rank"
    # the Ranks page lists the late rank first and opens it
    assert tab.pages.isTabEnabled(tab.pages.indexOf(tab.heatmap))
    tab.show_page("ranks")
    assert tab.heatmap.ranks == [1, 0]
    assert np.all(np.isfinite(tab.heatmap.values))
    tab.heatmap.metric_combo.setCurrentText("exposed comm")
    assert tab.heatmap.values.shape == (2, 5)
    tab.heatmap._on_row_clicked(0)
    assert tab.pages.currentWidget() is tab.main_split
    assert tab.timeline.rank_order()[0] == 1


def test_collapse_pin_and_filter_ranks(qtbot, tab, shared_traces):
    folder = shared_traces / "param" / "dlrm_kineto"
    _load(qtbot, tab, [folder])
    timeline = tab.timeline
    n_ranks = len(tab.loaded.model.ranks)
    all_lanes = len(timeline.lane_specs)
    height = timeline.view_box.content_height_px
    # click rank 3's header: it collapses to its header strip
    y0, y1, _ = next(h for h in timeline.header_spans if h[2] == 3)
    tab._on_rank_header_clicked(3)
    assert 3 in timeline.collapsed_ranks
    assert not any(s.rank_index == 3 for s in timeline.lane_specs)
    assert timeline.view_box.content_height_px < height
    timeline._on_clicked(tab.loaded.full_range_us[0], (y0 + y1) / 2, False)   # a click on the header again
    assert 3 not in timeline.collapsed_ranks and len(timeline.lane_specs) == all_lanes
    # a double-click folds a CPU thread to its outermost row, a second one unfolds it
    spec, item = next((s, i) for s, i in zip(timeline.lane_specs, timeline.lanes) if s.kind == "cpu" and i.n_rows > 1)
    rows = item.n_rows
    timeline._on_clicked(tab.loaded.full_range_us[0], item.y0_px + 2, True)
    folded = timeline.lane_item(spec.rank_index, spec.lane_id)
    assert folded.n_rows == 1
    assert timeline.left_axis.label_at(folded.y0_px + 1).endswith(f"+{rows - 1} rows")
    timeline._on_clicked(tab.loaded.full_range_us[0], folded.y0_px + 2, True)
    assert timeline.lane_item(spec.rank_index, spec.lane_id).n_rows == rows
    # CPU threads of every rank collapse; GPU lanes stay
    timeline.set_group_collapsed(None, "CPU", True)
    assert {s.kind for s in timeline.lane_specs} <= {"gpu_compute", "gpu_comm", "gpu_copy"}
    timeline.set_group_collapsed(None, "CPU", False)
    # pin rank 5: it is drawn first
    timeline.set_pinned(5, True)
    assert timeline.rank_order()[0] == 5
    first_lane = min(timeline.lanes, key=lambda item: item.y0_px)
    assert timeline.lane_specs[timeline.lanes.index(first_lane)].rank_index == 5
    # filter: only ranks 0 and 5, and a search then only finds events in them
    tab.filter_ranks({0, 5})
    assert {s.rank_index for s in timeline.lane_specs} == {0, 5}
    assert set(timeline.rank_order()) == {0, 5} and n_ranks == 8
    tab.search("nccl", "name")
    assert len(tab.matches) and set(tab.matches.rank_index.tolist()) <= {0, 5}
    tab._build_ranks_menu()       # the Lanes menu shows the state: rank 3 not shown, 5 pinned
    sub = {a.text(): a.menu() for a in tab.ranks_menu.actions() if a.menu() is not None}
    assert len(sub) == n_ranks
    checks = {a.text(): a.isChecked() for a in sub[tab.loaded.ranks[3].title].actions() if a.isCheckable()}
    assert checks["Shown"] is False
    assert {a.text(): a.isChecked() for a in sub[tab.loaded.ranks[5].title].actions()}["Pinned to the top"]
    shown_action = next(a for a in sub[tab.loaded.ranks[3].title].actions() if a.text() == "Shown")
    shown_action.setChecked(True)           # the menu shows rank 3 again
    assert {s.rank_index for s in timeline.lane_specs} == {0, 3, 5}
    tab.filter_ranks(None)
    assert len(timeline.lane_specs) == all_lanes
    tab._collapse_all()
    assert not timeline.lane_specs and len(timeline.header_spans) == n_ranks
    tab._expand_all()
    assert len(timeline.lane_specs) == all_lanes


@pytest.mark.parametrize("isolate", ["1", "0"], ids=["in-process", "helper-process"])
def test_compare_page_shows_before_and_after(qtbot, tab, test_data, monkeypatch, isolate):
    monkeypatch.setenv("GPUPERF_TRACE_INPROCESS", isolate)
    from gpuperf_gui.core.trace.session.diff import diff_paths

    before, after = test_data / "h200" / "eager_small.json.gz", test_data / "h200" / "compiled_small.json.gz"
    page = tab.compare
    assert page is not None and tab.pages.indexOf(page) >= 0
    with qtbot.waitSignal(page.compared, timeout=LOAD_TIMEOUT_MS):
        page.compare_paths([before], [after])
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=LOAD_TIMEOUT_MS)
    expected = diff_paths([before], [after], workers=1)
    assert page.diff.speedup == pytest.approx(expected.speedup)
    head = page.headline.text()
    ratio = expected.speedup if expected.speedup >= 1 else 1 / expected.speedup
    assert f"{ratio:.2f}×" in head
    labels = [page.figures.item(r, 0).text() for r in range(page.figures.rowCount())]
    assert labels[0] == "step time" and "GPU busy" in labels
    before_bars, after_bars = page.class_bars.heights
    assert before_bars.sum() / 1e3 == pytest.approx(expected.before.kernel_time_s)
    assert after_bars.sum() / 1e3 == pytest.approx(expected.after.kernel_time_s)
    assert page.ops.rowCount() == min(25, len(expected.ops))
    assert "What changed" in page.changes.toPlainText()
    assert expected.diagnosis_before.signature.replace("_", "") in \
        page.diag_before.toPlainText().lower().replace("_", "").replace("-", "").replace(" ", "")


def test_compare_page_reports_a_bad_file(qtbot, tab, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not a trace")
    page = tab.compare
    with qtbot.waitSignal(page.compare_failed, timeout=LOAD_TIMEOUT_MS):
        page.compare_paths([bad], [bad])
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert "Could not compare" in page.headline.text()
    page.compare_paths([tmp_path / "missing.json"], [bad])
    assert "Not found" in page.headline.text() and not page.is_busy()


def test_the_synthetic_straggler_demo_names_and_highlights_the_late_rank(qtbot, tab):
    entries = dict(tab.demo_entries())
    title = next(t for t in entries if t.startswith("Synthetic: straggler"))
    assert "ranks" in title
    paths = entries[title]()
    assert len(paths) == 1 and paths[0].is_dir()
    _load(qtbot, tab, paths)
    late = tab.loaded.diagnosis.stragglers
    assert tab.diagnosis.signature == "straggler" and len(late) == 1
    text = tab.diagnosis.toPlainText()
    assert f"Late: rank {late[0]}" in text and "Straggler" in text
    late_index = tab.loaded.straggler_rank_indices()
    assert [s.straggler for s in tab.timeline.rank_specs] == [i in late_index for i in range(len(tab.loaded.ranks))]
    tab.show_page("ranks")
    assert tab.heatmap.ranks[0] == late[0]
    tab.show_page("overview")
    assert tab.overview.rank_combo.itemText(late_index[0]).endswith("(late)")
    assert tab.overview.rank.rank == late[0]          # the page opens on the late rank


def test_file_menu_compare_opens_the_compare_page(qtbot, make_main_window):
    window = make_main_window()
    window.show_tab("roofline")
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&File")
    action = next(a for a in file_menu.actions() if a.text().startswith("&Compare two traces"))
    action.trigger()
    assert window.current_tab_key() == "trace"
    assert window.trace_tab.pages.currentWidget() is window.trace_tab.compare
    profile = next(a for a in file_menu.actions() if a.text() == "&Profile a script…")
    assert profile.isEnabled() and window.trace_tab.profiler is not None and not window.trace_tab.profiler.isVisible()
