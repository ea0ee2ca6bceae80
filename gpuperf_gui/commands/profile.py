"""`gpuperf profile [options] -o OUT.json.gz (SCRIPT | -m MODULE) [ARGS...]`: trace a script's training steps."""

from __future__ import annotations

import argparse
import sys

from gpuperf_gui.commands._output import fail
from gpuperf_gui.core.profile_script import DEVICES, MODES, ProfileError, ProfileRequest, run_profile


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "profile", help="run a Python script under torch.profiler, one profiler step per optimizer step",
        description="Run a Python script (or -m module) in a child interpreter under torch.profiler and "
                    "write its trace. A profiler step ends at each optimizer step (the first optimizer "
                    "that steps); after skip-first + wait + warmup steps, --steps steps are recorded, the "
                    "trace is written and the script is ended (--run-to-end lets it finish). The wait steps "
                    "run with the profiler idle and are timed: their wall times, and the recorded steps' "
                    "measured the same way, go into the trace (key gpuperf_unprofiled), so gpuperf diff "
                    "reports the speedup without the profiler's overhead. A script without an "
                    "optimizer (inference) gets a wall-clock window instead (--mode auto). The script's "
                    "output and arguments pass through; progress lines start with '[gpuperf profile]' "
                    "on stderr. Exit status 2 when no trace could be written or the script failed.")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="trace file (.json or .json.gz)")
    p.add_argument("-m", dest="module", action="store_true", help="TARGET is a module name (python -m)")
    p.add_argument("--steps", type=int, default=3, metavar="N", help="steps to record (default 3)")
    p.add_argument("--skip-first", type=int, default=1, metavar="K",
                   help="steps neither timed nor traced first: compile, autotuning, start-up (default 1)")
    p.add_argument("--wait", type=int, default=5, metavar="W",
                   help="steps then run with the profiler idle and timed: the unprofiled step time (default 5)")
    p.add_argument("--warmup", type=int, default=1, metavar="U", help="warm-up steps, traced then dropped (default 1)")
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="profiler activities: cpu = CPU only, cuda = CPU + CUDA, auto = CUDA where torch sees it")
    p.add_argument("--record-shapes", action="store_true", help="record input shapes (FLOPs for the roofline)")
    p.add_argument("--with-stack", action="store_true", help="record Python stacks (larger traces)")
    p.add_argument("--mode", choices=MODES, default="auto",
                   help="steps: optimizer steps only; window: wall-clock window only; auto: window until "
                        "the first optimizer step (default)")
    p.add_argument("--window-s", type=float, default=10.0, metavar="S", help="wall-clock window length (default 10)")
    p.add_argument("--window-delay-s", type=float, default=0.0, metavar="D",
                   help="start the window D seconds after the script starts (default 0)")
    p.add_argument("--run-to-end", action="store_true", help="let the script run on after the trace is written")
    p.add_argument("--python", default="", metavar="PATH",
                   help="interpreter that has torch and the script's packages (default: this one)")
    p.add_argument("target", metavar="SCRIPT", help="script path, or module name with -m")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    req = ProfileRequest(script=args.target, out=args.out, args=list(args.args), module=args.module,
                         steps=args.steps, skip_first=args.skip_first, wait=args.wait, warmup=args.warmup, device=args.device,
                         record_shapes=args.record_shapes, with_stack=args.with_stack, mode=args.mode,
                         window_s=args.window_s, window_delay_s=args.window_delay_s,
                         run_to_end=args.run_to_end, python=args.python)
    try:
        result = run_profile(req)
    except ProfileError as exc:
        return fail(str(exc))
    except OSError as exc:  # the interpreter could not be started
        return fail(f"cannot start {req.python or sys.executable}: {exc}")
    if not result.ok:
        return fail(result.message)
    print(f"gpuperf profile: {result.message}", file=sys.stderr)
    if result.timing_summary():
        print(f"gpuperf profile: {result.timing_summary()}", file=sys.stderr)
    return 0
