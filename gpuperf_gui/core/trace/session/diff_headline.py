"""The one line `gpuperf diff` and the Compare page lead with: what can honestly be said.

Three cases, in this order:

1. **Different workloads** (FLOPs per step from the recorded shapes differ by more than
   :data:`SAME_WORK_REL`, or the tokens per step given differ): step time compares nothing, so the
   headline is throughput, after / before: tokens/s where both tokens per step are given, else
   FLOP/s. The work per step is said.
2. **Both sides timed without the profiler** (``gpuperf profile`` traces): the unprofiled step time,
   before / after.
3. **Profiled steps only**: "profiled step time", before / after, with how far the profiler alone
   can move that ratio: each side's profiled step is its unprofiled one stretched by a factor in
   :data:`PROFILER_STRETCH` (by how GPU-bound the side is), so the unprofiled ratio lies within
   ``profiled × [lo_after / hi_before, hi_after / lo_before]``. When that range holds 1, the
   direction is not established and the line says so.

A ratio within :data:`SAME_RATIO` of 1 is "no change"; anything else has a direction and a size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gpuperf_gui.core.units import format_ms, format_si

# diff.py imports this module, so its types are not imported here (no circle): a ``Side`` and a
# ``TraceDiff`` of :mod:`.diff` are what the functions below take.
Side = Any
TraceDiff = Any

SAME_WORK_REL = 0.02
"""FLOPs per step (or tokens) differing by more than this fraction: different workloads."""
SAME_RATIO = 0.005
GPU_BOUND_BUSY_MIN = 0.9
"""At or above this GPU busy fraction a side is GPU-bound: the profiler barely stretches it."""
PROFILER_STRETCH = {"gpu_bound": (0.993, 1.110), "host_bound": (0.828, 2.370)}
"""Trace step (median steady ProfilerStep) / unprofiled step of the same script (low, high), on the
single-rank scenarios of tests/data/h200 (H200, torch 2.11; checked on the held-out pairs of
tests/data/h200/unprofiled). High: the largest stretch measured in the class. Low: the profiler adds
work, so a recorded step is shorter only by run-to-run noise: 1 / (1 + the class's median spread of
the unprofiled steps, (max - min) / median). tests/core/test_diff_headline.py recomputes both."""
BOUND_WORDS = {"gpu_bound": "GPU-bound", "host_bound": "host-bound"}


@dataclass(frozen=True)
class Headline:
    """What the comparison leads with. ``ratio`` > 1 means after is better (faster, or more
    throughput); ``ratio_range`` is what the profiler alone allows (profiled step times only)."""

    quantity: str
    unit: str
    before: float | None
    after: float | None
    ratio: float | None
    ratio_range: tuple[float, float] | None
    same_workload: bool | None
    workload_differences: list[str] = field(default_factory=list)
    text: str = ""

    @property
    def conclusive(self) -> bool:
        """The direction holds over the whole range the profiler allows."""
        if self.ratio is None:
            return False
        if self.ratio_range is None:
            return True
        lo, hi = self.ratio_range
        return lo > 1 + SAME_RATIO or hi < 1 - SAME_RATIO

    def to_json(self) -> dict:
        return {"quantity": self.quantity, "unit": self.unit, "before": self.before, "after": self.after,
                "ratio": self.ratio, "ratio_range": list(self.ratio_range) if self.ratio_range else None,
                "conclusive": self.conclusive, "same_workload": self.same_workload,
                "workload_differences": list(self.workload_differences), "text": self.text}


def _bound(side: Side) -> str:
    """The side's key of :data:`PROFILER_STRETCH`."""
    return "gpu_bound" if side.gpu_busy_fraction >= GPU_BOUND_BUSY_MIN else "host_bound"


def profiled_ratio_range(b: Side, a: Side, ratio: float) -> tuple[float, float]:
    """before/after ratio of unprofiled steps allowed by a profiled ratio (see the module docstring)."""
    (lo_b, hi_b), (lo_a, hi_a) = PROFILER_STRETCH[_bound(b)], PROFILER_STRETCH[_bound(a)]
    return ratio * lo_a / hi_b, ratio * hi_a / lo_b


