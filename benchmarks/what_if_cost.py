"""Cost of the what-if projections (core/trace/analysis/what_if.py) against the rest of `gpuperf diagnose`.

Usage: nice python benchmarks/what_if_cost.py [--events 1000000] [--source tests/data/h200/eager_small.json.gz]
       [--repeat 3] [--workdir /tmp/gpuperf-whatif]

Writes one plain-JSON trace of about N events (the source's events repeated, core/trace/synthetic/tile.py,
the same input as benchmarks/scale.py), then in this process: the diagnosis as `gpuperf diagnose`
makes it (load, analysis, op table, roofline points: ``Trace(paths).result()``) and, apart, the what-if
(graph, baseline replay, critical path and every projection: ``what_if.for_result``). Prints the
median of ``--repeat`` runs of each and their ratio. The what-if walks at most
``critical_path.MAX_STEPS`` steady steps, so its cost does not grow with the trace's length.

Measured 2026-12-01 on the shared 2-core VM (8 agents on 2 cores), defaults (1,005,369 events,
eager_small repeated, 272 MB), --repeat 3:

    diagnose 2.78 s (runs 3.49, 2.78, 2.74)  what-if 0.355 s (runs 0.471, 0.297, 0.355)  12.8 %
    diagnose 0.67 s (runs 0.70, 0.65, 0.67)  what-if 0.091 s (runs 0.112, 0.086, 0.091)  13.7 %  (VM quieter, 23:45 UTC)

2026-12-02, every projection walked at both ends of the profiler's cost range (what_if.PROFILER_US_PER_EVENT):

    diagnose 4.73 s (runs 5.78, 4.73, 3.66)  what-if 1.080 s (runs 1.550, 0.956, 1.080)  22.8 %  (dict lookups)
    diagnose 4.62 s (runs 4.60, 4.62, 4.76)  what-if 0.682 s (runs 0.723, 0.682, 0.543)  14.8 %  (array lookups)
    diagnose 3.68 s (runs 4.28, 3.68, 2.89)  what-if 0.617 s (runs 0.735, 0.617, 0.359)  16.8 %
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuperf_gui.core.trace.session.trace import Trace  # noqa: E402
from gpuperf_gui.core.trace.synthetic.tile import repeat_events  # noqa: E402
from gpuperf_gui.core.trace.analysis.what_if import for_result  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--source", type=Path, default=ROOT / "tests/data/h200/eager_small.json.gz")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/gpuperf-whatif"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    trace = args.workdir / f"whatif_{args.events}.json"
    if not trace.exists():
        n = repeat_events(args.source, trace, args.events)
        print(f"wrote {trace} ({n:,} events, {trace.stat().st_size / 1e6:.0f} MB)")
    diag, proj = [], []
    result = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = Trace([trace], workers=1).result()
        t1 = time.perf_counter()
        wi = for_result(result, keep_graph=True)
        t2 = time.perf_counter()
        diag.append(t1 - t0)
        proj.append(t2 - t1)
    d, p = statistics.median(diag), statistics.median(proj)
    events = sum(r.trace.n_events for r in result.ranks)
    print(f"events {events:,}  diagnose {d:.2f} s (runs {', '.join(f'{x:.2f}' for x in diag)})  "
          f"what-if {p:.3f} s (runs {', '.join(f'{x:.3f}' for x in proj)})  what-if / diagnose {100 * p / d:.1f} %")
    print(f"graph: {len(wi.graph) if wi and wi.graph is not None else '-'} nodes; projections "
          f"{', '.join(f'{q.cause} {q.speedup_upper_bound:.2f}x' for q in wi.projections) if wi else '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
