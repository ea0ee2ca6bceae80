"""`gpuperf gpus [--json] [--detect]`: the device database, or the local device."""

from __future__ import annotations

import argparse

from gpuperf_gui.commands._output import print_json, si
from gpuperf_gui.core.catalog import DeviceCatalog
from gpuperf_gui.core.hardware import (
    PRECISIONS,
    Device,
    detect_local_device_id,
    estimate_cpu_peak,
    local_gpu_name,
)
from gpuperf_gui.core.units import json_safe


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("gpus", help="list the device database (dense peaks) or detect the local device")
    p.add_argument("--json", action="store_true", help="machine-readable output (SI units)")
    p.add_argument("--detect", action="store_true", help="name the local device (imports torch)")
    p.set_defaults(func=run)


def device_to_json(device: Device) -> dict:
    return {
        "id": device.id,
        "name": device.name,
        "vendor": device.vendor,
        "arch": device.arch,
        "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
        "memory_bytes": device.memory_bytes,
        "memory_unit": device.memory_unit,
        "sm_count": device.sm_count,
        "l2_bytes": device.l2_bytes,
        "boost_clock_hz": device.boost_clock_hz,
        "peak_flops_per_s": dict(device.dense_flops_per_s),
        "peak_convention": "dense (no 2:4 sparsity); GeForce fp16/bf16 with FP32 accumulate",
        "sparse_flops_per_s": dict(device.sparse_flops_per_s),
        "ridge_flops_per_byte": {
            p: device.ridge_flops_per_byte(p) for p in device.precisions()
        } if device.memory_bandwidth_bytes_per_s else {},
        "origin": device.origin,
        **({"measured_with": device.measured_with} if device.measured_with else {}),
        "notes": device.notes,
        "revision": device.revision,
        "sources": list(device.sources),
    }


def _detect(args: argparse.Namespace) -> int:
    database = DeviceCatalog.load().database
    name = local_gpu_name()
    device_id = detect_local_device_id(database)
    cpu = estimate_cpu_peak()
    payload = {
        "device": device_id,
        "torch_device_name": name,
        "matched": name is not None and device_id != "cpu",
    }
    if device_id == "cpu" and cpu is not None:
        payload["cpu_estimate"] = {
            "cores": cpu.cores, "clock_hz": cpu.clock_hz, "vector_isa": cpu.vector_isa,
            "fp32_flops_per_s": cpu.fp32_flops_per_s,
            "convention": "theoretical: cores x clock x 2 FMA units x lanes x 2 (not measured)",
        }
    if args.json:
        print_json(json_safe(payload))
    else:
        if name is None:
            print("no CUDA device visible to torch: using 'cpu'")
        elif device_id == "cpu":
            print(f"GPU {name!r} is not in the database: add it to your devices.toml; using 'cpu'")
        else:
            print(f"{device_id}  ({name})")
        if cpu is not None and device_id == "cpu":
            print(f"cpu estimate: {cpu.cores} cores x {cpu.clock_hz / 1e9:.2f} GHz x {cpu.vector_isa}"
                  f" = {si(cpu.fp32_flops_per_s, 'FLOP/s')} fp32 (theoretical)")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.detect:
        return _detect(args)
    # the user file's problems were reported on stderr as the file was set aside (cli.main)
    devices = DeviceCatalog.load(saved_measurements=True).devices()
    if args.json:
        print_json(json_safe({"devices": [device_to_json(d) for d in devices]}))
        return 0
    header = f"{'id':<16}{'name':<32}{'mem BW':>11}{'fp32':>13}{'bf16':>13}{'fp16':>13}{'fp8':>13}  ridge 16-bit"
    print(header)
    print("-" * len(header))
    for d in devices:
        peaks = [si(d.dense_flops_per_s.get(p), "FLOP/s") if p in d.dense_flops_per_s else "-"
                 for p in ("fp32", "bf16", "fp16", "fp8")]
        tensor = "bf16" if "bf16" in d.dense_flops_per_s else "fp16"
        ridge = (f"{d.ridge_flops_per_byte(tensor):.1f} ({tensor})" if tensor in d.dense_flops_per_s
                 and d.memory_bandwidth_bytes_per_s else "-")
        bw = si(d.memory_bandwidth_bytes_per_s, "B/s") if d.memory_bandwidth_bytes_per_s else "measure"
        print(f"{d.id:<16}{d.name[:31]:<32}{bw:>11}" + "".join(f"{p:>13}" for p in peaks) + f"  {ridge}")
    print(f"\npeaks are dense (no 2:4 sparsity); precisions: {', '.join(PRECISIONS)}")
    for d in devices:
        if d.origin == "measured":
            how = f" ({d.measured_with})" if d.measured_with else ""
            print(f"{d.id}: measured on this machine by `gpuperf bench`{how}")
    return 0
