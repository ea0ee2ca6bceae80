"""Measured ceilings: the best matmul rate per dtype and the best bandwidth of a run.

Saved per device as JSON (``<results dir>/ceilings/<device_id>.json``) and turned into a roofline
device by :meth:`MeasuredCeilings.to_device` (``DeviceDatabase.with_measured``).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from gpuperf_gui.core.bench.points import MeasuredPoint
    from gpuperf_gui.core.hardware import Device, DeviceDatabase

MEMORY_KERNELS = ("copy", "add", "triad")
COLLECTIVE_KERNELS = ("all_reduce", "all_gather", "reduce_scatter")


@dataclass(frozen=True)
class MeasuredCeilings:
    """Best measured rates of one device (SI units) and their fraction of the datasheet."""

    device_id: str                                   # hardware database id ("h200", "cpu")
    device_name: str = ""                            # "NVIDIA H200", CPU model
    torch_device: str = ""                           # "cuda:0", "cpu"
    matmul_flops_per_s: dict[str, float] = field(default_factory=dict)   # dtype -> best FLOP/s
    matmul_labels: dict[str, str] = field(default_factory=dict)          # dtype -> best point
    bandwidth_bytes_per_s: float | None = None
    bandwidth_label: str = ""
    bandwidth_beyond_cache: bool = True              # False: only in-cache points were measured
    flops_fraction_of_datasheet: dict[str, float] = field(default_factory=dict)
    bandwidth_fraction_of_datasheet: float | None = None
    collective_busbw_bytes_per_s: dict[str, float] = field(default_factory=dict)
    method: str = ""
    throttled_points: int = 0
    complete: bool = True                            # False: the run was stopped early
    measured_at: float = 0.0                         # Unix time

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> MeasuredCeilings:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_device(self, database: DeviceDatabase) -> Device:
        """The device with these ceilings as its roofline (``DeviceDatabase.with_measured``)."""
        return database.with_measured(self.device_id, dict(self.matmul_flops_per_s),
                                      self.bandwidth_bytes_per_s)

    def summary(self) -> str:
        """One line for a status bar or the terminal."""
        parts = []
        for dtype, rate in self.matmul_flops_per_s.items():
            fraction = self.flops_fraction_of_datasheet.get(dtype)
            share = f" ({fraction:.0%})" if fraction else ""
            parts.append(f"{dtype} {rate / 1e12:.3g} TFLOP/s{share}")
        if self.bandwidth_bytes_per_s:
            share = (f" ({self.bandwidth_fraction_of_datasheet:.0%})"
                     if self.bandwidth_fraction_of_datasheet else "")
            cache = "" if self.bandwidth_beyond_cache else " in cache"
            parts.append(f"{self.bandwidth_bytes_per_s / 1e9:.4g} GB/s{cache}{share}")
        for op, rate in self.collective_busbw_bytes_per_s.items():
            parts.append(f"{op} busbw {rate / 1e9:.3g} GB/s")
        return " · ".join(parts) if parts else "no ceilings measured"


def _best(points: Iterable[MeasuredPoint], key) -> MeasuredPoint | None:
    candidates = list(points)
    return max(candidates, key=key) if candidates else None


def compute_ceilings(
    points: Iterable[MeasuredPoint],
    device_id: str,
    device_name: str = "",
    torch_device: str = "",
    database: DeviceDatabase | None = None,
    complete: bool = True,
) -> MeasuredCeilings:
    """Best rates over ``points``; fractions of the datasheet when the database knows the device.

    Bandwidth comes from memory kernels whose working set is beyond the last-level cache; when the
    run measured none, the largest in-cache point is used and flagged (``bandwidth_beyond_cache``).
    """
    points = list(points)
    matmul: dict[str, MeasuredPoint] = {}
    for point in points:
        if point.kernel == "matmul" and point.seconds > 0:
            best = matmul.get(point.dtype)
            if best is None or point.flops_per_s > best.flops_per_s:
                matmul[point.dtype] = point
    memory = [p for p in points if p.kernel in MEMORY_KERNELS and p.seconds > 0]
    beyond = [p for p in memory if p.beyond_cache]
    if not beyond and memory:
        largest = max(p.working_set_bytes for p in memory)
        pool = [p for p in memory if p.working_set_bytes == largest]
    else:
        pool = beyond
    best_bw = _best(pool, key=lambda p: p.bytes_per_s)
    collectives: dict[str, float] = {}
    for point in points:
        if point.kernel in COLLECTIVE_KERNELS and point.busbw_bytes_per_s:
            collectives[point.kernel] = max(collectives.get(point.kernel, 0.0), point.busbw_bytes_per_s)
    methods = sorted({p.method.split(" ")[0] for p in [*matmul.values(), *pool]})
    ceilings = MeasuredCeilings(
        device_id=device_id,
        device_name=device_name,
        torch_device=torch_device,
        matmul_flops_per_s={d: p.flops_per_s for d, p in matmul.items()},
        matmul_labels={d: p.label for d, p in matmul.items()},
        bandwidth_bytes_per_s=best_bw.bytes_per_s if best_bw else None,
        bandwidth_label=best_bw.label if best_bw else "",
        bandwidth_beyond_cache=bool(beyond) or not memory,
        collective_busbw_bytes_per_s=collectives,
        method=", ".join(methods),
        throttled_points=sum(1 for p in points if p.throttled),
        complete=complete,
        measured_at=time.time(),
    )
    return with_datasheet_fractions(ceilings, database)


def with_datasheet_fractions(ceilings: MeasuredCeilings,
                             database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """Fill the fractions of the datasheet figures (left empty where the database has none)."""
    try:
        if database is None:
            from gpuperf_gui.core.hardware import load_database

            database = load_database()
        device = database.get(ceilings.device_id)
    except Exception:  # unknown device or no database: fractions stay empty
        return ceilings
    flops_fraction: dict[str, float] = {}
    for dtype, rate in ceilings.matmul_flops_per_s.items():
        try:
            peak = device.peak_flops_per_s(dtype)
        except Exception:
            continue
        if peak:
            flops_fraction[dtype] = rate / peak
    bandwidth = getattr(device, "memory_bandwidth_bytes_per_s", None)
    bw_fraction = (ceilings.bandwidth_bytes_per_s / bandwidth
                   if bandwidth and ceilings.bandwidth_bytes_per_s else None)
    data = ceilings.to_json_dict()
    data.update(flops_fraction_of_datasheet=flops_fraction, bandwidth_fraction_of_datasheet=bw_fraction)
    return MeasuredCeilings.from_json_dict(data)


def ceilings_path(device_id: str, results_dir: Path | None = None) -> Path:
    from gpuperf_gui.core.bench.results import default_results_dir

    return (results_dir or default_results_dir()) / "ceilings" / f"{device_id}.json"


def save_ceilings(ceilings: MeasuredCeilings, results_dir: Path | None = None) -> Path:
    """Write the ceilings for their device (replacing earlier ones); returns the path."""
    path = ceilings_path(ceilings.device_id, results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(ceilings.to_json_dict(), indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def load_ceilings(device_id: str, results_dir: Path | None = None) -> MeasuredCeilings | None:
    """The saved ceilings of a device, or None when none were measured (or the file is unreadable)."""
    path = ceilings_path(device_id, results_dir)
    try:
        return MeasuredCeilings.from_json_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
