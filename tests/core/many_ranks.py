"""A many-rank job with one known late rank, tiled from a real two-rank recording (tests and
benchmarks of the compact rank overview).

tests/data/h200/ddp_straggler_gloo is DDP over gloo where rank 1's host sleeps 40 ms before every
forward, so rank 0 waits ~40 ms in each step's first all-reduce (its .meta.json: gloo all-reduce
median 45.2 ms on rank 0, 5.2 ms on rank 1). Tiling rank 0 as every rank but one, and rank 1 as
``late_rank``, gives a job where ``late_rank`` is late and all the others wait for it: the
recording's straggler, independent of the engine under test.
"""
from __future__ import annotations

import gc
import gzip
from pathlib import Path

import msgspec

from gpuperf_gui.core.trace.synthetic.tile import read_trace_json, shifted

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
STRAGGLER_SOURCES = (DATA / "ddp_straggler_gloo" / "rank0.json.gz", DATA / "ddp_straggler_gloo" / "rank1.json.gz")
RECORDED_LATE_MS = 40.0
"""The sleep the recording put before rank 1's forward (its .meta.json: ``late_ms``)."""


def first_steps(trace: dict, steps: int) -> dict:
    """``trace`` cut before its ``steps``-th ProfilerStep starts on the host (metadata kept)."""
    starts = sorted(e["ts"] for e in trace["traceEvents"]
                    if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"))
    if len(starts) <= steps:
        return trace
    cut = starts[steps]
    out = dict(trace)
    out["traceEvents"] = [e for e in trace["traceEvents"] if e.get("ph") == "M" or e.get("ts", 0) < cut]
    return out


def tiled_straggler_job(folder: Path, n_ranks: int, late_rank: int, *, shift_us: int = 1, steps: int | None = None,
                        compress: bool = True) -> Path:
    """Write ``n_ranks`` rank files into ``folder``: rank ``late_rank`` is the recording's late rank
    1, every other rank its waiting rank 0; rank r's clock is ``r * shift_us`` µs later. ``steps``
    keeps the first profiled steps only (the recording has 4: fewer events for a fast test)."""
    folder.mkdir(parents=True, exist_ok=True)
    waiting, late = (read_trace_json(p) for p in STRAGGLER_SOURCES)
    if steps is not None:
        waiting, late = first_steps(waiting, steps), first_steps(late, steps)
    encode = msgspec.json.Encoder().encode
    for r in range(n_ranks):
        data = encode(shifted(late if r == late_rank else waiting, r, n_ranks, r * shift_us))
        if compress:
            (folder / f"rank{r:05d}.json.gz").write_bytes(gzip.compress(data, compresslevel=1))
        else:
            (folder / f"rank{r:05d}.json").write_bytes(data)
    return folder


def reachable(root: object) -> list[object]:
    """Every object reachable from ``root`` (what it keeps alive); classes are not followed. Tests
    look at ``type(o)``: ``isinstance`` would read a lazy torch module proxy's ``__class__``."""
    seen, stack, out = set(), [root], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or issubclass(type(obj), type):
            continue
        seen.add(id(obj))
        out.append(obj)
        stack.extend(gc.get_referents(obj))
    return out
