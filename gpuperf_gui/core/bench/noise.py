"""Points measured on a busy machine: marked unreliable, kept out of the ceilings, and said why.

A point's spread is its interquartile range over its median (:attr:`MeasuredPoint.iqr_fraction`);
the threshold is :data:`.points.UNRELIABLE_IQR_FRACTION`.
On an idle H200 (benchmarks/results/h200_full_run.jsonl, h200_quick_final.jsonl: 134 points) the
widest is 0.35 (a 6 µs fp8 matmul, near the timer's resolution), the median 0.006. Above
:data:`UNRELIABLE_IQR_FRACTION` (0.5, i.e. "±25 %") the calls of one point did not run alike: other
work shared the CPU or the GPU, or the clocks moved. Such a point is still shown (marked), but it
is never a ceiling: an fp32 ceiling of 83.2 GFLOP/s from a point of ±508 % is what this prevents.

:func:`busy_report` says what the machine was doing: the load average against the cores, other
processes on the GPU (NVML), and SM clocks below the device's base (default application) clock
where NVML gives them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

from gpuperf_gui.core.bench.points import UNRELIABLE_IQR_FRACTION, MeasuredPoint
BUSY_LOAD_PER_CORE = 1.0
"""1-minute load average per core above which the CPU was shared."""


def is_reliable(point: MeasuredPoint) -> bool:
    """Its calls ran alike: IQR / median within :data:`UNRELIABLE_IQR_FRACTION` (unknown: reliable)."""
    return point.reliable


def reliable(points: Iterable[MeasuredPoint]) -> list[MeasuredPoint]:
    return [p for p in points if is_reliable(p)]


@dataclass(frozen=True)
class BusyReport:
    """What shared the machine while the points were measured (None: not known)."""

    load_average_1m: float | None = None
    cpu_count: int | None = None
    other_gpu_processes: int | None = None
    clock_below_base: list[str] = field(default_factory=list)
    """Points timed with the SM clock below the base clock ("matmul fp32 4096³: 1200 < 1590 MHz")."""

    @property
    def cpu_busy(self) -> bool:
        return bool(self.load_average_1m is not None and self.cpu_count
                    and self.load_average_1m > BUSY_LOAD_PER_CORE * self.cpu_count)

    def reasons(self) -> list[str]:
        out = []
        if self.load_average_1m is not None and self.cpu_count:
            state = "busy" if self.cpu_busy else "not saturated"
            out.append(f"load average {self.load_average_1m:.1f} on {self.cpu_count} cores ({state})")
        if self.other_gpu_processes:
            out.append(f"{self.other_gpu_processes} other process{'es' if self.other_gpu_processes > 1 else ''} "
                       "on the GPU")
        if self.clock_below_base:
            out.append("SM clock below base: " + "; ".join(self.clock_below_base[:3])
                       + (f" (+{len(self.clock_below_base) - 3} more)" if len(self.clock_below_base) > 3 else ""))
        return out


def busy_report(points: Iterable[MeasuredPoint], *, base_sm_clock_hz: float | None = None,
                other_gpu_processes: int | None = None) -> BusyReport:
    """The load average now (``os.getloadavg``), the other GPU processes (counted by the caller from
    NVML) and the points timed below ``base_sm_clock_hz``."""
    try:
        load: float | None = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        load = None
    slow = []
    if base_sm_clock_hz:
        for p in points:
            if p.sm_clock_hz and p.sm_clock_hz < 0.98 * base_sm_clock_hz:
                slow.append(f"{p.label}: {p.sm_clock_hz / 1e6:.0f} < {base_sm_clock_hz / 1e6:.0f} MHz")
    return BusyReport(load, os.cpu_count(), other_gpu_processes, slow)


def unreliable_message(points: list[MeasuredPoint], report: BusyReport) -> str:
    """The warning a run gives when some of its points are unreliable ("" when none is)."""
    bad = [p for p in points if not is_reliable(p)]
    if not bad:
        return ""
    shown = ", ".join(f"{p.label} (±{p.iqr_fraction / 2:.0%})" for p in bad[:4])
    more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
    why = report.reasons()
    return (f"the machine was busy: {len(bad)} of {len(points)} points have a spread wider than "
            f"±{UNRELIABLE_IQR_FRACTION / 2:.0%} ({shown}{more}); they are marked unreliable and not used "
            "as ceilings" + (f"; {'; '.join(why)}" if why else "")
            + ". Measure again on an idle machine.")
