"""The measuring loop: ``iter_measurements(plan, stop)`` (STYLE.md R4). torch is imported lazily.

For each planned point it yields a ``BenchMessage("started")``, then the :class:`MeasuredPoint`
(or a ``"skipped"`` message when memory runs out, the dtype is unsupported or CUDA is missing, and
carries on). It checks ``stop`` between points and while timing, appends every point to the
plan's JSON-lines file as soon as it is measured, and ends with the run's :class:`MeasuredCeilings`.
"""
from __future__ import annotations

import contextlib
import os
import platform
import re
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Union

from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    compute_ceilings,
    reset_saved_ceilings,
    update_saved_ceilings,
)
from gpuperf_gui.core.bench.nvml import NvmlSampler
from gpuperf_gui.core.bench.plans import (
    BenchPlan,
    DeviceLimits,
    PlannedPoint,
    TimingPolicy,
    estimate_point_cost_s,
    expand_plan,
)
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import ResultsWriter
from gpuperf_gui.core.bench.timing import Cancelled, Timing, time_cpu, time_cuda

BenchItem = Union[MeasuredPoint, BenchMessage, MeasuredCeilings]
_GIB = 1024**3


class SkipPoint(Exception):
    """This point cannot be measured here (unsupported dtype, too large); the run continues."""


@dataclass(frozen=True)
class DeviceInfo:
    """The resolved device a run measures."""

    torch_device: str            # "cpu" | "cuda:0"
    kind: str                    # "cpu" | "cuda"
    name: str                    # "NVIDIA H200", CPU model name
    device_id: str               # hardware database id ("h200", "cpu"; "gpu-<slug>" if unknown)
    cache_bytes: int             # last-level cache (L2 on GPUs)
    memory_bytes: int            # total memory
    supported_dtypes: tuple[str, ...]
    threads: int | None = None   # torch CPU threads
    cuda_index: int | None = None
    uuid: str | None = None


# ---------------------------------------------------------------------------------------------
# Device


def _cpu_cache_bytes() -> int:
    """Largest cache reported by sysfs (Linux); 32 MiB when unknown."""
    best = 0
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in base.glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 32 * 1024**2


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


def _cpu_available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 8 * _GIB


