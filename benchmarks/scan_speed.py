"""The C scanner's own speed: MB of trace text per CPU-second on one thread (no reading, no merging).

The file is read once and cut into runs of ``--run-mb`` as the streamed decoder cuts them; each
repeat scans every run on this thread and the best repeat's CPU time is printed (the least disturbed
by other programs on a shared machine).

    .venv/bin/python benchmarks/scan_speed.py /tmp/tabscale/e1M.json --repeats 5

On a shared machine CPU time varies by 10 %; instructions do not (valgrind counts them)::

    valgrind --tool=callgrind --branch-sim=yes --toggle-collect=scan \
        .venv/bin/python benchmarks/scan_speed.py e1M.json --repeats 1 --runs 2
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpuperf_gui.core.trace.ingest.scanner import _scan
from gpuperf_gui.core.trace.ingest.stream_decode import _last_boundary


def runs_of(text: bytes, run_bytes: int) -> list[tuple[bytearray, int]]:
    """The events array's runs as '[' events ']' buffers (the streamed decoder's cuts)."""
    first = text.index(b"[", text.index(b'"traceEvents"')) + 1
    runs, pos = [], first
    while True:
        stop = min(pos + run_bytes, len(text))
        buf = bytearray(b"[") + text[pos:stop]
        cut = _last_boundary(buf, len(buf))
        if cut is None:
            break
        close, following = cut
        buf[close + 1] = ord("]")
        runs.append((buf, close + 2))
        pos += following - 1
        if stop == len(text):
            break
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run-mb", type=float, default=16)
    parser.add_argument("--runs", type=int, help="scan only the first RUNS runs (under valgrind)")
    args = parser.parse_args()
    runs = runs_of(args.trace.read_bytes(), int(args.run_mb * 2**20))[:args.runs]
    total = sum(end for _, end in runs)
    best = float("inf")
    for _ in range(args.repeats):
        t = time.process_time()
        xs = 0
        for buf, end in runs:
            result = _scan.scan(buf, end)
            if result is None:
                raise SystemExit("a run was handed back to msgspec: not a clean trace")
            xs += result[1]
        best = min(best, time.process_time() - t)
    print(f"{args.trace.name}: {len(runs)} runs, {total / 1e6:.0f} MB, {xs:,} X events; best of {args.repeats}: "
          f"{best:.3f} CPU-s, {total / 1e6 / best:.0f} MB/s, {best / xs * 1e9:.0f} ns per X event")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
