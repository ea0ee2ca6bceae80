"""`gpuperf diagnose` against HTA, whole process: interpreter start, imports, load, analysis, output, exit.

    nice python benchmarks/hta_whole_process.py [TRACE] [--runs 7] [--hta-python /tmp/htavenv/bin/python]

One command each, run in turn (gpuperf, HTA, gpuperf, HTA, ...) after one warm-up of each, so the two
see the same machine; printed: each one's median wall and CPU (user + sys) seconds, and the median of
the per-pair ratios HTA / gpuperf (a ratio of two neighbouring runs holds when the machine's speed
drifts; quote it, not the absolute times). Default TRACE: HTA's 216k-event df_index_resolver trace.

* gpuperf: ``python -m gpuperf_gui.cli diagnose TRACE --json``, the console script's path (load, analysis,
  diagnosis, op table, roofline points, JSON on stdout). Its package is copied into a temporary folder
  and compiled, as ``pip install`` does (``--no-bytecode``: the checkout as it is; with
  PYTHONDONTWRITEBYTECODE=1, as here, every start then compiles it again).
* HTA 0.5.0, in its own venv (``python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install
  HolisticTraceAnalysis==0.5.0 'pandas<3'``): ``TraceAnalysis(trace_dir)`` (load), then
  ``get_temporal_breakdown()`` and ``get_comm_comp_overlap()``: its two figures gpuperf's JSON
  also holds (``hta.temporal_idle_fraction``, ``hta.comm_overlap_fraction``).

Figures (2-core VM shared with other agents' runs; 2026-12-01, trees f4cf702-d24a19c; gpuperf = each with and
without the start-up/analysis speed work: fast exit, no state files, no numpy.ma, cheaper op table
and kernel classes, collector off during imports):
  GPUPERF_DECODE_WORKERS=1 nice .venv/bin/python benchmarks/hta_whole_process.py --runs 7  (serial decode)
    before: gpuperf 1.19 s wall (min 0.72) / 0.68 s CPU, HTA 7.59 s: 7.3x (load average 3.1)
    after:  gpuperf 0.62 s wall (min 0.56) / 0.57 s CPU, HTA 4.86 s: 8.6x (pairs 5.6-9.0x; load 1.7)
  nice .venv/bin/python benchmarks/hta_whole_process.py --runs 7  (the loader's default: scanning threads)
    before: gpuperf 1.04 s / 0.89 s CPU, HTA 5.82 s: 5.4x;  after: 0.79 s / 0.80 s CPU, HTA 4.97 s: 6.4x
  On this 54 MB file the decoding pool costs ~0.18 s wall on the two busy cores; with the pool's imports
  made lazy and numpy.ma kept out of the loader too (a scratch copy), serial: 0.59 s vs 4.99 s, 8.3x.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT / "tests/data/shared_traces/hta/df_index_resolver/df_index_resolver.json.gz"

HTA_SCRIPT = """
import logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
tb = a.get_temporal_breakdown(visualize=False)
ov = a.get_comm_comp_overlap(visualize=False)
print(tb.to_json(), ov.to_json())
"""


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one run; its output is read and dropped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}): {proc.stderr.decode()[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def gpuperf_command(trace: Path, tmp: Path, bytecode: bool) -> tuple[list[str], dict[str, str], Path]:
    """The command, its environment and its folder (``-m`` imports the package from there first)."""
    env = dict(os.environ)
    if not bytecode:
        return [sys.executable, "-m", "gpuperf_gui.cli", "diagnose", str(trace), "--json"], env, ROOT
    # as installed: the package's .pyc files exist
    shutil.copytree(ROOT / "gpuperf_gui", tmp / "gpuperf_gui", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tmp / "gpuperf_gui")], check=True)
    # what the `gpuperf` console script runs (any checkout's: `entry()`, or `main()` before it existed)
    return [sys.executable, "-m", "gpuperf_gui.cli", "diagnose", str(trace), "--json"], env, tmp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    ap.add_argument("--no-bytecode", action="store_true", help="run the checkout's sources as they are")
    args = ap.parse_args()
    if not Path(args.hta_python).exists():
        print(f"HTA interpreter {args.hta_python} not found: see the docstring to install it")
        return
    trace = args.trace.resolve()
    with tempfile.TemporaryDirectory(prefix="gpuperf-vs-hta-") as name:
        tmp = Path(name)
        folder = tmp / "trace_dir"  # HTA reads a folder of rank files
        folder.mkdir()
        os.symlink(trace, folder / trace.name)
        ours = gpuperf_command(trace, tmp, not args.no_bytecode)
        hta = ([args.hta_python, "-c", HTA_SCRIPT, str(folder)], dict(os.environ), tmp)
        timed(*ours), timed(*hta)  # warm-up: the file and both venvs in the page cache
        pairs = [(timed(*ours), timed(*hta)) for _ in range(args.runs)]
    g_wall, g_cpu = (statistics.median(p[0][i] for p in pairs) for i in (0, 1))
    h_wall, h_cpu = (statistics.median(p[1][i] for p in pairs) for i in (0, 1))
    ratio = [h[0] / g[0] for g, h in pairs]
    print(f"{trace.name}: {args.runs} pairs, {'sources as they are' if args.no_bytecode else 'bytecode compiled'}"
          f", load average {os.getloadavg()[0]:.1f}")
    print(f"  gpuperf diagnose --json  wall {g_wall:.3f} s (min {min(p[0][0] for p in pairs):.3f})  CPU {g_cpu:.3f} s")
    print(f"  HTA 0.5.0                wall {h_wall:.3f} s (min {min(p[1][0] for p in pairs):.3f})  CPU {h_cpu:.3f} s")
    print(f"  HTA / gpuperf, whole process: median {statistics.median(ratio):.1f}x "
          f"(pairs {min(ratio):.1f}x to {max(ratio):.1f}x); CPU {h_cpu / g_cpu:.1f}x")


if __name__ == "__main__":
    main()
