"""A rank's kernels against the roof of their own precision: the one place these figures are made.

The Overview's "% of roof" column, its "GEMMs at X % of roof" card, ``gpuperf diagnose --json``'s
``kernels`` object per rank, and the MFU gap bar's "GEMM inefficiency" (Send to MFU, ``gpuperf mfu
--from-trace``) all come from here, so they are one number everywhere.

* Each kernel's roof: the dense peak of the kernel's own precision (:mod:`.precision`) on the
  device, capped by bandwidth × its arithmetic intensity when its bytes are known (the roofline's
  attainable rate). An override (the user's choice of one precision) judges every math kernel
  against that one peak instead. A kernel whose precision is unknown, or whose precision the
  device has no peak for, gets no fraction (never another precision's).
* GEMMs' fraction of roof: over the math kernels with FLOPs and a roof, Σ FLOPs / Σ (seconds ×
  roof): their time-weighted mean fraction.
* GEMM inefficiency (a share of the step, as the gap bar's causes are): the math kernels' share of
  the step × (1 − that fraction), the share being the rank's GPU-busy fraction × the math kernels'
  share of kernel time (concurrent streams not discounted).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Sequence

from .kernel_table import TOP_KERNELS, KernelRow, kernel_rows
from ..vocabulary.precision import TracePrecision, trace_precision

if TYPE_CHECKING:
    from ...hardware import Device, DeviceDatabase
    from .rank_analysis import RankAnalysis
    from ..model.trace_model import RankTrace

__all__ = ["GemmRoof", "RankKernels", "TraceKernels", "attach_kernels", "device_database", "gemm_roof",
           "kernel_roof_fraction", "rank_kernels", "trace_device"]


def kernel_roof_fraction(row: KernelRow, device: Device | None, override: str | None = None) -> float | None:
    """Achieved FLOP/s over the roof of the kernel's precision (``override``'s, when given)."""
    achieved = row.achieved_flops_per_s
    precision = override if override and row.math else row.precision
    if achieved is None or device is None or precision is None:
        return None
    peak = device.dense_flops_per_s.get(precision)
    if not peak:
        return None
    from ...roofline import attainable_flops_per_s  # noqa: PLC0415 - `diagnose` imports it only with a roof

    ai, bw = row.ai_flops_per_byte, device.memory_bandwidth_bytes_per_s
    roof = attainable_flops_per_s(peak, bw, ai) if ai is not None and bw else peak
    return achieved / roof if roof > 0 else None


@dataclass(frozen=True)
class GemmRoof:
    """The math kernels against their roofs: ``fraction`` (None: no kernel could be judged)."""

    fraction: float | None
    judged_seconds: float
    """Time of the math kernels with FLOPs and a roof (what the fraction is over)."""
    math_seconds: float
    """Time of all math kernels."""
    time_fraction_of_step: float = 0.0
    """The math kernels' share of the step (GPU busy × their share of kernel time)."""
    device_id: str | None = None
    precision: str | None = None
    """The override the fraction used, or None (each kernel's own precision)."""

    @property
    def inefficiency(self) -> float:
        """The GEMM-inefficiency cause: the math kernels' share of the step × (1 − fraction); 0
        when no kernel could be judged (then the gap bar leaves it to "Unexplained", and says so)."""
        if self.fraction is None:
            return 0.0
        judged_share = self.judged_seconds / self.math_seconds if self.math_seconds > 0 else 0.0
        return min(max(self.time_fraction_of_step * judged_share * (1.0 - min(self.fraction, 1.0)), 0.0), 1.0)

    def to_json(self) -> dict:
        return {"fraction_of_roof": self.fraction, "judged_seconds": self.judged_seconds,
                "math_kernel_seconds": self.math_seconds, "time_fraction_of_step": self.time_fraction_of_step,
                "gemm_inefficiency": self.inefficiency, "device": self.device_id,
                "precision_override": self.precision}


def gemm_roof(rows: Sequence[KernelRow], device: Device | None, override: str | None = None,
              time_fraction_of_step: float = 0.0) -> GemmRoof:
    """:class:`GemmRoof` of ``rows`` (math rows; others are skipped)."""
    math = [r for r in rows if r.math]
    flops = weighted = judged = 0.0
    for r in math:
        frac = kernel_roof_fraction(r, device, override)
        if frac is None or r.flops_seconds <= 0:
            continue
        flops += r.flops
        weighted += r.flops / frac       # = seconds × roof
        judged += r.flops_seconds
    return GemmRoof(flops / weighted if weighted > 0 else None, judged, sum(r.seconds for r in math),
                    time_fraction_of_step, device.id if device is not None else None, override or None)


