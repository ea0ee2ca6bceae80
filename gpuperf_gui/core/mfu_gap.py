"""Where the rest of 100 % went: the MFU gap attributed to named causes, the pipeline bubble, Amdahl.

The gap 1 − MFU is split into named causes (pipeline bubble, exposed communication, data stall,
host syncs, memory-bound kernels, launch gaps, recompute, GEMM inefficiency) and what is left unexplained
(docs/reference/metrics.md §2.8). Fractions are 0..1. No Qt here (R1).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from gpuperf_gui.core.mfu import MfuInputError

__all__ = [
    "CAUSES",
    "CAUSE_LABELS",
    "REST_OF_STEP",
    "TIME_CAUSES",
    "AmdahlResult",
    "GapBreakdown",
    "GapCauses",
    "GapSlice",
    "amdahl",
    "breakdown_json",
    "gap_breakdown",
    "pipeline_bubble_fraction",
    "step_time_slices",
]

CAUSES: tuple[tuple[str, str], ...] = (
    ("pipeline_bubble", "Pipeline bubble"),
    ("exposed_comm", "Communication wait"),
    ("data_stall", "Data stall"),
    ("host_sync", "Host syncs"),
    ("memory_bound", "Memory-bound kernels"),
    ("launch_gaps", "Launch gaps"),
    ("recompute", "Recompute (HFU − MFU)"),
    ("gemm_inefficiency", "GEMM inefficiency"),
)
CAUSE_LABELS = dict(CAUSES)


def pipeline_bubble_fraction(stages: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Bubble share of a pipeline-parallel step: (p−1)/(v·m + p − 1) (GPipe/1F1B: v = 1).

    Narayanan et al. 2021 §2.2: bubble time / ideal time = (p−1)/(v·m); as a fraction of the step
    it is (p−1)/(m+p−1) for v = 1.
    """
    if stages < 1 or microbatches < 1 or virtual_stages < 1:
        raise MfuInputError("pipeline", "stages, micro-batches and virtual stages must be at least 1")
    return (stages - 1) / (virtual_stages * microbatches + stages - 1)


@dataclass(frozen=True)
class GapCauses:
    """Named causes of lost time, each a fraction (0..1) of the step's wall clock.

    ``memory_bound`` is the time in memory-bound kernels; those still run at a small fraction of
    peak (the ceiling model's ``memory_efficiency``), so they lose time × (1 − that efficiency).
    ``gemm_inefficiency`` is a share of peak directly (GEMMs below peak). Recompute is not entered:
    it is HFU − MFU.
    """

    pipeline_bubble: float = 0.0
    exposed_comm: float = 0.0
    data_stall: float = 0.0
    host_sync: float = 0.0
    """The GPU idle after blocking syncs (``.item()``, ``.cpu()``) that reading later would give back."""
    memory_bound: float = 0.0
    launch_gaps: float = 0.0
    gemm_inefficiency: float = 0.0

    def validate(self) -> None:
        for name, value in asdict(self).items():
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise MfuInputError(name, f"{CAUSE_LABELS[name]} must be within 0..100 %")


@dataclass(frozen=True)
class GapSlice:
    key: str
    label: str
    fraction: float  # share of 100 % of peak


@dataclass(frozen=True)
class GapBreakdown:
    mfu: float
    causes: tuple[GapSlice, ...]  # named causes, zero ones included, in CAUSES order
    unexplained: float  # ≥ 0
    over_attributed: float  # ≥ 0: how much the causes exceed the gap
    message: str | None  # said instead of drawing a negative slice

    @property
    def gap(self) -> float:
        return max(0.0, 1.0 - self.mfu)

    def display_slices(self) -> list[GapSlice]:
        """MFU, the non-zero causes and unexplained, scaled to add up to exactly 100 %.

        When the causes add up to more than the gap they are scaled down to fit it (never a
        negative slice); :attr:`message` says so.
        """
        mfu = min(max(self.mfu, 0.0), 1.0)
        named = sum(s.fraction for s in self.causes)
        scale = self.gap / named if named > self.gap and named > 0 else 1.0
        slices = [GapSlice("mfu", "MFU (useful work)", mfu)]
        slices += [GapSlice(s.key, s.label, s.fraction * scale) for s in self.causes if s.fraction > 0]
        slices.append(GapSlice("unexplained", "Unexplained", self.unexplained))
        return slices


