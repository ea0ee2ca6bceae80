"""Measured ceilings reach every tab through one path (bench -> AppContext -> DeviceCatalog ->
ceilings_changed), whatever the order listeners were connected in (the catalog is complete before its one change
callback runs: docs/ARCHITECTURE.md, State files and the device catalog), and the window says how
they were measured."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings


@pytest.fixture(autouse=True)
def _data(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


def _unknown_gpu() -> MeasuredCeilings:
    return MeasuredCeilings("gpu-acme-x9", "Acme X9", "cuda:0", matmul_flops_per_s={"bf16": 4e14},
                            bandwidth_bytes_per_s=1.6e12, method="cuda-events")


def test_a_listener_connected_first_already_sees_the_new_device(qtbot) -> None:
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import MainWindow

    context = AppContext(device_id="h200")
    seen = []
    context.ceilings_changed.connect(  # before any tab exists: the catalog is complete when it fires
        lambda device_id, added: seen.append((added, context.database.get(device_id).peak_flops_per_s("bf16"))))
    window = MainWindow(context)
    qtbot.addWidget(window)
    window.tab_by_key["bench"].ceilings_measured.emit(_unknown_gpu())
    assert seen == [(True, 4e14)]
    assert window.device_combo.findData("gpu-acme-x9") >= 0
    assert "Acme X9 (measured)" in window.device_combo.itemText(window.device_combo.findData("gpu-acme-x9"))
    window.roofline_tab.set_devices(["gpu-acme-x9"])
    assert "gpu-acme-x9 bf16 measured" in [r.label for r in window.roofline_tab.roofs()]
    window.close()


def test_one_emission_changes_the_catalog_once(make_main_window) -> None:
    window = make_main_window(device_id="h100-sxm")
    changes = []
    window.context.ceilings_changed.connect(lambda device_id, added: changes.append(device_id))
    window.tab_by_key["bench"].ceilings_measured.emit(
        MeasuredCeilings("h100-sxm", matmul_flops_per_s={"bf16": 7e14}, bandwidth_bytes_per_s=3e12,
                         method="cuda-events"))
    assert changes == ["h100-sxm"]
    labels = [r.label for r in window.roofline_tab.roofs()]
    assert labels[:2] == ["h100-sxm bf16", "h100-sxm bf16 measured"]
    assert window.context.device.peak_flops_per_s("bf16") == pytest.approx(989.4e12)  # MFU keeps the datasheet


def test_the_peak_label_says_how_the_cpu_was_measured(make_main_window) -> None:
    window = make_main_window(device_id="cpu", precision="fp32")
    bench = window.tab_by_key["bench"]
    bench.ceilings_measured.emit(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 1.09e11},
                                                  bandwidth_bytes_per_s=1e10, threads=15, method="cpu-perf_counter"))
    assert "measured fp32 peak 109 GFLOP/s (15 CPU threads, cpu-perf_counter)" in window.peak_label.text()
    bench.ceilings_measured.emit(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.14e11},
                                                  bandwidth_bytes_per_s=1e10, threads=16, method="cpu-perf_counter"))
    assert "measured fp32 peak 214 GFLOP/s (16 CPU threads, cpu-perf_counter)" in window.peak_label.text()
    assert window.mfu_tab.context.device.peak_flops_per_s("fp32") == 2.14e11
