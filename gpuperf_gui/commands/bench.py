"""`gpuperf bench`: measure this machine's ceilings (matmul per dtype, memory bandwidth, collectives).

    gpuperf bench [--device auto|cpu|cuda[:N]] [--suite quick|full] [--json FILE]
    gpuperf bench --collectives [--backend auto|gloo|nccl] [--world-size N]
    torchrun --nproc-per-node 8 -m gpuperf_gui.cli bench --collectives

Points are appended to a JSON-lines file under the results folder as they are measured (a crash
loses at most the point in progress); the measured ceilings are saved per device for the GUI.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from gpuperf_gui.commands._output import fail
from gpuperf_gui.core.bench.plans import KERNELS, MATMUL_DTYPES, TimingPolicy, build_plan, default_cpu_threads
from gpuperf_gui.core.units import format_clock, format_si, parse_whole_list


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="measure this machine's matmul, bandwidth and collective ceilings")
    p.add_argument("--device", default="auto", help="auto (default), cpu, cuda or cuda:N")
    p.add_argument("--suite", choices=("quick", "full"), default="quick")
    p.add_argument("--json", metavar="FILE", help="write points and ceilings as JSON ('-': stdout)")
    p.add_argument("--dtypes", help=f"matmul dtypes, comma-separated ({','.join(MATMUL_DTYPES)})")
    p.add_argument("--sizes", help="matmul sizes n (n×n×n), comma-separated")
    p.add_argument("--kernels", help=f"kernels to run, comma-separated ({','.join(KERNELS)})")
    p.add_argument("--threads", type=int, metavar="N",
                   help="CPU runs: torch threads (default: every CPU this process may use, "
                        "as in the Benchmarks tab)")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="warm-up per point (ms, default 25)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="timed budget per point (ms, default 100)")
    p.add_argument("--results-dir", type=Path, help="where runs and ceilings are kept "
                                                      "(default: <user data dir>/gpuperf/bench)")
    p.add_argument("--no-save", action="store_true", help="write no run file and save no ceilings")
    p.add_argument("--reset-ceilings", action="store_true",
                   help="forget the device's saved ceilings first (by default each run is merged into "
                        "them: per dtype the best matmul rate, the best bandwidth)")
    p.add_argument("--collectives", action="store_true",
                   help="measure all-reduce/all-gather/reduce-scatter bandwidth instead (torchrun-launchable)")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto", help="collectives backend")
    p.add_argument("--world-size", type=int, help="collectives: ranks to spawn (default: GPUs, or 2 on CPU)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip()) if text else ()


class ProgressBar:
    """A one-line terminal progress bar on stderr (a line per point when not a terminal)."""

    def __init__(self, stream: TextIO = sys.stderr, width: int = 24, enabled: bool = True) -> None:
        self._stream, self._width, self._enabled = stream, width, enabled
        self._tty = enabled and stream.isatty()
        self._line_open = False

    def update(self, index: int, total: int, label: str, eta_s: float | None) -> None:
        if not self._tty:
            return
        filled = int(self._width * index / total) if total else 0
        left = f"  ~{format_clock(eta_s)} left" if eta_s is not None else ""
        bar = "#" * filled + "." * (self._width - filled)
        self._stream.write(f"\r[{bar}] {index + 1:>3}/{total}  {label[:40]:<40}{left}\x1b[K")
        self._stream.flush()
        self._line_open = True

    def print(self, text: str) -> None:
        if not self._enabled:
            return
        if self._line_open:
            self._stream.write("\r\x1b[K")
            self._line_open = False
        self._stream.write(text + "\n")
        self._stream.flush()

    def close(self) -> None:
        if self._line_open:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._line_open = False


def _point_line(point) -> str:  # MeasuredPoint
    rate = format_si(point.flops_per_s, "FLOP/s") if point.flops else ""
    flag = ("  throttled" if point.throttled else "") + ("" if point.reliable else "  UNRELIABLE (not a ceiling)")
    extra = f"  busbw {format_si(point.busbw_bytes_per_s, 'B/s')}" if point.busbw_bytes_per_s else ""
    threads = f" {point.threads} threads" if point.threads else ""
    return (f"  {point.label:<34} {rate:>14} {format_si(point.bytes_per_s, 'B/s'):>12}  "
            f"{format_si(point.seconds, 's'):>9} ±{point.iqr_fraction / 2:5.1%} n={point.samples:<4} "
            f"{point.method}{threads}{extra}{flag}")


def _parse_sizes(text: str | None) -> tuple[int, ...]:
    """``"1024,4096"`` -> (1024, 4096); ValueError with a plain message otherwise (core.units)."""
    return parse_whole_list(text or "", "--sizes")


def check_output_file(path_text: str) -> str | None:
    """Why ``path_text`` cannot be written (a one-line message), or None when it can: checked
    before measuring so that a long run is not lost to a typo in ``--json``."""
    if path_text == "-":
        return None
    path = Path(path_text).expanduser()
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"--json {path_text}: is a folder, not a file"
    if not parent.is_dir():
        return f"--json {path_text}: folder {parent} does not exist"
    if path.exists() and not os.access(path, os.W_OK):
        return f"--json {path_text}: file is not writable"
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        return f"--json {path_text}: folder {parent} is not writable"
    return None


def check_results_dir(results_dir: Path | None) -> str | None:
    """Why the results folder cannot be used (one line), or None."""
    from gpuperf_gui.core.bench.results import default_results_dir

    folder = results_dir or default_results_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the results folder {folder}: {exc.strerror or exc}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the results folder {folder} is not writable (use --results-dir or --no-save)"
    return None


def check_args(args: argparse.Namespace) -> str | None:
    """The first problem with the arguments (one line), or None; nothing is measured before."""
    for name in ("warmup_ms", "rep_ms"):
        value = getattr(args, name)
        if not value > 0 or value != value or value == float("inf"):
            return f"--{name.replace('_', '-')} must be a positive number of milliseconds (got {value:g})"
    if args.threads is not None and args.threads < 1:
        return f"--threads must be at least 1 (got {args.threads})"
    if args.world_size is not None and args.world_size < 1:
        return f"--world-size must be at least 1 (got {args.world_size})"
    if args.reset_ceilings and args.no_save:
        return "--reset-ceilings and --no-save contradict each other"
    if args.json:
        problem = check_output_file(args.json)
        if problem:
            return problem
    if not args.no_save:
        return check_results_dir(args.results_dir)
    return None


def run(args: argparse.Namespace) -> int:
    problem = check_args(args)
    if problem:
        return fail(problem)
    if args.collectives:
        return _run_collectives(args)
    try:
        plan = build_plan(
            suite=args.suite, device=args.device, dtypes=_split(args.dtypes),
            matmul_sizes=_parse_sizes(args.sizes),
            kernels=_split(args.kernels) or None,
            timing=TimingPolicy(warmup_s=args.warmup_ms / 1e3, rep_s=args.rep_ms / 1e3),
        )
    except ValueError as exc:
        return fail(str(exc))
    from gpuperf_gui.core.bench import measure
    from gpuperf_gui.core.bench.results import BenchRun, new_run_path
    from gpuperf_gui.core.bench.sweep import save_ceilings_on_the_way

    results_path = None if args.no_save else new_run_path(args.device, args.results_dir)
    plan = replace(plan, results_path=results_path, cpu_threads=args.threads or default_cpu_threads())
    run_record = BenchRun(path=results_path, header={"device": args.device, "suite": args.suite})
    items = measure.iter_measurements(plan, threading.Event())
    if not args.no_save:  # the loop yields; saving the ceilings is the caller's choice
        items = save_ceilings_on_the_way(items, args.results_dir, reset=args.reset_ceilings)
    ok = _consume(items, run_record, args)
    if not ok:
        return 2
    return _finish(run_record, args)


def _consume(items, run_record, args: argparse.Namespace) -> bool:
    """Print progress and collect points; False when the whole run was skipped (no CUDA)."""
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
    from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint

    bar = ProgressBar(enabled=not args.quiet)
    try:
        for item in items:
            if isinstance(item, MeasuredPoint):
                run_record.points.append(item)
                bar.print(_point_line(item))
            elif isinstance(item, MeasuredCeilings):
                run_record.ceilings = item
            elif isinstance(item, BenchMessage):
                if item.kind == "started":
                    bar.update(item.index, item.total, item.label, item.eta_s)
                    continue
                run_record.messages.append(item)
                if item.kind == "skipped" and item.index == 0 and item.total == 0:
                    bar.close()
                    print(f"gpuperf: error: {item.text}", file=sys.stderr)
                    return False
                bar.print(f"-- {item.text}")
    except KeyboardInterrupt:
        bar.close()
        print("interrupted; points measured so far are in the run file", file=sys.stderr)
        raise
    finally:
        bar.close()
    return True


def _finish(run_record, args: argparse.Namespace) -> int:
    from gpuperf_gui.core.bench.ceilings import ceilings_path, load_ceilings
    from gpuperf_gui.core.units import json_safe

    ceilings = run_record.ceilings
    saved = (load_ceilings(ceilings.device_id, args.results_dir)
             if ceilings is not None and not args.no_save else None)
    if args.json:
        payload = run_record.to_json_dict()
        payload["saved_ceilings"] = json_safe(saved.to_json_dict()) if saved else None
        text = json.dumps(payload, indent=2, allow_nan=False)
        if args.json == "-":
            print(text)
        else:
            try:
                Path(args.json).expanduser().write_text(text + "\n", encoding="utf-8")
            except OSError as exc:  # checked before the run; the folder went away since
                return fail(f"cannot write --json {args.json}: {exc.strerror or exc}"
                            + (f" (the run is in {run_record.path})" if run_record.path else ""))
    if not args.json or args.json != "-":
        print(f"this run: {ceilings.summary()}" if ceilings else "no ceilings measured")
        if saved is not None:
            print(f"saved ceilings (best so far on this machine): {saved.summary()}")
            print(f"  {ceilings_path(saved.device_id, args.results_dir)}")
        if run_record.path:
            print(f"run file: {run_record.path}")
    return 0


def _run_collectives(args: argparse.Namespace) -> int:
    from gpuperf_gui.core.bench.collectives import (
        default_collective_plan,
        iter_collective_measurements,
        run_in_current_group,
    )
    from gpuperf_gui.core.bench.results import BenchRun

    under_torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    plan = default_collective_plan(args.suite, args.backend, args.world_size)
    run_record = BenchRun(path=None, header={"collectives": True, "backend": plan.backend})
    if under_torchrun:
        rank = int(os.environ["RANK"])
        plan = replace(plan, world_size=int(os.environ["WORLD_SIZE"]))
        quiet = args.quiet or rank != 0
        items = run_in_current_group(plan)
        args_for_rank = argparse.Namespace(**{**vars(args), "quiet": quiet})
        _consume(items, run_record, args_for_rank)
        if rank != 0:
            return 0
    else:
        if not _consume(iter_collective_measurements(plan, threading.Event()), run_record, args):
            return 2
    return _finish_collectives(run_record, args)


def _finish_collectives(run_record, args: argparse.Namespace) -> int:
    from gpuperf_gui.core.bench.sweep import save_run_ceilings, with_collective_ceilings

    if not run_record.points:
        return fail("no collective was measured")
    # An unknown GPU gets its own id ("gpu-<name>"), never "cpu" (device.gpu_device_id).
    run_record.ceilings = with_collective_ceilings(None, run_record.points, "collectives")
    if not args.no_save:
        save_run_ceilings(run_record.ceilings, args.results_dir, reset=args.reset_ceilings)
    return _finish(run_record, args)
