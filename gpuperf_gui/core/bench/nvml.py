"""Clock, power and temperature of an NVIDIA GPU through NVML (nvidia-ml-py), when present.

Everything degrades to ``None`` where NVML is missing (CPU hosts, AMD GPUs, no driver).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# nvmlClocksEventReasons bits that mean "clocks held down by heat or a hardware slowdown" (nvml.h).
# The software power cap (0x4) is left out: power at the limit is judged from power_w itself.
_HW_SLOWDOWN = 0x8
_SW_THERMAL = 0x20
_HW_THERMAL = 0x40
_HW_POWER_BRAKE = 0x80
HEAT_MASK = _HW_SLOWDOWN | _SW_THERMAL | _HW_THERMAL | _HW_POWER_BRAKE


@dataclass(frozen=True)
class GpuSample:
    sm_clock_hz: float | None = None
    max_sm_clock_hz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    throttle_reasons: int | None = None

    @property
    def throttled(self) -> bool | None:
        """Clocks under 95 % of their maximum, power at the limit, or a thermal/hardware slowdown
        (metrics.md §4.4); None when NVML said nothing."""
        known = False
        if self.sm_clock_hz and self.max_sm_clock_hz:
            known = True
            if self.sm_clock_hz < 0.95 * self.max_sm_clock_hz:
                return True
        if self.power_w and self.power_limit_w:
            known = True
            if self.power_w >= 0.97 * self.power_limit_w:
                return True
        if self.throttle_reasons is not None:
            known = True
            if self.throttle_reasons & HEAT_MASK:
                return True
        return False if known else None


class NvmlSampler:
    """Samples one GPU; every method is a no-op returning empty samples without NVML."""

    def __init__(self, cuda_index: int | None, uuid: str | None = None) -> None:
        self._nvml: Any = None
        self._handle: Any = None
        if cuda_index is None:
            return
        try:
            import pynvml  # nvidia-ml-py

            pynvml.nvmlInit()
            handle = None
            if uuid:
                try:
                    handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
                except Exception:
                    handle = None
            if handle is None:
                handle = pynvml.nvmlDeviceGetHandleByIndex(cuda_index)
            self._nvml, self._handle = pynvml, handle
        except Exception:
            self._nvml = self._handle = None

    @property
    def available(self) -> bool:
        return self._handle is not None

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._nvml, name)(self._handle, *args)
        except Exception:
            return None

    def sample(self) -> GpuSample:
        if not self.available:
            return GpuSample()
        nvml = self._nvml
        clock = self._call("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)
        max_clock = self._call("nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM)
        power_mw = self._call("nvmlDeviceGetPowerUsage")
        limit_mw = self._call("nvmlDeviceGetEnforcedPowerLimit")
        temperature = self._call("nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)
        reasons = None
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if hasattr(nvml, name):
                reasons = self._call(name)
                if reasons is not None:
                    break
        return GpuSample(
            sm_clock_hz=clock * 1e6 if clock is not None else None,
            max_sm_clock_hz=max_clock * 1e6 if max_clock is not None else None,
            power_w=power_mw / 1e3 if power_mw is not None else None,
            power_limit_w=limit_mw / 1e3 if limit_mw is not None else None,
            temperature_c=float(temperature) if temperature is not None else None,
            throttle_reasons=int(reasons) if reasons is not None else None,
        )


def base_sm_clock_hz(sampler: NvmlSampler | None) -> float | None:
    """The device's default application SM clock (its base for sustained work), where NVML gives it."""
    if sampler is None or not sampler.available:
        return None
    mhz = sampler._call("nvmlDeviceGetDefaultApplicationsClock", sampler._nvml.NVML_CLOCK_SM)
    return mhz * 1e6 if mhz else None


def other_gpu_processes(sampler: NvmlSampler | None, own_pid: int) -> int | None:
    """Compute and graphics processes on the device other than ``own_pid`` (None: not known)."""
    if sampler is None or not sampler.available:
        return None
    pids = set()
    for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        got = sampler._call(name)
        if got is None:
            return None
        pids |= {getattr(p, "pid", None) for p in got}
    return len(pids - {own_pid, None})
