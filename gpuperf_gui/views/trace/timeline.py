"""The timeline: stacked lanes of all ranks on one time axis, navigated like Perfetto.

Wheel or W/S zoom around the cursor, drag (or A/D) pans, right-drag selects a time range, a click
selects an event. Each lane is one :class:`~gpuperf_gui.views.trace.lane_item.TraceLaneItem`; the view
refolds the visible lanes at most 30 times a second (``pg.SignalProxy``, STYLE.md R12).

The y axis is in pixels (rows have a fixed height); x is µs relative to the model's origin.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QKeyEvent,
    QPainter,
    QPainterPath,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import QGraphicsView

from gpuperf_gui.core.trace.model.lanes import EventRef, LaneSpec, RankSpec  # noqa: F401 - views import them here
from gpuperf_gui.core.trace.model.lod import LaneRows
from gpuperf_gui.views.trace.lane_item import (
    ROW_HEIGHT_PX,
    Palette,
    TraceLaneItem,
    draw_lines,
    draw_rects,
)
from gpuperf_gui.views.trace.style import format_duration_us, time_unit_for

HEADER_PX = 22.0          # rank header strip (rank name, step labels)
LANE_GAP_PX = 6.0
AXIS_WIDTH_PX = 200
TICK_TEXT_OFFSET_PX = 6
LABEL_MARGIN_PX = 8       # pyqtgraph drops a tick label that does not fit the axis: elide with room to spare
ZOOM_STEP = 1.25          # per wheel notch / key press
PAN_FRACTION = 0.15       # per A/D press
STRAGGLER_HEADER = QColor(250, 200, 180)   # a late rank's header strip
STRAGGLER_TINT = QColor(230, 90, 40, 22)   # ... and a tint over its lanes
STRAGGLER_BAR = QColor(216, 67, 21)
STEP_BAND_EVEN = QColor(90, 120, 170, 28)  # step bands alternate these two shades
STEP_BAND_ODD = QColor(90, 120, 170, 12)
STEP_BAND_MEAN = QColor(90, 120, 170, 20)  # steps too dense to tell apart: one band of the mean shade
MIN_STEP_BAND_PX = 4.0
BACKGROUND = QColor(255, 255, 255)


def over(color: QColor, base: QColor) -> QColor:
    """``color`` (translucent) blended over the opaque ``base``: the opaque colour it shows."""
    a = color.alphaF()
    return QColor(*(round(c * a + b * (1.0 - a)) for c, b in
                    ((color.red(), base.red()), (color.green(), base.green()), (color.blue(), base.blue()))))


def step_label_variants(spec: RankSpec, number: int, cpu_us: float) -> list[str]:
    """Header texts for one step, longest first: the engine's step time, the CPU span if it differs."""
    step_us = spec.step_durations_us.get(number)
    if step_us is None or not math.isfinite(step_us):
        return [f"step {number} · CPU {format_duration_us(cpu_us)}", f"step {number}"]
    if abs(step_us - cpu_us) <= 0.05 * step_us:
        return [f"step {number} · {format_duration_us(step_us)}", f"step {number}"]
    return [f"step {number} · {format_duration_us(step_us)} (CPU {format_duration_us(cpu_us)})",
            f"step {number} · {format_duration_us(step_us)}", f"step {number}"]


TEXT_BOXES_MAX = 4096
"""Tick label boxes the time axis keeps (a frame shows ~20; every zoom level has its own)."""


