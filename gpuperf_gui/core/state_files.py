"""State files kept between runs (saved ceilings, the user's devices.toml, run files, settings).

A file that cannot be used is *set aside*: renamed ``<name>.bad`` (never deleted, so the user can
look at it), reported once through :func:`report` (path, line or key, what is wrong), and the
caller goes on with defaults. The report goes to the one reporter the front end installs (the CLI
prints a line on stderr, the window a status-bar message); reports made before a reporter exists
wait in :func:`take_pending`.
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BAD_SUFFIX = ".bad"


@dataclass(frozen=True)
class SetAside:
    """One state file (or entry) that could not be used."""

    path: Path
    where: str                  # "line 4", "key matmul_flops_per_s", "" for the whole file
    problem: str                # what is wrong, in words
    moved_to: Path | None       # the ``.bad`` file; None when it could not be renamed (or is a setting)

    def message(self) -> str:
        place = f", {self.where}" if self.where else ""
        if self.moved_to is not None:
            fate = f"set aside as {self.moved_to.name}"
        else:
            fate = "ignored"
        return f"{self.path}{place}: {self.problem}; {fate}, using defaults"


Reporter = Callable[[SetAside], None]
_reporter: Reporter | None = None
_pending: list[SetAside] = []


def set_reporter(reporter: Reporter | None) -> Reporter | None:
    """Install the one reporter (None: keep reports pending); returns the previous one."""
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


def report(item: SetAside) -> None:
    """Hand ``item`` to the reporter, or keep it until :func:`take_pending`."""
    if _reporter is not None:
        _reporter(item)
    else:
        _pending.append(item)


def take_pending() -> list[SetAside]:
    """Reports made while no reporter was installed (each returned once)."""
    items = list(_pending)
    _pending.clear()
    return items


def bad_name(path: Path) -> Path:
    """A free ``<name>.bad`` (``<name>.bad.2``, ... when set aside before)."""
    candidate = path.with_name(path.name + BAD_SUFFIX)
    counter = 1
    while candidate.exists():
        counter += 1
        candidate = path.with_name(f"{path.name}{BAD_SUFFIX}.{counter}")
    return candidate


def set_aside(path: Path, where: str, problem: str) -> SetAside:
    """Rename ``path`` to ``<name>.bad`` and report it once."""
    path = Path(path)
    target: Path | None = bad_name(path)
    try:
        os.replace(path, target)
    except OSError:
        target = None  # read-only folder: reported (again next time), still ignored
    item = SetAside(path, where, problem, target)
    report(item)
    return item


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` holds either the old or the whole new content: a temporary
    file in the same folder, flushed and fsync'ed, then ``os.replace`` (and the folder fsync'ed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    if os.name != "posix":  # pragma: no cover - Windows cannot open a folder
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` whose every failure is a ``ValueError`` (``TOMLDecodeError`` is one; a
    deeply nested array would otherwise raise ``RecursionError``)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ValueError("arrays or tables nested too deeply to read") from None
