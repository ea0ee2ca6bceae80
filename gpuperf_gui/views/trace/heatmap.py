"""The Trace tab's Ranks page: a rank × step heatmap for jobs with many ranks.

Rows are ranks (late ranks first, then by rank), columns the steady-state steps; the colour is the
chosen metric from core's :meth:`~gpuperf_gui.core.trace.analysis.overview.Overview.rank_step_matrix` (busy,
exposed comm, idle as fractions of the step, or the step time). Clicking a row asks the tab to show
that rank's lanes. :class:`RankLanePreview` draws one rank's coarse lane summary (the job window).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from gpuperf_gui.core.trace.vocabulary.glossary import STEP_EXPOSED_COMM
from gpuperf_gui.core.trace.analysis.overview import HEATMAP_METRIC_SIGNATURE, HEATMAP_METRICS, Overview
from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.views.trace.style import SIGNATURE_COLOURS, format_duration_us, format_percent

MAX_ROW_LABELS = 64
METRIC_OF_SIGNATURE = {name: sig.heatmap_metric for name, sig in REGISTRY.items() if sig.heatmap_metric}
"""The heatmap's first metric for a job's diagnosis (the user's choice is kept otherwise)."""
METRIC_COLOURS = {metric: SIGNATURE_COLOURS[name] for metric, name in HEATMAP_METRIC_SIGNATURE.items()}
"""A metric that is one signature's own figure runs from white to that signature's colour (others: viridis)."""


def metric_colormap(metric: str) -> pg.ColorMap:
    """The heatmap's colours for ``metric``."""
    colour = METRIC_COLOURS.get(metric)
    return pg.ColorMap([0.0, 1.0], ["#ffffff", colour]) if colour else pg.colormap.get("viridis")
ROW_LABEL_PX = 14
"""Least height between two row labels (font height and a little air): more ranks than fit get
every k-th label, the late ranks always."""
MAX_LABELLED_CELLS = 240
LATE_ROW_MIN_PX = 10
"""A late rank's row is drawn at least this tall (repeated image rows): at 256 ranks a row is ~1 px."""


class _HeatmapViewBox(pg.ViewBox):
    row_clicked = Signal(int)

    def mouseClickEvent(self, ev) -> None:  # noqa: N802, ANN001 (pyqtgraph override)
        if ev.button() == Qt.MouseButton.LeftButton:
            self.row_clicked.emit(int(math.floor(self.mapSceneToView(ev.scenePos()).y())))
            ev.accept()
        else:
            ev.ignore()


class RankStepHeatmap(QWidget):
    """Ranks × steps, one metric at a time; ``rank_opened(rank)`` when a row is clicked."""

    rank_opened = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.overview: Overview | None = None
        self._dirty = False
        self.ranks: list[int] = []
        self.steps: list[int] = []
        self.values = np.zeros((0, 0))
        self.display_rows = np.zeros(0, np.int64)
        self.metric_combo = QComboBox()
        self.metric_combo.addItems(list(HEATMAP_METRICS))
        self.metric_combo.setToolTip("What the colour shows. exposed comm: " + STEP_EXPOSED_COMM.tooltip())
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Ranks × steps</b>"))
        top.addWidget(self.metric_combo)
        top.addWidget(self.caption, 1)
        self.view_box = _HeatmapViewBox(enableMenu=False, invertY=True)
        self.view_box.setMouseEnabled(x=False, y=False)
        self.plot = pg.PlotWidget(viewBox=self.view_box)
        self.plot.setBackground("w")
        self.plot.getPlotItem().hideButtons()
        self.plot.setLabel("bottom", "step")
        self.plot.setLabel("left", "rank")
        for name in ("bottom", "left"):
            self.plot.getAxis(name).enableAutoSIPrefix(False)
        self.labels: list[pg.TextItem] = []
        self.image = pg.ImageItem(axisOrder="row-major")
        self.view_box.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False, width=14)
        self.colorbar.setImageItem(self.image, insert_in=self.plot.getPlotItem())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        self.metric_combo.currentTextChanged.connect(lambda _t: self._draw())
        self.view_box.row_clicked.connect(self._on_row_clicked)
        self.image.hoverEvent = self._on_hover   # a tooltip with the cell's value

    def set_overview(self, overview: Overview | None, signature: str | None = None) -> None:
        """Show ``overview``; drawn now if the page is visible, else when it is first shown. With the
        job's diagnosis ``signature``, the colour starts on the figure that tells it (a straggler's
        row differs in exposed communication, not in busy time)."""
        metric = METRIC_OF_SIGNATURE.get(signature or "")
        if metric is not None:
            with QSignalBlocker(self.metric_combo):
                self.metric_combo.setCurrentText(metric)
        self.overview = overview
        self._dirty = True
        if self.isVisible():
            self._draw()

    def showEvent(self, event) -> None:  # noqa: N802, ANN001 (Qt override)
        super().showEvent(event)
        if self._dirty:
            self._draw()

    @property
    def metric(self) -> str:
        return self.metric_combo.currentText()

    def _draw(self) -> None:
        self._dirty = False
        if self.overview is None or not self.overview.ranks:
            self.ranks, self.steps, self.values = [], [], np.zeros((0, 0))
            self.display_rows = np.zeros(0, np.int64)
            self.image.clear()
            self._label_cells()
            self._show_axes(False)   # no -0.5…0.5 placeholder axes while nothing is loaded
            self.caption.setText("no trace")
            return
        self._show_axes(True)
        self.ranks, self.steps, self.values = self.overview.rank_step_matrix(self.metric)
        self.display_rows = self._display_rows()
        data = self.values[self.display_rows] if self.values.size else np.zeros((1, 1))
        finite = data[np.isfinite(data)]
        if self.metric == "step time":
            lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            hi = hi if hi > lo else lo + 1e-9
        else:
            lo, hi = 0.0, 1.0
        self.image.setImage(np.nan_to_num(data, nan=lo), autoLevels=False, levels=(lo, hi))
        self.colorbar.setColorMap(metric_colormap(self.metric))
        self.colorbar.setLevels((lo, hi))
        self._label_cells()
        n_rows, n_cols = data.shape
        self.image.setRect(QRectF(-0.5, 0.0, n_cols, n_rows))  # image rows: late ones repeated
        self.view_box.setRange(xRange=(-0.5, n_cols - 0.5), yRange=(0, n_rows), padding=0.0)
        late = set(self.overview.stragglers)
        self._set_row_ticks()
        col_every = max(1, math.ceil(len(self.steps) / 40))
        self.plot.getAxis("bottom").setTicks([[(j, str(n)) for j, n in enumerate(self.steps) if j % col_every == 0], []])
        unit = "s" if self.metric == "step time" else "fraction of the step"
        self.caption.setText(f"<span style='color:#666'>{self.metric} ({unit}); late ranks first"
                             f"{' (' + ', '.join(map(str, self.overview.stragglers)) + ')' if late else ''}; "
                             "warm-up steps left out; click a rank to show its lanes</span>")

    def _show_axes(self, shown: bool) -> None:
        for name in ("bottom", "left"):
            axis = self.plot.getAxis(name)
            axis.setStyle(showValues=shown)
            axis.setLabel(("step" if name == "bottom" else "rank") if shown else "")

    def _display_rows(self) -> np.ndarray:
        """Image row -> matrix row: a late rank's row repeated to be LATE_ROW_MIN_PX tall at least."""
        n = len(self.ranks)
        late = set(self.overview.stragglers) if self.overview is not None else set()
        height = self.view_box.height()
        row_px = height / max(n, 1) if height > 0 else float(LATE_ROW_MIN_PX)
        repeat = max(1, math.ceil(LATE_ROW_MIN_PX / max(row_px, 1e-3))) if row_px < LATE_ROW_MIN_PX else 1
        counts = [repeat if r in late else 1 for r in self.ranks]
        return np.repeat(np.arange(n), counts)

    def _row_of_image_y(self, y: float) -> int:
        """The matrix row drawn at image height ``y`` (-1 outside)."""
        k = int(math.floor(y))
        return int(self.display_rows[k]) if 0 <= k < len(self.display_rows) else -1

    def _set_row_ticks(self) -> None:
        """Rank labels on the left axis, as many as the plot's height holds, the late ranks always
        (a rank label too close to a late one is left out)."""
        if self.overview is None or not self.ranks:
            self.plot.getAxis("left").setTicks([[], []])
            return
        height = self.view_box.height()
        n_image = max(len(self.display_rows), 1)
        px_per_row = height / n_image if height > 0 else float(ROW_LABEL_PX)
        # rows between two labels: a label needs ROW_LABEL_PX, and at most MAX_ROW_LABELS are written
        every = max(1, math.ceil(ROW_LABEL_PX / max(px_per_row, 1e-3)), math.ceil(n_image / MAX_ROW_LABELS))
        late = set(self.overview.stragglers)
        centre = {}   # matrix row -> the centre of its (possibly repeated) image rows
        for k, i in enumerate(self.display_rows.tolist()):
            lo, hi = centre.get(i, (k, k + 1))
            centre[i] = (min(lo, k), max(hi, k + 1))
        late_ys = [(lo + hi) / 2 for i, (lo, hi) in centre.items() if self.ranks[i] in late]
        ticks = []
        last_y = -math.inf
        for i, (lo, hi) in sorted(centre.items(), key=lambda kv: kv[1][0]):
            y, rank = (lo + hi) / 2, self.ranks[i]
            if rank in late:
                ticks.append((y, f"{rank} late"))
                last_y = y
            elif y - last_y >= every and all(abs(y - ly) >= every for ly in late_ys):
                ticks.append((y, str(rank)))
                last_y = y
        self.plot.getAxis("left").setTicks([ticks, []])

    def resizeEvent(self, event) -> None:  # noqa: N802, ANN001 (Qt override)
        super().resizeEvent(event)
        if not self.ranks:
            return
        if np.array_equal(self._display_rows(), self.display_rows):
            self._set_row_ticks()
        else:
            self._draw()   # the late rows' repeat depends on the height

    def _label_cells(self) -> None:
        """Write each value into its cell while there are few enough cells to read."""
        for item in self.labels:
            self.view_box.removeItem(item)
        self.labels = []
        n_rows, n_cols = self.values.shape
        if n_rows * n_cols > MAX_LABELLED_CELLS:
            return
        lo, hi = self.colorbar.levels()
        for i in range(n_rows):
            for j in range(n_cols):
                v = float(self.values[i, j])
                high = math.isfinite(v) and (v - lo) > 0.6 * (hi - lo)
                bright = high != (self.metric in METRIC_COLOURS)   # viridis turns yellow high; white->colour low
                item = pg.TextItem(self.value_text(i, j), color=(20, 20, 20) if bright else (255, 255, 255),
                                   anchor=(0.5, 0.5))
                rows_drawn = np.flatnonzero(self.display_rows == i)
                item.setPos(j, float(rows_drawn.mean()) + 0.5 if rows_drawn.size else i + 0.5)
                self.view_box.addItem(item)
                self.labels.append(item)

    def value_text(self, row: int, col: int) -> str:
        v = float(self.values[row, col])
        if not math.isfinite(v):
            return "–"
        return format_duration_us(v * 1e6) if self.metric == "step time" else format_percent(v)

    def _on_hover(self, ev) -> None:  # noqa: ANN001
        if ev.isExit() or not self.values.size:
            self.image.setToolTip("")
            return
        p = ev.pos()
        row, col = self._row_of_image_y(p.y()), int(math.floor(p.x()))
        if 0 <= row < len(self.ranks) and 0 <= col < len(self.steps):
            self.image.setToolTip(f"rank {self.ranks[row]}, step {self.steps[col]}: {self.metric} "
                                  f"{self.value_text(row, col)}")

    def _on_row_clicked(self, image_row: int) -> None:
        row = self._row_of_image_y(image_row + 0.5)
        if 0 <= row < len(self.ranks):
            self.rank_opened.emit(self.ranks[row])


