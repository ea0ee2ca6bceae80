"""Seconds of each phase that runs after a rank is loaded (Trace tab and ``gpuperf diagnose``).

Loads the file once (:func:`~gpuperf_gui.core.trace.ingest.load.load_rank`, not timed), then times each
phase alone, in the pipeline's order, wall and CPU seconds (CPU: every thread of this process; it
reads about the same on a busy machine, wall does not):

* the engine's per-rank work: ``analyse_rank``; ``op_table``, the op table with the roofline points
  found from its rows (:func:`~gpuperf_gui.core.trace.analysis.op_points.op_table_and_points`, as the
  engine runs it); ``diagnose``, the job assembly (align, diagnose_rank, multi-rank summary);
* the Trace tab's :func:`~gpuperf_gui.core.trace.session.loaded_trace.build_loaded_trace` in parts (``mfu``,
  ``lanes``: prepare_lanes, ``diag_view``, ``overview``, ``op_tables``, ``activity``: the minimap)
  and whole (``build_total``);
* ``roofline`` (:func:`.loaded_trace.roofline_points`, the tab's last phase) and ``to_json``
  (``gpuperf diagnose --json``'s object).

    nice .venv/bin/python benchmarks/post_load_phases.py /tmp/tabscale/e5M.json
    nice .venv/bin/python benchmarks/post_load_phases.py --cache /tmp/e5M.pkl /tmp/tabscale/e5M.json

``--cache`` pickles the loaded rank there on the first run and reads it on the next ones (loading a
5M-event file takes longer than every phase here together). ``--repeat N`` runs the phases N times
on fresh copies of the rank and prints each phase's minimum. ``GPUPERF_ROOT=/other/checkout``
times that checkout's code on the same pickle (before op_table_and_points existed, ``op_table`` is
the table alone and ``roofline`` finds the points).

Figures on this 2-core VM (shared: the same code reads up to 1.5x apart between runs, so each
"before" ran next to its "after"). Inputs from ``benchmarks/trace_tab_scale.py --make``. Before:
221f716's post-load modules (analysis, optable, op_points, overview, intervals, session, api)
with the rest of the tree as it was at 10:38 that day; after: 90d402e. Wall seconds, two runs each::

    5M events (3.79M drawn)   before         after
    analyse_rank              1.97  2.03     0.80  0.63
    op_table (+ points)       2.80  1.62     1.26  1.03
    build_total               1.12  0.53     0.79  0.67
    roofline                  2.10  0.97     0.00  0.00
    to_json                   1.36  1.03     0.02  0.02
    = tab                     7.99  5.16     2.85  2.33

    10M events (7.56M drawn)
    analyse_rank              5.30  6.06     1.40  1.13
    op_table (+ points)       4.72  4.19     1.88  1.82
    build_total               1.60  1.32     1.49  1.09
    roofline                  2.63  2.86     0.00  0.00
    to_json                   2.52  2.12     0.04  0.02
    = tab                    14.25 14.44     4.77  4.04

``= tab`` is the Trace tab's post-load work (engine after the load, build, roofline points);
``gpuperf diagnose --json`` after the load is ``= engine`` plus ``to_json``.
"""
from __future__ import annotations

import argparse
import copy
import gc
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("GPUPERF_ROOT", str(ROOT)))  # another checkout's code, to compare

from gpuperf_gui.core.trace.engine import api
from gpuperf_gui.core.trace.session import loaded_trace as session  # noqa: E402
from gpuperf_gui.core.trace.analysis.rank_analysis import analyse_rank  # noqa: E402
from gpuperf_gui.core.trace.model.lanes import prepare_lanes  # noqa: E402
from gpuperf_gui.core.trace.ingest.load import load_rank  # noqa: E402
from gpuperf_gui.core.trace.model.trace_model import RankTrace  # noqa: E402
from gpuperf_gui.core.trace.analysis.optable import op_table  # noqa: E402

