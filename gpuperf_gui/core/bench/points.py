"""What the measuring loop yields: measured points and messages (plain data, JSON-ready)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from gpuperf_gui.core.units import format_bytes

if TYPE_CHECKING:
    from gpuperf_gui.core.roofline import RooflinePoint

#: Keys every point carries in JSON (docs/cli.md, `gpuperf bench`).
DESIGN_KEYS = ("kernel", "dtype", "size", "flops", "bytes", "seconds", "flops_per_s", "bytes_per_s",
               "ai_flops_per_byte")


UNRELIABLE_IQR_FRACTION = 0.5
"""IQR over median above which a point is unreliable (why 0.5: :mod:`.noise`)."""


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured kernel: median time, its spread and how it was measured (SI units).

    ``seconds`` is the median time of one call; ``iqr_low_s``/``iqr_high_s`` the 25th and 75th
    percentiles over ``samples`` timed calls. ``method`` names the timer ("cuda-events+flush",
    "cuda-events", "cuda-graph", "cpu-perf_counter", "gloo-perf_counter", ...).
    """

    kernel: str
    dtype: str
    size: int
    flops: float
    bytes: float
    seconds: float
    method: str
    iqr_low_s: float
    iqr_high_s: float
    samples: int
    device: str = "cpu"                 # torch device string, "cpu" or "cuda:0"
    device_id: str = ""                 # hardware database id ("cpu", "h200"); "" in older runs
    working_set_bytes: int = 0
    beyond_cache: bool | None = None    # working set larger than the last-level cache
    cache_level: str | None = None      # where the working set fits: "L1", "L2", "L3", "memory"
                                        # (CPU runs, core.bench.cache_levels); None: not known
    l2_flushed: bool = False
    fma_per_element: int = 0
    counted_flops: float | None = None  # FlopCounterMode's count (matmul)
    threads: int | None = None          # torch CPU threads (CPU timing)
    sm_clock_hz: float | None = None    # NVML, sampled while the timed calls ran
    max_sm_clock_hz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    throttled: bool | None = None       # NVML reported a power/thermal clock limit (None: unknown)
    launch_bound: bool = False          # kernel shorter than ~20 µs and not timed in a graph
    world_size: int | None = None       # collectives
    busbw_bytes_per_s: float | None = None  # collectives (nccl-tests convention)
    timestamp: float = 0.0

    @property
    def label(self) -> str:
        if self.kernel == "matmul":
            return f"matmul {self.dtype} {self.size}³"
        if self.kernel == "fma_chain":
            return f"fma_chain {self.dtype} k={self.fma_per_element}"
        arrays = 2 if self.kernel == "copy" else 3
        if self.kernel in ("copy", "add", "triad") and self.working_set_bytes:
            return f"{self.kernel} {self.dtype} {format_bytes(self.working_set_bytes / arrays)}"
        return f"{self.kernel} {self.dtype} {self.size}"

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def ai_flops_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else 0.0

    @property
    def iqr_fraction(self) -> float:
        """Interquartile range over the median (the run-to-run spread)."""
        return (self.iqr_high_s - self.iqr_low_s) / self.seconds if self.seconds > 0 else math.nan

    @property
    def reliable(self) -> bool:
        """Its calls ran alike: IQR / median within :data:`UNRELIABLE_IQR_FRACTION` (unknown:
        reliable); only such points are ceilings (:mod:`.noise`)."""
        spread = self.iqr_fraction
        return not (math.isfinite(spread) and spread > UNRELIABLE_IQR_FRACTION)

    def to_json_dict(self) -> dict[str, Any]:
        """docs/cli.md keys first, then everything else (rates included)."""
        data = asdict(self)
        head = {key: (data[key] if key in data else getattr(self, key)) for key in DESIGN_KEYS}
        head.update({key: value for key, value in data.items() if key not in head})
        head["iqr_s"] = [self.iqr_low_s, self.iqr_high_s]
        head["reliable"] = self.reliable
        return head

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> MeasuredPoint:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_roofline_point(self, device_id: str = "") -> RooflinePoint:
        """The point for the Roofline tab (kind "measured"), bound to the device it was measured
        on (``device_id`` for points of older runs that did not record it) and its dtype."""
        from gpuperf_gui.core.roofline import RooflinePoint

        owner = self.device_id or device_id or ("cpu" if self.device == "cpu" else "")
        return RooflinePoint(label=self.label, flops=self.flops, bytes=self.bytes,
                             seconds=self.seconds, kind="measured", device_id=owner,
                             precision=self.dtype, cache_level=self.cache_level or "")


@dataclass(frozen=True)
class BenchMessage:
    """A progress or skip message from the measuring loop.

    kind: "started" (before a point: ``index``/``total``/``label``/``eta_s``), "skipped" (OOM,
    unsupported dtype, no CUDA: the run continues), "info", "warning", "stopped", "finished".
    """

    kind: str
    text: str
    index: int = 0          # 0-based index of the point this message is about
    total: int = 0
    label: str = ""
    eta_s: float | None = None   # estimated seconds left in the run

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> BenchMessage:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})
