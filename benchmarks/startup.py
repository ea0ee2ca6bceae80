"""Time from process start to the shown main window, and whether torch was imported (it must not be).

Runs `python -m gpuperf_gui --startup-probe` in a fresh process N times (the app prints
the moment its window is shown, then quits) and prints the median and the worst. Budget: 1.5 s.

The floor, measured in the same run (runs alternate, so a shared machine's load weighs on both
alike): a bare PySide6 ``QMainWindow`` at 1600x1000 in a process that has imported pyqtgraph, timed
the same way (the first turn of the event loop after ``show()``). The ratio app / floor is the
figure to compare across machines.

    python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


FLOOR = """
import json, sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow
import pyqtgraph  # noqa: F401 - the app's plotting library, imported as the app imports it
app = QApplication(sys.argv[:1])
window = QMainWindow()
window.setCentralWidget(QLabel("floor"))
window.resize(1600, 1000)
window.show()
def report():
    print(json.dumps({"window_shown_perf_counter_s": time.perf_counter(), "torch_imported": "torch" in sys.modules}),
          flush=True)
    app.exit(0)
QTimer.singleShot(0, report)
app.exec()
"""


def one_run(floor: bool = False) -> tuple[float, bool]:
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    command = [sys.executable, "-c", FLOOR] if floor else [sys.executable, "-m", "gpuperf_gui", "--startup-probe"]
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, cwd=os.path.dirname(__file__))
    ended = time.perf_counter()
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"app failed (rc={proc.returncode}): {proc.stderr[-2000:]}")
    report = json.loads(lines[-1])
    # The child's perf_counter shares the parent's clock (CLOCK_MONOTONIC on Linux).
    shown_s = report["window_shown_perf_counter_s"] - started
    assert shown_s <= ended - started
    return shown_s, report["torch_imported"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    one_run()  # warm the file cache
    one_run(floor=True)
    times, floors, torch_seen = [], [], False
    for _ in range(args.runs):
        shown_s, torch_imported = one_run()
        times.append(shown_s)
        torch_seen |= torch_imported
        floors.append(one_run(floor=True)[0])
    app_s, floor_s = statistics.median(times), statistics.median(floors)
    print(f"process start -> window shown: median {app_s:.3f} s, "
          f"worst {max(times):.3f} s over {args.runs} runs (budget 1.5 s)")
    print(f"floor (bare PySide6 window, pyqtgraph imported): median {floor_s:.3f} s, worst {max(floors):.3f} s; "
          f"app / floor {app_s / floor_s:.2f} (medians; runs alternate)")
    print(f"torch imported at start-up: {torch_seen} (must be False)")


if __name__ == "__main__":
    main()
