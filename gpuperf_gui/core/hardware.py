"""The device database: datasheet ceilings of GPUs (dense peaks only) and local device detection.

The shipped database is ``resources/devices.toml`` (numbers and sources from the vendors' datasheets).
A user file (``<config dir>/gpuperf/devices.toml`` or ``$GPUPERF_DEVICES_FILE``) adds or overrides
entries; a broken user file is reported once with its path and line and set aside
(``devices.toml.bad``), and the shipped database still loads. Measured ceilings are not read here:
:class:`gpuperf_gui.core.catalog.DeviceCatalog` joins them to this database when asked.
No Qt here; torch is imported only by :func:`detect_local_device_id`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

from gpuperf_gui.core.paths import user_devices_file
from gpuperf_gui.core.roofline import ridge_flops_per_byte
from gpuperf_gui.core.state_files import (
    SetAside,
    checked,
    loads_toml,
    read_state_text,
    report,
    set_aside,
)

Precision = Literal["fp64", "fp64_tensor", "fp32", "fp32_tensor", "tf32", "bf16", "fp16", "fp8", "fp4", "int8"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
"""fp32_tensor: FP32 on the matrix units (AMD's "FP32 matrix"; NVIDIA has none, its tensor-core FP32 is tf32)."""
TERA = 1e12
GIGA = 1e9
MEBI = 1024 * 1024
GIBI = 1024**3
MEMORY_UNITS = {"GB": GIGA, "GiB": GIBI}
"""``memory_unit`` in a device file: what the vendor's capacity figure means (GPU datasheets' "GB" are GiB)."""


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
    memory_unit: str = "GB"
    """The unit the vendor states the capacity in ("GiB" or "GB"; :data:`MEMORY_UNITS`)."""
    origin: str = "datasheet"  # "datasheet" | "user file" | "measured"
    measured_with: str = ""    # measured: how ("16 CPU threads, cpu-perf_counter")

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
        measured_with: str = "",
    ) -> Device:
        """A copy of the device whose ceilings are the measured ones (datasheet values kept where
        nothing was measured); ``measured_with`` says how they were measured."""
        base = self.get(device_id)
        return dataclasses.replace(
            base,
            name=base.name if base.origin == "measured" else f"{base.name} (measured)",
            dense_flops_per_s={**base.dense_flops_per_s, **peak_flops_per_s},
            sparse_flops_per_s={},
            memory_bandwidth_bytes_per_s=bandwidth_bytes_per_s or base.memory_bandwidth_bytes_per_s,
            origin="measured",
            measured_with=measured_with or base.measured_with,
        )


# ---------------------------------------------------------------------------------------------
# Reading TOML


# Largest values a device file may give (far beyond any device; larger is a unit slip):
MAX_TFLOPS = 1e6   # an exaFLOP/s
TFlops = Annotated[float, Meta(gt=0, le=MAX_TFLOPS)]


def _up_to(limit: float) -> Any:
    return Annotated[float, Meta(gt=0, le=limit)]


class DeviceEntry(msgspec.Struct, frozen=True):
    """One table of a devices file, as written there (TB/s, GB, MiB, MHz, TFLOP/s); other keys are
    ignored. Checked by :func:`~gpuperf_gui.core.state_files.checked`."""

    name: str | None = None
    vendor: str = ""
    arch: str = ""
    notes: str = ""
    revision: str = ""
    memory_bandwidth_tbs: _up_to(1e4) | None = None    # type: ignore[valid-type]
    memory_gb: _up_to(1e7) | None = None               # type: ignore[valid-type]
    memory_unit: Literal["GB", "GiB"] = "GB"
    l2_mib: _up_to(1e6) | None = None                  # type: ignore[valid-type]
    boost_mhz: _up_to(1e5) | None = None               # type: ignore[valid-type]
    sm_count: Annotated[int, Meta(gt=0, description="a positive integer")] | None = None
    tflops: dict[Precision, TFlops] = {}
    sparse_tflops: dict[Precision, TFlops] = {}
    sources: str | list[str] = []
    match: str | list[str] = []


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else float(value) * scale


