"""The Roofline tab: datasheet and measured roofs of several devices/precisions, points placed on them.

Thin view (STYLE.md R2): every number comes from ``gpuperf_gui.core.roofline``. The plot is log-log;
pyqtgraph's log mode means non-curve items (labels, regions, arrows) live in log10 view coordinates.
Streamed points (benchmarks) go into a preallocated buffer redrawn by a ~30 Hz timer (R7, R8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core import roofline
from gpuperf_gui.core.bench.cache_levels import CacheRoof, describe
from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
from gpuperf_gui.core.hardware import PRECISIONS, Device
from gpuperf_gui.core.roofline import BYTES_PER_ELEMENT, PointAnalysis, RooflinePoint
from gpuperf_gui.core.units import format_si, parse_positive
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.plotting import XYBuffer, log_si_axes
from gpuperf_gui.views import settings_store
from gpuperf_gui.views.rich_text import plain_tooltip

AI_RANGE = (1e-2, 1e4)  # FLOP/byte shown on the x axis
REDRAW_INTERVAL_MS = 33  # ~30 Hz for streamed points
BAND_COLOURS = {  # lower edge of the efficiency band -> colour
    roofline.ABOVE_ROOF_TOLERANCE: "#7b3294",  # above the roof: the inputs are wrong
    0.9: "#1a9850", 0.7: "#66bd63", 0.5: "#a6d96a", 0.3: "#fdae61", 0.1: "#f46d43", 0.0: "#d73027",
}
# Tableau 10: one colour per device; the precision picks the line style.
DEVICE_COLOURS = ("#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#b07aa1", "#edc948",
                  "#ff9da7", "#9c755f", "#bab0ac")
PRECISION_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashDotLine, Qt.PenStyle.DotLine,
                    Qt.PenStyle.DashDotDotLine)
# cache roofs, one pattern per level (their ridges sit close together: the legend names them)
CACHE_STYLES = {"L1": Qt.PenStyle.DotLine, "L2": Qt.PenStyle.DashDotLine, "L3": Qt.PenStyle.DashDotDotLine}
INVALID_STYLE = "QLineEdit { border: 2px solid #d73027; background: #fdecea; }"
POINT_COLUMNS = ("point", "device", "AI", "achieved", "% of roof", "band")
BAND_COLUMN_PX = 120
CONTROLS_MIN_PX = 360  # the left column: roof picker, calculator, export
VISIBLE_TABLE_ROWS = 6   # the tables under the plot show this many whole rows, then scroll
ERROR_STYLE = "color: #b2182b;"
FOREIGN_BRUSH = (0, 0, 0, 0)  # points judged against another device's roof: hollow markers
VISIBLE_LIST_ROWS = 6        # the device list shows whole rows, this many before it scrolls


@dataclass(frozen=True)
class Roof:
    """One drawn ceiling: a device at a precision, from the datasheet or measured."""

    label: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    measured: bool = False
    device_id: str = ""
    precision: str = ""
    level: str = ""       # a cache roof ("L1", "L2", "L3": that level's measured bandwidth); "": memory

    @property
    def ridge(self) -> float:
        return roofline.ridge_flops_per_byte(self.peak_flops_per_s, self.bandwidth_bytes_per_s)


def roof_for(device: Device, precision: str, measured: bool = False) -> Roof:
    suffix = " measured" if measured else ""
    return Roof(f"{device.id} {precision}{suffix}", device.peak_flops_per_s(precision),
                device.bandwidth_bytes_per_s(), measured, device.id, precision)


def _parse_positive(edit: QLineEdit, optional: bool = False, whole: bool = False) -> float | None:
    """The field's positive number (core.units.parse_positive; ``whole``: a whole number up to
    2^40, as matrix sizes and element counts are); marks the field red (and returns None) when
    it is not."""
    text = edit.text().strip()
    if optional and not text:
        edit.setStyleSheet("")
        return None
    try:
        value: float | None = parse_positive(text, whole=whole,
                                             maximum=roofline.MAX_DIMENSION if whole else None)
    except ValueError:
        value = None
    edit.setStyleSheet("" if value is not None else INVALID_STYLE)
    edit.setToolTip("" if value is not None else
                    ("a whole number from 1 to 2^40" if whole else "a positive number"))
    return value


def _format_ai(ai: float) -> str:
    """FLOP/byte for a narrow column: 0.167, 42.7, 2,731 (no exponent)."""
    return f"{ai:.3g}" if ai < 1000 else f"{ai:,.0f}"


def _short_band(fraction: float | None) -> str:
    """The band in a few characters (its colour and the tooltip say the rest): ">70 %", "above roof"."""
    if fraction is None:
        return "no time"
    if fraction > roofline.ABOVE_ROOF_TOLERANCE:
        return "above roof!"
    lower = roofline.band_threshold(fraction)
    return f">{100 * lower:.0f} %" if lower > 0 else "<10 %"


def _wrapped(row: QHBoxLayout, per_line: int) -> QVBoxLayout:
    """``row``'s widgets on lines of ``per_line`` (the precision boxes fit a narrow column)."""
    column = QVBoxLayout()
    widgets = [row.itemAt(i).widget() for i in range(row.count())]
    for start in range(0, len(widgets), per_line):
        line = QHBoxLayout()
        for widget in widgets[start:start + per_line]:
            line.addWidget(widget)
        line.addStretch(1)
        column.addLayout(line)
    return column


def _fit_rows(view: QAbstractItemView, rows: int, max_rows: int, header_px: int = 0) -> None:
    """Size ``view`` to show ``rows`` whole rows (at most ``max_rows``; it scrolls beyond)."""
    view.ensurePolished()
    if isinstance(view, QTableWidget):
        row_px = view.verticalHeader().defaultSectionSize()
    else:
        row_px = (view.sizeHintForRow(0) if rows else 0) or view.fontMetrics().height() + 2
    shown = max(1, min(rows, max_rows))
    view.setFixedHeight(header_px + shown * row_px + 2 * view.frameWidth())


def roofline_title(roofs: list[Roof]) -> str:
    """The plot's title, naming only what is drawn."""
    if not roofs:
        return "Roofline — no roof to draw"
    kinds = []
    if any(not r.measured for r in roofs):
        kinds.append("datasheet dense peaks" + (" (solid)" if any(r.measured for r in roofs) else ""))
    if any(r.measured and not r.level for r in roofs):
        kinds.append("measured ceilings (dashed)")
    if any(r.level for r in roofs):
        kinds.append("cache roofs (dash-dot)")
    devices = list(dict.fromkeys(r.device_id for r in roofs))
    where = devices[0] if len(devices) == 1 else f"{len(devices)} devices"
    said = " and ".join(kinds) if len(kinds) < 3 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
    return f"Roofline of {where} — {said}; ● ridge point"


def _check_writable(path: Path) -> None:
    """OSError with the reason when ``path`` cannot be written (QImage.save only says False)."""
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder, not a file", str(path))
    with open(path, "ab"):  # raises PermissionError, FileNotFoundError (no such folder), ...
        pass


