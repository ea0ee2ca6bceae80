"""The one input model of the MFU calculator, shared by the MFU tab and ``gpuperf mfu``.

Both front ends turn what a person gave (fields of the tab, options of the command) into an
:class:`MfuForm` of plain values, and :func:`build_inputs` turns the form into the calculator's
:class:`~gpuperf_gui.core.mfu.MfuInputs`: N and the attention shape from N, a preset or a
configuration; tokens per step; the step time(s); the peak of a device or an explicit one; the
recompute policy. Every check lives here (or in :mod:`.mfu`), so the tab and the CLI accept and
refuse the same inputs and compute the same figures.

:func:`example_form` is a preset's published example run as a form; :class:`TraceRun` is what a
trace says about a run (step time, GPU count) for "Send to MFU" and ``gpuperf mfu --from-trace``.
No Qt here (R1).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpuperf_gui.core import mfu
from gpuperf_gui.core.mfu import AttentionShape, MfuInputError, MfuInputs, MfuResult
from gpuperf_gui.core.model_presets import EXAMPLE_RUNS, ExampleRun, ModelConfig, get_preset
from gpuperf_gui.core.units import format_duration_s

if TYPE_CHECKING:
    from gpuperf_gui.core.hardware import DeviceDatabase
    from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures

__all__ = ["ExampleCheck", "MfuForm", "TraceRun", "build_inputs", "evaluate", "example_check", "example_form",
           "example_step_time_s", "load_trace_run"]

INT_LIMITS = {"micro_batch": 100_000_000, "grad_accum": 1_000_000, "data_parallel": 10_000_000,
              "warmup_steps": 1_000_000}


@dataclass(frozen=True)
class MfuForm:
    """What a person gave, as plain values; ``None`` means "not given".

    Model: ``n_params`` or ``preset`` or ``config`` (exactly one). ``attention``: None = "when the
    shape is known" (always with a preset or a configuration; with N only if a shape is given).
    Tokens: ``tokens_per_step``, or ``micro_batch`` × sequence × ``grad_accum`` × ``data_parallel``.
    Peak: ``peak_flops_per_s`` (explicit, per GPU) or ``device_id`` + ``precision``.
    ``n_params`` beside a ``preset`` or ``config``: N is the one given, the attention shape the
    configuration's, and N is checked against the configuration's count.
    """

    n_params: float | None = None
    preset: str | None = None
    config: ModelConfig | None = None
    include_embeddings: bool = False
    attention: bool | None = None
    layers: int | None = None
    heads: int | None = None
    head_dim: int | None = None
    d_model: int | None = None
    seq_len: int | None = None
    causal: bool = False
    tokens_per_step: float | None = None
    micro_batch: int | None = None
    grad_accum: int = 1
    data_parallel: int = 1
    step_times_s: tuple[float, ...] = ()
    warmup_steps: int | None = None
    step_time_source: str = "given"
    trace_step_time_s: float | None = None  # the trace's profiled step, when the step time is another
    gpus: int = 1
    device_id: str | None = None
    precision: str | None = "bf16"
    peak_flops_per_s: float | None = None
    peak_note: str | None = None  # says where an explicit peak comes from ("6144 TPU v4 chips …")
    training_precision: str | None = None
    recompute: str = "none"
    recompute_dense: float | None = None
    recompute_attention: float | None = None
    recompute_convention: str = "gpuperf"  # how HFU counts selective recompute (mfu.SELECTIVE_CONVENTIONS)
    timed_steps: int | None = None  # steps behind a single step time (a trace's steady steps)
    counted_flops_per_step: float | None = None
    train_tokens: float | None = None
    price_per_gpu_hour: float | None = None
    ceiling: mfu.CeilingModel = field(default_factory=mfu.CeilingModel)


def build_inputs(form: MfuForm, database: DeviceDatabase | None = None) -> MfuInputs:
    """The calculator's inputs from ``form``; raises :class:`MfuInputError` naming the field
    (``ConfigError`` for a bad configuration, ``KeyError`` for an unknown device id)."""
    for name, high in INT_LIMITS.items():
        value = getattr(form, name)
        if value is not None and not 1 - (name == "warmup_steps") <= value <= high:
            raise MfuInputError(name, f"{name.replace('_', ' ')} must be within "
                                f"{1 - (name == 'warmup_steps')} and {high:,}, not {value:,}")
    for name in ("layers", "heads", "head_dim", "seq_len"):
        if getattr(form, name) is not None:
            mfu.check_limit(name, getattr(form, name))
    n, note, shape, config_n = _model(form)
    tokens = _tokens(form, shape)
    step_time, stats = _step_time(form)
    peak, training_peak = _peak(form, database)
    recompute = mfu.Recompute.of(form.recompute, form.recompute_dense, form.recompute_attention,
                                 form.recompute_convention)
    overhead = None
    if form.trace_step_time_s is not None and form.step_time_source != "trace":
        overhead = form.trace_step_time_s / step_time - 1.0
    inputs = MfuInputs(
        n_params=n, tokens_per_step=tokens, step_time_s=step_time, peak=peak, gpus=form.gpus,
        attention=shape, causal=form.causal, recompute=recompute, n_params_note=note,
        training_precision=form.training_precision,
        training_precision_peak_flops_per_s=training_peak if form.training_precision else None,
        step_stats=stats, counted_flops_per_step=form.counted_flops_per_step,
        train_tokens=form.train_tokens, price_per_gpu_hour=form.price_per_gpu_hour,
        ceiling=form.ceiling, step_time_source=form.step_time_source, profiler_overhead=overhead,
        timed_steps=form.timed_steps if len(form.step_times_s) == 1 else None,
        tokens_given=form.tokens_per_step is not None, grad_accum=form.grad_accum,
        data_parallel=form.data_parallel, config_n_params=config_n,
    )
    inputs.validate()
    return inputs


def evaluate(form: MfuForm, database: DeviceDatabase | None = None) -> MfuResult:
    """The result of ``form``; an MFU above 100 % raises :class:`~.mfu.ImplausibleMfuError`
    (inconsistent inputs, explained), never a result."""
    return mfu.require_plausible(mfu.compute_mfu(build_inputs(form, database)))


def _model(form: MfuForm) -> tuple[float, str, AttentionShape | None, float | None]:
    """(N, what N is, the attention shape, the configuration's N when N was given beside one)."""
    configs = [x for x in (form.preset, form.config) if x is not None]
    if len(configs) > 1:
        raise MfuInputError("n_params", "give one of a preset or a model configuration")
    if form.n_params is None and not configs:
        raise MfuInputError("n_params", "the model size is missing: give N (parameters) or a preset")
    if not configs:
        return form.n_params, "N given", _shape_for_n(form), None  # type: ignore[return-value]
    config = get_preset(form.preset) if form.preset is not None else form.config
    assert config is not None
    config.validate()
    n, note = mfu.n_params_from_config(config, exclude_embeddings=not form.include_embeddings)
    config_n = None
    if form.n_params is not None:
        config_n, n = n, form.n_params
        note = f"N given; the attention shape from {config.name or 'the configuration'} ({note})"
    if form.attention is False:
        return n, note, None, config_n
    shape = AttentionShape.from_config(config, form.seq_len)
    if any(v is not None for v in (form.layers, form.heads, form.head_dim)):
        shape = AttentionShape(form.layers or shape.layers, form.heads or shape.heads,
                               form.head_dim or shape.head_dim, shape.seq_len)
    return n, note, shape, config_n


def _shape_for_n(form: MfuForm) -> AttentionShape | None:
    """The attention shape with N given: from layers, heads, head dim (or d_model ÷ heads), sequence."""
    if form.attention is False:
        return None
    head_dim = form.head_dim
    if head_dim is None and form.d_model is not None and form.heads:
        if form.d_model % form.heads:
            raise MfuInputError("heads", "d_model must be divisible by heads (or give the head dim)")
        head_dim = form.d_model // form.heads
    parts = {"layers": form.layers, "heads": form.heads, "head_dim": head_dim, "seq_len": form.seq_len}
    if form.attention is None and all(form_value is None for form_value in
                                      (form.layers, form.heads, form.head_dim)):
        return None  # N alone: 6·N
    missing = [name for name, value in parts.items() if value is None]
    if missing:
        labels = {"layers": "layers", "heads": "heads", "head_dim": "head dim (or d_model)",
                  "seq_len": "sequence length"}
        raise MfuInputError(missing[0], "the attention term 12·L·H·Q·T needs layers, heads, head dim "
                            f"and sequence length; missing: {', '.join(labels[m] for m in missing)}")
    return AttentionShape(int(form.layers), int(form.heads), int(head_dim), int(form.seq_len))  # type: ignore[arg-type]


def _tokens(form: MfuForm, shape: AttentionShape | None) -> float:
    if form.tokens_per_step is not None:
        if form.micro_batch is not None:
            raise MfuInputError("tokens_per_step", "give the tokens per step or the micro-batch, not both")
        return form.tokens_per_step
    if form.micro_batch is None:
        raise MfuInputError("tokens_per_step", "the tokens per step are missing: give them (or the "
                            "micro-batch and the sequence length)")
    seq = form.seq_len or (shape.seq_len if shape else None) or _config_seq_len(form)
    if seq is None:
        raise MfuInputError("seq_len", "the micro-batch needs the sequence length")
    return float(mfu.tokens_per_step(form.micro_batch, int(seq), form.grad_accum, form.data_parallel))


def _config_seq_len(form: MfuForm) -> int | None:
    if form.config is not None:
        return form.config.seq_len
    return get_preset(form.preset).seq_len if form.preset is not None else None


def _step_time(form: MfuForm) -> tuple[float, mfu.StepTimeStats | None]:
    times = tuple(form.step_times_s)
    if not times:
        raise MfuInputError("step_time_s", "the step time is missing (seconds per optimizer step)")
    for t in times:
        mfu.check_limit("step_time_s", t)
    if len(times) == 1:
        return times[0], None
    stats = mfu.summarize_step_times(times, form.warmup_steps)
    return stats.median_s, stats


def _peak(form: MfuForm, database: DeviceDatabase | None) -> tuple[mfu.Peak, float | None]:
    device = None
    if form.device_id is not None:
        if database is None:
            from gpuperf_gui.core.hardware import load_database

            database = load_database()
        device = database.get(form.device_id)  # UnknownDeviceError (a KeyError) lists close matches
    elif form.peak_flops_per_s is None:
        raise MfuInputError("peak", "the peak is missing: give a device and a precision, or a peak FLOP/s")
    known: tuple = ()
    if form.peak_flops_per_s is not None:
        mfu.check_limit("peak", form.peak_flops_per_s)
        if device is None:  # no device to check it against: check it against them all
            if database is None:
                from gpuperf_gui.core.hardware import load_database

                database = load_database()
            known = tuple(d for d in database.devices() if d.origin != "measured")
    peak = mfu.resolve_peak(device, form.precision, form.peak_flops_per_s, known)
    if form.peak_note and form.peak_flops_per_s is not None:
        peak = replace(peak, source=form.peak_note)
    return peak, mfu.training_precision_peak(device, form.training_precision)


# --------------------------------------------------------------------------------------------------
# A preset's example run


def example_step_time_s(preset: str, run: ExampleRun | None = None) -> float:
    """The example run's step time: published, or computed from its published FLOP rate or MFU
    with this tool's convention (6·N + 12·L·H·Q·T, embeddings excluded)."""
    run = run or EXAMPLE_RUNS[preset]
    if run.step_time_s is not None:
        return run.step_time_s
    config = get_preset(preset)
    n, _ = mfu.n_params_from_config(config)
    flops_per_step = mfu.model_flops_per_token(n, AttentionShape.from_config(config, run.seq_len))
    flops_per_step *= run.tokens_per_step
    if run.achieved_flops_per_s_per_gpu is not None:
        rate = run.achieved_flops_per_s_per_gpu
    else:
        assert run.published_mfu is not None
        rate = run.published_mfu * _example_peak(run)
    return flops_per_step / (run.gpus * rate)


def _example_peak(run: ExampleRun) -> float:
    if run.peak_flops_per_s is not None:
        return run.peak_flops_per_s
    from gpuperf_gui.core.hardware import load_database

    return load_database().get(run.device_id).dense_flops_per_s[run.precision]  # type: ignore[arg-type]


def example_form(preset: str) -> MfuForm:
    """The preset with its published example run (batch, sequence, GPUs, step time, hardware)."""
    run = EXAMPLE_RUNS[preset]
    dense, attention = run.recompute_fractions or (None, None)
    return MfuForm(
        preset=preset, seq_len=run.seq_len, micro_batch=run.micro_batch, grad_accum=run.grad_accum,
        data_parallel=run.data_parallel, step_times_s=(example_step_time_s(preset, run),),
        step_time_source="example", gpus=run.gpus, device_id=run.device_id, precision=run.precision,
        peak_flops_per_s=run.peak_flops_per_s,
        peak_note=f"{run.hardware}, the example run's hardware" if run.peak_flops_per_s else None,
        recompute=run.recompute, recompute_dense=dense, recompute_attention=attention,
    )


@dataclass(frozen=True)
class ExampleCheck:
    """A preset's example run under this tool's default convention and under its source's, beside
    what the source prints (docs/conventions.md: Llama-3 8B is 55.19 % here, 58.2 % in torchtitan, which
    counts the embeddings: 58.19 % so)."""

    preset: str
    ours: MfuResult
    source_convention: MfuResult
    source_mfu: float | None
    source_hfu: float | None
    source_differs: bool
    """The source's convention is not the default one (embeddings or the recompute count)."""
    convention_text: str
    """What the source counts, in words ("embeddings counted")."""

    ours_text: str = "embedding lookups excluded from N"
    """What this tool's default counts, in the same words."""

    def describe(self) -> str:
        """One sentence: both figures and which the source used."""
        if self.source_mfu is None:
            return ""
        printed = f"it prints {_pct(self.source_mfu)} MFU" + (
            f", {_pct(self.source_hfu)} HFU" if self.source_hfu is not None else "")
        ours = f"MFU {self.ours.mfu:.2%}, HFU {self.ours.hfu:.2%}".replace("%", " %")
        if not self.source_differs:
            return f"{ours} with this tool's convention ({self.ours_text}), the one the source used: {printed}."
        theirs = f"MFU {self.source_convention.mfu:.2%}, HFU {self.source_convention.hfu:.2%}".replace("%", " %")
        return (f"{ours} with this tool's convention ({self.ours_text}); {theirs} with the source's convention "
                f"({self.convention_text}), the one it used: {printed}.")


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.4g} %"


