"""The GUI opening a folder of many ranks: the window process's peak memory, job overview vs full load.

Usage: nice python benchmarks/many_ranks_gui.py [--ranks 64,256] [--modes overview,full] [--workdir DIR]

Each case runs in a fresh interpreter with the main window offscreen: ``open_traces([FOLDER])`` as
File ▸ Open does, then waits until the window is idle. ``overview``: what a folder of more than
MANY_RANKS (32) rank files gets now, the job overview from compact per-rank results on the local
process pool (views/cluster_dialog.py, core/trace/session/trace.py ``iter_job_overview``). ``full``: what
it got before, every rank's events and lanes loaded into the Trace tab (the route to the overview
switched off). Folders: R rank files tiled from tests/data/h200/eager_tiny.json.gz (11,801 events
each, clocks 13 µs apart; core/trace/synthetic/tile.py). Columns: the window process's peak RSS
(``ru_maxrss``) and its RSS before the open (the interpreter, Qt and the window), so ``grew`` is
what opening the folder cost that process; ``helper`` is the largest child it waited for (the
loading helper interpreter; the pool workers that decode the ranks are its children), and wall
time until idle.

Measured 2026-12-01 on the shared 2-core AMD EPYC VM (24 GiB; other work running, load ~3.5), one
run of each, ``nice python benchmarks/many_ranks_gui.py --ranks 64,256 --modes overview,full``:

     ranks     events      mode  wall s   before     peak     grew   helper  verdict
        64    755,264  overview     8.5    137MB    154MB     17MB    139MB  launch_bound
        64    755,264      full     8.7    137MB    292MB    155MB    266MB  launch_bound
       256  3,021,056  overview    22.3    137MB    160MB     24MB    138MB  launch_bound
       256  3,021,056      full    22.3    137MB    756MB    619MB    949MB  launch_bound

The overview's window process grows 17 MB at 64 ranks and 24 MB at 256 (the ~20-30 kB of compact
results a rank, the table and the heatmap), its helper stays at ~140 MB (it holds summaries only;
the pool workers decode one rank each at a time); the full load grows ~205 bytes per event in the
window process (619 MB for 3M events) and its helper ~1 GB. The wall time is about the same: each
rank's work is the same load and analysis; what differs is what comes back. A second run (load 4.7,
the overview then in a tab of the main window) gave the same memory (overview +18 / +25 MB, full
+155 / +619 MB) and wall times of 10.4 / 36.5 s vs 11.7 / 19.0 s: they vary with the VM's other
work (the two engines alone, in one process, same run, 256 ranks: 12.6 vs 12.8 s, 16.4 vs 14.8 s).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "h200" / "eager_tiny.json.gz"
TIMEOUT_S = 1800


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(mode: str, folder: str) -> dict:
    """Open ``folder`` in an offscreen main window; the figures of this process."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import MainWindow

    window = MainWindow(AppContext())
    if mode == "full":
        window.open_job_overview = lambda paths, remember=True: False  # type: ignore[method-assign]
        window.trace_tab.open_elsewhere = None
    window.show()
    app.processEvents()
    before = _rss_bytes()
    t0 = time.perf_counter()
    window.open_traces([Path(folder)], remember=False)
    app.processEvents()
    while window.is_busy():
        app.processEvents()
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    out = {"wall_s": wall, "rss_before_bytes": before,
           "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
           "helper_peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}
    if mode == "full":
        loaded = window.trace_tab.loaded
        out.update(ranks=len(loaded.model.ranks), events=sum(r.n_events for r in loaded.model.ranks),
                   verdict=loaded.diagnosis.signature)
    else:
        job = window.job_windows[0]
        out.update(ranks=job.table.rowCount(), events=job.result.n_events, verdict=job.result.diagnosis.signature,
                   engine=job.engine)
    window.close()
    return out


def _folder(workdir: Path, ranks: int) -> Path:
    from gpuperf_gui.core.trace.synthetic.tile import tile_rank_folder

    folder = workdir / f"ranks_{ranks}"
    if not (folder / "done").exists():
        tile_rank_folder([SOURCE], folder, ranks, shift_us=13)
        (folder / "done").write_text("")  # not a trace name: discover_files skips it
    return folder


def measure(mode: str, folder: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", mode, str(folder)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} {folder}: child failed\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--ranks", default="64,256", help="rank counts (default 64,256)")
    ap.add_argument("--modes", default="overview,full", help="overview and/or full (default both)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/gpuperf-many-ranks"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'ranks':>6} {'events':>10} {'mode':>9} {'wall s':>7} {'before':>8} {'peak':>8} {'grew':>8} "
          f"{'helper':>8}  verdict")
    for r in [int(x) for x in args.ranks.split(",") if x]:
        folder = _folder(args.workdir, r)
        for mode in [m for m in args.modes.split(",") if m]:
            run = measure(mode, folder)
            mb = lambda b: f"{b / 2**20:6.0f}MB"  # noqa: E731
            print(f"{run['ranks']:>6} {run['events']:>10,} {mode:>9} {run['wall_s']:>7.1f} "
                  f"{mb(run['rss_before_bytes']):>8} {mb(run['peak_rss_bytes']):>8} "
                  f"{mb(run['peak_rss_bytes'] - run['rss_before_bytes']):>8} {mb(run['helper_peak_rss_bytes']):>8}  "
                  f"{run['verdict']}", flush=True)


if __name__ == "__main__":
    main()
