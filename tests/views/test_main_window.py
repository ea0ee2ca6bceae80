"""The main window's wiring between instruments (trace → MFU, trace → roofline) and its settings."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

DEMO = Path(str(resources.files("gpuperf_gui.resources") / "demo" / "healthy_gpt_small.json.gz"))


@pytest.fixture
def loaded_window(make_main_window, qtbot):
    window = make_main_window(device_id="h200")
    window.open_traces([DEMO])
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    return window


def test_send_to_mfu_fills_step_time_and_causes(loaded_window, qtbot):
    trace, mfu = loaded_window.tab_by_key["trace"], loaded_window.tab_by_key["mfu"]
    trace.mfu_button.click()
    assert loaded_window.current_tab_key() == "mfu"
    step_s = float(mfu.fields["step_times"].text())
    assert step_s == pytest.approx(0.0618, rel=0.05)  # engine's steady-state median (61.8 ms)
    assert "from the loaded trace" in mfu.trace_label.text()


def test_show_on_roofline_places_the_traces_gemms(loaded_window):
    trace, roofline = loaded_window.tab_by_key["trace"], loaded_window.tab_by_key["roofline"]
    trace.roofline_button.click()
    assert loaded_window.current_tab_key() == "roofline"
    (name, points), = roofline._external.items()
    assert name.startswith("trace") and len(points) > 10
    # bf16 GEMMs of the H200 run: achieved rates between 50 and 1000 TFLOP/s
    rates = sorted(p.achieved_flops_per_s for p in points)
    assert 50e12 < rates[-1] < 1000e12


def test_recent_files_and_tab_remembered(loaded_window, make_main_window):
    assert str(DEMO) in [a.text() for a in loaded_window.recent_menu.actions()]
    loaded_window.show_tab("mfu")
    loaded_window.close()
    again = make_main_window()
    assert again.current_tab_key() == "mfu"
    assert again.context.device_id == "h200"


def test_device_follows_the_traces_gpu(make_main_window, qtbot):
    window = make_main_window(device_id="h100-sxm")
    window.open_traces([DEMO])
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    assert window.context.device_id == "h200"  # deviceProperties: "NVIDIA H200"


def test_a_failed_load_is_not_remembered(make_main_window, qtbot, tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"foo": 1')
    window = make_main_window()
    with qtbot.waitSignal(window.trace_tab.load_failed, timeout=60_000) as failed:
        window.open_traces([bad])
    assert "notes.json" in failed.args[0]
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    assert str(bad) not in [a.text() for a in window.recent_menu.actions()]


def test_measured_cpu_ceilings_reach_every_tab(make_main_window):
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings

    window = make_main_window(device_id="cpu", precision="fp32")
    window.tab_by_key["bench"].ceilings_measured.emit(
        MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}, bandwidth_bytes_per_s=1e10))
    assert window.context.device.peak_flops_per_s("fp32") == pytest.approx(2.9e11)
    assert "measured fp32 peak 290 GFLOP/s" in window.peak_label.text()
    assert [r.label for r in window.roofline_tab.roofs()] == ["cpu fp32 measured"]


def test_precision_follows_a_device_without_bf16(make_main_window, qtbot, shared_traces):
    window = make_main_window(device_id="h100-sxm", precision="bf16")
    window.open_traces([shared_traces / "param" / "dlrm_kineto"])
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    # DLRM's GEMMs (volta_sgemm_*, gemmSN on float inputs) ran in fp32: the toolbar follows the trace
    assert (window.context.device_id, window.context.precision) == ("v100-sxm2", "fp32")
    assert "precision fp32 (its GEMM/attention kernels)" in window.statusBar().currentMessage()


def test_a_new_trace_replaces_the_last_traces_roofline_points(loaded_window, qtbot):
    loaded_window.trace_tab.roofline_button.click()
    assert loaded_window.roofline_tab.table_points()
    loaded_window.open_traces([DEMO])
    qtbot.waitUntil(lambda: not loaded_window.is_busy(), timeout=60_000)
    assert loaded_window.roofline_tab.table_points() == []  # until "Show on roofline" again