class TimeAxisItem(pg.AxisItem):
    """Time axis over µs with units that follow the zoom (s, ms, µs, ns).

    Every pan and zoom moves the axis, so its layout is a frame's cost: drawn here from pyqtgraph's
    own tick values and placement rules (``generateDrawSpecs``, for this top axis without a grid),
    but each level's ticks made as one numpy array and drawn with one ``drawLines`` (pyqtgraph made
    two ``Point`` objects and a ``drawLine`` a tick, ~70 ticks a frame), and each label's text box
    measured once per string. Other set-ups (a grid, fixed ticks) go through pyqtgraph's code.
    """

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.offset_us = 0.0
        self._specs = None
        self._text_boxes: dict[tuple[str, str], QRectF] = {}   # (font and dpi, text): pyqtgraph's text box
        self.enableAutoSIPrefix(False)

    def paint(self, p, opt, widget):  # noqa: ANN001 (pg override)
        """pyqtgraph's axis paint without its QPicture: the axis changes with every pan and zoom,
        so recording the ticks and labels into a picture and replaying it drew them twice a frame.
        The specs are kept until pyqtgraph marks the axis for a redraw (``picture = None``)."""
        own = (self.orientation == "top" and self.grid is False and self._tickLevels is None
               and not any(self.style["stopAxisAtTick"]))
        if self.picture is None:
            p.save()
            if self.style["tickFont"]:
                p.setFont(self.style["tickFont"])
            self._specs = (own, self._top_specs(p) if own else self.generateDrawSpecs(p))
            p.restore()
            self.picture = True   # pyqtgraph's "drawn" mark: only paint() reads it
        if self._specs is not None and self._specs[1] is not None:
            p.save()
            (self._draw_top if self._specs[0] else self.drawPicture)(p, *self._specs[1])
            p.restore()

    def _text_box(self, p: QPainter, font_key: str, text: str) -> QRectF:
        """pyqtgraph's box of a tick label (``boundingRect`` about a 100 px square), measured once."""
        box = self._text_boxes.get((font_key, text))
        if box is None:
            if len(self._text_boxes) >= TEXT_BOXES_MAX:   # a long session's labels: start afresh
                self._text_boxes.clear()
            box = p.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter, text)
            self._text_boxes[(font_key, text)] = box
        return QRectF(box)

    def _top_specs(self, p: QPainter):  # noqa: ANN202, C901 - pyqtgraph's steps, in its order
        """(axis line, [(pen, tick lines)] per level, text specs): ``generateDrawSpecs`` of pyqtgraph
        0.13-0.14 for a top axis without a grid, with the same arithmetic in the same order (so the
        same pixels), the ticks as arrays."""
        bounds = self.mapRectFromParent(self.geometry())
        span = (bounds.bottomLeft() + QPointF(-1.0, -1.0), bounds.bottomRight() + QPointF(1.0, -1.0))
        tick_stop = bounds.bottom()
        points = [self.mapToDevice(x) for x in span]
        if None in points:
            return None
        d = points[1] - points[0]
        length_px = (d.x() ** 2 + d.y() ** 2) ** 0.5
        if length_px == 0:
            return None
        levels = self.tickValues(self.range[0], self.range[1], length_px)
        dif = self.range[1] - self.range[0]
        if dif == 0:
            x_scale, offset = 1, 0
        else:
            x_scale = bounds.width() / dif
            offset = self.range[0] * x_scale
        x_range = [x * x_scale - offset for x in self.range]
        x_min, x_max = min(x_range), max(x_range)
        ticks, positions = [], []
        for i, (_, values) in enumerate(levels):
            tick_length = self.style["tickLength"] / ((i * 0.5) + 1.0)
            pen = self._level_pen(i, length_px, len(values))
            x = np.asarray(values, dtype=np.float64) * x_scale - offset
            inside = ~((x < x_min) | (x > x_max))
            positions.append(np.where(inside, x, np.nan))
            xs = x[inside]
            ticks.append((pen, np.column_stack((xs, np.full(xs.size, tick_stop), xs,
                                                np.full(xs.size, tick_stop + tick_length * -1)))))
        axis_spec = (self.pen(), span[0], span[1])
        if not self.style["showValues"]:
            return axis_spec, ticks, []
        return axis_spec, ticks, self._top_text_specs(p, levels, positions, length_px, tick_stop)

    def _level_pen(self, level: int, length_px: float, n_ticks: int) -> QPen:
        """The pen of one tick level: pyqtgraph's alpha rule (``tickAlpha``, else 255 / (level + 1))."""
        alpha = self.style["tickAlpha"]
        if alpha is None:
            alpha = 255 / (level + 1)
        elif isinstance(alpha, float):
            alpha = min(255, int(round(max(0, int(round(alpha * 255))))))
        pen = self.tickPen()
        if pen.brush().style() == Qt.BrushStyle.SolidPattern:
            pen = QPen(pen)
            color = QColor(pen.color())
            color.setAlpha(int(alpha))
            pen.setColor(color)
        return pen

    def _top_text_specs(self, p: QPainter, levels, positions: list[np.ndarray],  # noqa: ANN001
                        length_px: float, tick_stop: float) -> list:
        """The tick labels that fit, level by level until the text gets crowded (pyqtgraph's rule)."""
        device = p.device()
        font_key = f"{p.font().key()} {device.logicalDpiX() if device else 0} {device.logicalDpiY() if device else 0}"
        text_offset = self.style["tickTextOffset"][1]
        text_rects, text_specs = [], []
        last_height = 0
        bounding = self.boundingRect()
        flags = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom | Qt.TextFlag.TextDontClip
        for i in range(min(len(levels), self.style["maxTextLevel"] + 1)):
            spacing, values = levels[i]
            strings = self.tickStrings(values, self.autoSIPrefixScale * self.scale, spacing)
            if len(strings) == 0:
                continue
            xs = positions[i].tolist()
            rects = []
            for x, text in zip(xs, strings):
                if x != x:   # out of bounds (NaN): pyqtgraph's None
                    rects.append(None)
                    continue
                box = self._text_box(p, font_key, text)
                box.setHeight(box.height() * 0.8)
                rects.append(box)
                text_rects.append(box)
            if text_rects:
                text_size = np.sum([r.width() for r in text_rects])
                height = np.max([r.height() for r in text_rects])
            else:
                text_size, height = 0, 0
            if i > 0 and any(len(text_specs) >= n and float(text_size) / length_px >= limit
                             for n, limit in self.style["textFillLimits"]):
                break
            last_height = height
            offset = max(0, self.style["tickLength"]) + text_offset
            for x, text, box in zip(xs, strings, rects):
                if box is None:
                    continue
                h, w = box.height(), box.width()
                rect = QRectF(x - w / 2., tick_stop - offset - h, w, h)
                if bounding & rect != rect:   # pyqtgraph's containment test (rounding-safe)
                    continue
                text_specs.append((rect, flags, text))
        self._updateMaxTextSize(last_height)
        return text_specs

    def _draw_top(self, p: QPainter, axis_spec, ticks, text_specs) -> None:  # noqa: ANN001
        """pyqtgraph's ``drawPicture`` with one ``drawLines`` per tick level."""
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        pen, p1, p2 = axis_spec
        p.setPen(pen)
        p.drawLine(p1, p2)
        for pen, lines in ticks:
            p.setPen(pen)
            draw_lines(p, lines)
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        p.setPen(self.textPen())
        p.setClipRect(self.boundingRect().toAlignedRect())
        for rect, flags, text in text_specs:
            p.drawText(rect, int(flags), text)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803, ANN001, ANN201 (pg override)
        """pyqtgraph's tick values, with its test for a tick already on a higher level (``np.isclose``
        with ``rtol=0``: ``|a - b| <= atol`` for finite values) as the plain comparison."""
        if self.logMode:
            return super().tickValues(minVal, maxVal, size)
        minVal, maxVal = sorted((minVal, maxVal))
        minVal *= self.scale
        maxVal *= self.scale
        ticks, seen = [], np.empty(0)
        for spacing, offset in self.tickSpacing(minVal, maxVal, size):
            start = (math.ceil((minVal - offset) / spacing) * spacing) + offset
            num = int((maxVal - start) / spacing) + 1
            values = (np.arange(num) * spacing + start) / self.scale
            if seen.size and values.size:
                values = values[~(np.abs(seen - values[:, None]) <= spacing / self.scale * 0.01).any(axis=-1)]
            seen = np.concatenate([seen, values])
            ticks.append((spacing / self.scale, values.tolist()))
        return ticks

    def tickStrings(self, values, scale, spacing):  # noqa: N802, ANN001, ANN201 (pg override)
        unit, per = time_unit_for(spacing)
        step = spacing / per
        decimals = max(0, min(6, -int(math.floor(math.log10(step))) if step > 0 else 0))
        return [f"{(v - self.offset_us) / per:.{decimals}f} {unit}" for v in values]


