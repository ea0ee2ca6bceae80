"""The CPU's cache levels, where a benchmark's working set lives, and the cache roofs it measured.

Intel Advisor's cache-aware roofline (Ilic, Pratas, Sousa, IEEE CAL 2014) draws one bandwidth
roof per level of the memory hierarchy: L1, L2, L3 and DRAM, each the bandwidth a streaming kernel
reaches when its data sits in that level. Our copy benchmark sweeps the array size, so its points
whose working set fits in a cache level measure that level's bandwidth; the best of them is the
level's roof. A kernel whose working set fits in a cache is judged against that cache's roof: its
data comes from there, not from DRAM.

Cache sizes come from Linux sysfs (``/sys/devices/system/cpu/cpu0/cache/index*``: ``level``,
``type``, ``size``, ``shared_cpu_list``), the same numbers ``lscpu`` prints. A level private to each
core (L1d, L2) holds ``size × threads`` bytes for a kernel run on ``threads`` cores (torch splits
the arrays between its threads), up to the number of such caches on the machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from gpuperf_gui.core.units import format_bytes

if TYPE_CHECKING:
    from gpuperf_gui.core.bench.points import MeasuredPoint

SYSFS_CPU = Path("/sys/devices/system/cpu")
MEMORY = "memory"                        # residency of a working set larger than every cache
STREAMING_KERNELS = ("copy", "add", "triad")


@dataclass(frozen=True)
class CacheLevel:
    """One level of data cache: ``size_bytes`` per instance, ``instances`` on the machine."""

    name: str            # "L1", "L2", "L3"
    size_bytes: int
    instances: int = 1

    def capacity_bytes(self, threads: int | None) -> int:
        """Bytes a kernel on ``threads`` cores can keep in this level (one instance per core used)."""
        return self.size_bytes * max(1, min(threads or 1, self.instances))

    def to_json_dict(self) -> dict[str, object]:
        return {"name": self.name, "size_bytes": self.size_bytes, "instances": self.instances}


@dataclass(frozen=True)
class CacheRoof:
    """A cache level's measured bandwidth: the best streaming point whose working set fits in it."""

    level: str
    bandwidth_bytes_per_s: float
    label: str                 # the point that measured it ("copy fp32 256 KiB")
    working_set_bytes: int


def _size_bytes(text: str) -> int:
    """sysfs's "48K", "2048K", "480M" in bytes (0 when unreadable)."""
    text = text.strip()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:].upper(), 1)
    digits = text.rstrip("KMGkmg")
    return int(digits) * scale if digits.isdigit() else 0


def _cpu_count(cpu_list: str) -> int:
    """CPUs named by a sysfs list ("0-1,4,6-7" -> 5)."""
    count = 0
    for part in cpu_list.strip().split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            count += int(high) - int(low) + 1
        elif part.strip().isdigit():
            count += 1
    return count


def read_cpu_caches(root: Path = SYSFS_CPU) -> tuple[CacheLevel, ...]:
    """The data (and unified) cache levels of cpu0, smallest first; () where sysfs has none."""
    levels: dict[int, CacheLevel] = {}
    try:
        online = _cpu_count((root / "online").read_text())
    except (OSError, ValueError):
        online = 1
    for index in sorted((root / "cpu0" / "cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _size_bytes((index / "size").read_text())
            sharing = _cpu_count((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size <= 0:
            continue
        levels[level] = CacheLevel(f"L{level}", size, max(1, online // max(1, sharing)))
    return tuple(levels[k] for k in sorted(levels))


def residency(working_set_bytes: int, levels: Iterable[CacheLevel], threads: int | None) -> str:
    """The smallest level whose capacity holds the working set ("L1", "L2", "L3"), else "memory"."""
    for level in levels:
        if working_set_bytes <= level.capacity_bytes(threads):
            return level.name
    return MEMORY


def cache_roofs(points: Iterable[MeasuredPoint]) -> list[CacheRoof]:
    """Per cache level, the best streaming-kernel bandwidth among the points resident there (their
    ``cache_level``, set when measured); levels in order, DRAM ("memory") left out: that is the
    device's memory roof."""
    best: dict[str, MeasuredPoint] = {}
    for point in points:
        level = point.cache_level
        if point.kernel not in STREAMING_KERNELS or not level or level == MEMORY or point.seconds <= 0:
            continue
        if level not in best or point.bytes_per_s > best[level].bytes_per_s:
            best[level] = point
    return [CacheRoof(level, p.bytes_per_s, p.label, p.working_set_bytes)
            for level, p in sorted(best.items())]


def describe(roof: CacheRoof) -> str:
    """Where a cache roof comes from, in words ("copy fp32 256 KiB: 512 KiB working set, in L2")."""
    return f"{roof.label}: {format_bytes(roof.working_set_bytes)} working set, in {roof.level}"


def run_cache_levels(header: dict) -> tuple[CacheLevel, ...]:
    """The cache levels of the CPU a run file measured: its header's ``cache_levels``; for a run
    written before they were recorded, this machine's, when the run was made here (same host)."""
    import platform

    saved = header.get("cache_levels")
    if isinstance(saved, list) and saved:
        try:
            return tuple(CacheLevel(str(d["name"]), int(d["size_bytes"]), int(d.get("instances", 1)))
                         for d in saved)
        except (KeyError, TypeError, ValueError):
            return ()
    if header.get("device", "cpu") == "cpu" and header.get("host") == platform.node():
        return read_cpu_caches()
    return ()


def with_residency(points: Iterable[MeasuredPoint], levels: tuple[CacheLevel, ...],
                   threads: int | None = None) -> list[MeasuredPoint]:
    """The CPU points, each with its ``cache_level`` (kept where it was recorded when measured)."""
    from dataclasses import replace

    out = []
    for point in points:
        if point.cache_level is None and levels and point.device == "cpu" and point.working_set_bytes:
            point = replace(point, cache_level=residency(point.working_set_bytes, levels,
                                                         point.threads or threads))
        out.append(point)
    return out
