"""gpuperf against Holistic Trace Analysis (HTA) on the same traces: time, memory and the numbers.

Usage: python benchmarks/compare_hta.py [--hta-python /tmp/htavenv/bin/python] [--repeat 3] [--more]

HTA lives in its own venv (``python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install
HolisticTraceAnalysis==0.5.0``), never in the project's. Every measurement is a fresh interpreter
(imports and caches alike for both), sampled every 20 ms for the peak memory of its process tree.
HTA: ``TraceAnalysis(trace_dir)`` + ``get_temporal_breakdown()`` + ``get_comm_comp_overlap()``;
gpuperf: ``Trace([...]).result()`` (load, analysis, diagnosis and op table of every rank).
Compared figures: HTA's idle_time / kernel_time and comp_comm_overlap_pctg against gpuperf's
``RankAnalysis.hta_temporal_idle_fraction`` / ``hta_comm_overlap_fraction`` (``"hta"`` in to_json()).

``--dlrm [FOLDER]`` (default param/dlrm_kineto of the shared traces: 8 ranks of ~3.3k events, DLRM on
V100s) times both tools as whole processes, ``--pairs`` alternating pairs (HTA, gpuperf, HTA, ...):
HTA's ``TraceAnalysis`` + ``get_temporal_breakdown`` + ``get_comm_comp_overlap`` +
``get_idle_time_breakdown`` (every rank) against ``gpuperf diagnose FOLDER --json`` (the console
script: load, analysis, diagnosis, op tables, roofline points, what-if of every rank, the JSON
printed); wall and CPU (the process and the children it waited for, ``os.wait4``) and their ratios
pair by pair; the figures side by side (temporal idle, overlap, and the idle split per stream:
host_wait / kernel_wait / other); and, in the same run, gpuperf's cost per small rank: every rank
of the folder (and of tests/data/h200/ddp_straggler_gloo) loaded, analysed, diagnosed and
summarised as a Dask task does it (``cluster.summarize_rank``) in one warm process, CPU per rank.
After the pairs, what bounds the ratio: HTA against a process that only imports numpy and msgspec
(the floor of any Python + numpy tool) and against gpuperf computing HTA's figures only.
Both tools' bytecode is compiled first, as an install leaves it (HTA's venv has it; a checkout run
with ``PYTHONDONTWRITEBYTECODE`` would compile gpuperf's ~130 modules in every process).

``--idle [PATH ...]`` compares the idle breakdown instead: HTA's ``get_idle_time_breakdown`` (every
stream of every rank: host_wait / kernel_wait / other as shares of the stream's idle time) side by
side with gpuperf's ``hta.idle_by_stream_s`` and the temporal idle, one file or rank folder at a time
(default: every shared trace and tests/data/h200). ``--write-oracle FILE`` stores HTA's figures as
JSON (tests/data/hta_idle_breakdown.json is made this way).
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
from gpuperf_gui.core.trace.session.trace import Trace
t1 = time.perf_counter()
res = Trace(sys.argv[1:]).result()
t2 = time.perf_counter()
print("RESULT" + json.dumps({"import_s": t1 - t0, "load_s": None, "work_s": t2 - t1, "ranks": {
    r.trace.rank: [r.analysis.hta_temporal_idle_fraction, r.analysis.hta_comm_overlap_fraction] for r in res.ranks},
    "native": [[1 - r.analysis.gpu_busy_fraction, r.analysis.comm_overlap_fraction] for r in res.ranks][:1]}))
"""


HTA_IDLE_CHILD = """
import json, logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
out = {}
for r in sorted(a.t.traces):
    res = a.get_idle_time_breakdown(ranks=[r], visualize=False)
    df = res[0] if isinstance(res, tuple) else res
    split = {}
    for row in df.to_dict(orient="records"):
        split.setdefault(str(int(row["stream"])), {})[row["idle_category"]] = float(row["idle_time"])
    out[str(r)] = split
tb = a.get_temporal_breakdown(visualize=False)
temporal = {str(int(r)): float(i) / float(k) for r, i, k in zip(tb["rank"], tb["idle_time(us)"], tb["kernel_time(us)"])}
print("RESULT" + json.dumps({"idle_by_stream_us": out, "temporal_idle": temporal}))
"""

