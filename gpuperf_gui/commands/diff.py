"""`gpuperf diff BEFORE AFTER [--json] [--top N] [--before-step N ...] [--after-step N ...]`."""

from __future__ import annotations

import argparse
from functools import partial

from gpuperf_gui.commands._output import fail, print_json
from gpuperf_gui.core.trace.ingest.decode import DEFAULT_MAX_BYTES
from gpuperf_gui.core.trace.session.diff import CALLS_WORDS, TraceDiff, diff_paths
from gpuperf_gui.core.trace.vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT, hta_idle_label
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.units import format_ms, format_percent


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diff", help="compare two traces of one workload: before and after a change",
        description="Compare two torch.profiler traces (files or folders of rank files) of the same "
                    "workload: step time and speedup (from the steps gpuperf profile ran with the "
                    "profiler idle where both traces carry them, else from the traces), GPU busy, exposed communication and idle split, "
                    "kernel time per class and per op (per step, so traces with different step counts "
                    "compare), ops added and removed (HTA TraceDiff's categories), and the two "
                    "diagnoses side by side. Exit status 2 when a file is not a trace.")
    p.add_argument("before", metavar="BEFORE", help="trace file or rank folder before the change")
    p.add_argument("after", metavar="AFTER", help="trace file or rank folder after the change")
    p.add_argument("--json", action="store_true", help="print the JSON contract instead of a report")
    p.add_argument("--top", type=int, default=15, metavar="N", help="ops listed, largest change first "
                   "(default 15; 0 lists all)")
    p.add_argument("--before-step", type=int, action="append", metavar="N",
                   help="compare this ProfilerStep of BEFORE (repeatable; default: the steady steps)")
    p.add_argument("--after-step", type=int, action="append", metavar="N",
                   help="compare this ProfilerStep of AFTER (repeatable; default: the steady steps)")
    p.add_argument("--before-tokens-per-step", type=float, metavar="T",
                   help="tokens per step of BEFORE (a trace does not record them): with --after-tokens-per-step, "
                   "different token counts mark different workloads, compared by tokens/s")
    p.add_argument("--after-tokens-per-step", type=float, metavar="T", help="tokens per step of AFTER")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES, metavar="B",
                   help=f"refuse traces larger than this, decompressed (default {DEFAULT_MAX_BYTES})")
    p.add_argument("--workers", type=int, default=None, help="processes for multi-rank folders")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        return fail("--top must be >= 0")
    tokens = (args.before_tokens_per_step, args.after_tokens_per_step)
    if any(t is not None and not (t > 0 and t < 1e15) for t in tokens):
        return fail("--before/after-tokens-per-step must be positive")
    try:
        d = diff_paths([args.before], [args.after], before_steps=args.before_step, after_steps=args.after_step,
                       max_bytes=args.max_bytes, workers=args.workers, tokens_per_step=tokens)
    except (TraceFormatError, ValueError, OSError) as exc:
        return fail(str(exc))
    top = args.top or None
    if args.json:
        print_json(d.to_json(top=top))
    else:
        print(format_report(d, top))
    return 0


_ms = partial(format_ms, decimals=3, missing="-", unit=False)   # a column headed ms


def _x(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}x"


def _over(x: float | None, side=None) -> str:  # noqa: ANN001 (diff.Side)
    """Recorded / unprofiled step time as the extra share: 1.25 -> +25 %; "not measurable" within the noise."""
    if x is None:
        return "not measurable" if side is not None and side.overhead is not None else "-"
    return f"{100 * (x - 1):+.0f} %"


def _si(x: float | None) -> str:
    from gpuperf_gui.core.units import format_si
    return "-" if not x else format_si(x, "FLOP")


_pct = format_percent


