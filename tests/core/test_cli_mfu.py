"""`gpuperf mfu`: DESIGN.md's contract (keys, fractions, SI units), text output, errors."""
from __future__ import annotations

import json

import pytest

from gpuperf_gui.cli import main

CONTRACT_KEYS = {"mfu", "hfu", "model_flops_per_step", "achieved_flops_per_s_per_gpu",
                 "peak_flops_per_s_per_gpu", "tokens_per_s", "warnings"}
PALM = ["mfu", "--params", "540.35e9", "--tokens-per-step", "238300", "--step-time", "1",
        "--gpus", "6144", "--peak-flops", "275e12",
        "--layers", "118", "--heads", "48", "--head-dim", "256", "--seq", "2048"]


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_contract_keys_and_palm_figures(capsys) -> None:
    payload = _json(capsys, PALM)
    assert CONTRACT_KEYS <= payload.keys()
    assert round(payload["mfu"] * 100, 1) == 46.2
    assert payload["hfu"] == payload["mfu"]
    assert payload["peak_flops_per_s_per_gpu"] == 275e12
    assert payload["tokens_per_s"] == pytest.approx(238300)
    assert payload["warnings"] == []
    assert "12·L·H·Q·T" in payload["convention"]


def test_full_recompute_and_device_peak(capsys) -> None:
    argv = ["mfu", "--params", "8e9", "--tokens-per-step", "4M", "--step-time", "10",
            "--gpus", "64", "--gpu", "h100-sxm", "--precision", "bf16", "--recompute", "full"]
    payload = _json(capsys, argv)
    assert payload["hfu"] == pytest.approx(8 / 6 * payload["mfu"])
    assert payload["peak_flops_per_s_per_gpu"] == pytest.approx(989.4e12, rel=1e-3)
    assert payload["model_flops_per_step"] == pytest.approx(6 * 8e9 * 4e6)
    assert payload["achieved_flops_per_s_per_gpu"] == pytest.approx(6 * 8e9 * 4e6 / 10 / 64)


def test_preset_and_step_time_list(capsys) -> None:
    argv = ["mfu", "--preset", "GPT-2 124M", "--micro-batch", "12", "--grad-accum", "40",
            "--step-times", "9,4.2,4.1,4.3", "--peak-flops", "312e12"]
    payload = _json(capsys, argv)
    assert payload["step_time_s"] == pytest.approx(4.2)  # warm-up (9 s) dropped, median of the rest
    assert payload["tokens_per_step"] == 12 * 1024 * 40
    assert payload["n_params"] == 123_653_376  # nanoGPT's non-embedding count
    assert payload["step_time_stats"]["n_dropped"] == 1


def test_sparse_peak_warning_from_cli(capsys) -> None:
    argv = ["mfu", "--params", "7e9", "--tokens-per-step", "1M", "--step-time", "8", "--gpus", "8",
            "--gpu", "h100-sxm", "--precision", "bf16", "--peak-flops", "1979e12"]
    payload = _json(capsys, argv)
    assert "sparse_peak" in payload["warning_codes"]
    assert any("sparse" in w for w in payload["warnings"])