GPUPERF_IDLE_CHILD = """
import json, sys
from gpuperf_gui.core.trace.session.trace import Trace
res = Trace(sys.argv[1:], workers=1).result()
print("RESULT" + json.dumps({"idle_by_stream_us": {str(r.trace.rank): {s: {k: v * 1e6 for k, v in d.items()}
    for s, d in r.analysis.hta_idle_by_stream_s.items()} for r in res.ranks},
    "temporal_idle": {str(r.trace.rank): r.analysis.hta_temporal_idle_fraction for r in res.ranks}}))
"""


HTA_DLRM_CHILD = """
import json, logging, sys
logging.disable(logging.CRITICAL)
import warnings
warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
tb = a.get_temporal_breakdown(visualize=False)
ov = a.get_comm_comp_overlap(visualize=False)
res = a.get_idle_time_breakdown(ranks=sorted(a.t.traces), visualize=False)
df = res[0] if isinstance(res, tuple) else res
split = {}
for row in df.to_dict(orient="records"):
    split.setdefault(str(int(row["rank"])), {}).setdefault(str(int(row["stream"])), {})[row["idle_category"]] = \
        float(row["idle_time"])
print("RESULT" + json.dumps({
    "temporal_idle": {str(int(r)): float(i) / float(k) for r, i, k in zip(tb["rank"], tb["idle_time(us)"], tb["kernel_time(us)"])},
    "overlap": {str(int(r)): float(p) / 100 for r, p in zip(ov["rank"], ov["comp_comm_overlap_pctg"])},
    "idle_by_stream_us": split}))
"""

FLOOR_CHILD = "import numpy, msgspec"
"""The least any Python + numpy tool pays: the interpreter and its two libraries imported."""

SAME_FIGURES_CHILD = """
import json, sys
from gpuperf_gui.core.trace.analysis.rank_analysis import analyse_rank
from gpuperf_gui.core.trace.ingest.load import discover_files, load_rank
ranks = {}
for i, f in enumerate(discover_files(sys.argv[1:])):
    a = analyse_rank(load_rank(f, order_index=i))
    ranks[str(a.rank)] = [a.hta_temporal_idle_fraction, a.hta_comm_overlap_fraction, a.hta_idle_by_stream_s]
print("RESULT" + json.dumps(ranks))
"""
"""gpuperf computing HTA's figures only (load and analyse each rank, no diagnosis, op table nor what-if)."""

PER_RANK_CHILD = """
import json, sys, time
from pathlib import Path
from gpuperf_gui.core.trace.engine.cluster import summarize_rank
from gpuperf_gui.core.trace.ingest.load import discover_files
out = {}
for folder in sys.argv[2:]:
    files = [str(f) for f in discover_files([folder])]
    for i, f in enumerate(files):  # warm: imports, caches, the file cache
        summarize_rank(f, i)
    best = None
    for _ in range(int(sys.argv[1])):
        t0 = time.process_time()
        events = sum(summarize_rank(f, i).n_events for i, f in enumerate(files))
        cpu = time.process_time() - t0
        best = cpu if best is None else min(best, cpu)
    out[folder] = {"ranks": len(files), "events": events, "cpu_s": best}
print("RESULT" + json.dumps(out))
"""


