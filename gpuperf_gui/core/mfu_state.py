"""The MFU tab's state and input rules, without Qt: what it computes from what a person typed.

The tab (``views/mfu/tab.py``) reads its widgets into an :class:`MfuInputs` (texts, choices and
spin values, nothing parsed) and asks :meth:`MfuState.evaluate` for an :class:`MfuOutcome`: the
result and gap breakdown, or the errors to mark in place, keyed by input. The state remembers what
the widgets cannot say: where the run's figures come from (a preset's published example, the
user, a trace), which trace, which fields a trace filled or an earlier trace's model left, and
the exact step time behind a rounded text. A new trace is taken by :meth:`MfuState.take_trace`,
which says what to fill and what to reset (:class:`TraceFill`); the tab only writes it into widgets.

>>> state = MfuState()
>>> outcome = state.evaluate(inputs, database)            # doctest: +SKIP
>>> outcome.result.mfu if outcome.result else outcome.errors  # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import TYPE_CHECKING, Mapping

from gpuperf_gui.core import mfu, mfu_gap
from gpuperf_gui.core.mfu_inputs import MfuForm, TraceRun, evaluate, example_form
from gpuperf_gui.core.model_presets import (
    EXAMPLE_RUNS,
    ConfigError,
    ModelConfig,
    get_preset,
)
from gpuperf_gui.core.units import parse_quantity, parse_quantity_list

if TYPE_CHECKING:
    from gpuperf_gui.core.hardware import Device, DeviceDatabase
    from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures
    from gpuperf_gui.core.trace.analysis.kernel_roof import GemmRoof

N_GIVEN, CUSTOM_CONFIG = "N given directly", "Custom configuration"
NO_MODEL = "Choose the traced run's model…"
DEFAULT_PRESET = "Llama-3 8B"
MODEL_MODES = (N_GIVEN, CUSTOM_CONFIG, NO_MODEL)
"""The model choices that are not a preset."""
RECOMPUTE_FIELDS = ("recompute_dense", "recompute_attention")
TRACE_FRACTIONS = ("exposed_comm", "data_stall", "host_sync", "launch_gaps", "pipeline_bubble", "memory_bound")
RUN_FIELDS = ("micro_batch", "seq_len", "grad_accum", "data_parallel", "tokens_per_step", "step_times")
CONFIG_FIELDS = ("layers", "d_model", "heads", "kv_heads", "head_dim", "ffn_size", "vocab_size", "experts", "top_k")
EARLIER_TRACE_FIELDS = ("n_params", "tokens_per_step", "micro_batch", "seq_len", "grad_accum", "data_parallel")
"""What a person types about the run: kept for the next trace, but marked as the earlier one's."""
INTEGER_FIELDS = frozenset({*CONFIG_FIELDS, "micro_batch", "seq_len", "grad_accum", "data_parallel"})
OPTIONAL_FIELDS = frozenset({"kv_heads", "head_dim", "ffn_size", "experts", "top_k", "counted_flops",
                             "train_tokens", "price", "n_params", "tokens_per_step", "peak_tflops",
                             *RECOMPUTE_FIELDS})
NON_NEGATIVE_FIELDS = frozenset({"price", "train_tokens", *RECOMPUTE_FIELDS})
ERROR_ALIASES = {"step_time_s": "step_times", "warmup_steps": "step_times", "peak": "peak_tflops",
                 "seq": "seq_len", "model": "n_params"}
"""Core's error fields (``MfuInputError.field``, ``ConfigError.field``) to the inputs that hold them."""
MISSING_MESSAGE = "some inputs are missing: give the ones marked in amber"
INVALID_MESSAGE = "Fix the inputs marked in red."


@dataclass(frozen=True)
class FieldError:
    """Why an input is marked: red, or amber when ``needed`` (an input still to give, not a mistake)."""

    message: str
    needed: bool = False


