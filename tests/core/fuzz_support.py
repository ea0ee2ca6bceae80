"""Fuzzing the trace input side: seeds from real traces, mutators, and the one check every input gets.

Used by tests/core/test_fuzz_loader.py (a bounded run in CI) and benchmarks/fuzz.py (the long run).
An input passes when the whole path a user takes (load + analyse + diagnose + op table, the
``diagnose --json`` object through ``json.dumps(allow_nan=False)``, the Trace tab's lane
preparation) either works with every figure in its range, or stops with a
:class:`~gpuperf_gui.core.trace.model.trace_model.TraceFormatError` that names the file. Anything else is a crash.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import random
import signal
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.model.lanes import prepare_lanes
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = DATA / "shared_traces"
SEED_FILES = (
    DATA / "backward_thread.json",
    DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    DATA / "rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
    SHARED / "hta/triton_example/triton_example.json.gz",
    SHARED / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    SHARED / "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    SHARED / "tracelens/torch_compile_triton/trace.json.gz",
    SHARED / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    SHARED / "h200/memory_bound_visible.json.gz",
    SHARED / "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
    SHARED / "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    SHARED / "hta/distributed_info_unavailable/distributed_info_not_found.json.gz",
    SHARED / "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
)
MAX_SEED_EVENTS = 200
"""Seeds keep their metadata events and their first events in time, so each input runs in ms."""
FUZZ_BUDGET_BYTES = 64_000_000
HANG_S = 10.0
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
"""Where inputs are written (memory-backed when the OS has it: a file per input)."""

_FRACTION_KEYS = ("_fraction", "_share")
_NON_NEGATIVE_SUFFIXES = ("_s", "_us", "_bytes", "_per_s", "seconds", "calls", "flops", "bytes")
_SIGNED_KEYS = ("lag", "skew", "delta", "speedup")


@dataclass(frozen=True)
class Seed:
    name: str
    doc: Any  # the decoded JSON (object or list), cut to MAX_SEED_EVENTS


def load_seeds() -> list[Seed]:
    """The seed traces, each cut to its metadata plus its first events in time."""
    seeds = []
    for path in SEED_FILES:
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        meta = [e for e in events if e.get("ph") == "M"]
        timed = sorted((e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))),
                       key=lambda e: e["ts"])
        kept = meta + timed[:MAX_SEED_EVENTS]
        if isinstance(doc, dict):
            doc = dict(doc, traceEvents=kept)
        else:
            doc = kept
        seeds.append(Seed(path.name, doc))
    return seeds


# -- mutators --------------------------------------------------------------------------------------
_NUMBERS = (0, -1, 1, -1e308, 1e308, 1e-320, 2**63, 2**64, -(2**63) - 1, 10**30, 0.5, -5e6,
            float("nan"), float("inf"), float("-inf"), 7 * 24 * 3600 * 1e6 + 1, 1.7e15)
_VALUES = (None, True, False, "", "abc", "0x0", "N/A", "NaN", [], [1, 2], {}, {"a": 1}, "\ud800",
           "ProfilerStep#" + "9" * 5000, "ProfilerStep#-1", "ProfilerStep#12", "x" * 10_000)
_CATEGORIES = ("kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "gpu_user_annotation", "cuda_sync",
               "user_annotation", "Trace", "ac2g", "Kernel", "Runtime", "python_function", "overhead")
_NAMES = ("aten::bmm", "aten::mm", "aten::addmm", "aten::linear", "aten::_scaled_dot_product_flash_attention",
          "ProfilerStep#1", "ProfilerStep#" + "9" * 5000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
          "cudaLaunchKernel", "Memcpy HtoD (Pageable -> Device)", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
          "nccl:send", "aten::sum", "")
_DIMS = ([[2, 3]], [], [[]], [[1e308, 2], [2, 1e308]], [[2, 3, 4]], [[-1, 5], [5, -1]], "abc",
         [[2**70, 3], [3, 4]], [[4, 4, 4], [4, 4, 4], [4, 4, 4], [4, 4, 4]])


def _events(doc: Any) -> list | None:
    if isinstance(doc, dict):
        ev = doc.get("traceEvents")
        return ev if isinstance(ev, list) else None
    return doc if isinstance(doc, list) else None


def _some_event(doc: Any, rng: random.Random) -> dict | None:
    ev = _events(doc)
    if not ev:
        return None
    e = rng.choice(ev)
    return e if isinstance(e, dict) else None


def _mut_number(doc: Any, rng: random.Random) -> None:
    e = _some_event(doc, rng)
    if e is None:
        return
    target = e.get("args") if isinstance(e.get("args"), dict) and rng.random() < 0.4 else e
    keys = [k for k, v in target.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    key = rng.choice(keys or ["ts", "dur", "pid", "tid"])
    target[key] = rng.choice(_NUMBERS)


def _mut_delete_key(doc: Any, rng: random.Random) -> None:
    e = _some_event(doc, rng)
    if e:
        target = e.get("args") if isinstance(e.get("args"), dict) and e["args"] and rng.random() < 0.3 else e
        target.pop(rng.choice(list(target)), None)
    elif isinstance(doc, dict) and doc and rng.random() < 0.2:
        doc.pop(rng.choice(list(doc)), None)


def _mut_type(doc: Any, rng: random.Random) -> None:
    e = _some_event(doc, rng)
    if e:
        key = rng.choice(list(e) or ["ph"])
        e[key] = rng.choice(_VALUES)
    elif isinstance(doc, dict) and doc:
        doc[rng.choice(list(doc))] = rng.choice(_VALUES)


def _mut_name(doc: Any, rng: random.Random) -> None:
    e = _some_event(doc, rng)
    if e is None:
        return
    if rng.random() < 0.5:
        e["name"] = rng.choice(_NAMES)
        if e["name"].startswith("aten::") and rng.random() < 0.7:
            e.setdefault("args", {})
            if isinstance(e["args"], dict):
                e["args"]["Input Dims"] = rng.choice(_DIMS)
    else:
        e["cat"] = rng.choice(_CATEGORIES)


def _mut_phase(doc: Any, rng: random.Random) -> None:
    e = _some_event(doc, rng)
    if e is not None:
        e["ph"] = rng.choice(("X", "B", "E", "M", "i", "s", "f", "C", "q", ""))


def _mut_events(doc: Any, rng: random.Random) -> None:
    """Duplicate, drop or shuffle events; or put steps out of time order."""
    ev = _events(doc)
    if not ev:
        return
    r = rng.random()
    if r < 0.3:
        ev.extend(rng.choices(ev, k=min(len(ev), 20)))
    elif r < 0.5:
        del ev[rng.randrange(len(ev)):][: rng.randrange(1, 50)]
    elif r < 0.7:
        rng.shuffle(ev)
    else:
        steps = [e for e in ev if isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#")]
        numbers = [e["name"] for e in steps]
        rng.shuffle(numbers)
        for e, n in zip(steps, numbers):
            e["name"] = n


STRUCTURE_MUTATORS: tuple[Callable[[Any, random.Random], None], ...] = (
    _mut_number, _mut_delete_key, _mut_type, _mut_name, _mut_phase, _mut_events)


def _encode(doc: Any, rng: random.Random) -> bytes:
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)  # NaN/Infinity literals, as Python writes them
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate stays as written


def _byte_mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    op = rng.randrange(6)
    if not buf:
        return bytes(rng.randbytes(rng.randrange(1, 16)))
    if op == 0:  # flip bytes
        for _ in range(rng.randrange(1, 9)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif op == 1:  # truncate
        del buf[rng.randrange(len(buf)):]
    elif op == 2:  # insert structural or random bytes
        pos = rng.randrange(len(buf) + 1)
        buf[pos:pos] = rng.choice((b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"\x00", b"NaN", b"\\ud800",
                                   b"-Infinity", b" ", b"\xff\xfe", rng.randbytes(4)))
    elif op == 3:  # delete a slice
        a = rng.randrange(len(buf))
        del buf[a: a + rng.randrange(1, 64)]
    elif op == 4:  # duplicate a slice (concatenated documents when it is the whole text)
        a = rng.randrange(len(buf))
        b = min(len(buf), a + rng.randrange(1, 256)) if rng.random() < 0.8 else len(buf)
        buf[b:b] = buf[a:b] if rng.random() < 0.8 else buf
    else:  # swap two numbers' digits
        digits = [i for i in range(min(len(buf), 20000)) if 48 <= buf[i] <= 57]
        if len(digits) >= 2:
            i, j = rng.sample(digits, 2)
            buf[i], buf[j] = buf[j], buf[i]
    return bytes(buf)


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, str]:
    """One fuzz input from a seed: structure mutations, then maybe byte mutations, maybe gzip.
    Returns ``(data, file name)`` (the name says gzip or not, as a user's file would)."""
    doc = json.loads(json.dumps(seed.doc))
    for _ in range(rng.randrange(0, 4)):
        rng.choice(STRUCTURE_MUTATORS)(doc, rng)
    data = _encode(doc, rng)
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        data = _byte_mutate(data, rng)
    if rng.random() < 0.15:
        data = gzip.compress(data, compresslevel=1)
        if rng.random() < 0.3:
            data = _byte_mutate(data, rng)
        return data, "trace.json.gz"
    return data, "trace.json"


# -- the check -------------------------------------------------------------------------------------
class Hang(Exception):
    """An input ran past :data:`HANG_S`."""


@dataclass
class Outcome:
    kind: str  # "loaded", "refused", "crash", "hang"
    detail: str = ""


def figure_problems(obj: Any, path: str = "") -> list[str]:
    """Figures out of range in a ``diagnose --json`` object: fractions outside [0, 1], negative
    times, counts or sizes, non-finite numbers."""
    problems: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = str(k)
            where = f"{path}.{key}"
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                problems += _number_problems(where, key, path, float(v))
            else:
                problems += figure_problems(v, where)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            problems += figure_problems(v, f"{path}[{i}]")
    return problems


def _number_problems(where: str, key: str, parent: str, v: float) -> list[str]:
    if not math.isfinite(v):
        return [f"{where} = {v}"]
    if any(s in key for s in _SIGNED_KEYS) or any(s in parent for s in _SIGNED_KEYS):
        return []
    in_share = parent.endswith(("kernel_time_share", "idle_breakdown"))
    if key.endswith(_FRACTION_KEYS) or in_share:
        return [] if -1e-9 <= v <= 1 + 1e-6 else [f"{where} = {v} (a fraction)"]
    if key.endswith(_NON_NEGATIVE_SUFFIXES) or parent.endswith("idle_breakdown_s"):
        return [] if v >= 0 else [f"{where} = {v} (negative)"]
    return []


def _alarm(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise Hang


def check_input(data: bytes, path: Path, budget_bytes: int = FUZZ_BUDGET_BYTES,
                hang_s: float = HANG_S) -> Outcome:
    """Run one input through load + analyse + diagnose + JSON + lane preparation."""
    path.write_bytes(data)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, hang_s)
    try:
        result = Trace([path], workers=1, memory_budget=budget_bytes).result()
        obj = result.to_json()
        json.dumps(obj, allow_nan=False)
        problems = figure_problems(obj)
        prepare_lanes(result.model)
        if problems:
            return Outcome("crash", "figures out of range: " + "; ".join(problems[:5]))
        return Outcome("loaded")
    except Hang:
        return Outcome("hang", f"over {hang_s:g} s")
    except TraceFormatError as exc:
        if str(path) not in str(exc):
            return Outcome("crash", f"message does not name the file: {exc}")
        return Outcome("refused", str(exc))
    except Exception:  # noqa: BLE001 - a crash is what the fuzz looks for
        return Outcome("crash", traceback.format_exc(limit=8))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
