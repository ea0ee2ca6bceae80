"""MFU calculator: every figure here can be checked against a published source (named at each test)."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuperf_gui.core import mfu, mfu_gap, units
from gpuperf_gui.core.hardware import load_database
from gpuperf_gui.core.model_presets import ModelConfig, count_params, get_preset, preset_names

# ---------------------------------------------------------------------------------------------
# Parameter counts from published configurations


def test_gpt2_124m_count_matches_nanogpt() -> None:
    # nanoGPT GPT.from_pretrained("gpt2"): 124,439,808 parameters (vocab 50257, tied);
    # get_num_params(non_embedding=True) subtracts wpe only and prints "123.65M".
    counts = count_params(get_preset("GPT-2 124M"))
    assert counts.total == 124_439_808
    assert counts.flops_params(exclude_embeddings=True) == 123_653_376
    assert counts.flops_params(exclude_embeddings=False) == 124_439_808


def test_nanogpt_training_config_count() -> None:
    # nanoGPT train.py from scratch pads the vocabulary to 50304: "number of parameters: 123.69M".
    counts = count_params(get_preset("GPT-2 124M", vocab_size=50304))
    assert counts.flops_params() == 123_689_472


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [
        ("Llama-3 8B", 8_030_261_248, 8_030_261_248),  # HF model card: 8.03B
        ("Llama-3 70B", 70_553_706_496, 70_553_706_496),  # 70.6B
        ("Mixtral 8x7B", 46_702_792_704, 12_879_925_248),  # Mistral: 46.7B total, 12.9B active
    ],
)
def test_preset_counts(name: str, total: int, active: int) -> None:
    counts = count_params(get_preset(name))
    assert (counts.total, counts.active) == (total, active)


def test_published_headline_sizes() -> None:
    sizes = {n: count_params(get_preset(n)).total for n in preset_names()}
    # published figures are rounded: compare to half a unit of their last digit
    assert sizes["Llama-3 8B"] == pytest.approx(8.03e9, abs=0.005e9)
    assert sizes["Llama-3 70B"] == pytest.approx(70.6e9, abs=0.05e9)
    assert sizes["Mixtral 8x7B"] == pytest.approx(46.7e9, abs=0.05e9)
    assert count_params(get_preset("Mixtral 8x7B")).active == pytest.approx(12.9e9, abs=0.05e9)
    assert sizes["GPT-3 175B"] == pytest.approx(175e9, rel=0.01)
    # PaLM App. B: N = 540.35B; ours is 540.356B (its 2.2M layer-norm weights move the last digit)
    assert sizes["PaLM 540B"] == pytest.approx(540.35e9, abs=0.01e9)


def test_gqa_shrinks_kv_projections() -> None:
    mha = count_params(get_preset("Llama-3 8B", kv_heads=None)).attention_per_layer
    gqa = count_params(get_preset("Llama-3 8B")).attention_per_layer
    assert mha - gqa == 2 * 4096 * (4096 - 1024)


def test_invalid_config_raises() -> None:
    with pytest.raises(ValueError, match="kv_heads"):
        count_params(get_preset("Llama-3 8B", kv_heads=5))
    with pytest.raises(KeyError, match="known"):
        get_preset("GPT-5")


# The run recorded in tests/data/shared_traces/h200/healthy_gpt_small.meta.json (GPT, 1× H200, bf16 autocast)
HEALTHY = ModelConfig(
    name="healthy_gpt_small", layers=6, d_model=1536, heads=12, vocab_size=50304, seq_len=1024,
    learned_positions=True, bias=True, norm="layernorm",  # untied LM head
)
TINY = replace(HEALTHY, name="launch_bound_tiny", layers=8, d_model=128, heads=4, vocab_size=256, seq_len=32)


def test_trace_models_counts_match_meta() -> None:
    assert count_params(HEALTHY).total == 326_098_944
    assert count_params(HEALTHY).flops_params() == 247_259_136  # meta "n_params_nonembed"
    assert count_params(TINY).total == 1_656_064
    assert count_params(TINY).flops_params() == 1_619_200


# ---------------------------------------------------------------------------------------------
# Published MFU figures


def _palm(**changes: object) -> mfu.MfuInputs:
    # PaLM 540B (Chowdhery et al. 2022, App. B): 238.3k tokens/s on 6144 TPU v4 chips of 275 TFLOP/s.
    base = mfu.MfuInputs(
        n_params=540.35e9, tokens_per_step=238.3e3, step_time_s=1.0, gpus=6144,
        peak=mfu.explicit_peak(275e12), attention=mfu.AttentionShape(118, 48, 256, 2048),
    )
    return replace(base, **changes)


def test_palm_mfu_with_and_without_attention() -> None:
    result = mfu.compute_mfu(_palm())
    assert round(result.mfu * 100, 1) == 46.2
    assert round(mfu.compute_mfu(_palm(attention=None)).mfu * 100, 1) == 45.7
    assert result.model_flops_per_token == pytest.approx(3.28e12, rel=2e-3)
    assert result.warnings == ()


def test_palm_hfu_with_its_rematerialization() -> None:
    # PaLM recomputes ~75 % of the non-attention forward and all of attention: 4.10 vs 3.28 TFLOP/token.
    result = mfu.compute_mfu(_palm(recompute=mfu.Recompute.of("custom", 0.75, 1.0)))
    assert result.hardware_flops_per_token == pytest.approx(4.10e12, rel=1e-3)
    assert round(result.hfu * 100, 1) == 57.8
    assert result.warnings == ()


def test_full_recompute_is_eight_sixths() -> None:
    for attention in (None, mfu.AttentionShape(118, 48, 256, 2048)):
        result = mfu.compute_mfu(_palm(attention=attention, recompute=mfu.Recompute.of("full")))
        assert result.hfu == pytest.approx(8 / 6 * result.mfu, rel=1e-12)


def _nanogpt_estimate_mfu(n_params: int, cfg: ModelConfig, fwdbwd_per_iter: int, dt: float) -> float:
    """karpathy/nanoGPT model.py estimate_mfu (commit 3adf61e), verbatim but for the config access."""
    N = n_params
    L, H, Q, T = cfg.layers, cfg.heads, cfg.d_model // cfg.heads, cfg.seq_len
    flops_per_token = 6 * N + 12 * L * H * Q * T
    flops_per_fwdbwd = flops_per_token * T
    flops_per_iter = flops_per_fwdbwd * fwdbwd_per_iter
    flops_achieved = flops_per_iter * (1.0 / dt)
    flops_promised = 312e12
    return flops_achieved / flops_promised


def test_nanogpt_formula_on_its_gpt2_configuration() -> None:
    # train.py defaults: batch 12 × grad-accum 40 sequences of 1024 per iteration, A100 bf16 peak.
    config = get_preset("GPT-2 124M", vocab_size=50304)
    n, _note = mfu.n_params_from_config(config)
    dt = 4.2
    expected = _nanogpt_estimate_mfu(int(n), config, 12 * 40, dt)
    result = mfu.compute_mfu(mfu.MfuInputs(
        n_params=n, tokens_per_step=mfu.tokens_per_step(12, 1024, 40), step_time_s=dt,
        peak=mfu.explicit_peak(312e12), attention=mfu.AttentionShape.from_config(config),
    ))
    assert result.mfu == pytest.approx(expected, rel=1e-12)


def test_nanogpt_transformer_sizing_palm_flops() -> None:
    # nanoGPT transformer_sizing.ipynb (GPT-2 124M without biases): palm_flops 875062886400 per sequence.
    config = get_preset("GPT-2 124M", bias=False)
    n, _ = mfu.n_params_from_config(config)
    per_sequence = mfu.model_flops_per_token(n, mfu.AttentionShape.from_config(config)) * 1024
    assert per_sequence == 875_062_886_400


def test_causal_halving_halves_attention_only() -> None:
    shape = mfu.AttentionShape(12, 12, 64, 1024)
    full = mfu.model_flops_per_token(1e8, shape)
    causal = mfu.model_flops_per_token(1e8, shape, causal=True)
    assert full - 6e8 == 12 * shape.lhqt
    assert causal - 6e8 == 6 * shape.lhqt


# ---------------------------------------------------------------------------------------------
# A real run: healthy_gpt_small on one H200


META_HEALTHY = {  # the numbers of tests/data/shared_traces/h200/healthy_gpt_small.meta.json
    "tokens_per_step": 16384, "n_params": 326_098_944, "step_time_median_s": 0.05913038999999998,
    "flop_counter_flops_per_step": 26_459_146_027_008, "six_n_d_flops_per_step": 32_056_830_590_976,
}


def test_flop_counter_mode_count_is_reproduced_exactly() -> None:
    # FlopCounterMode counts GEMM weights only (6 × weights incl. the untied LM head) and SDPA as
    # 2 forward + 5 backward matmuls (the flash backward recomputes QKᵀ): 14·L·H·Q·T, not 12.
    assert mfu.flop_counter_flops_per_step(HEALTHY, 16384) == META_HEALTHY["flop_counter_flops_per_step"]
    assert mfu.flop_counter_flops_per_step(TINY, 128) == 1_291_845_632  # launch_bound_tiny.meta.json


def test_tool_flops_within_5pct_of_flop_counter() -> None:
    n, _ = mfu.n_params_from_config(HEALTHY, exclude_embeddings=True)
    flops = mfu.model_flops_per_token(n, mfu.AttentionShape.from_config(HEALTHY)) * 16384
    ratio = flops / META_HEALTHY["flop_counter_flops_per_step"]
    # 1.1 % low: the counter adds FlashAttention's backward recompute (2·L·H·Q·T per token) and
    # ignores biases/norms (which 6·N counts); both are small next to the GEMMs.
    assert ratio == pytest.approx(0.9888, abs=5e-4)
    assert abs(ratio - 1) < 0.05


def test_mfu_of_the_recorded_run_matches_6nd() -> None:
    h200 = load_database().get("h200")
    inputs = mfu.MfuInputs(
        n_params=META_HEALTHY["n_params"], tokens_per_step=16384,
        step_time_s=META_HEALTHY["step_time_median_s"], peak=mfu.peak_from_device(h200, "bf16"),
    )
    result = mfu.compute_mfu(inputs)
    assert result.model_flops_per_step == META_HEALTHY["six_n_d_flops_per_step"]
    six_nd_mfu = 6 * 326_098_944 * 16384 / 0.05913038999999998 / 989.4e12
    assert result.mfu == pytest.approx(six_nd_mfu, rel=1e-12)
    assert 0.54 < result.mfu < 0.56
    assert result.warnings == ()


def test_meta_files_agree(shared_traces) -> None:
    meta = json.loads((shared_traces / "h200" / "healthy_gpt_small.meta.json").read_text())
    for key, value in META_HEALTHY.items():
        assert meta[key] == value
    stats = mfu.summarize_step_times(meta["step_times_s"], warmup_steps=0)
    assert stats.median_s == pytest.approx(meta["step_time_median_s"], rel=1e-12)
    assert count_params(HEALTHY).flops_params() == meta["n_params_nonembed"]


# ---------------------------------------------------------------------------------------------
# Tokens, step times, peak, ceiling


def test_tokens_per_step() -> None:
    assert mfu.tokens_per_step(16, 1024, 4, 8) == 16 * 1024 * 4 * 8
    with pytest.raises(mfu.MfuInputError) as info:
        mfu.tokens_per_step(0, 1024)
    assert info.value.field == "micro_batch"


def test_step_time_stats_drop_warmup() -> None:
    stats = mfu.summarize_step_times([3.0, 1.0, 1.1, 0.9, 1.0])
    assert stats.n_dropped == 1 and stats.n_used == 4
    assert stats.median_s == 1.0
    assert stats.relative_spread == pytest.approx(0.2)
    assert mfu.summarize_step_times([1.0, 2.0]).n_dropped == 0  # too few to drop by default
    with pytest.raises(mfu.MfuInputError):
        mfu.summarize_step_times([1.0, -1.0])
    with pytest.raises(mfu.MfuInputError):
        mfu.summarize_step_times([1.0], warmup_steps=1)


def test_peak_from_database_is_dense() -> None:
    h100 = load_database().get("h100-sxm")
    peak = mfu.peak_from_device(h100, "bf16")
    assert peak.flops_per_s_per_gpu == pytest.approx(989.4e12, rel=1e-3)
    assert not peak.sparse and "dense" in peak.source
    with pytest.raises(mfu.MfuInputError):
        mfu.resolve_peak(load_database().get("t4"), "bf16")  # Turing has no bf16


def test_ceiling_model_default_and_validation() -> None:
    assert mfu.CeilingModel().ceiling == pytest.approx(0.705)
    with pytest.raises(mfu.MfuInputError, match="100 %"):
        mfu.CeilingModel(gemm_time_fraction=0.9).validate()


def test_input_errors_name_the_field() -> None:
    with pytest.raises(mfu.MfuInputError) as info:
        mfu.compute_mfu(_palm(step_time_s=0.0))
    assert info.value.field == "step_time_s"


# ---------------------------------------------------------------------------------------------
# Gap breakdown, pipeline bubble, Amdahl


def test_pipeline_bubble() -> None:
    # Narayanan et al. 2021 §2.2: (p−1)/(m+p−1); interleaved with v chunks: (p−1)/(v·m + p − 1).
    assert mfu_gap.pipeline_bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert mfu_gap.pipeline_bubble_fraction(4, 8, 2) == pytest.approx(3 / 19)
    assert mfu_gap.pipeline_bubble_fraction(1, 8) == 0.0


def test_gap_breakdown_adds_up_and_unexplained_shrinks() -> None:
    empty = mfu_gap.gap_breakdown(0.40, 0.50, mfu_gap.GapCauses())
    assert empty.unexplained == pytest.approx(0.50)  # 1 − MFU − recompute (0.10)
    filled = mfu_gap.gap_breakdown(0.40, 0.50, mfu_gap.GapCauses(exposed_comm=0.1, data_stall=0.05, memory_bound=0.2))
    assert filled.unexplained == pytest.approx(0.50 - 0.1 - 0.05 - 0.2 * 0.9)
    assert filled.message is None
    assert sum(s.fraction for s in filled.display_slices()) == pytest.approx(1.0)


def test_gap_breakdown_over_attributed_says_so() -> None:
    over = mfu_gap.gap_breakdown(0.60, 0.60, mfu_gap.GapCauses(exposed_comm=0.3, data_stall=0.3))
    assert over.unexplained == 0.0
    assert over.over_attributed == pytest.approx(0.2)
    assert over.message and "over-attributed" in over.message.lower()
    slices = over.display_slices()
    assert all(s.fraction >= 0 for s in slices)
    assert sum(s.fraction for s in slices) == pytest.approx(1.0)


def test_amdahl() -> None:
    # 100 ms step, a 10 ms part made 2× faster → 95 ms: 1.0526× (about 5 % faster); bound 1/(1−p).
    result = mfu_gap.amdahl(0.10, 2.0, total_time_s=0.100)
    assert result.overall_speedup == pytest.approx(1 / 0.95)
    assert result.new_time_s == pytest.approx(0.095)
    assert result.bound_speedup == pytest.approx(1 / 0.9)
    assert round((result.overall_speedup - 1) * 100, 1) == 5.3
    assert math.isinf(mfu_gap.amdahl(1.0, 2.0).bound_speedup)


# ---------------------------------------------------------------------------------------------
# The checks: each fires on its case and stays silent on a sound input


def _codes(result: mfu.MfuResult) -> set[str]:
    return {w.code for w in result.warnings}


def test_sparse_peak_warning() -> None:
    h200 = load_database().get("h200")
    sparse = mfu.explicit_peak(1979e12, h200, "bf16")  # the datasheet "with sparsity" figure
    assert sparse.sparse
    assert "sparse_peak" in _codes(mfu.compute_mfu(_palm(peak=sparse, gpus=1, tokens_per_step=1e3)))
    dense = mfu.explicit_peak(989.4e12, h200, "bf16")
    assert not dense.sparse
    assert "sparse_peak" not in _codes(mfu.compute_mfu(_palm(peak=dense, gpus=1, tokens_per_step=1e3)))


def test_precision_mismatch_warning() -> None:
    h100 = load_database().get("h100-sxm")
    base = _palm(peak=mfu.peak_from_device(h100, "bf16"), gpus=1024)
    fp8 = replace(base, training_precision="fp8",
                  training_precision_peak_flops_per_s=mfu.training_precision_peak(h100, "fp8"))
    result = mfu.compute_mfu(fp8)
    assert _codes(result) == {"precision_mismatch"}
    assert "overstated" in result.warnings[0].message
    assert _codes(mfu.compute_mfu(replace(base, training_precision="bf16"))) == set()


def test_recompute_counted_as_useful_warning() -> None:
    sound = _palm(recompute=mfu.Recompute.of("full"))  # MFU 46 %, HFU 62 %: plausible
    assert _codes(mfu.compute_mfu(sound)) == set()
    inflated = replace(sound, tokens_per_step=238.3e3 * 0.60 / 0.462)  # MFU 60 % → HFU 80 %
    assert _codes(mfu.compute_mfu(inflated)) == {"recompute_counted_as_useful"}
    counted = _palm(counted_flops_per_step=8 / 6 * mfu.compute_mfu(_palm()).model_flops_per_step)
    assert _codes(mfu.compute_mfu(counted)) == {"recompute_counted_as_useful"}


def test_step_warnings() -> None:
    one = mfu.summarize_step_times([1.0])
    assert _codes(mfu.compute_mfu(_palm(step_stats=one))) == {"single_step"}
    with_warmup = mfu.summarize_step_times([3.0, 1.0, 1.0, 1.0], warmup_steps=0)
    assert _codes(mfu.compute_mfu(_palm(step_stats=with_warmup))) == {"warmup_included"}
    dropped = mfu.summarize_step_times([3.0, 1.0, 1.0, 1.0])
    assert _codes(mfu.compute_mfu(_palm(step_stats=dropped))) == set()


def test_microbatch_vs_accumulated_step_warnings() -> None:
    impossible = mfu.compute_mfu(_palm(tokens_per_step=238.3e3 * 4))  # 4 accumulated micro-batches
    assert _codes(impossible) == {"mfu_above_100"}
    assert impossible.warnings[0].severity == "error"
    far = mfu.compute_mfu(_palm(tokens_per_step=238.3e3 * 1.9))  # MFU 88 %
    assert _codes(far) == {"mfu_above_ceiling"}


@given(
    n=st.floats(1e6, 1e12), tokens=st.floats(1e3, 1e8), seconds=st.floats(1e-3, 1e3),
    kind=st.sampled_from(mfu.RECOMPUTE_KINDS), dense=st.floats(0, 1), attention=st.floats(0, 1),
    causal=st.booleans(),
)
def test_hfu_never_below_mfu(n, tokens, seconds, kind, dense, attention, causal) -> None:
    result = mfu.compute_mfu(mfu.MfuInputs(
        n_params=n, tokens_per_step=tokens, step_time_s=seconds, peak=mfu.explicit_peak(1e15),
        attention=mfu.AttentionShape(24, 16, 128, 4096), causal=causal,
        recompute=mfu.Recompute.of(kind, dense, attention),
    ))
    assert result.hfu >= result.mfu


def test_json_keys_and_convention() -> None:
    payload = mfu.compute_mfu(_palm()).to_json_dict()
    for key in ("mfu", "hfu", "model_flops_per_step", "achieved_flops_per_s_per_gpu",
                "peak_flops_per_s_per_gpu", "tokens_per_s", "warnings", "convention"):
        assert key in payload
    assert "12·L·H·Q·T" in payload["convention"]
    json.dumps(payload, allow_nan=False)
    text = mfu.compute_mfu(_palm(attention=None)).to_text()
    assert "6·N per token" in text and "46." not in text.splitlines()[0]


def test_parse_quantity() -> None:
    assert units.parse_quantity("124M") == 124e6
    assert units.parse_quantity("1.5B") == 1.5e9
    assert units.parse_quantity("16_384") == 16384
    assert units.parse_quantity("989.4T") == pytest.approx(989.4e12)
    assert units.parse_quantity_list("0.2, 0.21;0.19 0.2") == [0.2, 0.21, 0.19, 0.2]
    for bad in ("", "abc", "1..2", "nan", "inf"):
        with pytest.raises(ValueError):
            units.parse_quantity(bad)


def test_config_from_hugging_face_config_json() -> None:
    from gpuperf_gui.core.model_presets import config_from_hf

    llama = {"hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
             "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 8, "tie_word_embeddings": False, "vocab_size": 128256}
    assert count_params(config_from_hf(llama)).total == 8_030_261_248
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
            "vocab_size": 50257}
    assert count_params(config_from_hf(gpt2)).total == 124_439_808
    mixtral = {**llama, "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
               "max_position_embeddings": 32768}
    assert count_params(config_from_hf(mixtral)).active == 12_879_925_248
    with pytest.raises(ValueError, match="vocab_size"):
        config_from_hf({k: v for k, v in llama.items() if k != "vocab_size"})


# ---------------------------------------------------------------------------------------------
# QA fixes: custom recompute needs its fractions, a low counted-FLOPs ratio, plain messages


def test_custom_recompute_needs_both_fractions() -> None:
    for args in ((), (0.75,), (None, 1.0)):
        with pytest.raises(mfu.MfuInputError, match="custom recompute needs both") as info:
            mfu.Recompute.of("custom", *args)
        assert info.value.field == "recompute"
    assert mfu.Recompute.of("custom", 0.0, 0.0).kind == "custom"  # explicit zeros are a choice
    assert mfu.Recompute.of("none", None, None) == mfu.Recompute()


def test_counted_flops_far_below_the_model_flops_warns() -> None:
    model = mfu.compute_mfu(_palm()).model_flops_per_step
    low = mfu.compute_mfu(_palm(counted_flops_per_step=0.5 * model))
    assert _codes(low) == {"counted_flops_low"}
    assert "far below 6·N·tokens: tokens per step or N may be too large" in low.warnings[0].message
    assert _codes(mfu.compute_mfu(_palm(counted_flops_per_step=0.85 * model))) == set()
    assert _codes(mfu.compute_mfu(_palm(counted_flops_per_step=model))) == set()


def test_positive_input_messages_name_the_unit() -> None:
    with pytest.raises(mfu.MfuInputError, match=r"^step time must be positive \(seconds\)$"):
        mfu.compute_mfu(_palm(step_time_s=0.0))
    with pytest.raises(mfu.MfuInputError, match="^tokens per step must be positive$"):
        mfu.compute_mfu(_palm(tokens_per_step=-1.0))


def test_text_report_gives_the_spread_and_the_warmup_dropped() -> None:
    stats = mfu.summarize_step_times([3.0, 1.0, 1.1, 0.9])
    text = mfu.compute_mfu(_palm(step_stats=stats)).to_text()
    assert "1 warm-up dropped" in text and "range 900 ms–1.1 s" in text
    assert "median of 3 steps" in mfu.compute_mfu(_palm(step_stats=stats)).to_markdown()


def test_step_time_slices_show_the_causes_of_the_step() -> None:
    causes = mfu_gap.GapCauses(exposed_comm=0.4, data_stall=0.1, memory_bound=0.2)
    slices = {s.key: s.fraction for s in mfu_gap.step_time_slices(causes)}
    assert slices == pytest.approx({"exposed_comm": 0.4, "data_stall": 0.1, "memory_bound": 0.2,
                                    mfu_gap.REST_OF_STEP: 0.3})
    over = mfu_gap.step_time_slices(mfu_gap.GapCauses(exposed_comm=0.9, launch_gaps=0.6))
    assert sum(s.fraction for s in over) == pytest.approx(1.0)
    assert all(s.fraction >= 0 for s in over)


def test_fraction_of_ceiling_and_hfu_over_mfu_are_computed_in_core() -> None:
    # PaLM App. B by hand: (6·N + 12·L·H·Q·T) FLOP/token × 238.3k tokens/s over 6144 × 275 TFLOP/s
    mfu_by_hand = (6 * 540.35e9 + 12 * 118 * 48 * 256 * 2048) * 238.3e3 / (6144 * 275e12)  # 0.4623
    result = mfu.compute_mfu(_palm(recompute=mfu.Recompute.of("full")))
    assert result.mfu == pytest.approx(mfu_by_hand, rel=1e-9)
    # full recompute adds one forward (2 of the 6): HFU/MFU = 8/6, and the 70.5 % HFU ceiling of the
    # default ceiling model is 70.5 % × 6/8 = 52.875 % in MFU terms
    assert result.hfu_over_mfu == pytest.approx(8 / 6)
    assert result.mfu_ceiling == pytest.approx(0.705 * 6 / 8)
    assert result.fraction_of_ceiling == pytest.approx(mfu_by_hand / (0.705 * 6 / 8))  # 0.874
    no_ceiling = mfu.CeilingModel(gemm_efficiency=0.0, memory_efficiency=0.0, idle_efficiency=0.0)
    zero = mfu.compute_mfu(_palm(ceiling=no_ceiling))  # a ceiling model of 0: no ZeroDivisionError
    assert zero.mfu_ceiling == 0.0 and zero.fraction_of_ceiling is None
    assert zero.hfu_over_mfu == pytest.approx(1.0)  # no recompute: HFU = MFU
    assert "0.0% HFU = 0.0% MFU" in zero.to_text()


def test_flop_rates_are_formatted_by_units_format_si() -> None:
    from gpuperf_gui.core.units import format_si

    # by hand: 3.2777e12 FLOP/token × 238.3k tokens = 7.811e17 FLOP a step; / 6144 GPUs = 1.271e14 FLOP/s
    rows = dict(mfu.compute_mfu(_palm())._rows())
    assert rows["Achieved per GPU"] == "127 TFLOP/s"
    assert rows["Model FLOPs per step"] == "781 PFLOP"
    assert format_si(1.2713e14, "FLOP/s") == "127 TFLOP/s"  # the one formatter makes these strings
    assert "peak = 275 TFLOP/s per GPU" in mfu.compute_mfu(_palm()).convention
    assert not hasattr(mfu, "format_quantity")
