"""The MFU tab's small widgets: a number field that marks itself, a KPI card, a percentage spin box."""
from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox, QFrame, QLabel, QLineEdit, QVBoxLayout

INVALID_STYLE = "QLineEdit { border: 2px solid #d73027; background: #fdecea; }"
NEEDED_STYLE = "QLineEdit { border: 2px solid #e0a000; background: #fff8e1; }"
FROM_TRACE_STYLE = "background: #e3f2fd;"  # every figure that came from a trace


class NumberField(QLineEdit):
    """A line edit for a number (``124M``, ``6e9``); marks itself red with the reason as tooltip."""

    def __init__(self, text: str = "", placeholder: str = "", tooltip: str = "") -> None:
        super().__init__(text)
        self.setPlaceholderText(placeholder)
        self._tooltip = self._plain_tooltip = tooltip
        self._base_style = ""
        self.setToolTip(tooltip)
        self.error: str | None = None
        self.setProperty("from_trace", False)

    def mark(self, error: str | None, *, needed: bool = False) -> None:
        """Red with the reason as tooltip; ``needed``: amber, an input still to give (not a mistake)."""
        self.error = error
        self.setProperty("invalid", bool(error))
        self.setProperty("needed", bool(error) and needed)
        self.setStyleSheet((NEEDED_STYLE if needed else INVALID_STYLE) if error else self._base_style)
        self.setToolTip(error or self._tooltip)

    def set_origin(self, tooltip: str | None) -> None:
        """Mark the field as filled from a trace (tinted, tooltip naming the trace), or clear it."""
        self._base_style = f"QLineEdit {{ {FROM_TRACE_STYLE} }}" if tooltip else ""
        self._tooltip = tooltip or self._plain_tooltip
        self.setProperty("from_trace", bool(tooltip))
        if not self.error:
            self.setStyleSheet(self._base_style)
            self.setToolTip(self._tooltip)


def kpi_card(title: str) -> tuple[QFrame, QLabel, QLabel]:
    frame = QFrame()
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(10, 6, 10, 6)
    caption = QLabel(title)
    value = QLabel("—")
    font = value.font()
    font.setPointSizeF(font.pointSizeF() * 1.9)
    font.setBold(True)
    value.setFont(font)
    detail = QLabel("")
    detail.setStyleSheet("color: palette(mid);")
    detail.setWordWrap(True)
    for widget in (caption, value, detail):
        layout.addWidget(widget)
    return frame, value, detail


def percent_spin(value: float, maximum: float = 100.0, decimals: int = 1, suffix: str = " %") -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(0.0, maximum)
    spin.setDecimals(decimals)
    spin.setValue(value)
    spin.setSuffix(suffix)
    spin.setKeyboardTracking(True)
    return spin
