"""Axis items shared by the plots."""

from __future__ import annotations

import math

import pyqtgraph as pg

from gpuperf_gui.core.units import format_si

_LABELLED_MANTISSAS = (1, 2, 5)


class LogSIAxis(pg.AxisItem):
    """A log10 axis whose tick labels read as SI quantities ("100 TFLOP/s", "2 GB"); between
    decades only 1-2-5 values are labelled, so the minor ticks do not crowd into each other."""

    def __init__(self, orientation: str, unit: str = "") -> None:
        super().__init__(orientation)
        self._unit = unit
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        return [self._label(10 ** value) for value in values]

    def _label(self, number: float) -> str:
        mantissa = number / 10 ** math.floor(math.log10(number) + 1e-9)
        if not any(abs(mantissa - m) < 0.02 * m for m in _LABELLED_MANTISSAS):
            return ""
        return format_si(number, self._unit, 3) if self._unit else f"{number:g}"


def log_si_axes(x_unit: str = "", y_unit: str = "") -> dict[str, LogSIAxis]:
    """``axisItems`` for a log-log PlotItem/PlotWidget."""
    return {"bottom": LogSIAxis("bottom", x_unit), "left": LogSIAxis("left", y_unit)}
