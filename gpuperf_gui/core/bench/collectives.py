"""Collective bandwidth through ``torch.distributed``: all-reduce, all-gather, reduce-scatter.

nccl-tests convention (metrics.md §3.7): S = bytes of the whole array (all-gather: the gathered
output; reduce-scatter: the input), ``algbw = S / t``, ``busbw = algbw · 2(n−1)/n`` for all-reduce
and ``algbw · (n−1)/n`` for all-gather and reduce-scatter. gloo across processes on the CPU, NCCL
across the GPUs of one machine (one process each). Two ways in:

* :func:`iter_collective_measurements` spawns ``world_size`` processes itself and streams rank 0's
  points (the GUI and ``gpuperf bench --collectives``);
* under ``torchrun`` (RANK/WORLD_SIZE set) :func:`run_in_current_group` measures in the group the
  launcher made: ``torchrun --nproc-per-node 8 -m gpuperf_gui.cli bench --collectives``.

NVLink SHARP stays off (``NCCL_NVLS_ENABLE=0``) unless the environment already says otherwise.
"""
from __future__ import annotations

import os
import queue
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterator

from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.timing import summarize

COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter")
_KIB, _MIB = 1024, 1024 * 1024


def bus_factor(op: str, world_size: int) -> float:
    """busbw / algbw for ``op`` on ``world_size`` ranks (nccl-tests PERFORMANCE.md)."""
    n = world_size
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    raise ValueError(f"unknown collective {op!r}")


@dataclass(frozen=True)
class CollectivePlan:
    backend: str = "auto"            # "auto" (nccl with ≥2 GPUs, else gloo) | "gloo" | "nccl"
    world_size: int = 2
    sizes_bytes: tuple[int, ...] = (4 * _KIB, 256 * _KIB, 4 * _MIB, 32 * _MIB)
    ops: tuple[str, ...] = COLLECTIVE_OPS
    warmup_iters: int = 3
    iters: int = 10                  # back-to-back calls per sample
    samples: int = 5
    timeout_s: float = 300.0


def default_collective_plan(suite: str = "quick", backend: str = "auto",
                            world_size: int | None = None) -> CollectivePlan:
    """gloo: 2 processes, up to 32 MiB (full: 256 MiB); NCCL: every GPU, up to 1 GiB (full: 8 GiB)."""
    nccl = backend == "nccl"
    if backend == "auto":
        gpus = _cuda_count()
        nccl = gpus >= 2
        backend = "nccl" if nccl else "gloo"
    if world_size is None:
        world_size = _cuda_count() if nccl else 2
    if nccl:
        top = 8 * 1024 * _MIB if suite == "full" else 1024 * _MIB
        sizes = [8]
        while sizes[-1] < top:
            sizes.append(sizes[-1] * (4 if suite == "full" else 16))
        return CollectivePlan(backend, world_size, tuple(sizes), iters=20)
    top = 256 * _MIB if suite == "full" else 32 * _MIB
    sizes = [4 * _KIB]
    while sizes[-1] < top:
        sizes.append(sizes[-1] * 8)
    return CollectivePlan(backend, world_size, tuple(sizes))


def _cuda_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


# ---------------------------------------------------------------------------------------------
# Inside a process group (every rank runs this)


