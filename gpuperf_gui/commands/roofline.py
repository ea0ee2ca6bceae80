"""`gpuperf roofline --gpu ID --precision P [--ai X | --flops F --bytes B] [--json]`."""

from __future__ import annotations

import argparse
import math

from gpuperf_gui.commands._output import fail, print_json, si
from gpuperf_gui.core import roofline
from gpuperf_gui.core.catalog import DeviceCatalog
from gpuperf_gui.core.hardware import PRECISIONS, PrecisionUnavailableError, UnknownDeviceError
from gpuperf_gui.core.units import json_safe

# What is physically meaningful, with room to spare (an argument outside is a typo or a unit slip):
AI_RANGE = (1e-6, 1e9)          # FLOP/byte: a strided copy .. far beyond any kernel's reuse
FLOPS_RANGE = (1.0, 1e30)       # FLOPs of one operation: one FLOP .. 1000x the largest training run
BYTES_RANGE = (1.0, 1e21)       # bytes moved: one byte .. a zettabyte
SECONDS_RANGE = (1e-12, 1e7)    # a picosecond .. four months


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("roofline", help="ridge point, attainable rate and bound for a device")
    p.add_argument("--gpu", required=True, help="device id (see `gpuperf gpus`)")
    p.add_argument("--precision", default="bf16", choices=PRECISIONS)
    p.add_argument("--ai", type=float, help="arithmetic intensity, FLOP/byte")
    p.add_argument("--flops", type=float, help="FLOPs of the operation")
    p.add_argument("--bytes", type=float, help="bytes it moves to/from memory")
    p.add_argument("--seconds", type=float, help="measured time: adds the achieved fraction of the roof")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _finite(*values: float | None) -> bool:
    return all(v is None or math.isfinite(v) for v in values)


def _out_of_range(args: argparse.Namespace) -> str | None:
    """The first number argument outside its physical range, said with the range."""
    for name, unit, (low, high) in (("ai", "FLOP/byte", AI_RANGE), ("flops", "FLOPs", FLOPS_RANGE),
                                    ("bytes", "bytes", BYTES_RANGE), ("seconds", "s", SECONDS_RANGE)):
        value = getattr(args, name)
        if value is not None and value > 0 and not low <= value <= high:
            return f"--{name} {value:g} is outside {low:g}..{high:g} {unit}"
    return None


def _intensity(args: argparse.Namespace) -> float | None | str:
    if not _finite(args.ai, args.flops, args.bytes, args.seconds):
        return "--ai, --flops, --bytes and --seconds must be finite numbers"
    if args.ai is not None and (args.flops is not None or args.bytes is not None):
        return "give either --ai or --flops with --bytes, not both"
    if (args.flops is None) != (args.bytes is None):
        return "--flops and --bytes go together"
    if args.ai is not None:
        return args.ai if args.ai > 0 else "--ai must be positive"
    if args.flops is not None:
        if args.flops <= 0 or args.bytes <= 0:
            return "--flops and --bytes must be positive"
        ai = args.flops / args.bytes
        if not AI_RANGE[0] <= ai <= AI_RANGE[1] and _out_of_range(args) is None:
            return f"--flops/--bytes = {ai:g} FLOP/byte is outside {AI_RANGE[0]:g}..{AI_RANGE[1]:g}"
        return ai
    return None


def run(args: argparse.Namespace) -> int:
    try:
        device = DeviceCatalog.load(saved_measurements=True).device(args.gpu)
        peak = device.peak_flops_per_s(args.precision)
        bandwidth = device.bandwidth_bytes_per_s()
    except (UnknownDeviceError, PrecisionUnavailableError) as exc:
        return fail(str(exc))
    ai = _intensity(args)
    if isinstance(ai, str):
        return fail(ai)
    if args.seconds is not None and (args.flops is None or args.seconds <= 0):
        return fail("--seconds needs --flops/--bytes and must be positive")
    if (problem := _out_of_range(args)) is not None:
        return fail(problem)
    ridge = roofline.ridge_flops_per_byte(peak, bandwidth)
    result: dict = {
        "gpu": device.id,
        "precision": args.precision,
        "peak_flops_per_s": peak,
        "bandwidth_bytes_per_s": bandwidth,
        "ridge_flops_per_byte": ridge,
        "peak_convention": ("measured on this machine (gpuperf bench)" if device.origin == "measured"
                            else "dense datasheet peak"),
        **({"measured_with": device.measured_with} if device.measured_with else {}),
        "balance_square_matmul_n": roofline.square_matmul_balance_dimension(ridge, args.precision),
    }
    if ai is not None:
        attainable = roofline.attainable_flops_per_s(peak, bandwidth, ai)
        result.update(ai_flops_per_byte=ai, attainable_flops_per_s=attainable,
                      bound=roofline.bound(peak, bandwidth, ai))
        if args.flops is not None:
            result["time_floor_s"] = roofline.time_floor_s(args.flops, args.bytes, peak, bandwidth)
        if args.seconds is not None:
            achieved = args.flops / args.seconds
            result.update(achieved_flops_per_s=achieved, fraction_of_roof=achieved / attainable,
                          band=roofline.efficiency_band(achieved / attainable))
    if args.json:
        print_json(json_safe(result))
        return 0
    how = f", {device.measured_with}" if device.measured_with else ""
    print(f"{device.name}, {args.precision} ({result['peak_convention']}{how}): peak {si(peak, 'FLOP/s')}, "
          f"memory {si(bandwidth, 'B/s')}")
    print(f"ridge point: {ridge:.1f} FLOP/byte (square matmul balance n ≈ "
          f"{result['balance_square_matmul_n']:.0f})")
    if ai is not None:
        print(f"AI {ai:.4g} FLOP/byte: attainable {si(result['attainable_flops_per_s'], 'FLOP/s')}, "
              f"{result['bound']}-bound")
        if "time_floor_s" in result:
            print(f"time floor: {si(result['time_floor_s'], 's')}")
        if "fraction_of_roof" in result:
            print(f"achieved {si(result['achieved_flops_per_s'], 'FLOP/s')} = "
                  f"{100 * result['fraction_of_roof']:.1f} % of the roof ({result['band']})")
    return 0
