"""The Roofline tab: devices, precisions, calculator, bands, pairs, export, main window."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from gpuperf_gui.core.roofline import RooflinePoint, gemm_point
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.roofline_tab import ERROR_STYLE, INVALID_STYLE, POINT_COLUMNS, RooflineTab

BAND, PERCENT = POINT_COLUMNS.index("band"), POINT_COLUMNS.index("% of roof")


@pytest.fixture
def tab(qtbot):
    widget = RooflineTab(AppContext(device_id="h100-sxm", precision="bf16"))
    qtbot.addWidget(widget)
    return widget


def test_several_devices_and_precisions(tab):
    tab.set_devices(["h200", "a100-sxm-80gb"])
    tab.set_precisions(["bf16", "fp32"])
    labels = [r.label for r in tab.roofs()]
    assert labels[:2] == ["h100-sxm bf16", "h100-sxm fp32"]
    assert "h200 bf16" in labels and "a100-sxm-80gb fp32" in labels
    assert tab.balance_table.rowCount() == 6
    ridges = {tab.balance_table.item(r, 0).text(): tab.balance_table.item(r, 3).text()
              for r in range(6)}
    assert ridges["h200 bf16"] == "206.1"


def test_add_gemm_point_shows_band(tab):
    tab.gemm_m.setText("8192")
    tab.gemm_k.setText("8192")
    tab.gemm_n.setText("8192")
    tab.time_us.setText(f"{2 * 8192**3 / 700e12 * 1e6:.3f}")  # 700 TFLOP/s on a 989.4 roof
    tab.add_button.click()
    assert len(tab.placed) == 1
    assert tab.points_table.item(0, BAND).text() == ">70 %"
    assert "very strong" in tab.points_table.item(0, BAND).toolTip()
    assert tab.points_table.item(0, PERCENT).text() == "70.7 %"
    assert "compute-bound" in tab.result_label.text()


@pytest.mark.parametrize("value", ["0", "-4096", "abc", "", "4096.7", "1e308", "inf"])
def test_invalid_inputs_marked_not_raised(tab, value):
    tab.gemm_k.setText(value)
    tab.add_button.click()
    assert tab.placed == []
    assert tab.gemm_k.styleSheet() == INVALID_STYLE
    assert "red" in tab.result_label.text()


def test_negative_time_marked_invalid(tab):
    tab.time_us.setText("-5")
    tab.add_button.click()
    assert tab.placed == [] and tab.time_us.styleSheet() == INVALID_STYLE


def test_pair_before_after_vertical(tab):
    before = gemm_point(4096, 4096, 4096, "bf16", seconds=2 * 4096**3 / 300e12)
    after = gemm_point(4096, 4096, 4096, "bf16", seconds=2 * 4096**3 / 600e12)
    tab.add_point(before)
    tab.add_point(after)
    movement = tab.show_pair(before, after)
    assert movement.direction == "vertical"
    assert movement.rate_ratio == pytest.approx(2.0)


def test_export_writes_png_svg_csv(tab, tmp_path):
    tab.add_point(gemm_point(1024, 1024, 1024, "bf16", seconds=1e-5))
    tab.export_png(tmp_path / "roof.png")
    tab.export_svg(tmp_path / "roof.svg")
    tab.export_csv(tmp_path / "points.csv")
    image = QImage(str(tmp_path / "roof.png"))
    assert image.width() == 1600
    assert "<svg" in (tmp_path / "roof.svg").read_text()
    assert "GEMM 1024x1024x1024 bf16" in (tmp_path / "points.csv").read_text()


def test_measured_ceilings_drawn_beside_datasheet(tab):
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings

    tab.set_measured_ceilings(MeasuredCeilings("h100-sxm", matmul_flops_per_s={"bf16": 700e12},
                                               bandwidth_bytes_per_s=3.0e12))
    roofs = {r.label: r for r in tab.roofs()}
    assert roofs["h100-sxm bf16 measured"].ridge == pytest.approx(700 / 3.0)
    assert roofs["h100-sxm bf16"].ridge == pytest.approx(295.3, abs=0.1)


def test_streamed_points_use_one_item_and_timer(tab, qtbot):
    tab.append_measured_point(RooflinePoint("p0", 1e9, 1e8, 1e-3, "measured", "h100-sxm", "bf16"))
    items_before = len(tab.canvas.plot_item.items)  # the series' one item exists now
    for i in range(1, 200):
        tab.append_measured_point(RooflinePoint(f"p{i}", 1e9 * (i + 1), 1e8, 1e-3, "measured",
                                                "h100-sxm", "bf16"))
    assert len(tab.canvas.plot_item.items) == items_before
    qtbot.waitUntil(lambda: tab.canvas.measured_series() == {"benchmark points (h100-sxm)": 200},
                    timeout=2000)


def test_pyside_signal_refcount_canary(qtbot):
    """PySide6 6.12.0 leaks a reference to True per emit and aborts CPython 3.11 (environment.md)."""

    class Emitter(QObject):
        fired = Signal(bool)

    emitter = Emitter()
    received = []
    emitter.fired.connect(received.append)
    before = sys.getrefcount(True)
    for _ in range(200):
        emitter.fired.emit(True)
    assert len(received) == 200
    assert sys.getrefcount(True) >= before


def test_main_window_screenshot_not_blank(make_main_window, qtbot):
    window = make_main_window(device_id="h200")
    window.resize(1600, 1000)
    window.show()
    qtbot.waitExposed(window)
    image = window.grab().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    assert image.width() == 1600 and image.height() == 1000
    assert pixels.std() > 20  # a drawn window, not one flat colour


def test_about_names_versions(make_main_window):
    text = make_main_window().about_text()
    assert "Qt " in text and "PySide6" in text and "pyqtgraph" in text and "torch" in text


def test_device_picker_shared(make_main_window):
    window = make_main_window(device_id="h100-sxm")
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    assert window.context.device_id == "h200"
    assert window.roofline_tab.roofs()[0].label == "h200 bf16"


def test_hover_readout_names_ai_attainable_and_bound(tab, qtbot):
    tab.resize(1400, 900)
    tab.show()
    qtbot.waitExposed(tab)
    view_box = tab.canvas.plot_item.vb
    scene_pos = view_box.mapViewToScene(pg_point(1.0, 14.0))  # AI = 10 FLOP/byte (log10 = 1)
    tab.canvas.scene().sigMouseMoved.emit(scene_pos)
    text = tab.hover_label.text()
    assert text.startswith("AI 10 FLOP/byte")
    assert "33.5 TFLOP/s" in text and "memory-bound" in text  # 10 x 3.35 TB/s on h100-sxm bf16


def pg_point(x: float, y: float):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def test_point_above_the_roof_is_flagged_not_praised(tab):
    tab.add_point(gemm_point(4096, 4096, 4096, "bf16", seconds=1e-9))
    assert tab.points_table.item(0, BAND).text() == "above roof!"
    assert "above the roof: impossible" in tab.points_table.item(0, BAND).toolTip()


def test_trace_points_are_listed_in_the_table(tab):
    points = [RooflinePoint(f"mm {i}", 2e12, 5e9, 4e-3, "trace") for i in range(3)]
    tab.set_point_series("trace: demo (H200)", points)
    assert tab.points_table.rowCount() == 3
    assert tab.points_table.item(0, 0).toolTip().startswith("trace: demo (H200): mm 0\n")
    assert tab.points_table.item(0, PERCENT).text() == "50.5 %"  # 500 TFLOP/s of the h100-sxm bf16 roof


def test_every_precision_draws(tab):
    from gpuperf_gui.core.hardware import PRECISIONS

    h100 = tab.context.database.get("h100-sxm").precisions()
    assert set(PRECISIONS) - set(h100) == {"fp32_tensor", "fp4"}  # AMD's FP32 matrix; Blackwell's fp4
    for precision in PRECISIONS:
        tab.context.set_precision(precision)
        tab.refresh()
        labels = [r.label for r in tab.roofs()]
        if precision in h100:
            assert labels[0] == f"h100-sxm {precision}"
        else:  # a precision the device lacks draws no roof for it (and does not fail)
            assert f"h100-sxm {precision}" not in labels


def test_measured_ceilings_of_an_unknown_gpu_get_their_own_entry(tab):
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings

    tab.set_measured_ceilings(MeasuredCeilings("gpu-nvidia-rtx-pro-6000", "NVIDIA RTX PRO 6000",
                                               matmul_flops_per_s={"bf16": 400e12},
                                               bandwidth_bytes_per_s=1.6e12))
    assert tab.context.database.get("cpu").dense_flops_per_s == {}  # never filed under the cpu
    tab.set_devices(["gpu-nvidia-rtx-pro-6000"])
    labels = [r.label for r in tab.roofs()]
    assert "gpu-nvidia-rtx-pro-6000 bf16 measured" in labels


def _cpu_benchmark_points():
    from gpuperf_gui.core.bench.points import MeasuredPoint

    # a CPU matmul at 200 GFLOP/s: n=1024 fp32, 2n³ FLOPs in 10.7 ms
    point = MeasuredPoint(kernel="matmul", dtype="fp32", size=1024, flops=2.0 * 1024**3,
                          bytes=3.0 * 1024**2 * 4, seconds=2.0 * 1024**3 / 200e9, method="cpu-perf_counter",
                          iqr_low_s=0.01, iqr_high_s=0.011, samples=5, device="cpu", threads=16)
    return [point.to_roofline_point()]


def test_a_cpu_runs_points_never_appear_on_a_gpu_roof(tab, qtbot):
    for point in _cpu_benchmark_points():
        assert point.device_id == "cpu" and point.precision == "fp32"
        tab.append_measured_point(point)
    qtbot.wait(100)  # two redraw ticks
    assert tab.canvas.measured_series() == {}          # h100-sxm roof: nothing of the cpu's
    assert "1 measured on cpu" in tab.status_label.text()
    tab.set_devices(["h200", "a100-sxm-80gb"])         # the comparison view: still GPUs only
    qtbot.wait(100)
    assert tab.canvas.measured_series() == {}
    tab.foreign_box.setChecked(True)                   # on request: hollow, labelled
    qtbot.waitUntil(lambda: tab.canvas.measured_series() == {"benchmark points measured on cpu": 1},
                    timeout=2000)


def _h200_trace_points():
    # 700 TFLOP/s bf16 GEMMs, as the H200 trace kernels run: 2·8192³ FLOPs in 1.571 ms
    flops = 2.0 * 8192**3
    return [RooflinePoint(f"aten::mm [[8192, 8192], [8192, 8192]] x{i + 1}", flops, 3.0 * 8192**2 * 2,
                          flops / 700e12, "trace") for i in range(3)]


def test_changing_the_device_hides_trace_points_then_shows_them_against_the_roof_on_request(qtbot):
    tab = RooflineTab(AppContext(device_id="h200", precision="bf16"))
    qtbot.addWidget(tab)
    tab.set_point_series("trace: h200 run", _h200_trace_points())
    assert tab.points_table.rowCount() == 3
    assert tab.points_table.item(0, PERCENT).text() == "70.7 %"  # 700 / 989.4 TFLOP/s (H200 bf16 dense)
    assert tab.points_table.item(0, 0).text() == "aten::mm 8192×8192·8192×8192 x1"  # the full name: tooltip
    assert len(tab.canvas._series["trace: h200 run"].data) == 3
    tab.context.set_device("a100-sxm-80gb")                     # A100 bf16 roof: 312 TFLOP/s
    assert tab.points_table.rowCount() == 0
    assert len(tab.canvas._series["trace: h200 run"].data) == 0
    assert "3 measured on h200" in tab.status_label.text()
    tab.foreign_box.setChecked(True)
    assert tab.points_table.rowCount() == 3
    assert tab.points_table.item(0, 1).text() == "on h200"
    assert "measured on h200, judged against the a100-sxm-80gb bf16 roof" in tab.points_table.item(0, 1).toolTip()
    assert tab.points_table.item(0, BAND).text() == "above roof!"  # 700 > 312 × 1.05
    assert len(tab.canvas._series["trace: h200 run — measured on h200"].data) == 3
    tab.foreign_box.setChecked(False)
    tab.context.set_device("h200")                              # back on its own roof
    assert tab.points_table.rowCount() == 3 and tab.points_table.item(0, 1).text() == "h200"


def test_numeric_columns_stay_visible_with_long_names(tab, qtbot):
    long_name = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8>"
    tab.set_point_series("trace: a long kernel name run", [RooflinePoint(long_name, 2e12, 5e9, 4e-3, "trace")])
    # another device's kernel above this roof: the longest device and band texts there are
    tab.set_point_series("trace: h200 run", [RooflinePoint(long_name, 2e12, 5e9, 1e-9, "trace")], "h200")
    tab.foreign_box.setChecked(True)
    assert tab.points_table.rowCount() == 2
    tab.resize(1400, 900)
    tab.show()
    qtbot.waitExposed(tab)
    table = tab.points_table
    visible = table.viewport().width()
    for column in (POINT_COLUMNS.index("AI"), POINT_COLUMNS.index("achieved"), PERCENT, BAND):
        assert table.columnViewportPosition(column) + table.columnWidth(column) <= visible
    assert long_name in table.item(0, 0).toolTip() and len(table.item(0, 0).text()) <= 64


@pytest.mark.parametrize("kind", ["png", "svg", "csv"])
def test_a_failed_export_shows_an_error_where_the_user_clicked(tab, tmp_path, kind):
    tab.add_point(gemm_point(1024, 1024, 1024, "bf16", seconds=1e-5))
    missing = tmp_path / "no such folder" / f"roof.{kind}"
    assert not tab.export_to(kind, missing)
    assert tab.export_status.text().startswith(f"Could not export {kind.upper()} to {missing}")
    assert tab.export_status.styleSheet() == ERROR_STYLE and not missing.exists()
    assert not tab.export_to(kind, tmp_path)                   # a folder, not a file
    assert "Could not export" in tab.export_status.text()
    assert tab.export_to(kind, tmp_path / f"ok.{kind}")
    assert tab.export_status.text().startswith("Exported") and (tmp_path / f"ok.{kind}").stat().st_size > 0


def test_a_failed_export_from_the_file_menu_says_so_in_a_message_box(make_main_window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    window = make_main_window(device_id="h200")
    window.show_tab("mfu")                                     # the Roofline tab is hidden
    target = tmp_path / "missing folder" / "roof.png"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda parent, title, text: warnings.append(text)))
    action = next(a for m in window.menuBar().actions() if m.text() == "&File"
                  for a in m.menu().actions() if "PNG" in a.text())
    action.trigger()
    assert len(warnings) == 1 and warnings[0].startswith(f"Could not export PNG to {target}")


def test_trace_kernels_stay_with_the_traces_gpu_when_the_toolbar_moves(make_main_window, qtbot):
    """The demo trace ran on an H200: its kernels belong to the h200 roof even when "Show on
    roofline" is clicked with the A100 picked, and they leave the plot while the A100 is shown."""
    from importlib import resources
    from pathlib import Path

    demo = Path(str(resources.files("gpuperf_gui.resources") / "demo" / "healthy_gpt_small.json.gz"))
    window = make_main_window(device_id="h200")
    window.open_traces([demo])
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    roofline = window.roofline_tab
    window.device_combo.setCurrentIndex(window.device_combo.findData("a100-sxm-80gb"))
    window.trace_tab.roofline_button.click()
    (name, points), = roofline._external.items()
    assert points and {p.device_id for p in points} == {"h200"}
    assert roofline.points_table.rowCount() == 0 and len(roofline.canvas._series[name].data) == 0
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    assert roofline.points_table.rowCount() == len(points)
    assert len(roofline.canvas._series[name].data) == len(points)
