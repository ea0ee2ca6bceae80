"""Largest event-loop stall while the Trace tab loads a trace in its worker thread.

A 5 ms QTimer records the gaps between its ticks while the 216k-event hta/df_index_resolver trace
is loaded, analysed and shown; the largest gap is the longest time the window could not respond.
Budget: 100 ms.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/trace_load_stall.py [TRACE...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

BUDGET_MS = 100.0
DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared_traces" / "hta" / "df_index_resolver" / \
    "df_index_resolver.json.gz"


def measure(paths: list[Path], repeats: int = 3) -> list[tuple[float, float, float]]:
    """(largest gap ms, the gap's position after start s, total load s) per repeat."""
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.views.trace.tab import TraceTab

    app = QApplication.instance() or QApplication(sys.argv)
    tab = TraceTab(None)
    tab.resize(1600, 1000)
    tab.show()
    app.processEvents()
    out = []
    for _ in range(repeats):
        clock = QElapsedTimer()
        ticks: list[int] = []
        timer = QTimer()
        timer.setInterval(5)
        timer.timeout.connect(lambda: ticks.append(clock.elapsed()))
        clock.start()
        timer.start()
        tab.open_paths(paths)
        while tab.is_busy():
            app.processEvents()
            time.sleep(0.001)
        # the first paint of the loaded trace counts too
        end = clock.elapsed() + 200
        while clock.elapsed() < end:
            app.processEvents()
            time.sleep(0.001)
        timer.stop()
        gaps = [b - a for a, b in zip(ticks, ticks[1:])]
        k = max(range(len(gaps)), key=gaps.__getitem__)
        out.append((float(gaps[k]), ticks[k] / 1e3, (end - 200) / 1e3))
    tab.shutdown()
    return out


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or [DEFAULT.resolve()]
    results = measure(paths)
    for gap, at, total in results:
        print(f"largest event-loop gap {gap:6.1f} ms (at {at:.2f} s)  load+analysis+show {total:.2f} s")
    worst = max(r[0] for r in results)
    print(f"{', '.join(p.name for p in paths)}: largest stall {worst:.1f} ms, budget {BUDGET_MS:.0f} ms "
          f"{'OK' if worst <= BUDGET_MS else 'OVER'}")
