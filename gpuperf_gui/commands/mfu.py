"""`gpuperf mfu`: model FLOPs utilization of a training run, with HFU and the checks that catch a wrong MFU.

    gpuperf mfu --params N --tokens-per-step T --step-time S [--gpus G]
                (--gpu ID --precision P | --peak-flops F) [--recompute none|selective|full]
                [--layers L --heads H --head-dim Q --seq T] [--json]

Extras: ``--preset NAME`` (N and the attention shape from a published configuration),
``--step-times`` (a list: warm-up dropped, median taken), ``--causal``, ``--training-precision``,
``--micro-batch/--grad-accum/--dp`` instead of ``--tokens-per-step``, cost and time to train.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from gpuperf_gui.commands._output import fail, print_json
from gpuperf_gui.core import mfu
from gpuperf_gui.core.model_presets import PRESETS, config_from_hf, get_preset, preset_name

_PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def _quantity(text: str) -> float:
    try:
        return mfu.parse_quantity(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _quantity_list(text: str) -> list[float]:
    try:
        return mfu.parse_float_list(text)
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
    model.add_argument("--params", type=_quantity, metavar="N", help="parameters used for FLOPs (124M, 8e9, …)")
    model.add_argument("--preset", type=_preset_arg, metavar="NAME",
                       help=f"N and attention shape from a published config: {', '.join(PRESETS)} "
                            "(case, spaces and dashes do not matter: llama3-8b)")
    model.add_argument("--model-config", metavar="FILE", help="N and attention shape from a HF config.json")
    model.add_argument("--include-embeddings", action="store_true",
                       help="with --preset/--model-config: keep embedding lookup tables in N (PaLM/Kaplan)")
    model.add_argument("--no-attention", action="store_true", help="with --preset/--model-config: 6·N only")
    model.add_argument("--layers", type=int, metavar="L")
    model.add_argument("--heads", type=int, metavar="H")
    model.add_argument("--head-dim", type=int, metavar="Q")
    model.add_argument("--seq", type=int, metavar="T", help="sequence length (attention term, tokens)")
    model.add_argument("--causal", action="store_true", help="halve the attention term (Megatron ≥ 2025-03)")
    batch = p.add_argument_group("batch")
    batch.add_argument("--tokens-per-step", type=_quantity, metavar="T", help="tokens per optimizer step (all replicas)")
    batch.add_argument("--micro-batch", type=int, help="instead of --tokens-per-step, with --seq")
    batch.add_argument("--grad-accum", type=int, default=1, help="gradient-accumulation steps")
    batch.add_argument("--dp", type=int, default=1, help="data-parallel replicas")
    timing = p.add_argument_group("time")
    timing.add_argument("--step-time", type=_quantity, metavar="S", help="seconds per optimizer step")
    timing.add_argument("--step-times", type=_quantity_list, metavar="S,S,…", help="several steps")
    timing.add_argument("--warmup-steps", type=int, help="leading steps to drop (default 1 if ≥ 3 steps)")
    hw = p.add_argument_group("hardware")
    hw.add_argument("--gpus", type=int, default=1, help="GPUs in the job (all of TP×PP×DP)")
    hw.add_argument("--gpu", metavar="ID", help="device id (see `gpuperf gpus`)")
    hw.add_argument("--precision", choices=_PRECISIONS, default="bf16", help="peak precision")
    hw.add_argument("--peak-flops", type=_quantity, metavar="F", help="explicit peak FLOP/s per GPU")
    hw.add_argument("--training-precision", choices=_PRECISIONS, help="precision the GEMMs run in")
    rc = p.add_argument_group("recompute")
    rc.add_argument("--recompute", choices=mfu.RECOMPUTE_KINDS, default="none")
    rc.add_argument("--recompute-dense", type=float, metavar="F",
                    help="with --recompute custom (required): fraction 0..1 of the GEMM forward recomputed")
    rc.add_argument("--recompute-attention", type=float, metavar="F",
                    help="with --recompute custom (required): fraction 0..1 of the attention forward recomputed")
    extra = p.add_argument_group("cost and checks")
    extra.add_argument("--train-tokens", type=_quantity, help="tokens to train on (time to train)")
    extra.add_argument("--price-per-gpu-hour", type=float, help="price of one GPU-hour (cost per M tokens)")
    extra.add_argument("--counted-flops-per-step", type=_quantity, help="FLOPs a counter measured per step")
    p.add_argument("--json", action="store_true", help="print the result as JSON (fractions, SI units)")
    p.set_defaults(func=run)


def _model(args: argparse.Namespace) -> tuple[float, str, mfu.AttentionShape | None]:
    shape_args = (args.layers, args.heads, args.head_dim)
    if args.preset or args.model_config:
        if sum(x is not None for x in (args.params, args.preset, args.model_config)) > 1:
            raise mfu.MfuInputError("params", "give one of --params, --preset, --model-config")
        config = get_preset(args.preset) if args.preset else _read_config(args.model_config)
        n, note = mfu.n_params_from_config(config, exclude_embeddings=not args.include_embeddings)
        shape = None if args.no_attention else mfu.AttentionShape.from_config(config, args.seq)
        if shape is not None and any(v is not None for v in shape_args):
            shape = mfu.AttentionShape(args.layers or shape.layers, args.heads or shape.heads,
                                       args.head_dim or shape.head_dim, shape.seq_len)
        return n, note, shape
    if args.params is None:
        raise mfu.MfuInputError("params", "give --params N (or --preset NAME)")
    if all(v is None for v in shape_args):
        return args.params, "N given", None
    if any(v is None for v in (*shape_args, args.seq)):
        raise mfu.MfuInputError("layers", "the attention term needs --layers, --heads, --head-dim and --seq")
    return args.params, "N given", mfu.AttentionShape(args.layers, args.heads, args.head_dim, args.seq)


def _read_config(path: str):  # -> ModelConfig
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise mfu.MfuInputError("model_config", f"cannot read {path}: {exc}") from exc
    return config_from_hf(data, name=Path(path).parent.name or Path(path).name)


def _tokens(args: argparse.Namespace, shape: mfu.AttentionShape | None) -> float:
    if args.tokens_per_step is not None:
        if args.micro_batch is not None:
            raise mfu.MfuInputError("tokens_per_step", "give --tokens-per-step or --micro-batch, not both")
        return args.tokens_per_step
    if args.micro_batch is None:
        raise mfu.MfuInputError("tokens_per_step", "give --tokens-per-step (or --micro-batch with --seq)")
    seq = args.seq or (shape.seq_len if shape else None)
    if seq is None:
        raise mfu.MfuInputError("seq", "--micro-batch needs --seq")
    return mfu.tokens_per_step(args.micro_batch, seq, args.grad_accum, args.dp)


def _step_time(args: argparse.Namespace) -> tuple[float, mfu.StepTimeStats | None]:
    if (args.step_time is None) == (args.step_times is None):
        raise mfu.MfuInputError("step_time", "give exactly one of --step-time and --step-times")
    if args.step_times is None:
        return args.step_time, None
    stats = mfu.summarize_step_times(args.step_times, args.warmup_steps)
    return stats.median_s, stats


def _peak(args: argparse.Namespace) -> tuple[mfu.Peak, float | None]:
    device = None
    if args.gpu is not None:
        from gpuperf_gui.core.hardware import load_database

        device = load_database().get(args.gpu)  # UnknownDeviceError lists close matches
    elif args.peak_flops is None:
        raise mfu.MfuInputError("peak", "give --gpu ID --precision P, or --peak-flops F")
    peak = mfu.resolve_peak(device, args.precision, args.peak_flops)
    return peak, mfu.training_precision_peak(device, args.training_precision)


def _recompute(args: argparse.Namespace) -> mfu.Recompute:
    fractions = (args.recompute_dense, args.recompute_attention)
    if args.recompute != "custom":
        if any(f is not None for f in fractions):
            raise mfu.MfuInputError("recompute", "--recompute-dense/--recompute-attention apply only "
                                    "with --recompute custom")
        return mfu.Recompute.of(args.recompute)
    if any(f is None for f in fractions):
        raise mfu.MfuInputError("recompute", "--recompute custom needs --recompute-dense F and "
                                "--recompute-attention F (fractions 0..1 of the forward recomputed; "
                                "PaLM 540B: 0.75 and 1)")
    return mfu.Recompute.of("custom", *fractions)


def build_inputs(args: argparse.Namespace) -> mfu.MfuInputs:
    """The calculator's inputs from the parsed command line (raises ``MfuInputError``/``KeyError``)."""
    n, note, shape = _model(args)
    tokens = _tokens(args, shape)
    step_time, stats = _step_time(args)
    peak, training_peak = _peak(args)
    recompute = _recompute(args)
    inputs = mfu.MfuInputs(
        n_params=n, tokens_per_step=tokens, step_time_s=step_time, peak=peak, gpus=args.gpus,
        attention=shape, causal=args.causal, recompute=recompute, n_params_note=note,
        step_stats=stats, counted_flops_per_step=args.counted_flops_per_step,
        train_tokens=args.train_tokens, price_per_gpu_hour=args.price_per_gpu_hour,
    )
    if args.training_precision:
        inputs = replace(inputs, training_precision=args.training_precision,
                         training_precision_peak_flops_per_s=training_peak)
    return inputs


def run(args: argparse.Namespace) -> int:
    try:
        result = mfu.compute_mfu(build_inputs(args))
    except (ValueError, KeyError) as exc:  # MfuInputError, UnknownDeviceError, PrecisionUnavailable
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        return fail(message)
    if args.json:
        print_json(result.to_json_dict())
    else:
        print(result.to_text())
    return 0
