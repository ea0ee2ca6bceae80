"""MfuTab: live recomputation, invalid inputs marked in place, trace figures, copy formats."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QPushButton

from gpuperf_gui.core import mfu
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.mfu_tab import N_GIVEN, MfuTab


@pytest.fixture
def tab(qtbot) -> MfuTab:
    widget = MfuTab(AppContext(device_id="h100-sxm", precision="bf16"))
    qtbot.addWidget(widget)
    widget.resize(1600, 1000)
    return widget


def _type(qtbot, field, text: str) -> None:
    field.selectAll()
    qtbot.keyClicks(field, text) if text else field.clear()


def test_opens_with_a_sound_result(tab: MfuTab) -> None:
    assert tab.result is not None
    assert 0.0 < tab.result.mfu < 1.0
    assert tab.result.hfu >= tab.result.mfu
    assert tab.result.warnings == ()
    assert "Convention" in tab.convention_label.text()
    assert tab.kpi_values["mfu"].text() == f"{tab.result.mfu:.1%}"


def test_typing_a_step_time_updates_the_result(qtbot, tab: MfuTab) -> None:
    before, before_step_s = tab.result.mfu, tab.result.inputs.step_time_s
    _type(qtbot, tab.fields["step_times"], "2.4")  # twice as fast as the default ~4.8 s
    assert tab.result.inputs.step_time_s == 2.4
    assert tab.result.mfu == pytest.approx(before * before_step_s / 2.4, rel=1e-12)
    assert tab.kpi_values["mfu"].text() == f"{tab.result.mfu:.1%}"


def test_n_given_directly(qtbot, tab: MfuTab) -> None:
    tab.preset_combo.setCurrentText(N_GIVEN)
    _type(qtbot, tab.fields["n_params"], "8B")
    assert tab.result.inputs.n_params == 8e9
    assert tab.result.inputs.n_params_note == "N given"


def test_invalid_input_is_marked_not_raised(qtbot, tab: MfuTab) -> None:
    field = tab.fields["step_times"]
    _type(qtbot, field, "fast")
    assert field.property("invalid") is True
    assert field.error and "not a number" in field.error
    assert tab.result is None
    assert tab.kpi_values["mfu"].text() == "—"
    _type(qtbot, field, "4.8")
    assert field.property("invalid") is False
    assert tab.result is not None


def test_inconsistent_config_marks_the_field(qtbot, tab: MfuTab) -> None:
    _type(qtbot, tab.fields["kv_heads"], "5")  # 32 heads are not a multiple of 5
    assert tab.fields["kv_heads"].property("invalid") is True
    assert tab.preset_combo.currentText() == "Custom configuration"
    assert tab.result is None


def test_preset_fills_the_configuration(tab: MfuTab) -> None:
    tab.preset_combo.setCurrentText("Mixtral 8x7B")
    assert tab.fields["experts"].text() == "8"
    assert tab.result.inputs.n_params == pytest.approx(12.75e9, rel=1e-3)  # active, lookups excluded
    assert "top-2 of 8 experts" in tab.result.inputs.n_params_note


def test_apply_trace_figures_shrinks_unexplained(tab: MfuTab) -> None:
    before = tab.breakdown.unexplained

    @dataclass
    class Figures:  # what core/trace's TraceMfuFigures carries
        step_time_s: float | None = 4.8
        exposed_comm: float = 0.10
        data_stall: float = 0.05
        launch_gaps: float = 0.02
        pipeline_bubble: float = 0.0
        memory_bound: float = 0.10

    tab.apply_trace_figures(Figures())
    assert tab.result.inputs.step_time_s == 4.8
    assert tab.breakdown.unexplained < before
    shares = {s.key: s.fraction for s in tab.breakdown.causes}
    assert shares["exposed_comm"] == pytest.approx(0.10)
    assert shares["memory_bound"] == pytest.approx(0.10 * 0.9)
    tab.apply_trace_figures(object())  # missing attributes are ignored, never an exception
    assert tab.result is not None


def test_over_attribution_is_said_not_drawn_negative(tab: MfuTab) -> None:
    tab.cause_spins["exposed_comm"].setValue(70.0)
    assert tab.breakdown.unexplained == 0.0
    assert "Over-attributed" in tab.breakdown_message.text()
    assert all(s.fraction >= 0 for s in tab.gap_bar.slices)


def test_full_recompute_and_sparse_peak_warning(qtbot, tab: MfuTab) -> None:
    tab.recompute_combo.setCurrentText("full")
    assert tab.result.hfu == pytest.approx(8 / 6 * tab.result.mfu)
    tab.explicit_peak_check.setChecked(True)
    _type(qtbot, tab.fields["peak_tflops"], "1979")  # the H100 SXM "with sparsity" bf16 figure
    assert "sparse_peak" in {w.code for w in tab.result.warnings}
    assert "sparse" in tab.warnings_label.text()


def test_device_change_recomputes(tab: MfuTab) -> None:
    mfu_h100 = tab.result.mfu
    tab.context.set_device("a100-sxm-80gb")
    assert tab.result.peak_flops_per_s_per_gpu == pytest.approx(312e12)
    assert tab.result.mfu == pytest.approx(mfu_h100 * 989.4 / 312, rel=1e-3)


def test_amdahl_what_if(tab: MfuTab) -> None:
    tab.amdahl_share_spin.setValue(10.0)
    tab.amdahl_speedup_spin.setValue(2.0)
    assert tab.amdahl_result.overall_speedup == pytest.approx(1 / 0.95)
    assert "5.3% faster" in tab.amdahl_readout.text()


def test_copy_formats(qtbot, tab: MfuTab) -> None:
    payload = json.loads(tab.result_text("json"))
    assert payload["mfu"] == pytest.approx(tab.result.mfu)
    assert "gap_breakdown" in payload
    assert tab.result_text("markdown").startswith("| Metric | Value |")
    button = next(b for b in tab.findChildren(QPushButton) if b.text() == "Text")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text().startswith("MFU")
    assert "Copied" in tab.status_label.text()


def test_screenshot_is_not_blank(qtbot, tab: MfuTab) -> None:
    tab.show()
    qtbot.waitExposed(tab)
    image = tab.grab().toImage()
    assert (image.width(), image.height()) == (1600, 1000)
    assert mfu.TARGET_MFU == 0.5


def test_n_given_ignores_unneeded_config_fields(qtbot, tab: MfuTab) -> None:
    tab.preset_combo.setCurrentText(N_GIVEN)
    _type(qtbot, tab.fields["vocab_size"], "")
    assert tab.fields["vocab_size"].property("invalid") is False
    assert tab.result is not None
    tab.attention_check.setChecked(False)
    _type(qtbot, tab.fields["layers"], "")
    assert tab.result is not None and tab.result.inputs.attention is None
    tab.attention_check.setChecked(True)
    assert tab.fields["layers"].property("invalid") is True
    assert tab.result is None


def test_device_without_that_precision_is_marked(tab: MfuTab) -> None:
    tab.context.set_device("t4")  # Turing has no bf16
    assert tab.result is None
    assert "bf16" in tab.peak_readout.text()
    assert "No result" in tab.warnings_label.text()
    tab.explicit_peak_check.setChecked(True)
    tab.fields["peak_tflops"].setText("65")
    assert tab.result is not None and tab.result.peak_flops_per_s_per_gpu == 65e12


@dataclass
class GptTraceFigures:  # the engine's TraceMfuFigures for healthy_gpt_small, with the optional fields
    step_time_s: float | None = 0.0617547
    exposed_comm: float = 0.0
    data_stall: float = 0.0
    launch_gaps: float = 0.013
    pipeline_bubble: float = 0.0
    memory_bound: float = 0.356
    source: str = "/work/shared/traces/h200/healthy_gpt_small.json.gz"
    world_size: int = 1
    device_name: str = "NVIDIA H200"


def test_trace_figures_set_the_gpu_count_and_ask_for_the_model(tab: MfuTab) -> None:
    assert tab.gpus_spin.value() == 8 and tab.trace_banner.isHidden()
    tab.apply_trace_figures(GptTraceFigures())
    assert tab.gpus_spin.value() == 1
    assert tab.result.inputs.gpus == 1
    banner = tab.trace_banner.text()
    assert not tab.trace_banner.isHidden()
    assert ("Step time and gap causes come from healthy_gpt_small.json.gz; enter the model and the "
            "tokens per step of that run") in banner
    assert "GPUs set to 1 from the trace" in banner and "NVIDIA H200" in banner
    assert "from the loaded trace (healthy_gpt_small.json.gz)" in tab.trace_label.text()
    tab.trace_banner.linkActivated.emit("dismiss")
    assert tab.trace_banner.isHidden()


def test_trace_figures_without_world_size_keep_the_gpus_and_say_so(tab: MfuTab) -> None:
    @dataclass
    class OlderFigures:  # TraceMfuFigures before world_size/device_name existed
        step_time_s: float | None = 0.016
        exposed_comm: float = 0.4
        data_stall: float = 0.08
        launch_gaps: float = 0.14
        pipeline_bubble: float = 0.0
        memory_bound: float = 0.05
        source: str = "8 ranks"

    tab.apply_trace_figures(OlderFigures())
    assert tab.gpus_spin.value() == 8
    assert "the loaded trace (8 ranks)" in tab.trace_banner.text()
    assert "GPU count is not in the trace" in tab.trace_banner.text()


def test_implausible_mfu_still_draws_the_trace_causes(tab: MfuTab) -> None:
    tab.apply_trace_figures(GptTraceFigures())  # Llama-3 8B tokens over a GPT-small step: MFU ≫ 100 %
    assert tab.result.mfu > 1.0
    assert tab.kpi_values["mfu"].styleSheet()  # flagged in red
    slices = {s.key: s.fraction for s in tab.gap_bar.slices}
    assert slices["memory_bound"] == pytest.approx(0.356)
    assert slices["launch_gaps"] == pytest.approx(0.013)
    assert slices[mfu.REST_OF_STEP] == pytest.approx(1 - 0.369)
    assert "mfu" not in slices  # no 100 % green bar hiding the causes
    assert "not plausible" in tab.gap_bar.flag and "not plausible" in tab.gap_group.title()
    # once the model and tokens fit the step, the bar is shares of peak again
    tab.preset_combo.setCurrentText("GPT-2 124M")
    tab.fields["micro_batch"].setText("16")
    tab.fields["seq_len"].setText("1024")
    tab.fields["grad_accum"].setText("1")
    tab.fields["data_parallel"].setText("1")
    assert tab.result is not None and tab.result.mfu < 0.7
    assert tab.gap_bar.flag is None and tab.gap_group.title().startswith("Where the rest")
    assert {s.key for s in tab.gap_bar.slices} >= {"mfu", "memory_bound", "unexplained"}


def test_without_a_result_the_causes_still_show(tab: MfuTab) -> None:
    tab.apply_trace_figures(GptTraceFigures())
    tab.context.set_device("t4")  # no bf16 peak: no MFU at all
    assert tab.result is None
    assert {s.key for s in tab.gap_bar.slices} == {"memory_bound", "launch_gaps", mfu.REST_OF_STEP}
    assert tab.gap_bar.flag.startswith("No MFU")


def test_custom_recompute_requires_both_fractions(qtbot, tab: MfuTab) -> None:
    dense, attention = tab.fields["recompute_dense"], tab.fields["recompute_attention"]
    assert not dense.isEnabled()
    tab.recompute_combo.setCurrentText("custom")
    assert dense.isEnabled() and attention.isEnabled()
    assert tab.result is None
    assert dense.property("invalid") is True and "required" in dense.error
    assert attention.property("invalid") is True
    _type(qtbot, dense, "75")
    assert tab.result is None and attention.property("invalid") is True
    _type(qtbot, attention, "100 %")
    assert tab.result is not None
    assert tab.result.inputs.recompute == mfu.Recompute.of("custom", 0.75, 1.0)
    _type(qtbot, dense, "150")
    assert tab.result is None and "0 to 100" in dense.error
    tab.recompute_combo.setCurrentText("none")  # the fields no longer matter
    assert tab.result is not None and dense.property("invalid") is False


def test_a_ceiling_model_of_zero_shows_a_result_not_a_traceback(tab: MfuTab) -> None:
    for name in ("gemm_efficiency", "memory_efficiency", "idle_efficiency"):
        tab.ceiling_spins[name].setValue(0.0)  # a slot that raised would fail the test (pytest-qt)
    assert tab.result is not None and tab.result.mfu_ceiling == 0.0
    assert tab.result.fraction_of_ceiling is None
    assert "nothing to compare with" in tab.ceiling_readout.text()
    assert tab.kpi_details["hfu"].text().startswith(f"{tab.result.hfu_over_mfu:.3g}× model FLOPs")
