"""Check `gpuperf profile` on a GPU: scripts with a known bottleneck, traced and diagnosed.

    python3 benchmarks/h200/check_profile.py --out DIR [--steps 4]

For each mode of tests/data/scripts/train_gpu.py (fed: healthy, starved: data_starved, launch:
launch_bound) it runs `gpuperf profile --steps N --record-shapes --device cuda`, counts the trace's
ProfilerStep events and its GPU busy fraction from the JSON itself (union of kernel/memcpy/memset
intervals inside the steps), loads it with gpuperf's engine and compares the diagnosis with the
expected signature. Writes DIR/profile_check.txt (the table and each diagnosis) and the traces.
"""
from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "data" / "scripts" / "train_gpu.py"
EXPECTED = {"fed": "healthy", "starved": "data_starved", "launch": "launch_bound"}


def trace_facts(path: Path) -> dict:
    with gzip.open(path, "rt") as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    merged: list[list[float]] = []
    for a, b in gpu:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    lo, hi = (steps[0][0], steps[-1][1]) if steps else (0.0, 0.0)
    busy = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in merged) / (hi - lo) if hi > lo else None
    return {"steps": len(steps), "kernels": len(gpu), "gpu_busy_fraction": busy,
            "step_ms": [round((b - a) / 1e3, 2) for a, b in steps]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--device", default="cuda")
    p.add_argument("--modes", nargs="*", default=list(EXPECTED))
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from gpuperf_gui.core.trace.session.trace import Trace

    lines, rows = [], []
    for mode in args.modes:
        expected = EXPECTED[mode]
        trace = out / f"profile_{mode}.json.gz"
        cmd = [sys.executable, "-m", "gpuperf_gui.cli", "profile", "--steps", str(args.steps), "--record-shapes",
               "--device", args.device, "-o", str(trace), str(SCRIPT), "--mode", mode, "--iters", "40"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=out)
        wall = time.perf_counter() - t0
        lines += [f"$ {' '.join(cmd[1:])}", f"exit {proc.returncode} in {wall:.1f} s",
                  *[f"  | {ln}" for ln in (proc.stdout + proc.stderr).splitlines() if "USDT" not in ln][-14:]]
        if proc.returncode != 0 or not trace.exists():
            rows.append(f"{mode:8s} FAILED (exit {proc.returncode})")
            continue
        facts = trace_facts(trace)
        result = Trace([trace]).result()
        diag = result.ranks[0].diagnosis
        ok = facts["steps"] == args.steps and diag.signature == expected
        rows.append(f"{mode:8s} steps {facts['steps']}/{args.steps}  busy {100 * (facts['gpu_busy_fraction'] or 0):5.1f} %  "
                    f"step ms {facts['step_ms']}  diagnosis {diag.signature:13s} expected {expected:13s} "
                    f"{'OK' if ok else 'MISMATCH'}  ({trace.stat().st_size / 1e6:.2f} MB)")
        lines += [f"  diagnosis: {diag.signature}", *[f"    evidence: {e}" for e in diag.evidence],
                  f"    fix: {diag.fix}", ""]
    report = "\n".join(["gpuperf profile on a GPU: known bottlenecks traced and diagnosed", *rows, "", *lines])
    (out / "profile_check.txt").write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
