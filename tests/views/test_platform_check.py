"""`gpuperf-gui` says in one line what is missing (a display, xcb libraries) and exits 2, before Qt
would abort (rc 134) blaming libxcb-cursor0."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf_gui import platform_check
from gpuperf_gui.platform_check import XCB_LIBRARIES, display_problem, missing_libraries

# The line as docs/user-guide.md gives it, not the module's constant: the test fails if either moves.
NO_DISPLAY_LINE = "gpuperf-gui: no display: set DISPLAY or use --screenshot/QT_QPA_PLATFORM=offscreen"


def _run_app(env_changes: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM",
                                                            "XDG_SESSION_TYPE")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "gpuperf_gui", *args], env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("platform", ["", "xcb", "wayland"])
def test_no_display_is_one_line_and_exit_2(platform: str) -> None:
    proc = _run_app({"QT_QPA_PLATFORM": platform} if platform else {})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [NO_DISPLAY_LINE]


def test_screenshot_needs_no_display(tmp_path: Path) -> None:
    png = tmp_path / "roofline.png"
    proc = _run_app({}, "--tab", "roofline", "--screenshot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert png.stat().st_size > 10_000


def test_missing_libraries_names_exactly_the_ones_the_loader_cannot_load() -> None:
    assert missing_libraries(["libc.so.6", "libgpuperf-no-such-lib.so.7", "libm.so.6"]) \
        == ["libgpuperf-no-such-lib.so.7"]


def test_a_missing_xcb_library_is_named_with_its_package() -> None:
    libraries = {"libc.so.6": "libc6", "libgpuperf-no-such-lib.so.7": "gpuperf-fake-pkg"}
    problem = display_problem({"DISPLAY": ":0"}, libraries)
    assert problem is not None and "\n" not in problem
    assert "libgpuperf-no-such-lib.so.7" in problem and "apt-get install gpuperf-fake-pkg" in problem
    assert "libc" not in problem
    assert display_problem({"DISPLAY": ":0"}, {"libc.so.6": "libc6"}) is None


@pytest.mark.parametrize("env", [{"QT_QPA_PLATFORM": "offscreen"}, {"QT_QPA_PLATFORM": "minimal"},
                                 {"QT_QPA_PLATFORM": "offscreen:fontengine=freetype"},
                                 {"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}])
def test_headless_or_wayland_sessions_need_no_xcb_library(env: dict[str, str]) -> None:
    assert display_problem(env, {"libgpuperf-no-such-lib.so.7": "x"}) is None


def test_the_library_list_is_what_the_xcb_plugin_links() -> None:
    """Against `ldd` on the installed plugin: every system library it needs is listed, except the C
    runtime and what the listed packages pull in themselves; nothing listed is stale."""
    import PySide6

    qt_dir = Path(PySide6.__file__).resolve().parent
    plugin = qt_dir / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    assert shutil.which("ldd") and plugin.exists()
    out = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    needed = set()
    for line in out.splitlines():
        match = re.match(r"\s*(\S+\.so[.\d]*)\s+=>\s+(.*)", line)
        if match and str(qt_dir) not in match.group(2):
            needed.add(match.group(1))
    pulled_in = re.compile(r"lib(c|m|dl|pthread|stdc\+\+|gcc_s|z|zstd|Xau|Xdmcp|pcre2-8|expat|png16|brotli\w+|"
                           r"bsd|md|systemd|cap|gcrypt|lzma|lz4|gpg-error|GLX|GLdispatch)\.so")
    assert {n for n in needed if not pulled_in.match(n)} == set(XCB_LIBRARIES)


def test_the_check_imports_no_qt() -> None:
    code = ("import sys; import gpuperf_gui.platform_check as p; p.display_problem({}); "
            "print(any(m.startswith(('PySide6', 'shiboken6')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert platform_check.NO_DISPLAY in NO_DISPLAY_LINE


def test_the_readme_lists_every_package_the_window_needs() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    command = re.search(r"sudo apt-get install ([^`]*?)\n```", readme, re.S)
    assert command, "README: no apt-get install block"
    listed = set(command.group(1).replace("\\", " ").split())
    assert set(XCB_LIBRARIES.values()) <= listed, set(XCB_LIBRARIES.values()) - listed
