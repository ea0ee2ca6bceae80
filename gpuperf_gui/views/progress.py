"""A progress bar that shows a task's own text, and stays still while it waits.

Qt's Fusion style keeps a busy bar's animation running after the bar gets a range while its value
sits at the minimum (the style stops it only when it draws some progress): the Trace tab repainted
~57 times a second through a whole load, 10 % of a core taken from the loading helper (and from a
profiled script). :func:`show_progress` never leaves a started bar at its minimum: it counts in
thousandths of a step and shows one thousandth at the start (no visible fill).
"""
from __future__ import annotations

from PySide6.QtWidgets import QProgressBar

_STEP = 1000   # bar units per step of the task


def show_progress(bar: QProgressBar, done: int, total: int, text: str) -> None:
    """``done`` of ``total`` steps on ``bar`` with ``text`` (total 0: busy)."""
    if total <= 0:
        bar.setRange(0, 0)
    else:
        bar.setRange(0, total * _STEP)
        bar.setValue(max(done * _STEP, 1))
    bar.setFormat(text)
