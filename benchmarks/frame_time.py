"""Frame times of the real Trace tab's timeline on real traces: CPU time beside wall time.

Opens a trace in a ``TraceTab`` (the window's own tab, 1600x1000, offscreen) as a user does, waits
until it is drawn, then times frames at six zoom levels (the whole trace, then 1/10 ... 1/100,000 of
it, centred): at each level a jump to it (``setXRange``), pans (A/D) and zooms (W/S) as the keys do.
A frame is the range change, the refold of every lane in view (:meth:`TraceTimeline.refold`, which
the window runs rate-limited after each change) and a synchronous repaint of the view: what a user
waits for. CPU is this process's (``time.process_time``), wall is ``perf_counter``; on a shared
machine the CPU figure is the one to compare with the 16 ms budget.

Inputs as benchmarks/trace_tab_scale.py makes them (tests/data/h200/eager_small.json.gz's events
repeated, ``core/trace/synthetic/tile.py``): e1M.json, e10M.json under ``--workdir``.

    QT_QPA_PLATFORM=offscreen nice .venv/bin/python benchmarks/frame_time.py            # 1M
    QT_QPA_PLATFORM=offscreen nice .venv/bin/python benchmarks/frame_time.py --sizes 1,10
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEVELS = (1, 10, 100, 1_000, 10_000, 100_000)
"""The visible span at each zoom level: the whole trace over this."""
PANS, ZOOMS = 6, 2
BUDGET_MS = 16.0
SETTLE_S = 0.08
"""Event loop after each frame: the timeline's SignalProxy refolds at most 30 times a second."""


def make_input(folder: Path, millions: int) -> Path:
    """The tiled real trace of ``millions`` M events that trace_tab_scale.py also opens (made once)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from trace_tab_scale import make_input as make_tiled

    return make_tiled(folder, millions)


class _Collections:
    """CPU ms of each garbage collection (generation 2: a full one) while ``on``."""

    def __init__(self) -> None:
        self.on, self.full_ms, self.young_ms, self._start = False, [], [], 0.0
        gc.callbacks.append(self._seen)

    def _seen(self, phase: str, info: dict) -> None:
        if not self.on:
            return
        if phase == "start":
            self._start = time.process_time()
        else:
            (self.full_ms if info["generation"] == 2 else self.young_ms).append(
                1e3 * (time.process_time() - self._start))


def _frame(app, timeline, change, collections: _Collections) -> tuple[float, float, float]:  # noqa: ANN001
    """(wall ms, CPU ms, CPU ms with what follows) of one frame: ``change()``, the refold, a
    synchronous repaint; then the window's own deferred work for it (the rate-limited refold and
    repaint its range signal queues: :data:`SETTLE_S` of event loop), whose CPU counts in the third."""
    app.processEvents()
    collections.on = True
    wall, cpu = time.perf_counter(), time.process_time()
    change()
    timeline.refold()
    timeline.viewport().repaint()
    wall_ms, cpu_ms = 1e3 * (time.perf_counter() - wall), 1e3 * (time.process_time() - cpu)
    collections.on = False
    end = time.perf_counter() + SETTLE_S
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)
    return wall_ms, cpu_ms, 1e3 * (time.process_time() - cpu)


def measure(path: Path, budget_bytes: int) -> dict:
    """Open ``path`` in a TraceTab here and time its frames (run in a fresh process)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.views.trace.tab import TraceTab
    from gpuperf_gui.views.trace.timeline import PAN_FRACTION, ZOOM_STEP

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tab = TraceTab(None)
    tab.memory_budget_bytes = budget_bytes
    tab.resize(1600, 1000)
    tab.show()
    app.processEvents()
    tab.open_paths([path])
    loop, watch = QEventLoop(), QTimer()
    watch.setInterval(50)
    watch.timeout.connect(lambda: None if tab.is_busy() else loop.quit())
    watch.start()
    loop.exec()
    watch.stop()
    if tab.loaded is None:
        raise SystemExit(f"{path}: {tab.message.text()}")
    timeline, box = tab.timeline, tab.timeline.view_box
    collections = _Collections()
    idle = [_frame(app, timeline, lambda: None, collections) for _ in range(5)]  # no change: the loop alone
    a, b = timeline.full_range
    middle = 0.5 * (a + b)
    levels = []
    for level in LEVELS:
        half = 0.5 * (b - a) / level
        frames = [_frame(app, timeline, lambda h=half: box.setXRange(middle - h, middle + h, padding=0.0),
                         collections)]
        for i in range(PANS):
            frames.append(_frame(app, timeline, lambda s=(1 if i % 2 == 0 else -1): box.pan_x(s * PAN_FRACTION),
                                 collections))
        for i in range(2 * ZOOMS):
            frames.append(_frame(app, timeline, lambda z=(ZOOM_STEP if i < ZOOMS else 1.0 / ZOOM_STEP): box.zoom_x(z),
                                 collections))
        walls, cpus, alls = ([f[k] for f in frames] for k in range(3))
        levels.append({"span_us": 2 * half, "frames": len(frames), "wall_ms_median": statistics.median(walls),
                       "wall_ms_max": max(walls), "cpu_ms_median": statistics.median(cpus), "cpu_ms_max": max(cpus),
                       "cpu_all_ms_median": statistics.median(alls), "cpu_all_ms_max": max(alls),
                       "cpu_ms": cpus})
    size = timeline.viewport().size()
    tab.shutdown()
    return {"file": str(path), "events": tab.loaded.n_events, "lanes": len(timeline.lanes),
            "view_px": [size.width(), size.height()], "levels": levels,
            "idle_cpu_all_ms": statistics.median(f[2] for f in idle),
            "gc_full_ms": collections.full_ms, "gc_young_ms": collections.young_ms}


