"""Measured ceilings: the best matmul rate per dtype and the best bandwidth of a run.

Saved per device as JSON (``<results dir>/ceilings/<device_id>.json``) and turned into a roofline
device by :meth:`MeasuredCeilings.to_device` (``DeviceDatabase.with_measured``).

The saved file holds the best measured *so far* on this machine, not the last run: every run is
merged into it by :func:`update_saved_ceilings` (per dtype the best matmul rate, the best
bandwidth, the best busbw per collective), and each entry remembers the run and the time it came
from (``matmul_runs``/``matmul_measured_at``, ``bandwidth_run``/``bandwidth_measured_at``). A small
or stopped run therefore never lowers or drops a saved ceiling; :func:`reset_saved_ceilings`
forgets them (``gpuperf bench --reset-ceilings``).
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

from gpuperf_gui.core.bench.plans import MEMORY_KERNELS

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
    measured_at: float = 0.0                         # Unix time (saved file: of its newest entry)
    # Where each entry came from (run file name, "" when the run kept no file) and when (Unix time):
    matmul_runs: dict[str, str] = field(default_factory=dict)            # dtype -> run
    matmul_measured_at: dict[str, float] = field(default_factory=dict)   # dtype -> Unix time
    bandwidth_run: str = ""
    bandwidth_measured_at: float = 0.0
    collective_runs: dict[str, str] = field(default_factory=dict)        # op -> run

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
        """One line for a status bar or the terminal ("fp32 290 GFLOP/s · 21.6 GB/s")."""
        from gpuperf_gui.core.units import format_si

        parts = []
        for dtype, rate in self.matmul_flops_per_s.items():
            fraction = self.flops_fraction_of_datasheet.get(dtype)
            share = f" ({fraction:.0%})" if fraction else ""
            parts.append(f"{dtype} {format_si(rate, 'FLOP/s')}{share}")
        if self.bandwidth_bytes_per_s:
            share = (f" ({self.bandwidth_fraction_of_datasheet:.0%})"
                     if self.bandwidth_fraction_of_datasheet else "")
            cache = "" if self.bandwidth_beyond_cache else " in cache"
            parts.append(f"{format_si(self.bandwidth_bytes_per_s, 'B/s')}{cache}{share}")
        for op, rate in self.collective_busbw_bytes_per_s.items():
            parts.append(f"{op} busbw {format_si(rate, 'B/s')}")
        return " · ".join(parts) if parts else "no ceilings measured"

    def sources(self) -> list[str]:
        """One line per entry: where (which point of which run) and when it was measured."""
        def when(stamp: float) -> str:
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "?"

        from gpuperf_gui.core.units import format_si

        lines = []
        for dtype, rate in self.matmul_flops_per_s.items():
            lines.append(f"{dtype} {format_si(rate, 'FLOP/s')}: {self.matmul_labels.get(dtype, '')}, run "
                         f"{self.matmul_runs.get(dtype) or '?'}, {when(self.matmul_measured_at.get(dtype, 0))}")
        if self.bandwidth_bytes_per_s:
            lines.append(f"bandwidth {format_si(self.bandwidth_bytes_per_s, 'B/s')}: {self.bandwidth_label}, "
                         f"run {self.bandwidth_run or '?'}, {when(self.bandwidth_measured_at)}")
        for op, rate in self.collective_busbw_bytes_per_s.items():
            lines.append(f"{op} busbw {format_si(rate, 'B/s')}: run {self.collective_runs.get(op) or '?'}")
        return lines


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
    run: str = "",
) -> MeasuredCeilings:
    """Best rates over ``points``; fractions of the datasheet when the database knows the device.

    ``run`` (the run file's name) is recorded as the origin of every entry, with the time its
    point was measured.

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
    now = time.time()
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
        measured_at=now,
        matmul_runs={d: run for d in matmul},
        matmul_measured_at={d: p.timestamp or now for d, p in matmul.items()},
        bandwidth_run=run if best_bw else "",
        bandwidth_measured_at=(best_bw.timestamp or now) if best_bw else 0.0,
        collective_runs={op: run for op in collectives},
    )
    return with_datasheet_fractions(ceilings, database)


