"""`gpuperf mfu`: model FLOPs utilization of a training run, with HFU and the checks that catch a wrong MFU.

    gpuperf mfu --params N --tokens-per-step T --step-time S [--gpus G]
                (--gpu ID --precision P | --peak-flops F) [--recompute none|selective|full]
                [--layers L --heads H --head-dim Q --seq T] [--json]
    gpuperf mfu --from-trace PATH (--params N | --preset NAME | --model-config FILE) --tokens-per-step T

Extras: ``--preset NAME`` (N and the attention shape from a published configuration),
``--step-times`` (a list: warm-up dropped, median taken), ``--causal``, ``--training-precision``,
``--micro-batch/--grad-accum/--dp`` instead of ``--tokens-per-step``, cost and time to train.
The options become a :class:`~gpuperf_gui.core.mfu_inputs.MfuForm`, the same input model the MFU
tab fills, so both compute the same figures from the same inputs.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpuperf_gui.commands._output import fail, print_json
from gpuperf_gui.core import mfu
from gpuperf_gui.core.catalog import DeviceCatalog
from gpuperf_gui.core.hardware import PRECISIONS
from gpuperf_gui.core.mfu_inputs import MfuForm, TraceRun, evaluate, load_trace_run
from gpuperf_gui.core.model_presets import PRESETS, ConfigError, ModelConfig, config_from_hf, preset_name
from gpuperf_gui.core.units import json_safe, parse_quantity, parse_quantity_list

# The option that sets each field of the input model, so an error names what to fix.
OPTIONS = {
    "n_params": "--params", "tokens_per_step": "--tokens-per-step", "step_time_s": "--step-time",
    "step_times": "--step-times", "peak": "--peak-flops", "gpus": "--gpus", "layers": "--layers",
    "heads": "--heads", "head_dim": "--head-dim", "seq_len": "--seq", "train_tokens": "--train-tokens",
    "price": "--price-per-gpu-hour", "counted_flops": "--counted-flops-per-step",
    "micro_batch": "--micro-batch", "grad_accum": "--grad-accum", "data_parallel": "--dp",
    "warmup_steps": "--warmup-steps", "recompute": "--recompute", "precision": "--precision",
}


def _quantity(text: str) -> float:
    try:
        return parse_quantity(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole(text: str) -> int:
    """A whole number, also written 8e3 or 16_384 (bounds are checked with the other inputs)."""
    value = _quantity(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(value)


def _fraction(text: str) -> float:
    value = _quantity(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a fraction within 0 and 1, not {text!r}")
    return value


def _quantity_list(text: str) -> list[float]:
    try:
        return parse_quantity_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _preset_arg(text: str) -> str:
    name = preset_name(text)
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown preset {text!r}; known: {', '.join(PRESETS)}")
    return name


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mfu", help="model FLOPs utilization (MFU), HFU and their checks",
        description="MFU = model FLOPs per second / peak FLOP/s of the GPUs. Model FLOPs per token "
        "are 6·N, + 12·L·H·Q·T with the attention shape (PaLM App. B, nanoGPT, torchtitan).",
    )
    model = p.add_argument_group("model")
    model.add_argument("--params", type=_quantity, metavar="N", help="parameters used for FLOPs (124M, 8e9, …); with "
                       "--preset/--model-config, used instead of its count and checked against it")
    model.add_argument("--preset", type=_preset_arg, metavar="NAME",
                       help=f"N and attention shape from a published config: {', '.join(PRESETS)} "
                            "(case, spaces and dashes do not matter: llama3-8b)")
    model.add_argument("--model-config", metavar="FILE", help="N and attention shape from a HF config.json")
    model.add_argument("--include-embeddings", action="store_true",
                       help="with --preset/--model-config: keep embedding lookup tables in N (PaLM/Kaplan)")
    model.add_argument("--no-attention", action="store_true", help="with --preset/--model-config: 6·N only")
    model.add_argument("--layers", type=_whole, metavar="L")
    model.add_argument("--heads", type=_whole, metavar="H")
    model.add_argument("--head-dim", type=_whole, metavar="Q")
    model.add_argument("--seq", type=_whole, metavar="T", help="sequence length (attention term, tokens)")
    model.add_argument("--causal", action="store_true", help="halve the attention term (Megatron ≥ 2025-03)")
    batch = p.add_argument_group("batch")
    batch.add_argument("--tokens-per-step", type=_quantity, metavar="T", help="tokens per optimizer step (all replicas)")
    batch.add_argument("--micro-batch", type=_whole, help="instead of --tokens-per-step, with --seq")
    batch.add_argument("--grad-accum", type=_whole, default=1, help="gradient-accumulation steps")
    batch.add_argument("--dp", type=_whole, default=1, help="data-parallel replicas")
    timing = p.add_argument_group("time")
    timing.add_argument("--step-time", type=_quantity, metavar="S", help="seconds per optimizer step")
    timing.add_argument("--step-times", type=_quantity_list, metavar="S,S,…", help="several steps")
    timing.add_argument("--warmup-steps", type=_whole, help="leading steps to drop (default 1 if ≥ 3 steps)")
    timing.add_argument("--from-trace", metavar="PATH",
                        help="a torch.profiler trace (file or folder of rank files): the step time (median "
                        "of the steady steps, profiled) and the GPUs (world size, else ranks loaded) come "
                        "from it; the model and the tokens per step still come from the options. With "
                        "--step-time, that (unprofiled) time is used and the profiler overhead reported")
    hw = p.add_argument_group("hardware")
    hw.add_argument("--gpus", type=_whole, help="GPUs in the job (all of TP×PP×DP; default 1, or the trace's)")
    hw.add_argument("--gpu", metavar="ID", help="device id (see `gpuperf gpus`; default with --from-trace: "
                    "the trace's GPU)")
    hw.add_argument("--precision", choices=PRECISIONS, default=None,
                    help="peak precision (default bf16; with --from-trace: the trace's, detected from its "
                         "GEMM/attention kernels and their ops' input types)")
    hw.add_argument("--peak-flops", type=_quantity, metavar="F", help="explicit peak FLOP/s per GPU")
    hw.add_argument("--training-precision", choices=PRECISIONS, help="precision the GEMMs run in")
    rc = p.add_argument_group("recompute")
    rc.add_argument("--recompute", choices=mfu.RECOMPUTE_KINDS, default="none")
    rc.add_argument("--recompute-convention", choices=tuple(mfu.SELECTIVE_CONVENTIONS), default="gpuperf",
                    help="how HFU counts selective recompute: gpuperf (default; the recomputed attention-core "
                    "forward, +4·L·H·Q·T per token) or korthikanti2022 (the Megatron README's published "
                    "pairs: +12·L·H·Q·T per token)")
    rc.add_argument("--recompute-dense", type=_fraction, metavar="F",
                    help="with --recompute custom (required): fraction 0..1 of the GEMM forward recomputed")
    rc.add_argument("--recompute-attention", type=_fraction, metavar="F",
                    help="with --recompute custom (required): fraction 0..1 of the attention forward recomputed")
    extra = p.add_argument_group("cost and checks")
    extra.add_argument("--train-tokens", type=_quantity, help="tokens to train on (time to train)")
    extra.add_argument("--price-per-gpu-hour", type=_quantity, help="price of one GPU-hour (cost per M tokens)")
    extra.add_argument("--counted-flops-per-step", type=_quantity, help="FLOPs a counter measured per step")
    p.add_argument("--json", action="store_true", help="print the result as JSON (fractions, SI units)")
    p.set_defaults(func=run)


def _read_config(path: str) -> ModelConfig:
    """A HF config.json; every error names the file (and the key)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise mfu.MfuInputError("model_config", f"cannot read {path}: {exc}") from exc
    try:
        return config_from_hf(data, name=Path(path).parent.name or Path(path).name)
    except ConfigError as exc:
        raise mfu.MfuInputError("model_config", f"{path}: {exc}") from exc