def test_text_output_names_convention_and_denominator(capsys) -> None:
    assert main(PALM) == 0
    out = capsys.readouterr().out
    assert "MFU" in out and "46.2%" in out
    assert "Convention:" in out and "275 TFLOP/s" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["mfu", "--tokens-per-step", "1", "--step-time", "1", "--peak-flops", "1e12"], "--params"),
        (["mfu", "--params", "1e9", "--tokens-per-step", "1", "--step-time", "1"], "--peak-flops"),
        (["mfu", "--params", "1e9", "--tokens-per-step", "1", "--step-time", "1", "--gpu", "h10"], "h100"),
        (["mfu", "--params", "1e9", "--tokens-per-step", "1", "--step-time", "0", "--peak-flops", "1e12"], "step time"),
        (["mfu", "--params", "1e9", "--tokens-per-step", "1", "--step-time", "1", "--peak-flops", "1e12",
          "--layers", "2"], "attention"),
    ],
)
def test_errors_are_one_line_and_exit_2(capsys, argv: list[str], needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_model_config_file(capsys, tmp_path) -> None:
    config = tmp_path / "Meta-Llama-3-8B" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({
        "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "tie_word_embeddings": False, "vocab_size": 128256}))
    payload = _json(capsys, ["mfu", "--model-config", str(config), "--tokens-per-step", "4M",
                             "--step-time", "10", "--gpus", "64", "--gpu", "h100-sxm"])
    assert payload["n_params"] == 8_030_261_248 - 128256 * 4096  # input lookup table excluded
    assert payload["attention_term"] is True


def test_recorded_h200_run(capsys, shared_traces) -> None:
    # healthy_gpt_small.meta.json: N without embedding tables (untied LM head kept), attention on.
    meta = json.loads((shared_traces / "h200" / "healthy_gpt_small.meta.json").read_text())
    argv = ["mfu", "--params", str(meta["n_params_nonembed"]), "--tokens-per-step",
            str(meta["tokens_per_step"]), "--step-times", ",".join(map(str, meta["step_times_s"])),
            "--warmup-steps", "0", "--gpu", "h200", "--precision", "bf16",
            "--layers", str(meta["layers"]), "--heads", str(meta["heads"]),
            "--head-dim", str(meta["d_model"] // meta["heads"]), "--seq", str(meta["seq"]),
            "--counted-flops-per-step", str(meta["flop_counter_flops_per_step"])]
    payload = _json(capsys, argv)
    assert payload["step_time_s"] == pytest.approx(meta["step_time_median_s"], rel=1e-12)
    ratio = payload["model_flops_per_step"] / meta["flop_counter_flops_per_step"]
    assert abs(ratio - 1) < 0.05
    assert payload["warnings"] == []
    assert 0.44 < payload["mfu"] < 0.46


GPT2 = ["mfu", "--preset", "GPT-2 124M", "--micro-batch", "12", "--grad-accum", "40",
        "--peak-flops", "312e12"]


@pytest.mark.parametrize("extra", [[], ["--recompute-dense", "0.75"], ["--recompute-attention", "1"]])
def test_custom_recompute_requires_both_fractions(capsys, extra: list[str]) -> None:
    assert main([*GPT2, "--step-time", "4.2", "--recompute", "custom", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--recompute-dense" in err and "--recompute-attention" in err


def test_custom_recompute_with_both_fractions_and_fractions_without_custom(capsys) -> None:
    payload = _json(capsys, [*GPT2, "--step-time", "4.2", "--recompute", "custom",
                             "--recompute-dense", "0.75", "--recompute-attention", "1"])
    assert payload["recompute"] == "custom" and payload["hfu"] > payload["mfu"]
    assert main([*GPT2, "--step-time", "4.2", "--recompute-dense", "0.5"]) == 2
    assert "only with --recompute custom" in capsys.readouterr().err


def test_counted_flops_far_below_the_model_flops_warn(capsys) -> None:
    payload = _json(capsys, [*GPT2, "--step-time", "4.2", "--counted-flops-per-step", "1e10"])
    assert "counted_flops_low" in payload["warning_codes"]
    assert main([*GPT2, "--step-time", "4.2", "--counted-flops-per-step", "1e10"]) == 0
    assert "tokens per step or N may be too large" in capsys.readouterr().out


def test_text_output_has_the_spread_and_the_warmup_dropped(capsys) -> None:
    assert main([*GPT2, "--step-times", "9,4.2,4.1,4.3"]) == 0
    out = capsys.readouterr().out
    assert "1 warm-up dropped" in out and "range 4.1 s–4.3 s" in out


def test_step_time_error_names_the_unit(capsys) -> None:
    assert main(["mfu", "--params", "1e9", "--tokens-per-step", "1", "--step-time", "0",
                 "--peak-flops", "1e12"]) == 2
    assert capsys.readouterr().err.strip().endswith("step time must be positive (seconds)")
