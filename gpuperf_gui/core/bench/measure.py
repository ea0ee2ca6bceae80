"""The measuring loop: ``iter_measurements(plan, stop)`` (STYLE.md R4). torch is imported lazily.

For each planned point it yields a ``BenchMessage("started")``, then the :class:`MeasuredPoint`
(or a ``"skipped"`` message when memory runs out, the dtype is unsupported or CUDA is missing, and
carries on). It checks ``stop`` between points and while timing, appends every point to the
plan's JSON-lines file as soon as it is measured, and ends with the run's :class:`MeasuredCeilings`.
It saves nothing else: the caller decides whether the ceilings join the device's saved ones
(:func:`gpuperf_gui.core.bench.sweep.save_ceilings_on_the_way`).

Device discovery lives in :mod:`~gpuperf_gui.core.bench.device`, the torch kernel builders in
:mod:`~gpuperf_gui.core.bench.kernels`, sweeps with collectives in :mod:`~gpuperf_gui.core.bench.sweep`.
"""
from __future__ import annotations

import os
import platform
import threading
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Union

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, compute_ceilings
from gpuperf_gui.core.bench.device import DeviceInfo, SkipPoint, device_limits, free_bytes, resolve_device
from gpuperf_gui.core.bench.kernels import build_kernel, count_flops, is_oom, matmul_precision, needed_bytes, release
from gpuperf_gui.core.bench.nvml import NvmlSampler
from gpuperf_gui.core.bench.plans import (
    BenchPlan,
    PlannedPoint,
    TimingPolicy,
    default_cpu_threads,
    estimate_point_cost_s,
    expand_plan,
)
from gpuperf_gui.core.bench.cache_levels import residency
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import ResultsWriter
from gpuperf_gui.core.bench.timing import Cancelled, Timing, time_cpu, time_cuda

BenchItem = Union[MeasuredPoint, BenchMessage, MeasuredCeilings]
_GIB = 1024**3


def measure_point(point: PlannedPoint, info: DeviceInfo, timing: TimingPolicy,
                  stop: threading.Event | None = None, sampler: NvmlSampler | None = None) -> MeasuredPoint:
    """Measure one planned point (raises SkipPoint, Cancelled, or out-of-memory errors)."""
    need = needed_bytes(point, info, timing)
    free = free_bytes(info)
    if need > 0.9 * free:
        raise SkipPoint(f"needs {need / _GIB:.2f} GiB, {free / _GIB:.2f} GiB free")
    with matmul_precision(point.dtype):
        kernel = build_kernel(point, info)
        if info.kind == "cuda":
            result: Timing = time_cuda(kernel.fn, timing, stop, flush=kernel.flush,
                                       l2_bytes=info.cache_bytes, sampler=sampler)
        else:
            result = time_cpu(kernel.fn, timing, stop, threads=info.threads)
    counted, suffix = kernel.counted_flops, kernel.method_suffix
    del kernel
    gpu = result.gpu
    return MeasuredPoint(
        kernel=point.kernel, dtype=point.dtype, size=point.size, flops=point.flops, bytes=point.bytes,
        seconds=result.median_s, method=result.method + suffix,
        iqr_low_s=result.p25_s, iqr_high_s=result.p75_s, samples=result.samples,
        device=info.torch_device, device_id=info.device_id, working_set_bytes=point.working_set_bytes,
        beyond_cache=point.working_set_bytes > info.cache_bytes, l2_flushed=result.l2_flushed,
        cache_level=(residency(point.working_set_bytes, info.cache_levels, info.threads)
                     if info.cache_levels else None),
        fma_per_element=point.fma_per_element,
        counted_flops=counted,
        threads=info.threads, sm_clock_hz=gpu.sm_clock_hz, max_sm_clock_hz=gpu.max_sm_clock_hz,
        power_w=gpu.power_w, power_limit_w=gpu.power_limit_w, temperature_c=gpu.temperature_c,
        throttled=gpu.throttled, launch_bound=result.launch_bound, timestamp=time.time(),
    )


# ---------------------------------------------------------------------------------------------
# The loop


def _header(plan: BenchPlan, info: DeviceInfo, total: int) -> dict[str, Any]:
    import torch

    from gpuperf_gui import __version__

    return {
        "device": info.torch_device, "device_id": info.device_id, "device_name": info.name,
        "suite": plan.suite, "planned_points": total, "cache_bytes": info.cache_bytes,
        "cache_levels": [level.to_json_dict() for level in info.cache_levels],
        "memory_bytes": info.memory_bytes, "threads": info.threads, "torch": torch.__version__,
        "cuda": torch.version.cuda, "gpuperf": __version__, "host": platform.node(),
        "pid": os.getpid(), "started_at": time.time(),
        "timing": {"warmup_s": plan.timing.warmup_s, "rep_s": plan.timing.rep_s,
                   "min_samples": plan.timing.min_samples},
    }


