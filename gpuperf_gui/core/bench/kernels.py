"""torch kernel builders: random inputs allocated for a planned point and the callable to time.

Every function imports torch lazily. :func:`build_kernel` raises :class:`SkipPoint` for a point this
device cannot run (unsupported dtype, no compiler for the FMA chain on a GPU).
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from gpuperf_gui.core.bench.device import DeviceInfo, SkipPoint
from gpuperf_gui.core.bench.plans import PlannedPoint, TimingPolicy


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


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate" in text)


def release(info: DeviceInfo) -> None:
    import gc

    gc.collect()
    if info.kind == "cuda":
        import torch

        torch.cuda.empty_cache()


__all__ = ["Kernel", "build_kernel", "count_flops", "is_oom", "matmul_precision", "needed_bytes", "release"]