def workload_differences(d: TraceDiff) -> tuple[bool | None, list[str]]:
    """(same workload?, what differs). None: cannot tell (no FLOPs recorded, no tokens given)."""
    b, a = d.before, d.after
    out, known = [], False
    fb, fa = b.flops_per_step, a.flops_per_step
    if fb and fa:
        known = True
        if abs(fa / fb - 1) > SAME_WORK_REL:
            out.append(f"FLOPs per step {format_si(fb, 'FLOP')} -> {format_si(fa, 'FLOP')} (GEMM and attention ops, "
                       "from the recorded shapes)")
    tb, ta = d.tokens_per_step
    if tb and ta:
        known = True
        if abs(ta / tb - 1) > SAME_WORK_REL:
            out.append(f"tokens per step {tb:,.0f} -> {ta:,.0f}")
    if out:
        return False, out
    return (True if known else None), out


def headline(d: TraceDiff) -> Headline:
    """The headline of ``d`` (see the module docstring)."""
    same, differences = workload_differences(d)
    if same is False:
        return _throughput(d, differences)
    b, a = d.before, d.after
    note = "" if same else ("; whether both run the same work is not known (no FLOPs recorded: "
                            "record_shapes off, or give the tokens per step)")
    if d.speedup_unprofiled is not None:
        r = d.speedup_unprofiled
        text = (f"step time without the profiler {_ms(b.unprofiled_step_time_s)} -> "
                f"{_ms(a.unprofiled_step_time_s)}: {_change(r)} (unprofiled steps measured by gpuperf profile){note}")
        return Headline("step time without the profiler", "s", b.unprofiled_step_time_s,
                        a.unprofiled_step_time_s, r, None, same, differences, text)
    r = d.speedup_profiled
    profiled = partial(Headline, "profiled step time", "s", b.step_time_s, a.step_time_s)
    if r is None:
        return profiled(None, None, same, differences, "no step time on one side: nothing to compare" + note)
    if b.label == a.label:  # one trace against itself: the profiler stretched both alike
        return profiled(r, None, same, differences, f"profiled step time {_ms(b.step_time_s)} -> "
                        f"{_ms(a.step_time_s)}: {_change(r)} (the same trace on both sides)")
    lo, hi = profiled_ratio_range(b, a, r)
    if lo > 1 + SAME_RATIO:
        verdict = f"faster in any case (at least {_x(lo)})"
    elif hi < 1 - SAME_RATIO:
        verdict = f"slower in any case (at least {_x(1 / hi)} slower)"
    else:
        verdict = "not conclusive: the direction may be the other way"
    text = (f"profiled step time {_ms(b.step_time_s)} -> {_ms(a.step_time_s)}: {_change(r)}; the profiler "
            f"alone can move this between {_x(lo)} and {_x(hi)} ({BOUND_WORDS[_bound(b)]} before, "
            f"{BOUND_WORDS[_bound(a)]} after): {verdict}{note}")
    return profiled(r, (lo, hi), same, differences, text)


def _throughput(d: TraceDiff, differences: list[str]) -> Headline:
    b, a = d.before, d.after
    unprofiled = d.speedup_unprofiled is not None
    tb_s = b.unprofiled_step_time_s if unprofiled else b.step_time_s
    ta_s = a.unprofiled_step_time_s if unprofiled else a.step_time_s
    (kb, ka), unit = d.tokens_per_step, "tokens/s"
    if not (kb and ka):
        kb, ka, unit = b.flops_per_step, a.flops_per_step, "FLOP/s"
    if not (kb and ka and tb_s and ta_s):
        return Headline("throughput", unit, None, None, None, None, False, differences,
                        "different workloads (" + "; ".join(differences) + "): step time compares nothing, "
                        "and the throughput is not known on both sides")
    before, after = kb / tb_s, ka / ta_s
    r = after / before
    basis = "steps timed without the profiler" if unprofiled else "profiled steps"
    rng = None if unprofiled else profiled_ratio_range(b, a, r)
    text = (f"different workloads ({'; '.join(differences)}): step time compares nothing, so throughput: "
            f"{format_si(before, unit)} -> {format_si(after, unit)}, {_change(r, 'more', 'less')} ({basis})")
    if rng is not None:
        text += f"; the profiler alone can move this between {_x(rng[0])} and {_x(rng[1])}"
    return Headline(f"throughput ({unit})", unit, before, after, r, rng, False, differences, text)


def _change(r: float, up: str = "faster", down: str = "slower") -> str:
    if abs(r - 1) <= SAME_RATIO:
        return f"no change ({_x(r)})"
    return f"{r:.2f}x {up}" if r > 1 else f"{1 / r:.2f}x {down}"


def _x(r: float) -> str:
    return f"{r:.2f}x"


_ms = partial(format_ms, missing="-")      # "12.34 ms": before and after in one unit