PREVIEW_SKIPS = frozenset({"gpu_annotation"})
"""Lane kinds the preview leaves out: annotations (ProfilerStep and record_function ranges on the
GPU timeline) mark time, they are not work."""


class RankLanePreview(QWidget):
    """One rank's lanes at a coarse level of detail, from its compact result (no events): each lane's
    busy fraction in :data:`~gpuperf_gui.core.trace.engine.cluster.LANE_BINS` bins over the rank's span."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rank: int | None = None
        self.values = np.zeros((0, 0))
        self.caption = QLabel("<span style='color:#666'>Select a rank to see its lanes in brief</span>")
        self.caption.setWordWrap(True)
        self.plot = pg.PlotWidget()
        self.plot.setBackground("w")
        self.plot.getPlotItem().hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.getViewBox().invertY(True)
        self.plot.setLabel("bottom", "time from the rank's start (ms)")
        for name in ("bottom", "left"):
            self.plot.getAxis(name).enableAutoSIPrefix(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.plot.addItem(self.image)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.caption)
        layout.addWidget(self.plot, 1)

    def show_rank(self, rank: int | None, summary: object | None) -> None:
        """Draw ``summary``'s lanes (a :class:`~gpuperf_gui.core.trace.engine.cluster.RankSummary`); None clears."""
        lanes = [lane for lane in getattr(summary, "lanes", []) if lane.events and lane.kind not in PREVIEW_SKIPS]
        self.rank = rank if lanes else None
        if not lanes:
            self.values = np.zeros((0, 0))
            self.image.clear()
            self.caption.setText("<span style='color:#666'>no lanes</span>")
            return
        self.values = np.stack([lane.busy for lane in lanes])
        t0, t1 = summary.span_us  # type: ignore[union-attr]
        span_ms = max((t1 - t0) / 1e3, 1e-6)
        self.image.setImage(self.values, autoLevels=False, levels=(0.0, 1.0))
        self.image.setRect(QRectF(0.0, 0.0, span_ms, len(lanes)))
        every = max(1, math.ceil(len(lanes) * ROW_LABEL_PX / max(self.plot.getViewBox().height(), ROW_LABEL_PX)))
        self.plot.getAxis("left").setTicks([[(i + 0.5, lane.label[:26]) for i, lane in enumerate(lanes)
                                             if i % every == 0], []])
        self.plot.getViewBox().setRange(xRange=(0, span_ms), yRange=(0, len(lanes)), padding=0.0)
        self.caption.setText(f"<span style='color:#666'>rank {rank}: {len(lanes)} lanes in brief (busy fraction "
                             f"in {self.values.shape[1]} bins, yellow is busy; GPU annotations left out). "
                             "Open the rank for its events.</span>")


__all__ = ["RankLanePreview", "RankStepHeatmap"]
