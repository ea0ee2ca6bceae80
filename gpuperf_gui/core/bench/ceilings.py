"""Measured ceilings: the best matmul rate per dtype and the best bandwidth of a run.

Saved per device as JSON (``<results dir>/ceilings/<device_id>.json``), one entry per way of
measuring: the key is (device, ``threads``, ``method``), so the CPU measured with 15 threads and
with 16 (or timed another way) are two entries, never merged into one "CPU ceiling". ``method`` is
the timer family ("cpu-perf_counter", "cuda-events"); ``threads`` the torch CPU threads (None on a
GPU). :meth:`MeasuredCeilings.to_device` turns an entry into a roofline device.

Each entry holds the best measured *so far* with its key, not the last run: every run is merged
into its entry by :func:`update_saved_ceilings` (per dtype the best matmul rate, the best
bandwidth, the best busbw per collective), and each figure remembers the run and the time it came
from (``matmul_runs``/``matmul_measured_at``, ``bandwidth_run``/``bandwidth_measured_at``). A small
or stopped run therefore never lowers or drops a saved ceiling; :func:`reset_saved_ceilings`
forgets a device's entries (``gpuperf bench --reset-ceilings``). Where a device has several
entries, :func:`load_ceilings` gives the best one (:func:`preferred_entry`), which says how it
was measured.

Files are written atomically (temporary file, fsync, ``os.replace``) and validated when read: a
file with a wrong type or a bad value is set aside (``<device>.json.bad``) and reported once
(:mod:`gpuperf_gui.core.state_files`).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterable

from msgspec import Meta

from gpuperf_gui.core.bench.plans import MEMORY_KERNELS
from gpuperf_gui.core.hardware import Device, DeviceDatabase, load_database
from gpuperf_gui.core.paths import default_results_dir
from gpuperf_gui.core.state_files import (
    FINITE_MAX,
    FieldError,
    NonNegative,
    atomic_write_text,
    checked,
    locked,
    read_state_text,
    set_aside,
    shown,
)
from gpuperf_gui.core.units import format_si, json_safe

if TYPE_CHECKING:
    from gpuperf_gui.core.bench.points import MeasuredPoint

FILE_FORMAT = 2   # {"format": 2, "device_id", "entries": [...]}; format 1 was one entry, no key
COLLECTIVE_KERNELS = ("all_reduce", "all_gather", "reduce_scatter")


RATE_RANGE = (1.0, 1e21)
"""Measured rates a file may give (FLOP/s, bytes/s): 1/s to a zettaFLOP/s, far beyond any device. A
run file whose ceilings claimed 1e287 EFLOP/s (from points of 1e-300 s) was shown and kept."""
DeviceId = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9.-]*$",
                               description="a device id (lowercase letters, digits, dashes)")]
Rate = Annotated[float, Meta(ge=RATE_RANGE[0], le=RATE_RANGE[1],
                             description=f"a rate in {RATE_RANGE[0]:g}..{RATE_RANGE[1]:g} per second")]
Bandwidth = Annotated[float, Meta(ge=RATE_RANGE[0], le=RATE_RANGE[1],
                                  description=f"a number of bytes/s in {RATE_RANGE[0]:g}..{RATE_RANGE[1]:g}")]
UnixTime = Annotated[float, Meta(ge=0, le=FINITE_MAX, description="a Unix time (a number ≥ 0)")]
Count = Annotated[int, Meta(ge=0, description="a whole number ≥ 0")]


@dataclass(frozen=True)
class MeasuredCeilings:
    """Best measured rates of one device (SI units) and their fraction of the datasheet."""

    device_id: DeviceId                              # hardware database id ("h200", "cpu")
    device_name: str = ""                            # "NVIDIA H200", CPU model
    torch_device: str = ""                           # "cuda:0", "cpu"
    matmul_flops_per_s: dict[str, Rate] = field(default_factory=dict)    # dtype -> best FLOP/s
    matmul_labels: dict[str, str] = field(default_factory=dict)          # dtype -> best point
    bandwidth_bytes_per_s: Bandwidth | None = None
    bandwidth_label: str = ""
    bandwidth_beyond_cache: bool = True              # False: only in-cache points were measured
    flops_fraction_of_datasheet: dict[str, NonNegative] = field(default_factory=dict)
    bandwidth_fraction_of_datasheet: NonNegative | None = None
    collective_busbw_bytes_per_s: dict[str, Rate] = field(default_factory=dict)
    method: str = ""                                 # timer family: "cpu-perf_counter", "cuda-events"
    throttled_points: Count = 0
    unreliable_points: Count = 0                     # spread too wide (noise.py): never a ceiling
    complete: bool = True                            # False: the run was stopped early
    measured_at: UnixTime = 0.0                      # Unix time (saved file: of its newest entry)
    # Where each entry came from (run file name, "" when the run kept no file) and when (Unix time):
    matmul_runs: dict[str, str] = field(default_factory=dict)            # dtype -> run
    matmul_measured_at: dict[str, NonNegative] = field(default_factory=dict)   # dtype -> Unix time
    bandwidth_run: str = ""
    bandwidth_measured_at: UnixTime = 0.0
    collective_runs: dict[str, str] = field(default_factory=dict)        # op -> run
    threads: Annotated[int, Meta(gt=0, description="a positive whole number")] | None = None
    """torch CPU threads (None: a GPU, or unknown)"""

    @property
    def key(self) -> tuple[int | None, str]:
        """What must match for two measurements to be merged (with the device id)."""
        return self.threads, self.method

    def measured_with(self) -> str:
        """How these were measured, in words ("16 CPU threads, cpu-perf_counter"; "" unknown)."""
        parts = [f"{self.threads} CPU thread{'s' if self.threads != 1 else ''}"] if self.threads else []
        return ", ".join(parts + ([self.method] if self.method else []))

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> MeasuredCeilings:
        """Checked against the fields' declared types: a wrong type or value raises
        :class:`CeilingsFileError` (a ValueError) naming the key; unknown keys are ignored (files
        of newer versions)."""
        try:
            return checked(data, cls)
        except FieldError as exc:
            raise CeilingsFileError(exc.key, exc.problem if exc.key else f"an entry {exc.problem}") from None

    def to_device(self, database: DeviceDatabase) -> Device:
        """The device with these ceilings as its roofline (``DeviceDatabase.with_measured``)."""
        return database.with_measured(self.device_id, dict(self.matmul_flops_per_s),
                                      self.bandwidth_bytes_per_s, self.measured_with())

    def summary(self) -> str:
        """One line for a status bar or the terminal ("fp32 290 GFLOP/s · 21.6 GB/s (16 CPU threads,
        cpu-perf_counter)")."""
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
        noisy = (f"; {self.unreliable_points} unreliable point{'s' if self.unreliable_points != 1 else ''} "
                 "(spread too wide) left out" if self.unreliable_points else "")
        if not parts:
            return "no ceilings measured" + noisy
        how = self.measured_with()
        return " · ".join(parts) + (f" ({how})" if how else "") + noisy

    def sources(self, format_time: Callable[[float], str] | None = None) -> list[str]:
        """One line per entry: where (which point of which run) and when it was measured
        (``format_time(epoch_s)``: the GUI passes the locale's format; ISO-like by default)."""
        def when(stamp: float) -> str:
            if not stamp:
                return "?"
            return format_time(stamp) if format_time else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))

        lines = [f"measured with {self.measured_with()}"] if self.measured_with() else []
        for dtype, rate in self.matmul_flops_per_s.items():
            lines.append(f"{dtype} {format_si(rate, 'FLOP/s')}: {self.matmul_labels.get(dtype, '')}, run "
                         f"{self.matmul_runs.get(dtype) or '?'}, {when(self.matmul_measured_at.get(dtype, 0))}")
        if self.bandwidth_bytes_per_s:
            lines.append(f"bandwidth {format_si(self.bandwidth_bytes_per_s, 'B/s')}: {self.bandwidth_label}, "
                         f"run {self.bandwidth_run or '?'}, {when(self.bandwidth_measured_at)}")
        for op, rate in self.collective_busbw_bytes_per_s.items():
            lines.append(f"{op} busbw {format_si(rate, 'B/s')}: run {self.collective_runs.get(op) or '?'}")
        return lines


