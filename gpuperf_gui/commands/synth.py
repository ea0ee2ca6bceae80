"""`gpuperf synth SCENARIO -o FILE [--steps N] [--seed S] [--size K]`: write a synthetic trace."""

from __future__ import annotations

import argparse

from gpuperf_gui.commands._output import fail
from gpuperf_gui.core.trace.synthetic.synth import MULTI_RANK_SCENARIOS, SCENARIO_SIGNATURE, SCENARIOS, synth_trace, write_synth_trace

MAX_EVENTS = 10_000_000
"""Largest synthetic trace written (about 2.5 GB of JSON): beyond it a typo, not a demo."""
MAX_RANK = 1_000_000


def register(subparsers: argparse._SubParsersAction) -> None:
    jobs = ", ".join(MULTI_RANK_SCENARIOS)
    p = subparsers.add_parser(
        "synth", help="write a synthetic trace with one diagnosis signature",
        description="Write a synthetic torch.profiler trace whose diagnosis is known: "
                    + "; ".join(f"{sc} -> {sig}" for sc, sig in SCENARIO_SIGNATURE.items() if sc != sig)
                    + f" (the others are their own signature). Job scenarios ({jobs}) write a folder of rank files.")
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help=f"output (.json or .json.gz); a folder for the job scenarios ({jobs})")
    p.add_argument("--steps", type=int, default=5, help="profiler steps (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the timing jitter")
    p.add_argument("--size", type=int, default=1, help="kernels per step multiplier (default 1)")
    p.add_argument("--rank", type=int, default=0, help="rank recorded in the file (single-rank scenarios)")
    p.set_defaults(func=run)


def events_per_step(scenario: str, size: int) -> int:
    """Events one more step adds (measured on a 1- and a 2-step trace of this size)."""
    one = len(synth_trace(scenario, steps=1, size=1)["traceEvents"])
    two = len(synth_trace(scenario, steps=2, size=1)["traceEvents"])
    return max(1, two - one) * size


def check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments (None when they are fine): the trace must stay bounded."""
    if args.steps < 1 or args.size < 1:
        return "--steps and --size must be >= 1"
    if not 0 <= args.rank <= MAX_RANK:
        return f"--rank must be in 0..{MAX_RANK:,}"
    if args.size > MAX_EVENTS or args.steps > MAX_EVENTS:
        return f"--steps and --size must be at most {MAX_EVENTS:,}"
    n_events = events_per_step(args.scenario, args.size) * args.steps
    if n_events > MAX_EVENTS:
        return (f"{args.steps:,} steps of size {args.size:,} would be about {n_events:,} events; "
                f"the most written is {MAX_EVENTS:,} (lower --steps or --size)")
    return None


def run(args: argparse.Namespace) -> int:
    problem = check_args(args)
    if problem:
        return fail(problem)
    try:
        path = write_synth_trace(args.scenario, args.output, steps=args.steps, seed=args.seed,
                                 size=args.size, rank=args.rank)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    print(path)
    return 0