class RooflineCanvas(pg.PlotWidget):
    """The log-log plot: roofs, ridge points, shaded regions, point series, hover read-out."""

    hovered = Signal(str)

    def __init__(self, parent: QWidget | None = None, line_scale: float = 1.0) -> None:
        super().__init__(parent, background="w", axisItems=log_si_axes(y_unit="FLOP/s"))
        self.line_scale = line_scale  # presentation mode draws thicker lines
        self.plot_item = self.getPlotItem()
        self.plot_item.setLogMode(x=True, y=True)
        self.plot_item.showGrid(x=True, y=True, alpha=0.25)
        self.plot_item.setLabel("bottom", "Arithmetic intensity (FLOP/byte)")
        self.plot_item.setLabel("left", "Attainable rate")
        # wide enough for "100 TFLOP/s" from the first paint: an axis that widens itself after
        # painting shows no labels in a grab made before its relayout (--screenshot)
        self.plot_item.getAxis("left").setWidth(int(round(100 * line_scale ** 0.5)))
        self.legend = self.plot_item.addLegend(offset=(-10, -10), labelTextSize="9pt")
        self._roof_items: list[pg.GraphicsObject] = []
        self._roofs: list[Roof] = []
        self._series: dict[str, pg.ScatterPlotItem] = {}
        self._pair_items: list[pg.GraphicsObject] = []
        # streamed benchmark points: one buffer and one item per series (R7), made on first use
        self._measured: dict[str, tuple[XYBuffer, pg.ScatterPlotItem]] = {}
        self._measured_tips: dict[str, list[str]] = {}   # each point's hover text, in buffer order
        self._dirty: set[str] = set()
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setInterval(REDRAW_INTERVAL_MS)
        self._redraw_timer.timeout.connect(self._on_redraw_timer)
        self._redraw_timer.start()
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    # roofs ------------------------------------------------------------------------------
    def set_roofs(self, roofs: list[Roof]) -> None:
        for item in self._roof_items:
            self.plot_item.removeItem(item)
        self._roof_items = []
        self._roofs = roofs
        lo, hi = AI_RANGE
        devices = list(dict.fromkeys(r.device_id for r in roofs))
        precisions = list(dict.fromkeys(r.precision for r in roofs))
        for roof in roofs:
            if len(devices) == 1:  # one device: a colour per precision, measured roofs dashed
                colour = DEVICE_COLOURS[precisions.index(roof.precision) % len(DEVICE_COLOURS)]
                style = Qt.PenStyle.DashLine if roof.measured else Qt.PenStyle.SolidLine
            else:  # several: a colour per device, a line style per precision
                colour = DEVICE_COLOURS[devices.index(roof.device_id) % len(DEVICE_COLOURS)]
                style = (Qt.PenStyle.DashLine if roof.measured else
                         PRECISION_STYLES[precisions.index(roof.precision) % len(PRECISION_STYLES)])
            if roof.level:  # a cache roof (cache-aware roofline): thinner, its precision's colour
                style = CACHE_STYLES.get(roof.level, Qt.PenStyle.DotLine)
            pen = pg.mkPen(colour, width=(1.2 if roof.level else 1.8 if roof.measured else 2.5) * self.line_scale,
                           style=style)
            x, y = roofline.roof_polyline(roof.peak_flops_per_s, roof.bandwidth_bytes_per_s, AI_RANGE)
            # the ridge goes into the legend: labels beside several ridges would overprint
            curve = pg.PlotDataItem(x, y, pen=pen, name=f"{roof.label} · ridge {_format_ai(roof.ridge)} FLOP/B")
            self.plot_item.addItem(curve)
            ridge = pg.ScatterPlotItem([math.log10(roof.ridge)], [math.log10(roof.peak_flops_per_s)],
                                       symbol="o", size=9 * self.line_scale, pen=pg.mkPen(colour),
                                       brush=pg.mkBrush(colour))
            self.plot_item.addItem(ridge)
            self._roof_items += [curve, ridge]
        memory_roofs = [r for r in roofs if not r.level]
        if len(memory_roofs) == 1:  # one roof, one ridge: its text on the plot and the two regions
            self._label_ridge(memory_roofs[0])
            self._shade_regions(memory_roofs[0])
        self.plot_item.setTitle(roofline_title(roofs))
        self.plot_item.setXRange(math.log10(lo), math.log10(hi), padding=0)
        self._fit_y()

    def _label_ridge(self, roof: Roof) -> None:
        text = pg.TextItem(f"ridge {roof.ridge:.0f} FLOP/B", color="#333", anchor=(0.5, 1.3))
        text.setFont(self._text_font())
        text.setPos(math.log10(roof.ridge), math.log10(roof.peak_flops_per_s))
        self.plot_item.addItem(text)
        self._roof_items.append(text)

    def _text_font(self) -> QFont:
        font = QFont()
        font.setPointSizeF(font.pointSizeF() * (1 + (self.line_scale - 1) * 0.6))  # presentation: larger
        return font

    def _shade_regions(self, primary: Roof) -> None:
        """Memory- and compute-bound regions of one roof (with several, each would disagree)."""
        lo, hi = AI_RANGE
        ridge = math.log10(primary.ridge)
        for (start, end), colour, label in (
            ((math.log10(lo), ridge), (66, 133, 244, 28), "memory-bound"),
            ((ridge, math.log10(hi)), (234, 67, 53, 22), "compute-bound"),
        ):
            region = pg.LinearRegionItem((start, end), movable=False, brush=pg.mkBrush(*colour),
                                         pen=pg.mkPen(None))
            region.setZValue(-10)
            self.plot_item.addItem(region)
            text = pg.TextItem(label, color=(90, 90, 90), anchor=(0.5, 0))
            font = self._text_font()
            font.setItalic(True)
            text.setFont(font)
            text.setPos((start + end) / 2, self._y_top_log())
            self.plot_item.addItem(text)
            self._roof_items += [region, text]

    def _y_top_log(self) -> float:
        peaks = [r.peak_flops_per_s for r in self._roofs] or [1e15]
        return math.log10(max(peaks) * 8)

    def _fit_y(self) -> None:
        if not self._roofs:
            return
        lo = min(r.bandwidth_bytes_per_s * AI_RANGE[0] for r in self._roofs)
        self.plot_item.setYRange(math.log10(lo) - 0.3, self._y_top_log() + 0.1, padding=0)

    # points -----------------------------------------------------------------------------
    def set_series(self, name: str, x: Iterable[float], y: Iterable[float], brushes: list | None = None,
                   symbol: str = "o", tips: list[str] | None = None, size: float = 11) -> None:
        item = self._series.get(name)
        if item is None:
            item = pg.ScatterPlotItem(symbol=symbol, size=size, pen=pg.mkPen("#222"),
                                      hoverable=True, tip=lambda x, y, data: plain_tooltip(str(data)))
            self.plot_item.addItem(item)
            self._series[name] = item
        xs, ys = np.asarray(list(x), float), np.asarray(list(y), float)
        spots = [{"pos": (math.log10(a), math.log10(b)), "data": tip}
                 for a, b, tip in zip(xs, ys, tips or [""] * len(xs))]
        item.setData(spots)
        in_legend = self.legend.getLabel(item) is not None
        if spots and not in_legend:
            self.legend.addItem(item, name)
        elif not spots and in_legend:
            self.legend.removeItem(item)
        brushes = [pg.mkBrush(b) for b in brushes or []]
        if brushes and all(b.color() == brushes[0].color() for b in brushes):
            item.setBrush(brushes[0])  # one brush for the series: the legend's sample shows it too
        elif brushes:
            item.setBrush(brushes)
        else:
            item.setBrush(pg.mkBrush("#2166ac"))

    def series_positions(self, name: str) -> list[tuple[float, float]]:
        """(AI, FLOP/s) of a series' points as drawn (linear units; [] for an unknown series)."""
        item = self._series.get(name)
        if item is None:
            return []
        return [(10 ** float(x), 10 ** float(y)) for x, y in zip(item.data["x"], item.data["y"])]

    def remove_series(self, name: str) -> None:
        item = self._series.pop(name, None)
        if item is not None:
            self.legend.removeItem(item)
            self.plot_item.removeItem(item)

    def append_measured(self, series: str, ai: float, flops_per_s: float, foreign: bool = False,
                        tip: str = "") -> None:
        """Only appends and marks dirty: the timer redraws (R8). ``foreign``: measured on another
        device than the roof's, drawn hollow."""
        if series not in self._measured:
            brush = pg.mkBrush(*FOREIGN_BRUSH) if foreign else pg.mkBrush("#7b3294")
            item = pg.ScatterPlotItem(symbol="d", size=9, pen=pg.mkPen("#7b3294" if foreign else "#333",
                                                                       width=1.5), brush=brush,
                                      hoverable=True, tip=lambda x, y, data: str(data))
            self.plot_item.addItem(item)  # once per series, never per point
            self._measured[series] = (XYBuffer(), item)
            self._measured_tips[series] = []
        self._measured[series][0].append(ai, flops_per_s)
        self._measured_tips[series].append(tip)
        self._dirty.add(series)

    def clear_measured(self) -> None:
        for _buffer, item in self._measured.values():
            self.legend.removeItem(item)
            self.plot_item.removeItem(item)
        self._measured.clear()
        self._measured_tips.clear()
        self._dirty.clear()

    def measured_series(self) -> dict[str, int]:
        """Drawn benchmark series and their point counts (tests)."""
        return {name: len(item.data) for name, (_buffer, item) in self._measured.items()}

    def measured_tips(self, series: str) -> list[str]:
        """The hover texts of a drawn benchmark series' points (what the tooltip shows; tests)."""
        item = self._measured[series][1]
        return [str(spot.data()) for spot in item.points()]

    def _on_redraw_timer(self) -> None:
        for series in self._dirty:
            buffer, item = self._measured[series]
            n = buffer.count
            if n and self.legend.getLabel(item) is None:
                self.legend.addItem(item, series)
            item.setData(np.log10(buffer.x[:n]), np.log10(buffer.y[:n]), data=self._measured_tips[series][:n])
        self._dirty.clear()

    def draw_pair(self, before: tuple[float, float], after: tuple[float, float], text: str) -> None:
        for item in self._pair_items:
            self.plot_item.removeItem(item)
        (x0, y0), (x1, y1) = [(math.log10(a), math.log10(b)) for a, b in (before, after)]
        line = pg.PlotCurveItem([x0, x1], [y0, y1], pen=pg.mkPen("#444", width=2,
                                                                style=Qt.PenStyle.DashLine))
        angle = math.degrees(math.atan2(-(y1 - y0), x1 - x0)) + 180
        arrow = pg.ArrowItem(pos=(x1, y1), angle=angle, headLen=16, brush="#444", pen=None)
        label = pg.TextItem(text, color="#222", anchor=(0, 1))
        label.setPos(x1, y1)
        self._pair_items = [line, arrow, label]
        for item in self._pair_items:
            self.plot_item.addItem(item)

    def clear_pair(self) -> None:
        for item in self._pair_items:
            self.plot_item.removeItem(item)
        self._pair_items = []

    # hover ------------------------------------------------------------------------------
    def _on_mouse_moved(self, scene_pos) -> None:
        if not self._roofs or not self.plot_item.sceneBoundingRect().contains(scene_pos):
            return
        view = self.plot_item.vb.mapSceneToView(scene_pos)
        ai = 10 ** view.x()
        primary = self._roofs[0]
        attainable = roofline.attainable_flops_per_s(primary.peak_flops_per_s,
                                                     primary.bandwidth_bytes_per_s, ai)
        which = roofline.bound(primary.peak_flops_per_s, primary.bandwidth_bytes_per_s, ai)
        self.hovered.emit(f"AI {ai:.3g} FLOP/byte → attainable {format_si(attainable, 'FLOP/s')} "
                          f"on {primary.label} ({which}-bound)")


