"""The trace's device is looked up in one place (kernel_roof.trace_device) for the kernel roofs, the
memory-bound rule and the what-if; an edit of the user's devices file reaches the next lookup in the
same process (a long-lived helper analyses one trace after another)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.analysis import what_if
from gpuperf_gui.core.trace.analysis.kernel_roof import trace_device

_ACME = """
[acme-x1]
name = "Acme X1"
vendor = "acme"
arch = "acme1"
match = ["Acme X1"]
memory_gb = 64
memory_unit = "GiB"
memory_bandwidth_tbs = {bandwidth_tbs}
tflops = {{ fp32 = 50, bf16 = 400 }}
"""


def test_an_edit_of_the_user_devices_file_reaches_the_next_lookup(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    user_file = tmp_path / "devices.toml"
    monkeypatch.setenv("GPUPERF_DEVICES_FILE", str(user_file))
    assert trace_device("Acme X1 80GB") is None                      # no user file yet
    user_file.write_text(_ACME.format(bandwidth_tbs=2.0))
    device = trace_device("Acme X1 80GB")
    assert device is not None and device.id == "acme-x1"
    assert device.memory_bandwidth_bytes_per_s == pytest.approx(2.0e12)   # TB/s in the file, B/s here
    assert device.dense_flops_per_s["bf16"] == pytest.approx(400e12)
    user_file.write_text(_ACME.format(bandwidth_tbs=3.5))
    os.utime(user_file, ns=(0, user_file.stat().st_mtime_ns + 1_000_000))  # a later edit, whatever the clock
    assert trace_device("Acme X1 80GB").memory_bandwidth_bytes_per_s == pytest.approx(3.5e12)
    assert trace_device("NVIDIA H200").id == "h200"                   # the shipped devices stay


def test_the_what_if_has_no_device_lookup_of_its_own() -> None:
    assert what_if.trace_device is trace_device
    assert not hasattr(what_if, "_Devices")