def _recompute_fractions(args: argparse.Namespace) -> None:
    fractions = (args.recompute_dense, args.recompute_attention)
    if args.recompute != "custom" and any(f is not None for f in fractions):
        raise mfu.MfuInputError("recompute", "--recompute-dense/--recompute-attention apply only "
                                "with --recompute custom")
    if args.recompute == "custom" and any(f is None for f in fractions):
        raise mfu.MfuInputError("recompute", "--recompute custom needs --recompute-dense F and "
                                "--recompute-attention F (fractions 0..1 of the forward recomputed; "
                                "PaLM 540B: 0.75 and 1)")


def build_form(args: argparse.Namespace, trace: TraceRun | None = None) -> MfuForm:
    """The input model from the parsed command line (and the trace, with --from-trace)."""
    _recompute_fractions(args)
    if args.step_time is not None and args.step_times is not None:
        raise mfu.MfuInputError("step_time_s", "give one of --step-time and --step-times")
    times = tuple(args.step_times or ([args.step_time] if args.step_time is not None else []))
    source, trace_step = "given", None
    timed = len(args.step_times) if args.step_times is not None else None
    gpus, device_id = args.gpus, args.gpu
    if trace is not None:
        if not times:
            if trace.step_time_s is None:
                raise mfu.MfuInputError("step_time_s", f"{trace.source}: no ProfilerStep annotations, so "
                                        "no step time: give --step-time")
            times, source = (trace.step_time_s,), "trace"
            timed = trace.figures.steady_steps or None
        else:
            trace_step = trace.step_time_s
        gpus = gpus if gpus is not None else trace.gpus
        if device_id is None and args.peak_flops is None:
            device_id = _trace_device(trace)
        if all(x is None for x in (args.params, args.preset, args.model_config)):  # N beside a config: checked
            raise mfu.MfuInputError("n_params", "--from-trace gives the step time and the GPUs, not the "
                                    "model: give --params N, --preset NAME or --model-config FILE")
        if args.tokens_per_step is None and args.micro_batch is None:
            raise mfu.MfuInputError("tokens_per_step", "--from-trace gives the step time and the GPUs, "
                                    "not the tokens per step: give --tokens-per-step T (or --micro-batch)")
    if device_id is None and args.peak_flops is None:
        raise mfu.MfuInputError("peak", "give --gpu ID --precision P, or --peak-flops F")
    precision = args.precision or (trace.precision if trace is not None and trace.precision else "bf16")
    config = _read_config(args.model_config) if args.model_config else None
    return MfuForm(
        n_params=args.params, preset=args.preset, config=config,
        include_embeddings=args.include_embeddings,
        attention=False if args.no_attention else None, layers=args.layers, heads=args.heads,
        head_dim=args.head_dim, seq_len=args.seq, causal=args.causal,
        tokens_per_step=args.tokens_per_step, micro_batch=args.micro_batch, grad_accum=args.grad_accum,
        data_parallel=args.dp, step_times_s=times, warmup_steps=args.warmup_steps,
        step_time_source=source, trace_step_time_s=trace_step, gpus=gpus if gpus is not None else 1,
        device_id=device_id, precision=precision, peak_flops_per_s=args.peak_flops,
        training_precision=args.training_precision, recompute=args.recompute,
        recompute_dense=args.recompute_dense, recompute_attention=args.recompute_attention,
        recompute_convention=args.recompute_convention, timed_steps=timed,
        counted_flops_per_step=args.counted_flops_per_step, train_tokens=args.train_tokens,
        price_per_gpu_hour=args.price_per_gpu_hour,
    )


