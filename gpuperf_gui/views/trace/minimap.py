"""The minimap track above the Trace tab's lanes: every rank's GPU activity over the whole trace.

One row per rank (darker = busier, from core's :func:`~gpuperf_gui.core.trace.analysis.overview.activity_profile`),
late ranks marked, and a movable window showing the lanes' visible range: drag it to pan, drag its
edges to zoom, click elsewhere to centre the view there.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor

from gpuperf_gui.core.trace.analysis.overview import ActivityProfile

ROW_PX = 7
MIN_HEIGHT_PX = 26
MAX_HEIGHT_PX = 80


class _MinimapViewBox(pg.ViewBox):
    clicked = Signal(float)

    def mouseClickEvent(self, ev) -> None:  # noqa: N802, ANN001 (pyqtgraph override)
        if ev.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.mapSceneToView(ev.scenePos()).x())
            ev.accept()
        else:
            ev.ignore()

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: N802, ANN001
        ev.ignore()

    def wheelEvent(self, ev, axis=None) -> None:  # noqa: N802, ANN001
        ev.ignore()


class TraceMinimap(pg.PlotWidget):
    """Overview track; ``range_requested(x0_us, x1_us)`` asks the timeline to show that range."""

    range_requested = Signal(float, float)

    def __init__(self, parent=None) -> None:  # noqa: ANN001
        self.view_box = _MinimapViewBox(enableMenu=False)
        super().__init__(parent, viewBox=self.view_box)
        plot = self.getPlotItem()
        for name in ("bottom", "top", "right"):
            plot.hideAxis(name)
        plot.showAxis("left")
        axis = plot.getAxis("left")
        axis.setWidth(200)   # the timeline's lane-name axis width: both time axes line up
        axis.setStyle(tickLength=0, showValues=True)
        axis.setTicks([[(0.5, "GPU activity")], []])
        plot.hideButtons()
        plot.setMenuEnabled(False)
        self.setBackground("w")
        self.view_box.setMouseEnabled(x=False, y=False)
        self.view_box.invertY(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(_lookup_table())
        self.view_box.addItem(self.image)
        self.late_items: list[pg.QtWidgets.QGraphicsRectItem] = []
        self.window = pg.LinearRegionItem(brush=QBrush(QColor(70, 130, 220, 50)),
                                          pen=pg.mkPen(QColor(40, 90, 200), width=1.5))
        self.window.setZValue(10)
        self.view_box.addItem(self.window)
        self.window.sigRegionChanged.connect(self._on_window_moved)
        self.view_box.clicked.connect(self._on_clicked)
        self._updating = False
        self.profile: ActivityProfile | None = None
        self.setFixedHeight(MIN_HEIGHT_PX)
        self.setToolTip("GPU activity of every rank over the whole trace (darker = busier; late ranks "
                        "marked orange). Drag the blue window to pan, its edges to zoom, click to centre.")

    def set_profile(self, profile: ActivityProfile, late_rows: list[int] | None = None) -> None:
        """Draw ``profile`` (rows in rank order); ``late_rows`` are marked."""
        self.profile = profile
        n_rows, n_bins = profile.busy.shape
        label = "GPU activity" if n_rows <= 1 else f"GPU activity, {n_rows} ranks"
        self.getPlotItem().getAxis("left").setTicks([[(max(n_rows, 1) / 2, label)], []])
        self.image.setImage(profile.busy if n_rows else np.zeros((1, 1)), levels=(0.0, 1.0), autoLevels=False)
        width = profile.end_us - profile.start_us
        self.image.setRect(QRectF(profile.start_us, 0.0, width, max(n_rows, 1)))
        for item in self.late_items:
            self.view_box.removeItem(item)
        self.late_items = []
        for row in late_rows or []:
            mark = pg.QtWidgets.QGraphicsRectItem(QRectF(profile.start_us, row, width, 1.0))
            mark.setPen(pg.mkPen(QColor(216, 67, 21), width=2, cosmetic=True))
            mark.setBrush(QBrush(Qt.BrushStyle.NoBrush))
            self.view_box.addItem(mark)
            self.late_items.append(mark)
        self.view_box.setRange(xRange=(profile.start_us, profile.end_us), yRange=(0, max(n_rows, 1)), padding=0.0)
        self.setFixedHeight(int(min(max(MIN_HEIGHT_PX, ROW_PX * n_rows + 6), MAX_HEIGHT_PX)))
        self.set_view_range(profile.start_us, profile.end_us)

    def set_view_range(self, x0_us: float, x1_us: float) -> None:
        """Move the window to the lanes' visible range (no signal)."""
        self._updating = True
        try:
            self.window.setRegion((x0_us, x1_us))
        finally:
            self._updating = False

    def _on_window_moved(self) -> None:
        if self._updating:
            return
        a, b = self.window.getRegion()
        if b > a:
            self.range_requested.emit(float(a), float(b))

    def _on_clicked(self, x_us: float) -> None:
        a, b = self.window.getRegion()
        half = (b - a) / 2
        self.range_requested.emit(x_us - half, x_us + half)


def _lookup_table() -> np.ndarray:
    """White (idle) to dark green (busy)."""
    t = np.linspace(0.0, 1.0, 256)[:, None]
    white, green = np.array([255, 255, 255]), np.array([20, 110, 60])
    return (white + (green - white) * t).astype(np.ubyte)
