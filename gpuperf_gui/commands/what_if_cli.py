"""The what-if part of `gpuperf diagnose` (kept apart so diagnose.py stays small): the MFU model
from ``--params/--tokens-per-step`` and the report's "Try first" and projection lines."""

from __future__ import annotations

import argparse

from gpuperf_gui.core.trace.analysis.what_if import MfuModel, try_first_line


def mfu_model(args: argparse.Namespace, result) -> MfuModel | None:  # noqa: ANN001 (TraceResult)
    """6·N·T FLOPs per step over the peak (``--peak-flops``, else the trace's device at
    ``--precision``); None without ``--params`` and ``--tokens-per-step``."""
    if getattr(args, "params", None) is None or getattr(args, "tokens_per_step", None) is None:
        if getattr(args, "params", None) is not None or getattr(args, "tokens_per_step", None) is not None:
            raise ValueError("--params and --tokens-per-step go together")
        return None
    if args.params <= 0 or args.tokens_per_step <= 0:
        raise ValueError("--params and --tokens-per-step must be > 0")
    from gpuperf_gui.core.mfu import model_flops_per_token  # noqa: PLC0415

    peak = args.peak_flops
    if peak is None:
        from gpuperf_gui.core.hardware import load_database, match_device_name  # noqa: PLC0415

        name = next((r.trace.device_name for r in getattr(result, "ranks", []) if r.trace.device_name), "")
        device_id = match_device_name(name) if name else None
        if device_id is None:
            raise ValueError("the trace names no known device: give --peak-flops")
        peak = load_database().get(device_id).peak_flops_per_s(args.precision)
    world = max((r.analysis.world_size or 0 for r in result.ranks), default=0) or len(result.ranks)
    return MfuModel(model_flops_per_token(args.params) * args.tokens_per_step, float(peak), max(world, 1))


def report_lines(result) -> list[str]:  # noqa: ANN001 (TraceResult)
    """"Try first: fix: ... — projected <= 2.4x faster ..." and the projections, largest gain first."""
    what_if = getattr(result, "what_if", None)
    wi = what_if() if callable(what_if) else None
    if wi is None:
        return []
    lines = []
    first = try_first_line(wi, result.diagnosis.signature)
    if first:
        lines.append(f"Try first: {first}")
    lines.append("What if (each cause removed, upper bounds; step "
                 f"{wi.step_time_s * 1e3:.3g} ms{'' if wi.mfu is None else f', MFU {100 * wi.mfu:.1f} %'}):")
    for p in wi.projections:
        mfu = "" if p.mfu is None else f"  MFU {100 * p.mfu:5.1f} %"
        lines.append(f"  {p.cause:<34} <= {p.speedup_upper_bound:6.2f}x  step {p.step_time_s * 1e3:8.3g} ms{mfu}"
                     f"  then: {p.new_dominant or '-'}")
    share = sorted(wi.critical_path.share.items(), key=lambda kv: -kv[1])[:5]
    lines.append("Critical path: " + ", ".join(f"{k} {100 * v:.0f} %" for k, v in share))
    return lines