def whole_process(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd`` to its end: (wall s, CPU s of it and the children it waited for, stdout)."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])}...: exit {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, text


def compile_bytecode(python: str, package_dir: Path) -> None:
    """Compile a package's modules (quietly), as ``pip install`` does."""
    subprocess.run([python, "-m", "compileall", "-q", str(package_dir)], stdout=subprocess.DEVNULL, check=False)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def compare_dlrm(folder: Path, hta_python: str, gp_python: str, pairs: int, rank_rounds: int) -> None:
    """Whole-process HTA against whole-process gpuperf on one rank folder, alternating; the figures
    beside each other; gpuperf's CPU per small rank."""
    gpuperf = str(Path(gp_python).with_name("gpuperf"))
    compile_bytecode(gp_python, REPO / "gpuperf_gui")
    print(f"{folder}: {len(list(folder.glob('*.json*')))} rank files; {pairs} alternating pairs "
          "(HTA, gpuperf), after one warm-up run of each")
    whole_process([hta_python, "-c", HTA_DLRM_CHILD, str(folder)])
    whole_process([gpuperf, "diagnose", str(folder), "--json"])
    hta_runs, gp_runs = [], []
    for _ in range(pairs):
        hta_runs.append(whole_process([hta_python, "-c", HTA_DLRM_CHILD, str(folder)]))
        gp_runs.append(whole_process([gpuperf, "diagnose", str(folder), "--json"]))
    bound_rows = _ratio_bounds(folder, gp_python, hta_runs)
    wall_ratio = [h[0] / g[0] for h, g in zip(hta_runs, gp_runs)]
    cpu_ratio = [h[1] / g[1] for h, g in zip(hta_runs, gp_runs)]
    print(f"  HTA 0.5.0 (load + temporal + overlap + idle breakdown): wall {_spread([h[0] for h in hta_runs])} s, "
          f"CPU {_spread([h[1] for h in hta_runs])} s")
    print(f"  gpuperf diagnose --json (everything it prints):        wall {_spread([g[0] for g in gp_runs])} s, "
          f"CPU {_spread([g[1] for g in gp_runs])} s")
    print(f"  HTA / gpuperf, pair by pair: wall {_spread(wall_ratio)}x, CPU {_spread(cpu_ratio)}x")
    for row in bound_rows:
        print(row)
    hta = json.loads(hta_runs[-1][2].split("RESULT", 1)[1])
    ranks = json.loads(gp_runs[-1][2])["ranks"]
    ours = {str(r["rank"]): r["hta"] for r in ranks}
    print("  figures, HTA / gpuperf: temporal idle, comm/compute overlap, idle split of each stream "
          "(host_wait / kernel_wait / other, shares of the stream's idle time)")
    worst = {"idle": 0.0, "overlap": 0.0, "split": 0.0}
    for rank in sorted(hta["temporal_idle"], key=int):
        g = ours.get(rank, {})
        idle_h, idle_g = hta["temporal_idle"][rank], g.get("temporal_idle_fraction")
        over_h, over_g = hta["overlap"].get(rank), g.get("comm_comp_overlap_fraction")
        worst["idle"] = max(worst["idle"], abs(idle_h - idle_g) * 100)
        if over_h is not None and over_g is not None:
            worst["overlap"] = max(worst["overlap"], abs(over_h - over_g) * 100)
        print(f"    rank {rank}: idle {pct(idle_h)} / {pct(idle_g)}, overlap {pct(over_h)} / {pct(over_g)}")
        gp_split = {s: {k: v * 1e6 for k, v in d.items()} for s, d in (g.get("idle_by_stream_s") or {}).items()}
        for rk, stream, h, gg, diff in idle_rows({"idle_by_stream_us": {rank: hta["idle_by_stream_us"].get(rank, {})}},
                                                  {"idle_by_stream_us": {rank: gp_split}}):
            worst["split"] = max(worst["split"], diff)
            cells = " ".join(f"{pct(h[k])}/{pct(gg[k])}" for k in ("host_wait", "kernel_wait", "other"))
            print(f"      stream {stream:>3}: {cells}")
    print(f"  largest differences: idle {worst['idle']:.3f} pp, overlap {worst['overlap']:.3f} pp, "
          f"idle split {worst['split']:.3f} pp")
    small = [str(folder), str(REPO / "tests" / "data" / "h200" / "ddp_straggler_gloo")]
    per = json.loads(whole_process([gp_python, "-c", PER_RANK_CHILD, str(rank_rounds), *small])[2].split("RESULT", 1)[1])
    for path, r in per.items():
        print(f"  gpuperf per small rank ({Path(path).name}: {r['ranks']} ranks, {r['events'] / r['ranks']:,.0f} "
              f"events a rank), one warm process, best of {rank_rounds} rounds: {1e3 * r['cpu_s'] / r['ranks']:.2f} ms "
              f"CPU a rank ({1e6 * r['cpu_s'] / r['events']:.2f} µs/event)")


def _ratio_bounds(folder: Path, gp_python: str, hta_runs: list[tuple[float, float, str]]) -> list[str]:
    """What bounds the whole-process ratio, measured after the pairs: HTA's median wall against (a) a
    process that only imports numpy and msgspec (no Python + numpy tool can beat it) and (b) gpuperf
    computing HTA's figures only (``SAME_FIGURES_CHILD``); each the median of as many runs as pairs."""
    hta_wall_s = statistics.median(h[0] for h in hta_runs)
    rows = []
    for label, code in (("python -c 'import numpy, msgspec' (the floor)", FLOOR_CHILD),
                        ("gpuperf, HTA's figures only (load + analyse)", SAME_FIGURES_CHILD)):
        walls = [whole_process([gp_python, "-c", code, str(folder)])[0] for _ in hta_runs]
        rows.append(f"  {label}: wall {_spread(walls)} s; HTA / it {hta_wall_s / statistics.median(walls):.2f}x")
    return rows


def idle_ratios(split_us: dict[str, float]) -> dict[str, float]:
    """HTA's idle_time_ratio: each category's share of the stream's idle time."""
    total = sum(split_us.get(k, 0.0) for k in ("host_wait", "kernel_wait", "other"))
    return {k: (split_us.get(k, 0.0) / total if total else 0.0) for k in ("host_wait", "kernel_wait", "other")}


def idle_rows(hta: dict, gp: dict) -> list[tuple[str, str, dict, dict, float]]:
    """(rank, stream, HTA ratios, gpuperf ratios, largest difference in points) per stream both have."""
    rows = []
    for rank, streams in sorted(hta["idle_by_stream_us"].items()):
        ours = gp["idle_by_stream_us"].get(rank, {})
        for stream, split in sorted(streams.items(), key=lambda kv: int(kv[0])):
            h = idle_ratios(split)
            g = idle_ratios(ours.get(stream, {}))
            rows.append((rank, stream, h, g, max(abs(h[k] - g[k]) for k in h) * 100))
    return rows


def _oracle_key(path: Path) -> str:
    """The path relative to tests/data (shared traces under shared_traces/), else as given."""
    data = REPO / "tests" / "data"
    try:
        return str(path.resolve().relative_to(data.resolve()))
    except ValueError:
        return str(path)


def compare_idle(paths: list[Path], hta_python: str, gp_python: str, oracle: Path | None) -> None:
    print("Idle breakdown per stream, HTA 0.5.0 / gpuperf (shares of the stream's idle time), and temporal idle")
    print(f"  {'trace':<44}{'rank':>5}{'stream':>7}  {'host_wait':>15}  {'kernel_wait':>15}  {'other':>15}  max|diff|")
    stored, worst = {}, 0.0
    for path in (p.resolve() for p in paths):
        with tempfile.TemporaryDirectory() as tmp:
            folder = path
            if path.is_file():
                folder = Path(tmp)
                os.symlink(path, folder / path.name)
            hta = run_child(hta_python, HTA_IDLE_CHILD, [str(folder)])
            gp = run_child(gp_python, GPUPERF_IDLE_CHILD, [str(path)])
        label = f"{path.parent.name}/{path.name.split('.')[0]}"[:43]
        if "error" in hta or "error" in gp:
            print(f"  {label:<44} HTA {hta.get('error', 'ok')}; gpuperf {gp.get('error', 'ok')}")
            continue
        stored[_oracle_key(path)] = {"idle_by_stream_us": hta["idle_by_stream_us"], "temporal_idle": hta["temporal_idle"]}
        for rank, stream, h, g, diff in idle_rows(hta, gp):
            worst = max(worst, diff)
            cells = "  ".join(f"{pct(h[k]):>7}/{pct(g[k]):>7}" for k in ("host_wait", "kernel_wait", "other"))
            print(f"  {label:<44}{rank:>5}{stream:>7}  {cells}  {diff:.2f} pp")
        for rank, idle in sorted(hta["temporal_idle"].items()):
            print(f"  {label:<44}{rank:>5}{'all':>7}  temporal idle {pct(idle)} / {pct(gp['temporal_idle'].get(rank))}")
    print(f"largest idle-split difference: {worst:.2f} percentage points")
    if oracle:
        oracle.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"wrote {oracle}")


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


