"""The MFU checks of docs/conventions.md (five common ways to compute MFU wrong), through `gpuperf mfu`:
each fires on the wrong input and stays silent on the right one. The figures that make an input
wrong come from the datasheets (docs/reference/hardware.md) and hand counts, written here."""
from __future__ import annotations

import json

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core import mfu
from gpuperf_gui.core.model_presets import get_preset

# 1e9 parameters, 66,667 tokens in 1 s on one GPU: 6 · 1e9 · 66,667 = 400 TFLOP/s achieved
BASE = ["mfu", "--params", "1e9", "--tokens-per-step", "66667"]
H100 = ["--gpu", "h100-sxm"]


@pytest.fixture(autouse=True)
def _no_saved_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


def _codes(capsys, argv: list[str]) -> list[str]:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["warning_codes"]


def test_single_timed_step(capsys) -> None:
    assert "single_step" in _codes(capsys, [*BASE, *H100, "--step-times", "1.0"])
    assert "single_step" not in _codes(capsys, [*BASE, *H100, "--step-times", "1.0,1.0,1.0,1.0"])
    assert "single_step" not in _codes(capsys, [*BASE, *H100, "--step-time", "1.0"])  # a median given


def test_tokens_per_step_with_grad_accum_and_dp_is_not_silently_ignored(capsys) -> None:
    argv = ["mfu", "--params", "1e9", "--tokens-per-step", "8192", "--step-time", "0.1", *H100]
    assert main([*argv, "--grad-accum", "8", "--dp", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (msg,) = [m for m, c in zip(out["warnings"], out["warning_codes"]) if c == "batch_options_ignored"]
    assert "64×" in msg and "524.3k" in msg  # 8192 · 8 · 8 = 524,288, a hand count
    assert "batch_options_ignored" not in _codes(capsys, argv)


@pytest.mark.parametrize("peak, code", [
    ("1979e12", "sparse_peak"),        # H100/H200 bf16 "with sparsity" (hardware.md), no --gpu given
    ("4500e12", "sparse_peak"),        # B200 bf16 sparse
    ("3000e12", "peak_above_known"),   # above every dense bf16 figure (GB200 2500)
])
def test_explicit_peak_without_a_device_is_checked_against_the_database(capsys, peak: str, code: str) -> None:
    assert code in _codes(capsys, [*BASE, "--step-time", "1", "--peak-flops", peak, "--precision", "bf16"])


@pytest.mark.parametrize("peak", ["989.4e12", "2250e12", "2500e12", "312e12", "275e12"])
def test_dense_explicit_peaks_stay_silent(capsys, peak: str) -> None:
    # H100 bf16, B200, GB200, A100 dense; 275e12 (TPU v4, not in the database, below every maximum)
    codes = _codes(capsys, ["mfu", "--params", "1e9", "--tokens-per-step", "1000", "--step-time", "1",
                            "--peak-flops", peak])
    assert not {"sparse_peak", "peak_above_known"} & set(codes)


def test_fp16_peak_with_bf16_training_on_h100_is_the_same_peak(capsys) -> None:
    # H100 SXM datasheet: FP16 and BF16 tensor are both 989.4 TFLOP/s dense
    assert "precision_mismatch" not in _codes(capsys, [*BASE, "--step-time", "1", *H100,
                                                       "--precision", "fp16", "--training-precision", "bf16"])
    # fp8 is 1978.9: the bf16 peak understates... the fp8 run's peak is 2x higher: MFU overstated
    assert "precision_mismatch" in _codes(capsys, [*BASE, "--step-time", "1", *H100,
                                                   "--precision", "bf16", "--training-precision", "fp8"])


def test_fp32_peak_with_bf16_training_blames_the_peak_not_the_tokens(capsys) -> None:
    # 400 TFLOP/s achieved over H100's fp32 66.9: 598 % (impossible); over its bf16 989.4: 40 %
    argv = [*BASE, "--step-time", "1", *H100, "--precision", "fp32"]
    assert main([*argv, "--training-precision", "bf16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: --precision: ") and "Likely the peak" in err
    assert "bf16" in err and "(MFU 40% against it)" in err
    assert "Likely the tokens per step" not in err
    assert main(argv) == 2  # no training precision given: the old advice stands
    assert "Likely the tokens per step" in capsys.readouterr().err


def _llama_n() -> float:
    return mfu.n_params_from_config(get_preset("Llama-3 8B"))[0]


def test_recompute_counted_as_useful_checks_n_against_the_config(capsys) -> None:
    """N taken 8/6 too large (full recompute's 8·N counted as 6·N) fires at an MFU far below the
    ceiling (here ~20 %), where the HFU check (above 74 %) cannot see it."""
    run = ["mfu", "--preset", "llama3-8b", "--tokens-per-step", "1M", "--step-time", "10", "--gpus", "64",
           *H100, "--recompute", "full"]
    assert main([*run, "--params", repr(_llama_n() * 8 / 6), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "recompute_counted_as_useful" in out["warning_codes"] and out["hfu"] < 0.74
    assert "recompute_counted_as_useful" not in _codes(capsys, [*run, "--params", repr(_llama_n())])
    assert "n_params_differs" in _codes(capsys, [*run, "--params", repr(_llama_n() * 1.6)])