class LaneAxisItem(pg.AxisItem):
    """The left axis: lane names elided to fit its width; the hovered lane's full name as tooltip.

    pyqtgraph silently drops a tick label wider than the axis, so every label is elided (middle)
    to the width in pixels before it becomes a tick.
    """

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.label_font = QFont()
        self.setStyle(tickFont=self.label_font)
        self.full_labels: list[tuple[float, float, str]] = []   # (y0_px, y1_px, full name)

    def text_width_px(self) -> float:
        return AXIS_WIDTH_PX - TICK_TEXT_OFFSET_PX - LABEL_MARGIN_PX

    def elide(self, text: str) -> str:
        """``text`` if it fits; else without its "(process)" part; else that, elided in the middle."""
        metrics = QFontMetricsF(self.label_font)
        width = self.text_width_px()
        if metrics.horizontalAdvance(text) <= width:
            return text
        shorter = re.sub(r"\s*\([^()]*\)", "", text).strip() or text
        return metrics.elidedText(shorter, Qt.TextElideMode.ElideMiddle, width)

    def elide_header(self, text: str) -> str:
        """A rank header keeps its start ("rank 12 · name…"): elided at the end, never mid-name."""
        metrics = QFontMetricsF(self.label_font)
        width = self.text_width_px()
        return text if metrics.horizontalAdvance(text) <= width else metrics.elidedText(
            text, Qt.TextElideMode.ElideRight, width)

    def set_labels(self, labels: list[tuple[float, float, float, str]],
                   header_ys: frozenset[float] = frozenset()) -> None:
        """``labels``: (tick y, y0, y1, full name) in view pixels; ticks get the elided names
        (rank headers, at ``header_ys``, elided at the end)."""
        self.full_labels = [(y0, y1, text) for _, y0, y1, text in labels]
        self.setTicks([[(y, self.elide_header(text) if y in header_ys else self.elide(text))
                        for y, _, _, text in labels], []])

    def label_at(self, y_px: float) -> str | None:
        """The full name of the lane (or rank header) at ``y_px`` (view pixels)."""
        for y0, y1, text in self.full_labels:
            if y0 <= y_px < y1:
                return text
        return None

    def hoverEvent(self, ev) -> None:  # noqa: N802, ANN001 (pyqtgraph hook)
        view = self.linkedView()
        if ev.isExit() or view is None:
            self.setToolTip("")
            return
        y = view.mapSceneToView(ev.scenePos()).y()
        self.setToolTip(self.label_at(y) or "")


