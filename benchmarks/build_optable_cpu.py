"""CPU seconds of the build and of the op table inside ``gpuperf diagnose --json``, two checkouts alternately.

Each run is a fresh interpreter that runs the CLI's ``main`` on the file, as ``gpuperf diagnose`` does,
with timers around four phases (CPU seconds, every thread of the process, ``time.process_time``):

* ``append``: the columns of each scanned run appended (``EventColumns.add_scanned``; main thread
  only, ``time.thread_time``: the scanner's threads run meanwhile);
* ``build``: ``build_rank_columns`` (lanes, order, depths, flows, steps);
* ``optable``: ``op_table_and_points`` (the op table and the roofline points, as the engine runs it);
* ``analysis``: ``analyse_rank``;

and the whole run (``total``), its peak RSS and a hash of what it printed. ``--base DIR`` is another
checkout (``git worktree add /tmp/base 9043c63`` and its C extensions built, or copied from here when
their sources are the same); the runs alternate base, this checkout, base, ... and the medians and the
median of the per-pair ratios are printed (a shared machine's speed drifts between runs; pairs of
neighbours see about the same machine).

    nice .venv/bin/python benchmarks/build_optable_cpu.py --base /tmp/base --pairs 5 /tmp/gpuperf-scale/events_5M.json

Inputs: ``benchmarks/scale.py`` writes ``events_1M.json`` and ``events_5M.json`` (eager_small tiled).
Figures: docs/performance.md, "The build and the op table".
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("append", "build", "optable", "analysis", "total")

_CHILD = r"""
import contextlib, hashlib, io, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from gpuperf_gui import cli
from gpuperf_gui.core.trace.engine import api
from gpuperf_gui.core.trace.ingest import build, stream_decode
spent = {}
def timed(key, fn, clock=time.process_time):
    def wrapper(*a, **k):
        c = clock()
        try:
            return fn(*a, **k)
        finally:
            spent[key] = spent.get(key, 0.0) + clock() - c
    return wrapper
stream_decode.build_rank_columns = timed("build", stream_decode.build_rank_columns)
api.op_table_and_points = timed("optable", api.op_table_and_points)
api.analyse_rank = timed("analysis", api.analyse_rank)
build.EventColumns.add_scanned = timed("append", build.EventColumns.add_scanned, time.thread_time)
out = io.StringIO()
start = time.process_time()
with contextlib.redirect_stdout(out):
    code = cli.main(["diagnose", "--json", sys.argv[2]])
spent["total"] = time.process_time() - start
spent["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
spent["output"] = hashlib.sha256(out.getvalue().encode()).hexdigest()[:16]
spent["exit"] = code
print(json.dumps(spent))
"""


def run(checkout: Path, path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(checkout), str(path)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--base", type=Path, required=True, help="the other checkout (the 'before')")
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    sides: dict[str, list[dict]] = {"base": [], "this": []}
    for i in range(args.pairs):
        for side, checkout in (("base", args.base), ("this", ROOT)):
            got = run(checkout, args.file)
            sides[side].append(got)
            print(f"{i + 1} {side:4} " + " ".join(f"{k}={got.get(k, 0.0):.3f}" for k in PHASES)
                  + f" peak={got['peak_bytes'] / 2**20:.0f}MiB out={got['output']}", flush=True)
    same = {r["output"] for r in sides["base"]} == {r["output"] for r in sides["this"]}
    print(f"\nmedians of {args.pairs} pairs on {args.file.name} (CPU s; ratio: median of this / base per pair)"
          f"; the same output: {same}")
    for key in (*PHASES, "peak_bytes"):
        base = [r.get(key, 0.0) for r in sides["base"]]
        this = [r.get(key, 0.0) for r in sides["this"]]
        ratios = [t / b for t, b in zip(this, base) if b]
        scale, unit = (2**20, "MiB") if key == "peak_bytes" else (1, "s")
        print(f"  {key:10} base {statistics.median(base) / scale:8.3f} {unit}  this {statistics.median(this) / scale:8.3f}"
              f" {unit}  ratio {statistics.median(ratios) if ratios else float('nan'):.2f}")


if __name__ == "__main__":
    main()
