"""Pieces shared by the plots: readable log axes and the growing point buffer."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from gpuperf_gui.core.units import format_bytes, format_si

_LABELLED_MANTISSAS = (1, 2, 5)
_LOG2 = math.log10(2)


class LogSIAxis(pg.AxisItem):
    """A log10 axis whose tick labels read as SI quantities ("100 TFLOP/s"); between decades only
    1-2-5 values are labelled, so the minor ticks do not crowd into each other. Bytes (unit "B")
    are ticked at powers of two and read "64 KiB", "16 MiB", "1 GiB", as `gpuperf bench` prints."""

    def __init__(self, orientation: str, unit: str = "") -> None:
        super().__init__(orientation)
        self._unit = unit
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        if not (self.logMode and self._unit == "B"):
            return super().tickValues(minVal, maxVal, size)
        # bytes: ticks at powers of two (1 KiB, 4 KiB, …) read as the CLI prints sizes (KiB/MiB/GiB)
        low, high = sorted((minVal, maxVal))
        first, last = math.ceil(low / _LOG2), math.floor(high / _LOG2)
        step = 2 if last - first <= 12 else 4 if last - first <= 24 else 10
        major = [e * _LOG2 for e in range(first, last + 1) if e % step == 0]
        minor = [e * _LOG2 for e in range(first, last + 1) if e % step]
        return [(step * _LOG2, major), (_LOG2, minor)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        if self._unit == "B":
            return [format_bytes(2 ** round(value / _LOG2)) if spacing > _LOG2 * 1.01 else ""
                    for value in values]
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


def make_static_plot(plot: pg.PlotWidget, left_label: str) -> None:
    """A read-only chart: white, no context menu, no auto-range button, no mouse pan or zoom."""
    plot.setBackground("w")
    plot.setMenuEnabled(False)
    plot.getPlotItem().hideButtons()
    plot.setMouseEnabled(x=False, y=False)
    plot.setLabel("left", left_label)