def machine() -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import machine as describe
    return describe()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1", help="trace sizes in millions of events (default 1)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tabscale"))
    parser.add_argument("--budget", type=int, default=16 << 30, help="the tab's memory budget, bytes")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.budget)))
        return 0
    print(f"machine: {machine()}")
    over = 0
    for millions in (int(x) for x in args.sizes.split(",") if x):
        path = make_input(args.workdir, millions)
        env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        run = subprocess.run([sys.executable, __file__, "--child", str(path), "--budget", str(args.budget)],
                             env=env, capture_output=True, text=True, check=True)
        out = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"\n{path.name}: {out['events']:,} events drawn, {out['lanes']} lanes, view "
              f"{out['view_px'][0]}x{out['view_px'][1]} px (the Trace tab at 1600x1000); a frame without a "
              f"change costs {out['idle_cpu_all_ms']:.1f} ms CPU with what follows (the event loop alone)")
        print(f"{'span':>12} {'frames':>6} {'CPU ms med':>10} {'CPU ms max':>10} {'+after med':>10} "
              f"{'+after max':>10} {'wall ms med':>11} {'wall ms max':>11}")
        for lv in out["levels"]:
            over += lv["cpu_ms_max"] > BUDGET_MS
            print(f"{lv['span_us'] / 1e3:>9.3f} ms {lv['frames']:>6} {lv['cpu_ms_median']:>10.1f} "
                  f"{lv['cpu_ms_max']:>10.1f} {lv['cpu_all_ms_median']:>10.1f} {lv['cpu_all_ms_max']:>10.1f} "
                  f"{lv['wall_ms_median']:>11.1f} {lv['wall_ms_max']:>11.1f}")
        full, young = out["gc_full_ms"], out["gc_young_ms"]
        print(f"garbage collections inside the frames: {len(full)} full"
              + (f" (largest {max(full):.1f} ms)" if full else "")
              + f", {len(young)} young" + (f" (largest {max(young):.1f} ms)" if young else ""))
    print(f"\nframe: range change + refold of the lanes in view + synchronous repaint (CPU, wall); +after: "
          f"with the window's deferred refold and repaint of that change ({1e3 * SETTLE_S:.0f} ms of event loop; "
          f"CPU only). Budget {BUDGET_MS:.0f} ms CPU a frame; levels with a frame over it: {over}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
