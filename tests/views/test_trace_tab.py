"""The Trace tab on real and synthetic traces (offscreen, pytest-qt)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from gpuperf_gui.views.trace.timeline import EventRef

H200 = ("healthy_gpt_small", "launch_bound_tiny", "decode_bf16", "memory_bound_visible")
LOAD_TIMEOUT_MS = 60_000
# The recorded scenario of each trace (SOURCES.md; test_trace_diagnose.EXPECTED), not the engine's output
LABELS = {"healthy_gpt_small": "healthy", "launch_bound_tiny": "launch_bound", "decode_bf16": "launch_bound",
          "memory_bound_visible": "memory_bound", "dlrm_kineto": "comm_bound"}


def _load(qtbot, tab, paths: list[Path]) -> None:
    tab.open_paths(paths)
    assert tab.is_busy()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    tab.timeline.refold()


def _engine_signature(paths: list[Path]) -> str:
    from gpuperf_gui.core.trace.session.trace import Trace

    return Trace(paths, workers=1).result().diagnosis.signature


def _check_bounded(tab) -> None:
    width = tab.timeline.view_box.width()
    bound = 2 * (width / 3 + width / 12 + 2) + 1
    for item in tab.timeline.lanes:
        for n in item.rect_counts():
            assert n <= bound, (n, bound)


@pytest.mark.parametrize("name", H200)
def test_each_h200_trace_opens_with_the_engines_diagnosis(qtbot, tab, shared_traces, name):
    path = shared_traces / "h200" / f"{name}.json.gz"
    _load(qtbot, tab, [path])
    assert tab.loaded is not None, tab.message.text()
    assert tab.timeline.lanes, "no lanes drawn"
    kinds = {spec.kind for spec in tab.timeline.lane_specs}
    assert "cpu" in kinds and "gpu_compute" in kinds
    assert tab.diagnosis.signature == LABELS[name] == _engine_signature([path])
    assert tab.diagnosis.signature.replace("_", "") in tab.diagnosis.toPlainText().lower().replace("-", "")
    assert tab.op_panel.model.rowCount() > 0
    _check_bounded(tab)


def test_multi_rank_folder_stacks_ranks(qtbot, tab, shared_traces):
    folder = shared_traces / "param" / "dlrm_kineto"
    _load(qtbot, tab, [folder])
    model = tab.loaded.model
    assert len(model.ranks) == 8
    assert {spec.rank_index for spec in tab.timeline.lane_specs} == set(range(8))
    assert tab.diagnosis.signature == LABELS["dlrm_kineto"] == _engine_signature([folder])
    assert "Ranks" in tab.diagnosis.toPlainText()
    # ranks are stacked: each rank's lanes lie below the previous rank's
    first_y = [min(item.y0_px for spec, item in zip(tab.timeline.lane_specs, tab.timeline.lanes)
                   if spec.rank_index == r) for r in range(8)]
    assert first_y == sorted(first_y)
    assert tab.rank_combo.count() == 8


def _kernel_with_launch(tab) -> tuple[EventRef, EventRef]:
    rank = tab.loaded.model.ranks[0]
    flows = rank.flows
    shown = {(s.rank_index, s.lane_id) for s in tab.timeline.lane_specs}
    durations = np.array([rank.lanes[int(lane)].duration_us[int(i)]
                          for lane, i in zip(flows.dst_lane, flows.dst_index)])
    for k in np.argsort(-durations):
        src = EventRef(0, int(flows.src_lane[k]), int(flows.src_index[k]))
        dst = EventRef(0, int(flows.dst_lane[k]), int(flows.dst_index[k]))
        if (0, src.lane_id) in shown and (0, dst.lane_id) in shown:
            return dst, src
    raise AssertionError("no launch flow between shown lanes")


def test_clicking_a_kernel_selects_it_and_its_launch(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    kernel, launch = _kernel_with_launch(tab)
    lane = tab.loaded.model.ranks[0].lanes[kernel.lane_id]
    start = float(lane.start_us[kernel.index])
    end = start + float(lane.duration_us[kernel.index])
    tab.timeline.zoom_to(start, end, pad_fraction=1.0)
    item = tab.timeline.lane_item(0, kernel.lane_id)
    rect = item.event_rect(kernel.index)
    tab.timeline.scroll_to_y(rect.center().y())
    qtbot.wait(50)
    scene = tab.timeline.view_box.mapViewToScene(QPointF(rect.center().x(), rect.center().y()))
    pos = tab.timeline.mapFromScene(scene)
    qtbot.mouseClick(tab.timeline.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert tab.selected_event == kernel
    assert launch in tab.selected_partners()
    assert tab.timeline.flow_item.segments, "no arrow drawn to the partner"
    name = tab.loaded.model.ranks[0].strings[int(lane.name_id[kernel.index])]
    assert name in tab.details.toPlainText()
    # the partner link in the details panel selects the launch call
    tab._on_partner_link(f"event:0:{launch.lane_id}:{launch.index}")
    assert tab.selected_event == launch
    assert kernel in tab.selected_partners()


def test_zooming_keeps_rectangles_bounded_by_width(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"])
    a, b = tab.loaded.full_range_us
    for zoom in (1.0, 0.3, 0.05, 0.01, 1e-3, 1e-4):
        t0 = a + 0.4 * (b - a) * (1 - zoom)
        tab.timeline.zoom_to(t0, t0 + zoom * (b - a), pad_fraction=0.0)
        _check_bounded(tab)
    (x0, x1), _ = tab.timeline.view_box.viewRange()
    qtbot.keyClick(tab.timeline, Qt.Key.Key_S)          # S zooms out by one step (1.25x) around the centre
    (y0, y1), _ = tab.timeline.view_box.viewRange()
    assert y1 - y0 == pytest.approx(1.25 * (x1 - x0)) and (y0 + y1) / 2 == pytest.approx((x0 + x1) / 2)
    qtbot.keyClick(tab.timeline, Qt.Key.Key_A)          # A pans left by 15 % of the view
    (z0, z1), _ = tab.timeline.view_box.viewRange()
    assert z0 == pytest.approx(y0 - 0.15 * (y1 - y0)) and z1 - z0 == pytest.approx(y1 - y0)
    for _ in range(4):                      # keyboard navigation (W/S zoom, A/D pan)
        qtbot.keyClick(tab.timeline, Qt.Key.Key_S)
        qtbot.keyClick(tab.timeline, Qt.Key.Key_A)
    tab.timeline.refold()
    _check_bounded(tab)
    tab.timeline.reset_view()
    (x0, x1), _ = tab.timeline.view_box.viewRange()
    assert x0 <= a and x1 >= b


def test_cancel_keeps_the_previous_state(qtbot, tab, shared_traces):
    tab.open_paths([shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"])
    tab.cancel()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded is None
    assert "cancelled" in tab.message.text().lower()
    # a second open while busy replaces the first
    tab.open_paths([shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"])
    tab.open_paths([shared_traces / "h200" / "memory_bound_visible.json.gz"])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded is not None
    assert Path(tab.loaded.files[0]).name == "memory_bound_visible.json.gz"


def test_errors_and_truncation_are_shown_in_the_tab(qtbot, tab, tmp_path):
    bad = tmp_path / "not_a_trace.json"
    bad.write_text("this is not JSON")
    _load(qtbot, tab, [bad])
    assert tab.loaded is None
    assert tab.message.isVisible() and "Could not open" in tab.message.text()

    from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

    whole = write_synth_trace("launch_bound", tmp_path / "whole.json")
    cut = tmp_path / "cut.json"
    data = whole.read_bytes()
    cut.write_bytes(data[: int(len(data) * 0.6)])
    _load(qtbot, tab, [cut])
    assert tab.loaded is not None
    assert "truncated" in tab.message.text().lower()


def test_search_highlights_and_steps_through_matches(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"])
    tab.search_edit.setText("nccl")
    qtbot.keyClick(tab.search_edit, Qt.Key.Key_Return)
    n = len(tab._matches)
    assert n > 100
    assert tab.search_results.count() > 0
    first = tab._matches[0]
    tab.step_match(+1)
    assert tab.selected_event == first
    tab.step_match(+1)
    tab.step_match(-1)
    assert tab.selected_event == first
    name_of = tab.loaded.model.ranks[0]
    lane = name_of.lanes[first.lane_id]
    assert "nccl" in name_of.strings[int(lane.name_id[first.index])].lower()
    assert any(any(f is not None for f in item._highlight) for item in tab.timeline.lanes)


def test_op_table_row_highlights_its_events(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    tab.op_panel.kernel_button.setChecked(True)
    assert tab.op_panel.model.table.columns[0] == "Kernel"
    tab.op_panel.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)
    tab.op_panel.select_first_row()
    # the raw file by plain Python: the kernel with the most device time, and how often it ran
    import gzip
    import json
    from collections import Counter

    total_us, calls = Counter(), Counter()
    for e in json.load(gzip.open(shared_traces / "h200" / "healthy_gpt_small.json.gz"))["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            total_us[e["name"]] += e["dur"]
            calls[e["name"]] += 1
    top = total_us.most_common(1)[0][0]
    rank = tab.loaded.model.ranks[0]
    names = {rank.strings[int(rank.lanes[m.lane_id].name_id[m.index])] for m in tab._matches}
    assert names == {top} and len(tab._matches) == calls[top] == 76
    assert tab.match_label.text().startswith(f"{calls[top]} × ")


def test_send_to_mfu_and_show_on_roofline(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    assert tab.mfu_button.isEnabled()
    with qtbot.waitSignal(tab.mfu_figures_ready) as blocker:
        tab.mfu_button.click()
    # healthy_gpt_small.meta.json: median step 59.13 ms unprofiled; profiled steps are slower, < 40 %
    assert 0.05913039 < blocker.args[0].step_time_s < 1.4 * 0.05913039
    assert tab.roofline_button.isEnabled()  # the GPT has GEMMs with recorded shapes
    with qtbot.waitSignal(tab.roofline_points_ready) as blocker:
        tab.roofline_button.click()
    name, points = blocker.args
    flops = {p.label: p.flops for p in points}
    # the LM head, 3 profiled steps: 3 × 2·(16·1024)·1536·50304 FLOPs by hand
    assert flops["aten::mm [[16384, 1536], [1536, 50304]] x3"] == 3 * 2 * 16384 * 1536 * 50304
    # the GEMMs are most of torch's FlopCounterMode count (26.46 TFLOP a step, meta.json) over 3 steps
    assert 0.9 < sum(flops.values()) / (3 * 26_459_146_027_008) <= 1.0
    assert name == "trace: healthy_gpt_small (H200)"  # the device the points were measured on


def test_demo_entries_materialise_and_synthetic_scenarios_diagnose_as_named(qtbot, tab):
    from gpuperf_gui.core.trace.synthetic.synth import SCENARIOS
    from gpuperf_gui.core.trace.session.demos import demo_entries

    entries = demo_entries()
    assert len(entries) >= len(SCENARIOS) + 3
    for title, materialise in entries:
        paths = materialise()
        assert paths and all(p.exists() for p in paths), title
    for scenario in ("launch_bound", "data_starved"):
        title, materialise = next(e for e in entries if e[0] == f"Synthetic: {scenario.replace('_', ' ')}")
        _load(qtbot, tab, materialise())
        assert tab.diagnosis.signature == scenario


def test_drop_opens_the_dropped_file(qtbot, tab, shared_traces):
    from PySide6.QtCore import QMimeData, QUrl
    from PySide6.QtGui import QDropEvent

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(shared_traces / "h200" / "memory_bound_visible.json.gz"))])
    event = QDropEvent(QPointF(100, 100), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    tab.dropEvent(event)
    assert tab.is_busy()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded is not None


def _drawn_axis_labels(axis) -> set[str]:
    """The tick labels pyqtgraph actually draws (it silently drops one wider than the axis)."""
    from PySide6.QtGui import QPainter, QPicture

    picture = QPicture()
    painter = QPainter(picture)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return {text for _, _, text in texts}


def test_every_lane_of_the_two_rank_demo_has_a_visible_label(qtbot, tab):
    from gpuperf_gui.core.trace.session.demos import demo_entries

    materialise = dict(demo_entries())["Real: two ranks of a sampled production job (HTA)"]
    _load(qtbot, tab, materialise())
    axis = tab.timeline.left_axis
    long_names = [spec.label for spec in tab.timeline.lane_specs if axis.elide(spec.label) != spec.label]
    assert any("[pyper:trainer:0:0]" in name for name in long_names)  # the thread names QA saw vanish
    y0, y1 = tab.timeline.view_box.viewRange()[1]
    visible = {axis.elide(text) for top, _, text in axis.full_labels if y0 <= top and top + 12 < y1}
    assert len(visible) >= 10
    assert visible <= _drawn_axis_labels(axis)  # every lane in view has its label drawn
    for spec in tab.timeline.lane_specs:  # the full name stays available as the hovered lane's tooltip
        y = tab.timeline.lane_y(spec.rank_index, spec.lane_id)
        assert axis.label_at(y + 1) == spec.label


def test_step_header_and_steps_table_show_the_same_step_time(qtbot, tab, shared_traces):
    from gpuperf_gui.views.trace.panels import STEP_TIME_NOTE
    from gpuperf_gui.views.trace.timeline import step_label_variants

    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    spec = tab.timeline.backdrop.ranks[0][2]
    table = {n: us for n, us, _, _ in tab.loaded.diagnosis.steps}
    assert spec.step_durations_us == pytest.approx(table)
    # the CPU runs ahead of the GPU here (CPU span ~27 ms, step ~62 ms): the header says both
    number, c0, c1, _, _ = spec.steps[1]
    longest = step_label_variants(spec, number, c1 - c0)[0]
    assert longest.startswith(f"step {number} · 6") and "(CPU 2" in longest
    text = tab.diagnosis.toPlainText()
    assert "step time" in text and STEP_TIME_NOTE.split(":")[0] in text


def test_an_idle_threshold_typed_while_loading_is_applied(qtbot, tab, shared_traces):
    from gpuperf_gui.core.trace.model.lod import idle_gaps

    tab.open_paths([shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    assert tab.is_busy()
    tab.idle_spin.setValue(500.0)
    tab.idle_spin.editingFinished.emit()  # ignored while loading: no trace to redraw yet
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded.idle_threshold_us == 500.0
    for spec, item in zip(tab.timeline.lane_specs, tab.timeline.lanes):
        if spec.kind == "gpu_compute":
            lane = tab.loaded.model.ranks[spec.rank_index].lanes[spec.lane_id]
            starts, _ends = idle_gaps(lane.start_us, lane.start_us + lane.duration_us, 500.0)
            assert (0 if item._gaps is None else len(item._gaps.starts)) == len(starts)


def test_prepared_trace_has_typed_figures_and_the_engines_kernel_shares(qtbot, tab, shared_traces):
    from gpuperf_gui.core.trace.session.trace import Trace
    from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures

    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    _load(qtbot, tab, [path])
    prepared = tab.loaded
    assert isinstance(prepared.mfu_figures, TraceMfuFigures) and prepared.roofline_points
    kernels = prepared.op_tables[prepared.model.ranks[0].rank]["kernels"]
    rows = {o.name: o for o in Trace([path], workers=1).result().ranks[0].ops if o.device_share is not None}
    assert {r[0] for r in kernels.rows} == set(rows)
    for name, _calls, total_us, mean_us, share in kernels.rows:  # the engine's figures, in µs
        assert share == rows[name].device_share
        assert mean_us == pytest.approx(rows[name].mean_device_s * 1e6)
    assert sum(r[4] for r in kernels.rows) == pytest.approx(1.0)
    tab.search_edit.setText("nccl")
    assert tab.state.last_query is None
    tab._on_search_entered()
    assert tab.state.last_query == ("name", "nccl")


def test_the_tabs_synthetic_demo_traces_are_removed_at_shutdown(qtbot):
    from gpuperf_gui.views.trace.tab import TraceTab

    widget = TraceTab(None)
    qtbot.addWidget(widget)
    materialise = dict(widget.demo_entries())["Synthetic: launch bound"]
    paths = materialise()
    assert paths and all(p.exists() for p in paths)
    widget.shutdown()
    assert not any(p.exists() for p in paths) and not paths[0].parent.exists()
    widget.shutdown()  # twice (closeEvent, then the main window): harmless


def test_one_files_lanes_show_before_its_analysis(qtbot, tab, shared_traces, monkeypatch):
    """One file: the lanes are drawn (and can be explored) while its analysis runs, the diagnosis
    panel says so; the diagnosis, steps and op table follow, and only then ``trace_loaded``."""
    import threading

    from gpuperf_gui.core.trace.session.trace import Trace

    monkeypatch.setenv("GPUPERF_TRACE_INPROCESS", "1")   # the analysis held back here, by a gate
    gate = threading.Event()
    real = Trace._analyse_model
    monkeypatch.setattr(Trace, "_analyse_model", staticmethod(lambda model: (gate.wait(30), real(model))[1]))
    seen: list = []
    tab.lanes_shown.connect(lambda: seen.append(("lanes", tab.diagnosis.toPlainText(), tab.op_panel.model.rowCount())))
    tab.trace_loaded.connect(lambda: seen.append(("loaded", tab.diagnosis.signature)))
    path = shared_traces / "h200" / "memory_bound_visible.json.gz"
    tab.open_paths([path])
    qtbot.waitUntil(lambda: bool(seen), timeout=LOAD_TIMEOUT_MS)
    assert seen[0][0] == "lanes" and "Analysing" in seen[0][1] and seen[0][2] == 0
    assert tab.timeline.lanes and tab.is_busy() and tab.progress_row.isVisible()
    tab.timeline.zoom_to(*tab.loaded.full_range_us)   # the lanes answer meanwhile
    assert tab.search_edit.isEnabled()
    found_meanwhile = tab.search("ProfilerStep", "name")
    gate.set()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert seen[-1] == ("loaded", LABELS["memory_bound_visible"]) and len(seen) == 2
    assert tab.op_panel.model.rowCount() > 0 and tab.step_combo.count() > 1
    # the file's ProfilerStep#2..5 annotations (4 on the CPU, 4 copies on the GPU): found meanwhile as after
    assert found_meanwhile == tab.search("ProfilerStep", "name") in (4, 8)
