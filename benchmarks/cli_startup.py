"""What `gpuperf diagnose` pays before it reads the trace: interpreter start, imports, and what it imports.

    python benchmarks/cli_startup.py [TRACE] [--runs 5] [--top 25] [--no-bytecode]

Each run is a fresh interpreter running the console script's path (``cli.entry``) on TRACE (default: the
216k-event HTA df_index_resolver trace). The child stamps the moment main() calls the subcommand's
run() (its imports done and its arguments parsed, the file not yet opened) and the end; the parent
stamps the spawn (the clocks are the same CLOCK_MONOTONIC). Printed: the medians of start-up
(spawn -> ready to read the file) and of the whole process; then one ``-X importtime`` run: the
modules imported before the file is read, their count, the slowest imports (cumulative, top level
of the import tree) and any module diagnose should never import (torch, dask, Qt, pandas, the
benchmark, catalog and MFU code, the state files; numpy.ma and the process pool, which a single file
does not need).

Bytecode: pip compiles the package on install, so by default the package is copied into a temporary
folder and compiled there (nothing written into the repository) and every run imports that copy.
``--no-bytecode`` runs the repository's sources as they are (with PYTHONDONTWRITEBYTECODE=1, as in
a checkout here, every start compiles them again).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT / "tests/data/shared_traces/hta/df_index_resolver/df_index_resolver.json.gz"
UNWANTED = ("torch", "dask", "distributed", "PySide6", "pyqtgraph", "pandas", "scipy", "tomllib", "numpy.ma",
            "multiprocessing", "concurrent.futures.process",
            "gpuperf_gui.views", "gpuperf_gui.core.bench", "gpuperf_gui.core.catalog", "gpuperf_gui.core.state_files",
            "gpuperf_gui.core.mfu", "gpuperf_gui.core.hardware", "gpuperf_gui.core.profile_script")
"""Modules (and their submodules) `gpuperf diagnose` has no use for."""

CHILD = """
import atexit, json, os, sys, time
from gpuperf_gui import cli
stamp = {}
build = cli.build_parser


def stamped_parser(*a, **k):  # the command's run() is stamped when main() calls it: imports done, file unread
    parser = build(*a, **k)
    parse = parser.parse_args

    def parse_args(*pa, **pk):
        args = parse(*pa, **pk)
        run = args.func

        def func(ns):
            stamp["ready"], stamp["modules"] = time.perf_counter(), sorted(sys.modules)
            return run(ns)
        args.func = func
        return args
    parser.parse_args = parse_args
    return parser


def report():  # entry() runs the exit handlers, then ends the process without teardown
    print("RESULT" + json.dumps({"ready": stamp["ready"], "end": time.perf_counter(), "rc": 0,
                                 "modules_before_read": stamp["modules"], "modules_at_end": len(sys.modules)}),
          file=sys.stderr)


cli.build_parser = stamped_parser
atexit.register(report)
sys.stdout = open(os.devnull, "w")
cli.entry()  # the console script's own path: gpuperf = gpuperf_gui.cli:entry
"""


def one_run(trace: Path, root: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, "diagnose", str(trace), "--json"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    ended = time.perf_counter()
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("RESULT")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"gpuperf diagnose failed (rc={proc.returncode}): {proc.stderr[-2000:]}")
    out = json.loads(lines[-1][len("RESULT"):])
    if out["rc"] != 0:
        raise SystemExit(f"gpuperf diagnose exited {out['rc']}: {proc.stderr[:2000]}")
    out["startup_s"] = out["ready"] - started
    out["wall_s"] = ended - started
    return out


def import_tree(trace: Path, root: Path) -> list[tuple[int, float, float, str]]:
    """(depth, self s, cumulative s, module) from one ``-X importtime`` run of the CLI."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpuperf_gui.cli", "diagnose", str(trace),
                           "--json"], cwd=root, capture_output=True, text=True, timeout=300)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:"):].split("|")
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append((depth, int(self_us) / 1e6, int(cum_us) / 1e6, name.strip()))
    return rows


def _unwanted(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == u or m.startswith(u + ".") for u in UNWANTED)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-bytecode", action="store_true")
    args = parser.parse_args()
    trace = args.trace.resolve()
    with tempfile.TemporaryDirectory(prefix="gpuperf-startup-") as tmp:
        root = ROOT
        if not args.no_bytecode:
            root = Path(tmp)
            shutil.copytree(ROOT / "gpuperf_gui", root / "gpuperf_gui",
                            ignore=shutil.ignore_patterns("__pycache__"))
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "gpuperf_gui")],
                           check=True, capture_output=True)
        one_run(trace, root)  # warm the file cache
        runs = [one_run(trace, root) for _ in range(args.runs)]
        rows = import_tree(trace, root)
    startup = statistics.median(r["startup_s"] for r in runs)
    wall = statistics.median(r["wall_s"] for r in runs)
    before = runs[-1]["modules_before_read"]
    print(f"gpuperf diagnose {args.trace.name} --json, {args.runs} fresh processes, "
          f"{'sources compiled at each start' if args.no_bytecode else 'bytecode compiled (as installed)'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  start-up (spawn -> ready to read the file): median {startup:.3f} s "
          f"(min {min(r['startup_s'] for r in runs):.3f})")
    print(f"  whole process: median {wall:.3f} s (min {min(r['wall_s'] for r in runs):.3f}); "
          f"start-up is {startup / wall:.0%} of it")
    print(f"  modules imported before the file is read: {len(before)} "
          f"(at the end: {runs[-1]['modules_at_end']})")
    bad = _unwanted(before)
    print(f"  modules diagnose should not need: {', '.join(bad) if bad else 'none'}")
    top = sorted((r for r in rows if r[0] == 0), key=lambda r: -r[2])
    total = sum(r[2] for r in top)
    print(f"\n-X importtime (one run; its own bookkeeping inflates it): {total * 1e3:.0f} ms over {len(rows)} modules")
    print(f"  {'cumulative ms':>13}  {'self ms':>8}  module (top of the import tree, then gpuperf's own)")
    for _, self_s, cum_s, name in top[:args.top]:
        print(f"  {cum_s * 1e3:13.1f}  {self_s * 1e3:8.1f}  {name}")
    ours = sorted((r for r in rows if r[3].startswith("gpuperf_gui")), key=lambda r: -r[1])
    print("  gpuperf modules by their own (self) time:")
    for _, self_s, cum_s, name in ours[:args.top]:
        print(f"  {cum_s * 1e3:13.1f}  {self_s * 1e3:8.1f}  {name}")


if __name__ == "__main__":
    main()