@dataclass
class RankKernels:
    """A rank's kernel figures: the top rows, every math row (for the GEMM figure), the
    tensor-core share, the trace's precision and the GPU-busy fraction the step share needs."""

    top: list[KernelRow]
    math: list[KernelRow]
    tensor_core_share: float | None
    kernel_seconds: float
    precision: TracePrecision
    gpu_busy_fraction: float = 0.0
    device_name: str = ""

    @property
    def math_time_fraction_of_step(self) -> float:
        """GPU busy × the math kernels' share of kernel time."""
        math_s = sum(r.seconds for r in self.math)
        return self.gpu_busy_fraction * math_s / self.kernel_seconds if self.kernel_seconds > 0 else 0.0

    def gemm(self, device: Device | None, override: str | None = None) -> GemmRoof:
        return gemm_roof(self.math, device, override, self.math_time_fraction_of_step)

    def to_json(self) -> dict:
        """``gpuperf diagnose --json``'s per-rank ``kernels``: the Overview's figures, the roofs
        those of the trace's GPU (``device_name``) at each kernel's own precision. The device
        database is read only when a kernel has FLOPs to judge."""
        judged = any(r.flops > 0 for r in self.math)
        device = trace_device(self.device_name) if judged else None
        gemm = self.gemm(device)
        return {"roof_device": device.id if device is not None else None,
                "tensor_core_share": self.tensor_core_share, "kernel_time_s": self.kernel_seconds,
                "precision": self.precision.to_json(), "gemm": gemm.to_json(),
                "top_kernels": [dict(r.to_json(), fraction_of_roof=kernel_roof_fraction(r, device))
                                for r in self.top]}


def rank_kernels(rt: RankTrace, gpu_busy_fraction: float = 0.0) -> RankKernels:
    """The kernel figures of one rank (:func:`.kernel_table.kernel_rows`, then the precision split)."""
    rows, tc_share, kernel_s = kernel_rows(rt)
    math = [r for r in rows if r.math]
    return RankKernels(rows[:TOP_KERNELS], math, tc_share, kernel_s, _precision_of(math), gpu_busy_fraction,
                       rt.device_name)


def attach_kernels(rt: RankTrace, analysis: RankAnalysis) -> RankAnalysis:
    """Set ``analysis.kernels`` (both engines call it where they analyse a rank)."""
    analysis.kernels = rank_kernels(rt, analysis.gpu_busy_fraction)
    return analysis


def trace_device(device_name: str | None, database: DeviceDatabase | None = None) -> Device | None:
    """The database's device for a trace's ``deviceProperties`` name, None when unknown: the one
    lookup behind the kernel roofs, the memory-bound rule and the what-if. Without ``database``,
    the shipped devices and the user's file as it is now (read again when the file changed: an
    edit in the window reaches the next trace a long-lived helper analyses)."""
    if not device_name:
        return None
    if database is not None:
        return _matched(device_name, database)
    return _device_at(_devices_file_stamp(), device_name)


def device_database() -> DeviceDatabase:
    """The shipped devices and the user's file as it is now (read again when the file changed)."""
    return _database_at(_devices_file_stamp())


def _devices_file_stamp() -> tuple[str, int, int] | None:
    """The user's devices file (path, mtime, size), None when there is none."""
    from ...paths import user_devices_file  # noqa: PLC0415

    path = user_devices_file()
    try:
        stat = path.stat()
    except OSError:
        return None
    return str(path), stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=256)
def _device_at(stamp: tuple[str, int, int] | None, device_name: str) -> Device | None:
    return _matched(device_name, _database_at(stamp))


@lru_cache(maxsize=1)
def _database_at(stamp: tuple[str, int, int] | None) -> DeviceDatabase:
    from ...hardware import load_database  # noqa: PLC0415

    return load_database()


def _matched(device_name: str, database: DeviceDatabase) -> Device | None:
    from ...hardware import match_device_name  # noqa: PLC0415 - only with a name

    device_id = match_device_name(device_name, database)
    return database.get(device_id) if device_id else None


def _precision_of(math: Iterable[KernelRow]) -> TracePrecision:
    """The precision of math kernels (of one rank or several): their seconds summed per precision."""
    seconds: dict[str | None, float] = {}
    for r in math:
        seconds[r.precision] = seconds.get(r.precision, 0.0) + r.seconds
    return trace_precision(seconds)


@dataclass(frozen=True)
class TraceKernels:
    """What Send to MFU / ``mfu --from-trace`` needs of the ranks' kernels: every rank's math rows,
    the mean share of the step they take, the precision and the device name."""

    math: tuple[KernelRow, ...] = ()
    math_time_fraction_of_step: float = 0.0
    precision: TracePrecision = field(default_factory=lambda: TracePrecision(None, None))
    device_name: str | None = None

    def gemm(self, device: Device | None, override: str | None = None) -> GemmRoof:
        return gemm_roof(self.math, device, override, self.math_time_fraction_of_step)

    @classmethod
    def of(cls, kernels: Sequence[RankKernels]) -> TraceKernels:
        if not kernels:
            return cls()
        share = sum(k.math_time_fraction_of_step for k in kernels) / len(kernels)
        math = tuple(r for k in kernels for r in k.math)
        return cls(math, share, _precision_of(math), kernels[0].device_name or None)
