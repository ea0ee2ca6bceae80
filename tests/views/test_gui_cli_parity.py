"""GUI/CLI parity: a number the window shows equals what `gpuperf ... --json` prints for the same input.

Each test also pins the figure to an independent value (a datasheet product or the trace's recorded
label), so a bug shared by the window and the CLI still fails.
"""
from __future__ import annotations

import json
import math
import re

import pytest
from PySide6.QtCore import QPointF, Qt

from gpuperf_gui.cli import main as cli_main
from gpuperf_gui.views.context import AppContext

SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
LOAD_TIMEOUT_MS = 60_000
H200_BANDWIDTH = 4.8e12  # H200 SXM datasheet: 4.8 TB/s HBM3e
H200_BF16_DENSE = 989.4e12  # H200 SXM datasheet: 1,979 TFLOP/s bf16 with sparsity, half of it dense


def _si_value(text: str, unit: str) -> float:
    """The number of the first ``<number> <prefix><unit>`` in ``text`` (e.g. "240 TFLOP/s")."""
    match = re.search(rf"([\d.]+) ?([kMGTPE]?){re.escape(unit)}", text)
    assert match, (unit, text)
    return float(match.group(1)) * SI[match.group(2)]


def _cli_json(capsys: pytest.CaptureFixture, argv: list[str]) -> dict:
    capsys.readouterr()
    assert cli_main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def roofline_tab(qtbot):
    from gpuperf_gui.views.roofline_tab import RooflineTab

    tab = RooflineTab(AppContext(device_id="h200", precision="bf16"))
    qtbot.addWidget(tab)
    tab.resize(1600, 1000)
    tab.show()
    qtbot.waitExposed(tab)
    yield tab
    tab.shutdown()


@pytest.mark.parametrize("ai", [50.0, 1000.0])
def test_roofline_hover_readout_equals_gpuperf_roofline_ai(roofline_tab, capsys, ai: float) -> None:
    """Hovering the plot at an AI shows the attainable rate `gpuperf roofline --ai` prints."""
    canvas = roofline_tab.canvas
    y_mid = sum(canvas.plot_item.vb.viewRange()[1]) / 2
    canvas._on_mouse_moved(canvas.plot_item.vb.mapViewToScene(QPointF(math.log10(ai), y_mid)))
    shown = roofline_tab.hover_label.text()
    assert shown.startswith(f"AI {ai:.3g} FLOP/byte"), shown
    cli = _cli_json(capsys, ["roofline", "--gpu", "h200", "--precision", "bf16", "--ai", str(ai), "--json"])
    assert _si_value(shown, "FLOP/s") == pytest.approx(cli["attainable_flops_per_s"], rel=5e-3)  # 3 digits
    assert f"({cli['bound']}-bound)" in shown
    assert cli["attainable_flops_per_s"] == pytest.approx(min(H200_BF16_DENSE, ai * H200_BANDWIDTH))


def test_roofline_placed_point_equals_gpuperf_roofline_flops_bytes_seconds(qtbot, roofline_tab, capsys) -> None:
    """The calculator's 1 TFLOP / 10 GB / 10 ms point: attainable and % of the roof as the CLI."""
    tab = roofline_tab
    tab.op_combo.setCurrentIndex(2)  # Custom FLOPs / bytes
    tab.custom_flops.setText("1e12")
    tab.custom_bytes.setText("1e10")
    tab.time_us.setText("10000")
    qtbot.mouseClick(tab.add_button, Qt.MouseButton.LeftButton)
    shown = tab.result_label.text()
    cli = _cli_json(capsys, ["roofline", "--gpu", "h200", "--precision", "bf16", "--flops", "1e12",
                             "--bytes", "1e10", "--seconds", "0.01", "--json"])
    attainable = _si_value(shown.split("attainable", 1)[1], "FLOP/s")
    assert attainable == pytest.approx(cli["attainable_flops_per_s"], rel=5e-3)
    percent = float(re.search(r"([\d.]+) % of the roof", shown).group(1))
    assert percent == round(100 * cli["fraction_of_roof"], 1)
    row = [tab.points_table.item(0, c).text() for c in range(tab.points_table.columnCount())]
    assert f"{percent:.1f} %" in row  # the Points table says the same
    # by hand: AI 100 FLOP/byte × 4.8 TB/s = 480 TFLOP/s; 1e12 FLOP in 10 ms = 100 TFLOP/s = 20.8 %
    assert cli["attainable_flops_per_s"] == pytest.approx(100 * H200_BANDWIDTH)
    assert cli["fraction_of_roof"] == pytest.approx(1e14 / (100 * H200_BANDWIDTH))


