"""The device database: datasheet ceilings of GPUs (dense peaks only) and local device detection.

The shipped database is ``resources/devices.toml`` (numbers and sources from the vendors' datasheets).
A user file (``<config dir>/gpuperf/devices.toml`` or ``$GPUPERF_DEVICES_FILE``) adds or overrides
entries; a broken user file is reported with its path and line, and the shipped database still loads.
No Qt here; torch is imported only by :func:`detect_local_device_id`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gpuperf_gui.core.roofline import ridge_flops_per_byte

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
TERA = 1e12
GIGA = 1e9
MEBI = 1024 * 1024


class PrecisionUnavailableError(ValueError):
    """The device has no (dense) peak for that precision."""


class UnknownDeviceError(KeyError):
    """No device with that id; the message lists close matches."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0]) if self.args else ""


class DeviceFileError(ValueError):
    """A device file could not be read: names the file and the line."""


@dataclass(frozen=True)
class Device:
    """One device's datasheet (or measured) ceilings, in SI units."""

    id: str
    name: str
    vendor: str
    memory_bandwidth_bytes_per_s: float | None = None
    memory_bytes: float | None = None
    sm_count: int | None = None
    l2_bytes: float | None = None
    boost_clock_hz: float | None = None
    dense_flops_per_s: dict[str, float] = field(default_factory=dict)
    sparse_flops_per_s: dict[str, float] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    match: tuple[str, ...] = ()
    arch: str = ""
    notes: str = ""
    revision: str = ""
    origin: str = "datasheet"  # "datasheet" | "user file" | "measured"

    def peak_flops_per_s(self, precision: str) -> float:
        """Dense peak for ``precision`` (FLOP/s; int8 in OP/s). Never a sparse figure."""
        if precision not in PRECISIONS:
            raise PrecisionUnavailableError(
                f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}"
            )
        peak = self.dense_flops_per_s.get(precision)
        if peak is None:
            have = ", ".join(p for p in PRECISIONS if p in self.dense_flops_per_s) or "none"
            hint = (" (not known until measured: run `gpuperf bench --device cpu`)"
                if self.id == "cpu" else "")
            raise PrecisionUnavailableError(
                f"{self.name} has no dense {precision} peak{hint}; available: {have}"
            )
        return peak

    def bandwidth_bytes_per_s(self) -> float:
        if not self.memory_bandwidth_bytes_per_s:
            raise PrecisionUnavailableError(
                f"{self.name} has no known memory bandwidth (not known until measured)"
            )
        return self.memory_bandwidth_bytes_per_s

    def ridge_flops_per_byte(self, precision: str) -> float:
        """Arithmetic intensity where the memory roof meets the compute roof."""
        return ridge_flops_per_byte(self.peak_flops_per_s(precision), self.bandwidth_bytes_per_s())

    def precisions(self) -> list[str]:
        return [p for p in PRECISIONS if p in self.dense_flops_per_s]


class DeviceDatabase:
    """Devices by id, plus the errors met while reading user files."""

    def __init__(self, devices: dict[str, Device], errors: list[str] | None = None) -> None:
        self._devices = dict(devices)
        self.errors: list[str] = list(errors or [])

    def get(self, device_id: str) -> Device:
        try:
            return self._devices[device_id]
        except KeyError:
            close = difflib.get_close_matches(device_id.lower(), self._devices, n=4, cutoff=0.4)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownDeviceError(
                f"unknown device {device_id!r}{hint} (`gpuperf gpus` lists all ids)"
            ) from None

    def __contains__(self, device_id: object) -> bool:
        return device_id in self._devices

    def ids(self) -> list[str]:
        return list(self._devices)

    def devices(self) -> list[Device]:
        return list(self._devices.values())

    def put(self, device: Device) -> None:
        """Add or replace a device (e.g. the cpu once its ceilings are measured)."""
        self._devices[device.id] = device

    def with_measured(
        self,
        device_id: str,
        peak_flops_per_s: dict[str, float],
        bandwidth_bytes_per_s: float | None,
    ) -> Device:
        """A copy of the device whose ceilings are the measured ones (datasheet values kept where
        nothing was measured)."""
        base = self.get(device_id)
        return dataclasses.replace(
            base,
            name=base.name if base.origin == "measured" else f"{base.name} (measured)",
            dense_flops_per_s={**base.dense_flops_per_s, **peak_flops_per_s},
            sparse_flops_per_s={},
            memory_bandwidth_bytes_per_s=bandwidth_bytes_per_s or base.memory_bandwidth_bytes_per_s,
            origin="measured",
        )