class TimelineViewBox(pg.ViewBox):
    """Pan/zoom in x like Perfetto; y scrolls (pixel units), never zooms."""

    range_selected = Signal(float, float)
    clicked = Signal(float, float, bool)        # x_us, y_px, double

    def __init__(self) -> None:
        super().__init__(invertY=True, enableMenu=False)
        self.content_height_px = 0.0
        self._select_origin: float | None = None
        self.selection = pg.LinearRegionItem(movable=False, brush=QBrush(QColor(70, 130, 220, 45)),
                                             pen=pg.mkPen(QColor(70, 130, 220), width=1))
        self.selection.setZValue(50)
        self.selection.hide()
        self.addItem(self.selection, ignoreBounds=True)

    # y is pixels: keep the y span equal to the view's height in pixels
    def clamp_y(self, top: float | None = None) -> None:
        (_, _), (y0, _) = self.viewRange()
        h = max(float(self.height()), 1.0)
        top = y0 if top is None else top
        top = min(max(top, -4.0), max(self.content_height_px - h + 8.0, -4.0))
        self.setYRange(top, top + h, padding=0.0, update=True)

    def zoom_x(self, factor: float, center_us: float | None = None) -> None:
        (x0, x1), _ = self.viewRange()
        c = (x0 + x1) / 2.0 if center_us is None else center_us
        self.setXRange(c - (c - x0) / factor, c + (x1 - c) / factor, padding=0.0)

    def pan_x(self, fraction: float) -> None:
        (x0, x1), _ = self.viewRange()
        d = (x1 - x0) * fraction
        self.setXRange(x0 + d, x1 + d, padding=0.0)

    def wheelEvent(self, ev, axis=None) -> None:  # noqa: N802, ANN001
        delta = ev.delta() if hasattr(ev, "delta") else ev.angleDelta().y()
        if ev.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            (_, _), (y0, _) = self.viewRange()
            self.clamp_y(y0 - delta * 0.5)
        else:
            center = self.mapSceneToView(ev.scenePos()).x()
            self.zoom_x(ZOOM_STEP ** (delta / 120.0), center)
        ev.accept()

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: N802, ANN001
        ev.accept()
        if ev.button() == Qt.MouseButton.LeftButton and not (
                ev.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            last = self.mapSceneToView(ev.lastScenePos())
            now = self.mapSceneToView(ev.scenePos())
            (x0, x1), (y0, _) = self.viewRange()
            dx = last.x() - now.x()
            self.setXRange(x0 + dx, x1 + dx, padding=0.0)
            dy_px = ev.lastScreenPos().y() - ev.screenPos().y()
            self.clamp_y(y0 + dy_px)
            return
        # right-drag (or shift-drag): select a time range
        x = self.mapSceneToView(ev.scenePos()).x()
        if ev.isStart():
            self._select_origin = self.mapSceneToView(ev.buttonDownScenePos()).x()
            self.selection.show()
        if self._select_origin is None:
            return
        a, b = sorted((self._select_origin, x))
        self.selection.setRegion((a, b))
        if ev.isFinish():
            self._select_origin = None
            self.range_selected.emit(a, b)

    def mouseClickEvent(self, ev) -> None:  # noqa: N802, ANN001
        if ev.button() == Qt.MouseButton.LeftButton:
            p = self.mapSceneToView(ev.scenePos())
            self.clicked.emit(p.x(), p.y(), bool(ev.double()))
            ev.accept()
        else:
            ev.ignore()


class BackdropItem(pg.GraphicsObject):
    """Behind the lanes: rank header strips, step shading and step labels, lane separators."""

    def __init__(self) -> None:
        super().__init__()
        self.ranks: list[tuple[float, float, RankSpec, list[tuple[float, float, bool]]]] = []
        self._steps: list[np.ndarray] = []
        self.x_range = (0.0, 1.0)
        self._font = QFont()
        self._font.setPointSizeF(8.0)
        self._bold = QFont(self._font)
        self._bold.setBold(True)
        self.setZValue(-10)

    def set_layout(self, ranks, x_range: tuple[float, float]) -> None:  # noqa: ANN001
        """``ranks``: (y0, y1, RankSpec, [(lane_y0, lane_y1, is_gpu)]) per rank."""
        self.prepareGeometryChange()
        self.ranks = ranks
        # per rank, its steps as columns (number, cpu start, cpu end, gpu start, gpu end)
        self._steps = [np.asarray(spec.steps, dtype=np.float64).reshape(-1, 5) for _, _, spec, _ in ranks]
        self.x_range = x_range
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802
        x0, x1 = self.x_range
        y1 = max((r[1] for r in self.ranks), default=1.0)
        return QRectF(x0 - 1e12, -10.0, 2e12 + (x1 - x0), y1 + 20.0)

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        t = painter.transform()
        sx, dx, sy, dy = t.m11(), t.dx(), t.m22(), t.dy()
        width_px = float(painter.device().width())
        painter.save()
        painter.resetTransform()
        header_bg = QColor(236, 239, 244)
        sep = QPen(QColor(205, 210, 218))
        for (y0, y1, spec, lanes), steps in zip(self.ranks, self._steps):
            top = y0 * sy + dy
            header_bottom = (y0 + HEADER_PX) * sy + dy
            bottom = y1 * sy + dy
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(STRAGGLER_HEADER if spec.straggler else header_bg)
            painter.drawRect(QRectF(0.0, top, width_px, header_bottom - top))
            if spec.straggler:   # the late rank: a warm tint over its lanes and a bar at the left
                painter.setBrush(STRAGGLER_TINT)
                painter.drawRect(QRectF(0.0, header_bottom, width_px, bottom - header_bottom))
                painter.setBrush(STRAGGLER_BAR)
                painter.drawRect(QRectF(0.0, top, 4.0, bottom - top))
            base = over(STRAGGLER_TINT, BACKGROUND) if spec.straggler else BACKGROUND
            dense = self._paint_step_bands(painter, steps, lanes, sx, dx, sy, dy, width_px, base)
            painter.setPen(sep)
            for ly0, _, _ in lanes[1:]:
                yy = (ly0 - LANE_GAP_PX / 2) * sy + dy
                painter.drawLine(QPointF(0.0, yy), QPointF(width_px, yy))
            painter.drawLine(QPointF(0.0, bottom), QPointF(width_px, bottom))
            if not dense:
                self._paint_step_labels(painter, spec, steps, sx, dx, top, header_bottom, width_px)
        painter.restore()

    @staticmethod
    def _paint_step_bands(painter: QPainter, steps: np.ndarray, lanes, sx: float, dx: float,  # noqa: ANN001
                          sy: float, dy: float, width_px: float, base: QColor) -> bool:
        """Step bands: the CPU span over CPU lanes, the GPU span over GPU lanes, alternating shades.
        Only the steps in view are drawn; when they are narrower than MIN_STEP_BAND_PX on average
        (thousands of steps zoomed out) each lane gets one band of the mean shade. The shades are
        blended over ``base`` here and drawn opaque: Qt's raster engine fills hundreds of narrow
        translucent rectangles ~10x slower than opaque ones. Returns whether the steps were dense."""
        if not len(steps) or not lanes:
            return False
        cpu = (steps[:, 1] * sx + dx, steps[:, 2] * sx + dx)
        has_gpu = np.isfinite(steps[:, 3])
        gpu = (np.where(has_gpu, steps[:, 3], steps[:, 1]) * sx + dx,
               np.where(has_gpu, steps[:, 4], steps[:, 2]) * sx + dx)
        dense = False
        for is_gpu, (a, b) in ((False, cpu), (True, gpu)):
            rows = [(ly0, ly1) for ly0, ly1, g in lanes if g == is_gpu]
            if not rows:
                continue
            seen = np.flatnonzero((b > -4.0) & (a < width_px + 4.0))
            if not seen.size:
                continue
            xa, xb = np.maximum(a[seen], -4.0), np.minimum(b[seen], width_px + 4.0)
            if seen.size * MIN_STEP_BAND_PX > float(xb.max() - xa.min()):
                dense = True
                painter.setBrush(over(STEP_BAND_MEAN, base))
                spans = [(float(xa.min()), float(xb.max()))]
                painter.drawRects([QRectF(x0, ly0 * sy + dy - LANE_GAP_PX / 2, x1 - x0, (ly1 - ly0 + LANE_GAP_PX) * sy)
                                   for x0, x1 in spans for ly0, ly1 in rows])
                continue
            band_y = np.array([ly0 * sy + dy - LANE_GAP_PX / 2 for ly0, _ in rows])
            band_h = np.array([(ly1 - ly0 + LANE_GAP_PX) * sy for ly0, ly1 in rows])
            for parity, brush in ((0, STEP_BAND_EVEN), (1, STEP_BAND_ODD)):
                m = (seen % 2 == parity) & (xb > xa)
                if m.any():   # step by step, each lane's band: one drawRects for all
                    painter.setBrush(over(brush, base))
                    xywh = np.empty((int(m.sum()), len(rows), 4))   # (step, lane): broadcast, no tiling
                    xywh[:, :, 0] = xa[m][:, None]
                    xywh[:, :, 1] = band_y
                    xywh[:, :, 2] = (xb[m] - xa[m])[:, None]
                    xywh[:, :, 3] = band_h
                    draw_rects(painter, xywh.reshape(-1, 4))
        return dense

    def _paint_step_labels(self, painter: QPainter, spec: RankSpec, steps: np.ndarray, sx: float, dx: float,
                           top: float, header_bottom: float, width_px: float) -> None:
        """Header text: a tick at each step's CPU start in view and its label where it fits."""
        if not len(steps):
            return
        painter.setFont(self._font)
        metrics = painter.fontMetrics()
        gpu_end = np.where(np.isfinite(steps[:, 4]), steps[:, 4], steps[:, 2])
        # a label may use the header up to the next step's tick (the GPU may run later)
        ends = np.append(steps[1:, 1], max(steps[-1, 2], gpu_end[-1]))
        xa, xb = steps[:, 1] * sx + dx, ends * sx + dx
        in_view = np.flatnonzero((xb > -4.0) & (xa < width_px))
        ticks = in_view[(xa[in_view] > -4.0) & (xa[in_view] < width_px)]
        if ticks.size:   # a tick at each step's CPU start: one drawLines
            x = xa[ticks]
            painter.setPen(QPen(QColor(90, 110, 150)))
            draw_lines(painter, np.column_stack((x, np.full(x.size, top + 3), x, np.full(x.size, header_bottom))))
        left = np.maximum(xa, 0.0) + 4.0
        room = np.minimum(xb, width_px) - left - 4.0
        painter.setPen(QColor(40, 50, 70))
        label_end = -1.0
        for k in in_view[(room[in_view] > 40.0) & (left[in_view] < width_px)].tolist():
            if left[k] <= label_end:
                continue
            number, c0, c1 = int(steps[k, 0]), float(steps[k, 1]), float(steps[k, 2])
            text = next((t for t in step_label_variants(spec, number, c1 - c0)
                         if metrics.horizontalAdvance(t) <= room[k]), None)
            if text is None:
                continue
            rect = QRectF(float(left[k]), top, float(room[k]), header_bottom - top)
            painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
            label_end = float(left[k]) + metrics.horizontalAdvance(text)


class FlowArrowItem(pg.GraphicsObject):
    """Arrows from a CPU launch to the GPU kernel(s) it launched."""

    def __init__(self) -> None:
        super().__init__()
        self.segments: list[tuple[float, float, float, float]] = []
        self.setZValue(40)

    def set_segments(self, segments: list[tuple[float, float, float, float]]) -> None:
        self.prepareGeometryChange()
        self.segments = segments
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802
        if not self.segments:
            return QRectF()
        xs = [s[0] for s in self.segments] + [s[2] for s in self.segments]
        ys = [s[1] for s in self.segments] + [s[3] for s in self.segments]
        return QRectF(min(xs), min(ys), max(max(xs) - min(xs), 1e-6), max(max(ys) - min(ys), 1.0))

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        t = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        color = QColor(25, 25, 25)
        pen = QPen(color, 1.6)
        for x0, y0, x1, y1 in self.segments:
            a = t.map(QPointF(x0, y0))
            b = t.map(QPointF(x1, y1))
            path = QPainterPath(a)
            mid_y = (a.y() + b.y()) / 2
            path.cubicTo(QPointF(a.x(), mid_y), QPointF(b.x(), mid_y), b)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(path)
            direction = 1.0 if b.y() >= a.y() else -1.0
            head = QPolygonF([b, QPointF(b.x() - 4.5, b.y() - 8.0 * direction),
                              QPointF(b.x() + 4.5, b.y() - 8.0 * direction)])
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color)
            painter.drawPolygon(head)
            painter.drawEllipse(a, 2.5, 2.5)
        painter.restore()


