"""How much longer the profiler made a step: measured, with its spread, never negative.

A trace written by ``gpuperf profile`` carries the wall times of steps run with the profiler idle
(``step_times_s``) and of its recorded steps timed the same way (``profiled_step_times_s``), under
its top-level key ``gpuperf_unprofiled`` (:mod:`gpuperf_gui.core.profile_script`). From them:

* overhead = median(recorded) / median(idle) − 1 (+25 %: the profiler made the step 25 % longer);
* its spread: min(recorded) / max(idle) − 1 (at least 0) to max(recorded) / min(idle) − 1, i.e.
  what the two sets of steps allow (min–max of both);
* "not measurable" when the recorded median lies within the idle steps' own range (min..max): the
  difference is within the noise of the steps themselves. A recorded median below every idle step
  is not a negative overhead either (the profiler adds work, it cannot remove it): the two sets of
  steps ran under different conditions, and that is said instead.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from gpuperf_gui.core.units import format_duration_s


@dataclass(frozen=True)
class ProfilerOverhead:
    """The two sets of step wall times (seconds) and what they say about the profiler's cost."""

    unprofiled_s: tuple[float, ...]
    profiled_s: tuple[float, ...]

    @property
    def unprofiled_median_s(self) -> float:
        return statistics.median(self.unprofiled_s)

    @property
    def profiled_median_s(self) -> float:
        return statistics.median(self.profiled_s)

    @property
    def ratio(self) -> float:
        """Recorded over idle median (1.25: 25 % longer); may be below 1 (see :attr:`measurable`)."""
        return self.profiled_median_s / self.unprofiled_median_s

    @property
    def low(self) -> float:
        """The smallest overhead both sets allow: min(recorded) / max(idle) − 1, and never below 0
        (the profiler adds work; a recorded step shorter than an idle one is noise)."""
        return max(0.0, min(self.profiled_s) / max(self.unprofiled_s) - 1.0)

    @property
    def high(self) -> float:
        """The largest: max(recorded) / min(idle) − 1."""
        return max(self.profiled_s) / min(self.unprofiled_s) - 1.0

    @property
    def measurable(self) -> bool:
        """The recorded median is above every idle step (outside their noise)."""
        return self.profiled_median_s > max(self.unprofiled_s)

    @property
    def shorter(self) -> bool:
        """The recorded median is below every idle step: different conditions, not a gain."""
        return self.profiled_median_s < min(self.unprofiled_s)

    @property
    def fraction(self) -> float | None:
        """The overhead (0.25 = +25 %) where measurable, else None (never negative)."""
        return self.ratio - 1.0 if self.measurable else None

    def describe(self) -> str:
        """One line: the overhead and its spread, or why there is none."""
        sets = (f"{len(self.profiled_s)} profiled steps {format_duration_s(min(self.profiled_s))}–{format_duration_s(max(self.profiled_s))} "
                f"against {len(self.unprofiled_s)} unprofiled {format_duration_s(min(self.unprofiled_s))}–"
                f"{format_duration_s(max(self.unprofiled_s))}")
        if self.measurable:
            return (f"profiler overhead {_signed(self.ratio - 1)} (spread {_signed(self.low)} to "
                    f"{_signed(self.high)}: {sets})")
        if self.shorter:
            return (f"profiler overhead not measurable: the profiled steps were shorter than the unprofiled "
                    f"ones ({sets}), so the two ran under different conditions")
        return f"profiler overhead not measurable: within the noise of the steps ({sets})"

    def to_json(self) -> dict:
        return {"fraction": self.fraction, "measurable": self.measurable, "low": self.low, "high": self.high,
                "ratio_of_medians": self.ratio, "unprofiled_median_s": self.unprofiled_median_s,
                "profiled_median_s": self.profiled_median_s, "unprofiled_steps": len(self.unprofiled_s),
                "profiled_steps": len(self.profiled_s), "text": self.describe()}


def _signed(fraction: float) -> str:
    return f"{100 * fraction:+.0f} %"


def _positive(values: object) -> tuple[float, ...]:
    if not isinstance(values, list):
        return ()
    return tuple(float(v) for v in values
                 if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0)


def from_key(meta: object) -> ProfilerOverhead | None:
    """From a trace's ``gpuperf_unprofiled`` object (None unless both lists hold positive times)."""
    if not isinstance(meta, dict):
        return None
    idle, rec = _positive(meta.get("step_times_s")), _positive(meta.get("profiled_step_times_s"))
    return ProfilerOverhead(idle, rec) if idle and rec else None


def overhead_of(rank_trace) -> ProfilerOverhead | None:  # noqa: ANN001 (model.RankTrace)
    return from_key(getattr(rank_trace, "gpuperf_unprofiled", None))


def merge(parts: Sequence[ProfilerOverhead | None]) -> ProfilerOverhead | None:
    """The steps of every rank together (None when no rank has both)."""
    got = [p for p in parts if p is not None]
    if not got:
        return None
    return ProfilerOverhead(tuple(t for p in got for t in p.unprofiled_s), tuple(t for p in got for t in p.profiled_s))
