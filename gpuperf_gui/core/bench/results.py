"""Result files: one JSON-lines file per run, appended to as points are measured.

Each line is one record with a ``"type"``: ``"run"`` (header: device, suite, versions),
``"point"`` (a :class:`MeasuredPoint`), ``"message"`` (a :class:`BenchMessage`) and, at the end,
``"ceilings"``. Every line is flushed and fsync'ed when written, so a crash or a killed process
loses at most the point in progress; :func:`read_run` skips a torn last line.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import msgspec

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
from gpuperf_gui.core.bench.points import DESIGN_KEYS, BenchMessage, MeasuredPoint
from gpuperf_gui.core.paths import default_results_dir
from gpuperf_gui.core.state_files import NonNegative, checked, open_regular, set_aside
from gpuperf_gui.core.units import json_safe

RUN_NAME = re.compile(r"\d{8}-\d{6}-[A-Za-z0-9]+(-[0-9a-f]+)?\.jsonl")  # what new_run_path names (and named)
MAX_RUN_FILE_BYTES = 1 << 30
"""Largest run file read (a point is ~400 bytes: millions of points); a FIFO or device never is."""


def new_run_path(device: str, results_dir: Path | None = None) -> Path:
    """A fresh file name for a run: ``<dir>/runs/20260101-120000-cuda0-3fa9c2.jsonl``, the last part
    random: two runs started in the same second (two windows, a window and the CLI) once both
    found ``...-cuda0.jsonl`` free and appended to it, read back as one run with both runs' points."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch for ch in device if ch.isalnum()) or "device"
    folder = (results_dir or default_results_dir()) / "runs"
    while True:
        path = folder / f"{stamp}-{safe}-{secrets.token_hex(3)}.jsonl"
        if not os.path.lexists(path):
            return path


