"""`gpuperf synth SCENARIO -o FILE [--steps N] [--seed S] [--size K]`: write a synthetic trace."""

from __future__ import annotations

import argparse

from gpuperf_gui.commands._output import fail
from gpuperf_gui.core.trace.synth import SCENARIOS, write_synth_trace


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("synth", help="write a synthetic trace with one diagnosis signature")
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output (.json or .json.gz)")
    p.add_argument("--steps", type=int, default=5, help="profiler steps (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the timing jitter")
    p.add_argument("--size", type=int, default=1, help="kernels per step multiplier (default 1)")
    p.add_argument("--rank", type=int, default=0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        path = write_synth_trace(args.scenario, args.output, steps=args.steps, seed=args.seed,
                                 size=args.size, rank=args.rank)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    print(path)
    return 0
