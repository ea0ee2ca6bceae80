"""Result files: one JSON-lines file per run, appended to as points are measured.

Each line is one record with a ``"type"``: ``"run"`` (header: device, suite, versions),
``"point"`` (a :class:`MeasuredPoint`), ``"message"`` (a :class:`BenchMessage`) and, at the end,
``"ceilings"``. Every line is flushed and fsync'ed when written, so a crash or a killed process
loses at most the point in progress; :func:`read_run` skips a torn last line.
"""
from __future__ import annotations

import csv
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
from gpuperf_gui.core.bench.points import DESIGN_KEYS, BenchMessage, MeasuredPoint
from gpuperf_gui.core.units import json_safe

ENV_DATA_DIR = "GPUPERF_DATA_DIR"


def user_data_dir() -> Path:
    """Per-user data folder: $GPUPERF_DATA_DIR, else the platform's usual place."""
    override = os.environ.get(ENV_DATA_DIR)
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "gpuperf"


def default_results_dir() -> Path:
    """Where runs and measured ceilings are kept (``<user data dir>/bench``)."""
    return user_data_dir() / "bench"


def new_run_path(device: str, results_dir: Path | None = None) -> Path:
    """A fresh file name for a run: ``<dir>/runs/20260101-120000-cuda0.jsonl``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch for ch in device if ch.isalnum()) or "device"
    folder = (results_dir or default_results_dir()) / "runs"
    path = folder / f"{stamp}-{safe}.jsonl"
    counter = 1
    while path.exists():
        counter += 1
        path = folder / f"{stamp}-{safe}-{counter}.jsonl"
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


def read_run(path: Path) -> BenchRun:
    """Read a run file; a torn, foreign or undecodable line is counted and skipped.

    Raises :class:`RunFileError` (a ValueError, with a one-line message) when the file cannot be
    opened or read, or when not one line of it is a run record (a binary or gzip file)."""
    run = BenchRun(path=Path(path))
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    _read_record(run, line)
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if run.torn_lines and not (run.header or run.points or run.messages or run.ceilings):
        raise RunFileError(f"{Path(path).name} is not a benchmark run ({run.torn_lines} unreadable "
                           "line(s), no record)")
    return run


def _read_record(run: BenchRun, line: str) -> None:
    """Add one line's record to ``run`` (a line that is not one counts as torn)."""
    try:
        record = json.loads(line)
        record_type = record.pop("type")
        if record_type == "run":
            run.header = record
        elif record_type == "point":
            run.points.append(MeasuredPoint.from_json_dict(record))
        elif record_type == "message":
            run.messages.append(BenchMessage.from_json_dict(record))
        elif record_type == "ceilings":
            run.ceilings = MeasuredCeilings.from_json_dict(record)
    except (ValueError, KeyError, TypeError, AttributeError):  # AttributeError: a line that is not an object
        run.torn_lines += 1


def list_runs(results_dir: Path | None = None) -> list[Path]:
    """Run files, newest first."""
    folder = (results_dir or default_results_dir()) / "runs"
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)


CSV_COLUMNS = (*DESIGN_KEYS, "method", "iqr_low_s", "iqr_high_s", "samples", "device",
               "working_set_bytes", "beyond_cache", "l2_flushed", "fma_per_element", "counted_flops",
               "threads", "sm_clock_hz", "power_w", "temperature_c", "throttled", "launch_bound",
               "world_size", "busbw_bytes_per_s")


def export_csv(points: Iterable[MeasuredPoint], path: Path) -> None:
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CSV_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        for point in points:
            writer.writerow(point.to_json_dict())


def export_json(run: BenchRun, path: Path) -> None:
    Path(path).write_text(json.dumps(run.to_json_dict(), indent=2), encoding="utf-8")
