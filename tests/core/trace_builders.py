"""Small traces built by hand for the Trace tab's tests (core and views): every figure in them is
counted by hand in the docstrings."""

from __future__ import annotations

import json
from pathlib import Path

from gpuperf_gui.core.trace.synthetic.synth import ALLREDUCE, ELEMENTWISE, GEMM, synth_trace

PID, TID = 100, 100


def _x(name: str, cat: str, ts: float, dur: float, pid: int = PID, tid: int = TID, **args: object) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def _kernel(name: str, ts: float, dur: float, corr: int, ext: int, stream: int = 7) -> list[dict]:
    return [_x(name, "kernel", ts, dur, pid=0, tid=stream, correlation=corr, device=0, stream=stream,
               **{"External id": ext}),
            {"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e"}]


def _launch(ts: float, corr: int, ext: int, dur: float = 10.0) -> list[dict]:
    return [_x("cudaLaunchKernel", "cuda_runtime", ts, dur, correlation=corr, **{"External id": ext}),
            {"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": ts, "cat": "ac2g", "name": "ac2g"}]


def hand_trace(path: Path) -> Path:
    """Two steps (times in µs):

    step 1, CPU [0, 1000): gemm A [100, 400) and gemm A [410, 500) on stream 7, all-reduce [450, 600)
    on stream 20, elementwise C [700, 800); launches at 50, 70, 90 and 650.
    step 2, CPU [1000, 2000): gemm D [1200, 1500) launched at 1100, elementwise E [1550, 1600)
    launched at 1120. ``aten::mm`` (External id 77) encloses D's launch; D carries External id 77.
    """
    ev = [_x("ProfilerStep#1", "user_annotation", 0, 1000), _x("ProfilerStep#2", "user_annotation", 1000, 1000),
          _x("aten::mm", "cpu_op", 1095, 20, **{"External id": 77})]
    ev += _launch(50, 1, 11) + _kernel(GEMM, 100, 300, 1, 11)
    ev += _launch(70, 2, 12) + _kernel(GEMM, 410, 90, 2, 12)
    ev += _launch(90, 3, 13) + _kernel(ALLREDUCE, 450, 150, 3, 13, stream=20)
    ev += _launch(650, 4, 14) + _kernel(ELEMENTWISE, 700, 100, 4, 14)
    ev += _launch(1100, 5, 77) + _kernel(GEMM, 1200, 300, 5, 77)
    ev += _launch(1120, 6, 16) + _kernel(ELEMENTWISE, 1550, 50, 6, 16)
    meta = [{"name": "thread_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": "main"}}]
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
                                "traceEvents": meta + sorted(ev, key=lambda e: e["ts"])}))
    return path


def straggler_job(folder: Path, late_us: float = 2000.0) -> Path:
    """Two ranks of the comm-bound synthetic job where rank 1's host is ``late_us`` late before every
    all-reduce: its launching op and everything after it move later, while rank 0's all-reduce
    starts on time and lasts ``late_us`` longer (it waits inside the collective for rank 1)."""
    import msgspec

    folder.mkdir(exist_ok=True)
    for rank in (0, 1):
        trace = synth_trace("comm_bound", rank=rank, world_size=2, steps=6)
        events = [e for e in trace["traceEvents"] if e.get("ph") != "M"]
        kernels = sorted((e for e in events if e.get("name") == ALLREDUCE), key=lambda e: e["ts"])
        ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
        cuts = [ops[k["args"]["External id"]]["ts"] if rank == 1 else k["ts"] for k in kernels]
        late_kernels = {id(k) for k in kernels}
        for e in events:
            t0, end = e["ts"], e["ts"] + e.get("dur", 0.0)
            moved = sum(1 for c in cuts if (t0 >= c if rank == 1 else t0 > c))
            inside = sum(1 for c in cuts if t0 < c < end)          # a step annotation around a cut
            e["ts"] = t0 + late_us * moved
            if "dur" in e:
                e["dur"] += late_us * inside + (late_us if rank == 0 and id(e) in late_kernels else 0.0)
        (folder / f"rank{rank}.json").write_bytes(msgspec.json.encode(trace))
    return folder
