"""State files kept between runs (saved ceilings, the user's devices.toml, run files, settings).

A file that cannot be used is *set aside*: renamed ``<name>.bad`` (never deleted, so the user can
look at it), reported once through :func:`report` (path, line or key, what is wrong), and the
caller goes on with defaults. The report goes to the one reporter the front end installs (the CLI
prints a line on stderr, the window a status-bar message); reports made before a reporter exists
wait in :func:`take_pending`.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, TypeVar

import msgspec
from msgspec import Meta

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: saves are not locked there
    fcntl = None

# open_regular is re-exported: the run files (bench.results) are opened through here too
from .regular_files import (  # noqa: F401
    MAX_STATE_FILE_BYTES,
    UnusableStateFile,
    open_regular,
    regular_file_problem,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BAD_SUFFIX = ".bad"
STALE_TMP_SECONDS = 600
"""A save's temporary file older than this was left by a killed save (a save takes milliseconds)."""


def read_state_text(path: Path | str, max_bytes: int = MAX_STATE_FILE_BYTES) -> str:
    """A state file's text (UTF-8) through :func:`open_regular`; never reads more than ``max_bytes``
    (a file growing while it is read is cut there, and then fails to parse as what it should be)."""
    with open_regular(path, max_bytes) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnusableStateFile(path, f"grew over the {max_bytes:,} bytes a file of this kind may have")
    return data.decode("utf-8")


def state_file_problem(path: Path | str, max_bytes: int | None = MAX_STATE_FILE_BYTES) -> str | None:
    """For a file another library opens itself (Qt's settings file): what makes it unusable, from
    ``stat`` (following links), or None (usable, or absent)."""
    try:
        return regular_file_problem(os.stat(path), max_bytes)
    except OSError:
        return None


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder of ``path`` while the block runs: two processes reading,
    changing and writing a file there at once then take turns (without it one's entry was lost).
    The folder, not a lock file, so nothing is left beside the state files. Where ``flock`` is
    missing (Windows) or refused (some network file systems) the block runs unlocked."""
    folder = Path(path).parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def remove_stale_temporaries(path: Path, older_than_s: float = STALE_TMP_SECONDS) -> list[Path]:
    """Delete the temporaries (``.<name>.*.tmp``) a killed :func:`atomic_write_text` of ``path``
    left, those older than ``older_than_s`` (a save in progress is younger); returns them."""
    path = Path(path)
    removed = []
    now = time.time()
    try:
        candidates = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return removed
    for tmp in candidates:
        try:
            st = os.lstat(tmp)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > older_than_s:
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            continue
    return removed


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
    remove_stale_temporaries(path)
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


# ---------------------------------------------------------------------------------------------
# Records checked against declared types (msgspec), with messages that name the key

T = TypeVar("T")
FINITE_MAX = sys.float_info.max   # an upper bound that only inf (and nan) fail
NonNegative = Annotated[float, Meta(ge=0, le=FINITE_MAX, description="a number ≥ 0")]


class FieldError(ValueError):
    """A record whose ``key`` does not hold what its declared type says: ``problem`` is "must be
    <what the type says>, got <the value>" (or "missing")."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key} {'is ' if problem == 'missing' else ''}{problem}" if key else problem)
        self.key = key
        self.problem = problem


def checked(data: Any, cls: type[T], *, toml: bool = False) -> T:
    """``data`` (parsed JSON or TOML) as a ``cls`` (a msgspec Struct or a dataclass whose fields
    are annotated with ``Annotated[..., msgspec.Meta(...)]`` constraints); unknown keys ignored.
    Raises :class:`FieldError` naming the first key that does not fit. A field's words in the
    message are its ``Meta(description=...)``, else made from its type (in ``toml`` words: a
    table, and no null)."""
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        raise _field_error(data, cls, str(exc), _TOML_WORDS if toml else _JSON_WORDS) from None


_JSON_WORDS = ("an object", " or null")
_TOML_WORDS = ("a table", "")   # TOML has no null: an optional key is left out


def _field_error(data: Any, cls: type, message: str, words: tuple[str, str]) -> FieldError:
    import typing

    what, _at, path = message.partition(" - at ")
    missing = re.match(r"Object missing required field `(\w+)`", what)
    if missing:
        return FieldError(missing.group(1), "missing")
    field_match = re.search(r"\$\.(\w+)", path)
    if field_match is None or not isinstance(data, dict):   # the record itself
        return FieldError("", f"must be {words[0]}, got {shown(data)}")
    key = field_match.group(1)
    hint = typing.get_type_hints(cls, include_extras=True).get(key)
    value = data.get(key)
    if path.startswith("`key` in"):     # a key of a table that the type does not know
        key_type, _ = typing.get_args(_unwrap(hint))
        bad = next((k for k in value if not _fits(k, key_type)), None)
        return FieldError(key, f"has an unknown key {bad!r} (use {_describe(key_type, words)[7:]})")
    if path.endswith("[...]`") and isinstance(value, dict):   # one value of a table
        _, value_type = typing.get_args(_unwrap(hint))
        name, item = next(((k, v) for k, v in value.items() if not _fits(v, value_type)), ("?", None))
        return FieldError(f"{key}.{name}", f"must be {_describe(value_type, words)}, got {shown(item)}")
    return FieldError(key, f"must be {_describe(hint, words)}, got {shown(value)}")


def _fits(value: Any, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp)
    except msgspec.ValidationError:
        return False
    return True


def _unwrap(tp: Any) -> Any:
    """``tp`` without ``Annotated`` and without ``| None``."""
    import typing

    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1 else tp


def _describe(tp: Any, words: tuple[str, str]) -> str:
    """A declared type in words: its ``Meta(description=...)``, else made from the type."""
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a, words) for a in args if a is not type(None)) + (
            words[1] if type(None) in args else "")
    if origin is typing.Annotated:
        metas = [m for m in args[1:] if isinstance(m, msgspec.Meta)]
        described = next((m.description for m in metas if m.description), None)
        return described or _describe(args[0], words) + "".join(_bounds(m) for m in metas)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin is dict or tp is dict:
        return words[0]
    if origin in (list, tuple) or tp in (list, tuple):
        return "a list of strings" if args and args[0] is str else "a list"
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(tp, str(tp))


def _bounds(meta: Any) -> str:
    low = meta.gt if meta.gt is not None else meta.ge
    high = meta.lt if meta.lt is not None else meta.le
    if high is not None and high >= FINITE_MAX:
        high = None
    if low is not None and high is not None:
        return f" in {'(' if meta.gt is not None else '['}{low:g}, {high:g}{')' if meta.lt is not None else ']'}"
    if low is not None:
        return f" {'>' if meta.gt is not None else '≥'} {low:g}"
    if high is not None:
        return f" {'<' if meta.lt is not None else '≤'} {high:g}"
    return ""


def shown(value: Any) -> str:
    """A value for an error message, cut short (a 5,000-deep array is not printed whole)."""
    text = repr(value) if not isinstance(value, list) else "an array"
    return text if len(text) <= 40 else text[:37] + "..."
