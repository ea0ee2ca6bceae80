"""gpuperf against Holistic Trace Analysis (HTA) on the same traces: time, memory and the numbers.

Usage: python benchmarks/compare_hta.py [--hta-python /tmp/htavenv/bin/python] [--repeat 3] [--more]

HTA lives in its own venv (``python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install
HolisticTraceAnalysis==0.5.0``), never in the project's. Every measurement is a fresh interpreter
(imports and caches alike for both), sampled every 20 ms for the peak memory of its process tree.
HTA: ``TraceAnalysis(trace_dir)`` + ``get_temporal_breakdown()`` + ``get_comm_comp_overlap()``;
gpuperf: ``analyse_paths([...])`` (load, analysis, diagnosis and op table of every rank).
Compared figures: HTA's idle_time / kernel_time and comp_comm_overlap_pctg against gpuperf's
``RankAnalysis.hta_temporal_idle_fraction`` / ``hta_comm_overlap_fraction`` (``"hta"`` in to_json()).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_load import DF_INDEX, PeakSampler, _load_average, tiled_folder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MORE = ("hta/trace_diff/control/control.json.gz", "hta/trace_diff/test/test.json.gz",
        "hta/nccl_parser_config/nccl_data.json.gz", "hta/negative_queue_length_values_check/rank0.json.gz",
        "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
        "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", "param/dlrm_kineto")

HTA_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
tb = a.get_temporal_breakdown(visualize=False)
ov = a.get_comm_comp_overlap(visualize=False)
t3 = time.perf_counter()
idle = {int(r): float(i) / float(k) for r, i, k in zip(tb["rank"], tb["idle_time(us)"], tb["kernel_time(us)"])}
over = {int(r): float(p) / 100 for r, p in zip(ov["rank"], ov["comp_comm_overlap_pctg"])}
print("RESULT" + json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "work_s": t3 - t1,
      "ranks": {r: [idle[r], over.get(r)] for r in idle}}))
"""

GPUPERF_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from gpuperf_gui.core.trace.api import analyse_paths
t1 = time.perf_counter()
res = analyse_paths(sys.argv[1:])
t2 = time.perf_counter()
print("RESULT" + json.dumps({"import_s": t1 - t0, "load_s": None, "work_s": t2 - t1, "ranks": {
    r.trace.rank: [r.analysis.hta_temporal_idle_fraction, r.analysis.hta_comm_overlap_fraction] for r in res.ranks},
    "native": [[1 - r.analysis.gpu_busy_fraction, r.analysis.comm_overlap_fraction] for r in res.ranks][:1]}))
