"""`gpuperf mfu`: docs/cli.md's contract (keys, fractions, SI units), text output, errors."""
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


# ---------------------------------------------------------------------------------------------
# Every number bounded to what is physically meaningful (docs/cli.md); errors name the option or file


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


BASE = ["mfu", "--params", "1e9", "--tokens-per-step", "1e6", "--peak-flops", "1e15"]


def test_a_denormal_step_time_is_refused_not_a_traceback(capsys) -> None:
    err = _error(capsys, [*BASE, "--step-time", "1e-320", "--json"])
    assert "--step-time" in err and "step time must be within" in err


def test_a_gpu_count_beyond_any_cluster_is_refused(capsys) -> None:
    err = _error(capsys, [*BASE, "--step-time", "1", "--gpus", "1e29"])
    assert "--gpus" in err and "1e+29" in err


def test_an_mfu_of_6e77_percent_is_an_input_error(capsys) -> None:
    # 6·1e9·1e6 FLOPs per step in 1e-6 s on one 1e15 FLOP/s GPU: 6e6 × the peak.
    err = _error(capsys, ["mfu", "--params", "1e9", "--tokens-per-step", "1e6", "--peak-flops", "1e15",
                          "--step-time", "1e-6"])
    assert "impossible" in err and "tokens per step ≤" in err and "--tokens-per-step" in err


@pytest.mark.parametrize("value", ["1e400", '"abc"', "2.5", "true", "-4"])
def test_a_bad_config_value_names_the_file_and_the_key(capsys, tmp_path, value: str) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 4096, "intermediate_size": %s, "max_position_embeddings": 8192, '
                      '"num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 128256}' % value)
    err = _error(capsys, ["mfu", "--model-config", str(config), "--tokens-per-step", "4M",
                          "--step-time", "10", "--gpus", "64", "--gpu", "h100-sxm"])
    assert str(config) in err and "intermediate_size" in err


def test_a_non_numeric_hidden_size_names_the_file(capsys, tmp_path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": "abc", "max_position_embeddings": 8192, "num_attention_heads": 32, '
                      '"num_hidden_layers": 32, "vocab_size": 128256}')
    err = _error(capsys, ["mfu", "--model-config", str(config), "--tokens-per-step", "4M",
                          "--step-time", "10", "--gpu", "h100-sxm"])
    assert str(config) in err and "hidden_size" in err and "'abc'" in err


@pytest.mark.parametrize(("option", "value"), [("--params", "1e400"), ("--layers", "2.5"),
                                               ("--recompute-dense", "1.5")])
def test_unparseable_numbers_stop_in_argparse_with_the_option_named(capsys, option, value) -> None:
    with pytest.raises(SystemExit) as info:
        main([*BASE, "--step-time", "1", option, value])
    assert info.value.code == 2
    assert option in capsys.readouterr().err


def test_json_never_fails_on_huge_figures(capsys) -> None:
    payload = _json(capsys, ["mfu", "--params", "1e15", "--tokens-per-step", "1e11", "--step-time",
                             "1e7", "--gpus", "10000000", "--peak-flops", "1e18"])
    assert 0 < payload["mfu"] <= 1


# ---------------------------------------------------------------------------------------------
# --from-trace: step time and GPUs from the trace, model and tokens from the options

HEALTHY_NONEMBED_N = "247259136"  # healthy_gpt_small.meta.json "n_params_nonembed"


def test_from_trace_takes_step_time_and_gpus_and_warns_about_profiling(capsys, shared_traces) -> None:
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    meta = json.loads((shared_traces / "h200" / "healthy_gpt_small.meta.json").read_text())
    payload = _json(capsys, ["mfu", "--from-trace", str(path), "--params", HEALTHY_NONEMBED_N,
                             "--tokens-per-step", str(meta["tokens_per_step"])])
    assert payload["step_time_source"] == "trace" and payload["gpus"] == 1
    assert payload["gpus_source"] == "ranks loaded" and payload["trace"]["world_size"] is None
    # ProfilerStep#2..#4 are recorded (meta "profiled_active_steps": 3); the first is warm-up
    assert payload["trace"]["steady_steps"] == meta["profiled_active_steps"] - 1
    assert payload["peak_source"].startswith("h200")  # the trace's "NVIDIA H200"
    assert "profiled_step_time" in payload["warning_codes"]
    assert any("profiled steps run slower" in w for w in payload["warnings"])
    # the profiled median is slower than the unprofiled one the run recorded, by under 40 %
    assert meta["step_time_median_s"] < payload["step_time_s"] < 1.4 * meta["step_time_median_s"]
    assert payload["mfu"] == pytest.approx(6 * 247259136 * 16384 / payload["step_time_s"] / 989.4e12)


@pytest.mark.parametrize(("trace", "low", "high"), [("healthy_gpt_small", 0.04, 0.05),
                                                    ("launch_bound_tiny", 0.27, 0.29)])
def test_from_trace_with_the_unprofiled_step_time_reports_the_overhead(capsys, shared_traces, trace,
                                                                       low, high) -> None:
    # The meta files hold the median of 10 synchronized steps timed without the profiler; the
    # warning text quotes these two overheads (+4 %, +28 %).
    path = shared_traces / "h200" / f"{trace}.json.gz"
    meta = json.loads((shared_traces / "h200" / f"{trace}.meta.json").read_text())
    payload = _json(capsys, ["mfu", "--from-trace", str(path), "--params", "1e6",
                             "--tokens-per-step", str(meta["tokens_per_step"]),
                             "--step-time", str(meta["step_time_median_s"])])
    assert payload["step_time_source"] == "given"
    traced = payload["trace"]["step_time_s"]
    assert payload["profiler_overhead"] == pytest.approx(traced / meta["step_time_median_s"] - 1)
    assert low < payload["profiler_overhead"] < high and "profiler_overhead" in payload["warning_codes"]


def test_from_trace_without_a_model_size_is_an_error(capsys, shared_traces) -> None:
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    err = _error(capsys, ["mfu", "--from-trace", str(path), "--tokens-per-step", "16384"])
    assert "not the model" in err and "--params" in err
    err = _error(capsys, ["mfu", "--from-trace", str(path), "--params", "1e9"])
    assert "--tokens-per-step" in err


def test_from_trace_on_a_rank_folder_takes_the_world_size(capsys, tmp_path) -> None:
    from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

    for rank in range(2):
        write_synth_trace("comm_bound", tmp_path / f"rank{rank}.json", rank=rank, world_size=2, steps=6)
    payload = _json(capsys, ["mfu", "--from-trace", str(tmp_path), "--params", "1e6",
                             "--tokens-per-step", "1000", "--peak-flops", "1e15"])
    assert payload["gpus"] == 2 and payload["gpus_source"] == "world size"
    assert payload["trace"]["ranks_loaded"] == 2


def test_from_trace_on_a_file_that_is_no_trace_is_an_error(capsys, tmp_path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    err = _error(capsys, ["mfu", "--from-trace", str(bad), "--params", "1e9", "--tokens-per-step", "1"])
    assert "--from-trace" in err