def _preload_compiler() -> None:
    """Import torch.compile's stack up front, for the same reason as the FlopCounterMode warm-up."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch._dynamo  # noqa: F401
            import torch._inductor.compile_fx  # noqa: F401
    except Exception:  # noqa: BLE001 - the fma_chain points will report it
        pass


def _eta_s(costs: list[float], index: int, elapsed_s: float) -> float:
    done = sum(costs[:index])
    ratio = elapsed_s / done if done > 0 and elapsed_s > 0 else 1.0
    return sum(costs[index:]) * ratio


def iter_measurements(
    plan: BenchPlan,
    stop: threading.Event,
) -> Iterator[BenchItem]:
    """Measure ``plan`` point by point (STYLE.md R4).

    Yields ``BenchMessage`` (progress, skips), ``MeasuredPoint`` (each as measured) and, last,
    the run's own ``MeasuredCeilings`` (saved nowhere but the run file: the caller saves them).
    CPU runs use ``plan.cpu_threads`` or :func:`default_cpu_threads`. Checks ``stop`` between
    points and while timing; a stopped run still ends with the ceilings of the points measured so
    far (``complete=False``).
    """
    import torch

    # FlopCounterMode's first use holds the GIL for ~0.1 s (lazy imports): pay it now, with torch's
    # own import, rather than in the middle of the measurements (the GUI thread waits on the GIL).
    count_flops(lambda: torch.mm(torch.ones(8, 8), torch.ones(8, 8)))

    try:
        info = resolve_device(plan.device)
    except SkipPoint as exc:
        yield BenchMessage("skipped", f"skipped the whole run: {exc}")
        return
    threads_before = torch.get_num_threads()
    if info.kind == "cpu":
        threads = plan.cpu_threads or default_cpu_threads()
        torch.set_num_threads(threads)
        info = replace(info, threads=threads)
    if info.kind == "cuda":
        torch.cuda.set_device(info.cuda_index)
    points = expand_plan(plan, device_limits(info))
    if any(p.kernel == "fma_chain" for p in points):
        _preload_compiler()
    sampler = NvmlSampler(info.cuda_index, info.uuid) if info.kind == "cuda" else None
    writer = ResultsWriter(plan.results_path) if plan.results_path else None
    measured: list[MeasuredPoint] = []
    costs = [estimate_point_cost_s(p, plan.timing) for p in points]
    started = time.monotonic()
    stopped = False
    try:
        if writer:
            writer.write_header(_header(plan, info, len(points)))
        yield BenchMessage("info", f"{info.name} ({info.torch_device}), {len(points)} points, "
                                   f"torch {torch.__version__}"
                                   + (f", {info.threads} CPU threads" if info.kind == "cpu" else "")
                                   + ("" if info.kind == "cpu" or sampler and sampler.available
                                      else ", no NVML: clocks not recorded"),
                           total=len(points))
        for index, planned in enumerate(points):
            if stop.is_set():
                stopped = True
                break
            yield BenchMessage("started", f"measuring {planned.label}", index, len(points),
                               planned.label, _eta_s(costs, index, time.monotonic() - started))
            item = _measure_one(planned, info, plan.timing, stop, sampler, index, len(points))
            if item is None:
                stopped = True
                break
            if isinstance(item, MeasuredPoint):
                measured.append(item)
                if writer:
                    writer.write_point(item)
            elif writer:
                writer.write_message(item)
            yield item
        if stopped or stop.is_set():
            message = BenchMessage("stopped", f"stopped after {len(measured)} of {len(points)} points",
                                   len(measured), len(points))
            if writer:
                writer.write_message(message)
            yield message
        busy = _busy_message(measured, sampler)
        if busy is not None:
            if writer:
                writer.write_message(busy)
            yield busy
        ceilings = compute_ceilings(measured, info.device_id, info.name, info.torch_device,
                                    complete=not (stopped or stop.is_set()), run=run_name(plan))
        if writer:
            writer.write_ceilings(ceilings)
        yield BenchMessage("finished", f"{len(measured)} points in {time.monotonic() - started:.1f} s; "
                                       f"{ceilings.summary()}", len(points), len(points), eta_s=0.0)
        yield ceilings
    finally:
        if writer:
            writer.close()
        if info.kind == "cpu":
            torch.set_num_threads(threads_before)


def _busy_message(measured: list[MeasuredPoint], sampler: NvmlSampler | None) -> BenchMessage | None:
    """A warning when some points are too noisy to be ceilings, saying what shared the machine."""
    from gpuperf_gui.core.bench import noise
    from gpuperf_gui.core.bench.nvml import base_sm_clock_hz, other_gpu_processes

    if all(noise.is_reliable(p) for p in measured):
        return None
    report = noise.busy_report(measured, base_sm_clock_hz=base_sm_clock_hz(sampler),
                               other_gpu_processes=other_gpu_processes(sampler, os.getpid()))
    return BenchMessage("warning", noise.unreliable_message(measured, report), len(measured), len(measured))


def run_name(plan: BenchPlan) -> str:
    """The run's name as recorded with its ceilings: its file's name without the suffix."""
    return Path(plan.results_path).stem if plan.results_path else ""


def _measure_one(planned: PlannedPoint, info: DeviceInfo, timing: TimingPolicy, stop: threading.Event,
                 sampler: NvmlSampler | None, index: int, total: int) -> MeasuredPoint | BenchMessage | None:
    """One point, or a "skipped" message; None when stopped while timing."""
    try:
        return measure_point(planned, info, timing, stop, sampler)
    except Cancelled:
        return None
    except SkipPoint as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - a failing point must not end the run
        reason = "out of memory" if is_oom(exc) else f"{type(exc).__name__}: {exc}"
        release(info)
    return BenchMessage("skipped", f"skipped {planned.label}: {reason}", index, total, planned.label)


__all__ = ["BenchItem", "iter_measurements", "measure_point", "run_name"]
