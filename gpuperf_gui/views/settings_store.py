"""The only place that touches QSettings (STYLE.md R21).

Every value is checked as it is read: one of the wrong type (a ``@Rect`` where the window geometry
belongs, a number where the recent files belong) is set aside and reported once
(:mod:`gpuperf_gui.core.state_files`): the settings file is copied to ``<file>.bad`` the first time
(so nothing is lost), the key is removed, and the caller gets the default.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings

from gpuperf_gui.core.state_files import SetAside, bad_name, report, set_aside, state_file_problem

MAX_RECENT = 10
_backups: dict[str, Path | None] = {}   # settings file -> its .bad copy made this session


_PROBE_APP = "gpuperf-settings-probe"


def _settings_file() -> Path:
    """Where ``QSettings()`` keeps this application's values, found without opening that file: a
    QSettings of another (absent) application name in the same folder and format tells."""
    probe = QSettings(QSettings.defaultFormat(), QSettings.Scope.UserScope,
                      QCoreApplication.organizationName(), _PROBE_APP)
    path = Path(probe.fileName())
    return path.with_name(path.name.replace(_PROBE_APP, QCoreApplication.applicationName(), 1))


def _settings() -> QSettings:
    # Qt opens its settings file blocking, and reads all of it: a FIFO there hung the window at
    # start, /dev/zero filled the memory. Such a file is set aside before Qt sees it.
    path = _settings_file()
    problem = state_file_problem(path)
    if problem is not None:
        set_aside(path, "", problem)
    settings = QSettings()
    if settings.status() == QSettings.Status.FormatError:  # the file itself cannot be parsed
        path = Path(settings.fileName())
        del settings
        set_aside(path, "", "not a settings file Qt can read")
        settings = QSettings()
    return settings


def _set_aside_key(settings: QSettings, key: str, problem: str) -> None:
    """Keep a copy of the settings file (once), remove ``key`` and report it."""
    path = Path(settings.fileName())
    if str(path) not in _backups:
        backup: Path | None = None
        if path.is_file():
            backup = bad_name(path)
            try:
                shutil.copy2(path, backup)
            except OSError:
                backup = None
        _backups[str(path)] = backup
    settings.remove(key)
    settings.sync()
    report(SetAside(path, f"key {key}", problem, _backups[str(path)]))


def _checked(settings: QSettings, key: str, ok: Callable[[Any], bool], what: str) -> Any:
    """The value of ``key`` if ``ok`` accepts it; None when absent or set aside."""
    value = settings.value(key)
    if value is None or ok(value):
        return value
    _set_aside_key(settings, key, f"must be {what}, got {type(value).__name__} {str(value)[:40]!r}")
    return None


def _is_bytes(value: Any) -> bool:
    return isinstance(value, QByteArray)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def save_window(geometry: QByteArray, state: QByteArray) -> None:
    s = _settings()
    s.setValue("window/geometry", geometry)
    s.setValue("window/state", state)


def load_window() -> tuple[QByteArray | None, QByteArray | None]:
    s = _settings()
    return (_checked(s, "window/geometry", _is_bytes, "the saved window geometry (bytes)"),
            _checked(s, "window/state", _is_bytes, "the saved window state (bytes)"))


def save_selection(device_id: str, precision: str, tab: str) -> None:
    s = _settings()
    s.setValue("selection/device", device_id)
    s.setValue("selection/precision", precision)
    s.setValue("selection/tab", tab)


def load_selection() -> tuple[str | None, str | None, str | None]:
    s = _settings()
    return tuple(_checked(s, f"selection/{key}", _is_text, "text")  # type: ignore[return-value]
                 for key in ("device", "precision", "tab"))


def _is_file_list(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def recent_files() -> list[str]:
    value = _checked(_settings(), "recent/files", _is_file_list, "a list of file paths")
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)[:MAX_RECENT]


def add_recent_file(path: str) -> list[str]:
    files = [path] + [f for f in recent_files() if f != path]
    files = files[:MAX_RECENT]
    _settings().setValue("recent/files", files)
    return files


def _is_budget(value: Any) -> bool:
    from gpuperf_gui.core.trace.ingest.budget import MAX_MEMORY_BUDGET_BYTES, MIN_MEMORY_BUDGET_BYTES

    try:
        number = int(value)  # QSettings' ini format gives numbers back as text
    except (TypeError, ValueError):
        return False
    return MIN_MEMORY_BUDGET_BYTES <= number <= MAX_MEMORY_BUDGET_BYTES


def trace_memory_budget_bytes() -> int | None:
    """The saved memory budget of trace loading (bytes), or None for the default."""
    value = _checked(_settings(), "trace/memory_budget_bytes", _is_budget, "a memory budget in bytes (16 MB..1 PB)")
    return None if value is None else int(value)


def save_trace_memory_budget(limit_bytes: int | None) -> None:
    s = _settings()
    if limit_bytes is None:
        s.remove("trace/memory_budget_bytes")
    else:
        s.setValue("trace/memory_budget_bytes", int(limit_bytes))


def last_folder(kind: str) -> str:
    """The folder a file dialog of ``kind`` ("traces", "scripts", "exports") last used, if it still
    exists; "" otherwise (the dialog's own default)."""
    value = _checked(_settings(), f"folders/{kind}", _is_text, "a folder path")
    return value if value and Path(value).is_dir() else ""


def remember_folder(kind: str, folder: Path | str) -> None:
    _settings().setValue(f"folders/{kind}", str(folder))
