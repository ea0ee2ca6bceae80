"""Make large jobs from small traces, for scale tests and benchmarks: a folder of N rank files tiled
from a few real ones, or one file with the events of a trace repeated to N events.

Each tile keeps the source's structure (lanes, flows, steps); a rank's events are shifted by a
whole number of µs per rank (the clocks differ, as on a real job) and ``distributedInfo.rank`` is
set, so the loader numbers the ranks from the files.

>>> tile_rank_folder([Path("rank0.json.gz")], Path("job64"), 64)        # doctest: +SKIP
>>> repeat_events(Path("trace.json.gz"), Path("big.json"), 5_000_000)   # doctest: +SKIP
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Sequence

import msgspec

_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def read_trace_json(path: Path) -> dict:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return msgspec.json.decode(data)


def shifted(trace: dict, rank: int, world_size: int, shift_us: int) -> dict:
    """A copy of ``trace`` as rank ``rank``: every event's ``ts`` plus ``shift_us`` (an integer, so
    integer timestamps stay integers)."""
    events = [{**ev, "ts": ev["ts"] + shift_us} if "ts" in ev and ev.get("ph") != "M" and shift_us else ev
              for ev in trace.get("traceEvents", [])]
    info = {**(trace.get("distributedInfo") or {"backend": "nccl"}), "rank": rank, "world_size": world_size}
    return {**trace, "traceEvents": events, "distributedInfo": info}


def tile_rank_folder(sources: Sequence[Path], folder: Path, n_ranks: int, *, shift_us: int = 13,
                     compress: bool = True) -> Path:
    """Write ``n_ranks`` rank files into ``folder``: rank r is ``sources[r % len(sources)]`` shifted
    by ``r * shift_us`` µs."""
    folder.mkdir(parents=True, exist_ok=True)
    traces = [read_trace_json(Path(p)) for p in sources]
    suffix = ".json.gz" if compress else ".json"
    for r in range(n_ranks):
        data = msgspec.json.encode(shifted(traces[r % len(traces)], r, n_ranks, r * shift_us))
        (folder / f"rank{r:05d}{suffix}").write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
    return folder


def repeat_events(source: Path, target: Path, n_events: int) -> int:
    """Write one plain-JSON trace with about ``n_events`` events: the source's timed events
    repeated, each copy shifted past the previous one's span (External ids and correlations offset
    so flows stay one-to-one). Written copy by copy: memory stays that of one copy. Returns the
    events written."""
    trace = read_trace_json(source)
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    body = [e for e in trace["traceEvents"] if e.get("ph") != "M" and "ts" in e]
    if not body:
        raise ValueError(f"{source}: no timed events to repeat")
    t0 = min(e["ts"] for e in body)
    t1 = max(e["ts"] + e.get("dur", 0) for e in body)
    period = int(t1 - t0) + 1000
    id_step = 10 ** len(str(max(_ids(body), default=0) + 1))
    copies = max(1, -(-n_events // len(body)))
    steps = [int(m.group(1)) for e in body if (m := _STEP_RE.match(str(e.get("name", ""))))]
    step_step = max(steps, default=-1) + 1
    rest = {k: v for k, v in trace.items() if k != "traceEvents"}
    encode = msgspec.json.encode
    with target.open("wb") as fh:
        fh.write(b'{"traceEvents":[')
        fh.write(encode(meta)[1:-1])
        for c in range(copies):
            chunk = []
            for e in body:
                ev = dict(e)
                ev["ts"] = e["ts"] + c * period
                if c:
                    _offset_ids(ev, c * id_step)
                    m = _STEP_RE.match(str(ev.get("name", "")))
                    if m:  # ProfilerStep#N: each copy's steps numbered after the previous copy's
                        ev["name"] = f"ProfilerStep#{int(m.group(1)) + c * step_step}"
                chunk.append(ev)
            fh.write(b"," if meta or c else b"")
            fh.write(encode(chunk)[1:-1])
        fh.write(b"]")
        for k, v in rest.items():
            fh.write(b"," + encode(k) + b":" + encode(v))
        fh.write(b"}")
    return copies * len(body)


def _ids(events: list[dict]) -> list[int]:
    out = []
    for e in events:
        args = e.get("args") or {}
        for k in ("External id", "correlation"):
            if isinstance(args.get(k), int):
                out.append(args[k])
        if isinstance(e.get("id"), int):
            out.append(e["id"])
    return out


def _offset_ids(ev: dict, offset: int) -> None:
    args = ev.get("args")
    if args:
        args = dict(args)
        for k in ("External id", "correlation", "Ev Idx"):
            if isinstance(args.get(k), int) and args[k] >= 0:
                args[k] += offset
        ev["args"] = args
    if isinstance(ev.get("id"), int):
        ev["id"] += offset
