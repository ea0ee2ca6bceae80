"""The timeline's time axis lays out its ticks and labels as pyqtgraph does (the same lines, the same
texts in the same boxes), in fewer calls; its tick values are pyqtgraph's (offscreen, pytest-qt).

The expected values are pyqtgraph's own ``AxisItem.generateDrawSpecs`` and ``AxisItem.tickValues``
run on the same axis: the reference this layout must not drift from (a pixel moved in a tick would be
a changed picture)."""
from __future__ import annotations

import random

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage, QPainter

from gpuperf_gui.views.trace.timeline import TraceTimeline


@pytest.fixture
def timeline(qtbot):
    widget = TraceTimeline()
    qtbot.addWidget(widget)
    widget.resize(1429, 700)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _pyqtgraph_specs(axis, painter):  # noqa: ANN001, ANN202
    """pyqtgraph's specs, its ticks grouped by pen as (pen colour, (n, 4) lines)."""
    axis_spec, tick_specs, text_specs = pg.AxisItem.generateDrawSpecs(axis, painter)
    groups: list[tuple[int, list[list[float]]]] = []
    for pen, p1, p2 in tick_specs:
        if not groups or groups[-1][0] != pen.color().rgba():
            groups.append((pen.color().rgba(), []))
        groups[-1][1].append([p1.x(), p1.y(), p2.x(), p2.y()])
    return axis_spec, groups, text_specs


@pytest.mark.parametrize("seed", [1, 2])
def test_time_axis_specs_are_pyqtgraphs(timeline, seed):
    axis, box = timeline.time_axis, timeline.view_box
    image = QImage(1600, 1000, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    painter.setFont(axis.style["tickFont"] or painter.font())
    rnd = random.Random(seed)
    try:
        for _ in range(40):   # spans from 2 ns to ~3 h, anywhere on the time line
            start, span = rnd.uniform(-1e9, 1e10), 10 ** rnd.uniform(-3, 10)
            box.setXRange(start, start + span, padding=0.0)
            axis_spec, groups, texts = axis._top_specs(painter)
            ref_axis, ref_groups, ref_texts = _pyqtgraph_specs(axis, painter)
            assert (axis_spec[1], axis_spec[2]) == (ref_axis[1], ref_axis[2])
            mine = [(pen.color().rgba(), lines) for pen, lines in groups if len(lines)]
            assert [c for c, _ in mine] == [c for c, _ in ref_groups]
            for (_, lines), (_, ref) in zip(mine, ref_groups):
                assert np.array_equal(lines, np.array(ref))   # the same floats: the same pixels
            assert [(r, int(f), t) for r, f, t in texts] == [(r, int(f), t) for r, f, t in ref_texts]
            assert texts, "no label at all: the comparison would hold for an empty axis"
    finally:
        painter.end()


def test_tick_values_are_pyqtgraphs(timeline):
    axis = timeline.time_axis
    rnd = random.Random(3)
    for _ in range(2000):
        start, span, size = rnd.uniform(-1e9, 1e9), 10 ** rnd.uniform(-4, 10), rnd.uniform(50, 3000)
        assert axis.tickValues(start, start + span, size) == pg.AxisItem.tickValues(axis, start, start + span, size)