class TraceTimeline(pg.PlotWidget):
    """All lanes of a trace, stacked per rank, with a time axis on top and lane names on the left."""

    event_clicked = Signal(object)         # EventRef or None
    range_selected = Signal(float, float)
    rank_header_clicked = Signal(int)      # rank index: the tab toggles its collapse
    lane_double_clicked = Signal(int, int)  # (rank index, lane id): the tab folds a CPU thread

    def __init__(self, parent=None) -> None:  # noqa: ANN001
        self.view_box = TimelineViewBox()
        self.time_axis = TimeAxisItem("top")
        self.left_axis = LaneAxisItem("left")
        super().__init__(parent, viewBox=self.view_box,
                         axisItems={"top": self.time_axis, "left": self.left_axis})
        plot = self.getPlotItem()
        plot.hideAxis("bottom")
        plot.showAxis("top")
        plot.showAxis("left")
        for name in ("bottom", "right"):   # hidden: a linked one still relaid its SI-prefixed label
            plot.getAxis(name).unlinkFromView()   # (``setHtml``) at every pan, ~0.3 ms a frame
        plot.setMenuEnabled(False)
        plot.hideButtons()
        self.left_axis.setWidth(AXIS_WIDTH_PX)
        self.left_axis.setStyle(tickLength=0, tickTextOffset=TICK_TEXT_OFFSET_PX, autoExpandTextSpace=False)
        self.left_axis.setTicks([[], []])
        self.time_axis.setStyle(tickLength=-6)
        self.view_box.disableAutoRange()
        self.view_box.setMouseEnabled(x=True, y=False)
        self.setBackground("w")
        # every frame repaints the whole view: pyqtgraph's cached background would be one more
        # full-view image copy a frame (~0.5 ms here), where a plain fill paints the same white;
        # and the view's background brush covers the viewport, whose own fill under it was another
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self.viewport().setAutoFillBackground(False)
        for ax in (self.left_axis, self.time_axis):
            ax.setPen(pg.mkPen(QColor(150, 150, 150)))
            ax.setTextPen(pg.mkPen(QColor(40, 40, 40)))
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.lanes: list[TraceLaneItem] = []
        self.lane_specs: list[LaneSpec] = []
        self._lane_by_key: dict[tuple[int, int], TraceLaneItem] = {}
        self.backdrop = BackdropItem()
        self.flow_item = FlowArrowItem()
        self.view_box.addItem(self.backdrop, ignoreBounds=True)
        self.view_box.addItem(self.flow_item, ignoreBounds=True)
        self.full_range = (0.0, 1.0)
        self.selected: EventRef | None = None
        self._selected_partners: list[EventRef] = []
        self._highlight_masks: dict[tuple[int, int], np.ndarray] | None = None
        self.rank_specs: list[RankSpec] = []
        self.all_lane_specs: list[LaneSpec] = []
        self.header_spans: list[tuple[float, float, int]] = []
        self.collapsed_ranks: set[int] = set()
        self.collapsed_groups: set[tuple[int, str]] = set()
        self.collapsed_lanes: set[tuple[int, int]] = set()
        self.pinned_ranks: list[int] = []
        self.shown_ranks: set[int] | None = None
        self._palette: Palette | None = None
        self._proxy = pg.SignalProxy(self.view_box.sigRangeChanged, rateLimit=30,
                                     slot=self._on_range_changed)
        self.view_box.sigResized.connect(self._on_resized)
        self.view_box.clicked.connect(self._on_clicked)
        self.view_box.range_selected.connect(self.range_selected)
        self._mouse_scene_pos: QPointF | None = None   # W/S zoom about it, as Perfetto does
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    # -- building -----------------------------------------------------------------------------------
    def clear_lanes(self) -> None:
        self._remove_items()
        self.rank_specs, self.all_lane_specs = [], []
        self.view_box.content_height_px = 0.0

    def _remove_items(self) -> None:
        for item in self.lanes:
            self.view_box.removeItem(item)
        self.lanes, self.lane_specs, self._lane_by_key = [], [], {}
        self.header_spans = []
        self.selected = None
        self.flow_item.set_segments([])
        self.backdrop.set_layout([], self.full_range)
        self.left_axis.set_labels([])

    def set_lanes(self, ranks: list[RankSpec], lanes: list[LaneSpec], palette: Palette,
                  full_range_us: tuple[float, float], offset_us: float = 0.0) -> None:
        """Lay out ``lanes`` (grouped by rank, in order) and show the whole time range; every rank
        expanded, none pinned or filtered out."""
        self.clear_lanes()
        self._palette = palette
        self.rank_specs, self.all_lane_specs = list(ranks), list(lanes)
        self.collapsed_ranks: set[int] = set()
        self.collapsed_groups: set[tuple[int, str]] = set()
        self.collapsed_lanes: set[tuple[int, int]] = set()
        self.pinned_ranks: list[int] = []
        self.shown_ranks: set[int] | None = None
        self.time_axis.offset_us = offset_us
        self.full_range = full_range_us
        span = max(full_range_us[1] - full_range_us[0], 1e-3)
        self.view_box.setLimits(xMin=full_range_us[0] - 0.25 * span, xMax=full_range_us[1] + 0.25 * span,
                                minXRange=1e-3)
        self._layout(refold=False)   # reset_view folds at the new range
        self.reset_view()

    def set_rank_specs(self, ranks: list[RankSpec]) -> None:
        """The same ranks' headers, newer (the analysis gives step times, a late rank's mark):
        redrawn without rebuilding the lanes unless a title or a mark changed."""
        ranks = list(ranks)
        if len(ranks) != len(self.rank_specs):   # not the ranks drawn (none yet): nothing to redraw
            return
        relabel = any((a.title, a.straggler) != (b.title, b.straggler) for a, b in zip(ranks, self.rank_specs))
        newer = {id(old): new for old, new in zip(self.rank_specs, ranks)}
        self.rank_specs = ranks
        if relabel:
            self._layout()
            return
        self.backdrop.set_layout([(y0, y1, newer.get(id(spec), spec), boxes)
                                  for y0, y1, spec, boxes in self.backdrop.ranks], self.full_range)

    def rank_order(self) -> list[int]:
        """Rank indices in drawing order: pinned first (in pin order), then the rest; filtered ranks
        are left out."""
        shown = [i for i in range(len(self.rank_specs)) if self.shown_ranks is None or i in self.shown_ranks]
        pinned = [i for i in self.pinned_ranks if i in shown]
        return pinned + [i for i in shown if i not in pinned]

    def _layout(self, refold: bool = True) -> None:
        """(Re)build the lane items for the current collapse, pin and filter state."""
        highlight = dict(self._highlight_masks or {})
        selected, partners = self.selected, list(self._selected_partners)
        self._remove_items()
        palette = self._palette
        y = 0.0
        ticks: list[tuple[float, float, float, str]] = []   # (tick y, y0, y1, full label)
        layout = []
        by_rank: dict[int, list[LaneSpec]] = {}
        for spec in self.all_lane_specs:
            by_rank.setdefault(spec.rank_index, []).append(spec)
        for rank_index in self.rank_order():
            rank = self.rank_specs[rank_index]
            rank_y0 = y
            collapsed = rank_index in self.collapsed_ranks
            title = rank.title + ("  ▸ (collapsed)" if collapsed else "")
            if rank_index in self.pinned_ranks:
                title = "📌 " + title
            ticks.append((y + HEADER_PX / 2, y, y + HEADER_PX, title))
            self.header_spans.append((y, y + HEADER_PX, rank_index))
            y += HEADER_PX + LANE_GAP_PX / 2
            lane_boxes = []
            for spec in [] if collapsed else by_rank.get(rank_index, []):
                if (rank_index, spec.thread_group) in self.collapsed_groups:
                    continue
                one_row = (rank_index, spec.lane_id) in self.collapsed_lanes and spec.rows.n_rows > 1
                rows = LaneRows(spec.rows.rows[:1], spec.rows.event_index[:1]) if one_row else spec.rows
                item = TraceLaneItem(rows, spec.color_key, palette, spec.name_of, y, ROW_HEIGHT_PX,
                                     spec.gaps if spec.gap_index is None else spec.gap_index, spec.gap_kind)
                self.view_box.addItem(item, ignoreBounds=True)
                self.lanes.append(item)
                self.lane_specs.append(spec)
                self._lane_by_key[(spec.rank_index, spec.lane_id)] = item
                label = spec.label + (f"  ▸ +{spec.rows.n_rows - 1} rows" if one_row else "")
                ticks.append((y + ROW_HEIGHT_PX / 2, y, y + item.height_px + LANE_GAP_PX, label))
                lane_boxes.append((y, y + item.height_px, spec.kind != "cpu"))
                y += item.height_px + LANE_GAP_PX
            groups = sorted({g for (ri, g) in self.collapsed_groups if ri == rank_index and not collapsed})
            for group in groups:   # a collapsed thread group keeps one thin labelled row
                ticks.append((y + 6.0, y, y + 12.0, f"{group} lanes (collapsed)"))
                y += 14.0
            layout.append((rank_y0, y - LANE_GAP_PX / 2, rank, lane_boxes))
            y += 2.0
        self.view_box.content_height_px = y
        self.backdrop.set_layout(layout, self.full_range)
        self.left_axis.set_labels(ticks, frozenset(y0 + HEADER_PX / 2 for y0, _, _ in self.header_spans))
        if highlight:
            self.set_highlight(highlight)
        self.set_selected(selected if selected is None or self.lane_item(selected.rank_index, selected.lane_id)
                          else None, partners)
        if refold:
            self.view_box.clamp_y()
            self.refold()

    def set_rank_collapsed(self, rank_index: int, collapsed: bool) -> None:
        """Collapse a rank to its header strip, or expand it."""
        (self.collapsed_ranks.add if collapsed else self.collapsed_ranks.discard)(rank_index)
        self._layout()

    def set_group_collapsed(self, rank_index: int | None, group: str, collapsed: bool) -> None:
        """Collapse a rank's "CPU" or "GPU" lanes (``rank_index`` None: every rank's)."""
        ranks = range(len(self.rank_specs)) if rank_index is None else [rank_index]
        for ri in ranks:
            (self.collapsed_groups.add if collapsed else self.collapsed_groups.discard)((ri, group))
        self._layout()

    def set_collapsed(self, ranks: set[int] | None = None, lanes: set[tuple[int, int]] | None = None) -> None:
        """Replace the collapsed ranks and/or the folded lanes at once (one layout)."""
        if ranks is not None:
            self.collapsed_ranks = set(ranks)
        if lanes is not None:
            self.collapsed_lanes = set(lanes)
        self._layout()

    def set_lane_collapsed(self, rank_index: int, lane_id: int, collapsed: bool) -> None:
        """Draw one lane (a CPU thread) as its outermost row only, or with all its depth rows."""
        (self.collapsed_lanes.add if collapsed else self.collapsed_lanes.discard)((rank_index, lane_id))
        self._layout()

    def set_pinned(self, rank_index: int, pinned: bool) -> None:
        """Pin a rank to the top of the timeline (in pin order), or unpin it."""
        if pinned and rank_index not in self.pinned_ranks:
            self.pinned_ranks.append(rank_index)
        elif not pinned and rank_index in self.pinned_ranks:
            self.pinned_ranks.remove(rank_index)
        self._layout()

    def bring_rank_first(self, rank_index: int) -> None:
        """Show, expand and pin a rank above the others, and scroll to the top."""
        self.collapsed_ranks.discard(rank_index)
        if self.shown_ranks is not None:
            self.shown_ranks.add(rank_index)
        self.pinned_ranks = [rank_index] + [i for i in self.pinned_ranks if i != rank_index]
        self._layout()
        self.view_box.clamp_y(-4.0)

    def set_rank_filter(self, rank_indices: set[int] | None) -> None:
        """Draw only these ranks (None: all)."""
        self.shown_ranks = None if rank_indices is None else set(rank_indices)
        self._layout()

    def header_rank_at(self, y_px: float) -> int | None:
        """The rank whose header strip is at ``y_px`` (view pixels)."""
        for y0, y1, rank_index in self.header_spans:
            if y0 <= y_px < y1:
                return rank_index
        return None

    def lane_item(self, rank_index: int, lane_id: int) -> TraceLaneItem | None:
        return self._lane_by_key.get((rank_index, lane_id))

    # -- navigation ---------------------------------------------------------------------------------
    def reset_view(self) -> None:
        a, b = self.full_range
        pad = 0.01 * max(b - a, 1e-3)
        self.view_box.setXRange(a - pad, b + pad, padding=0.0)
        self.view_box.clamp_y(-4.0)
        self.refold()

    def zoom_to(self, t0_us: float, t1_us: float, pad_fraction: float = 0.04) -> None:
        pad = pad_fraction * max(t1_us - t0_us, 1e-3)
        self.view_box.setXRange(t0_us - pad, t1_us + pad, padding=0.0)
        self.refold()

    def scroll_to_y(self, y_px: float) -> None:
        (_, _), (y0, y1) = self.view_box.viewRange()
        if not (y0 + 10 <= y_px <= y1 - 30):
            self.view_box.clamp_y(y_px - (y1 - y0) / 3)

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        self._mouse_scene_pos = QPointF(scene_pos)

    def key_zoom_center_us(self) -> float | None:
        """The time under the mouse when it is over the lanes (W/S zoom about it), else None (centre)."""
        pos = self._mouse_scene_pos
        if pos is None or not self.view_box.sceneBoundingRect().contains(pos):
            return None
        return float(self.view_box.mapSceneToView(pos).x())

    def keyPressEvent(self, ev: QKeyEvent) -> None:  # noqa: N802
        key = ev.key()
        if key == Qt.Key.Key_W:
            self.view_box.zoom_x(ZOOM_STEP, self.key_zoom_center_us())
        elif key == Qt.Key.Key_S:
            self.view_box.zoom_x(1.0 / ZOOM_STEP, self.key_zoom_center_us())
        elif key == Qt.Key.Key_A:
            self.view_box.pan_x(-PAN_FRACTION)
        elif key == Qt.Key.Key_D:
            self.view_box.pan_x(PAN_FRACTION)
        else:
            super().keyPressEvent(ev)
            return
        ev.accept()

    # -- folding --------------------------------------------------------------------------------------
    def _on_range_changed(self, *args) -> None:  # noqa: ANN002
        self.refold()

    def _on_resized(self) -> None:
        self.view_box.clamp_y()
        self.refold()

    def refold(self) -> None:
        """Fold the lanes in the vertical view for the current x range (normally rate limited)."""
        (x0, x1), (y0, y1) = self.view_box.viewRange()
        width_px = max(float(self.view_box.width()), 1.0)
        for item in self.lanes:
            if item.y0_px + item.height_px >= y0 and item.y0_px <= y1:
                item.set_view(x0, x1, width_px)

    # -- selection ----------------------------------------------------------------------------------
    def _on_clicked(self, x_us: float, y_px: float, double: bool) -> None:
        self.setFocus()
        header = self.header_rank_at(y_px)
        if header is not None:
            self.rank_header_clicked.emit(header)
            return
        (x0, x1), _ = self.view_box.viewRange()
        tol = 3.0 * (x1 - x0) / max(float(self.view_box.width()), 1.0)
        for spec, item in zip(self.lane_specs, self.lanes):
            if item.row_of(y_px) is not None:
                if double and spec.kind == "cpu":
                    self.lane_double_clicked.emit(spec.rank_index, spec.lane_id)
                    return
                index = item.event_at(x_us, y_px, tol)
                ref = None if index is None else EventRef(spec.rank_index, spec.lane_id, index)
                self.event_clicked.emit(ref)
                return
        self.event_clicked.emit(None)

    def set_selected(self, ref: EventRef | None, partners: list[EventRef] | None = None) -> None:
        """Outline ``ref`` and its partners; draw arrows from the CPU side to the GPU side."""
        for item in self.lanes:
            item.set_selected(None)
        self.selected = ref
        self._selected_partners = list(partners or [])
        segments = []
        if ref is not None:
            item = self.lane_item(ref.rank_index, ref.lane_id)
            if item is not None:
                item.set_selected(ref.index)
                src = item.event_rect(ref.index)
                for p in partners or []:
                    other = self.lane_item(p.rank_index, p.lane_id)
                    if other is None or src is None:
                        continue
                    other.set_selected(p.index)
                    dst = other.event_rect(p.index)
                    if dst is None:
                        continue
                    a, b = (src, dst) if item.y0_px <= other.y0_px else (dst, src)
                    segments.append((a.left(), a.bottom(), b.left(), b.top()))
        self.flow_item.set_segments(segments)

    def set_highlight(self, masks: dict[tuple[int, int], np.ndarray] | None) -> None:
        """Highlight events per (rank_index, lane_id) mask; None clears all."""
        self._highlight_masks = masks
        for spec, item in zip(self.lane_specs, self.lanes):
            mask = None if masks is None else masks.get((spec.rank_index, spec.lane_id))
            item.set_highlight(mask)

    def lane_y(self, rank_index: int, lane_id: int) -> float | None:
        item = self.lane_item(rank_index, lane_id)
        return None if item is None else item.y0_px
