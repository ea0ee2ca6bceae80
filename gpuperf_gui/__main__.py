"""`gpuperf-gui [--tab T] [--screenshot PNG] [TRACE ...]` and `python -m gpuperf_gui`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Sequence

APP_ID = "io.github.gpuperf.GpuPerfGui"  # matches resources/io.github.gpuperf.GpuPerfGui.desktop
SCREENSHOT_TIMEOUT_S = 300.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gpuperf-gui", description="gpuperf desktop app")
    parser.add_argument("traces", nargs="*", type=Path, help="trace files or folders to open")
    parser.add_argument("--tab", choices=("roofline", "mfu", "trace", "bench"), help="tab to show")
    parser.add_argument("--screenshot", type=Path, metavar="PNG",
                        help="wait until loading is done, save the window (1600x1000) as PNG, exit")
    parser.add_argument("--device", help="device id for the shared picker (default: the last used)")
    parser.add_argument("--compare", default="", metavar="IDS",
                        help="comma-separated device ids to draw beside it on the Roofline tab")
    parser.add_argument("--precisions", default="", metavar="LIST",
                        help="comma-separated precisions to draw on the Roofline tab, e.g. bf16,fp32")
    # benchmarks/startup.py: print when the window is shown, then quit (not for users: hidden)
    parser.add_argument("--startup-probe", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _save_screenshot_when_idle(app, window, path: Path, started: float) -> None:
    from PySide6.QtCore import QTimer

    def poll() -> None:
        if window.is_busy() and time.monotonic() - started < SCREENSHOT_TIMEOUT_S:
            QTimer.singleShot(100, poll)
            return
        timed_out = window.is_busy()
        app.processEvents()
        ok = window.grab().save(str(path), "PNG")
        if not ok:
            print(f"gpuperf-gui: could not write {path}", file=sys.stderr)
        elif timed_out:
            print(f"gpuperf-gui: still busy after {SCREENSHOT_TIMEOUT_S:.0f} s; saved anyway",
                  file=sys.stderr)
        app.exit(0 if ok and not timed_out else 1)

    QTimer.singleShot(200, poll)


def _report_startup_and_quit(app, window) -> None:
    """benchmarks/startup.py: print when the window is shown and whether torch got imported."""
    from PySide6.QtCore import QTimer

    def report() -> None:
        print(json.dumps({"window_shown_perf_counter_s": time.perf_counter(),
                          "window_visible": window.isVisible(),
                          "torch_imported": "torch" in sys.modules}), flush=True)
        app.exit(0)

    QTimer.singleShot(0, report)


def _set_icon(app) -> None:
    from importlib import resources

    from PySide6.QtGui import QIcon

    icon = resources.files("gpuperf_gui.resources") / "icons" / f"{APP_ID}.svg"
    with resources.as_file(icon) as path:
        app.setWindowIcon(QIcon(str(path)))


def _screenshot_path_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written (checked before the window is built), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the folder of {path}: {exc.strerror or exc}"
    if not os.access(path.parent, os.W_OK):
        return f"cannot write into {path.parent}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.screenshot and (problem := _screenshot_path_problem(args.screenshot)):
        print(f"gpuperf-gui: {problem}", file=sys.stderr)
        return 2
    from gpuperf_gui import platform_check

    if args.screenshot:
        platform_check.headless_for_screenshot(os.environ)
    if problem := platform_check.display_problem(os.environ):  # before Qt would abort (rc 134)
        print(f"gpuperf-gui: {problem}", file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui import __version__

    QApplication.setOrganizationName("gpuperf")
    QApplication.setApplicationName("gpuperf")
    QApplication.setApplicationVersion(__version__)
    QApplication.setDesktopFileName(APP_ID)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    _set_icon(app)

    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    context = AppContext()
    if args.device:
        try:
            context.set_device(args.device)
        except KeyError as exc:
            print(f"gpuperf-gui: {exc}", file=sys.stderr)
            return 2
    window = MainWindow(context)
    if args.device:
        window.device_combo.setCurrentIndex(window.device_combo.findData(args.device))
    if args.compare:
        window.roofline_tab.set_devices([d for d in args.compare.split(",") if d])
    if args.precisions:
        window.roofline_tab.set_precisions([p for p in args.precisions.split(",") if p])
    if args.tab:
        window.show_tab(args.tab)
    if args.screenshot:
        window.resize(WINDOW_SIZE)
    window.show()
    if args.traces:
        window.open_traces(args.traces)
        if args.tab:
            window.show_tab(args.tab)
    if args.startup_probe:
        _report_startup_and_quit(app, window)
    elif args.screenshot:
        _save_screenshot_when_idle(app, window, args.screenshot, time.monotonic())
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