DLRM = Path("param/dlrm_kineto")


def _shared_root(shared: Path) -> Path:
    """The shared traces' folder holding param/dlrm_kineto (tests/data's copy, else /work/shared/traces)."""
    for root in (shared, Path("/work/shared/traces")):
        if (root / DLRM).is_dir():
            return root
    raise SystemExit(f"{DLRM} not found under {shared} or /work/shared/traces")


def default_idle_paths(shared: Path) -> list[Path]:
    """Every shared trace file (rank folders as one job) and every tests/data/h200 trace."""
    if not shared.is_dir():
        shared = REPO / "tests" / "data" / "shared_traces"
    files = sorted(p for p in shared.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz"))
                   and not p.name.endswith(".meta.json") and p.name != "ceilings.json")
    h200 = REPO / "tests" / "data" / "h200"
    for meta in sorted(h200.glob("*.meta.json")):
        name = meta.name.removesuffix(".meta.json")
        single = h200 / f"{name}.json.gz"
        files.append(single if single.exists() else h200 / name)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=REPO / "tests" / "data" / "shared_traces")
    ap.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool for one rank (median)")
    ap.add_argument("--repeat-ranks", type=int, default=2, help="runs per tool for the tiled ranks")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--more", action="store_true", help="also compare the figures on other shared traces (one run)")
    ap.add_argument("--idle", nargs="*", type=Path, default=None, metavar="PATH",
                    help="compare the idle breakdown per stream on these traces (default: all shared and h200 traces)")
    ap.add_argument("--write-oracle", type=Path, default=None, metavar="FILE", help="with --idle: store HTA's figures")
    ap.add_argument("--dlrm", nargs="?", type=Path, const=DLRM, default=None, metavar="FOLDER",
                    help="whole-process HTA vs gpuperf on a rank folder (default: the 8-rank DLRM job), "
                         "the figures beside each other, gpuperf's CPU per small rank")
    ap.add_argument("--pairs", type=int, default=5, help="with --dlrm: alternating pairs (default 5)")
    ap.add_argument("--rank-rounds", type=int, default=5, help="with --dlrm: rounds of the per-rank cost (best)")
    args = ap.parse_args()
    if not Path(args.hta_python).exists():
        print(f"HTA interpreter {args.hta_python} not found: skipping the comparison (see the docstring to install it)")
        return
    gp_python = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    if args.dlrm is not None:
        print(f"load average before: {_load_average()}")
        folder = args.dlrm if args.dlrm != DLRM else _shared_root(args.shared) / DLRM
        compare_dlrm(folder, args.hta_python, gp_python, args.pairs, args.rank_rounds)
        print(f"load average after: {_load_average()} (2 shared cores: other work slows every figure)")
        return
    if args.idle is not None:
        paths = args.idle or default_idle_paths(args.shared)
        compare_idle(paths, args.hta_python, gp_python, args.write_oracle)
        return
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
