"""Check the split measuring code on a CUDA device: the loop yields, the caller saves.

    PYTHONPATH=. python benchmarks/verify_bench_split.py OUT_DIR   (on an H200: bf16 779 TFLOP/s at 4096³,
                                                                   copy 4.25 TB/s, 5 points in 7.9 s)

Runs a small plan through ``sweep.iter_run_and_save`` (the Benchmarks tab's helper-process target),
prints each point, and checks that the run file and the saved ceilings agree with the run's."""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, load_ceilings
from gpuperf_gui.core.bench.plans import BenchPlan, PlannedPoint, TimingPolicy
from gpuperf_gui.core.bench.points import MeasuredPoint
from gpuperf_gui.core.bench.results import read_run
from gpuperf_gui.core.bench.sweep import iter_run_and_save
from gpuperf_gui.core.units import format_si


def main(out: Path) -> int:
    points = (PlannedPoint("matmul", "bf16", 4096), PlannedPoint("matmul", "bf16", 8192),
              PlannedPoint("matmul", "fp32", 4096), PlannedPoint("copy", "fp32", 1 << 28),
              PlannedPoint("add", "fp32", 1 << 12))
    plan = BenchPlan(device="cuda", suite="custom", points=points, timing=TimingPolicy(),
                     results_path=out / "runs" / "split.jsonl")
    started = time.monotonic()
    items = list(iter_run_and_save(plan, threading.Event(), results_dir=out))
    measured = [i for i in items if isinstance(i, MeasuredPoint)]
    for p in measured:
        rate = format_si(p.flops_per_s, "FLOP/s") if p.flops else format_si(p.bytes_per_s, "B/s")
        print(f"{p.label:<28} {rate:>14}  {p.method:<22} device_id={p.device_id} threads={p.threads}")
    ceilings = items[-1]
    assert isinstance(ceilings, MeasuredCeilings), items[-1]
    saved = load_ceilings(ceilings.device_id, out)
    run = read_run(out / "runs" / "split.jsonl")
    report = {"seconds": round(time.monotonic() - started, 1), "points": len(measured),
              "device_id": ceilings.device_id, "summary": ceilings.summary(),
              "saved_matches_run": saved is not None and saved.matmul_flops_per_s == ceilings.matmul_flops_per_s,
              "run_file_points": len(run.points), "every_point_has_device_id": all(p.device_id for p in measured)}
    print(json.dumps(report, indent=2))
    return 0 if report["saved_matches_run"] and report["every_point_has_device_id"] else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
