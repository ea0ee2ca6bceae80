"""State files checked against declared types (msgspec): each wrong key named, with what it must be."""
from __future__ import annotations

import json
import math

import pytest

from gpuperf_gui.core.bench.ceilings import CeilingsFileError, MeasuredCeilings
from gpuperf_gui.core.bench.results import _check_point
from gpuperf_gui.core.hardware import DeviceFileError, parse_devices


@pytest.mark.parametrize("line, said", [
    ("sm_count = 0", "[a] sm_count must be a positive integer, got 0"),
    ("sm_count = true", "[a] sm_count must be a positive integer, got True"),
    ("tflops = { bf17 = 1.0 }", "[a] tflops has an unknown key 'bf17' (use fp64, fp64_tensor, fp32"),
    ("tflops = { bf16 = -1.0 }", "[a] tflops.bf16 must be a number in (0, 1e+06], got -1.0"),
    ("sparse_tflops = { fp8 = 'fast' }", "[a] sparse_tflops.fp8 must be a number in (0, 1e+06], got 'fast'"),
    ("sources = 3", "[a] sources must be a string or a list of strings, got 3"),
    ("memory_unit = 'MB'", "[a] memory_unit must be one of GB, GiB, got 'MB'"),
    ("boost_mhz = inf", "[a] boost_mhz must be a number in (0, 100000], got inf"),
])
def test_a_bad_key_of_a_device_table_is_named_with_its_line(line: str, said: str) -> None:
    with pytest.raises(DeviceFileError) as caught:
        parse_devices(f"# mine\n[a]\nname = 'A'\n{line}\n", "user file", "devices.toml")
    assert str(caught.value).startswith("devices.toml, line 2: ") and said in str(caught.value)


def test_a_good_device_table_reads_as_before() -> None:
    (device,) = parse_devices("[a]\nname = 'A'\nvendor = 'v'\ntflops = { bf16 = 100 }\nmemory_gb = 8\n"
                              "memory_unit = 'GiB'\nsources = 'datasheet'\nunknown_key = 1\n",
                              "user file", "devices.toml").values()
    assert device.dense_flops_per_s == {"bf16": 100e12} and device.memory_bytes == 8 * 2**30
    assert device.sources == ("datasheet",) and device.name == "A" and device.sm_count is None


@pytest.mark.parametrize("entry, said", [
    ({}, "device_id: missing"),
    ({"device_id": "H200"}, "device_id: must be a device id (lowercase letters, digits, dashes), got 'H200'"),
    ({"device_id": "cpu", "threads": 0}, "threads: must be a positive whole number or null, got 0"),
    ({"device_id": "cpu", "bandwidth_bytes_per_s": math.inf}, "bandwidth_bytes_per_s: must be a number of "
                                                               "bytes/s in 1..1e+21 or null, got inf"),
    ({"device_id": "cpu", "matmul_flops_per_s": {"fp32": 1e300}},
     "matmul_flops_per_s.fp32: must be a rate in 1..1e+21 per second, got 1e+300"),
    ({"device_id": "cpu", "complete": 1}, "complete: must be true or false, got 1"),
    ({"device_id": "cpu", "measured_at": -5}, "measured_at: must be a Unix time (a number ≥ 0), got -5"),
    ({"device_id": "cpu", "unreliable_points": 1.5}, "unreliable_points: must be a whole number ≥ 0, got 1.5"),
    ([1, 2], "an entry must be an object, got an array"),
])
def test_a_bad_ceilings_entry_names_the_key(entry: object, said: str) -> None:
    with pytest.raises(CeilingsFileError) as caught:
        MeasuredCeilings.from_json_dict(entry)
    assert str(caught.value) == said


def test_a_ceilings_entry_survives_its_json() -> None:
    entry = MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}, bandwidth_bytes_per_s=2.16e10,
                             threads=16, method="cpu-perf_counter", measured_at=1.7e9, matmul_runs={"fp32": "r1"})
    text = json.dumps(entry.to_json_dict())
    assert MeasuredCeilings.from_json_dict({**json.loads(text), "a_newer_key": 1}) == entry


POINT = {"kernel": "matmul", "dtype": "fp32", "size": 64, "flops": 1.0, "bytes": 1.0, "seconds": 1e-3,
         "method": "cpu-perf_counter", "iqr_low_s": 0.0, "iqr_high_s": 0.0, "samples": 5}


@pytest.mark.parametrize("change, said", [
    ({"seconds": math.nan}, "seconds must be a number ≥ 0, got nan"),
    ({"seconds": True}, "seconds must be a number ≥ 0, got True"),
    ({"seconds": 0.0}, "seconds must be at least 1e-12 s, got 0.0"),
    ({"kernel": 3}, "kernel must be a string, got 3"),
    ({"device_id": None}, "device_id must be a string, got None"),
    ({"flops": None}, "flops must be a number ≥ 0, got None"),
])
def test_a_bad_point_record_names_the_key(change: dict, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        _check_point({**POINT, **change})
    assert str(caught.value) == said


def test_a_point_record_without_a_key_says_which() -> None:
    record = dict(POINT)
    del record["samples"]
    with pytest.raises(ValueError, match="^samples is missing$"):
        _check_point(record)
    _check_point(POINT)   # the whole record passes
