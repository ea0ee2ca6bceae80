"""Benchmark plans: which kernels, dtypes and sizes to measure (pure Python, no torch).

A :class:`BenchPlan` is the user's request (device, suite, dtypes, sizes, timing budget). The
measuring loop expands it into concrete :class:`PlannedPoint` objects once the device is known
(:func:`expand_plan`), because the sizes depend on the device's memory and last-level cache.
A plan with explicit ``points`` is used verbatim (custom plans, tests).

FLOPs and bytes come from each operation's formula (the fewest bytes the operation must move:
each input read once, each output written once):

========== ===================== ===================== ============================
kernel     operation             flops                 bytes
========== ===================== ===================== ============================
matmul     C = A @ B (n×n×n)     2·n³                  (2·n² inputs + n² output)·itemsize
copy       b = a                 0                     2·S
add        c = a + b             n                     3·S
triad      a = b + s·c           2·n                   3·S
fma_chain  x = x·a + b, k times  2·k·n                 2·S (intermediates stay on chip)
========== ===================== ===================== ============================

S = elements × itemsize (decimal units are used when printed: 1 GB/s = 1e9 bytes/s).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuperf_gui.core.roofline import BYTES_PER_ELEMENT
from gpuperf_gui.core.units import format_bytes

MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
MEMORY_KERNELS = ("copy", "add", "triad")
KERNELS = ("matmul", *MEMORY_KERNELS, "fma_chain")
SUITES = ("quick", "full", "custom")

#: dtypes a point may have: the matmul dtypes, and fp64 (item sizes: roofline.BYTES_PER_ELEMENT).
POINT_DTYPES = ("fp64", *MATMUL_DTYPES)
_KIB = 1024
_MIB = 1024 * 1024
_GIB = 1024 * 1024 * 1024


@dataclass(frozen=True)
class PlannedPoint:
    """One measurement to make.

    Parameters
    ----------
    kernel : one of :data:`KERNELS`.
    dtype : "fp32", "tf32", "bf16", "fp16" or "fp8" (tf32 is fp32 storage with TF32 matmul).
    size : matmul: n of an n×n×n product; other kernels: elements per array.
    fma_per_element : fma_chain only: k, the number of fused multiply-adds per element.
    """

    kernel: str
    dtype: str
    size: int
    fma_per_element: int = 0

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise ValueError(f"unknown kernel {self.kernel!r}; expected one of {KERNELS}")
        if self.dtype not in POINT_DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {POINT_DTYPES}")
        if self.size <= 0:
            raise ValueError("size must be positive")
        if self.kernel == "fma_chain" and self.fma_per_element <= 0:
            raise ValueError("fma_chain needs fma_per_element >= 1")

    @property
    def itemsize_bytes(self) -> int:
        return BYTES_PER_ELEMENT[self.dtype]

    @property
    def label(self) -> str:
        if self.kernel == "matmul":
            return f"matmul {self.dtype} {self.size}³"
        if self.kernel == "fma_chain":
            return f"fma_chain {self.dtype} k={self.fma_per_element} ({format_bytes(self.array_bytes)})"
        return f"{self.kernel} {self.dtype} {format_bytes(self.array_bytes)}"

    @property
    def array_bytes(self) -> int:
        """Bytes of one array (memory kernels) or one n×n matrix (matmul)."""
        if self.kernel == "matmul":
            return self.size * self.size * self.itemsize_bytes
        return self.size * self.itemsize_bytes

    @property
    def flops(self) -> float:
        n = float(self.size)
        if self.kernel == "matmul":
            return 2.0 * n**3
        if self.kernel == "copy":
            return 0.0
        if self.kernel == "add":
            return n
        if self.kernel == "triad":
            return 2.0 * n
        return 2.0 * self.fma_per_element * n  # fma_chain

    @property
    def bytes(self) -> float:
        s = float(self.array_bytes)
        if self.kernel == "matmul":
            out_itemsize = 2 if self.dtype == "fp8" else self.itemsize_bytes  # fp8 writes bf16
            return 2.0 * s + float(self.size * self.size * out_itemsize)
        if self.kernel in ("copy", "fma_chain"):
            return 2.0 * s
        return 3.0 * s  # add, triad

    @property
    def working_set_bytes(self) -> int:
        """Bytes resident while the kernel runs (all arrays it touches)."""
        if self.kernel == "matmul":
            return int(self.bytes)
        return int(self.bytes)


@dataclass(frozen=True)
class TimingPolicy:
    """How long to measure each point (do_bench-style budgets, seconds of device time)."""

    warmup_s: float = 0.025
    rep_s: float = 0.1
    min_samples: int = 5
    max_samples: int = 1000
    graph_below_s: float = 20e-6   # CUDA graphs for kernels shorter than this
    flush_cache_bytes: int = 256 * _MIB  # do_bench's flush buffer; raised to 2×L2 when larger


@dataclass(frozen=True)
class BenchPlan:
    """What the user asked for. ``points`` empty: expanded from suite/dtypes/sizes per device."""

    device: str = "auto"               # "auto" | "cpu" | "cuda" | "cuda:N"
    suite: str = "quick"               # "quick" | "full" | "custom"
    dtypes: tuple[str, ...] = ()       # matmul dtypes; () = the suite's default for the device
    matmul_sizes: tuple[int, ...] = ()  # () = the suite's default
    kernels: tuple[str, ...] = ("matmul", "copy", "add", "triad", "fma_chain")
    points: tuple[PlannedPoint, ...] = ()
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    results_path: Path | None = None   # JSON-lines file appended to as points are measured
    cpu_threads: int | None = None     # torch threads for CPU runs (None: default_cpu_threads())


def default_cpu_threads() -> int:
    """The CPU threads a benchmark uses unless told otherwise, the same in the Benchmarks tab and
    `gpuperf bench`: every CPU this process may run on (its affinity mask). The measuring runs in
    its own niced process, so the window stays responsive without giving up a core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class DeviceLimits:
    """What the plan expansion needs to know about the device (filled by the measuring code)."""

    kind: str                    # "cpu" | "cuda"
    memory_bytes: int            # free memory usable for buffers
    cache_bytes: int             # last-level cache
    supported_dtypes: tuple[str, ...]


