"""Timers in the manner of ``triton.testing.do_bench`` (torch imported inside functions only).

CUDA, kernels of ~20 µs and more: one pair of CUDA events per call, a warm-up of ``warmup_s`` of
device time, then ``rep_s`` of timed calls; with ``flush`` a buffer of at least 256 MiB (2×L2
when that is larger) is zeroed before each call, outside the events (do_bench's policy).
CUDA, shorter kernels: the calls are captured in a CUDA graph and its replays are timed
("cuda-graph"; inputs stay L2-resident). CPU: ``time.perf_counter`` over blocks of calls lasting
at least 1 ms each. All report the median, the 25th/75th percentiles and the sample count.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gpuperf_gui.core.bench.nvml import GpuSample, NvmlSampler
from gpuperf_gui.core.bench.plans import TimingPolicy


class Cancelled(Exception):
    """The stop flag was set while a point was being timed."""


@dataclass(frozen=True)
class Timing:
    median_s: float
    p25_s: float
    p75_s: float
    samples: int
    method: str
    l2_flushed: bool = False
    launch_bound: bool = False
    gpu: GpuSample = GpuSample()


def summarize(times_s: list[float] | np.ndarray) -> tuple[float, float, float]:
    """Median, 25th and 75th percentile."""
    values = np.asarray(times_s, dtype=float)
    p25, median, p75 = np.percentile(values, [25.0, 50.0, 75.0])
    return float(median), float(p25), float(p75)


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Cancelled


def time_cpu(fn: Callable[[], Any], policy: TimingPolicy, stop: threading.Event | None = None,
             threads: int | None = None) -> Timing:
    """perf_counter timing of ``fn`` on the CPU (blocks of calls of at least 1 ms)."""
    start = time.perf_counter()
    fn()
    estimate_s = max(time.perf_counter() - start, 1e-9)
    warm_deadline = time.perf_counter() + policy.warmup_s
    while time.perf_counter() < warm_deadline:
        _check(stop)
        fn()
    number = max(1, int(1e-3 / estimate_s))
    times: list[float] = []
    deadline = time.perf_counter() + policy.rep_s
    while len(times) < policy.max_samples and (
            time.perf_counter() < deadline or len(times) < policy.min_samples):
        _check(stop)
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    median, p25, p75 = summarize(times)
    method = "cpu-perf_counter" + (f" threads={threads}" if threads else "")
    return Timing(median, p25, p75, len(times), method)


def flush_buffer(device: Any, l2_bytes: int, policy: TimingPolicy) -> Any:
    """do_bench's L2 flush buffer (int32), at least 2× the L2."""
    import torch

    size = max(policy.flush_cache_bytes, 2 * int(l2_bytes))
    return torch.empty(size // 4, dtype=torch.int32, device=device)


def _estimate_cuda_s(fn: Callable[[], Any], calls: int = 5, cache: Any = None) -> float:
    """Device time of one call. A spin kernel first keeps the GPU busy while the host queues the
    calls, so the estimate of a short kernel is its own time, not the host's launch rate."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(1_000_000)  # ~0.5 ms of spinning at GPU clock rates
    start.record()
    for _ in range(calls):
        if cache is not None:
            cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    return max(start.elapsed_time(end) * 1e-3 / calls, 1e-9)


def time_cuda(fn: Callable[[], Any], policy: TimingPolicy, stop: threading.Event | None = None,
              flush: bool = True, l2_bytes: int = 0, sampler: NvmlSampler | None = None,
              allow_graph: bool = True) -> Timing:
    """Time ``fn`` on the current CUDA device (events per call, or a CUDA graph when short)."""
    import torch

    fn()
    torch.cuda.synchronize()
    estimate_s = _estimate_cuda_s(fn)
    # With a flush the zeroing kernel keeps the GPU busy while the next call is queued (do_bench),
    # so per-call events stay accurate for short kernels; without one they need a graph.
    if allow_graph and not flush and estimate_s < policy.graph_below_s:
        try:
            return _time_cuda_graph(fn, estimate_s, policy, stop, sampler)
        except Cancelled:
            raise
        except Exception:  # capture not supported for this callable: per-call events, labelled
            torch.cuda.synchronize()
    cache = flush_buffer(fn_device(), l2_bytes, policy) if flush else None
    estimate_s = _estimate_cuda_s(fn, cache=cache) if flush else estimate_s
    n_warmup = max(1, int(policy.warmup_s / estimate_s))
    n_repeat = min(policy.max_samples, max(policy.min_samples, int(policy.rep_s / estimate_s)))
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for i in range(n_repeat):
        if cache is not None:
            cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    gpu = sampler.sample() if sampler else GpuSample()  # queued work still running: clocks under load
    torch.cuda.synchronize()
    _check(stop)
    times = [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)]
    median, p25, p75 = summarize(times)
    method = "cuda-events+flush" if flush else "cuda-events"
    return Timing(median, p25, p75, len(times), method, l2_flushed=flush,
                  launch_bound=not flush and median < policy.graph_below_s, gpu=gpu)


def fn_device() -> Any:
    import torch

    return torch.device("cuda", torch.cuda.current_device())


def _time_cuda_graph(fn: Callable[[], Any], estimate_s: float, policy: TimingPolicy,
                     stop: threading.Event | None, sampler: NvmlSampler | None) -> Timing:
    """Capture ``calls`` back-to-back calls in a graph; time each replay; report per call."""
    import torch

    calls = min(1000, max(1, int(5e-4 / estimate_s)))  # ~0.5 ms of work per replay
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    replay_s = _estimate_cuda_s(graph.replay, calls=2)
    for _ in range(max(1, int(policy.warmup_s / replay_s))):
        graph.replay()
    n_replays = min(policy.max_samples, max(policy.min_samples, int(policy.rep_s / replay_s)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_replays)]
    for i in range(n_replays):
        starts[i].record()
        graph.replay()
        ends[i].record()
    gpu = sampler.sample() if sampler else GpuSample()
    torch.cuda.synchronize()
    del graph
    _check(stop)
    times = [s.elapsed_time(e) * 1e-3 / calls for s, e in zip(starts, ends)]
    median, p25, p75 = summarize(times)
    return Timing(median, p25, p75, len(times), f"cuda-graph x{calls}", gpu=gpu)