def format_report(d: TraceDiff, top: int | None) -> str:
    b, a = d.before, d.after
    unit = "per step" if b.per_step and a.per_step else "per trace"
    lines = [f"before: {b.label}", f"after:  {a.label}", ""]
    h = d.headline
    lines.append(h.text)
    if d.speedup is not None and h.same_workload is not False:
        lines.append(f"speedup {d.speedup:.3f}x ({d.speedup_source})")
    if d.speedup_unprofiled is None:
        lines.append("  (record both runs with gpuperf profile: it times steps with the profiler idle, "
                     "and the speedup then leaves the profiler's overhead out)")
    lines.append("")
    if d.what_if_check and d.what_if_check.get("measured_speedup"):
        c = d.what_if_check
        verdict = "within the bound" if c["within_bound"] else "ABOVE the bound: something else changed too"
        lines += [f"what-if check: the before-trace projected <= {c['projected_speedup_upper_bound']:.2f}x for "
                  f"{c['cause']}; measured {c['measured_speedup']:.2f}x ({verdict}; projection/measured "
                  f"{c['ratio']:.2f})", ""]
    lines += [f"{'':<28}{'before':>14}{'after':>14}{'change':>14}", "-" * 70]
    if d.speedup_unprofiled is not None:
        lines.append(f"{'step time unprofiled ms':<28}{_ms(b.unprofiled_step_time_s):>14}"
                     f"{_ms(a.unprofiled_step_time_s):>14}{_x(d.speedup_unprofiled):>14}")
    lines.append(f"{'step time (median) ms':<28}{_ms(b.step_time_s):>14}{_ms(a.step_time_s):>14}"
                 f"{_x(d.speedup_profiled):>14}")
    if b.overhead is not None or a.overhead is not None:
        lines.append(f"{'profiler overhead':<28}{_over(b.profiler_overhead, b):>14}{_over(a.profiler_overhead, a):>14}")
        lines += [f"  {tag}: {side.overhead.describe()}" for tag, side in (("before", b), ("after", a)) if side.overhead]
    if b.flops_per_step or a.flops_per_step:
        lines.append(f"{'FLOPs per step (shapes)':<28}{_si(b.flops_per_step):>14}{_si(a.flops_per_step):>14}")
    rows = [("GPU busy", b.gpu_busy_fraction, a.gpu_busy_fraction),
            (COMM_WAIT.name, b.comm_wait_fraction, a.comm_wait_fraction),
            (COMM_KERNELS_EXPOSED.name, b.comm_exposed_fraction, a.comm_exposed_fraction)]
    rows += [(f"{hta_idle_label(k)} %idle".replace("idle (HTA's): ", "HTA idle: "), b.idle_breakdown[k],
              a.idle_breakdown[k]) for k in b.idle_breakdown]
    for name, x, y in rows:
        lines.append(f"{name:<28}{_pct(x):>14}{_pct(y):>14}{100 * (y - x):>+12.1f} pt")
    lines.append(f"{'kernel time ms ' + unit:<28}{_ms(b.kernel_time_s):>14}{_ms(a.kernel_time_s):>14}"
                 f"{_ms(a.kernel_time_s - b.kernel_time_s):>14}")
    lines += ["", f"Kernel classes (ms {unit})", f"{'class':<28}{'before':>14}{'after':>14}{'delta':>14}"]
    for c in d.kernel_classes:
        if c.before_s or c.after_s:
            lines.append(f"{c.cls:<28}{_ms(c.before_s):>14}{_ms(c.after_s):>14}{_ms(c.delta_s):>14}")
    ops = d.ops if top is None else d.ops[:top]
    lines += ["", f"Ops by change (ms {unit}: CPU total for host ops, device time for kernels; calls {unit})",
              f"{'name':<56}{'kind':>7}{'calls':>15}{'before':>11}{'after':>11}{'delta':>11}  calls"]
    for o in ops:
        name = o.label if len(o.label) <= 56 else o.label[:53] + "..."
        calls = f"{o.calls_before:g}->{o.calls_after:g}"
        lines.append(f"{name:<56}{o.kind:>7}{calls:>15}{_ms(o.before_s):>11}{_ms(o.after_s):>11}"
                     f"{_ms(o.delta_s):>11}  {CALLS_WORDS[o.change]}")
    cats = d.ops_diff()
    lines.append("ops by call count (HTA's categories): "
                 + ", ".join(f"{CALLS_WORDS[k]} {len(v)}" for k, v in cats.items()))
    for key in ("added", "deleted"):
        if cats[key]:
            shown = ", ".join(cats[key][:8]) + (f", ... ({len(cats[key]) - 8} more)" if len(cats[key]) > 8 else "")
            lines.append(f"  {key}: {shown}")
    lines += ["", "Diagnosis"]
    for tag, diag in (("before", d.diagnosis_before), ("after", d.diagnosis_after)):
        lines.append(f"  {tag}: {diag.signature} (confidence {diag.confidence:.2f})")
        lines += [f"    - {e}" for e in diag.evidence]
        lines.append(f"    fix: {diag.fix}")
    lines += ["", "What changed"] + [f"  {c}" for c in d.changes()]
    lines += [f"warning: {w}" for w in d.warnings]
    return "\n".join(lines)