def build_plan(
    suite: str = "quick",
    device: str = "auto",
    dtypes: tuple[str, ...] | list[str] = (),
    matmul_sizes: tuple[int, ...] | list[int] = (),
    kernels: tuple[str, ...] | list[str] | None = None,
    results_path: Path | None = None,
    timing: TimingPolicy | None = None,
) -> BenchPlan:
    """Validate a request and return a plan (torch is not imported)."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; expected one of {SUITES}")
    if not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
        raise ValueError(f"unknown device {device!r}; expected auto, cpu, cuda or cuda:N")
    for dtype in dtypes:
        if dtype not in MATMUL_DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; expected some of {MATMUL_DTYPES}")
    chosen_kernels = tuple(kernels) if kernels is not None else BenchPlan.kernels
    for kernel in chosen_kernels:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; expected some of {KERNELS}")
    if any(int(n) <= 0 for n in matmul_sizes):
        raise ValueError("matmul sizes must be positive")
    return BenchPlan(
        device=device,
        suite=suite,
        dtypes=tuple(dtypes),
        matmul_sizes=tuple(int(n) for n in matmul_sizes),
        kernels=chosen_kernels,
        results_path=results_path,
        timing=timing or TimingPolicy(),
    )


def _pow2_range(low: int, high: int, factor: int) -> list[int]:
    values, value = [], low
    while value <= high:
        values.append(value)
        value *= factor
    return values


def _default_sizes(plan: BenchPlan, limits: DeviceLimits) -> tuple[list[int], list[int], list[int]]:
    """Matmul n, memory array bytes, and FMA-chain k values for the suite and device."""
    full = plan.suite == "full"
    if limits.kind == "cuda":
        matmul = _pow2_range(256, 16384, 2) if full else [1024, 2048, 4096, 8192]
        top = max(8 * limits.cache_bytes, 2 * _GIB)
        memory = _pow2_range(256 * _KIB, top, 2 if full else 4)
        ks = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] if full else [1, 4, 16, 64, 256]
    else:
        matmul = _pow2_range(128, 2048, 2) if full else [256, 512, 1024]
        top = min(max(limits.cache_bytes // 2, 64 * _MIB), 1 * _GIB) if full else 256 * _MIB
        memory = _pow2_range(64 * _KIB, top, 2 if full else 4)
        ks = [1, 2, 4, 8, 16, 32, 64, 128] if full else [1, 4, 16, 64]
    return matmul, memory, ks


def default_dtypes(plan: BenchPlan, limits: DeviceLimits) -> tuple[str, ...]:
    if plan.dtypes:
        return plan.dtypes
    if limits.kind == "cuda":
        return tuple(d for d in MATMUL_DTYPES if d in limits.supported_dtypes)
    return ("fp32", "bf16") if plan.suite != "full" else ("fp32", "bf16", "fp16")


def expand_plan(plan: BenchPlan, limits: DeviceLimits) -> tuple[PlannedPoint, ...]:
    """Concrete points for ``plan`` on a device with ``limits`` (explicit points win)."""
    if plan.points:
        return plan.points
    matmul_ns, memory_bytes, ks = _default_sizes(plan, limits)
    if plan.matmul_sizes:
        matmul_ns = list(plan.matmul_sizes)
    points: list[PlannedPoint] = []
    if "matmul" in plan.kernels:
        for dtype in default_dtypes(plan, limits):
            points.extend(PlannedPoint("matmul", dtype, n) for n in matmul_ns)
    for kernel in MEMORY_KERNELS:
        if kernel in plan.kernels:
            points.extend(PlannedPoint(kernel, "fp32", b // 4) for b in memory_bytes)
    if "fma_chain" in plan.kernels:
        elements = (256 * _MIB if limits.kind == "cuda" else 16 * _MIB) // 4
        points.extend(PlannedPoint("fma_chain", "fp32", elements, k) for k in ks)
    return tuple(points)


def estimate_point_cost_s(point: PlannedPoint, timing: TimingPolicy) -> float:
    """Rough wall time of one point (warm-up + timed budget + setup), for progress estimates."""
    setup_s = 0.05 + point.working_set_bytes / 2e9  # allocation and random fill
    if point.kernel == "fma_chain":
        setup_s += 0.5  # compilation or chunking
    return timing.warmup_s + timing.rep_s + setup_s