def gap_breakdown(
    mfu: float, hfu: float, causes: GapCauses, *, memory_efficiency: float = 0.10
) -> GapBreakdown:
    """Attribute the gap 1 − MFU to named causes; the rest is unexplained.

    Idle causes (bubble, exposed comm, data stall, host syncs, launch gaps) lose their whole time share;
    memory-bound time loses ``time × (1 − memory_efficiency)``; recompute loses HFU − MFU.
    """
    causes.validate()
    shares = {
        "pipeline_bubble": causes.pipeline_bubble,
        "exposed_comm": causes.exposed_comm,
        "data_stall": causes.data_stall,
        "host_sync": causes.host_sync,
        "memory_bound": causes.memory_bound * (1.0 - memory_efficiency),
        "launch_gaps": causes.launch_gaps,
        "recompute": max(0.0, hfu - mfu),
        "gemm_inefficiency": causes.gemm_inefficiency,
    }
    slices = tuple(GapSlice(key, label, shares[key]) for key, label in CAUSES)
    named, gap = sum(shares.values()), max(0.0, 1.0 - mfu)
    if mfu > 1.0:
        return GapBreakdown(mfu, slices, 0.0, named, "MFU is above 100 %: there is no gap to attribute.")
    if named > gap + 1e-9:
        over = named - gap
        message = (
            f"Over-attributed: the named causes add up to {named:.1%} but the gap is {gap:.1%} "
            f"({over:.1%} too much). Causes overlap (e.g. comm during a data stall) or one is "
            "overestimated; the bar scales them to fit."
        )
        return GapBreakdown(mfu, slices, 0.0, over, message)
    return GapBreakdown(mfu, slices, gap - named, 0.0, None)


TIME_CAUSES: tuple[str, ...] = ("pipeline_bubble", "exposed_comm", "data_stall", "host_sync", "memory_bound",
                                "launch_gaps")
REST_OF_STEP = "rest_of_step"


def step_time_slices(causes: GapCauses) -> list[GapSlice]:
    """The time causes as shares of the step's wall clock (not of peak), then the rest of the step.

    For a stacked bar drawn instead of the gap bar when the MFU is not plausible (the model or the
    tokens per step do not match the timed step): the causes measured in a trace stay readable
    without being scaled into a gap that does not exist. Memory-bound kernels count with their whole
    time here. Causes adding up to more than the step are scaled down to fit it.
    """
    causes.validate()
    values = [(key, CAUSE_LABELS[key], getattr(causes, key)) for key in TIME_CAUSES]
    total = sum(v for _, _, v in values)
    scale = 1.0 / total if total > 1.0 else 1.0
    slices = [GapSlice(key, label, value * scale) for key, label, value in values if value > 0]
    slices.append(GapSlice(REST_OF_STEP, "Rest of the step (compute, incl. useful work)",
                           max(0.0, 1.0 - total * scale)))
    return slices


# --------------------------------------------------------------------------------------------------
# Amdahl's law


@dataclass(frozen=True)
class AmdahlResult:
    part_fraction: float  # p: share of the time the part takes
    part_speedup: float  # s: how much faster the part gets
    overall_speedup: float  # 1 / ((1 − p) + p / s)
    bound_speedup: float  # s → ∞: 1 / (1 − p)
    new_time_s: float | None

    @property
    def time_saved_fraction(self) -> float:
        return 1.0 - 1.0 / self.overall_speedup

    def describe(self) -> str:
        bound = "∞" if math.isinf(self.bound_speedup) else f"{self.bound_speedup:.3g}×"
        return (
            f"A part taking {self.part_fraction:.1%} of the time made {self.part_speedup:g}× faster: "
            f"{self.overall_speedup:.4g}× overall ({self.overall_speedup - 1:.1%} faster, "
            f"{self.time_saved_fraction:.1%} less time); at best {bound} if it took no time."
        )


def amdahl(part_fraction: float, part_speedup: float, total_time_s: float | None = None) -> AmdahlResult:
    """Amdahl's law: speeding a fraction ``p`` of the time up ``s`` times."""
    if not 0.0 <= part_fraction <= 1.0:
        raise MfuInputError("amdahl_part", "the part's share must be within 0..100 %")
    if not part_speedup > 0:
        raise MfuInputError("amdahl_speedup", "the speed-up must be positive")
    new_relative = (1.0 - part_fraction) + part_fraction / part_speedup
    bound = math.inf if part_fraction >= 1.0 else 1.0 / (1.0 - part_fraction)
    return AmdahlResult(
        part_fraction,
        part_speedup,
        1.0 / new_relative,
        bound,
        total_time_s * new_relative if total_time_s is not None else None,
    )



def breakdown_json(breakdown: GapBreakdown) -> dict[str, Any]:
    """The gap breakdown as fractions of peak (keys of :data:`CAUSES` + mfu, unexplained)."""
    payload: dict[str, Any] = {"mfu": breakdown.mfu}
    payload.update({s.key: s.fraction for s in breakdown.causes})
    payload.update(unexplained=breakdown.unexplained, over_attributed=breakdown.over_attributed,
                   message=breakdown.message)
    return payload