class CeilingsFileError(ValueError):
    """A saved ceilings entry with a wrong type or value (``key`` names the field)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key = key
        self.problem = problem


def timer_family(method: str) -> str:
    """The timer a point's method names, as the ceilings key uses it: "cuda-events+flush",
    "cuda-graph x40" and "cuda-events" are all CUDA-event timing ("cuda-events");
    "cpu-perf_counter threads=8" is "cpu-perf_counter"."""
    first = method.split(" ")[0] if method else ""
    first = first.removesuffix("+flush")
    return "cuda-events" if first == "cuda-graph" else first


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
    Points whose spread is too wide (:func:`.noise.is_reliable`) are left out of every ceiling and
    counted in ``unreliable_points``.
    """
    from gpuperf_gui.core.bench.noise import is_reliable

    every = list(points)
    points = [p for p in every if is_reliable(p)]
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
    used = [*matmul.values(), *pool] or points
    methods = sorted({timer_family(p.method) for p in used} - {""})
    threads = {p.threads for p in used if p.threads}
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
        unreliable_points=len(every) - len(points),
        complete=complete,
        measured_at=now,
        matmul_runs={d: run for d in matmul},
        matmul_measured_at={d: p.timestamp or now for d, p in matmul.items()},
        bandwidth_run=run if best_bw else "",
        bandwidth_measured_at=(best_bw.timestamp or now) if best_bw else 0.0,
        collective_runs={op: run for op in collectives},
        threads=max(threads) if threads else None,
    )
    return with_datasheet_fractions(ceilings, database)