def unknown_gpu_id(name: str) -> str:
    """The id of a GPU the device database does not know: ``"gpu-"`` + a slug of its name
    ("NVIDIA RTX PRO 6000" -> "gpu-nvidia-rtx-pro-6000"), so its ceilings get their own file and
    never land on another device (the cpu) or take its peaks."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"gpu-{slug or 'unknown'}"


def gpu_device_id(name: str) -> str:
    """The hardware database id of a GPU named ``name`` (torch's device name), else
    :func:`unknown_gpu_id`. Never "cpu": an unknown GPU is measured and saved as itself."""
    from gpuperf_gui.core.hardware import match_device_name

    return match_device_name(name) or unknown_gpu_id(name)


def resolve_device(requested: str) -> DeviceInfo:
    """Turn "auto" / "cpu" / "cuda" / "cuda:N" into a :class:`DeviceInfo` (raises SkipPoint
    when CUDA was asked for and there is none)."""
    import torch

    want_cuda = requested.startswith("cuda") or (requested == "auto" and torch.cuda.is_available())
    if not want_cuda:
        return DeviceInfo("cpu", "cpu", _cpu_name(), "cpu", _cpu_cache_bytes(), _cpu_available_bytes(),
                          ("fp32", "bf16", "fp16"), threads=torch.get_num_threads())
    if not torch.cuda.is_available():
        raise SkipPoint("CUDA is not available on this machine (torch "
                        f"{torch.__version__}); run with --device cpu")
    index = int(requested.split(":", 1)[1]) if ":" in requested else torch.cuda.current_device()
    if index >= torch.cuda.device_count():
        raise SkipPoint(f"there is no cuda:{index} ({torch.cuda.device_count()} CUDA devices)")
    props = torch.cuda.get_device_properties(index)
    major, minor = props.major, props.minor
    dtypes = ["fp32", "fp16"]
    if major >= 8:
        dtypes[1:1] = ["tf32", "bf16"]
    if (major, minor) >= (8, 9) and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        dtypes.append("fp8")
    uuid = getattr(props, "uuid", None)
    return DeviceInfo(
        torch_device=f"cuda:{index}", kind="cuda", name=props.name, device_id=gpu_device_id(props.name),
        cache_bytes=int(getattr(props, "L2_cache_size", 0) or 50 * 1024**2),
        memory_bytes=int(props.total_memory), supported_dtypes=tuple(dtypes), cuda_index=index,
        uuid=f"GPU-{uuid}" if uuid is not None else None,
    )


def _free_bytes(info: DeviceInfo) -> int:
    if info.kind == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info(info.cuda_index)
        return int(free)
    return _cpu_available_bytes()


def device_limits(info: DeviceInfo) -> DeviceLimits:
    return DeviceLimits(info.kind, _free_bytes(info), info.cache_bytes, info.supported_dtypes)


# ---------------------------------------------------------------------------------------------
# Kernels


@dataclass
class Kernel:
    """A ready-to-time callable and what the timer needs to know about it."""

    fn: Callable[[], Any]
    flush: bool                   # flush L2 between calls (CUDA)
    counted_flops: float | None = None
    method_suffix: str = ""


_TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@contextlib.contextmanager
def matmul_precision(dtype: str) -> Iterator[None]:
    """TF32 on for "tf32", off for "fp32" (restored afterwards)."""
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def count_flops(fn: Callable[[], Any]) -> float | None:
    """FLOPs of one call by ``torch.utils.flop_counter.FlopCounterMode`` (None if it fails)."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            fn()
        return float(counter.get_total_flops())
    except Exception:
        return None


def needed_bytes(point: PlannedPoint, info: DeviceInfo, timing: TimingPolicy) -> int:
    extra = 0
    if point.kernel == "matmul":
        extra = point.size * point.size * 4  # fp32 staging for fp8, cuBLAS workspace
        if info.kind == "cuda":
            extra += max(timing.flush_cache_bytes, 2 * info.cache_bytes)
    return int(point.working_set_bytes + extra)


def _random(shape: tuple[int, ...], dtype: str, device: str) -> Any:
    import torch

    if dtype == "fp8":
        return torch.randn(shape, device=device).to(torch.float8_e4m3fn)
    return torch.randn(shape, device=device, dtype=getattr(torch, _TORCH_DTYPES[dtype]))


def _uniform(elements: int, device: str) -> Any:
    import torch

    return torch.empty(elements, device=device, dtype=torch.float32).uniform_(-1.0, 1.0)


def _matmul_kernel(point: PlannedPoint, info: DeviceInfo) -> Kernel:
    import torch

    n, device = point.size, info.torch_device
    if point.dtype == "fp8":
        a = _random((n, n), "fp8", device)
        b = _random((n, n), "fp8", device).t()  # column-major, as _scaled_mm requires
        scale = torch.ones((), device=device)

        def fn() -> Any:
            return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    else:
        a, b = _random((n, n), point.dtype, device), _random((n, n), point.dtype, device)
        c = torch.empty_like(a)

        def fn() -> Any:
            return torch.mm(a, b, out=c)
    return Kernel(fn, flush=True, counted_flops=count_flops(fn))


def _memory_kernel(point: PlannedPoint, info: DeviceInfo) -> Kernel:
    import torch

    n, device = point.size, info.torch_device
    if point.kernel == "copy":
        src, dst = _uniform(n, device), torch.empty(n, device=device)
        return Kernel(lambda: dst.copy_(src), flush=False)
    if point.kernel == "add":
        a, b, c = _uniform(n, device), _uniform(n, device), torch.empty(n, device=device)
        return Kernel(lambda: torch.add(a, b, out=c), flush=False)
    b, c, a = _uniform(n, device), _uniform(n, device), torch.empty(n, device=device)
    return Kernel(lambda: torch.add(b, c, alpha=0.5, out=a), flush=False)  # triad a = b + s·c


def _fma_chain_source(k: int) -> Callable[[Any], Any]:
    def chain(x: Any) -> Any:
        for _ in range(k):
            x = x * 0.999 + 0.001
        return x
    return chain


def _fma_kernel(point: PlannedPoint, info: DeviceInfo) -> Kernel:
    """k dependent x·a+b per element, compiled into one kernel so intermediates stay in registers."""
    import torch

    x = _uniform(point.size, info.torch_device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.compile's own deprecation noise
            torch._dynamo.reset()  # one function per k: stay clear of the recompile limit
            compiled = torch.compile(_fma_chain_source(point.fma_per_element), dynamic=False,
                                     fullgraph=True)
            compiled(x)
            if info.kind == "cuda":
                torch.cuda.synchronize()
        return Kernel(lambda: compiled(x), flush=False, method_suffix=" torch.compile")
    except Exception as exc:
        if info.kind == "cuda":
            raise SkipPoint(f"torch.compile failed ({type(exc).__name__}); eager would re-read "
                            "memory per step") from exc
    # CPU without a working compiler: 1 MiB chunks stay in L2 across the k in-place steps.
    chunks = x.split(256 * 1024)
    k = point.fma_per_element

    def chunked() -> None:
        for chunk in chunks:
            for _ in range(k):
                chunk.mul_(0.999).add_(0.001)
    return Kernel(chunked, flush=False, method_suffix=" chunked-eager (L2-resident)")


def build_kernel(point: PlannedPoint, info: DeviceInfo) -> Kernel:
    """Allocate random inputs for ``point`` and return the callable to time."""
    if point.dtype not in info.supported_dtypes and point.kernel == "matmul":
        raise SkipPoint(f"{point.dtype} is not supported on {info.name}")
    if point.kernel == "matmul":
        return _matmul_kernel(point, info)
    if point.kernel == "fma_chain":
        return _fma_kernel(point, info)
    return _memory_kernel(point, info)


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate" in text)


def _release(info: DeviceInfo) -> None:
    import gc

    gc.collect()
    if info.kind == "cuda":
        import torch

        torch.cuda.empty_cache()


def measure_point(point: PlannedPoint, info: DeviceInfo, timing: TimingPolicy,
                  stop: threading.Event | None = None, sampler: NvmlSampler | None = None) -> MeasuredPoint:
    """Measure one planned point (raises SkipPoint, Cancelled, or out-of-memory errors)."""
    need = needed_bytes(point, info, timing)
    free = _free_bytes(info)
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
        device=info.torch_device, working_set_bytes=point.working_set_bytes,
        beyond_cache=point.working_set_bytes > info.cache_bytes, l2_flushed=result.l2_flushed,
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
    *,
    results_dir: Path | None = None,
    save_device_ceilings: bool = True,
    reset_ceilings: bool = False,
) -> Iterator[BenchItem]:
    """Measure ``plan`` point by point (STYLE.md R4).

    Yields ``BenchMessage`` (progress, skips), ``MeasuredPoint`` (each as measured) and, last,
    the run's own ``MeasuredCeilings``. When ``save_device_ceilings`` they are merged into the
    device's saved ceilings under ``results_dir`` (best so far, :func:`update_saved_ceilings`);
    ``reset_ceilings`` forgets the saved ones first. Checks ``stop`` between points and while
    timing; a stopped run still ends with (and saves) the ceilings of the points measured so far
    (``complete=False``).
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
    if info.kind == "cpu" and plan.cpu_threads:
        torch.set_num_threads(plan.cpu_threads)
        info = DeviceInfo(**{**info.__dict__, "threads": plan.cpu_threads})
    if info.kind == "cuda":
        torch.cuda.set_device(info.cuda_index)
    if reset_ceilings and save_device_ceilings:
        reset_saved_ceilings(info.device_id, results_dir)
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
        ceilings = compute_ceilings(measured, info.device_id, info.name, info.torch_device,
                                    complete=not (stopped or stop.is_set()), run=run_name(plan))
        if writer:
            writer.write_ceilings(ceilings)
        if measured and save_device_ceilings:
            update_saved_ceilings(ceilings, results_dir)
        yield BenchMessage("finished", f"{len(measured)} points in {time.monotonic() - started:.1f} s; "
                                       f"{ceilings.summary()}", len(points), len(points), eta_s=0.0)
        yield ceilings
    finally:
        if writer:
            writer.close()
        if info.kind == "cpu":
            torch.set_num_threads(threads_before)


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
        reason = "out of memory" if _is_oom(exc) else f"{type(exc).__name__}: {exc}"
        _release(info)
    return BenchMessage("skipped", f"skipped {planned.label}: {reason}", index, total, planned.label)


def iter_run(
    plan: BenchPlan,
    stop: threading.Event,
    *,
    results_dir: Path | None = None,
    collectives: Any = None,
    save_device_ceilings: bool = True,
    reset_ceilings: bool = False,
) -> Iterator[BenchItem]:
    """:func:`iter_measurements`, then (optionally) the collectives of ``collectives`` (a
    ``CollectivePlan``); the final ceilings carry both. Collective points go to the same file.

    The sweep's own "finished" message is held back: one "finished" message comes at the very end
    (after the collectives), then the ceilings. Collective ceilings are saved even when the sweep
    gave none (the whole sweep skipped)."""
    from gpuperf_gui.core.bench.collectives import iter_collective_measurements

    started = time.monotonic()
    ceilings: MeasuredCeilings | None = None
    finished: BenchMessage | None = None
    sweep_points = 0
    for item in iter_measurements(plan, stop, results_dir=results_dir,
                                  save_device_ceilings=save_device_ceilings, reset_ceilings=reset_ceilings):
        if isinstance(item, MeasuredCeilings):
            ceilings = item
        elif isinstance(item, BenchMessage) and item.kind == "finished":
            finished = item
        else:
            sweep_points += isinstance(item, MeasuredPoint)
            yield item
    if collectives is not None and not stop.is_set():
        points: list[MeasuredPoint] = []
        writer = ResultsWriter(plan.results_path) if plan.results_path else None
        try:
            for item in iter_collective_measurements(collectives, stop):
                if isinstance(item, MeasuredPoint):
                    points.append(item)
                    if writer:
                        writer.write_point(item)
                yield item
            if points:
                ceilings = with_collective_ceilings(ceilings, points, run_name(plan))
                if writer:
                    writer.write_ceilings(ceilings)
                if save_device_ceilings:
                    update_saved_ceilings(ceilings, results_dir)
        finally:
            if writer:
                writer.close()
        if finished is not None or points:
            measured = sweep_points + len(points)
            summary = ceilings.summary() if ceilings is not None else "no ceilings measured"
            finished = BenchMessage("finished", f"{measured} points in {time.monotonic() - started:.1f} s; "
                                                f"{summary}", measured, measured, eta_s=0.0)
    if finished is not None:
        yield finished
    if ceilings is not None:
        yield ceilings


def _collective_device_id(points: list[MeasuredPoint]) -> str:
    """The device id of collective points: the local GPU's on CUDA, else "cpu"."""
    if not points[0].device.startswith("cuda"):
        return "cpu"
    import torch

    return gpu_device_id(torch.cuda.get_device_name(points[0].device))


def with_collective_ceilings(ceilings: MeasuredCeilings | None, points: list[MeasuredPoint],
                             run: str) -> MeasuredCeilings:
    """``ceilings`` with the busbw of collective ``points`` added; the collective ceilings alone
    (for their device) when the sweep gave none."""
    from dataclasses import replace

    device_id = ceilings.device_id if ceilings is not None else _collective_device_id(points)
    collective = compute_ceilings(points, device_id, run=run)
    if ceilings is None:
        return collective
    return replace(ceilings, collective_busbw_bytes_per_s=collective.collective_busbw_bytes_per_s,
                   collective_runs=collective.collective_runs)
