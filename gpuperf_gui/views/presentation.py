"""Presentation mode (View ▸ Presentation): one concept per page, in large print, for teaching.

Three pages, each drawn from core (R2), never from numbers typed here:

1. **Roofline** — the toolbar device's roof at the toolbar precision, and one point you move along
   the arithmetic-intensity axis with a slider: its attainable rate and bound come from
   :mod:`gpuperf_gui.core.roofline`.
2. **Where MFU goes** — the MFU gap bar (:class:`~gpuperf_gui.views.mfu.gap_bar.GapBar`) filling cause
   by cause for a worked example (:data:`GAP_EXAMPLE`) through :func:`core.mfu_gap.gap_breakdown`.
3. **Trace signatures** — six synthetic traces (:mod:`core.trace.synthetic.synth`), written to a temporary
   folder, read back by the trace loader and diagnosed by core in a background task; each drawn small
   as its CPU and GPU lanes with the compute stream's idle gaps in red.

Keys: → / PgDown next page (on the gap page: the next cause first), ← / PgUp back, Esc closes.
``python -m gpuperf_gui.views.presentation --screenshot DIR`` saves each page (docs/screenshots).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QImage, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QApplication,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSlider,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core import roofline
from gpuperf_gui.core.mfu_gap import (
    CAUSE_LABELS,
    GapCauses,
    GapSlice,
    gap_breakdown,
    pipeline_bubble_fraction,
)
from gpuperf_gui.core.trace.vocabulary.kernel_classes import KERNEL_CLASSES
from gpuperf_gui.core.trace.session.signature_lanes import (CPU_CLASS, ZOOM_KERNELS, SignatureLanes,
                                                            iter_signature_lanes, view_span_us)
from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.core.trace.diagnosis.signatures import label as signature_label
from gpuperf_gui.core.units import format_duration_us, format_number, format_si
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.mfu.gap_bar import HATCHED, SLICE_COLOURS
from gpuperf_gui.views.roofline_tab import Roof, RooflineCanvas, roof_for
from gpuperf_gui.views.trace.style import CPU_BASES, IDLE_HEX, KERNEL_CLASS_COLORS
from gpuperf_gui.views.workers import TaskRunner

FONT_PT = 20          # body text
TITLE_PT = 30
AXIS_PT = 16
LINE_SCALE = 2.2      # roof lines and markers, thicker than in the tab
AI_SLIDER_RANGE = (-1.0, 4.0)   # log10 FLOP/byte
AI_SLIDER_STEPS_PER_DECADE = 20
SIGNATURES_SHOWN = ("launch_bound", "comm_bound", "data_starved", "host_bound", "host_sync_bound", "memory_bound",
                    "pipeline_bubble")
WINDOW_SIZE = (1600, 1000)
LANE_ROW_PX = 56     # one lane height in every signature panel
LEGEND_LINES = 3    # the gap page's legend keeps room for this many lines: the buttons under it stay put


@dataclass(frozen=True)
class GapExample:
    """A worked MFU-gap example: a 4-stage pipeline with 16 micro-batches (its bubble from
    core's formula) and measured-looking shares of the step for the other causes."""

    mfu: float = 0.38
    stages: int = 4
    microbatches: int = 16
    exposed_comm: float = 0.08
    data_stall: float = 0.03
    memory_bound: float = 0.20   # time share in memory-bound kernels (loses 90 % of it)
    launch_gaps: float = 0.04

    def causes(self) -> GapCauses:
        return GapCauses(pipeline_bubble=pipeline_bubble_fraction(self.stages, self.microbatches),
                         exposed_comm=self.exposed_comm, data_stall=self.data_stall,
                         memory_bound=self.memory_bound, launch_gaps=self.launch_gaps)


GAP_EXAMPLE = GapExample()


def _big(widget: QWidget, points: int = FONT_PT, bold: bool = False) -> QWidget:
    font = widget.font()
    font.setPointSize(points)
    font.setBold(bold)
    widget.setFont(font)
    return widget


# page 1 ------------------------------------------------------------------------------------------
class RooflinePage(QWidget):
    """The roof of the toolbar's device and precision, and one point on it that the slider moves."""

    title = "Roofline: the roof a kernel can reach"

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.canvas = RooflineCanvas(self, line_scale=LINE_SCALE)
        axis_font = QFont()
        axis_font.setPointSize(AXIS_PT)
        for side in ("bottom", "left"):
            axis = self.canvas.plot_item.getAxis(side)
            axis.setStyle(tickFont=axis_font)
            axis.label.setFont(axis_font)
        self.canvas.plot_item.getAxis("left").setWidth(150)
        self.canvas.legend.hide()  # one roof, one point: the read-out below names both
        self.slider = QSlider(Qt.Orientation.Horizontal)
        low, high = AI_SLIDER_RANGE
        self.slider.setRange(int(low * AI_SLIDER_STEPS_PER_DECADE), int(high * AI_SLIDER_STEPS_PER_DECADE))
        self.slider.setValue(int(1.0 * AI_SLIDER_STEPS_PER_DECADE))  # 10 FLOP/byte
        self.slider.setMinimumHeight(40)
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.readout = _big(QLabel(""))
        self.readout.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(_big(QLabel("arithmetic intensity")))
        row.addWidget(self.slider, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.canvas, 1)
        layout.addLayout(row)
        layout.addWidget(self.readout)
        self.roof: Roof | None = None
        self.refresh()

    def refresh(self) -> None:
        device, precision = self.context.device, self.context.precision
        if precision not in device.dense_flops_per_s or not device.memory_bandwidth_bytes_per_s:
            self.roof = None
            self.canvas.set_roofs([])
            self.readout.setText(f"{device.id} has no known {precision} roof: pick another device "
                                 "or precision in the toolbar.")
            return
        self.roof = roof_for(device, precision)
        self.canvas.set_roofs([self.roof])
        self.canvas.plot_item.setTitle(None)  # the page's title says it
        self._on_slider_moved(self.slider.value())

    def ai_flops_per_byte(self) -> float:
        return 10 ** (self.slider.value() / AI_SLIDER_STEPS_PER_DECADE)

    def point_position(self) -> tuple[float, float] | None:
        """(AI, attainable FLOP/s) of the moving point, as drawn."""
        positions = self.canvas.series_positions("kernel")
        return positions[0] if positions else None

    def _on_slider_moved(self, _value: int) -> None:
        if self.roof is None:
            return
        ai = self.ai_flops_per_byte()
        peak, bandwidth = self.roof.peak_flops_per_s, self.roof.bandwidth_bytes_per_s
        attainable = roofline.attainable_flops_per_s(peak, bandwidth, ai)
        bound = roofline.bound(peak, bandwidth, ai)
        colour = "#2166ac" if bound == "memory" else "#b2182b"
        self.canvas.set_series("kernel", [ai], [attainable], [colour], tips=["the point"], size=26)
        ridge = self.roof.ridge
        if bound == "memory":
            why = (f"below the ridge ({format_number(ridge)} FLOP/byte) memory feeds it too slowly: "
                   f"{format_si(bandwidth, 'B/s')} × {format_number(ai)} FLOP/byte")
        else:
            why = f"past the ridge ({format_number(ridge)} FLOP/byte) the arithmetic units are the limit"
        self.readout.setText(f"<b>{format_number(ai)} FLOP/byte → at most {format_si(attainable, 'FLOP/s')}</b> "
                             f"on {self.roof.label}: <b style='color:{colour}'>{bound}-bound</b>; {why}.")


# page 2 ------------------------------------------------------------------------------------------
class BigGapBar(QWidget):
    """The MFU tab's gap bar (same colours) drawn for a projector: tall, large labels inside the
    slices, the cause names in a legend under it, 0–100 % of peak marked below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slices: list[GapSlice] = []
        self.setMinimumHeight(150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_slices(self, slices: list[GapSlice]) -> None:
        self.slices = slices
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802, ANN001 - Qt override
        painter = QPainter(self)
        metrics = painter.fontMetrics()
        tick_h = metrics.height() + 6
        bar = QRectF(4, 4, self.width() - 8, self.height() - 8 - tick_h)
        x = bar.left()
        for piece in self.slices:
            width = piece.fraction * bar.width()
            rect = QRectF(x, bar.top(), width, bar.height())
            painter.fillRect(rect, QColor(SLICE_COLOURS.get(piece.key, "#999999")))
            if piece.key in HATCHED:
                painter.fillRect(rect, QBrush(QColor(0, 0, 0, 60), Qt.BrushStyle.BDiagPattern))
            label = f"{piece.fraction:.0%}"
            if metrics.horizontalAdvance(label) + 6 <= width:
                painter.setPen(QColor("#222222") if piece.key in HATCHED else QColor("#ffffff"))
                painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
            x += width
        painter.setPen(QPen(QColor("#555555"), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(bar)
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
            tx = bar.left() + fraction * bar.width()
            align = (Qt.AlignmentFlag.AlignLeft if fraction == 0 else
                     Qt.AlignmentFlag.AlignRight if fraction == 1 else Qt.AlignmentFlag.AlignHCenter)
            text = "100 % of peak" if fraction == 1 else f"{fraction:.0%}"
            width = metrics.horizontalAdvance(text) + 4
            left = tx if fraction == 0 else tx - width if fraction == 1 else tx - width / 2
            painter.drawText(QRectF(left, bar.bottom() + 4, width, tick_h), align, text)
        painter.end()


class GapPage(QWidget):
    """The MFU gap bar, one named cause at a time, then what is left unexplained."""

    title = "Where MFU goes: the gap, cause by cause"

    def __init__(self, example: GapExample = GAP_EXAMPLE, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        breakdown = gap_breakdown(example.mfu, example.mfu, example.causes())
        self.slices = breakdown.display_slices()   # MFU, each non-zero cause, unexplained
        self.shown = 1                              # MFU alone first
        self.bar = BigGapBar()
        _big(self.bar, FONT_PT)
        self.legend = _big(QLabel(""))
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.legend.setFixedHeight(LEGEND_LINES * self.legend.fontMetrics().lineSpacing() + 4)
        self.caption = _big(QLabel(""))
        self.caption.setWordWrap(True)
        self.caption.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.caption.setFixedHeight(LEGEND_LINES * self.caption.fontMetrics().lineSpacing() + 4)
        self.next_button = _big(QPushButton("Next cause ▸"))
        self.next_button.clicked.connect(self.reveal_next)
        self.reset_button = _big(QPushButton("Start again"))
        self.reset_button.clicked.connect(self.reset)
        buttons = QHBoxLayout()
        buttons.addWidget(self.next_button)
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)
        setup = _big(QLabel(f"Worked example: MFU {example.mfu:.0%}; {example.stages}-stage pipeline, "
                            f"{example.microbatches} micro-batches; memory-bound kernels "
                            f"{example.memory_bound:.0%} of the step."), FONT_PT - 4)
        setup.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.bar)
        layout.addWidget(self.legend)
        layout.addSpacing(30)
        layout.addWidget(self.caption)
        layout.addLayout(buttons)
        layout.addWidget(setup)
        layout.addStretch(2)
        self._show()

    @property
    def done(self) -> bool:
        return self.shown >= len(self.slices)

    def reveal_next(self) -> bool:
        """Add the next cause to the bar; False when all are shown."""
        if self.done:
            return False
        self.shown += 1
        self._show()
        return True

    def reset(self) -> None:
        self.shown = 1
        self._show()

    def _show(self) -> None:
        visible = self.slices[: self.shown]
        pending = 1.0 - sum(s.fraction for s in visible)
        slices = list(visible)
        if pending > 1e-9:
            slices.append(GapSlice("unexplained", "Not yet attributed", pending))
        self.bar.set_slices(slices)
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(
            f"<span style='color:{SLICE_COLOURS.get(s.key, '#999999')}'>■</span> {s.label} {s.fraction:.1%}"
            for s in slices))
        newest = visible[-1]
        if newest.key == "mfu":
            text = (f"<b>MFU {newest.fraction:.0%}</b>: useful model FLOPs over what the GPUs could "
                    f"do. The other {pending:.0%} is the gap.")
        elif newest.key == "unexplained":
            text = (f"<b>Unexplained {newest.fraction:.1%}</b>: what the named causes do not cover "
                    "(kernels below their roof, overheads). Fix the biggest slice first, measure again.")
        else:
            text = f"<b>{CAUSE_LABELS.get(newest.key, newest.label)}: {newest.fraction:.1%}</b> of peak"
        self.caption.setText(text)
        self.next_button.setEnabled(not self.done)


# page 3 ------------------------------------------------------------------------------------------
_CLASS_COLOURS = KERNEL_CLASS_COLORS   # the Trace tab's colours (views/trace/style.py)
_CPU_COLOUR = dict(CPU_BASES)["cpu_op"]
_IDLE_COLOUR = IDLE_HEX


class SignatureLanesView(QWidget):
    """One small trace: its lanes as bars over two steps, idle compute time in red behind them."""

    def __init__(self, lanes: SignatureLanes, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lanes = lanes
        self.setMinimumSize(200, 150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def paintEvent(self, event) -> None:  # noqa: N802, ANN001 - Qt override
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("#ffffff"))
        small = painter.font()
        small.setPointSize(11)
        painter.setFont(small)
        metrics = painter.fontMetrics()
        label_px = max(metrics.horizontalAdvance(label) for label, *_ in self.lanes.lanes) + 10
        axis_px = metrics.height() + 8
        area = QRectF(label_px, 6, max(10.0, self.width() - label_px - 8), self.height() - 12 - axis_px)
        rows = self.lanes.lanes
        row_h = min(LANE_ROW_PX, area.height() / max(1, len(rows)))  # one lane height in every panel
        area.moveTop(area.top() + max(0.0, (area.height() - len(rows) * row_h) / 2))  # the block centred
        t0, t1 = view_span_us(self.lanes, area.width())
        scale = area.width() / max(t1 - t0, 1e-9)
        painter.setClipRect(QRectF(area.left(), 0, area.width() + 1, self.height()))
        for index, (label, starts, durations, classes) in enumerate(rows):
            top = area.top() + index * row_h
            painter.setPen(QColor("#333333"))
            painter.setClipping(False)
            painter.drawText(QRectF(0, top, label_px - 6, row_h), Qt.AlignmentFlag.AlignRight
                             | Qt.AlignmentFlag.AlignVCenter, label)
            painter.setClipping(True)
            if label == "GPU compute":  # idle behind the kernels: tiny kernels stay visible over it
                gap_starts, gap_durations = self.lanes.idle
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(_IDLE_COLOUR).lighter(140))
                for start, duration in zip(gap_starts, gap_durations):
                    painter.drawRect(QRectF(area.left() + (start - t0) * scale, top + row_h * 0.2,
                                            max(duration * scale, 1.0), row_h * 0.6))
            for start, duration, kernel_class in zip(starts, durations, classes):
                colour = _CPU_COLOUR if kernel_class == CPU_CLASS else _CLASS_COLOURS.get(
                    KERNEL_CLASSES[int(kernel_class)], "#6b7fa8")
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(colour))
                painter.drawRect(QRectF(area.left() + (start - t0) * scale, top + row_h * 0.2,
                                        max(duration * scale, 1.0), row_h * 0.6))
        painter.setClipping(False)
        axis_top = area.top() + len(rows) * row_h + 4
        self._draw_time_axis(painter, area.left(), axis_top, area.width(), t1 - t0)
        if (t0, t1) != self.lanes.span_us:
            painter.setPen(QColor("#555555"))
            painter.drawText(QRectF(area.left(), axis_top + metrics.height() + 6, area.width(), metrics.height()),
                             Qt.AlignmentFlag.AlignLeft, f"first {ZOOM_KERNELS} kernels")
        painter.end()

    @staticmethod
    def _draw_time_axis(painter: QPainter, left: float, top: float, width: float, span_us: float) -> None:
        """A baseline with ticks at a 1-2-5 step in ms from the panel's start (labels that fit)."""
        painter.setPen(QPen(QColor("#555555"), 1))
        painter.drawLine(QPointF(left, top), QPointF(left + width, top))
        metrics = painter.fontMetrics()
        label_px = metrics.horizontalAdvance(format_duration_us(span_us)) + 14   # the widest label and air
        step_us = nice_step(span_us / max(1.0, min(4.0, width / label_px)))
        tick = 0.0
        while tick <= span_us + 1e-9:
            x = left + tick / max(span_us, 1e-9) * width
            painter.drawLine(QPointF(x, top), QPointF(x, top + 4))
            text = format_duration_us(tick) if tick else "0"
            text_w = metrics.horizontalAdvance(text)
            if x + text_w / 2 <= left + width + 4:
                painter.drawText(QRectF(x - text_w / 2 - 2, top + 4, text_w + 4, metrics.height()),
                                 Qt.AlignmentFlag.AlignHCenter, text)
            tick += step_us


def nice_step(rough: float) -> float:
    """The 1-2-5 step nearest above `rough` (> 0): 0.37 -> 0.5, 3.1 -> 5, 1200 -> 2000."""
    if not rough > 0:
        return 1.0
    decade = 10 ** math.floor(math.log10(rough))
    for multiple in (1, 2, 5, 10):
        if multiple * decade >= rough:
            return multiple * decade
    return 10 * decade


class SignaturesPage(QWidget):
    """The signatures side by side, each a small trace and the verdict core gave it."""

    title = f"{len(SIGNATURES_SHOWN)} trace signatures: read the lanes"
    HINTS = {name: REGISTRY[name].hint for name in SIGNATURES_SHOWN}

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panels: dict[str, SignatureLanes] = {}
        self._folder: tempfile.TemporaryDirectory | None = None  # made when the page is first shown
        self.task = TaskRunner(self)
        self.task.item_produced.connect(self._on_lanes_ready)
        self.task.run_failed.connect(self._on_failed)
        self.grid = QGridLayout()
        self.status = _big(QLabel(f"Writing and reading {len(SIGNATURES_SHOWN)} synthetic traces…"), FONT_PT - 4)
        legend = _big(QLabel(f"<span style='color:{_CPU_COLOUR}'>■</span> CPU op   "
                             f"<span style='color:{_CLASS_COLOURS['gemm']}'>■</span> GEMM   "
                             f"<span style='color:{_CLASS_COLOURS['elementwise']}'>■</span> elementwise   "
                             f"<span style='color:{_CLASS_COLOURS['communication']}'>■</span> communication   "
                             f"<span style='color:{_IDLE_COLOUR}'>■</span> GPU idle"), FONT_PT - 4)
        layout = QVBoxLayout(self)
        layout.addWidget(legend)
        layout.addLayout(self.grid, 1)
        layout.addWidget(self.status)

    def start(self) -> None:
        """Load the traces in the background (once)."""
        if not self.panels and not self.task.is_running():
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="gpuperf-presentation-")
            folder = Path(self._folder.name)
            self.task.start(lambda stop: iter_signature_lanes(folder, stop, SIGNATURES_SHOWN))

    def is_busy(self) -> bool:
        return self.task.is_running()

    def _on_lanes_ready(self, lanes: SignatureLanes) -> None:
        column = len(self.panels)
        self.panels[lanes.scenario] = lanes
        title = _big(QLabel(signature_label(lanes.scenario)), FONT_PT - 2, bold=True)
        verdict = signature_label(lanes.signature) + (" ✓" if lanes.signature == lanes.scenario else "")
        hint = _big(QLabel(f"{self.HINTS.get(lanes.scenario, '')}<br><i>gpuperf diagnoses: {verdict}</i>"), 13)
        hint.setWordWrap(True)
        hint.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.grid.addWidget(title, 0, column)
        self.grid.addWidget(SignatureLanesView(lanes), 1, column)
        self.grid.addWidget(hint, 2, column)
        self.grid.setRowStretch(1, 1)
        self.status.setText(f"{len(self.panels)} of {len(SIGNATURES_SHOWN)} synthetic traces, read by the "
                            "trace loader and diagnosed by gpuperf")

    def _on_failed(self, message: str) -> None:
        self.status.setText(f"Could not build the signature traces: {message}")

    def shutdown(self) -> None:
        """Stop loading and remove the synthetic traces (closing the window, the app)."""
        self.task.shutdown()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