def _counts(embeddings: bool, selective: str | None) -> str:
    parts = ["embedding lookups counted in N" if embeddings else "embedding lookups excluded from N"]
    if selective:
        parts.append(f"selective recompute in the {selective} convention")
    return ", ".join(parts)


def example_check(preset: str, database: DeviceDatabase | None = None) -> ExampleCheck:
    """The example run of ``preset`` computed both ways (see :class:`ExampleCheck`)."""
    run = EXAMPLE_RUNS[preset]
    form = example_form(preset)
    theirs = replace(form, include_embeddings=run.source_counts_embeddings,
                     recompute_convention=run.source_recompute_convention)
    selective = run.recompute == "selective" and run.source_hfu is not None  # the HFU is compared
    differs = run.source_counts_embeddings or run.source_recompute_convention != form.recompute_convention
    return ExampleCheck(preset, evaluate(form, database), evaluate(theirs, database), run.source_mfu,
                        run.source_hfu, differs,
                        _counts(run.source_counts_embeddings, run.source_recompute_convention if selective else None),
                        _counts(False, form.recompute_convention if selective else None))


# --------------------------------------------------------------------------------------------------
# What a trace says about a run


@dataclass(frozen=True)
class TraceRun:
    """The step time and GPU count a trace gives (the model and tokens per step it never records)."""

    step_time_s: float | None
    gpus: int
    gpus_source: str  # "world size" | "ranks loaded"
    ranks_loaded: int
    world_size: int | None
    device_name: str | None
    source: str
    figures: TraceMfuFigures

    @classmethod
    def from_figures(cls, figures: TraceMfuFigures) -> TraceRun:
        """GPUs = the recorded world size, else the ranks loaded (one rank file without
        ``distributedInfo`` is taken as a one-GPU job, and said so)."""
        world = figures.world_size if figures.world_size and figures.world_size >= 1 else None
        ranks = max(1, figures.ranks_loaded)
        return cls(step_time_s=figures.step_time_s, gpus=world or ranks,
                   gpus_source="world size" if world else "ranks loaded", ranks_loaded=ranks,
                   world_size=world, device_name=figures.device_name, source=figures.source,
                   figures=figures)

    @property
    def precision(self) -> str | None:
        """The precision the trace's GEMM/attention kernels ran in (the dominant one), None when unknown."""
        return self.figures.precision.effective

    def gemm(self, device):  # noqa: ANN001, ANN201 (hardware.Device | None -> kernel_roof.GemmRoof)
        """The trace's GEMMs against their roofs on ``device`` (the GEMM-inefficiency cause)."""
        return self.figures.gemm(device)

    def describe(self) -> str:
        step = format_duration_s(self.step_time_s) if self.step_time_s else "no steps"
        count = self.figures.steady_steps
        steps = f"median of {count} steady profiled step{'s' if count != 1 else ''}" if count else \
            "median of the steady profiled steps"
        if self.gpus_source == "world size":
            gpus = f"{self.gpus} GPUs (the recorded world size; {self.ranks_loaded} rank(s) loaded)"
        else:
            gpus = (f"{self.gpus} GPU(s) = the ranks loaded (no world size recorded: if the job had "
                    "more GPUs, give them)")
        return f"step time {step} ({steps}), {gpus}"

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "step_time_s": self.step_time_s, "gpus": self.gpus,
                "gpus_source": self.gpus_source, "ranks_loaded": self.ranks_loaded,
                "world_size": self.world_size, "device_name": self.device_name,
                "steady_steps": self.figures.steady_steps, "precision": self.figures.precision.to_json()}


def load_trace_run(path: Path | str) -> TraceRun:
    """Load and analyse a trace file or a folder of rank files (``TraceFormatError`` if it is not one)."""
    from gpuperf_gui.core.trace.diagnosis.figures import mfu_figures
    from gpuperf_gui.core.trace.session.trace import Trace

    result = Trace([Path(path)], workers=1).result()
    return TraceRun.from_figures(mfu_figures([r.analysis for r in result.ranks]))