class InvalidInputs(ValueError):
    """Inputs that do not parse; ``errors`` maps each to its :class:`FieldError`."""

    def __init__(self, errors: Mapping[str, FieldError]) -> None:
        super().__init__("; ".join(f"{k}: {e.message}" for k, e in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class MfuInputs:
    """What the MFU tab's widgets hold, unparsed: the number fields' texts and every choice.

    ``causes`` are the gap-cause spins as fractions (of the step, GEMMs: of peak); ``ceiling`` the
    ceiling model's fractions; ``stages``: (p, m, v) when the bubble comes from the pipeline's
    stages; ``warmup_steps`` -1: auto; ``device_id``/``precision``: the toolbar's."""

    texts: Mapping[str, str]
    mode: str = DEFAULT_PRESET
    device_id: str = ""
    precision: str = "bf16"
    attention: bool = True
    causal: bool = False
    exclude_embeddings: bool = True
    gated_mlp: bool = False
    tied_embeddings: bool = False
    bias: bool = False
    direct_tokens: bool = False
    explicit_peak: bool = False
    warmup_steps: int = -1
    gpus: int = 8
    training_precision: str = "same as peak"
    recompute: str = "selective"
    recompute_convention: str = ""
    ceiling: Mapping[str, float] = field(default_factory=dict)
    causes: Mapping[str, float] = field(default_factory=dict)
    stages: tuple[int, int, int] | None = None
    amdahl_share: float = 0.1
    amdahl_speedup: float = 2.0

    def entered_causes(self) -> mfu_gap.GapCauses:
        """The causes as typed (or filled from a trace)."""
        return mfu_gap.GapCauses(**self.causes)

    def gap_causes(self) -> mfu_gap.GapCauses:
        """The causes the breakdown uses: the pipeline bubble from the stages when asked."""
        values = dict(self.causes)
        if self.stages is not None:
            values["pipeline_bubble"] = mfu_gap.pipeline_bubble_fraction(*self.stages)
        return mfu_gap.GapCauses(**values)

    def text(self, key: str) -> str:
        return self.texts.get(key, "").strip()

    def used_inputs(self) -> dict[str, bool]:
        """The inputs these choices switch on or off (the tab enables them so): the tokens per step or
        the batch, the explicit peak, the custom recompute percentages, the bubble typed or from stages."""
        used = {"pipeline_bubble": self.stages is None, "tokens_per_step": self.direct_tokens,
                "peak_tflops": self.explicit_peak}
        used.update(dict.fromkeys(("micro_batch", "grad_accum", "data_parallel"), not self.direct_tokens))
        used.update(dict.fromkeys(RECOMPUTE_FIELDS, self.recompute == "custom"))
        return used


@dataclass(frozen=True)
class MfuOutcome:
    """What the inputs give: a result with its breakdown, or why not (``errors`` by input key, which
    may also be ``"recompute"`` (both percentages) or ``"ceiling.<name>"`` (the ceiling model))."""

    result: mfu.MfuResult | None = None
    breakdown: mfu_gap.GapBreakdown | None = None
    errors: Mapping[str, FieldError] = field(default_factory=dict)
    message: str = ""
    implausible: bool = False
    amdahl: mfu_gap.AmdahlResult | None = None
    amdahl_error: str | None = None

    @property
    def waiting(self) -> bool:
        """No result because inputs are still to give (amber), not because one is wrong."""
        return "missing" in self.message or self.message.startswith("choose")


@dataclass(frozen=True)
class ExampleFill:
    """A preset's published example run, as the run fields show it."""

    texts: Mapping[str, str]
    step_time_s: float
    gpus: int
    recompute: str


@dataclass(frozen=True)
class TraceFill:
    """What a new trace puts into the tab and what it resets.

    ``step_time_s``: the trace's (None: none recorded; ``clear_step_time`` then says an earlier
    trace's must go). ``fractions``: each trace cause as a share of the step, clamped to 0..1;
    ``gemm``: the GEMMs' share below their roof. ``reset_run``: the example's sequence, tokens and
    recompute describe another run (cleared, tokens asked for directly). ``ask_model``: the model
    was never confirmed, so it is asked for (:data:`NO_MODEL`)."""

    name: str
    run: TraceRun
    step_time_s: float | None
    clear_step_time: bool
    fractions: Mapping[str, float]
    gemm: GemmRoof
    kept: bool
    reset_run: bool
    ask_model: bool

    @property
    def origin(self) -> str:
        return f"from the trace {self.name}"


def trace_name(figures: object) -> str:
    """A short name for the trace the figures come from (file name, or "N ranks")."""
    name = getattr(figures, "trace_name", None)
    if isinstance(name, str) and name:
        return name
    source = getattr(figures, "source", None)
    if not isinstance(source, str) or not source:
        return "the loaded trace"
    if "/" in source or "\\" in source or source.endswith((".json", ".gz")):
        return PurePath(source).name
    return f"the loaded trace ({source})"


def implausible(r: mfu.MfuResult) -> bool:
    """MFU above 100 % or far above the practical ceiling: its gap against peak means nothing."""
    return r.mfu > 1.0 or any(w.code in ("mfu_above_100", "mfu_above_ceiling") for w in r.warnings)


def brief(message: str) -> str:
    """A few words for the bar's flag; the Checks box has the whole message."""
    if "impossible" in message:
        return "an input error, see Checks"
    if "missing" in message or message.startswith("choose"):
        return "inputs still missing, marked in amber"
    return message if len(message) < 60 else "see Checks"


def error_input(field_name: str, direct_tokens: bool) -> str:
    """The input to mark for core's error ``field_name`` (the tokens per step are the batch's when
    they are not given directly)."""
    key = ERROR_ALIASES.get(field_name, field_name)
    if key == "tokens_per_step" and not direct_tokens:
        key = "micro_batch"
    return key


def parse_number(text: str, key: str, *, required: bool, integer: bool, minimum: float | None) -> float | None:
    """One field's number (None: empty and optional); raises :class:`InvalidInputs` with its error."""
    text = text.strip()
    if key in RECOMPUTE_FIELDS:
        text = text.rstrip("%").strip()
    if not text:
        if required:
            raise InvalidInputs({key: FieldError("required", needed=True)})
        return None
    try:
        value = parse_quantity(text)
    except ValueError as exc:
        raise InvalidInputs({key: FieldError(str(exc))}) from None
    if integer and value != int(value):
        raise InvalidInputs({key: FieldError("must be a whole number")})
    if minimum is not None and value < minimum:
        raise InvalidInputs({key: FieldError(f"must be at least {minimum:g}")})
    return int(value) if integer else value


def optional_fields(inputs: MfuInputs) -> frozenset[str]:
    """The fields that may stay empty with these choices."""
    optional = set(OPTIONAL_FIELDS)
    if inputs.mode in (N_GIVEN, NO_MODEL):  # only the attention shape is read
        optional |= {"d_model", "vocab_size"}
        if not inputs.attention:
            optional |= {"layers", "heads"}
    if inputs.direct_tokens:
        optional |= {"micro_batch", "grad_accum", "data_parallel"}
        if not inputs.attention:
            optional.add("seq_len")   # nothing uses it: no attention term, tokens given
    return frozenset(optional)


def parse_fields(inputs: MfuInputs) -> dict[str, float | None]:
    """Every number field (but the step times) as a number (None: empty); raises
    :class:`InvalidInputs` with every bad one."""
    parsed: dict[str, float | None] = {}
    errors: dict[str, FieldError] = {}
    optional = optional_fields(inputs)
    custom = inputs.recompute == "custom"
    for key, text in inputs.texts.items():
        if key == "step_times" or (key in RECOMPUTE_FIELDS and not custom):
            continue
        try:
            parsed[key] = parse_number(text, key, required=key not in optional, integer=key in INTEGER_FIELDS,
                                       minimum=0 if key in NON_NEGATIVE_FIELDS
                                       else (1 if key in INTEGER_FIELDS else None))
        except InvalidInputs as exc:
            errors.update(exc.errors)
    if custom:
        errors.update(_recompute_errors(parsed))
    for key, needed in (("tokens_per_step", inputs.direct_tokens), ("n_params", inputs.mode in (N_GIVEN, NO_MODEL))):
        if needed and key in parsed and parsed[key] is None:
            errors[key] = FieldError(f"required: {'the tokens per step' if key != 'n_params' else 'N'} of the run",
                                     needed=True)
    if errors:
        raise InvalidInputs(errors)
    if custom:
        parsed.update({key: parsed[key] / 100 for key in RECOMPUTE_FIELDS})  # type: ignore[operator]
    return parsed


def _recompute_errors(p: Mapping[str, float | None]) -> dict[str, FieldError]:
    """Custom recompute needs both percentages (0..100); one that did not parse is marked already."""
    errors = {}
    for key in RECOMPUTE_FIELDS:
        if key not in p:
            continue
        if p[key] is None:
            errors[key] = FieldError("required for custom recompute (% of that forward recomputed)")
        elif p[key] > 100:  # type: ignore[operator]
            errors[key] = FieldError("a percentage: 0 to 100")
    return errors


class MfuState:
    """The MFU tab's memory between edits: where the run's figures come from and what is marked.

    ``run_source``: ``"example"`` (a preset's published run fills the run fields), ``"user"`` or
    ``"trace"``. ``from_trace``: the fields a trace filled (until edited); ``earlier_fields``: model
    and tokens kept from ``earlier_trace`` (marked until edited)."""

    def __init__(self) -> None:
        self.run_source = "example"
        self.example: str | None = None
        self.trace_run: TraceRun | None = None
        self.base_config: ModelConfig = get_preset(DEFAULT_PRESET)
        self.model_confirmed = False   # the user picked or typed the model (not just the default)
        self.earlier_trace: str | None = None
        self.earlier_fields: set[str] = set()
        self.from_trace: set[str] = set()
        self.waiting_for: str | None = None   # what the last evaluation said was missing
        self._exact: dict[str, tuple[str, float]] = {}   # field -> (text shown, exact value)

    # -- the run's origin ---------------------------------------------------------------------------
    def choose_preset(self, name: str) -> ModelConfig | None:
        """The configuration of preset ``name`` (None for N given, custom or no model): the base the
        model fields are compared with."""
        if name in MODEL_MODES:
            return None
        self.base_config = get_preset(name)
        return self.base_config

    def example_run(self, name: str) -> ExampleFill:
        """Preset ``name``'s published run, now the one shown."""
        run, form = EXAMPLE_RUNS[name], example_form(name)
        self.example = name
        dense, attention = run.recompute_fractions or (None, None)
        texts = {"micro_batch": str(run.micro_batch), "seq_len": str(run.seq_len),
                 "grad_accum": str(run.grad_accum), "data_parallel": str(run.data_parallel),
                 "tokens_per_step": "", "recompute_dense": "" if dense is None else f"{dense * 100:g}",
                 "recompute_attention": "" if attention is None else f"{attention * 100:g}"}
        return ExampleFill(texts, form.step_times_s[0], run.gpus, run.recompute)

    def use_example(self) -> None:
        """The "Example run" link: the preset's example replaces the run, nothing stays a trace's."""
        self.run_source = "example"
        self.clear_trace_marks()

    def leave_example(self) -> bool:
        """The run is the user's now (they typed a figure of it); True when it was the example's."""
        if self.run_source != "example":
            return False
        self.run_source, self.example = "user", None
        return True

    def run_edited(self, key: str) -> bool:
        """A run figure was typed: the run is the user's now, the field no longer a trace's or an
        earlier trace's. True when it was the example's (the peak now follows the toolbar)."""
        was_example = self.leave_example()
        self.clear_earlier(key)
        self.from_trace.discard(key)
        return was_example

    # -- a trace's figures --------------------------------------------------------------------------
    def take_trace(self, figures: TraceMfuFigures, database: DeviceDatabase | None) -> TraceFill:
        """A new trace's figures: what to fill and reset. The model and tokens per step are not in a
        trace: the ones the user typed are kept (marked when typed for an earlier trace); an example
        run's are not (they describe another run)."""
        run = TraceRun.from_figures(figures)
        name = trace_name(figures)
        keep_tokens = self.run_source == "user"
        previous = trace_name(self.trace_run.figures) if self.trace_run is not None else None
        if self.run_source == "trace" and previous is not None and previous != name:
            keep_tokens = True   # typed for the previous trace: kept, and marked as that trace's
            self.earlier_trace = self.earlier_trace or previous
        step = run.step_time_s
        has_step = step is not None and math.isfinite(step) and step > 0
        fill = TraceFill(
            name=name, run=run, step_time_s=step if has_step else None,
            clear_step_time=not has_step and self.run_source == "trace",
            fractions={key: min(max(float(getattr(figures, key)), 0.0), 1.0) for key in TRACE_FRACTIONS},
            gemm=figures.gemm(self.trace_device(database, figures)), kept=keep_tokens,
            reset_run=not keep_tokens, ask_model=not self.model_confirmed)
        self.clear_trace_marks()
        if has_step:
            self.from_trace.add("step_times")
        self.run_source, self.example, self.trace_run = "trace", None, run
        return fill

    def trace_device(self, database: DeviceDatabase | None, figures: TraceMfuFigures | None = None
                     ) -> Device | None:
        """The trace's GPU when the database knows it, else None (the toolbar's device is used)."""
        from gpuperf_gui.core.trace.analysis.kernel_roof import trace_device  # noqa: PLC0415 - trace loads late

        figures = figures or (self.trace_run.figures if self.trace_run is not None else None)
        return trace_device(figures.device_name, database) if figures is not None else None

    def mark_earlier(self, filled: list[str]) -> set[str]:
        """The fields of ``filled`` (those with text, in use) that now hold an earlier trace's figures."""
        if self.earlier_trace is None:
            return set()
        marked = {key for key in filled if key in EARLIER_TRACE_FIELDS}
        self.earlier_fields |= marked
        return marked

    def clear_earlier(self, key: str) -> bool:
        """The user confirmed field ``key``; True when it was marked as an earlier trace's."""
        was = key in self.earlier_fields
        self.earlier_fields.discard(key)
        if not self.earlier_fields:
            self.earlier_trace = None
        return was

    def clear_trace_marks(self) -> None:
        self.from_trace.clear()
        self.earlier_fields.clear()

    # -- exact values behind rounded texts ----------------------------------------------------------
    def exact_text(self, key: str, value: float) -> str:
        """The text to show for ``value`` (6 digits); computing uses ``value`` while it is unchanged."""
        text = f"{value:.6g}"
        self._exact[key] = (text, value)
        return text

    def step_times(self, text: str) -> tuple[float, ...]:
        exact = self._exact.get("step_times")
        if exact is not None and exact[0] == text.strip():
            return (exact[1],)
        return tuple(parse_quantity_list(text))

    # -- computing --------------------------------------------------------------------------------
    def form(self, inputs: MfuInputs, database: DeviceDatabase | None = None) -> MfuForm:
        """The inputs as the core input model (the one ``gpuperf mfu`` builds from its options).

        Raises :class:`InvalidInputs` when a field does not parse, ``MfuInputError`` /
        ``ConfigError`` when the inputs are inconsistent."""
        p = parse_fields(inputs)
        try:
            times = self.step_times(inputs.texts.get("step_times", ""))
        except ValueError as exc:
            raise InvalidInputs({"step_times": FieldError(str(exc))}) from None
        mode = inputs.mode
        if mode == NO_MODEL:
            raise mfu.MfuInputError("model", "choose the model of the traced run (a preset, or N given "
                                    "directly with its attention shape): a trace does not record it")
        if mode == N_GIVEN:
            model: dict[str, object] = dict(n_params=p["n_params"], layers=p["layers"], heads=p["heads"],
                                            head_dim=p["head_dim"], d_model=p["d_model"])
            if p["n_params"] is None:
                raise mfu.MfuInputError("n_params", "the model size is missing: give N")
        elif mode in EXAMPLE_RUNS and not self._config_edited(p):
            model = dict(preset=mode)
        else:
            model = dict(config=self._custom_config(p, inputs))
        if inputs.direct_tokens:
            if p["tokens_per_step"] is None:
                raise mfu.MfuInputError("tokens_per_step", "the tokens per step are missing")
            batch = dict(tokens_per_step=p["tokens_per_step"])
        else:
            batch = dict(micro_batch=p["micro_batch"], grad_accum=p["grad_accum"], data_parallel=p["data_parallel"])
        source = {"example": "example", "trace": "trace"}.get(self.run_source, "given")
        if source == "trace" and "step_times" not in self.from_trace:
            source = "given"
        training = inputs.training_precision
        return MfuForm(
            **model, include_embeddings=not inputs.exclude_embeddings,  # type: ignore[arg-type]
            attention=inputs.attention,
            seq_len=None if p["seq_len"] is None else int(p["seq_len"]),  # type: ignore[arg-type]
            causal=inputs.causal, **batch,  # type: ignore[arg-type]
            step_times_s=times, warmup_steps=None if inputs.warmup_steps < 0 else inputs.warmup_steps,
            step_time_source=source, gpus=inputs.gpus,
            **self._peak_fields(p, inputs, database),  # type: ignore[arg-type]
            training_precision=None if training == "same as peak" else training,
            recompute=inputs.recompute, recompute_dense=p.get("recompute_dense"),
            recompute_attention=p.get("recompute_attention"), recompute_convention=inputs.recompute_convention,
            timed_steps=(self.trace_run.figures.steady_steps or None) if source == "trace" and self.trace_run else None,
            counted_flops_per_step=p["counted_flops"], train_tokens=p["train_tokens"],
            price_per_gpu_hour=p["price"], ceiling=mfu.CeilingModel(**inputs.ceiling),
        )

    def evaluate(self, inputs: MfuInputs, database: DeviceDatabase | None) -> MfuOutcome:
        """The result of ``inputs`` and its gap breakdown, or the errors and the one line saying why not."""
        try:
            result = evaluate(self.form(inputs, database), database)
        except InvalidInputs as exc:
            all_needed = all(e.needed for e in exc.errors.values())
            outcome = MfuOutcome(errors=exc.errors, message=MISSING_MESSAGE if all_needed else INVALID_MESSAGE)
        except (mfu.MfuInputError, ConfigError) as exc:
            needed = "missing" in str(exc) or exc.field == "model"
            outcome = MfuOutcome(errors={error_input(exc.field, inputs.direct_tokens): FieldError(str(exc), needed)},
                                 message=str(exc), implausible=isinstance(exc, mfu.ImplausibleMfuError))
        else:
            breakdown = mfu_gap.gap_breakdown(result.mfu, result.hfu, inputs.gap_causes(),
                                              memory_efficiency=result.inputs.ceiling.memory_efficiency)
            try:
                amdahl, amdahl_error = mfu_gap.amdahl(inputs.amdahl_share, inputs.amdahl_speedup,
                                                      result.inputs.step_time_s), None
            except mfu.MfuInputError as exc:
                amdahl, amdahl_error = None, str(exc)
            outcome = MfuOutcome(result, breakdown, amdahl=amdahl, amdahl_error=amdahl_error)
        self.waiting_for = outcome.message or None
        return outcome

    def model_and_tokens_given(self, inputs: MfuInputs) -> bool:
        """A model (a preset, a configuration or N) and the tokens per step are given."""
        model = inputs.mode != NO_MODEL and (inputs.mode != N_GIVEN or bool(inputs.text("n_params")))
        return model and (not inputs.direct_tokens or bool(inputs.text("tokens_per_step")))

    def _config_edited(self, p: Mapping[str, float | None]) -> bool:
        c = self.base_config
        return any(p[k] != v for k, v in (("layers", c.layers), ("d_model", c.d_model), ("heads", c.heads),
                                          ("kv_heads", c.kv_heads), ("head_dim", c.head_dim),
                                          ("ffn_size", c.ffn_size), ("vocab_size", c.vocab_size)))

    def _custom_config(self, p: Mapping[str, float | None], inputs: MfuInputs) -> ModelConfig:
        base = self.base_config
        return replace(
            base, name=inputs.mode if inputs.mode != CUSTOM_CONFIG else "custom model",
            layers=int(p["layers"]), d_model=int(p["d_model"]), heads=int(p["heads"]),  # type: ignore[arg-type]
            kv_heads=p["kv_heads"], head_dim=p["head_dim"], ffn_size=p["ffn_size"],  # type: ignore[arg-type]
            vocab_size=int(p["vocab_size"]), experts=int(p["experts"] or 1),  # type: ignore[arg-type]
            top_k=int(p["top_k"] or 1), gated_mlp=inputs.gated_mlp, tied_embeddings=inputs.tied_embeddings,
            bias=inputs.bias,
            seq_len=int(p["seq_len"]) if p["seq_len"] is not None else base.seq_len,  # type: ignore[arg-type]
        )

    def _peak_fields(self, p: Mapping[str, float | None], inputs: MfuInputs,
                     database: DeviceDatabase | None) -> dict[str, object]:
        """An example run's own hardware; else the explicit peak, or the trace's GPU, or the toolbar's."""
        if self.run_source == "example" and self.example:
            example = example_form(self.example)
            return dict(device_id=example.device_id, precision=example.precision,
                        peak_flops_per_s=example.peak_flops_per_s, peak_note=example.peak_note)
        explicit = None
        if inputs.explicit_peak:
            if p["peak_tflops"] is None:
                raise mfu.MfuInputError("peak_tflops", "required")
            explicit = float(p["peak_tflops"]) * 1e12
        if self.run_source == "trace" and self.trace_run is not None:
            # the trace's GPU and precision (its GEMMs'), not whatever the toolbar says
            device = self.trace_device(database)
            return dict(device_id=device.id if device is not None else inputs.device_id,
                        precision=self.trace_run.precision or inputs.precision, peak_flops_per_s=explicit)
        return dict(device_id=inputs.device_id, precision=inputs.precision, peak_flops_per_s=explicit)
