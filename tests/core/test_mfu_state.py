"""The MFU tab's state and input rules without Qt (core/mfu_state.py): parsing, the marks, the
run's origin, what a new trace fills and resets."""

from __future__ import annotations

import pytest

from gpuperf_gui.core import mfu
from gpuperf_gui.core.hardware import load_database
from gpuperf_gui.core.mfu_state import (
    CONFIG_FIELDS,
    INVALID_MESSAGE,
    MISSING_MESSAGE,
    N_GIVEN,
    NO_MODEL,
    FieldError,
    MfuInputs,
    MfuState,
    error_input,
    trace_name,
)
from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures

# Llama-3 8B: 8,030,261,248 parameters (model card), the 128256 × 4096 input table excluded;
# attention 12·L·H·Q·T = 12·32·32·128·8192 per token. Its torchtitan example: 2,973 tokens/s per
# A100 (312 TFLOP/s dense bf16, datasheet).
LLAMA8_N = 8_030_261_248 - 128256 * 4096
LLAMA8_FLOPS_PER_TOKEN = 6 * LLAMA8_N + 12 * 32 * 32 * 128 * 8192
FIELDS = ("n_params", "layers", "d_model", "heads", "kv_heads", "head_dim", "ffn_size", "vocab_size", "experts",
          "top_k", "micro_batch", "seq_len", "grad_accum", "data_parallel", "tokens_per_step", "step_times",
          "peak_tflops", "recompute_dense", "recompute_attention", "counted_flops", "train_tokens", "price")


@pytest.fixture(scope="module")
def database():
    return load_database()


def example_inputs(state: MfuState, name: str = "Llama-3 8B", **changes: object) -> MfuInputs:
    """What the tab's widgets hold once preset ``name`` and its example run are chosen."""
    config = state.choose_preset(name)
    fill = state.example_run(name)
    texts = dict.fromkeys(FIELDS, "")
    texts.update({key: "" if getattr(config, key) is None else str(getattr(config, key)) for key in CONFIG_FIELDS},
                 train_tokens="10B", step_times=state.exact_text("step_times", fill.step_time_s), **fill.texts)
    texts.update(changes.pop("texts", {}))  # type: ignore[arg-type]
    values = dict(texts=texts, mode=name, device_id="h100-sxm", precision="bf16", gated_mlp=config.gated_mlp,
                  gpus=fill.gpus, recompute=fill.recompute, recompute_convention=next(iter(mfu.SELECTIVE_CONVENTIONS)))
    values.update(changes)
    return MfuInputs(**values)  # type: ignore[arg-type]


def figures(source: str = "/runs/a.json.gz", step_time_s: float | None = 0.5, **changes: object) -> TraceMfuFigures:
    return TraceMfuFigures(step_time_s=step_time_s, exposed_comm=0.1, data_stall=1.5, launch_gaps=-0.2,
                           pipeline_bubble=0.0, memory_bound=0.3, source=source, world_size=16, **changes)


def test_the_default_example_run_gives_its_published_mfu(database):
    state = MfuState()
    outcome = state.evaluate(example_inputs(state), database)
    assert outcome.errors == {} and outcome.message == ""
    assert outcome.result.mfu == pytest.approx(LLAMA8_FLOPS_PER_TOKEN * 2973 / 312e12, rel=1e-9)
    assert outcome.result.peak_flops_per_s_per_gpu == 312e12     # the example's A100, not the toolbar's H100
    assert outcome.breakdown is not None and state.waiting_for is None


def test_each_bad_field_is_named_with_its_reason(database):
    state = MfuState()
    inputs = example_inputs(state, texts={"layers": "1.5", "price": "-2", "d_model": "", "seq_len": "ten"})
    outcome = state.evaluate(inputs, database)
    assert outcome.result is None and outcome.message == INVALID_MESSAGE
    assert outcome.errors["layers"] == FieldError("must be a whole number")
    assert outcome.errors["price"] == FieldError("must be at least 0")
    assert outcome.errors["d_model"] == FieldError("required", needed=True)
    assert not outcome.errors["seq_len"].needed and set(outcome.errors) == {"layers", "price", "d_model", "seq_len"}


def test_only_missing_inputs_say_so_in_amber(database):
    state = MfuState()
    outcome = state.evaluate(example_inputs(state, direct_tokens=True, texts={"tokens_per_step": ""}), database)
    assert outcome.message == MISSING_MESSAGE and outcome.waiting
    assert outcome.errors == {"tokens_per_step": FieldError("required: the tokens per step of the run", needed=True)}
    assert state.waiting_for == MISSING_MESSAGE


