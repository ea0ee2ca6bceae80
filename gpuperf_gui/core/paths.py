"""Where the app keeps its files: the user's data folder (runs, saved ceilings) and devices file.

No other core module is imported here, so every module that needs a path can import this one
without an import circle.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ENV_DATA_DIR = "GPUPERF_DATA_DIR"
ENV_DEVICES_FILE = "GPUPERF_DEVICES_FILE"


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


def user_devices_file() -> Path:
    """Where users add or override devices ($GPUPERF_DEVICES_FILE, else the config folder)."""
    explicit = os.environ.get(ENV_DEVICES_FILE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpuperf" / "devices.toml"
