"""Device discovery for the benchmarks: which device a run measures, its caches, memory and dtypes.

torch is imported lazily (only :func:`resolve_device` and :func:`free_bytes` need it).
"""
from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path

from gpuperf_gui.core.bench.cache_levels import CacheLevel, read_cpu_caches
from gpuperf_gui.core.bench.plans import DeviceLimits

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
    cache_levels: tuple[CacheLevel, ...] = ()   # the CPU's data caches, smallest first


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
                          ("fp32", "bf16", "fp16"), threads=torch.get_num_threads(),
                          cache_levels=read_cpu_caches())
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


def free_bytes(info: DeviceInfo) -> int:
    if info.kind == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info(info.cuda_index)
        return int(free)
    return _cpu_available_bytes()


def device_limits(info: DeviceInfo) -> DeviceLimits:
    return DeviceLimits(info.kind, free_bytes(info), info.cache_bytes, info.supported_dtypes)




__all__ = ["DeviceInfo", "SkipPoint", "device_limits", "free_bytes", "gpu_device_id", "resolve_device",
           "unknown_gpu_id"]
