"""Gzip bombs and special files against the loader: refused in time, and within the memory budget.

Usage: python benchmarks/gzip_bombs.py [--scale 1.0] [--budget 2GB] [--keep DIR]

Each case runs ``gpuperf diagnose FILE`` in a fresh process and prints its exit status, the
command's time inside the process after its imports (for the special files: the loader's refusal,
timed in this process) and the whole process's, its peak RSS (``wait4``) and its message. The
cases:

1. zeros: a ~10 MB gzip of 10 GB of zero bytes (multi-member: one 64 MiB member repeated);
2. events: a ~1 MB gzip of 1 GiB of tiny valid events (`{"ph":"X",...}`, ~60 bytes each);
3. /dev/zero and a named pipe (FIFO) without a writer.

Pass: every case exits 2 with a message (a scaled-down events bomb may also load, exit 0), in under 60 s (1 s for the special files), with a peak
RSS under 2 GB. ``--scale`` shrinks the bombs (0.01: 100 MB / 10 MB) for a quick run. The exit
status is 1 when a case fails.
"""
from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMBER_BYTES = 64 << 20
TINY_EVENT = b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1},'
PEAK_LIMIT_BYTES = 2_000_000_000
TIME_LIMIT_S = 60.0
SPECIAL_TIME_LIMIT_S = 1.0


def write_zeros_bomb(path: Path, total_bytes: int) -> Path:
    """A gzip file that decompresses to ``total_bytes`` zero bytes (repeated members)."""
    member_bytes = min(MEMBER_BYTES, total_bytes)
    member = gzip.compress(b"\0" * member_bytes, compresslevel=9)
    with path.open("wb") as fh:
        for _ in range(max(1, total_bytes // member_bytes)):
            fh.write(member)
    return path


def write_events_bomb(path: Path, total_bytes: int) -> Path:
    """A gzip trace of ``total_bytes`` of tiny valid events: every event decodes and builds."""
    per_member = max(1, min(MEMBER_BYTES, total_bytes) // len(TINY_EVENT))
    body = gzip.compress(TINY_EVENT * per_member, compresslevel=9)
    with path.open("wb") as fh:
        fh.write(gzip.compress(b'{"traceEvents":['))
        for _ in range(max(1, total_bytes // (per_member * len(TINY_EVENT)))):
            fh.write(body)
        fh.write(gzip.compress(TINY_EVENT[:-1] + b"]}"))
    return path


def run_diagnose(path: Path | str, budget: str | None, timeout_s: float = 120.0) -> dict:
    """``gpuperf diagnose PATH`` in a fresh process: exit status, wall time, peak RSS, message."""
    cmd = [sys.executable, "-c", _CHILD, "diagnose", str(path), "--top", "0"]
    if budget:
        cmd += ["--memory-budget", budget]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)  # noqa: S603
    deadline = t0 + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    wall_s = time.perf_counter() - t0
    stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = stderr.strip().splitlines()
    command_s = float(lines.pop()[len("command_s "):]) if lines and lines[-1].startswith("command_s ") else wall_s
    return {"rc": proc.returncode, "wall_s": wall_s, "command_s": command_s,
            "peak_rss_bytes": usage.ru_maxrss * 1024, "message": lines[-1] if lines else "",
            "traceback": "Traceback" in stderr}


_CHILD = ("import sys, time\nfrom gpuperf_gui.cli import main\nimport gpuperf_gui.core.trace.engine.api\n"
          "t0 = time.perf_counter()\ntry:\n    rc = main()\nfinally:\n"
          "    print(f'command_s {time.perf_counter() - t0:.3f}', file=sys.stderr)\nsys.exit(rc)\n")
"""The command, timed inside the process after the imports (the special files' limit is the
refusal, not the interpreter's start-up)."""


def _check(name: str, r: dict, time_limit_s: float, size: str, allowed: tuple[int, ...]) -> bool:
    ok = (r["rc"] in allowed and not r["traceback"] and r["command_s"] < time_limit_s
          and r["peak_rss_bytes"] < PEAK_LIMIT_BYTES)
    outcome = {0: "loaded", 2: "refused"}.get(r["rc"], "CRASHED")
    print(f"{name:<8} {size:>22}  exit {r['rc']} ({outcome})  {r['command_s']:6.2f} s "
          f"(process {r['wall_s']:.2f} s)  peak RSS "
          f"{r['peak_rss_bytes'] / 1e6:7.1f} MB  {'PASS' if ok else 'FAIL'}")
    print(f"         {r['message'][:300]}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="bomb size factor (1.0: 10 GB and 1 GiB)")
    ap.add_argument("--budget", default=None, help="--memory-budget passed to gpuperf (default: its default)")
    ap.add_argument("--keep", type=Path, default=None, help="write the bombs here and keep them")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gpuperf-bombs-"))
    folder.mkdir(parents=True, exist_ok=True)
    zeros = write_zeros_bomb(folder / "zeros.json.gz", int(10e9 * args.scale))
    events = write_events_bomb(folder / "events.json.gz", int((1 << 30) * args.scale))
    fifo = folder / "pipe.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; limits: exit 2, < {TIME_LIMIT_S:.0f} s "
          f"(special files < {SPECIAL_TIME_LIMIT_S:.0f} s), peak RSS < {PEAK_LIMIT_BYTES / 1e9:.0f} GB")
    ok = True
    for name, path, limit, size in (
            ("zeros", zeros, TIME_LIMIT_S, f"{zeros.stat().st_size / 1e6:.1f} MB gz -> {10 * args.scale:g} GB"),
            ("events", events, TIME_LIMIT_S, f"{events.stat().st_size / 1e6:.1f} MB gz -> {args.scale:g} GiB"),
            ("devzero", Path("/dev/zero"), SPECIAL_TIME_LIMIT_S, "character device"),
            ("fifo", fifo, SPECIAL_TIME_LIMIT_S, "named pipe")):
        result = run_diagnose(path, args.budget)
        if limit == SPECIAL_TIME_LIMIT_S:  # the limit is the loader's refusal, timed here in-process
            result["command_s"] = _refusal_s(path)
        # A scaled-down events bomb may fit the budget: a correct load passes too (within limits).
        allowed = (0, 2) if name == "events" and args.scale < 1 else (2,)
        ok &= _check(name, result, limit, size, allowed)
    if args.keep is None:
        for f in (zeros, events, fifo):
            f.unlink()
        folder.rmdir()
    return 0 if ok else 1


def _refusal_s(path: Path) -> float:
    """Seconds :func:`load_rank` takes to refuse ``path`` (inf if it does not refuse it)."""
    sys.path.insert(0, str(ROOT))
    from gpuperf_gui.core.trace.ingest.load import load_rank
    from gpuperf_gui.core.trace.model.trace_model import TraceFormatError

    t0 = time.perf_counter()
    try:
        load_rank(path)
    except TraceFormatError:
        return time.perf_counter() - t0
    return float("inf")


if __name__ == "__main__":
    sys.exit(main())
