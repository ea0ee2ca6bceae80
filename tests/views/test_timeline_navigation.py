"""Timeline navigation as Perfetto does it: W/S zoom about the mouse, names of slices that begin
off-screen at the left edge, rank headers elided at the end (offscreen, pytest-qt)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

from gpuperf_gui.views.trace.lane_item import sticky_label_span

LOAD_TIMEOUT_MS = 60_000


def _load(qtbot, tab, paths) -> None:
    tab.open_paths(paths)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    tab.timeline.refold()


def test_w_and_s_zoom_about_the_time_under_the_mouse(qtbot, tab, shared_traces):
    _load(qtbot, tab, [shared_traces / "h200" / "launch_bound_tiny.json.gz"])
    timeline, view = tab.timeline, tab.timeline.view_box
    (x0, x1), _ = view.viewRange()
    rect = view.sceneBoundingRect()
    mouse = QPointF(rect.left() + 0.2 * rect.width(), rect.center().y())  # a fifth from the left
    timeline.scene().sigMouseMoved.emit(mouse)
    t_mouse = view.mapSceneToView(mouse).x()
    qtbot.keyClick(timeline, Qt.Key.Key_W)             # zoom in by one step (1.25x)
    (y0, y1), _ = view.viewRange()
    assert y1 - y0 == pytest.approx((x1 - x0) / 1.25)
    assert view.mapSceneToView(mouse).x() == pytest.approx(t_mouse, rel=1e-9, abs=1e-6)  # stays put
    assert (y0 + y1) / 2 != pytest.approx((x0 + x1) / 2)   # not about the centre
    qtbot.keyClick(timeline, Qt.Key.Key_S)
    (z0, z1), _ = view.viewRange()
    assert (z0, z1) == (pytest.approx(x0), pytest.approx(x1))
    timeline.scene().sigMouseMoved.emit(QPointF(-50.0, -50.0))  # the mouse left the lanes: the centre
    qtbot.keyClick(timeline, Qt.Key.Key_W)
    (w0, w1), _ = view.viewRange()
    assert (w0 + w1) / 2 == pytest.approx((z0 + z1) / 2)


@pytest.mark.parametrize("x,w,left,expected", [
    (100.0, 80.0, 0.0, (100.0, 80.0)),     # on screen: unchanged
    (-8.0, 300.0, 0.0, (0.0, 292.0)),      # begun off-screen: at the edge, with what is visible
    (40.0, 200.0, 120.0, (120.0, 120.0)),  # the view's edge right of the device's 0 (axis)
    (-8.0, 5.0, 0.0, (0.0, 0.0)),          # ended off-screen: nothing to write in
])
def test_a_label_sticks_to_the_left_edge(x, w, left, expected):
    assert sticky_label_span(x, w, left) == expected


def test_rank_headers_are_elided_at_the_end_not_mid_name(qtbot, tab):
    axis = tab.timeline.left_axis
    title = "rank 173 · trainer_worker_with_a_very_long_hostname_0123456789.pt.trace.json (GPU 3)"
    elided = axis.elide_header(title)
    assert elided.startswith("rank 173 · trainer") and elided.endswith("…") and len(elided) < len(title)
    assert axis.elide(title) != elided  # lanes keep the middle elision that drops "(process)"


def test_a_healthy_step_launched_ahead_does_not_read_as_no_launches(qtbot, tab, shared_traces):
    # healthy_gpt_small: 808 kernels in the steady-state window, all launched before it (the host
    # runs a step ahead), so the host's launch calls in the window are 0
    _load(qtbot, tab, [shared_traces / "h200" / "healthy_gpt_small.json.gz"])
    text = tab.diagnosis.toPlainText()
    assert "launch calls per ms (host, in the window)" in text
    assert "0 launch calls in the window for 808 kernels" in text
    _load(qtbot, tab, [shared_traces / "h200" / "launch_bound_tiny.json.gz"])  # launched in the window
    assert "launch calls in the window for" not in tab.diagnosis.toPlainText()
