"""The MFU tab's HFU convention and the preset-vs-source line (docs/conventions.md, MFU and HFU), = `gpuperf mfu`."""
from __future__ import annotations

import json

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.mfu.tab import MfuTab


@pytest.fixture
def tab(qtbot) -> MfuTab:
    widget = MfuTab(AppContext(device_id="h100-sxm", precision="bf16"))
    qtbot.addWidget(widget)
    return widget


def test_gpt3_example_hfu_in_both_conventions_equals_the_cli(tab: MfuTab, capsys) -> None:
    tab.preset_combo.setCurrentText("GPT-3 175B")  # README: 51.4 % MFU, 52.8 % HFU (selective)
    r = tab.result
    assert round(r.mfu * 100, 1) == 51.4 and "gpuperf convention" in tab.kpi_details["hfu"].text()
    assert "52.78 %" in tab.example_label.text() and "korthikanti2022" in tab.example_label.text()
    tab.recompute_convention_combo.setCurrentText("korthikanti2022")
    assert round(tab.result.hfu * 100, 1) == 52.8 and "korthikanti2022" in tab.kpi_details["hfu"].text()
    i = tab.result.inputs
    argv = ["mfu", "--params", repr(i.n_params), "--tokens-per-step", repr(i.tokens_per_step), "--step-time",
            repr(i.step_time_s), "--gpus", str(i.gpus), "--gpu", "a100-sxm-80gb", "--layers", "96", "--heads", "96",
            "--head-dim", "128", "--seq", "2048", "--recompute", "selective",
            "--recompute-convention", "korthikanti2022", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hfu"] == pytest.approx(tab.result.hfu) and out["mfu"] == pytest.approx(tab.result.mfu)


def test_llama3_8b_shows_the_source_convention_beside_ours(tab: MfuTab) -> None:
    tab.preset_combo.setCurrentText("Llama-3 8B")
    text = tab.example_label.text()
    assert round(tab.result.mfu * 100, 2) == 55.19
    assert "MFU 55.19 %" in text and "MFU 58.19 %" in text and "it prints 58.2 % MFU" in text
