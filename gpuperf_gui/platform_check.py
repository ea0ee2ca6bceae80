"""Before Qt starts: is there a display, and are the system libraries of Qt's xcb platform there?

Without this, a missing library or display makes Qt abort (SIGABRT, rc 134) with a message that
blames ``libxcb-cursor0`` whatever is missing. ``gpuperf-gui`` checks first and says in one line what
is missing, then exits 2. No Qt import here: the check must work where Qt would abort.
"""
from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping, Sequence

# Every system library that PySide6's xcb platform plugin (Qt/plugins/platforms/libqxcb.so) and the
# Qt libraries it loads need, with the Debian/Ubuntu package that ships it: `ldd libqxcb.so` on
# PySide6-Essentials 6.11 (the C runtime and what these pull in themselves left out).
# tests/views/test_platform_check.py compares this list with ldd's, so an upgrade cannot outgrow it.
XCB_LIBRARIES: dict[str, str] = {
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
}

NO_DISPLAY = "no display: set DISPLAY or use --screenshot/QT_QPA_PLATFORM=offscreen"
# Platforms that draw without a window system (nothing to check).
_HEADLESS = {"offscreen", "minimal", "minimalegl", "vnc", "eglfs", "linuxfb", "vkkhrdisplay"}


def missing_libraries(sonames: Sequence[str]) -> list[str]:
    """The names in ``sonames`` that the dynamic loader cannot load (as Qt would load them)."""
    missing = []
    for soname in sonames:
        try:
            ctypes.CDLL(soname)
        except OSError:
            missing.append(soname)
    return missing


def platform_of(env: Mapping[str, str]) -> str:
    """The platform plugin Qt will try first: QT_QPA_PLATFORM's first entry (options after ':'
    dropped), else wayland in a Wayland session, else xcb (Qt's default on Linux)."""
    chosen = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip().lower()
    if chosen:
        return chosen
    if env.get("XDG_SESSION_TYPE") == "wayland" and env.get("WAYLAND_DISPLAY"):
        return "wayland"
    return "xcb"


def display_problem(env: Mapping[str, str], libraries: Mapping[str, str] = XCB_LIBRARIES) -> str | None:
    """One line saying why Qt could not open a window here, or None (also for headless platforms)."""
    platform = platform_of(env)
    if platform in _HEADLESS or not sys.platform.startswith("linux"):
        return None
    if platform == "wayland":
        return None if env.get("WAYLAND_DISPLAY") else NO_DISPLAY
    if platform != "xcb":
        return None  # a plugin we do not know: let Qt say
    if not env.get("DISPLAY"):
        return NO_DISPLAY
    missing = missing_libraries(list(libraries))
    if not missing:
        return None
    packages = sorted({libraries[m] for m in missing})
    return (f"Qt's xcb platform needs system libraries that are missing: {', '.join(missing)} "
            f"(Debian/Ubuntu: sudo apt-get install {' '.join(packages)}); "
            f"or use --screenshot/QT_QPA_PLATFORM=offscreen")


def headless_for_screenshot(env: dict[str, str] | os._Environ) -> None:
    """``--screenshot`` draws into an image, not onto a screen: where no platform is asked for, Qt
    draws offscreen (no display nor xcb library needed, the same pixels on every machine)."""
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
