"""Time from process start to the shown main window, and whether torch was imported (it must not be).

Runs `python -m gpuperf_gui --startup-probe` in a fresh process N times (the app prints
the moment its window is shown, then quits) and prints the median and the worst. Budget: 1.5 s.

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


def one_run() -> tuple[float, bool]:
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpuperf_gui", "--startup-probe"], env=env, capture_output=True,
                          text=True, timeout=60)
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
    times, torch_seen = [], False
    for _ in range(args.runs):
        shown_s, torch_imported = one_run()
        times.append(shown_s)
        torch_seen |= torch_imported
    print(f"process start -> window shown: median {statistics.median(times):.3f} s, "
          f"worst {max(times):.3f} s over {args.runs} runs (budget 1.5 s)")
    print(f"torch imported at start-up: {torch_seen} (must be False)")


if __name__ == "__main__":
    main()