class RooflineTab(QWidget):
    """Roofs for the picked devices and precisions, a point calculator, balance sizes, export."""

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.placed: list[RooflinePoint] = []
        self._external: dict[str, list[RooflinePoint]] = {}
        self.measured_points: list[RooflinePoint] = []  # benchmark points, each with its device
        self._hidden_points: dict[str, int] = {}       # device id -> points not drawn on this roof
        self._hidden_dtypes: dict[str, int] = {}       # "cpu bf16" -> its points, that roof not drawn
        self._cache_roofs: dict[str, list[CacheRoof]] = {}  # device id -> L1/L2/L3 bandwidth measured
        self._roof_notes: list[str] = []               # what roofs() drew instead, or left out
        self._offered = ""                             # the device a benchmark run added just now
        self._table_timer = QTimer(self)               # streamed points refill the table once per burst
        self._table_timer.setSingleShot(True)
        self._table_timer.setInterval(REDRAW_INTERVAL_MS)
        self._table_timer.timeout.connect(self._redraw_points)
        self.canvas = RooflineCanvas(self)
        self.hover_label = QLabel("Move the mouse over the plot to read the roof.")
        self.hover_label.setObjectName("hover_readout")
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        self._build()
        self.canvas.hovered.connect(self.hover_label.setText)
        context.device_changed.connect(self._on_device_changed)
        context.precision_changed.connect(self._on_precision_changed)
        context.ceilings_changed.connect(self._on_ceilings_changed)
        self.refresh()

    # layout -----------------------------------------------------------------------------
    def _build(self) -> None:
        controls = QWidget()
        column = QVBoxLayout(controls)
        column.addWidget(self._build_roof_picker())
        column.addWidget(self._build_calculator())
        column.addWidget(self._build_export_panel())
        column.addWidget(self.status_label)  # what is not drawn, and why
        column.addStretch(1)
        controls.setMinimumWidth(CONTROLS_MIN_PX)
        controls.setMaximumWidth(460)

        plot_column = QWidget()
        plot_layout = QVBoxLayout(plot_column)
        plot_layout.setContentsMargins(0, 0, 0, 0)
        plot_layout.addWidget(self.canvas, stretch=4)
        plot_layout.addWidget(self.hover_label)
        self.balance_table = QTableWidget(0, 6)
        self.balance_table.setHorizontalHeaderLabels(
            ["roof", "peak (dense)", "memory BW", "ridge (FLOP/B)", "square GEMM balance n",
             "source"])
        self.balance_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.balance_table.horizontalHeader().setStretchLastSection(True)
        self.balance_table.verticalHeader().setVisible(False)
        self.balance_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # under the plot, full width: the roofs' balance table, and the Points table (its names
        # and numbers need the width); each shows VISIBLE_TABLE_ROWS whole rows, then scrolls
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.addTab(self.balance_table, "Roofs")
        self.points_page = self._build_points_panel()
        self.bottom_tabs.addTab(self.points_page, "Points")
        plot_layout.addWidget(self.bottom_tabs)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(controls)
        splitter.addWidget(plot_column)
        splitter.setStretchFactor(1, 1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(splitter)

    def _build_roof_picker(self) -> QGroupBox:
        box = QGroupBox("Roofs to draw")
        layout = QVBoxLayout(box)
        layout.addWidget(QLabel("Compare devices (the toolbar's device is always drawn first):"))
        self.device_list = QListWidget()
        self.device_list.setUniformItemSizes(True)  # every row as tall as the first: whole rows fit
        for device in self.context.database.devices():
            if device.memory_bandwidth_bytes_per_s and device.dense_flops_per_s:
                self._add_to_device_list(device)
        _fit_rows(self.device_list, self.device_list.count(), VISIBLE_LIST_ROWS)
        self.device_list.itemChanged.connect(lambda _item: self.refresh())
        layout.addWidget(self.device_list)
        row = QHBoxLayout()
        self.precision_boxes: dict[str, QCheckBox] = {}
        for precision in PRECISIONS:
            box_ = QCheckBox(precision)
            box_.setChecked(precision == self.context.precision)
            box_.toggled.connect(lambda _checked: self.refresh())
            self.precision_boxes[precision] = box_
            row.addWidget(box_)
        layout.addLayout(_wrapped(row, 5))
        self.measured_box = QCheckBox("Draw measured ceilings (from Benchmarks) beside the datasheet")
        self.measured_box.setChecked(True)
        self.measured_box.toggled.connect(lambda _checked: self.refresh())
        layout.addWidget(self.measured_box)
        self.foreign_box = QCheckBox("Also show points measured on other devices")
        self.foreign_box.setToolTip("Benchmark points and trace kernels are drawn on their own device's "
                                    "roof. Ticked, those of other devices are drawn hollow, labelled "
                                    "'measured on …', and their % of roof is against the roof shown.")
        self.foreign_box.toggled.connect(lambda _checked: self.refresh())
        layout.addWidget(self.foreign_box)
        return box

    def _add_to_device_list(self, device: Device) -> None:
        item = QListWidgetItem(f"{device.id} — {device.name}")
        item.setData(Qt.ItemDataRole.UserRole, device.id)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Unchecked)
        self.device_list.addItem(item)

    def _build_calculator(self) -> QGroupBox:
        box = QGroupBox("Place a point")
        layout = QVBoxLayout(box)
        self.op_combo = QComboBox()
        self.op_combo.addItems(["GEMM (M×K×N)", "Elementwise", "Custom FLOPs / bytes"])
        layout.addWidget(self.op_combo)
        self.op_pages = QStackedWidget()
        self.gemm_m, self.gemm_k, self.gemm_n = QLineEdit("4096"), QLineEdit("4096"), QLineEdit("4096")
        self.gemm_dtype = QComboBox()
        self.gemm_dtype.addItems(list(BYTES_PER_ELEMENT))
        self.gemm_dtype.setCurrentText("bf16")
        gemm = QWidget()
        form = QFormLayout(gemm)
        form.addRow("M", self.gemm_m)
        form.addRow("K", self.gemm_k)
        form.addRow("N", self.gemm_n)
        form.addRow("dtype", self.gemm_dtype)
        self.elem_op = QComboBox()
        self.elem_op.addItems(list(roofline.ELEMENTWISE_OPS))
        self.elem_n = QLineEdit("268435456")
        self.elem_dtype = QComboBox()
        self.elem_dtype.addItems(list(BYTES_PER_ELEMENT))
        self.elem_dtype.setCurrentText("fp16")
        elem = QWidget()
        form = QFormLayout(elem)
        form.addRow("operation", self.elem_op)
        form.addRow("elements N", self.elem_n)
        form.addRow("dtype", self.elem_dtype)
        self.custom_flops, self.custom_bytes = QLineEdit("1e12"), QLineEdit("1e10")
        custom = QWidget()
        form = QFormLayout(custom)
        form.addRow("FLOPs", self.custom_flops)
        form.addRow("bytes moved", self.custom_bytes)
        for page in (gemm, elem, custom):
            self.op_pages.addWidget(page)
        self.op_combo.currentIndexChanged.connect(self.op_pages.setCurrentIndex)
        layout.addWidget(self.op_pages)
        form = QFormLayout()
        self.time_us = QLineEdit("")
        self.time_us.setPlaceholderText("optional, e.g. 180")
        self.point_label = QLineEdit("")
        self.point_label.setPlaceholderText("optional name")
        form.addRow("measured time (µs)", self.time_us)
        form.addRow("label", self.point_label)
        layout.addLayout(form)
        self.add_button = QPushButton("Add point")
        self.add_button.clicked.connect(self._on_add_clicked)
        layout.addWidget(self.add_button)
        self.result_label = QLabel("")
        self.result_label.setObjectName("point_result")
        self.result_label.setWordWrap(True)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.result_label)
        return box

    def _build_points_panel(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(2, 2, 2, 2)
        self.points_table = QTableWidget(0, len(POINT_COLUMNS))
        self.points_table.setHorizontalHeaderLabels(list(POINT_COLUMNS))
        header = self.points_table.horizontalHeader()
        # the numbers keep their width; the name takes what is left, elided in the middle; the band
        # (its colour says it, the tooltip spells it out) gets a fixed column
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        band = POINT_COLUMNS.index("band")
        header.setSectionResizeMode(band, QHeaderView.ResizeMode.Fixed)
        self.points_table.setColumnWidth(band, BAND_COLUMN_PX)
        header.setStretchLastSection(False)
        self.points_table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.points_table.setWordWrap(False)
        self.points_table.verticalHeader().setVisible(False)
        self.points_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.points_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        layout.addWidget(self.points_table)
        row = QHBoxLayout()
        self.pair_button = QPushButton("Pair before → after")
        self.pair_button.setToolTip("Select two points, the before first (Ctrl+click the after), "
                                    "to see how the point moved")
        self.pair_button.clicked.connect(self._on_pair_clicked)
        remove = QPushButton("Remove")
        remove.clicked.connect(self._on_remove_clicked)
        row.addWidget(self.pair_button)
        row.addWidget(remove)
        row.addStretch(1)
        layout.addLayout(row)
        return box

    def _build_export_panel(self) -> QGroupBox:
        box = QGroupBox("Export")
        layout = QVBoxLayout(box)
        row = QHBoxLayout()
        for text, slot in (("Export PNG…", self._on_export_png), ("SVG…", self._on_export_svg),
                           ("Points CSV…", self._on_export_csv)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        layout.addLayout(row)
        self.export_status = QLabel("")  # under the export buttons: where the user clicked
        self.export_status.setObjectName("export_status")
        self.export_status.setWordWrap(True)
        layout.addWidget(self.export_status)
        return box

    # roofs ------------------------------------------------------------------------------
    def selected_device_ids(self) -> list[str]:
        ids = [self.context.device_id]
        for i in range(self.device_list.count()):
            item = self.device_list.item(i)
            device_id = item.data(Qt.ItemDataRole.UserRole)
            if item.checkState() == Qt.CheckState.Checked and device_id not in ids:
                ids.append(device_id)
        return ids

    def selected_precisions(self) -> list[str]:
        chosen = [p for p, box in self.precision_boxes.items() if box.isChecked()]
        if self.context.precision in chosen:  # the toolbar's precision is the primary roof
            chosen.remove(self.context.precision)
            chosen.insert(0, self.context.precision)
        return chosen or [self.context.precision]

    def set_devices(self, device_ids: list[str]) -> None:
        """Check exactly these devices in the comparison list (the toolbar device stays first)."""
        for i in range(self.device_list.count()):
            item = self.device_list.item(i)
            wanted = item.data(Qt.ItemDataRole.UserRole) in device_ids
            item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)

    def set_precisions(self, precisions: list[str]) -> None:
        for precision, box in self.precision_boxes.items():
            box.blockSignals(True)
            box.setChecked(precision in precisions)
            box.blockSignals(False)
        self.refresh()

    def roofs(self) -> list[Roof]:
        roofs: list[Roof] = []
        skipped: list[str] = []
        self._roof_notes = []
        for device_id in self.selected_device_ids():
            for precision in self._precisions_of(device_id):
                drawn = [roof_for(source, precision, measured)
                         for source, measured in self._roof_sources(device_id)
                         if precision in source.dense_flops_per_s and source.memory_bandwidth_bytes_per_s]
                roofs += drawn
                if not drawn:
                    skipped.append(f"{device_id} {precision}")
        self._skipped = skipped
        return roofs + self._cache_roofs_under(roofs)

    def _precisions_of(self, device_id: str) -> list[str]:
        """The precisions ticked; for a device known only by measurement (the cpu) of which none was
        measured, the ones that were (a cpu run measures fp32 and bf16; the toolbar may say fp8)."""
        chosen = self.selected_precisions()
        device = self.context.database.get(device_id)
        if device.origin != "measured" or any(p in device.dense_flops_per_s for p in chosen):
            return chosen
        measured = [p for p in PRECISIONS if p in device.dense_flops_per_s]
        if measured:
            self._roof_notes.append(f"{device_id}: no {'/'.join(chosen)} measured, its measured "
                                    f"{', '.join(measured)} roofs drawn")
        return measured or chosen

    def _cache_roofs_under(self, roofs: list[Roof]) -> list[Roof]:
        """Beside each measured roof, its device's cache roofs (the L1/L2/L3 bandwidth its copy
        benchmark measured, capped by the same compute peak): the cache-aware roofline."""
        out: list[Roof] = []
        for roof in roofs:
            if not roof.measured or not self.measured_box.isChecked():
                continue
            for cache in self._cache_roofs.get(roof.device_id, []):
                if cache.bandwidth_bytes_per_s <= roof.bandwidth_bytes_per_s:
                    note = (f"{roof.device_id} {cache.level} roof not drawn: its copy ran no faster than "
                            f"memory ({describe(cache)}; a busy machine?)")
                    if note not in self._roof_notes:
                        self._roof_notes.append(note)
                    continue
                out.append(Roof(f"{roof.device_id} {roof.precision} {cache.level} measured",
                                roof.peak_flops_per_s, cache.bandwidth_bytes_per_s, True,
                                roof.device_id, roof.precision, cache.level))
        return out

    def set_cache_roofs(self, device_id: str, roofs: object) -> None:
        """The cache roofs a benchmark run measured on ``device_id`` (core.bench.cache_levels)."""
        self._cache_roofs[device_id] = list(roofs)  # type: ignore[call-overload]
        self.refresh()

    def cache_roof_sources(self, device_id: str) -> list[str]:
        """Where each of a device's cache roofs comes from (the Roofs table's source column)."""
        return [describe(c) for c in self._cache_roofs.get(device_id, [])]

    def offer_device(self, device_id: str) -> None:
        """A benchmark run just measured ``device_id``: its measured roofs are drawn at once, beside
        the toolbar's device (ticked in the comparison list), so its points are not hidden."""
        if device_id in self.selected_device_ids() or device_id not in self.context.database:
            return
        device = self.context.database.get(device_id)
        if not (device.memory_bandwidth_bytes_per_s and device.dense_flops_per_s):
            return
        if self._list_item(device_id) is None:
            self._add_to_device_list(device)
        self._offered = device_id
        self._list_item(device_id).setCheckState(Qt.CheckState.Checked)  # itemChanged: refresh

    def _list_item(self, device_id: str) -> QListWidgetItem | None:
        for i in range(self.device_list.count()):
            if self.device_list.item(i).data(Qt.ItemDataRole.UserRole) == device_id:
                return self.device_list.item(i)
        return None

    def _roof_sources(self, device_id: str) -> list[tuple[Device, bool]]:
        """(device, is_measured) pairs to draw: the datasheet entry, and beside it the ceilings
        measured on this machine (the catalog's). A device known only by measurement (the cpu) shows those."""
        device = self.context.database.get(device_id)
        sources = [(device, device.origin == "measured")]
        measured = self.context.catalog.measured_device(device_id) if self.measured_box.isChecked() else None
        if measured is not None:
            sources = [(measured, True)] if device.origin == "measured" else sources + [(measured, True)]
        return sources

    def refresh(self) -> None:
        roofs = self.roofs()
        self.canvas.set_roofs(roofs)
        self._fill_balance_table(roofs)
        self._redraw_points()
        self._redraw_measured()
        self._show_notes(roofs)

    def _show_notes(self, roofs: list[Roof]) -> None:
        notes = []
        if self._offered and self._offered in self.selected_device_ids()[1:]:
            notes.append(f"{self._offered} drawn beside {self.context.device_id}: the latest benchmark run "
                         f"measured it")
        notes += self._roof_notes
        if self._hidden_dtypes:
            hidden = ", ".join(f"{n} {key}" for key, n in self._hidden_dtypes.items())
            notes.append(f"not drawn: {hidden} points (a point is drawn only against its own precision's "
                         f"roof: tick that precision)")
        if self._skipped:
            notes.append("no known ceiling: " + ", ".join(self._skipped))
        if self._hidden_points:
            hidden = ", ".join(f"{n} measured on {device}" for device, n in self._hidden_points.items())
            notes.append(f"not drawn on this roof: {hidden} (tick 'Also show points measured on "
                         f"other devices' to judge them against it)")
        if not roofs:
            database = self.context.database
            measured = "cpu" in database and bool(database.get("cpu").dense_flops_per_s)
            cpu = "" if measured else " (the cpu's are known once a benchmark measured it: Benchmarks, device cpu)"
            notes.append(f"nothing to draw: pick a device and precision with known ceilings{cpu}")
        self.status_label.setText("; ".join(notes))

    def _fill_balance_table(self, roofs: list[Roof]) -> None:
        self.balance_table.setRowCount(len(roofs))
        for row, roof in enumerate(roofs):
            n = roofline.square_matmul_balance_dimension(roof.ridge, roof.precision)
            values = [roof.label, format_si(roof.peak_flops_per_s, "FLOP/s"),
                      format_si(roof.bandwidth_bytes_per_s, "B/s"), f"{roof.ridge:.1f}",
                      f"{n:,.0f}", self._roof_source(roof)]
            for col, value in enumerate(values):
                self.balance_table.setItem(row, col, QTableWidgetItem(value))
        self._fit_bottom_tabs()

    def _roof_source(self, roof: Roof) -> str:
        if roof.level:
            cache = next((c for c in self._cache_roofs.get(roof.device_id, []) if c.level == roof.level), None)
            return f"measured, {describe(cache)}" if cache else "measured"
        return "measured" if roof.measured else "datasheet"

    def _fit_bottom_tabs(self) -> None:
        """The tables under the plot: VISIBLE_TABLE_ROWS whole rows (the roofs of a comparison all
        show), with the Points tab's buttons below its table."""
        table = self.balance_table
        _fit_rows(table, VISIBLE_TABLE_ROWS, VISIBLE_TABLE_ROWS, table.horizontalHeader().sizeHint().height())
        self.points_table.setFixedHeight(table.height())
        bar = self.bottom_tabs.tabBar().sizeHint().height()
        self.bottom_tabs.setFixedHeight(bar + self.points_page.sizeHint().height() + 8)

    # points -----------------------------------------------------------------------------
    def _primary_roof(self) -> Roof | None:
        roofs = self.canvas._roofs
        return roofs[0] if roofs else None

    def roof_for_point(self, point: RooflinePoint) -> Roof | None:
        """The drawn roof a point is judged against: its own device's (at its precision when that
        roof is drawn), else the primary roof (a point typed in, or one shown on request from
        another device)."""
        device_id = point.device_id or self.context.device_id
        own = [r for r in self.canvas._roofs if r.device_id == device_id and not r.level]
        same_precision = [r for r in own if r.precision == point.precision]
        if point.cache_level:  # cache-resident: its data comes from that cache, judged by its roof
            cache = [r for r in self.canvas._roofs if r.device_id == device_id and r.level == point.cache_level
                     and r.precision == point.precision]
            if cache:
                return cache[0]
        return (same_precision or own or [self._primary_roof()])[0]

    def placement(self, point: RooflinePoint) -> str | None:
        """"own" (drawn under its device's roof), "foreign" (another device's point shown on request
        against the primary roof) or None (not drawn)."""
        drawn = {r.device_id for r in self.canvas._roofs}
        if not drawn:
            return None
        if not point.device_id or point.device_id in drawn:
            if point.kind == "measured" and point.precision and not any(
                    r.device_id == point.device_id and r.precision == point.precision for r in self.canvas._roofs):
                return None  # a benchmark point is judged only against its own precision's roof
            return "own"
        return "foreign" if self.foreign_box.isChecked() else None

    def analyse(self, point: RooflinePoint) -> PointAnalysis | None:
        roof = self.roof_for_point(point) if self.canvas._roofs else None
        if roof is None:
            return None
        return roofline.analyse_point(point, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s)

    def point_from_inputs(self) -> RooflinePoint | None:
        """The calculator's point, or None with the offending fields marked red."""
        seconds_us = _parse_positive(self.time_us, optional=True)
        if self.time_us.text().strip() and seconds_us is None:
            return None
        seconds = None if seconds_us is None else seconds_us * 1e-6
        page = self.op_combo.currentIndex()
        if page == 0:
            values = [_parse_positive(e, whole=True) for e in (self.gemm_m, self.gemm_k, self.gemm_n)]
            if None in values:
                return None
            m, k, n = (int(v) for v in values)
            point = roofline.gemm_point(m, k, n, self.gemm_dtype.currentText(), seconds)
        elif page == 1:
            n = _parse_positive(self.elem_n, whole=True)
            if n is None:
                return None
            point = roofline.elementwise_point(self.elem_op.currentText(), int(n),
                                               self.elem_dtype.currentText(), seconds)
            if point.flops == 0:
                self.result_label.setText("a copy does no FLOPs: it has no place on a FLOP/s roofline")
                return None
        else:
            flops, nbytes = _parse_positive(self.custom_flops), _parse_positive(self.custom_bytes)
            if flops is None or nbytes is None:
                return None
            point = roofline.custom_point("custom", flops, nbytes, seconds)
        label = self.point_label.text().strip()
        if label:
            point = RooflinePoint(label, point.flops, point.bytes, point.seconds, point.kind)
        return point

    def _on_add_clicked(self) -> None:
        point = self.point_from_inputs()
        if point is None:
            if not self.result_label.text().startswith("a copy"):
                self.result_label.setText("Fix the fields marked in red: sizes are whole numbers, "
                                          "FLOPs, bytes and times positive numbers.")
            return
        self.add_point(point)

    def add_point(self, point: RooflinePoint) -> PointAnalysis | None:
        self.bottom_tabs.setCurrentWidget(self.points_page)
        self.placed.append(point)
        self._redraw_points()
        analysis = self.analyse(point)
        self.result_label.setText(self._describe(analysis) if analysis else "no roof to place it under")
        return analysis

    def _describe(self, a: PointAnalysis) -> str:
        roof = self.roof_for_point(a.point)
        lines = [f"<b>{a.point.label}</b> under {roof.label}:",
                 f"AI {_format_ai(a.ai_flops_per_byte)} FLOP/byte ({a.bound}-bound; ridge {roof.ridge:.0f})",
                 f"attainable {format_si(a.attainable_flops_per_s, 'FLOP/s')}; "
                 f"time floor {format_si(a.time_floor_s, 's')}"]
        if a.fraction_of_roof is not None:
            lines.append(f"achieved {format_si(a.achieved_flops_per_s, 'FLOP/s')} = "
                         f"<b>{100 * a.fraction_of_roof:.1f} % of the roof</b> — {a.band}")
            move = ("raise arithmetic intensity (fuse, reuse, smaller dtype) to move right"
                    if a.bound == "memory" else "cut overhead / improve the kernel to move up")
            lines.append(f"to improve: {move}")
        return "<br>".join(lines)

    def table_points(self) -> list[RooflinePoint]:
        """The Points table's rows: your points first, then those of other instruments (a trace)
        that are drawn on the roofs shown."""
        external = [RooflinePoint(f"{name}: {p.label}", p.flops, p.bytes, p.seconds, p.kind,
                                  p.device_id, p.precision)
                    for name, points in self._external.items() for p in points
                    if self.placement(p) is not None]
        measured = [p for p in self.measured_points if self.placement(p) is not None]
        return self.placed + external + measured

    def _band_colour(self, fraction: float | None) -> str:
        if fraction is None:
            return "#ffffff"
        if fraction > roofline.ABOVE_ROOF_TOLERANCE:
            return BAND_COLOURS[roofline.ABOVE_ROOF_TOLERANCE]
        return BAND_COLOURS[roofline.band_threshold(fraction)]

    def _redraw_points(self) -> None:
        roof = self._primary_roof()
        rows = self.table_points() if roof else []
        self._hidden_points = {}
        self._hidden_dtypes = {}
        for points in self._external.values():
            self._count_hidden(points)
        self._count_hidden(self.measured_points)
        self.points_table.setRowCount(len(rows))
        xs, ys, brushes, tips = [], [], [], []
        for row, point in enumerate(rows):
            a = self.analyse(point)
            colour = self._band_colour(a.fraction_of_roof)
            if row < len(self.placed):  # external series are drawn by _draw_external
                xs.append(a.ai_flops_per_byte)
                ys.append(a.achieved_flops_per_s or a.attainable_flops_per_s)
                brushes.append(pg.mkBrush(colour))
                tips.append(point.label)
            self._fill_point_row(row, point, a, colour)
        # the device column only when another device's points are shown: else it is the roof's
        self.points_table.setColumnHidden(POINT_COLUMNS.index("device"),
                                          not any(self.placement(p) == "foreign" for p in rows))
        self.canvas.set_series("your points", xs, ys, brushes, tips=tips)
        for name, points in self._external.items():
            self._draw_external(name, points)

    def _count_hidden(self, points: Iterable[RooflinePoint]) -> None:
        for point in points:
            if self.placement(point) is None and point.device_id:
                self._note_hidden(point)

    def _note_hidden(self, point: RooflinePoint) -> None:
        """Count a point not drawn: its device's roofs are not shown, or not at its precision."""
        if point.device_id in {r.device_id for r in self.canvas._roofs}:
            key = f"{point.device_id} {point.precision}"
            self._hidden_dtypes[key] = self._hidden_dtypes.get(key, 0) + 1
        else:
            self._hidden_points[point.device_id] = self._hidden_points.get(point.device_id, 0) + 1

    def _fill_point_row(self, row: int, point: RooflinePoint, a: PointAnalysis, colour: str) -> None:
        foreign = self.placement(point) == "foreign"
        roof = self.roof_for_point(point)
        device = point.device_id or "—"
        name = next((point.label[len(n) + 2:] for n in self._external if point.label.startswith(f"{n}: ")),
                    point.label)  # the series is named in the tooltip
        if point.cache_level:
            name += f" · in {point.cache_level}"  # cache-resident: judged against that cache's roof
        cells = [roofline.short_label(name, 64), f"on {device}" if foreign else device,
                 _format_ai(a.ai_flops_per_byte),
                 format_si(a.achieved_flops_per_s, "FLOP/s") if a.achieved_flops_per_s else "—",
                 f"{100 * a.fraction_of_roof:.1f} %" if a.fraction_of_roof is not None else "—",
                 _short_band(a.fraction_of_roof)]
        where = (f"measured on {device}, judged against the {roof.label} roof shown" if foreign
                 else f"judged against the {roof.label} roof")
        tip = (f"{point.label}\n{where}" + (f" ({point.precision})" if point.precision else "")
               + (f"\n{a.band}" if a.band else "") + self._residency_note(point, roof))
        for col, value in enumerate(cells):
            item = QTableWidgetItem(value)
            item.setToolTip(plain_tooltip(tip))  # point names come from traces
            if col == 5 and a.fraction_of_roof is not None:
                item.setBackground(QColor(colour))
            if col >= 2:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.points_table.setItem(row, col, item)

    @staticmethod
    def _residency_note(point: RooflinePoint, roof: Roof) -> str:
        if not point.cache_level:
            return ""
        against = (f"judged against its {roof.level} roof" if roof.level == point.cache_level
                   else f"no {point.cache_level} roof measured: judged against memory's")
        return f"\ncache-resident: its working set fits in {point.cache_level} ({against})"

    def _draw_external(self, name: str, points: list[RooflinePoint]) -> None:
        """``points`` have FLOPs, bytes and a time (filtered by set_point_series). Those of the
        drawn devices are filled squares; another device's, shown on request, hollow."""
        own = [p for p in points if self.placement(p) == "own"]
        foreign = [p for p in points if self.placement(p) == "foreign"]
        self.canvas.set_series(name, [p.ai_flops_per_byte for p in own],
                               [p.achieved_flops_per_s for p in own], [pg.mkBrush("#f1a340")] * len(own),
                               symbol="s", tips=[p.label for p in own])
        devices = ", ".join(sorted({p.device_id for p in foreign}))
        foreign_name = f"{name} — measured on {devices}" if foreign else f"{name} — measured elsewhere"
        for old in [n for n in self.canvas._series if n.startswith(f"{name} — measured ")]:
            if old != foreign_name or not foreign:
                self.canvas.remove_series(old)
        if foreign:
            self.canvas.set_series(foreign_name, [p.ai_flops_per_byte for p in foreign],
                                   [p.achieved_flops_per_s for p in foreign],
                                   [pg.mkBrush(*FOREIGN_BRUSH)] * len(foreign), symbol="s",
                                   tips=[f"{p.label} (measured on {p.device_id})" for p in foreign])

    def _redraw_measured(self) -> None:
        """Benchmark points again after the roofs changed (device, comparison, foreign toggle)."""
        self.canvas.clear_measured()
        for point in self.measured_points:
            self._draw_measured(point)

    def _draw_measured(self, point: RooflinePoint) -> None:
        placement = self.placement(point)
        if placement is None:
            return
        device = point.device_id or self.context.device_id
        series = (f"benchmark points ({device})" if placement == "own"
                  else f"benchmark points measured on {device}")
        a = self.analyse(point)
        roof = self.roof_for_point(point)
        share = (f", {100 * a.fraction_of_roof:.1f} % of the {roof.label} roof"
                 if a is not None and a.fraction_of_roof is not None else "")
        tip = (f"{point.label} on {device}: {format_si(point.achieved_flops_per_s, 'FLOP/s')}{share}"
               + self._residency_note(point, roof))
        self.canvas.append_measured(series, point.ai_flops_per_byte, point.achieved_flops_per_s,
                                    foreign=placement == "foreign", tip=tip)

    def clear_point_series(self) -> None:
        """Forget the points of other instruments (a new trace replaces the last one's kernels,
        which were measured on another device and would be judged against the wrong roof)."""
        for name in list(self.canvas._series):
            if name != "your points":
                self.canvas.remove_series(name)
        self._external = {}
        self._redraw_points()

    def set_point_series(self, name: str, points: list[RooflinePoint], device_id: str | None = None,
                         precision: str | None = None) -> None:
        """Points from another instrument (a trace's kernels): one scatter series per name. Each
        point belongs to the device it ran on: its own ``device_id``, else ``device_id``, else the
        device picked when the points arrive (a trace's GPU, set when it was loaded)."""
        owner = device_id or self.context.device_id
        dtype = precision or self.context.precision
        kept = [p for p in points if p.flops > 0 and p.bytes > 0 and p.seconds]
        self.bottom_tabs.setCurrentWidget(self.points_page)
        self._external[name] = [p if p.device_id else replace(p, device_id=owner, precision=p.precision or dtype)
                                for p in kept]
        self.refresh()
        self.status_label.setText(f"{len(kept)} points from {name}, measured on {owner} (in the table "
                                  f"below your points, drawn only on the {owner} roof)")

    def append_measured_point(self, point: RooflinePoint) -> None:
        """A benchmark point as it is measured: kept with its device, drawn by the redraw timer on
        its own device's roof (never on another device's, unless asked)."""
        if point.flops > 0 and point.bytes > 0 and point.achieved_flops_per_s:
            if not point.device_id:  # an older producer: the point ran here, on the cpu or the picked GPU
                point = replace(point, device_id="cpu")
            self.measured_points.append(point)
            self._draw_measured(point)
            if self.placement(point) is None:
                self._note_hidden(point)
                self._show_notes(self.canvas._roofs)
            else:
                self._table_timer.start()  # the Points table lists it (once per burst of points)

    def set_measured_ceilings(self, ceilings: MeasuredCeilings) -> None:
        """Measured ceilings of a device, drawn dashed beside the datasheet roofs (they go into the
        shared catalog; :meth:`_on_ceilings_changed` redraws)."""
        self.context.add_measured_ceilings(ceilings)

    def _on_ceilings_changed(self, device_id: str, _added: bool) -> None:
        listed = {self.device_list.item(i).data(Qt.ItemDataRole.UserRole)
                  for i in range(self.device_list.count())}
        device = self.context.database.get(device_id)
        if device_id not in listed and device.memory_bandwidth_bytes_per_s and device.dense_flops_per_s:
            self._add_to_device_list(device)  # a GPU missing from the database, or the cpu
        self.refresh()

    def _on_pair_clicked(self) -> None:
        # rows in the order they were selected: the first one picked is "before"
        rows = [index.row() for index in self.points_table.selectionModel().selectedRows()]
        if len(rows) != 2:
            self.status_label.setText("select exactly two points: the before and the after")
            return
        points = self.table_points()
        self.show_pair(points[rows[0]], points[rows[1]])

    def show_pair(self, before: RooflinePoint, after: RooflinePoint) -> roofline.Movement:
        movement = roofline.classify_movement(before, after)
        a0, a1 = self.analyse(before), self.analyse(after)
        y0 = a0.achieved_flops_per_s or a0.attainable_flops_per_s
        y1 = a1.achieved_flops_per_s or a1.attainable_flops_per_s
        rate = f", rate ×{movement.rate_ratio:.2f}" if movement.rate_ratio else ""
        text = f"{movement.direction}: AI ×{movement.ai_ratio:.2f}{rate}"
        self.canvas.draw_pair((a0.ai_flops_per_byte, y0), (a1.ai_flops_per_byte, y1), text)
        self.status_label.setText(f"{before.label} → {after.label}: {movement.explanation}")
        return movement

    def _on_remove_clicked(self) -> None:
        rows = sorted({index.row() for index in self.points_table.selectedIndexes()}, reverse=True)
        for row in rows:
            if row < len(self.placed):  # a trace's points go with "Show on roofline" again
                del self.placed[row]
        self.canvas.clear_pair()
        self._redraw_points()

    def is_busy(self) -> bool:
        return False  # nothing runs in the background here

    def shutdown(self) -> None:
        """Nothing to stop."""

    # export -----------------------------------------------------------------------------
    def export_png(self, path: Path) -> None:
        """The plot as a 1600 px wide PNG; OSError when it cannot be written (pyqtgraph's exporter
        ignores QImage.save's failure, so the image is saved here and the result checked)."""
        exporter = pyqtgraph.exporters.ImageExporter(self.canvas.plot_item)
        exporter.parameters()["width"] = 1600
        image = exporter.export(toBytes=True)
        _check_writable(Path(path))
        if image is None or not image.save(str(path), "PNG"):
            raise OSError(f"could not write {path}")

    def export_svg(self, path: Path) -> None:
        # QSvgGenerator renders the widget as vectors; pyqtgraph's SVGExporter trips on some
        # polylines (ValueError in its coordinate rewriting, pyqtgraph 0.14). Rendered into memory,
        # then written, so a failure to write raises OSError.
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setSize(self.canvas.size())
        generator.setViewBox(self.canvas.rect())
        generator.setTitle("gpuperf roofline")
        painter = QPainter(generator)
        try:
            self.canvas.render(painter)
        finally:
            painter.end()
            buffer.close()
        Path(path).write_bytes(bytes(data.data()))

    def export_csv(self, path: Path) -> None:
        rows = [(self.roof_for_point(p).label, self.analyse(p)) for p in self.table_points()] \
            if self._primary_roof() else []
        Path(path).write_text(roofline.points_to_csv(rows), encoding="utf-8")

    def _ask_path(self, title: str, pattern: str) -> Path | None:
        path, _ = QFileDialog.getSaveFileName(self, title, settings_store.last_folder("exports"), pattern)
        if path:
            settings_store.remember_folder("exports", Path(path).parent)
        return Path(path) if path else None

    def export_to(self, kind: str, path: Path) -> bool:
        """Write the plot ("png", "svg") or the points ("csv") to ``path`` and say so under the
        export buttons; a failure (no permission, a folder, disk full) is shown there in red."""
        write = {"png": self.export_png, "svg": self.export_svg, "csv": self.export_csv}[kind]
        try:
            write(Path(path))
        except OSError as exc:
            self.export_status.setStyleSheet(ERROR_STYLE)
            self.export_status.setText(f"Could not export {kind.upper()} to {path}: {exc.strerror or exc}")
            return False
        self.export_status.setStyleSheet("")
        self.export_status.setText(f"Exported {kind.upper()} to {path}")
        return True

    def _on_export_png(self) -> None:
        if path := self._ask_path("Export plot as PNG", "PNG image (*.png)"):
            self._export_clicked("png", path)

    def _on_export_svg(self) -> None:
        if path := self._ask_path("Export plot as SVG", "SVG image (*.svg)"):
            self._export_clicked("svg", path)

    def _on_export_csv(self) -> None:
        if path := self._ask_path("Export points as CSV", "CSV (*.csv)"):
            self._export_clicked("csv", path)

    def _export_clicked(self, kind: str, path: Path) -> None:
        """A failure shows under the export buttons; from the File menu, with this tab hidden,
        it also comes up as a message box (the user clicked in the menu, not here)."""
        if not self.export_to(kind, path) and not self.isVisible():
            QMessageBox.warning(self.window(), "Export failed", self.export_status.text())

    # context ----------------------------------------------------------------------------
    def _on_device_changed(self, _device_id: str) -> None:
        self.refresh()

    def _on_precision_changed(self, precision: str) -> None:
        self.set_precisions([precision])
