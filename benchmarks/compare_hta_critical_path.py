"""gpuperf's critical path against HTA's ``critical_path_analysis`` on the same traces.

Usage: python benchmarks/compare_hta_critical_path.py [--hta-python PY] [TRACE ...]

HTA runs in the interpreter ``--hta-python`` (default: this one; HTA 0.5.0 needs pandas < 3:
``python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install HolisticTraceAnalysis 'pandas<3'``),
once per ProfilerStep instance of rank 0 (HTA counts the CPU ``ProfilerStep#N`` spans and their GPU
copies as instances, in the dataframe's order); it prints the path's total and its ``bound_by``
split. gpuperf prints its replayed step and its path's split over the replayed steps
(docs/what-if.md explains the differences). Default traces: tests/data/h200 loader0, loader_fed,
eager_tiny, packed_elementwise.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HTA_CHILD = r'''
import json, logging, os, shutil, sys, tempfile
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
path = sys.argv[1]
d = tempfile.mkdtemp()
shutil.copy(path, os.path.join(d, "rank0" + "".join(os.path.basename(path).partition(".")[1:])))
ta = TraceAnalysis(trace_dir=d)
df = ta.t.get_trace(0)
ids = [v for k, v in ta.t.symbol_table.get_sym_id_map().items() if "ProfilerStep" in k]
ann = df[df.name.isin(ids)]
out = []
for inst in range(len(ann)):
    cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=inst)
    bd = cp.get_critical_path_breakdown()
    out.append({"instance": inst, "window_us": float(ann.dur.iloc[inst]), "ok": bool(ok),
                "total_us": float(bd.duration.sum()),
                "bound_by_us": {k or "dependency": float(v) for k, v in bd.groupby("bound_by").duration.sum().items()}})
print(json.dumps(out))
'''


def ours(path: Path) -> dict:
    from gpuperf_gui.core.trace.session.trace import Trace
    from gpuperf_gui.core.trace.analysis.what_if import for_result

    result = Trace([path], workers=1).result()
    wi = for_result(result)
    return {"step_s": wi.step_time_s, "path_s": wi.critical_path.length_us / 1e6,
            "replayed_steps": wi.graph.n_steps if wi.graph is not None else None,
            "share": {k: round(v, 3) for k, v in sorted(wi.critical_path.share.items(), key=lambda kv: -kv[1])[:6]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hta-python", default=sys.executable)
    ap.add_argument("traces", nargs="*", type=Path)
    args = ap.parse_args()
    traces = args.traces or [ROOT / "tests/data/h200" / f"{n}.json.gz" for n in
                             ("data_starved_loader0", "loader_fed", "eager_tiny", "packed_elementwise")]
    for t in traces:
        print(f"== {t.name}")
        o = ours(t)
        print(f"  gpuperf: step {o['step_s'] * 1e3:.2f} ms (median); path over the replayed steps "
              f"{o['path_s'] * 1e3:.2f} ms: {o['share']}")
        run = subprocess.run([args.hta_python, "-c", HTA_CHILD, str(t)], capture_output=True, text=True, timeout=1200)
        if run.returncode:
            print("  HTA failed:", run.stderr.strip().splitlines()[-1:])
            continue
        for inst in json.loads(run.stdout.strip().splitlines()[-1]):
            split = {k: round(v / 1e3, 2) for k, v in inst["bound_by_us"].items() if v}
            print(f"  HTA instance {inst['instance']}: window {inst['window_us'] / 1e3:.2f} ms, path "
                  f"{inst['total_us'] / 1e3:.2f} ms (ms: {split})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
