"""Largest event-loop stall of the Benchmarks tab during a real CPU run (budget: < 50 ms).

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_stall.py [--suite quick] [--kernels ...]

A 5 ms QTimer in the GUI thread records the gap between its ticks while the tab runs the real
measuring loop (torch, CPU) in its helper process (core/child_stream.py), relayed by the worker
thread. Prints the largest gap and the 99th percentile, split into "torch import" (before the
first point starts) and "measuring", the run's duration and point count, and for each gap over
50 ms the last item that had arrived. The window's first paint happens before the clock starts.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="quick", choices=("quick", "full", "custom"))
    parser.add_argument("--kernels", default="", help="comma-separated subset (default: all)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: the tab's default)")
    parser.add_argument("--preimport", action="store_true", help="import torch before the run starts")
    args = parser.parse_args()

    import numpy as np
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.core.bench.plans import build_plan
    from gpuperf_gui.core.bench.points import BenchMessage
    from gpuperf_gui.views.benchmark_tab import BenchmarkTab, default_measurements_factory
    from gpuperf_gui.views.context import AppContext

    if args.preimport:
        import torch  # noqa: F401

    app = QApplication.instance() or QApplication(sys.argv)
    results_dir = Path(tempfile.mkdtemp(prefix="gpuperf-stall-"))
    real_factory = default_measurements_factory(results_dir, collectives=False)
    kernels = tuple(k for k in args.kernels.split(",") if k) or None

    def factory(plan):  # the tab's plan, narrowed to the requested kernels and threads
        narrowed = build_plan(args.suite, "cpu", kernels=kernels, results_path=plan.results_path)
        threads = args.threads or plan.cpu_threads  # default: the tab's choice (cores - 1)
        narrowed = type(narrowed)(**{**narrowed.__dict__, "cpu_threads": threads})
        return real_factory(narrowed)

    tab = BenchmarkTab(AppContext(device_id="cpu"), measurements_factory=factory, results_dir=results_dir,
                       autoload_latest=False)
    tab.resize(1600, 1000)
    tab.show()
    app.processEvents()  # the window's first paint (~80 ms offscreen) is not a stall of the run
    clock = QElapsedTimer()
    gaps_ms: list[tuple[float, bool]] = []  # (gap, measuring started)
    state = {"last": 0, "measuring": False, "points": 0, "label": "import", "item": "-", "item_ms": 0}
    worst: list[tuple[float, str]] = []

    def on_item(item: object) -> None:
        state["item"] = (f"{item.kind} message" if isinstance(item, BenchMessage)
                         else type(item).__name__)
        state["item_ms"] = clock.elapsed()
        if isinstance(item, BenchMessage) and item.kind == "started":
            state["measuring"] = True
            state["label"] = item.label
        elif not isinstance(item, BenchMessage):
            state["points"] += 1

    def on_tick() -> None:
        now = clock.elapsed()
        gaps_ms.append((now - state["last"], bool(state["measuring"])))
        if now - state["last"] > 50:
            worst.append((now - state["last"], f"{state['label']} @{now / 1e3:.2f}s (last item: "
                                               f"{state['item']} @{state['item_ms'] / 1e3:.2f}s)"))
        state["last"] = now

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(on_tick)
    tab.benchmark_finished.connect(app.quit)
    started = time.monotonic()
    clock.start()
    ticker.start()
    tab.start()
    tab._worker.item_produced.connect(on_item)  # noqa: SLF001 - a probe, not API
    app.exec()
    duration_s = time.monotonic() - started
    ticker.stop()
    tab.shutdown()
    measuring = np.array([g for g, m in gaps_ms if m] or [0.0])
    importing = np.array([g for g, m in gaps_ms if not m] or [0.0])
    print(f"suite={args.suite} kernels={args.kernels or 'all'} points={len(tab.current_points)} "
          f"duration={duration_s:.1f} s")
    print(f"largest stall while importing torch: {importing.max():.0f} ms (p99 {np.percentile(importing, 99):.0f} ms)")
    print(f"largest stall while measuring:      {measuring.max():.0f} ms (p99 {np.percentile(measuring, 99):.0f} ms)")
    print(f"budget 50 ms: {'OK' if measuring.max() < 50 else 'OVER'} (measuring)")
    print(tab.status_label.text())
    for gap, where in sorted(worst, reverse=True)[:8]:
        print(f"  stall {gap:.0f} ms during {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