@pytest.fixture
def trace_tab(qtbot):
    from gpuperf_gui.views.trace.tab import TraceTab

    tab = TraceTab(None)
    qtbot.addWidget(tab)
    tab.resize(1600, 1000)
    yield tab
    tab.shutdown()


def _panel_figure(text: str, name: str) -> str:
    """The value printed under a figure's name in the diagnosis panel ("GPU busy\\n4.6 %")."""
    lines = text.splitlines()
    return lines[lines.index(name) + 1]


# the recorded scenario of each trace (tests/data/shared_traces/SOURCES.md)
LABELS = {"launch_bound_tiny": "launch_bound", "memory_bound_visible": "memory_bound"}


@pytest.mark.parametrize("name", sorted(LABELS))
def test_trace_diagnosis_panel_equals_gpuperf_diagnose_json(qtbot, trace_tab, shared_traces, capsys,
                                                           name: str) -> None:
    path = shared_traces / "h200" / f"{name}.json.gz"
    trace_tab.open_paths([path])
    qtbot.waitUntil(lambda: not trace_tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    text = trace_tab.diagnosis.toPlainText()
    cli = _cli_json(capsys, ["diagnose", str(path), "--json"])
    (rank,) = cli["ranks"]
    signature = cli["diagnosis"]["signature"]
    assert signature == LABELS[name]
    assert f"signature {signature} ·" in text and f", {100 * cli['diagnosis']['confidence']:.0f} %\n" in text
    assert float(_panel_figure(text, "GPU busy").rstrip(" %")) == round(100 * rank["gpu_busy_fraction"], 1)
    assert float(_panel_figure(text, "compute busy").rstrip(" %")) == round(100 * rank["compute_busy_fraction"], 1)
    step_ms = float(_panel_figure(text, "step time (median)").removesuffix(" ms"))
    assert step_ms == pytest.approx(1e3 * rank["step_time_median_s"], abs=0.05)
    for line in cli["diagnosis"]["evidence"]:  # the same evidence, word for word
        assert line in text


@pytest.mark.parametrize(("trace", "precision", "peak"), [
    ("profile_fed", "bf16", H200_BF16_DENSE),
    ("eager_small", "fp32", 66.9e12),   # H200 SXM datasheet: 66.9 TFLOP/s fp32 (CUDA cores)
])
def test_trace_overview_kernels_equal_gpuperf_diagnose_json(qtbot, trace_tab, capsys, trace: str, precision: str,
                                                          peak: float) -> None:
    """The Overview's tensor-core share, achieved FLOP/s, % of roof and precision per kernel are
    `diagnose --json`'s ``kernels``; each kernel's % of roof is against its own precision's peak."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "h200" / f"{trace}.json.gz"
    trace_tab.show()
    qtbot.waitExposed(trace_tab)
    with qtbot.waitSignal(trace_tab.trace_loaded, timeout=LOAD_TIMEOUT_MS):
        trace_tab.open_paths([path])
    trace_tab.show_page("overview")
    page, table = trace_tab.overview, trace_tab.overview.kernels
    cli = _cli_json(capsys, ["diagnose", str(path), "--json"])["ranks"][0]["kernels"]
    assert cli["roof_device"] == "h200" and cli["precision"]["precision"] == precision
    assert f"{100 * cli['tensor_core_share']:.1f} %" in page.cards.text()
    assert f"{100 * cli['gemm']['fraction_of_roof']:.1f} %" in page.cards.text()
    rows = {table.item(r, 0).toolTip(): r for r in range(table.rowCount())}
    judged = 0
    for k in cli["top_kernels"]:
        row = rows[k["name"]]
        if k["fraction_of_roof"] is None:
            assert table.item(row, 7).text() == "–"
            continue
        assert table.item(row, 7).text() == f"{100 * k['fraction_of_roof']:.1f} %"
        assert _si_value(table.item(row, 6).text(), "FLOP/s") == pytest.approx(k["achieved_flops_per_s"], rel=5e-3)
        assert table.item(row, 8).text() == k["precision"] == precision
        # independent: compute-bound kernels (AI past twice the ridge) are at achieved / datasheet peak
        if k["ai_flops_per_byte"] > 2 * peak / H200_BANDWIDTH:
            assert k["fraction_of_roof"] == pytest.approx(k["achieved_flops_per_s"] / peak, rel=1e-9)
            judged += 1
    assert judged >= 3
