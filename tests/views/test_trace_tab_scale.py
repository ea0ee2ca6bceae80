"""What keeps the Trace tab responsive on big traces (offscreen, pytest-qt): the set-up in slices,
the step backdrop's level of detail, the bounded step table, the opaque band shades.

Stalls themselves are measured by benchmarks/trace_tab_scale.py, not here (no timed tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QRectF

LOAD_TIMEOUT_MS = 60_000


def _built(path: Path):
    from gpuperf_gui.core.trace.session.trace import Trace
    from gpuperf_gui.core.trace.session.loaded_trace import build_loaded_trace

    return build_loaded_trace(Trace([path], workers=1).result(), 10.0)


def _receive(tab, loaded) -> None:  # noqa: ANN001
    """An open whose worker yields ``loaded`` (what the task runner's item calls)."""
    from gpuperf_gui.core.trace.session.load_state import RunItem

    tab._on_item_produced(RunItem(tab.state.open(), loaded))   # noqa: SLF001


def test_a_trace_is_shown_in_event_loop_slices(qtbot, tab, shared_traces):
    """The lanes item does the timeline's part and returns; the panels follow on later turns of the
    event loop, and the tab stays busy (what --screenshot and the tests wait on) until the end."""
    loaded = _built(shared_traces / "h200" / "healthy_gpt_small.json.gz")
    shown = []
    tab.trace_loaded.connect(lambda: shown.append(True))
    _receive(tab, loaded)
    assert tab.loaded is loaded and tab.is_busy() and not tab.timeline.lanes   # nothing drawn yet
    tab._run_setup_step()      # noqa: SLF001 - one slice, as the event loop would run it
    assert tab.timeline.lanes                                   # the lanes first...
    assert tab.is_busy() and not shown                          # ...the rest still to come
    assert tab.op_panel.tables is not loaded.op_tables[loaded.model.ranks[0].rank]
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert shown == [True]
    assert tab.op_panel.tables is loaded.op_tables[loaded.model.ranks[0].rank]
    assert tab.step_combo.count() == 1 + len(loaded.step_numbers())
    assert tab.stack.currentIndex() == 1 and not tab.progress_row.isVisible()


def test_a_newer_trace_replaces_a_set_up_in_progress(qtbot, tab, shared_traces):
    first = _built(shared_traces / "h200" / "healthy_gpt_small.json.gz")
    second = _built(shared_traces / "h200" / "memory_bound_visible.json.gz")
    _receive(tab, first)
    _receive(tab, second)      # a newer open, before the first one's slices have run
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert tab.loaded is second
    assert tab.op_panel.tables is second.op_tables[second.model.ranks[0].rank]
    assert tab.title.text().count("memory_bound_visible") == 1


class _CountingPainter:
    """Stands in for QPainter in BackdropItem._paint_step_bands: counts the rectangles."""

    def __init__(self) -> None:
        self.rects: list[QRectF] = []
        self.brushes = []

    def setBrush(self, brush) -> None:  # noqa: N802, ANN001
        self.brushes.append(brush)

    def drawRects(self, rects, count=None) -> None:  # noqa: N802, ANN001
        if count is None:
            self.rects += list(rects)
            return
        # Qt's (const QRectF *, int) form (trace_lane_item.draw_rects): read the array it points into
        import ctypes

        import shiboken6

        address = shiboken6.getCppPointer(rects)[0]
        values = np.ctypeslib.as_array((ctypes.c_double * (4 * count)).from_address(address))
        self.rects += [QRectF(*r) for r in values.reshape(count, 4).tolist()]


def _steps(n: int, span_us: float) -> np.ndarray:
    """n back-to-back steps over [0, span_us): CPU and GPU spans equal."""
    edges = np.linspace(0.0, span_us, n + 1)
    return np.column_stack([np.arange(n), edges[:-1], edges[1:], edges[:-1], edges[1:]])


@pytest.mark.parametrize(("n_steps", "dense"), [(20, False), (5000, True)])
def test_step_bands_are_bounded_by_the_width_not_the_step_count(qapp, n_steps, dense):
    from PySide6.QtGui import QColor

    from gpuperf_gui.views.trace.timeline import BackdropItem

    lanes = [(0.0, 100.0, False), (110.0, 130.0, True)]   # one CPU lane, one GPU lane
    painter = _CountingPainter()
    # 1000 µs across 1000 px: 20 steps are 50 px each, 5000 steps 0.2 px each
    got = BackdropItem._paint_step_bands(painter, _steps(n_steps, 1000.0), lanes, 1.0, 0.0, 1.0, 0.0,  # noqa: SLF001
                                         1000.0, QColor(255, 255, 255))
    assert got is dense
    # dense: one band per lane; else one per step per lane (the lanes' kinds each get their span)
    assert len(painter.rects) == (2 if dense else 2 * n_steps)
    assert all(b.alpha() == 255 for b in painter.brushes)     # drawn opaque


def test_only_the_steps_in_view_are_drawn(qapp):
    from PySide6.QtGui import QColor

    from gpuperf_gui.views.trace.timeline import BackdropItem

    painter = _CountingPainter()
    # 1000 steps of 10 µs; the view shows [2000, 2100) µs at 10 px per µs: 10 steps (+1 at each edge)
    BackdropItem._paint_step_bands(painter, _steps(1000, 10_000.0), [(0.0, 50.0, False)], 10.0, -20_000.0,  # noqa: SLF001
                                   1.0, 0.0, 1000.0, QColor(255, 255, 255))
    assert 10 <= len(painter.rects) <= 12


def test_band_shade_over_white_is_the_blended_colour(qapp):
    from PySide6.QtGui import QColor

    from gpuperf_gui.views.trace.timeline import over

    # (90, 120, 170) at alpha 28/255 over white: 255 - 28/255 * (255 - c), by hand: 236.9, 240.2, 245.7
    c = over(QColor(90, 120, 170, 28), QColor(255, 255, 255))
    assert (c.red(), c.green(), c.blue(), c.alpha()) == (237, 240, 246, 255)


def test_the_diagnosis_panel_lists_a_bounded_number_of_steps():
    from gpuperf_gui.core.trace.session.loaded_trace import DiagnosisView
    from gpuperf_gui.views.trace.panels import MAX_STEP_ROWS, diagnosis_html

    steps = [(n, 1000.0 + n, 0.5, n < 2) for n in range(3000)]
    d = DiagnosisView("healthy", 0.9, [], "", [], [], steps)
    html = diagnosis_html(d)
    assert html.count("<tr><td>") == MAX_STEP_ROWS
    assert f"the first {MAX_STEP_ROWS} of 3,000 steps" in html
    few = diagnosis_html(DiagnosisView("healthy", 0.9, [], "", [], [], steps[:7]))
    assert few.count("<tr><td>") == 7 and "of 7 steps" not in few