try:  # the engine's op table, with the roofline points found from its rows
    from gpuperf_gui.core.trace.analysis.op_points import op_table_and_points  # noqa: E402
except ImportError:  # before it existed: the table alone, the points found in "roofline"
    def op_table_and_points(rt: RankTrace) -> tuple[list, None]:
        return op_table(rt), None
from gpuperf_gui.core.trace.analysis.overview import build_overview  # noqa: E402


def loaded_rank(path: Path, cache: Path | None) -> tuple[RankTrace, float]:
    """The rank of ``path`` and the seconds its load took (0 when read from ``cache``)."""
    if cache is not None and cache.exists():
        with cache.open("rb") as f:
            return pickle.load(f), 0.0
    started = time.perf_counter()
    rt = load_rank(path, memory_budget=16 << 30)
    load_s = time.perf_counter() - started
    if cache is not None:
        with cache.open("wb") as f:
            pickle.dump(rt, f, protocol=pickle.HIGHEST_PROTOCOL)
    return rt, load_s


def run_phases(rt: RankTrace) -> dict[str, tuple[float, float]]:
    """Every post-load phase on ``rt`` (which they shift and annotate): (wall, CPU) seconds by
    phase. CPU seconds (every thread of this process) read the same on a busy machine."""
    times: dict[str, tuple[float, float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        gc.collect()
        started, started_cpu = time.perf_counter(), time.process_time()
        out = fn()
        times[name] = (time.perf_counter() - started, time.process_time() - started_cpu)
        return out

    analysis = timed("analyse_rank", lambda: analyse_rank(rt))
    ops, points = timed("op_table", lambda: op_table_and_points(rt))
    loaded_one = (rt, analysis, ops) if points is None else (rt, analysis, ops, points)
    result = timed("diagnose", lambda: api.assemble_job([loaded_one]))
    notes: list[str] = []
    analyses = [r.analysis for r in result.ranks]
    timed("mfu", lambda: session.figures.mfu_figures(analyses))
    timed("lanes", lambda: prepare_lanes(result.model, session.DEFAULT_IDLE_THRESHOLD_US))
    timed("diag_view", lambda: session._diagnosis_view(result))
    timed("overview", lambda: build_overview(result))
    timed("op_tables", lambda: session._op_tables(result))
    loaded = timed("build_total", lambda: session.build_loaded_trace(result, roofline=False))
    timed("activity", lambda: session.activity_profile(loaded.model.ranks, *loaded.full_range_us,
                                                       bins=session.MINIMAP_BINS))
    found = [getattr(r, "points", None) for r in result.ranks]
    timed("roofline", lambda: session.roofline_points(loaded.model.ranks, notes, found) if points is not None
          else session.roofline_points(loaded.model.ranks, notes))
    timed("to_json", lambda: result.to_json())
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--cache", type=Path, help="pickle of the loaded rank (written if absent)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    rt, load_s = loaded_rank(args.trace, args.cache)
    n_events = sum(len(lane) for lane in rt.lanes)
    print(f"{args.trace.name}: {n_events:,} events" + (f", load {load_s:.2f} s" if load_s else " (cached)"))
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):
        times = run_phases(copy.deepcopy(rt) if args.repeat > 1 else rt)
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
    print(f"  {'phase':<13} {'wall s':>7} {'cpu s':>7}")
    for k, (wall, cpu) in best.items():
        print(f"  {k:<13} {wall:7.2f} {cpu:7.2f}")
    for label, parts in (("= engine", ("analyse_rank", "op_table", "diagnose")),
                         ("= tab", ("analyse_rank", "op_table", "diagnose", "build_total", "roofline"))):
        wall, cpu = (sum(best[k][j] for k in parts) for j in (0, 1))
        print(f"  {label:<13} {wall:7.2f} {cpu:7.2f}   ({' + '.join(parts)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
