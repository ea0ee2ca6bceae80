"""The GPU-idle gaps after a blocking sync are drawn in the host_sync_bound signature's colour, in
the lanes (the idle strip under a compute stream) and in the Ranks heatmap's host-sync metric."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

from gpuperf_gui.core.trace.model.lanes import IdleGaps
from gpuperf_gui.core.trace.model.lod import LaneRows, row_index
from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.views.trace.heatmap import metric_colormap
from gpuperf_gui.views.trace.lane_item import IDLE_COLOR, IDLE_STRIP_PX, TraceLaneItem
from gpuperf_gui.views.trace.style import GAP_KIND_COLORS, SIGNATURE_COLOURS, legend_entries, make_palette


def _strip_colours(qtbot, kinds: list[int]) -> list[QColor]:
    """Three 100 µs kernels with two 100 µs gaps of ``kinds`` between them, drawn 600 px wide:
    the colour at the middle of each gap's strip."""
    start, dur = np.array([0.0, 200.0, 400.0]), np.full(3, 100.0)
    s, e, indices = LaneRows.split(start, dur)
    rows = LaneRows(tuple(row_index(s, e, i) for i in indices), tuple(indices))
    gaps = IdleGaps(np.array([100.0, 300.0]), np.array([200.0, 300.0 + 100.0]), np.array(kinds))
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(700, 120)
    widget.getPlotItem().hideAxis("left")
    widget.getPlotItem().hideAxis("bottom")
    vb = widget.getViewBox()
    vb.invertY(True)
    item = TraceLaneItem(rows, np.zeros(3, np.int16), make_palette(), lambda i: "k", 0.0, 18.0, gaps)
    vb.addItem(item)
    vb.setRange(xRange=(0.0, 500.0), yRange=(0.0, item.height_px), padding=0.0)
    widget.show()
    qtbot.waitExposed(widget)
    item.set_view(0.0, 500.0, float(vb.width()))
    image = widget.grab().toImage()
    out = []
    for mid_us in (150.0, 350.0):
        pos = widget.mapFromScene(vb.mapViewToScene(pg.Point(mid_us, 18.0 + IDLE_STRIP_PX / 2)))
        out.append(image.pixelColor(pos.x(), pos.y()))
    return out


def _hue(c: QColor) -> float:
    return c.hueF()


def test_gaps_after_a_sync_are_drawn_in_the_host_sync_colour(qtbot) -> None:
    plain, sync = _strip_colours(qtbot, [0, 1])
    want = QColor(SIGNATURE_COLOURS["host_sync_bound"])
    assert GAP_KIND_COLORS["host_sync"] == SIGNATURE_COLOURS["host_sync_bound"]
    # blended over the white background the hue stays the brush's: brown for the sync gap, red for the other
    assert abs(_hue(sync) - want.hueF()) < 0.03 and sync.saturationF() > 0.1, sync.name()
    assert abs(_hue(plain) - QColor(IDLE_COLOR).hueF()) < 0.03 and plain.saturationF() > 0.3, plain.name()
    assert sync.name() != plain.name()


def test_legend_and_heatmap_name_the_host_sync_colour_from_the_registry() -> None:
    label = REGISTRY["host_sync_bound"].label
    assert (f"{label} idle", SIGNATURE_COLOURS["host_sync_bound"]) in legend_entries()
    top = metric_colormap("host-sync idle").map(np.array([1.0]), mode="qcolor")[0]
    assert top.name() == QColor(SIGNATURE_COLOURS["host_sync_bound"]).name()
