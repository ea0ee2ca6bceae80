"""Check `gpuperf diff`'s unprofiled speedup against plain runs on a GPU.

    python3 benchmarks/h200/check_unprofiled.py --out DIR [--repeats 2] [--deadline-s 500]

For the pairs DataLoader workers 0 -> 8 (loader0 -> loader_fed) and eager -> compiled tiny GPT
(benchmarks/h200/pair_train.py), per case:
  1. a plain run, no profiler: the script times its own steps (synchronize after each, warm-up steps
     left out) -> the independent step time (median);
  2. `gpuperf profile` of the same script and arguments (default schedule: skip 1, wait 3 timed with
     the profiler idle, warmup 1, record 3), --mode steps in the first repeat, the default (auto: a
     wall-clock window until the first optimizer step) in the second;
then `gpuperf diff --json BEFORE AFTER` per pair, and the table: the diff's headline speedup (and its
source), its profiled speedup, the independent speedup (ratio of the plain medians) and the error.
With --repeats R each case's plain run and profile run are made R times (profile traces of every
repeat are diffed; the first repeat's files are the ones kept). Writes DIR/report.txt, DIR/diff_*.json,
the traces and DIR/<name>.meta.json (what ran, the plain step times, the trace's own key).
Run it from a folder outside the repository with gpuperf installed (PYTHONPATH), as the README of
tests/data/h200 says.

Figures (nvidia-h200, 2026-12-01; benchmarks/results/h200_unprofiled_check.txt; `--repeats 4
--deadline-s 470`, then `--tiny-only --first-repeat 3 --repeats 5`): loader0 -> loader_fed, median of
3 repeats, unprofiled 1.909x vs plain runs 1.792x (+6.5 %; profiled 1.840x); eager -> compiled tiny,
median of 8 repeats, unprofiled 1.026x vs plain 0.961x (+6.7 %; profiled 1.146x, +19.2 %). Single
repeats of the tiny pair scatter by tens of % (so do the plain ratios); profiler overhead (recorded /
unprofiled) 1.07 / 1.10 for the loader pair, 1.92 / 1.87 for the tiny pair.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "pair_train.py"
PAIRS = (("loader0", "loader_fed"), ("eager_tiny", "compiled_tiny"))
MODE_BY_REPEAT = ("steps", "auto")
"""gpuperf profile --mode per repeat: steps (no wall-clock window before the first optimizer step:
none profiles torch.compile's compilation or the DataLoader's start), then the default, auto."""
WHAT = {
    "loader0": "GPT d=1024 x 6 layers (bf16 autocast, fused AdamW), batch 64 x seq 512, fed by DataLoader("
               "num_workers=0) whose __getitem__ does plain-Python work (host time per batch ~1.2 x GPU step)",
    "loader_fed": "the same GPT and dataset, DataLoader(num_workers=8, pin_memory, prefetch_factor=4, "
                  "persistent_workers)",
    "eager_tiny": "eager GPT d=256 x 4 layers fp32, batch 4 x seq 64, foreach AdamW; loss.item() per step",
    "compiled_tiny": "torch.compile (inductor, default mode) of the same tiny GPT",
}
SIGNATURE = {"loader0": "data_starved", "loader_fed": "healthy", "eager_tiny": "launch_bound",
             "compiled_tiny": "launch_bound"}
TOLERANCE = 0.10


def run(cmd: list[str], log: list[str], timeout_s: float = 150) -> subprocess.CompletedProcess:
    """Run ``cmd`` in its own process group (killed whole after ``timeout_s``: DataLoader workers too)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\nKILLED after {timeout_s} s"
    head = f"$ {' '.join(cmd)}\nexit {proc.returncode} in {time.perf_counter() - t0:.1f} s"
    print(head, flush=True)
    log.append(head)
    log += [f"  | {ln}" for ln in (stdout + stderr).splitlines() if "USDT" not in ln][-8:]
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--plain-iters", type=int, default=16)
    p.add_argument("--deadline-s", type=float, default=500)
    p.add_argument("--device", default="cuda", help="cpu: a logic check of the tiny pair only")
    p.add_argument("--tiny-only", action="store_true", help="only the eager -> compiled tiny pair")
    p.add_argument("--first-repeat", type=int, default=0, help="number the repeats from here (file names, modes)")
    args = p.parse_args()
    pairs = PAIRS if args.device == "cuda" and not args.tiny_only else PAIRS[1:]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started, log = time.perf_counter(), []
    py = sys.executable
    cal = (json.loads(run([py, str(SCRIPT), "--calibrate"], log).stdout.strip().splitlines()[-1])
           if pairs[0][0] == "loader0" else {"item_iters": 0})
    k = str(cal["item_iters"])
    plain: dict[str, list[dict]] = {}
    traces: dict[str, list[Path]] = {}
    for rep in range(args.first_repeat, args.first_repeat + args.repeats):
        done = rep - args.first_repeat
        per_rep_s = (time.perf_counter() - started) / done if done else 0.0
        if done and time.perf_counter() - started + 1.2 * per_rep_s > args.deadline_s:
            log.append(f"repeat {rep} and later skipped: the deadline")
            break
        for case in (c for pair in pairs for c in pair):
            tj = out / f"{case}.plain{rep}.json"
            run([py, str(SCRIPT), "--case", case, "--iters", str(args.plain_iters), "--item-iters", k,
                 "--device", args.device, "--time-json", str(tj)], log)
            if tj.exists():
                plain.setdefault(case, []).append(json.loads(tj.read_text()))
            trace = out / f"{case}.rep{rep}.json.gz"
            run([py, "-m", "gpuperf_gui.cli", "profile", "--mode", MODE_BY_REPEAT[rep % 2], "--record-shapes", "--device", args.device,
                 "-o", str(trace), str(SCRIPT), "--case", case, "--iters", "40", "--item-iters", k,
                 "--device", args.device], log)
            if trace.exists():
                traces.setdefault(case, []).append(trace)
    rows, summary = [], []
    for before, after in pairs:
        got, refs = [], []
        for i, (tb, ta) in enumerate(zip(traces.get(before, []), traces.get(after, []))):
            if len(plain.get(before, [])) <= i or len(plain.get(after, [])) <= i:
                rows.append(f"{before} -> {after} rep {i}: a plain run failed")
                continue
            proc = run([py, "-m", "gpuperf_gui.cli", "diff", "--json", "--top", "10", str(tb), str(ta)], log)
            if proc.returncode:
                rows.append(f"{before} -> {after} rep {i}: diff failed")
                continue
            (out / f"diff_{before}_{after}.rep{i + args.first_repeat}.json").write_text(proc.stdout)
            d = json.loads(proc.stdout)
            ref = plain[before][i]["median_s"] / plain[after][i]["median_s"]
            err = d["speedup"] / ref - 1
            got.append((d["speedup"], d["speedup_profiled"]))
            refs.append(ref)
            n = i + args.first_repeat
            rows.append(
                f"{before} -> {after} rep {n} (--mode {MODE_BY_REPEAT[n % 2]}): speedup {d['speedup']:.3f}x ({d['speedup_source']}); profiled "
                f"{d['speedup_profiled']:.3f}x; independent plain runs {ref:.3f}x "
                f"({1e3 * plain[before][i]['median_s']:.2f} -> {1e3 * plain[after][i]['median_s']:.2f} ms); "
                f"error {100 * err:+.1f} % (profiled {100 * (d['speedup_profiled'] / ref - 1):+.1f} %); "
                f"unprofiled {1e3 * (d['unprofiled_step_time_before_s'] or 0):.2f} -> "
                f"{1e3 * (d['unprofiled_step_time_after_s'] or 0):.2f} ms; profiler overhead "
                f"{d['profiler_overhead_before']:.3f} / {d['profiler_overhead_after']:.3f}; diagnosis "
                f"{d['diagnosis_before']['signature']} -> {d['diagnosis_after']['signature']}; "
                f"{'OK' if abs(err) <= TOLERANCE else 'MISS'}")
        if got:
            pooled = (statistics.median(r["median_s"] for r in plain[before])
                      / statistics.median(r["median_s"] for r in plain[after]))
            med, med_prof, med_ref = (statistics.median(g[0] for g in got), statistics.median(g[1] for g in got),
                                      statistics.median(refs))
            summary.append(
                f"{before} -> {after}, median of {len(got)} repeats: gpuperf diff speedup {med:.3f}x, profiled "
                f"{med_prof:.3f}x; independent {med_ref:.3f}x (per-repeat plain ratios {min(refs):.3f}-"
                f"{max(refs):.3f}; pooled plain medians {pooled:.3f}x); error {100 * (med / pooled - 1):+.1f} % "
                f"vs pooled (profiled {100 * (med_prof / pooled - 1):+.1f} %) "
                f"{'OK' if abs(med / pooled - 1) <= TOLERANCE else 'MISS'}")
    import torch

    for case, paths in traces.items():
        with gzip.open(paths[0], "rt") as fh:
            key = json.load(fh).get("gpuperf_unprofiled")
        ref = plain.get(case, [{}])[0]
        runs = plain.get(case, [])
        meta = {"scenario": case, "what": WHAT[case], "script": "benchmarks/h200/pair_train.py",
                "args": ["--case", case, "--iters", "40", "--item-iters", k],
                "gpuperf_profile_options": ["--mode", MODE_BY_REPEAT[0], "--device", "cuda"],
                "expected_signature": SIGNATURE[case],
                "unprofiled_step_time_s": statistics.median(r["median_s"] for r in runs) if runs else None,
                "unprofiled_how": "median over the plain runs of each run's median; " + str(ref.get("method")),
                "plain_runs": [{k: r[k] for k in ("median_s", "step_times_s", "all_step_times_s", "warm")}
                               for r in runs],
                "traces": [str(t.name) for t in paths],
                "gpuperf_unprofiled_in_trace": key, "calibration": cal,
                "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
                "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "trace_bytes": paths[0].stat().st_size}
        (out / f"{case}.meta.json").write_text(json.dumps(meta, indent=1))
    report = "\n".join(["gpuperf diff: unprofiled speedup vs plain runs", *summary, "", *rows, "",
                        f"calibration: {json.dumps(cal)}", f"total {time.perf_counter() - started:.0f} s", "", *log])
    (out / "report.txt").write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