def _trace_device(trace: TraceRun) -> str:
    from gpuperf_gui.core.hardware import match_device_name

    device_id = match_device_name(trace.device_name) if trace.device_name else None
    if device_id is None:
        named = f"its GPU ({trace.device_name}) is not in the database" if trace.device_name else \
            "it does not name its GPU"
        raise mfu.MfuInputError("peak", f"the trace gives no peak ({named}): give --gpu ID or --peak-flops F")
    return device_id


def _load_trace(path: str) -> TraceRun:
    try:
        return load_trace_run(path)
    except (ValueError, OSError) as exc:  # TraceFormatError is a ValueError
        raise mfu.MfuInputError("from_trace", f"--from-trace {path}: {exc}") from exc


def _device(form: MfuForm):  # noqa: ANN202 (hardware.Device | None)
    from gpuperf_gui.core.trace.analysis.kernel_roof import device_database  # noqa: PLC0415

    database = device_database()
    return database.get(form.device_id) if form.device_id and form.device_id in database else None


def precision_line(trace: TraceRun, precision: str | None, given: bool) -> str:
    """Which precision the peak is at, and what the trace says (detected, or overridden)."""
    detected = trace.figures.precision.describe()
    if given:
        return f"Peak precision {precision} (--precision; the trace's kernels: {detected})"
    if trace.precision:
        own = detected.removeprefix(f"{precision} ")   # "(detected: 100 % of …)", or "mixed: …"
        return f"Peak precision {precision}, the trace's {own}" if own != detected else \
            f"Peak precision {precision}, the trace's: {detected}"
    return f"Peak precision {precision} (default; the trace's kernels: {detected})"


def _message(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return str(exc.args[0]) if exc.args else str(exc)
    text = str(exc)
    option = OPTIONS.get(getattr(exc, "field", ""))
    return f"{option}: {text}" if option and not text.startswith(option) else text


def run(args: argparse.Namespace) -> int:
    try:
        trace = _load_trace(args.from_trace) if args.from_trace else None
        form = build_form(args, trace)
        # the measured ceilings saved by `gpuperf bench` are the cpu's peak (read only with a device)
        result = evaluate(form, DeviceCatalog.load(saved_measurements=True).database if form.device_id else None)
    except (ValueError, KeyError) as exc:  # MfuInputError, ConfigError, UnknownDeviceError, …
        return fail(_message(exc))
    payload = result.to_json_dict()
    if trace is not None:
        payload["trace"] = trace.to_json()
        payload["gpus_source"] = "option" if args.gpus is not None else trace.gpus_source
        payload["precision"] = form.precision
        payload["precision_source"] = ("peak given" if args.peak_flops is not None else "option" if args.precision
                                       else "trace" if trace.precision else "default")
        payload["trace"]["gemm"] = trace.gemm(_device(form)).to_json()
    if args.json:
        print_json(json_safe(payload))
        return 0
    if trace is not None:
        print(f"From {trace.source}: {trace.describe()}")
        print(precision_line(trace, form.precision, bool(args.precision)))
    print(result.to_text())
    return 0