# ---------------------------------------------------------------------------------------------
# Reading TOML


def _scaled(table: dict[str, Any], scale: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for precision, value in table.items():
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r} (use {', '.join(PRECISIONS)})")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{precision} must be a positive number of TFLOP/s, got {value!r}")
        out[precision] = float(value) * scale
    return out


def _optional(entry: dict[str, Any], key: str, scale: float) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{key} must be a positive number, got {value!r}")
    return float(value) * scale


def device_from_entry(device_id: str, entry: dict[str, Any], origin: str) -> Device:
    """Build a :class:`Device` from one TOML table (units as in ``devices.toml``)."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", device_id):
        raise ValueError(f"device id {device_id!r} must be lowercase letters, digits and dashes")
    sm_count = entry.get("sm_count")
    if sm_count is not None and (not isinstance(sm_count, int) or sm_count <= 0):
        raise ValueError(f"sm_count must be a positive integer, got {sm_count!r}")
    return Device(
        id=device_id,
        name=str(entry.get("name", device_id)),
        vendor=str(entry.get("vendor", "")),
        arch=str(entry.get("arch", "")),
        memory_bandwidth_bytes_per_s=_optional(entry, "memory_bandwidth_tbs", TERA),
        memory_bytes=_optional(entry, "memory_gb", GIGA),
        sm_count=sm_count,
        l2_bytes=_optional(entry, "l2_mib", MEBI),
        boost_clock_hz=_optional(entry, "boost_mhz", 1e6),
        dense_flops_per_s=_scaled(entry.get("tflops", {}), TERA),
        sparse_flops_per_s=_scaled(entry.get("sparse_tflops", {}), TERA),
        sources=tuple(str(s) for s in entry.get("sources", ())),
        match=tuple(str(s) for s in entry.get("match", ())),
        notes=str(entry.get("notes", "")),
        revision=str(entry.get("revision", "")),
        origin=origin,
    )


def _line_of_table(text: str, device_id: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() in (f"[{device_id}]", f'["{device_id}"]'):
            return number
    return 1


def parse_devices(text: str, origin: str, path: str) -> dict[str, Device]:
    """Parse a devices TOML text. Raises :class:`DeviceFileError` naming ``path`` and the line."""
    try:
        tables = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # message carries "(at line N, column M)"
        raise DeviceFileError(f"{path}: {exc}") from None
    devices: dict[str, Device] = {}
    for device_id, entry in tables.items():
        line = _line_of_table(text, device_id)
        if not isinstance(entry, dict):
            raise DeviceFileError(f"{path}, line {line}: [{device_id}] must be a table")
        try:
            devices[device_id] = device_from_entry(device_id, entry, origin)
        except ValueError as exc:
            raise DeviceFileError(f"{path}, line {line}: [{device_id}] {exc}") from None
    return devices


def user_devices_file() -> Path:
    """Where users add or override devices."""
    explicit = os.environ.get("GPUPERF_DEVICES_FILE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpuperf" / "devices.toml"


def _merge(base: dict[str, Device], override: dict[str, Device]) -> dict[str, Device]:
    merged = dict(base)
    merged.update(override)
    return merged


def _with_saved_measurements(devices: dict[str, Device]) -> dict[str, Device]:
    """Devices without datasheet ceilings (the ``cpu``) take the ceilings measured on this machine
    by ``gpuperf bench`` (saved per device), so their roofline and MFU denominator exist. GPUs keep
    their datasheet peaks: the measured ones are drawn beside them, never substituted."""
    from gpuperf_gui.core.bench.ceilings import load_ceilings  # bench imports this module

    out = dict(devices)
    for device_id, device in devices.items():
        if device.dense_flops_per_s and device.memory_bandwidth_bytes_per_s:
            continue
        saved = load_ceilings(device_id)
        if saved is not None and (saved.matmul_flops_per_s or saved.bandwidth_bytes_per_s):
            out[device_id] = DeviceDatabase(devices).with_measured(
                device_id, dict(saved.matmul_flops_per_s), saved.bandwidth_bytes_per_s)
    return out


def load_database(user_file: Path | None = None, *, measured: bool = True) -> DeviceDatabase:
    """The shipped database merged with the user file (if any), and (``measured``) with the
    ceilings saved by ``gpuperf bench`` for devices that have no datasheet ones (the ``cpu``).
    User-file errors are collected in ``DeviceDatabase.errors``, never raised: the shipped
    devices always load."""
    shipped_text = (resources.files("gpuperf_gui.resources") / "devices.toml").read_text("utf-8")
    devices = parse_devices(shipped_text, "datasheet", "devices.toml (shipped)")
    path = user_file if user_file is not None else user_devices_file()
    errors: list[str] = []
    if path.is_file():
        try:
            devices = _merge(devices, parse_devices(path.read_text("utf-8"), "user file", str(path)))
        except (DeviceFileError, UnicodeDecodeError, OSError) as exc:
            errors.append(str(exc))
    if measured:
        devices = _with_saved_measurements(devices)
    return DeviceDatabase(devices, errors)


# ---------------------------------------------------------------------------------------------
# Detection


def match_device_name(name: str, database: DeviceDatabase | None = None) -> str | None:
    """The device id whose longest name pattern occurs in ``name`` as a whole word."""
    database = database or load_database()
    best: tuple[int, str] | None = None
    for device in database.devices():
        for pattern in device.match:
            regex = r"(?<![A-Za-z0-9])" + re.escape(pattern) + r"(?![A-Za-z0-9])"
            if re.search(regex, name, flags=re.IGNORECASE):
                if best is None or len(pattern) > best[0]:
                    best = (len(pattern), device.id)
    return best[1] if best else None


def local_gpu_name() -> str | None:
    """``torch.cuda.get_device_name()`` of device 0, or None without torch or CUDA."""
    try:
        import torch  # lazily: costs seconds
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        return str(torch.cuda.get_device_name(0))
    except RuntimeError:
        return None


def detect_local_device_id(database: DeviceDatabase | None = None) -> str:
    """The id of the local GPU, else ``"cpu"``."""
    name = local_gpu_name()
    if name is None:
        return "cpu"
    return match_device_name(name, database) or "cpu"


@dataclass(frozen=True)
class CpuEstimate:
    """Theoretical CPU fp32 peak = cores x clock x FLOPs per cycle (an estimate, never measured)."""

    cores: int
    clock_hz: float
    fp32_flops_per_cycle: int
    vector_isa: str

    @property
    def fp32_flops_per_s(self) -> float:
        return self.cores * self.clock_hz * self.fp32_flops_per_cycle


def _physical_cores(cpuinfo_text: str) -> int:
    """Distinct (physical id, core id) pairs: hardware threads of one core count once."""
    pairs = set()
    for block in cpuinfo_text.split("\n\n"):
        physical = re.search(r"^physical id\s*:\s*(\d+)", block, flags=re.MULTILINE)
        core = re.search(r"^core id\s*:\s*(\d+)", block, flags=re.MULTILINE)
        if physical and core:
            pairs.add((physical.group(1), core.group(1)))
    return len(pairs)


def estimate_cpu_peak(cpuinfo_text: str | None = None) -> CpuEstimate | None:
    """Estimate from /proc/cpuinfo: per core 2 FMA units x lanes x 2 FLOPs (AVX-512: 16 lanes,
    AVX2: 8, SSE: 4). The clock read is the current one, so this is only a guide."""
    if cpuinfo_text is None:
        try:
            cpuinfo_text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    flags_match = re.search(r"^flags\s*:\s*(.*)$", cpuinfo_text, flags=re.MULTILINE)
    mhz = re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo_text, flags=re.MULTILINE)
    if not flags_match or not mhz:
        return None
    flags = set(flags_match.group(1).split())
    cores = _physical_cores(cpuinfo_text) or os.cpu_count() or len(mhz)
    if "avx512f" in flags:
        isa, lanes = "AVX-512", 16
    elif "avx2" in flags and "fma" in flags:
        isa, lanes = "AVX2+FMA", 8
    else:
        isa, lanes = "SSE", 4
    return CpuEstimate(cores, max(float(m) for m in mhz) * 1e6, 2 * lanes * 2, isa)
