"""Verify the benchmark runner on a real GPU (one call of the device machine).

    PYTHONPATH=. python benchmarks/verify_h200.py [--out DIR] [--preheat-s 15] [--rounds 3]

1. FlopCounterMode equals 2·n³ for bf16 (and fp8 through _scaled_mm) matmuls.
2. Pre-heat (back-to-back random bf16 8192³ GEMMs) so clocks settle at the power limit.
3. bf16 matmul 8192³ and a 1 GiB copy: our harness (``time_cuda``, flush on) against
   ``triton.testing.do_bench`` (median, same inputs, its 256 MB flush), interleaved over rounds;
   agreement target ±2 %.
4. The quick suite through ``iter_measurements`` on cuda, written as JSON lines.
Writes ``verify.json`` and ``quick.jsonl`` under --out (default $OUT) and prints a table last.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path


def _map_resources() -> None:
    """Run from a plain checkout (PYTHONPATH=.): map top-level resources/ to gpuperf_gui.resources,
    as the installed package does."""
    import importlib.util

    try:
        import gpuperf_gui.resources  # noqa: F401 - installed or editable
        return
    except ImportError:
        pass
    root = Path(__file__).resolve().parent.parent / "resources"
    spec = importlib.util.spec_from_file_location("gpuperf_gui.resources", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    if spec and spec.loader:
        module = importlib.util.module_from_spec(spec)
        sys.modules["gpuperf_gui.resources"] = module
        spec.loader.exec_module(module)


def _env() -> dict:
    import torch

    info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        info["triton"] = f"missing: {exc}"
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(sm_count=props.multi_processor_count, l2_bytes=getattr(props, "L2_cache_size", None),
                    memory_bytes=props.total_memory)
    return info


def _flop_checks() -> list[dict]:
    import torch

    from gpuperf_gui.core.bench.device import DeviceInfo, resolve_device
    from gpuperf_gui.core.bench.kernels import _matmul_kernel
    from gpuperf_gui.core.bench.plans import PlannedPoint

    info: DeviceInfo = resolve_device("cuda")
    rows = []
    for dtype, n in (("bf16", 1024), ("bf16", 8192), ("fp16", 4096), ("fp8", 4096)):
        if dtype not in info.supported_dtypes:
            continue
        try:
            kernel = _matmul_kernel(PlannedPoint("matmul", dtype, n), info)
            rows.append({"dtype": dtype, "n": n, "counted": kernel.counted_flops, "formula": 2.0 * n**3,
                         "equal": kernel.counted_flops == 2.0 * n**3})
            del kernel
        except Exception as exc:  # noqa: BLE001
            rows.append({"dtype": dtype, "n": n, "error": f"{type(exc).__name__}: {exc}"})
    torch.cuda.empty_cache()
    return rows


def _preheat(seconds: float, sampler) -> dict:
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    deadline, calls = time.monotonic() + seconds, 0
    samples = []
    while time.monotonic() < deadline:
        for _ in range(50):
            torch.mm(a, b, out=c)
        calls += 50
        samples.append(sampler.sample().__dict__)
        torch.cuda.synchronize()
    return {"seconds": seconds, "calls": calls, "last_samples": samples[-3:]}


def _compare(rounds: int, sampler, rep_ms: float = 100.0) -> list[dict]:
    """Our harness vs triton.testing.do_bench, interleaved, same callable and flush policy."""
    import torch
    import triton.testing

    from gpuperf_gui.core.bench.plans import TimingPolicy
    from gpuperf_gui.core.bench.timing import time_cuda

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    policy = TimingPolicy(warmup_s=0.025, rep_s=rep_ms / 1e3)  # do_bench: warmup=25 ms, rep=rep_ms
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    elements = (1 << 30) // 4  # 1 GiB of fp32
    src = torch.empty(elements, device="cuda").uniform_(-1, 1)
    dst = torch.empty(elements, device="cuda")
    cases = [
        ("matmul bf16 8192^3", lambda: torch.mm(a, b, out=c), 2.0 * n**3, 3.0 * n * n * 2),
        ("copy 1 GiB fp32", lambda: dst.copy_(src), 0.0, 2.0 * elements * 4),
    ]
    rows = []
    for name, fn, flops, nbytes in cases:
        fn()
        triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")  # warm-up of both
        time_cuda(fn, policy, flush=True, l2_bytes=l2)
        for round_index in range(rounds):
            ours = time_cuda(fn, policy, flush=True, l2_bytes=l2, sampler=sampler, allow_graph=False)
            theirs_s = triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median") * 1e-3
            rows.append({
                "case": name, "round": round_index, "rep_ms": rep_ms, "ours_median_s": ours.median_s,
                "ours_iqr_s": [ours.p25_s, ours.p75_s], "ours_samples": ours.samples,
                "ours_method": ours.method, "do_bench_median_s": theirs_s,
                "ratio_ours_over_do_bench": ours.median_s / theirs_s,
                "ours_tflops": flops / ours.median_s / 1e12 if flops else None,
                "do_bench_tflops": flops / theirs_s / 1e12 if flops else None,
                "ours_tb_per_s": nbytes / ours.median_s / 1e12,
                "do_bench_tb_per_s": nbytes / theirs_s / 1e12,
                "sm_clock_mhz": (ours.gpu.sm_clock_hz or 0) / 1e6, "power_w": ours.gpu.power_w,
                "throttled": ours.gpu.throttled,
            })
    del a, b, c, src, dst
    torch.cuda.empty_cache()
    return rows


def _quick_suite(out: Path, suite: str = "quick") -> dict:
    from gpuperf_gui.core.bench.measure import iter_measurements
    from gpuperf_gui.core.bench.plans import build_plan
    from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint

    plan = build_plan(suite, "cuda", results_path=out / f"{suite}.jsonl")
    started = time.monotonic()
    points, messages, ceilings = [], [], None
    for item in iter_measurements(plan, threading.Event()):
        if isinstance(item, MeasuredPoint):
            points.append(item)
            print(f"  {item.label:34s} {item.flops_per_s / 1e12:9.2f} TFLOP/s {item.bytes_per_s / 1e12:7.3f} TB/s "
                  f"{item.seconds * 1e6:10.1f} us  iqr {item.iqr_fraction:5.1%} n={item.samples:4d} "
                  f"{item.method} clk={(item.sm_clock_hz or 0) / 1e6:.0f}MHz thr={item.throttled}", flush=True)
        elif isinstance(item, BenchMessage):
            if item.kind != "started":
                messages.append(item.to_json_dict())
                print("  --", item.text, flush=True)
        else:
            ceilings = item
    return {"duration_s": time.monotonic() - started, "points": len(points),
            "ceilings": ceilings.to_json_dict() if ceilings else None, "messages": messages}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    parser.add_argument("--preheat-s", type=float, default=25.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rep-ms", type=float, default=100.0, help="timed budget per measurement")
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--full", action="store_true", help="also run the full suite")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    _map_resources()
    report: dict = {"env": _env()}
    print(json.dumps(report["env"]), flush=True)
    from gpuperf_gui.core.bench.nvml import NvmlSampler

    sampler = NvmlSampler(0)
    report["nvml"] = sampler.sample().__dict__
    steps = [("flop_checks", _flop_checks), ("preheat", lambda: _preheat(args.preheat_s, sampler)),
             ("compare", lambda: _compare(args.rounds, sampler, args.rep_ms))]
    if not args.skip_suite:
        steps.append(("quick_suite", lambda: _quick_suite(args.out)))
    if args.full:
        steps.append(("full_suite", lambda: _quick_suite(args.out, "full")))
    for name, step in steps:
        started = time.monotonic()
        try:
            report[name] = step()
        except Exception as exc:  # noqa: BLE001 - keep going, report the failure
            report[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            print(report[name]["traceback"], flush=True)
        print(f"[{name}] {time.monotonic() - started:.1f} s", flush=True)
        (args.out / "verify.json").write_text(json.dumps(report, indent=2, default=str))
    print("\nflop checks:", json.dumps(report.get("flop_checks")))
    if isinstance(report.get("compare"), list):
        print(f"{'case':22s} {'round':>5s} {'ours':>12s} {'do_bench':>12s} {'ratio':>7s} {'clk MHz':>8s} {'W':>6s}")
        for row in report["compare"]:
            rate = (f"{row['ours_tflops']:.1f}TF" if row["ours_tflops"] else f"{row['ours_tb_per_s']:.3f}TB/s")
            other = (f"{row['do_bench_tflops']:.1f}TF" if row["do_bench_tflops"]
                     else f"{row['do_bench_tb_per_s']:.3f}TB/s")
            print(f"{row['case']:22s} {row['round']:5d} {rate:>12s} {other:>12s} "
                  f"{row['ratio_ours_over_do_bench']:7.4f} {row['sm_clock_mhz']:8.0f} {row['power_w'] or 0:6.0f}")
        for case in sorted({r["case"] for r in report["compare"]}):
            ratios = [r["ratio_ours_over_do_bench"] for r in report["compare"] if r["case"] == case]
            ours = statistics.median(r["ours_median_s"] for r in report["compare"] if r["case"] == case)
            theirs = statistics.median(r["do_bench_median_s"] for r in report["compare"] if r["case"] == case)
            within = sum(abs(x - 1) <= 0.02 for x in ratios)
            print(f"{case}: median ratio {statistics.median(ratios):.4f}, worst {max(ratios, key=lambda x: abs(x - 1)):.4f}, "
                  f"{within}/{len(ratios)} rounds within ±2 %, pooled medians ratio {ours / theirs:.4f}")
    for key in ("quick_suite", "full_suite"):
        suite = report.get(key)
        if isinstance(suite, dict) and suite.get("ceilings"):
            c = suite["ceilings"]
            print(f"{key}: {suite['points']} points in {suite['duration_s']:.1f} s; "
                  f"throttled points {c['throttled_points']}")
            for dtype, rate in c["matmul_flops_per_s"].items():
                print(f"  {dtype:5s} {rate / 1e12:8.1f} TFLOP/s  {c['flops_fraction_of_datasheet'].get(dtype, 0):.1%}"
                      f"  ({c['matmul_labels'][dtype]})")
            print(f"  bandwidth {c['bandwidth_bytes_per_s'] / 1e12:.3f} TB/s "
                  f"{c['bandwidth_fraction_of_datasheet'] or 0:.1%} ({c['bandwidth_label']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
