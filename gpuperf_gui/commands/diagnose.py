"""`gpuperf diagnose PATH [PATH...] [--json] [--top N]`: load traces, analyse, name the bottleneck."""

from __future__ import annotations

import argparse
from functools import partial

from gpuperf_gui.commands import what_if_cli
from gpuperf_gui.commands._output import fail, print_json
from gpuperf_gui.core.trace.engine.api import TraceResult
from gpuperf_gui.core.trace.ingest.budget import DEFAULT_MEMORY_BUDGET_BYTES, MemoryBudget
from gpuperf_gui.core.trace.ingest.decode import DEFAULT_MAX_BYTES
from gpuperf_gui.core.trace.diagnosis.signatures import SIGNATURES
from gpuperf_gui.core.trace.ingest.load import MANY_RANKS, discover_files
from gpuperf_gui.core.trace.model.trace_model import ClusterError, TraceFormatError
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.units import format_bytes, format_ms, format_percent, parse_bytes


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diagnose", help="diagnose torch.profiler traces (files or folders of ranks)",
        description="Load torch.profiler (Kineto) traces, analyse each rank and name the bottleneck: "
                    f"one of {', '.join(SIGNATURES)}. 'inconclusive' means the trace cannot support a "
                    "diagnosis: no GPU activity (a CPU-only profile), too little of it, or a GPU idle "
                    "most of the window with no dominant cause. Exit status 2 when a file is not a trace.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file (.json / .json.gz) or folder of rank files")
    p.add_argument("--json", action="store_true", help="print the JSON contract instead of a report")
    p.add_argument("--top", type=int, default=10, metavar="N", help="op-table rows per rank (default 10)")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES, metavar="B",
                   help=f"refuse traces larger than this, decompressed (default {DEFAULT_MAX_BYTES})")
    p.add_argument("--workers", type=int, default=None, help="processes for multi-rank folders")
    p.add_argument("--memory-budget", default=None, metavar="SIZE",
                   help="most memory loading may use, e.g. 4GB (default "
                        f"{format_bytes(DEFAULT_MEMORY_BUDGET_BYTES, decimal=True)}); a trace that needs more is refused early")
    p.add_argument("--dask-scheduler", default=None, metavar="ADDRESS",
                   help="analyse the ranks as Dask tasks next to the files (shared filesystem) and bring back "
                        "compact per-rank results: tcp://host:port, or local[:N] for a LocalCluster of N "
                        "worker processes (needs the 'cluster' extra); the memory budget then applies per task. "
                        "Security: a tcp:// scheduler is unauthenticated and its clients and workers exchange "
                        "pickles (running code on each other): use one only on a trusted network, or a tls:// "
                        "address with distributed's security options (docs/robustness.md)")
    p.add_argument("--params", type=float, default=None, metavar="N",
                   help="model parameters: with --tokens-per-step, each what-if projection gives the MFU it would reach")
    p.add_argument("--tokens-per-step", type=float, default=None, metavar="T", help="tokens per optimizer step")
    p.add_argument("--precision", default="bf16", help="precision of the peak for MFU (default bf16)")
    p.add_argument("--peak-flops", type=float, default=None, metavar="F",
                   help="peak FLOP/s per GPU for MFU (default: the trace's device at --precision)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        return fail("--top must be >= 0")
    try:
        budget = MemoryBudget(parse_bytes(args.memory_budget)) if args.memory_budget else None
    except ValueError as exc:
        return fail(f"--memory-budget: {exc}")
    try:
        # more rank files than the window shows as lanes: compact per-rank results, as its job overview
        # and Dask give (the parent never holds every rank's events; no what-if, which walks them all)
        compact = len(discover_files(args.paths)) > MANY_RANKS
        trace = Trace(args.paths, dask_scheduler=args.dask_scheduler, compact=compact, max_bytes=args.max_bytes,
                      workers=args.workers, memory_budget=budget, top=args.top)
        result = trace.result()
    except ClusterError as exc:
        return fail(f"--dask-scheduler: {exc}")
    except (TraceFormatError, OSError) as exc:  # a missing path, a folder without traces, an unreadable one
        return fail(str(exc))
    if hasattr(result, "what_if"):  # a Dask run brings back no traces to walk
        try:
            result.mfu_model = what_if_cli.mfu_model(args, result)
        except ValueError as exc:
            return fail(str(exc))
    if args.json:
        print_json(trace.to_json(encoded=True))  # a Dask worker's ranks come encoded
    else:
        print(format_report(result, args.top))
    return 0


# the tables' columns (their headers name the unit; the callers align them)
_pct = partial(format_percent, missing="-", space=False)
_ms = partial(format_ms, missing="-", unit=False)


def _kernel_lines(result: TraceResult) -> list[str]:
    """The first rank's precision and GEMMs against their roofs (the Overview's figures)."""
    first = result.ranks[0].analysis if result.ranks else None
    kernels = getattr(first, "kernels", None)
    if kernels is None or kernels.precision.precision is None:
        return []
    gemm = kernels.to_json()["gemm"]
    roof = f"; GEMM/attention kernels at {_pct(gemm['fraction_of_roof']).strip()} of their roof " \
           f"({gemm['device']})" if gemm["fraction_of_roof"] is not None else ""
    return [f"Precision (rank {first.rank}): {kernels.precision.describe()}{roof}"]


def format_report(result: TraceResult, top: int) -> str:
    """A readable report: per-rank table, op tables, diagnosis."""
    model = getattr(result, "model", None)  # a cluster result carries its notes itself
    notes = model.notes if model is not None else getattr(result, "notes", [])
    lines = [f"Note: {n}" for n in notes]  # run-folder files skipped, broken ranks
    header = f"{'rank':>4}  {'device':<24} {'step ms':>8} {'busy':>6} {'compute':>7} {'comm':>6} " \
             f"{'launch':>6} {'data':>6} {'p2p':>6}  signature"
    lines += ["Ranks (busy and compute: share of the step; comm, launch, data, p2p: compute idle the "
              "cause explains)", header, "-" * len(header)]
    late = set(result.multi_rank.stragglers)
    for r in result.ranks:
        a = r.analysis
        c = a.idle_causes
        mark = "  <- late (straggler)" if a.rank in late else ""
        lines.append(f"{a.rank:>4}  {a.device[:24]:<24} {_ms(a.step_time_median_s):>8} {_pct(a.gpu_busy_fraction):>6} "
                     f"{_pct(a.compute_busy_fraction):>7} {_pct(c.communication):>6} "
                     f"{_pct(c.launch):>6} {_pct(c.data):>6} {_pct(c.pipeline):>6}  "
                     f"{r.diagnosis.signature}{mark}")
        if a.truncation:
            lines.append(f"      {a.truncation}")
        if a.profiler_overhead is not None:  # a trace from gpuperf profile: measured, with its spread
            lines.append(f"      {a.profiler_overhead['text']}")
    mr = result.multi_rank
    if len(result.ranks) > 1:
        skew = "-" if mr.step_time_skew_s is None else f"{1e3 * mr.step_time_skew_s:.2f} ms"
        lags = ", ".join(f"rank {rk} {1e3 * mr.collective_start_lag_s[rk]:+.2f} ms" for rk in mr.stragglers)
        lines.append(f"step-time skew {skew}; stragglers: {', '.join(map(str, mr.stragglers)) or 'none'}"
                     + (f" (collectives start late: {lags})" if lags else "")
                     + ("; pipeline stages (send/recv): offsets are by design" if mr.pipeline else ""))
    lines += _kernel_lines(result)
    for r in result.ranks[:1] if len(result.ranks) > 1 else result.ranks:
        if top == 0:
            break
        lines += ["", f"Op table (rank {r.analysis.rank}, top {top} by device time)"]
        h = f"{'name':<60} {'calls':>7} {'self CPU ms':>11} {'CPU total ms':>12} {'self dev ms':>11} {'dev total ms':>12}"
        lines += [h, "-" * len(h)]
        for row in r.ops[:top]:
            name = row.name if len(row.name) <= 60 else row.name[:57] + "..."
            lines.append(f"{name:<60} {row.calls:>7} {_ms(row.self_cpu_s):>11} {_ms(row.cpu_total_s):>12} "
                         f"{_ms(row.self_device_s):>11} {_ms(row.device_total_s):>12}")
    d = result.diagnosis
    lines += ["", f"Diagnosis: {d.headline} (confidence {d.confidence:.2f})"]
    if d.signature == "straggler":
        lines.append(f"Late rank{'s' if len(d.ranks) > 1 else ''}: {', '.join(map(str, d.ranks))}")
    lines += [f"  - {e}" for e in d.evidence]
    lines.append(f"Fix to try first: {d.fix}")
    lines += what_if_cli.report_lines(result)
    if d.secondary:
        lines.append(f"Also seen: {', '.join(d.secondary)}")
    return "\n".join(lines)
