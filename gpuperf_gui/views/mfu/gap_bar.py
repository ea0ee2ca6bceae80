"""The stacked bar of the MFU tab: 0 to 100 % of peak split into MFU, named causes and unexplained
(or, when there is no plausible MFU, the causes as shares of the step time)."""
from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuperf_gui.core.mfu_gap import REST_OF_STEP, GapSlice
from gpuperf_gui.views.trace.style import SIGNATURE_COLOURS

SLICE_COLOURS = {
    "mfu": "#2e9d4e",
    "pipeline_bubble": "#8e6cc4",
    "exposed_comm": "#e07b39",
    "data_stall": "#d8b033",
    "host_sync": SIGNATURE_COLOURS["host_sync_bound"],   # one colour of host syncs: lanes, heatmap, this bar
    "memory_bound": "#3a86c8",
    "launch_gaps": "#c8513a",
    "recompute": "#8fb8de",
    "gemm_inefficiency": "#4fb0a3",
    "unexplained": "#bdbdbd",
    REST_OF_STEP: "#d4d4d4",
}
HATCHED = ("unexplained", REST_OF_STEP)


class GapBar(QWidget):
    """One stacked bar from 0 to 100 % of peak: MFU, named causes, unexplained; ceiling and target marks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slices: list[GapSlice] = []
        self.marks: list[tuple[float, str]] = []
        self.flag: str | None = None  # said above the bar (in red) instead of the marks
        self.setMinimumHeight(78)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_slices(self, slices: list[GapSlice], marks: list[tuple[float, str]],
                   flag: str | None = None) -> None:
        """``flag``: a warning drawn above the bar (e.g. the bar shows step-time shares, not peak)."""
        self.slices, self.marks, self.flag = slices, marks, flag
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bar = QRectF(4, 18, self.width() - 8, 40)
        text_colour = self.palette().color(QPalette.ColorRole.WindowText)
        painter.setPen(QPen(text_colour.lighter(150), 1))
        painter.drawRect(bar)
        pieces = self._slice_rects(bar)
        for piece, rect in pieces:
            painter.fillRect(rect, QColor(SLICE_COLOURS.get(piece.key, "#999999")))
            if piece.key in HATCHED:
                painter.setBrush(QBrush(QColor(0, 0, 0, 70), Qt.BrushStyle.BDiagPattern))
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawRect(rect)
                painter.setBrush(Qt.BrushStyle.NoBrush)
        label_font = painter.font()
        small = painter.font()
        small.setPointSizeF(small.pointSizeF() * 0.85)
        if self.flag:
            painter.setPen(QColor("#c62828"))
            painter.setFont(small)
            painter.drawText(QRectF(bar.left(), 0, bar.width(), 16),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.flag)
        for fraction, text in self.marks:
            mx = bar.left() + min(max(fraction, 0.0), 1.0) * bar.width()
            painter.setPen(QPen(text_colour, 1.5, Qt.PenStyle.DashLine))
            painter.drawLine(int(mx), int(bar.top() - 4), int(mx), int(bar.bottom() + 4))
            painter.setPen(text_colour)
            painter.setFont(small)
            painter.drawText(QRectF(mx - 80, 0, 160, 16), Qt.AlignmentFlag.AlignCenter, text)
        painter.setFont(label_font)
        for piece, rect in pieces:
            width = rect.width()
            metrics = painter.fontMetrics()
            label = f"{_short(piece.label)} {piece.fraction:.1%}"
            if metrics.horizontalAdvance(label) + 8 > width:
                label = f"{piece.fraction:.0%}"
            if metrics.horizontalAdvance(label) + 4 <= width:
                text_rect = QRectF(metrics.boundingRect(label)).adjusted(-4, -1, 4, 1)
                text_rect.moveCenter(rect.center())
                if piece.key in HATCHED:
                    painter.fillRect(text_rect, QColor(SLICE_COLOURS[piece.key]))
                painter.setPen(QColor("#ffffff") if piece.key not in HATCHED else QColor("#222222"))
                painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
        painter.setFont(label_font)
        painter.setPen(text_colour)
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
            tx = bar.left() + fraction * bar.width()
            align = Qt.AlignmentFlag.AlignLeft if fraction == 0 else (
                Qt.AlignmentFlag.AlignRight if fraction == 1 else Qt.AlignmentFlag.AlignHCenter)
            painter.drawText(QRectF(tx - (0 if fraction == 0 else 60 if fraction == 1 else 30),
                                    bar.bottom() + 3, 60, 16), align, f"{fraction:.0%}")
        painter.end()

    def _slice_rects(self, bar: QRectF) -> list[tuple[GapSlice, QRectF]]:
        """Each slice wider than nothing with its rectangle in ``bar``, left to right."""
        out, x = [], bar.left()
        for piece in self.slices:
            width = piece.fraction * bar.width()
            if width <= 0:
                continue
            out.append((piece, QRectF(x, bar.top(), width, bar.height())))
            x += width
        return out


def _short(label: str) -> str:
    return label.split(" (")[0]




__all__ = ["HATCHED", "SLICE_COLOURS", "GapBar"]
