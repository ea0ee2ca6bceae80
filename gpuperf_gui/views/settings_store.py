"""The only place that touches QSettings (STYLE.md R21)."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings

MAX_RECENT = 10


def _settings() -> QSettings:
    return QSettings()


def save_window(geometry: QByteArray, state: QByteArray) -> None:
    s = _settings()
    s.setValue("window/geometry", geometry)
    s.setValue("window/state", state)


def load_window() -> tuple[QByteArray | None, QByteArray | None]:
    s = _settings()
    return s.value("window/geometry"), s.value("window/state")


def save_selection(device_id: str, precision: str, tab: str) -> None:
    s = _settings()
    s.setValue("selection/device", device_id)
    s.setValue("selection/precision", precision)
    s.setValue("selection/tab", tab)


def load_selection() -> tuple[str | None, str | None, str | None]:
    s = _settings()
    return s.value("selection/device"), s.value("selection/precision"), s.value("selection/tab")


def recent_files() -> list[str]:
    value = _settings().value("recent/files", [])
    if isinstance(value, str):
        return [value]
    return [str(v) for v in (value or [])]


def add_recent_file(path: str) -> list[str]:
    files = [path] + [f for f in recent_files() if f != path]
    files = files[:MAX_RECENT]
    _settings().setValue("recent/files", files)
    return files