def merge_ceilings(saved: MeasuredCeilings | None, new: MeasuredCeilings,
                   database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """The best of both, entry by entry (the rule for the per-device file).

    Per dtype the higher matmul rate; the higher bandwidth, except that a bandwidth measured beyond
    the cache always beats an in-cache one; per collective the higher busbw. Each kept entry keeps
    its label, run and time. ``saved`` None (or another device's): ``new`` as it is.
    """
    if saved is None or saved.device_id != new.device_id:
        return new
    matmul = dict(saved.matmul_flops_per_s)
    labels, runs = dict(saved.matmul_labels), dict(saved.matmul_runs)
    times = dict(saved.matmul_measured_at)
    for dtype, rate in new.matmul_flops_per_s.items():
        if rate > matmul.get(dtype, 0.0):
            matmul[dtype] = rate
            labels[dtype] = new.matmul_labels.get(dtype, "")
            runs[dtype] = new.matmul_runs.get(dtype, "")
            times[dtype] = new.matmul_measured_at.get(dtype, new.measured_at)
    take_new_bw = _better_bandwidth(saved, new)
    bw = new if take_new_bw else saved
    collectives = dict(saved.collective_busbw_bytes_per_s)
    collective_runs = dict(saved.collective_runs)
    for op, rate in new.collective_busbw_bytes_per_s.items():
        if rate > collectives.get(op, 0.0):
            collectives[op] = rate
            collective_runs[op] = new.collective_runs.get(op, "")
    methods = sorted({m.strip() for c in (saved, new) for m in c.method.split(",") if m.strip()})
    merged = MeasuredCeilings(
        device_id=new.device_id,
        device_name=new.device_name or saved.device_name,
        torch_device=new.torch_device or saved.torch_device,
        matmul_flops_per_s=matmul,
        matmul_labels=labels,
        bandwidth_bytes_per_s=bw.bandwidth_bytes_per_s,
        bandwidth_label=bw.bandwidth_label,
        bandwidth_beyond_cache=bw.bandwidth_beyond_cache,
        collective_busbw_bytes_per_s=collectives,
        method=", ".join(methods),
        throttled_points=max(saved.throttled_points, new.throttled_points),
        complete=saved.complete and new.complete,
        measured_at=max(saved.measured_at, new.measured_at),
        matmul_runs=runs,
        matmul_measured_at=times,
        bandwidth_run=bw.bandwidth_run,
        bandwidth_measured_at=bw.bandwidth_measured_at,
        collective_runs=collective_runs,
    )
    return with_datasheet_fractions(merged, database)


def _better_bandwidth(saved: MeasuredCeilings, new: MeasuredCeilings) -> bool:
    """True when ``new``'s bandwidth should replace ``saved``'s."""
    if not new.bandwidth_bytes_per_s:
        return False
    if not saved.bandwidth_bytes_per_s:
        return True
    if new.bandwidth_beyond_cache != saved.bandwidth_beyond_cache:
        return new.bandwidth_beyond_cache  # DRAM/HBM bandwidth beats any in-cache figure
    return new.bandwidth_bytes_per_s > saved.bandwidth_bytes_per_s


def with_datasheet_fractions(ceilings: MeasuredCeilings,
                             database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """Fill the fractions of the datasheet figures (left empty where the database has none).

    The default database leaves out the saved measurements (``measured=False``): the ``cpu``
    entry takes them as its ceilings, and a fraction of those is not a fraction of a datasheet."""
    try:
        if database is None:
            from gpuperf_gui.core.hardware import load_database

            database = load_database(measured=False)
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
    """Write exactly these ceilings for their device (replacing the file); returns the path.
    Runs use :func:`update_saved_ceilings`, which merges instead."""
    path = ceilings_path(ceilings.device_id, results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(ceilings.to_json_dict(), indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def update_saved_ceilings(ceilings: MeasuredCeilings, results_dir: Path | None = None,
                          database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """Merge a run's ceilings into its device's saved ones (:func:`merge_ceilings`), write the
    result and return it. A run that measured nothing changes nothing."""
    saved = load_ceilings(ceilings.device_id, results_dir)
    if not (ceilings.matmul_flops_per_s or ceilings.bandwidth_bytes_per_s
            or ceilings.collective_busbw_bytes_per_s):
        return saved if saved is not None else ceilings
    merged = merge_ceilings(saved, ceilings, database)
    save_ceilings(merged, results_dir)
    return merged


def reset_saved_ceilings(device_id: str, results_dir: Path | None = None) -> bool:
    """Forget a device's saved ceilings; True when there were some."""
    try:
        ceilings_path(device_id, results_dir).unlink()
    except FileNotFoundError:
        return False
    return True


def load_ceilings(device_id: str, results_dir: Path | None = None) -> MeasuredCeilings | None:
    """The saved ceilings of a device, or None when none were measured (or the file is unreadable)."""
    path = ceilings_path(device_id, results_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return MeasuredCeilings.from_json_dict(data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def list_saved_ceilings(results_dir: Path | None = None) -> list[MeasuredCeilings]:
    """Every device's saved ceilings (unreadable files skipped)."""
    folder = ceilings_path("x", results_dir).parent
    if not folder.is_dir():
        return []
    found = (load_ceilings(path.stem, results_dir) for path in sorted(folder.glob("*.json")))
    return [ceilings for ceilings in found if ceilings is not None]