# the window ---------------------------------------------------------------------------------------
class PresentationWindow(QWidget):
    """Full-window pages for teaching; opened from View ▸ Presentation."""

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("gpuperf — presentation")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.context = context
        self.roofline_page = RooflinePage(context)
        self.gap_page = GapPage()
        self.signatures_page = SignaturesPage()
        self.pages = QStackedWidget()
        for page in (self.roofline_page, self.gap_page, self.signatures_page):
            self.pages.addWidget(page)
        self.title_label = _big(QLabel(""), TITLE_PT, bold=True)
        self.back_button = _big(QPushButton("◀"))
        self.forward_button = _big(QPushButton("▶"))
        self.back_button.clicked.connect(self.previous_page)
        self.forward_button.clicked.connect(self.next_page)
        self.page_label = _big(QLabel(""), FONT_PT - 4)
        top = QHBoxLayout()
        top.addWidget(self.title_label, 1)
        top.addWidget(self.page_label)
        top.addWidget(self.back_button)
        top.addWidget(self.forward_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.pages, 1)
        context.device_changed.connect(lambda _id: self.roofline_page.refresh())
        context.precision_changed.connect(lambda _p: self.roofline_page.refresh())
        self.show_page(0)

    def show_page(self, index: int) -> None:
        index = max(0, min(index, self.pages.count() - 1))
        self.pages.setCurrentIndex(index)
        page = self.pages.currentWidget()
        self.title_label.setText(page.title)
        self.page_label.setText(f"{index + 1} / {self.pages.count()}")
        self.back_button.setEnabled(index > 0)
        self.forward_button.setEnabled(index < self.pages.count() - 1)
        if page is self.signatures_page:
            self.signatures_page.start()

    def next_page(self) -> None:
        self.show_page(self.pages.currentIndex() + 1)

    def previous_page(self) -> None:
        self.show_page(self.pages.currentIndex() - 1)

    def _page_keys(self) -> dict:
        return {Qt.Key.Key_Right: self.forward, Qt.Key.Key_PageDown: self.forward, Qt.Key.Key_Space: self.forward,
                Qt.Key.Key_Left: self.previous_page, Qt.Key.Key_PageUp: self.previous_page,
                Qt.Key.Key_Escape: self.close}

    def showEvent(self, event) -> None:  # noqa: N802, ANN001 - Qt override
        # An application filter sees a key before the focused widget does: a slider or a button with
        # the focus never takes the page keys (presenter clickers send PageDown/PageUp).
        QApplication.instance().installEventFilter(self)
        super().showEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802, ANN001 - Qt override
        QApplication.instance().removeEventFilter(self)
        super().hideEvent(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802, ANN001 - Qt override
        if (event.type() == QEvent.Type.KeyPress and isinstance(watched, QWidget) and watched.window() is self
                and event.modifiers() == Qt.KeyboardModifier.NoModifier):
            slot = self._page_keys().get(event.key())
            if slot is not None:
                slot()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        """The same keys sent to the window itself while it is not shown (tests, --screenshot)."""
        slot = self._page_keys().get(event.key())
        if slot is None:
            super().keyPressEvent(event)
        else:
            slot()

    def forward(self) -> None:
        """Next cause on the gap page while some are hidden, else the next page."""
        if not (self.pages.currentWidget() is self.gap_page and self.gap_page.reveal_next()):
            self.next_page()

    def is_busy(self) -> bool:
        return self.signatures_page.is_busy()

    def shutdown(self) -> None:
        self.signatures_page.shutdown()

    def closeEvent(self, event) -> None:  # noqa: N802, ANN001 - Qt override
        self.shutdown()  # shown again later, the signatures page loads what it lacks
        super().closeEvent(event)


# screenshots ---------------------------------------------------------------------------------------
def save_screenshots(folder: Path, device_id: str = "h100-sxm", precision: str = "bf16") -> list[Path]:
    """Each page as PNG (1600×1000): the roofline with the point at 10 and at 1000 FLOP/byte, the gap
    bar half and fully filled, the signatures once loaded."""
    from PySide6.QtCore import QCoreApplication, QElapsedTimer

    from gpuperf_gui.core.hardware import load_database

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = PresentationWindow(AppContext(load_database(), device_id=device_id, precision=precision))
    window.resize(*WINDOW_SIZE)
    window.show()
    folder.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []

    def grab(name: str) -> None:
        for _ in range(5):
            app.processEvents()
        path = folder / f"presentation_{name}.png"
        image = window.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
        if not image.save(str(path)):
            raise OSError(f"could not write {path}")
        saved.append(path)

    window.roofline_page.slider.setValue(int(math.log10(20) * AI_SLIDER_STEPS_PER_DECADE))
    grab("roofline")
    window.show_page(1)
    while window.gap_page.shown < 4:
        window.gap_page.reveal_next()
    grab("gap_bar")
    window.show_page(2)
    timer = QElapsedTimer()
    timer.start()
    while (window.is_busy() or not window.signatures_page.panels) and timer.elapsed() < 60_000:
        app.processEvents()
        QCoreApplication.sendPostedEvents()
    grab("signatures")
    window.shutdown()
    window.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuperf_gui.views.presentation")
    parser.add_argument("--screenshot", type=Path, required=True, metavar="DIR",
                        help="save each page as presentation_<page>.png in DIR")
    parser.add_argument("--device", default="h100-sxm")
    parser.add_argument("--precision", default="bf16")
    args = parser.parse_args(argv)
    for path in save_screenshots(args.screenshot, args.device, args.precision):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
