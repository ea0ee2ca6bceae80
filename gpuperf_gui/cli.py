"""The `gpuperf` command: every number the GUI shows, without a window (text or --json)."""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
from typing import NoReturn, Sequence

from gpuperf_gui import __version__

# One module per subcommand under gpuperf_gui/commands/, each with register(subparsers) and run(args).
COMMANDS = ("gpus", "roofline", "mfu", "diagnose", "diff", "synth", "bench", "profile")
NO_BLAS_COMMANDS = frozenset({"diagnose", "diff", "synth"})
"""Commands whose numpy work has no linear algebra: numpy's OpenBLAS starts one thread, not one per
core (its thread pool is ~30 % of numpy's import on 2 cores, more with more cores; Dask's workers
are set the same way). A value the user set is kept."""
LOAD_COMMANDS = frozenset({"diagnose", "diff", "mfu"})
"""Commands whose process may load traces (`mfu --from-trace`): the console script sets the
allocator for loads (core/trace/ingest/heap.py) before they run; the process ends after the command."""
NO_STATE_FILE_COMMANDS = NO_BLAS_COMMANDS
"""Commands that read traces and no state file (saved ceilings, devices.toml): they skip importing
:mod:`gpuperf_gui.core.state_files` (tomllib, tempfile) at start-up."""
STATE_FILES = "gpuperf_gui.core.state_files"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` (one command's module imported: `gpuperf
    diagnose` does not pay for the hardware catalog, the MFU models or the benchmark plans)."""
    parser = argparse.ArgumentParser(
        prog="gpuperf",
        description="Why is my GPU workload slow, and how far is it from what the hardware can do?",
    )
    parser.add_argument("--version", action="version", version=f"gpuperf {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMANDS else COMMANDS:
        importlib.import_module(f"gpuperf_gui.commands.{name}").register(subparsers)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), if it is one of ours."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def _warn_state_file(item) -> None:  # noqa: ANN001 - a state_files.SetAside
    print(f"gpuperf: warning: {item.message()}", file=sys.stderr)


def _limit_blas_threads(command: str | None) -> None:
    if command in NO_BLAS_COMMANDS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_named(argv)
    _limit_blas_threads(command)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    # A bad state file: one line on stderr, then go on. The trace commands read none: they do not
    # import state_files (should one come to, its reports wait and are printed at the end).
    state_files = sys.modules.get(STATE_FILES)
    if state_files is None and command not in NO_STATE_FILE_COMMANDS:
        from gpuperf_gui.core import state_files  # noqa: PLC0415
    previous = state_files.set_reporter(_warn_state_file) if state_files else None
    from gpuperf_gui.commands._output import bidi_safe_output  # noqa: PLC0415 - every command imports it

    try:
        with bidi_safe_output():  # names from traces: no bidi control reaches the terminal
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gpuperf ... | head`
        return 0
    finally:
        if state_files:
            state_files.set_reporter(previous)
        elif (late := sys.modules.get(STATE_FILES)) is not None:
            for item in late.take_pending():
                _warn_state_file(item)


def entry() -> NoReturn:
    """The `gpuperf` console script: :func:`main`, then the process ends without tearing the
    interpreter down (freeing every module and object costs ~35 ms after a diagnosis, 5 % of it).
    The output is flushed and the exit handlers run first; with threads still running the exit is
    the usual one. The subcommand's module is imported first with the cyclic collector off: imports
    leave no garbage worth its passes (~8 ms of a diagnosis' start-up), and what they build lives as
    long as the process, so it is frozen out of later collections."""
    command = _command_named(sys.argv[1:])
    if command is not None and gc.isenabled():
        _limit_blas_threads(command)
        gc.disable()
        try:
            importlib.import_module(f"gpuperf_gui.commands.{command}")
        finally:
            gc.enable()
        gc.freeze()
    if command in LOAD_COMMANDS:
        from gpuperf_gui.core.trace.ingest.heap import enable_reused_heap  # noqa: PLC0415

        enable_reused_heap()
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `gpuperf ... | head`: the reader is gone
        pass
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # noqa: SLF001 - what a normal exit runs (logging, multiprocessing)
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