def _strings(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def device_from_entry(device_id: str, entry: dict[str, Any], origin: str) -> Device:
    """Build a :class:`Device` from one TOML table (units as in ``devices.toml``); a key that
    does not fit :class:`DeviceEntry` raises ValueError naming it."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", device_id):
        raise ValueError(f"device id {device_id!r} must be lowercase letters, digits and dashes")
    e = checked(entry, DeviceEntry, toml=True)
    return Device(
        id=device_id,
        name=e.name if e.name is not None else device_id,
        vendor=e.vendor,
        arch=e.arch,
        memory_bandwidth_bytes_per_s=_scaled(e.memory_bandwidth_tbs, TERA),
        memory_bytes=_scaled(e.memory_gb, MEMORY_UNITS[e.memory_unit]),
        memory_unit=e.memory_unit,
        sm_count=e.sm_count,
        l2_bytes=_scaled(e.l2_mib, MEBI),
        boost_clock_hz=_scaled(e.boost_mhz, 1e6),
        dense_flops_per_s={p: float(v) * TERA for p, v in e.tflops.items()},
        sparse_flops_per_s={p: float(v) * TERA for p, v in e.sparse_tflops.items()},
        sources=_strings(e.sources),
        match=_strings(e.match),
        notes=e.notes,
        revision=e.revision,
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
        tables = loads_toml(text)
    except ValueError as exc:  # TOMLDecodeError carries "(at line N, column M)"
        raise DeviceFileError(f"{path}: {exc}") from None
    devices: dict[str, Device] = {}
    for device_id, entry in tables.items():  # the line is looked up only for an error: a scan of the
        if not isinstance(entry, dict):         # text per device was quadratic (4,000 devices 23 s)
            raise DeviceFileError(f"{path}, line {_line_of_table(text, device_id)}: [{device_id}] must be a table")
        try:
            devices[device_id] = device_from_entry(device_id, entry, origin)
        except ValueError as exc:
            raise DeviceFileError(f"{path}, line {_line_of_table(text, device_id)}: [{device_id}] {exc}") from None
    return devices


def _merge(base: dict[str, Device], override: dict[str, Device]) -> dict[str, Device]:
    merged = dict(base)
    merged.update(override)
    return merged


def _read_user_devices(path: Path) -> tuple[dict[str, Device], list[str]]:
    """The user file's devices; a file that cannot be used is set aside (``devices.toml.bad``),
    reported once (:mod:`gpuperf_gui.core.state_files`), and gives no devices."""
    try:
        text = read_state_text(path)  # a FIFO, a folder or /dev/zero is reported, never read
        return parse_devices(text, "user file", str(path)), []
    except FileNotFoundError:
        return {}, []
    except (DeviceFileError, UnicodeDecodeError) as exc:
        message = str(exc).removeprefix(f"{path}: ").removeprefix(f"{path}, ")
        where, _sep, problem = message.partition(": ") if message.startswith("line ") else ("", "", message)
        item = set_aside(path, where, problem or message)
        return {}, [item.message()]
    except OSError as exc:  # unreadable (permissions): reported, left where it is
        item = SetAside(path, "", f"cannot be read ({exc.strerror or exc})", None)
        report(item)
        return {}, [item.message()]


def load_database(user_file: Path | None = None) -> DeviceDatabase:
    """The shipped database merged with the user file (if any). Reads no measured ceilings
    (:class:`gpuperf_gui.core.catalog.DeviceCatalog` does, when asked). User-file problems are
    collected in ``DeviceDatabase.errors`` (and the file set aside), never raised: the shipped
    devices always load."""
    shipped_text = (resources.files("gpuperf_gui.resources") / "devices.toml").read_text("utf-8")
    devices = parse_devices(shipped_text, "datasheet", "devices.toml (shipped)")
    user, errors = _read_user_devices(user_file if user_file is not None else user_devices_file())
    return DeviceDatabase(_merge(devices, user), errors)


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
