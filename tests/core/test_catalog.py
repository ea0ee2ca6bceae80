"""DeviceCatalog: datasheet devices and measured ceilings in one place, one change callback, and
loading the database reads no measurement; measured ceilings say how (docs/ARCHITECTURE.md, State files and the device catalog)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, save_ceilings
from gpuperf_gui.core.catalog import DeviceCatalog


@pytest.fixture(autouse=True)
def _data(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


def _cpu(threads: int, fp32: float, bandwidth: float = 2e10) -> MeasuredCeilings:
    return MeasuredCeilings("cpu", "Test CPU", "cpu", matmul_flops_per_s={"fp32": fp32},
                            bandwidth_bytes_per_s=bandwidth, threads=threads, method="cpu-perf_counter")


def test_the_callback_sees_the_finished_state_once_per_change() -> None:
    catalog = DeviceCatalog.load()
    seen = []

    def on_change(device_id: str, added: bool) -> None:  # reads the catalog as any listener would
        seen.append((device_id, added, catalog.device(device_id).peak_flops_per_s("fp32"),
                     catalog.measured(device_id).threads))
    catalog.on_change = on_change
    catalog.add_measured(_cpu(16, 2.14e11))
    assert seen == [("cpu", False, 2.14e11, 16)]


def test_a_gpu_keeps_its_datasheet_peak_and_gets_its_measured_roof_beside_it() -> None:
    catalog = DeviceCatalog.load()
    catalog.add_measured(MeasuredCeilings("h100-sxm", matmul_flops_per_s={"bf16": 7.0e14},
                                          bandwidth_bytes_per_s=3.0e12, method="cuda-events"))
    assert catalog.device("h100-sxm").peak_flops_per_s("bf16") == pytest.approx(989.4e12)  # datasheet
    measured = catalog.measured_device("h100-sxm")
    assert measured.peak_flops_per_s("bf16") == 7.0e14 and measured.ridge_flops_per_byte("bf16") == pytest.approx(700 / 3)
    assert measured.measured_with == "cuda-events" and measured.origin == "measured"
    assert catalog.measured_device("h200") is None


def test_an_unknown_gpu_becomes_a_device_of_its_own() -> None:
    catalog = DeviceCatalog.load()
    changes = []
    catalog.on_change = lambda device_id, added: changes.append((device_id, added))
    catalog.add_measured(MeasuredCeilings("gpu-acme-x9", "Acme X9", matmul_flops_per_s={"bf16": 4e14},
                                          bandwidth_bytes_per_s=1.6e12, method="cuda-events"))
    catalog.add_measured(MeasuredCeilings("gpu-acme-x9", "Acme X9", matmul_flops_per_s={"bf16": 4.2e14},
                                          bandwidth_bytes_per_s=1.6e12, method="cuda-events"))
    assert changes == [("gpu-acme-x9", True), ("gpu-acme-x9", False)]
    device = catalog.device("gpu-acme-x9")
    assert device.name == "Acme X9 (measured)" and device.peak_flops_per_s("bf16") == 4.2e14
    assert catalog.device("cpu").dense_flops_per_s == {}  # never filed under the cpu


def test_measured_another_way_the_better_entry_stays_whole() -> None:
    catalog = DeviceCatalog.load()
    catalog.add_measured(_cpu(16, 2.14e11, bandwidth=1.0e10))
    catalog.add_measured(_cpu(15, 1.09e11, bandwidth=3.0e10))  # slower matmul, faster copy: not mixed
    cpu = catalog.device("cpu")
    assert cpu.peak_flops_per_s("fp32") == 2.14e11 and cpu.bandwidth_bytes_per_s() == 1.0e10
    assert cpu.measured_with == "16 CPU threads, cpu-perf_counter"
    catalog.add_measured(_cpu(16, 2.0e11, bandwidth=1.0e10))  # the same way: the caller's figures count
    assert catalog.device("cpu").peak_flops_per_s("fp32") == 2.0e11


def test_saved_measurements_are_read_only_when_asked(tmp_path: Path) -> None:
    save_ceilings(_cpu(8, 1.5e11))
    assert DeviceCatalog.load().measured("cpu") is None
    catalog = DeviceCatalog.load(saved_measurements=True)
    assert catalog.measured("cpu").threads == 8
    assert catalog.device("cpu").peak_flops_per_s("fp32") == 1.5e11
    other = tmp_path / "elsewhere"
    save_ceilings(_cpu(4, 9e10), other)
    assert DeviceCatalog.load(saved_measurements=True, results_dir=other).measured("cpu").threads == 4


def test_loading_the_database_imports_no_benchmark_code() -> None:
    code = ("import sys, gpuperf_gui.core.hardware as h; h.load_database(); "
            "print(sorted(m for m in sys.modules if m.startswith('gpuperf_gui.core.bench')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_cli_mfu_takes_the_measured_cpu_peak(capsys) -> None:
    import json

    from gpuperf_gui.cli import main

    argv = ["mfu", "--params", "1e8", "--tokens-per-step", "4096", "--step-time", "100", "--gpu", "cpu",
            "--precision", "fp32", "--json"]
    assert main(argv) == 2  # unmeasured: no peak to divide by
    assert "not known until measured" in capsys.readouterr().err
    save_ceilings(_cpu(16, 2.14e11))
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["peak_flops_per_s_per_gpu"] == 2.14e11
    # 6 · 1e8 · 4096 FLOPs in 100 s on one "GPU" = 24.6 GFLOP/s of 214: 11.5 %
    assert payload["mfu"] == pytest.approx(6 * 1e8 * 4096 / 100 / 2.14e11)