def _op_tensors(op: str, size_bytes: int, world: int, device: Any) -> tuple[Any, Any]:
    import torch

    elements = max(world, size_bytes // 4 // world * world)  # divisible by the world size
    if op == "all_reduce":
        return torch.empty(elements, device=device).uniform_(-1, 1), None
    if op == "all_gather":
        return (torch.empty(elements // world, device=device).uniform_(-1, 1),
                torch.empty(elements, device=device))
    return torch.empty(elements, device=device).uniform_(-1, 1), torch.empty(elements // world, device=device)


def _call(op: str, first: Any, second: Any) -> None:
    import torch.distributed as dist

    if op == "all_reduce":
        dist.all_reduce(first)
    elif op == "all_gather":  # *_single: torch ≥ 2.13 names; *_tensor before (deprecated since)
        (getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor)(second, first)
    else:
        (getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor)(second, first)


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_in_group(plan: CollectivePlan, device: Any, should_stop=lambda: False) -> Iterator[MeasuredPoint]:
    """Measure every op and size in the current process group; every rank yields the same points.

    Per sample: barrier, ``iters`` back-to-back calls, synchronize; the slowest rank's time counts
    (a MAX all-reduce), as the collective ends when the last rank does.
    """
    import torch
    import torch.distributed as dist

    world, backend = dist.get_world_size(), dist.get_backend()
    flag = torch.zeros(1, device=device)
    for op in plan.ops:
        for size in plan.sizes_bytes:
            flag.fill_(1.0 if (dist.get_rank() == 0 and should_stop()) else 0.0)
            dist.broadcast(flag, 0)  # all ranks stop together, never half of them
            if flag.item() > 0:
                return
            first, second = _op_tensors(op, size, world, device)
            total_bytes = (first.numel() if op != "all_gather" else second.numel()) * 4
            for _ in range(plan.warmup_iters):
                _call(op, first, second)
            _sync(device)
            times = []
            for _ in range(plan.samples):
                dist.barrier()
                start = time.perf_counter()
                for _ in range(plan.iters):
                    _call(op, first, second)
                _sync(device)
                elapsed = torch.tensor([(time.perf_counter() - start) / plan.iters], device=device)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                times.append(float(elapsed.item()))
            median, p25, p75 = summarize(times)
            algbw = total_bytes / median
            yield MeasuredPoint(
                kernel=op, dtype="fp32", size=total_bytes, flops=0.0, bytes=float(total_bytes),
                seconds=median, method=f"{backend}-perf_counter x{plan.iters}", iqr_low_s=p25,
                iqr_high_s=p75, samples=len(times), device=str(device), working_set_bytes=total_bytes,
                world_size=world, busbw_bytes_per_s=algbw * bus_factor(op, world), timestamp=time.time(),
            )
            del first, second


def run_in_current_group(plan: CollectivePlan) -> Iterator[MeasuredPoint]:
    """Under torchrun: join the launcher's group (env://), measure, leave. All ranks yield points."""
    import torch
    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    backend = plan.backend if plan.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    created = not dist.is_initialized()
    if created:
        dist.init_process_group(backend)
    try:
        yield from measure_in_group(plan, device)
    finally:
        if created:
            dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# Spawning the ranks ourselves


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _worker(rank: int, port: int, plan_dict: dict, results: Any, stop: Any) -> None:
    """One rank (spawned process): rank 0 sends each point's dict, then ("done", None)."""
    import torch
    import torch.distributed as dist

    plan = CollectivePlan(**{**plan_dict, "sizes_bytes": tuple(plan_dict["sizes_bytes"]),
                             "ops": tuple(plan_dict["ops"])})
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    try:
        if plan.backend == "nccl":
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
        else:
            torch.set_num_threads(1)
            device = torch.device("cpu")
        dist.init_process_group(plan.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=plan.world_size)
        try:
            for point in measure_in_group(plan, device, should_stop=stop.is_set):
                if rank == 0:
                    results.put(("point", point.to_json_dict()))
        finally:
            dist.destroy_process_group()
        if rank == 0:
            results.put(("done", None))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(("error", f"rank {rank}: {type(exc).__name__}: {exc}"))


def iter_collective_measurements(plan: CollectivePlan, stop: threading.Event) -> Iterator[MeasuredPoint | BenchMessage]:
    """Spawn ``plan.world_size`` ranks and stream rank 0's points (checks ``stop`` meanwhile)."""
    import multiprocessing

    if plan.world_size < 2:
        yield BenchMessage("skipped", f"collectives need 2 or more ranks ({plan.backend}: "
                                      f"{plan.world_size} available)")
        return
    context = multiprocessing.get_context("spawn")
    results, stop_ranks = context.Queue(), context.Event()
    port = _free_port()
    plan_dict = asdict(plan)
    processes = [context.Process(target=_worker, args=(rank, port, plan_dict, results, stop_ranks),
                                 daemon=True) for rank in range(plan.world_size)]
    for process in processes:
        process.start()
    yield BenchMessage("info", f"{plan.backend}: {plan.world_size} ranks, {len(plan.ops)} collectives × "
                               f"{len(plan.sizes_bytes)} sizes", total=len(plan.ops) * len(plan.sizes_bytes))
    deadline = time.monotonic() + plan.timeout_s
    try:
        while True:
            if stop.is_set():
                stop_ranks.set()
            try:
                kind, payload = results.get(timeout=0.2)
            except queue.Empty:
                if not any(p.is_alive() for p in processes):
                    yield BenchMessage("warning", "the collective ranks exited without finishing")
                    return
                if time.monotonic() > deadline:
                    yield BenchMessage("warning", f"collectives timed out after {plan.timeout_s:.0f} s")
                    return
                continue
            if kind == "point":
                yield MeasuredPoint.from_json_dict(payload)
            elif kind == "error":
                yield BenchMessage("skipped", f"collectives failed: {payload}")
                stop_ranks.set()
                return
            else:
                return
    finally:
        stop_ranks.set()
        for process in processes:
            process.join(timeout=10)
        for process in processes:
            if process.is_alive():  # a rank stuck in a collective whose peer died
                process.terminate()
                process.join(timeout=5)
