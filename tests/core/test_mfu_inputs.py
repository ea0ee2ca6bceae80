"""core/mfu_inputs: the one input model of the tab and the CLI, example runs, trace runs, limits."""
from __future__ import annotations

import pytest

from gpuperf_gui.core import mfu
from gpuperf_gui.core.mfu_inputs import MfuForm, TraceRun, build_inputs, evaluate, example_form
from gpuperf_gui.core.model_presets import EXAMPLE_RUNS, PRESETS, ConfigError, config_from_hf
from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures

GPT2 = dict(preset="GPT-2 124M", micro_batch=20, grad_accum=5, seq_len=1024, step_times_s=(0.755,),
            device_id="a100-sxm-40gb")


def test_every_preset_has_a_cited_example_run() -> None:
    assert set(EXAMPLE_RUNS) == set(PRESETS)
    for name, run in EXAMPLE_RUNS.items():
        assert run.source and (run.device_id or run.peak_flops_per_s), name
        assert sum(x is not None for x in (run.step_time_s, run.achieved_flops_per_s_per_gpu,
                                           run.published_mfu)) == 1, name


def test_gpt2_example_reproduces_the_nanogpt_notebook() -> None:
    # transformer_sizing.ipynb: 100 sequences of 1024 in 0.755 s on an A100: 37.14 % of 312 TFLOP/s
    # for the bias-free model; nanoGPT's own PaLM count with biases (N = 123,653,376 non-embedding):
    per_token = 6 * 123_653_376 + 12 * 12 * 12 * 64 * 1024
    result = evaluate(example_form("GPT-2 124M"))
    assert result.mfu == pytest.approx(per_token * 102_400 / 0.755 / 312e12, rel=1e-12)
    assert result.mfu == pytest.approx(0.3714, abs=0.002)


def test_n_given_attention_shape_from_d_model_or_head_dim_is_the_same() -> None:
    common = dict(n_params=1e9, tokens_per_step=1e6, step_times_s=(1.0,), peak_flops_per_s=1e15,
                  layers=24, heads=16, seq_len=2048)
    a = build_inputs(MfuForm(**common, d_model=2048))
    b = build_inputs(MfuForm(**common, head_dim=128))
    assert a.attention == b.attention == mfu.AttentionShape(24, 16, 128, 2048)
    with pytest.raises(mfu.MfuInputError, match="divisible"):
        build_inputs(MfuForm(**common, d_model=2050))
    with pytest.raises(mfu.MfuInputError, match="attention") as info:
        build_inputs(MfuForm(**{**common, "heads": None}, attention=True))
    assert info.value.field == "heads"


def test_one_of_preset_or_config_and_n_beside_one_is_checked_against_it() -> None:
    from gpuperf_gui.core.model_presets import get_preset
    with pytest.raises(mfu.MfuInputError, match="one of"):
        build_inputs(MfuForm(**GPT2, config=get_preset("GPT-2 124M")))
    beside = build_inputs(MfuForm(**GPT2, n_params=1e8))  # N given, the shape from the preset
    assert beside.n_params == 1e8 and beside.attention is not None
    assert beside.config_n_params == build_inputs(MfuForm(**GPT2)).n_params
    with pytest.raises(mfu.MfuInputError, match="model size is missing"):
        build_inputs(MfuForm(tokens_per_step=1, step_times_s=(1,), peak_flops_per_s=1e15))


@pytest.mark.parametrize(("change", "field_name"), [
    (dict(step_times_s=(1e-320,)), "step_time_s"), (dict(step_times_s=(float("inf"),)), "step_time_s"),
    (dict(gpus=10**29), "gpus"), (dict(micro_batch=10**12), "micro_batch"),
    (dict(peak_flops_per_s=1e30, device_id=None), "peak"), (dict(train_tokens=-1.0), "train_tokens"),
    (dict(seq_len=10**10), "seq_len"),
])
def test_limits_name_the_field(change: dict, field_name: str) -> None:
    with pytest.raises((mfu.MfuInputError, ConfigError)) as info:
        build_inputs(MfuForm(**{**GPT2, **change}))
    assert info.value.field == field_name


def test_over_100_percent_is_an_explained_error() -> None:
    # 102,400 tokens of GPT-2 in 0.755 s is 37 %; in 0.1 s on one A100 it would be 281 %.
    with pytest.raises(mfu.ImplausibleMfuError) as info:
        evaluate(MfuForm(**{**GPT2, "step_times_s": (0.1,)}))
    message = str(info.value)
    assert "impossible" in message and "tokens per step ≤" in message and "step time ≥" in message
    assert info.value.field == "tokens_per_step"
    traced = MfuForm(**{**GPT2, "step_times_s": (0.1,), "step_time_source": "trace"})
    with pytest.raises(mfu.ImplausibleMfuError, match="come from the trace"):
        evaluate(traced)


def _figures(**changes: object) -> TraceMfuFigures:
    base = dict(step_time_s=0.06, exposed_comm=0.0, data_stall=0.0, launch_gaps=0.01,
                pipeline_bubble=0.0, memory_bound=0.3, source="t.json", world_size=None,
                device_name="NVIDIA H200", ranks_loaded=1)
    return TraceMfuFigures(**{**base, **changes})  # type: ignore[arg-type]


def test_trace_run_gpus_follow_the_world_size_else_the_ranks_loaded() -> None:
    assert TraceRun.from_figures(_figures(world_size=8, ranks_loaded=2)).gpus == 8
    one = TraceRun.from_figures(_figures())
    assert (one.gpus, one.gpus_source) == (1, "ranks loaded") and "no world size" in one.describe()
    assert TraceRun.from_figures(_figures(ranks_loaded=4)).gpus == 4


def test_profiled_step_time_warns_and_a_known_overhead_is_reported() -> None:
    traced = evaluate(MfuForm(**{**GPT2, "step_time_source": "trace"}))
    assert {w.code for w in traced.warnings} == {"profiled_step_time"}
    given = evaluate(MfuForm(**{**GPT2, "trace_step_time_s": 0.755 * 1.1}))
    assert given.inputs.profiler_overhead == pytest.approx(0.1)
    assert "+10.0%" in given.warnings[0].message


def test_hf_config_values_must_be_whole_numbers_in_range() -> None:
    good = {"hidden_size": 4096, "intermediate_size": 14336.0, "max_position_embeddings": 8192,
            "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 128256}
    assert config_from_hf(good).ffn_size == 14336
    for key, value in (("intermediate_size", float("inf")), ("hidden_size", "abc"),
                       ("num_hidden_layers", 10**9), ("vocab_size", True)):
        with pytest.raises(ConfigError) as info:
            config_from_hf({**good, key: value})
        assert info.value.field == key and key in str(info.value)