class ResultsWriter:
    """Appends records to a JSON-lines file, one flushed and fsync'ed line each."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, record_type: str, data: dict[str, Any]) -> None:
        line = json.dumps({"type": record_type, **data}, allow_nan=False, default=str)
        self._file.write(line + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def write_header(self, header: dict[str, Any]) -> None:
        self.write("run", header)

    def write_point(self, point: MeasuredPoint) -> None:
        self.write("point", json_safe(point.to_json_dict()))

    def write_message(self, message: BenchMessage) -> None:
        self.write("message", message.to_json_dict())

    def write_ceilings(self, ceilings: MeasuredCeilings) -> None:
        self.write("ceilings", json_safe(ceilings.to_json_dict()))

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class BenchRun:
    """A run read back from its file."""

    path: Path | None
    header: dict[str, Any] = field(default_factory=dict)
    points: list[MeasuredPoint] = field(default_factory=list)
    messages: list[BenchMessage] = field(default_factory=list)
    ceilings: MeasuredCeilings | None = None
    torn_lines: int = 0   # unreadable lines (a run killed mid-write leaves at most one)
    problems: list[str] = field(default_factory=list)   # "line N: what is wrong", the first few

    @property
    def name(self) -> str:
        return self.path.stem if self.path else "run"

    def to_json_dict(self) -> dict[str, Any]:
        """The `gpuperf bench --json` shape: points and measured ceilings."""
        return {
            "run": self.header,
            "points": [json_safe(p.to_json_dict()) for p in self.points],
            "ceilings": json_safe(self.ceilings.to_json_dict()) if self.ceilings else None,
            "messages": [m.to_json_dict() for m in self.messages if m.kind != "started"],
            "results_file": str(self.path) if self.path else None,
        }


class RunFileError(ValueError):
    """A file that cannot be read as a run: missing, unreadable, or with no record in it."""


MAX_PROBLEMS = 5  # lines described in BenchRun.problems (the rest are only counted)


def read_run(path: Path, *, set_aside_bad: bool | None = None) -> BenchRun:
    """Read a run file; a torn, foreign or invalid line (a wrong type, a negative time) is counted,
    described (``problems``: line and what) and skipped.

    Raises :class:`RunFileError` (a ValueError, with a one-line message) when the file cannot be
    opened or read, or when not one line of it is a run record (a binary or gzip file). Such a
    file is also set aside (``<name>.bad``, reported once) when ``set_aside_bad`` is true; None
    means "when the app named it" (a ``runs/`` file named like :func:`new_run_path`'s), never a
    file the user picked elsewhere."""
    path = Path(path)
    run = BenchRun(path=path)
    try:  # a FIFO, a folder or /dev/zero is refused here, never read (state_files.open_regular)
        with io.TextIOWrapper(open_regular(path, MAX_RUN_FILE_BYTES), encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    _read_record(run, line, number)
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if run.torn_lines and not (run.header or run.points or run.messages or run.ceilings):
        message = (f"{path.name} is not a benchmark run ({run.torn_lines} unreadable line(s), no record; "
                   f"{run.problems[0]})")
        if set_aside_bad or (set_aside_bad is None and _named_by_us(path)):
            moved = set_aside(path, run.problems[0].split(":")[0], "not a benchmark run").moved_to
            message += f"; set aside as {moved.name}" if moved else ""
        raise RunFileError(message)
    return run


def _named_by_us(path: Path) -> bool:
    return path.parent.name == "runs" and RUN_NAME.fullmatch(path.name) is not None


MIN_POINT_SECONDS = 1e-12
"""Shortest time a point may claim (a picosecond, as `gpuperf roofline --seconds`): a run file with
``seconds`` 1e-300 gave rates of 1e300+ FLOP/s (or inf) that broke the Benchmarks tab's plots."""


class PointRecord(msgspec.Struct):
    """What a point line must hold to be a :class:`MeasuredPoint` (its other keys are read as they
    are: ``MeasuredPoint.from_json_dict``)."""

    kernel: str
    dtype: str
    method: str
    flops: NonNegative
    bytes: NonNegative
    seconds: NonNegative
    iqr_low_s: NonNegative
    iqr_high_s: NonNegative
    size: NonNegative
    samples: NonNegative
    device: str = ""
    device_id: str = ""


def _check_point(record: dict[str, Any]) -> None:
    """Raise ValueError naming the key when a point record cannot be a measured point."""
    point = checked(record, PointRecord)
    if point.seconds < MIN_POINT_SECONDS:
        raise ValueError(f"seconds must be at least {MIN_POINT_SECONDS:g} s, got {record['seconds']!r:.40}")


def _read_record(run: BenchRun, line: str, number: int = 0) -> None:
    """Add one line's record to ``run`` (a line that is not a valid record counts as torn)."""
    try:
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"a JSON {type(record).__name__}, not a record")
        record_type = record.pop("type", None)
        if record_type == "run":
            run.header = record
        elif record_type == "point":
            _check_point(record)
            run.points.append(MeasuredPoint.from_json_dict(record))
        elif record_type == "message":
            if not isinstance(record.get("kind"), str) or not isinstance(record.get("text"), str):
                raise ValueError("a message needs kind and text strings")
            run.messages.append(BenchMessage.from_json_dict(record))
        elif record_type == "ceilings":
            run.ceilings = MeasuredCeilings.from_json_dict(record)
        elif not isinstance(record_type, str):  # another string: a newer version's record, skipped
            raise ValueError("a record without a type")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        run.torn_lines += 1
        if len(run.problems) < MAX_PROBLEMS:
            reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            run.problems.append(f"line {number}: {reason}")


def list_runs(results_dir: Path | None = None) -> list[Path]:
    """Run files, newest first."""
    folder = (results_dir or default_results_dir()) / "runs"
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*.jsonl"), key=_mtime, reverse=True)


def _mtime(path: Path) -> float:
    """A run file's time, 0 for a dangling link (it is then refused, with a note, when read)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


CSV_COLUMNS = (*DESIGN_KEYS, "method", "iqr_low_s", "iqr_high_s", "samples", "device",
               "working_set_bytes", "beyond_cache", "l2_flushed", "fma_per_element", "counted_flops",
               "threads", "sm_clock_hz", "power_w", "temperature_c", "throttled", "launch_bound",
               "world_size", "busbw_bytes_per_s", "cache_level")


def export_csv(points: Iterable[MeasuredPoint], path: Path) -> None:
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CSV_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        for point in points:
            writer.writerow(point.to_json_dict())


def export_json(run: BenchRun, path: Path) -> None:
    Path(path).write_text(json.dumps(run.to_json_dict(), indent=2), encoding="utf-8")