def preferred_entry(entries: Iterable[MeasuredCeilings]) -> MeasuredCeilings | None:
    """The entry that stands for the device where it was measured several ways: the one with the
    highest matmul rate (any dtype), then the highest bandwidth, then the newest. Whole entries are
    compared, never mixed: what is shown is one way of measuring, and says which."""
    return max(entries, key=_rank, default=None)


def _rank(ceilings: MeasuredCeilings) -> tuple[float, float, float]:
    return (max(ceilings.matmul_flops_per_s.values(), default=0.0),
            ceilings.bandwidth_bytes_per_s or 0.0, ceilings.measured_at)


def merge_ceilings(saved: MeasuredCeilings | None, new: MeasuredCeilings,
                   database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """The best of both (the rule for a saved entry).

    With the same key (threads, method): per dtype the higher matmul rate; the higher bandwidth,
    except that a bandwidth measured beyond the cache always beats an in-cache one; per collective
    the higher busbw. Each kept figure keeps its label, run and time. Measured another way (another
    key): the better entry whole (:func:`preferred_entry`), never a mix. ``saved`` None (or another
    device's): ``new`` as it is.
    """
    if saved is None or saved.device_id != new.device_id:
        return new
    if saved.key != new.key:
        return preferred_entry([new, saved])
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
        method=new.method,
        throttled_points=max(saved.throttled_points, new.throttled_points),
        complete=saved.complete and new.complete,
        measured_at=max(saved.measured_at, new.measured_at),
        matmul_runs=runs,
        matmul_measured_at=times,
        bandwidth_run=bw.bandwidth_run,
        bandwidth_measured_at=bw.bandwidth_measured_at,
        collective_runs=collective_runs,
        threads=new.threads,
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
    """Fill the fractions of the datasheet figures (left empty where the database has none, as
    for the ``cpu``). The default database is the shipped one plus the user's file."""
    try:
        device = (database if database is not None else load_database()).get(ceilings.device_id)
    except KeyError:  # unknown device (UnknownDeviceError): fractions stay empty
        return ceilings
    flops_fraction: dict[str, float] = {}
    for dtype, rate in ceilings.matmul_flops_per_s.items():
        peak = device.dense_flops_per_s.get(dtype) if device.origin != "measured" else None
        if peak:
            flops_fraction[dtype] = rate / peak
    bandwidth = device.memory_bandwidth_bytes_per_s if device.origin != "measured" else None
    bw_fraction = (ceilings.bandwidth_bytes_per_s / bandwidth
                   if bandwidth and ceilings.bandwidth_bytes_per_s else None)
    return replace(ceilings, flops_fraction_of_datasheet=flops_fraction,
                   bandwidth_fraction_of_datasheet=bw_fraction)


# ---------------------------------------------------------------------------------------------
# Saved entries: one file per device


def ceilings_path(device_id: str, results_dir: Path | None = None) -> Path:
    return (results_dir or default_results_dir()) / "ceilings" / f"{device_id}.json"


def load_ceiling_entries(device_id: str, results_dir: Path | None = None) -> list[MeasuredCeilings]:
    """Every saved entry of a device (one per threads/method), [] when none. A file that cannot be
    read as saved ceilings is set aside (``<device>.json.bad``) and reported once."""
    path = ceilings_path(device_id, results_dir)
    try:
        text = read_state_text(path)  # a FIFO or /dev/zero here is refused, not read
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        set_aside(path, "", f"cannot be read ({getattr(exc, 'strerror', None) or exc})")
        return []
    try:
        return _parse_entries(text, device_id)
    except CeilingsFileError as exc:
        set_aside(path, f"key {exc.key}" if exc.key else "", exc.problem)
    except (ValueError, RecursionError) as exc:  # not JSON (JSONDecodeError names line and column)
        set_aside(path, "", f"not a saved-ceilings file (invalid JSON: {exc})")
    return []


def _parse_entries(text: str, device_id: str) -> list[MeasuredCeilings]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise CeilingsFileError("", f"not a saved-ceilings file (a JSON {type(data).__name__}, "
                                    "not an object)")
    raw = data.get("entries", [data]) if "entries" in data or "device_id" in data else None
    if raw is None:
        raise CeilingsFileError("", "not a saved-ceilings file (no device_id or entries)")
    if not isinstance(raw, list):
        raise CeilingsFileError("entries", f"must be a list, got {shown(raw)}")
    entries = []
    for index, item in enumerate(raw):
        try:
            entry = MeasuredCeilings.from_json_dict(item)
        except CeilingsFileError as exc:
            where = f"entries[{index}].{exc.key}" if "entries" in data else exc.key
            raise CeilingsFileError(where, exc.problem) from None
        if entry.device_id != device_id:
            raise CeilingsFileError("device_id", f"{entry.device_id!r} in the file of {device_id!r}")
        entries.append(entry)
    return entries


def _write_entries(device_id: str, entries: list[MeasuredCeilings], results_dir: Path | None) -> Path:
    path = ceilings_path(device_id, results_dir)
    payload = {"format": FILE_FORMAT, "device_id": device_id,
               "entries": [json_safe(entry.to_json_dict()) for entry in entries]}
    atomic_write_text(path, json.dumps(payload, indent=2, allow_nan=False))
    return path


def save_ceilings(ceilings: MeasuredCeilings, results_dir: Path | None = None) -> Path:
    """Write exactly these ceilings as their device's entry for their key (threads, method),
    replacing that entry and keeping the others; returns the path. Runs use
    :func:`update_saved_ceilings`, which merges instead. The read, change and write hold the
    file's lock (:func:`.state_files.locked`): two saves at once both keep their entry."""
    with locked(ceilings_path(ceilings.device_id, results_dir)):
        return _save_unlocked(ceilings, results_dir)


def _save_unlocked(ceilings: MeasuredCeilings, results_dir: Path | None) -> Path:
    entries = load_ceiling_entries(ceilings.device_id, results_dir)
    kept = [ceilings if entry.key == ceilings.key else entry for entry in entries]
    if ceilings not in kept:
        kept.append(ceilings)
    return _write_entries(ceilings.device_id, kept, results_dir)


def update_saved_ceilings(ceilings: MeasuredCeilings, results_dir: Path | None = None,
                          database: DeviceDatabase | None = None) -> MeasuredCeilings:
    """Merge a run's ceilings into the saved entry with the same key (:func:`merge_ceilings`),
    write the result and return it. A run that measured nothing changes nothing (and returns the
    saved entry with its key, else the device's preferred one). Under the file's lock, as
    :func:`save_ceilings`."""
    with locked(ceilings_path(ceilings.device_id, results_dir)):
        entries = load_ceiling_entries(ceilings.device_id, results_dir)
        saved = next((entry for entry in entries if entry.key == ceilings.key), None)
        if not (ceilings.matmul_flops_per_s or ceilings.bandwidth_bytes_per_s
                or ceilings.collective_busbw_bytes_per_s):
            return saved or preferred_entry(entries) or ceilings
        merged = merge_ceilings(saved, ceilings, database)
        _save_unlocked(merged, results_dir)
        return merged


def reset_saved_ceilings(device_id: str, results_dir: Path | None = None) -> bool:
    """Forget a device's saved ceilings (every entry); True when there were some."""
    path = ceilings_path(device_id, results_dir)
    try:
        with locked(path):
            path.unlink()
    except FileNotFoundError:
        return False
    return True


def load_ceilings(device_id: str, results_dir: Path | None = None, *,
                  key: tuple[int | None, str] | None = None) -> MeasuredCeilings | None:
    """The saved entry of a device measured with ``key`` (threads, method); without a key the
    device's preferred entry (:func:`preferred_entry`). None when there is none (a bad file is
    set aside and reported)."""
    entries = load_ceiling_entries(device_id, results_dir)
    if key is not None:
        return next((entry for entry in entries if entry.key == key), None)
    return preferred_entry(entries)


def list_saved_ceilings(results_dir: Path | None = None) -> list[MeasuredCeilings]:
    """Every device's preferred saved entry, by device id (bad files set aside and reported)."""
    folder = ceilings_path("x", results_dir).parent
    if not folder.is_dir():
        return []
    found = (load_ceilings(path.stem, results_dir) for path in sorted(folder.glob("*.json")))
    return [ceilings for ceilings in found if ceilings is not None]
