"""Pieces shared by the plots: readable log axes and the growing point buffer."""

from __future__ import annotations

import math

import numpy as np
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


class XYBuffer:
    """(x, y) in a preallocated numpy buffer that doubles when full (STYLE.md R7): streamed points
    are appended here and drawn with one ``setData(x[:count], y[:count])``."""

    def __init__(self, capacity: int = 64) -> None:
        self.x = np.empty(capacity)
        self.y = np.empty(capacity)
        self.count = 0

    def append(self, x: float, y: float) -> None:
        if self.count == len(self.x):
            self.x = np.concatenate([self.x, np.empty(len(self.x))])
            self.y = np.concatenate([self.y, np.empty(len(self.y))])
        self.x[self.count], self.y[self.count] = x, y
        self.count += 1

    def clear(self) -> None:
        self.count = 0