def test_custom_recompute_takes_two_percentages(database):
    state = MfuState()
    bad = state.evaluate(example_inputs(state, recompute="custom", texts={"recompute_dense": "150",
                                                                         "recompute_attention": ""}), database)
    assert bad.errors == {"recompute_dense": FieldError("a percentage: 0 to 100"),
                          "recompute_attention": FieldError("required for custom recompute (% of that forward "
                                                            "recomputed)")}
    good = state.form(example_inputs(state, recompute="custom", texts={"recompute_dense": "75 %",
                                                                       "recompute_attention": "100"}))
    assert (good.recompute_dense, good.recompute_attention) == (0.75, 1.0)


def test_core_errors_mark_the_input_that_holds_them():
    assert error_input("step_time_s", direct_tokens=False) == "step_times"
    assert error_input("tokens_per_step", direct_tokens=False) == "micro_batch"   # the batch gives them
    assert error_input("tokens_per_step", direct_tokens=True) == "tokens_per_step"
    assert error_input("model", direct_tokens=True) == "n_params"


def test_no_model_chosen_for_a_trace_is_asked_for(database):
    state = MfuState()
    empty = state.evaluate(example_inputs(state, mode=NO_MODEL), database)
    assert empty.errors == {"n_params": FieldError("required: N of the run", needed=True)}
    assert empty.message == MISSING_MESSAGE
    typed = state.evaluate(example_inputs(state, mode=NO_MODEL, texts={"n_params": "7B"}), database)
    assert typed.errors["n_params"].needed and typed.message.startswith("choose the model")


def test_the_pipeline_bubble_from_stages_is_narayanans_formula():
    # (p − 1) / (v·m + p − 1), p = 4 stages, m = 16 micro-batches, v = 1: 3 / 19
    inputs = MfuInputs(texts={}, causes={"pipeline_bubble": 0.5}, stages=(4, 16, 1))
    assert inputs.gap_causes().pipeline_bubble == pytest.approx(3 / 19)
    assert inputs.entered_causes().pipeline_bubble == 0.5


def test_a_rounded_step_time_computes_exactly_until_edited():
    state = MfuState()
    assert state.exact_text("step_times", 0.1234567891) == "0.123457"
    assert state.step_times("0.123457") == (0.1234567891,)
    assert state.step_times("0.2, 0.3") == (0.2, 0.3)


def test_a_trace_over_the_example_resets_the_run_and_asks_for_the_model(database):
    state = MfuState()
    example_inputs(state)
    fill = state.take_trace(figures(), database)
    assert fill.reset_run and fill.ask_model and not fill.kept and not fill.clear_step_time
    assert fill.step_time_s == 0.5 and fill.run.gpus == 16 and fill.name == "a.json.gz"
    assert fill.fractions["data_stall"] == 1.0 and fill.fractions["launch_gaps"] == 0.0   # clamped to 0..1
    assert state.run_source == "trace" and state.example is None and state.from_trace == {"step_times"}


def test_the_users_model_is_kept_and_marked_as_the_earlier_traces(database):
    state = MfuState()
    example_inputs(state)
    state.run_edited("micro_batch")
    state.model_confirmed = True
    assert not state.take_trace(figures("/runs/a.json.gz"), database).reset_run   # typed by the user: kept
    second = state.take_trace(figures("/runs/b.json.gz", step_time_s=None), database)
    assert second.kept and not second.ask_model and second.clear_step_time   # a's step time says nothing of b
    assert state.earlier_trace == "a.json.gz"
    assert state.mark_earlier(["n_params", "seq_len", "gpus"]) == {"n_params", "seq_len"}
    assert state.clear_earlier("n_params") and state.earlier_trace == "a.json.gz"
    assert state.clear_earlier("seq_len") and state.earlier_trace is None   # every mark confirmed


def test_typing_a_run_figure_ends_the_example():
    state = MfuState()
    example_inputs(state)
    assert state.run_edited("step_times") and state.run_source == "user"
    assert not state.run_edited("gpus")


def test_a_trace_is_named_by_its_file():
    assert trace_name(figures("/runs/job/rank0.json.gz")) == "rank0.json.gz"
    assert trace_name(figures("4 ranks")) == "the loaded trace (4 ranks)"
    assert trace_name(object()) == "the loaded trace"


def test_n_given_directly_needs_n(database):
    state = MfuState()
    outcome = state.evaluate(example_inputs(state, mode=N_GIVEN), database)
    assert outcome.errors == {"n_params": FieldError("required: N of the run", needed=True)}


def test_the_choices_switch_their_inputs_on_and_off():
    used = MfuInputs(texts={}, direct_tokens=True, recompute="custom", stages=(4, 16, 1)).used_inputs()
    assert used["tokens_per_step"] and not used["micro_batch"] and not used["data_parallel"]
    assert used["recompute_dense"] and used["recompute_attention"]
    assert not used["pipeline_bubble"] and not used["peak_tflops"]   # the bubble comes from the stages
    default = MfuInputs(texts={}).used_inputs()
    assert not default["tokens_per_step"] and default["grad_accum"] and not default["recompute_dense"]
