"""Opening traces of two precisions and two devices one after the other, whatever the toolbar says:
no kernel shows more than 100 % of its roof, and Send to MFU divides by the trace's own peak
(docs/precision.md). Peaks from the datasheets (docs/reference/hardware.md): H200
SXM and H100 SXM, 989.4 TFLOP/s bf16 dense and 66.9 TFLOP/s fp32; 4.8 and 3.35 TB/s."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from gpuperf_gui.cli import main as cli_main
from gpuperf_gui.core.mfu_inputs import load_trace_run

DATA = Path(__file__).resolve().parents[1] / "data"
LOAD_TIMEOUT_MS = 60_000
# trace -> (device id, precision, datasheet peak at that precision, model N, tokens per step, step time)
TRACES = {
    "fp32-h200": (DATA / "h200" / "eager_small.json.gz", "h200", "fp32", 66.9e12, "19M", "2048", None),
    "bf16-h200": (DATA / "h200" / "profile_fed.json.gz", "h200", "bf16", 989.4e12, "134217728", "8192", None),
    "bf16-h100": (DATA / "shared_traces" / "tracelens" / "h100" / "gaunernst_bert-small-uncased__1016001.json.gz",
                  "h100-sxm", "bf16", 989.4e12, "1M", "1000", "0.01"),
}


def _type(qtbot, field, text: str) -> None:
    field.clear()
    qtbot.keyClicks(field, text)


def _cli(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert cli_main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _percent(text: str) -> float | None:
    return None if text in ("–", "") else float(text.split()[0])


TOOLBAR_STATES = ("bf16", "fp32", "fp8", "tf32", "fp16", "fp32")


@pytest.mark.slow
@pytest.mark.parametrize(("order", "toolbar"), [
    (order, tuple(TOOLBAR_STATES[(k + i) % len(TOOLBAR_STATES)] for i in range(3)))
    for k, order in enumerate(itertools.permutations(TRACES))])   # every order, other toolbar states
def test_opening_traces_one_after_another_never_mixes_contexts(qtbot, make_main_window, capsys,
                                                              order, toolbar) -> None:
    window = make_main_window(device_id="mi300x", precision="fp16")
    window.show()
    trace, mfu = window.trace_tab, window.mfu_tab
    for key, toolbar_precision in zip(order, toolbar):
        path, device_id, precision, peak, n, tokens, step = TRACES[key]
        window.precision_combo.setCurrentText(toolbar_precision)   # whatever the toolbar says
        with qtbot.waitSignal(trace.trace_loaded, timeout=LOAD_TIMEOUT_MS):
            window.open_traces([path], remember=False)
        qtbot.waitUntil(lambda: not trace.is_busy(), timeout=LOAD_TIMEOUT_MS)
        assert window.context.device_id == device_id and window.context.precision == precision
        trace.show_page("overview")
        page, table = trace.overview, trace.overview.kernels
        assert page.device.id == device_id
        math_rows = 0
        for row in range(table.rowCount()):
            percent = _percent(table.item(row, 7).text())
            assert percent is None or percent <= 100.0, (key, table.item(row, 0).toolTip(), percent)
            if percent is not None:
                assert table.item(row, 8).text() == precision
                math_rows += 1
        assert math_rows >= 1
        # the Overview's GEMM figure = diagnose --json's (one number, made once in core)
        cli = _cli(capsys, ["diagnose", str(path), "--json"])["ranks"][0]["kernels"]
        assert page.gemm_roof().fraction == pytest.approx(cli["gemm"]["fraction_of_roof"], rel=1e-12)
        assert f"{100 * cli['gemm']['fraction_of_roof']:.1f}" in page.cards.text()
        # Send to MFU: the trace's peak, and the gap bar's GEMM inefficiency = mfu --from-trace's
        qtbot.mouseClick(trace.mfu_button, Qt.MouseButton.LeftButton)
        assert window.tabs.currentWidget() is mfu
        if mfu.preset_combo.currentText() != "N given directly":
            mfu.preset_combo.setCurrentText("N given directly")
        mfu.attention_check.setChecked(False)
        _type(qtbot, mfu.fields["n_params"], n)
        _type(qtbot, mfu.fields["tokens_per_step"], tokens)
        if step is not None:
            _type(qtbot, mfu.fields["step_times"], step)
        assert mfu.result is not None, mfu.warnings_label.text()
        assert mfu.result.peak_flops_per_s_per_gpu == pytest.approx(peak)
        assert mfu.result.inputs.peak.precision == precision
        argv = ["mfu", "--from-trace", str(path), "--params", n, "--tokens-per-step", tokens, "--json"]
        got = _cli(capsys, argv + (["--step-time", step] if step else []))
        assert got["peak_flops_per_s_per_gpu"] == pytest.approx(peak) and got["precision"] == precision
        assert mfu.result.mfu == pytest.approx(got["mfu"], rel=1e-12)
        assert mfu.cause_spins["gemm_inefficiency"].value() == pytest.approx(
            100 * got["trace"]["gemm"]["gemm_inefficiency"], abs=0.05)   # the spin shows 0.1 %
        # Show on roofline: the ops' points on the trace's GPU at its precision, none above the roof
        qtbot.waitUntil(trace.roofline_button.isEnabled, timeout=LOAD_TIMEOUT_MS)
        trace.show_on_roofline()
        roofline = window.roofline_tab
        points = roofline.table_points()
        assert points and all(p.device_id == device_id and p.precision == precision for p in points)
        for p in points:
            assert roofline.roof_for_point(p).precision == precision
            fraction = roofline.analyse(p).fraction_of_roof
            assert fraction is None or fraction <= 1.0, (key, p.label, fraction)


@pytest.mark.slow
def test_a_chosen_precision_is_the_traces_until_another_trace_opens(qtbot, tab) -> None:
    bf16, fp32 = TRACES["bf16-h200"][0], TRACES["fp32-h200"][0]
    with qtbot.waitSignal(tab.trace_loaded, timeout=LOAD_TIMEOUT_MS):
        tab.open_paths([bf16])
    tab.show_page("overview")
    page = tab.overview
    assert page.precision_override is None and "bf16 (detected" in page.precision_label.text()
    page.set_precision_override("fp32")          # the user judges the bf16 GEMMs at fp32, knowingly
    assert "judged at fp32" in page.precision_label.text()
    sent = []
    tab.mfu_figures_ready.connect(sent.append)
    tab.send_to_mfu()
    assert sent[0].precision.effective == "fp32" and sent[0].precision.precision == "bf16"
    with qtbot.waitSignal(tab.trace_loaded, timeout=LOAD_TIMEOUT_MS):
        tab.open_paths([fp32])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=LOAD_TIMEOUT_MS)
    assert page.precision_override is None      # back to "auto": the choice was the other trace's
    assert "fp32 (detected" in page.precision_label.text()


def _figures(path: Path):
    return load_trace_run(path).figures


def test_a_second_trace_marks_the_model_typed_for_the_first(qtbot, make_main_window) -> None:
    mfu = make_main_window(device_id="h200", precision="bf16").mfu_tab
    first, second = _figures(TRACES["bf16-h200"][0]), _figures(TRACES["fp32-h200"][0])
    mfu.apply_trace_figures(first)
    mfu.preset_combo.setCurrentText("N given directly")
    mfu.attention_check.setChecked(False)
    _type(qtbot, mfu.fields["n_params"], "134217728")
    _type(qtbot, mfu.fields["tokens_per_step"], "8192")
    assert mfu.fields["seq_len"].text() == ""      # nothing uses it: attention off, tokens given
    assert mfu.result is not None and mfu.result.peak_flops_per_s_per_gpu == pytest.approx(989.4e12)
    mfu.apply_trace_figures(second)
    # kept, but marked as the first trace's, and the banner says so
    assert mfu.fields["n_params"].text() == "134217728"
    assert mfu.fields["n_params"].property("earlier_trace") is True
    assert "earlier trace" in mfu.trace_banner.text() and "profile_fed" in mfu.trace_banner.text()
    assert mfu.result is None or mfu.result.peak_flops_per_s_per_gpu == pytest.approx(66.9e12)
    _type(qtbot, mfu.fields["n_params"], "19M")    # the user confirms this trace's model
    _type(qtbot, mfu.fields["tokens_per_step"], "2048")
    assert not mfu.fields["n_params"].property("earlier_trace")
    assert "earlier trace" not in mfu.trace_banner.text()
    assert mfu.result.peak_flops_per_s_per_gpu == pytest.approx(66.9e12)   # fp32, the trace's
    assert "peak precision fp32, the trace's" in mfu.device_label.text()


def test_the_banner_never_says_entered_beside_an_empty_result(qtbot, make_main_window) -> None:
    mfu = make_main_window(device_id="h200", precision="bf16").mfu_tab
    mfu.apply_trace_figures(_figures(TRACES["bf16-h200"][0]))
    mfu.preset_combo.setCurrentText("N given directly")
    _type(qtbot, mfu.fields["n_params"], "8B")          # far too big for this step: no MFU
    mfu.attention_check.setChecked(False)
    _type(qtbot, mfu.fields["tokens_per_step"], "1M")
    assert mfu.result is None and mfu.kpi_values["mfu"].text() == "—"
    assert "No MFU yet" in mfu.trace_banner.text()