"""


def run_child(python: str, code: str, args: list[str]) -> dict:
    """One fresh interpreter: its parsed RESULT line plus process wall time and peak PSS / RSS of its tree."""
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([python, "-c", code, *args], stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO)
        with PeakSampler(proc.pid) as sampler:
            out, _ = proc.communicate()
        wall = time.perf_counter() - t0
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT")]
        if proc.returncode or not lines:
            err.seek(0)
            tail = err.read().strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            return {"error": tail[0][:120]}
    res = json.loads(lines[-1][6:])
    res.update(wall_s=wall, pss_mib=sampler.peak_kib / 1024, rss_mib=sampler.peak_rss_kib / 1024)
    return res


def measure(python: str, code: str, args: list[str], repeat: int) -> dict:
    runs = [run_child(python, code, args) for _ in range(repeat)]
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]
    med = {k: statistics.median(r[k] for r in ok) for k in ("wall_s", "work_s", "import_s", "pss_mib", "rss_mib")}
    return {**ok[0], **med, "runs": len(ok)}


def pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}%"


def figures(res: dict) -> tuple[list, list]:
    """Per-rank idle and overlap lists (ranks sorted)."""
    ranks = sorted(res["ranks"], key=int)
    return [res["ranks"][r][0] for r in ranks], [res["ranks"][r][1] for r in ranks]


def agree(a: list, b: list) -> str:
    """Largest difference in percentage points over ranks (n/a-n/a counts as agreement)."""
    worst = 0.0
    for x, y in zip(a, b):
        nx, ny = x is None or math.isnan(x), y is None or math.isnan(y)
        if nx or ny:
            if nx != ny:
                return "one is n/a"
            continue
        worst = max(worst, abs(x - y) * 100)
    return f"{worst:.3f} pp" if len(a) == len(b) else "rank sets differ"


def speed_row(name: str, hta: dict, gp: dict) -> None:
    print(f"\n{name}")
    print(f"  {'':9}{'process wall':>14}{'in-process':>12}{'imports':>9}{'peak PSS':>10}{'RSS sum':>10}  idle / overlap (rank 0 or first)")
    for label, r in (("HTA 0.5.0", hta), ("gpuperf", gp)):
        if "error" in r:
            print(f"  {label:9} FAILED: {r['error']}")
            continue
        idle, over = figures(r)
        print(f"  {label:9}{r['wall_s']:>12.2f} s{r['work_s']:>10.2f} s{r['import_s']:>7.2f} s"
              f"{r['pss_mib']:>6.0f} MiB{r['rss_mib']:>6.0f} MiB  {pct(idle[0])} / {pct(over[0])}  ({r['runs']} run(s), median)")
    if "error" not in hta and "error" not in gp:
        (hi, ho), (gi, go) = figures(hta), figures(gp)
        print(f"  speed-up (process wall) {hta['wall_s'] / gp['wall_s']:.1f}x, in-process {hta['work_s'] / gp['work_s']:.1f}x;"
              f" memory {hta['pss_mib'] / gp['pss_mib']:.1f}x less (PSS); {len(hi)} vs {len(gi)} ranks;"
              f" max |diff| idle {agree(hi, gi)}, overlap {agree(ho, go)}")
        print(f"  gpuperf's own figures (whole window, all steps): idle {pct(gp['native'][0][0])}, overlap {pct(gp['native'][0][1])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "traces")
    ap.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool for one rank (median)")
    ap.add_argument("--repeat-ranks", type=int, default=2, help="runs per tool for the tiled ranks")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--more", action="store_true", help="also compare the figures on other shared traces (one run)")
    args = ap.parse_args()
    if not Path(args.hta_python).exists():
        print(f"HTA interpreter {args.hta_python} not found: skipping the comparison (see the docstring to install it)")
        return
    gp_python = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    print(f"load average before: {_load_average()}")
    src = args.shared / DF_INDEX
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp, "one"), Path(tmp, "many")
        one.mkdir(), many.mkdir()
        os.symlink(src, one / src.name)
        speed_row(f"1 rank: {DF_INDEX} (216k events)",
                  measure(args.hta_python, HTA_CHILD, [str(one)], args.repeat),
                  measure(gp_python, GPUPERF_CHILD, [str(src)], args.repeat))
        tiled_folder(src, args.ranks, many)
        speed_row(f"{args.ranks} ranks: the same file tiled (distributedInfo.rank rewritten)",
                  measure(args.hta_python, HTA_CHILD, [str(many)], args.repeat_ranks),
                  measure(gp_python, GPUPERF_CHILD, [str(many)], args.repeat_ranks))
        if args.more:
            print("\nOther traces, one run each (HTA / gpuperf; rank 0 or first shown, max |diff| over all ranks)")
            for i, rel in enumerate(MORE):
                path, folder = args.shared / rel, Path(tmp, f"more{i}")
                if path.is_dir():  # a real multi-rank job: both tools read the folder
                    folder = path
                else:
                    folder.mkdir()
                    os.symlink(path, folder / path.name)
                hta = run_child(args.hta_python, HTA_CHILD, [str(folder)])
                gp = run_child(gp_python, GPUPERF_CHILD, [str(path)])
                if "error" in hta or "error" in gp:
                    print(f"  {rel}: HTA {hta.get('error', 'ok')}; gpuperf {gp.get('error', 'ok')}")
                    continue
                (hi, ho), (gi, go) = figures(hta), figures(gp)
                label = f"{path.parent.name}/{path.name.split('.')[0]}"
                print(f"  {label:<42}{len(hi)}/{len(gi)} rk  idle {pct(hi[0]):>7} / {pct(gi[0]):>7}"
                      f"  overlap {pct(ho[0]):>6} / {pct(go[0]):>6}  max|diff| {agree(hi, gi)}, {agree(ho, go)}"
                      f"  time {hta['wall_s']:.1f} s / {gp['wall_s']:.1f} s")
    print(f"\nload average after: {_load_average()} (2 shared cores: other work slows every figure)")


if __name__ == "__main__":
    main()
