"""Model FLOPs utilization (MFU), hardware FLOPs utilization (HFU), and where the rest went.

MFU (PaLM §4.1) = useful model FLOPs per second ÷ the peak the GPUs could deliver. The useful FLOPs
per token follow PaLM Appendix B / nanoGPT / torchtitan by default:

    6·N  +  12·L·H·Q·T        (N parameters; L layers, H heads, Q head dim, T sequence length)

with the attention term optional and, optionally, halved for the causal mask (Megatron-LM since
2025-03). Recomputed activations are hardware FLOPs, not model FLOPs: they count in HFU only.
A forward pass is 2·N + 4·L·H·Q·T per token, so recomputing a fraction ``r`` of it costs
``2·r·N + 4·r·L·H·Q·T`` more (full recompute: 8·N + 16·L·H·Q·T = 4/3 of the model FLOPs).

Every result carries a sentence naming its convention and its denominator. Units are SI: seconds,
FLOPs, FLOP/s. Fractions are 0..1, never percent. No Qt here (R1).

References: docs/reference/metrics.md §2 (nanoGPT, Megatron-LM, PaLM, Chinchilla, torchtitan).
Neighbours: :mod:`.mfu_inputs` builds :class:`MfuInputs` from what a person typed (tab and CLI alike),
:mod:`.mfu_gap` attributes the gap to named causes, :mod:`.mfu_report` writes a result for a report.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpuperf_gui.core.model_presets import ModelConfig, count_params
from gpuperf_gui.core.units import format_count, format_percent, format_si
from gpuperf_gui.core.units import format_duration_s as format_duration

if TYPE_CHECKING:
    from gpuperf_gui.core.hardware import Device

__all__ = [
    "RECOMPUTE_KINDS",
    "SELECTIVE_CONVENTIONS",
    "STEP_TIME_SOURCES",
    "TARGET_MFU",
    "AttentionShape",
    "CeilingModel",
    "ImplausibleMfuError",
    "MfuInputError",
    "MfuInputs",
    "MfuResult",
    "MfuWarning",
    "Peak",
    "Recompute",
    "StepTimeStats",
    "attention_flops_per_token",
    "LIMITS",
    "check_limit",
    "check_result",
    "compute_mfu",
    "describe_convention",
    "explicit_peak",
    "flop_counter_flops_per_step",
    "hardware_flops_per_token",
    "model_flops_per_token",
    "n_params_from_config",
    "peak_from_device",
    "require_plausible",
    "resolve_peak",
    "summarize_step_times",
    "tokens_per_step",
    "training_precision_peak",
]

TARGET_MFU = 0.5  # "headroom to 50 %": a well-tuned large dense run reaches 40–60 % MFU
COUNTED_FLOPS_LOW = 0.8  # counted / model FLOPs below this: tokens per step or N likely too large


class MfuInputError(ValueError):
    """An input that makes the calculation meaningless; ``field`` names it (for marking it in place)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


# --------------------------------------------------------------------------------------------------
# FLOPs per token


@dataclass(frozen=True)
class AttentionShape:
    """What the attention term 12·L·H·Q·T needs: layers, (query) heads, head dim, sequence length."""

    layers: int
    heads: int
    head_dim: int
    seq_len: int

    @classmethod
    def from_config(cls, config: ModelConfig, seq_len: int | None = None) -> AttentionShape:
        """The shape of ``config``'s attention, at ``seq_len`` (default: the config's context)."""
        return cls(config.layers, config.heads, config.head_dim_eff, seq_len or config.seq_len)

    @property
    def lhqt(self) -> float:
        return float(self.layers) * self.heads * self.head_dim * self.seq_len


def attention_flops_per_token(attention: AttentionShape | None, *, causal: bool = False) -> float:
    """12·L·H·Q·T (QKᵀ and A·V, ×2 FLOP per multiply-add, ×3 forward+backward); halved if causal."""
    if attention is None:
        return 0.0
    return 12.0 * attention.lhqt * (0.5 if causal else 1.0)


def model_flops_per_token(
    n_params: float, attention: AttentionShape | None = None, *, causal: bool = False
) -> float:
    """Useful (model) training FLOPs per token: 6·N (+ the attention term if a shape is given)."""
    return 6.0 * n_params + attention_flops_per_token(attention, causal=causal)


RECOMPUTE_KINDS = ("none", "selective", "full", "custom")

SELECTIVE_CONVENTIONS: dict[str, str] = {
    "gpuperf": "the recomputed forward of core attention counted once: + 4·L·H·Q·T per token",
    "korthikanti2022": ("Korthikanti et al. 2022 / Megatron README: the attention core counted again forward "
                        "and backward, + 72·B·s·l·h²·s/(6h) per step = + 12·L·H·Q·T per token"),
}
"""How HFU counts selective recompute; ``gpuperf`` is the default. The published pairs of the
Megatron README (22B 41.5 -> 43.7 %, 175B 51.4 -> 52.8 %, 530B 56.0 -> 57.0 %, 1T 56.3 -> 57.0 %)
follow ``korthikanti2022``."""


@dataclass(frozen=True)
class Recompute:
    """Activation recomputation: which fraction of the forward pass runs a second time.

    ``dense_fraction`` of the parameter (GEMM) forward and ``attention_fraction`` of the attention
    forward. none = (0, 0); selective = (0, 1): the attention core (Korthikanti et al. 2022);
    full = (1, 1): one extra forward, 8·N instead of 6·N; custom = any pair (PaLM 540B: 0.75, 1).
    ``convention`` (:data:`SELECTIVE_CONVENTIONS`) says how selective recompute's attention is
    counted: its recomputed forward (gpuperf, 1/3 of the attention term) or, as the published
    Megatron pairs do, the attention term again in full (korthikanti2022).
    """

    kind: str = "none"
    dense_fraction: float = 0.0
    attention_fraction: float = 0.0
    convention: str = "gpuperf"

    @classmethod
    def of(cls, kind: str, dense_fraction: float | None = None,
           attention_fraction: float | None = None, convention: str = "gpuperf") -> Recompute:
        """The recompute policy called ``kind``; the fractions are used (and required) only for ``"custom"``.

        A custom policy without both fractions raises :class:`MfuInputError` rather than meaning 0 %.
        ``convention`` applies to ``"selective"`` only (the other kinds count the same in both).
        """
        if convention not in SELECTIVE_CONVENTIONS:
            raise MfuInputError("recompute", f"recompute convention must be one of "
                                f"{', '.join(SELECTIVE_CONVENTIONS)}, not {convention!r}")
        presets = {"none": (0.0, 0.0), "selective": (0.0, 1.0), "full": (1.0, 1.0)}
        if kind in presets:
            return cls(kind, *presets[kind], convention if kind == "selective" else "gpuperf")
        if kind != "custom":
            raise MfuInputError("recompute", f"recompute must be one of {', '.join(RECOMPUTE_KINDS)}")
        missing = [name for name, value in (("GEMM (dense) forward", dense_fraction),
                                            ("attention forward", attention_fraction)) if value is None]
        if missing:
            raise MfuInputError(
                "recompute", "custom recompute needs both recomputed fractions (of the GEMM forward and "
                f"of the attention forward); missing: {', '.join(missing)}")
        assert dense_fraction is not None and attention_fraction is not None
        for name, value in (("dense", dense_fraction), ("attention", attention_fraction)):
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise MfuInputError("recompute", f"recomputed {name} fraction must be within 0..1")
        return cls("custom", dense_fraction, attention_fraction)

    @property
    def attention_passes(self) -> float:
        """Thirds of the attention term (12·L·H·Q·T) one recomputed attention forward adds: 1 (its
        forward, 4·L·H·Q·T), or 3 under the korthikanti2022 convention."""
        return 3.0 if self.kind == "selective" and self.convention == "korthikanti2022" else 1.0

    def describe(self) -> str:
        if self.kind == "none":
            return "no recompute (HFU = MFU)"
        if self.kind == "selective":
            return f"selective recompute, {self.convention} convention: {SELECTIVE_CONVENTIONS[self.convention]}"
        if self.kind == "full":
            return "full recompute: one extra forward (8·N instead of 6·N)"
        return (
            f"custom recompute: {self.dense_fraction:.0%} of the GEMM forward and "
            f"{self.attention_fraction:.0%} of the attention forward recomputed"
        )

    def hfu_label(self) -> str:
        """What the HFU beside the MFU counts, in a few words ("selective, gpuperf convention")."""
        if self.kind == "selective":
            return f"selective, {self.convention} convention"
        return {"none": "no recompute", "full": "full recompute"}.get(self.kind, "custom recompute")


def hardware_flops_per_token(
    n_params: float,
    attention: AttentionShape | None = None,
    *,
    causal: bool = False,
    recompute: Recompute = Recompute(),
) -> float:
    """Model FLOPs plus the recomputed forward: + 2·r_d·N + 4·r_a·L·H·Q·T (halved if causal; the
    attention part ×3 under the korthikanti2022 selective convention)."""
    extra = 2.0 * recompute.dense_fraction * n_params
    extra += (recompute.attention_fraction * recompute.attention_passes
              * attention_flops_per_token(attention, causal=causal) / 3.0)
    return model_flops_per_token(n_params, attention, causal=causal) + extra


def flop_counter_flops_per_step(config: ModelConfig, tokens: float, seq_len: int | None = None) -> float:
    """What ``torch.utils.flop_counter.FlopCounterMode`` counts for one training step of ``config``.

    The counter sees only matrix multiplies: 6 × the GEMM weights (no biases, norms or lookup
    tables; the LM head in) per token, and for ``scaled_dot_product_attention`` 2 matmuls forward
    and 5 backward (the flash/efficient backward recomputes QKᵀ), i.e. 14·L·H·Q·T per token over
    the full T×T matrix — 2·L·H·Q·T more than the 12·L·H·Q·T model-FLOPs convention. Dense models.
    """
    counts = count_params(config)
    d, ffn = config.d_model, config.ffn_size_eff
    q_width = config.heads * config.head_dim_eff
    kv_width = config.kv_heads_eff * config.head_dim_eff
    gemm_per_layer = 2 * d * q_width + 2 * d * kv_width
    gemm_per_layer += config.top_k * (3 if config.gated_mlp else 2) * d * ffn
    gemm = config.layers * gemm_per_layer + (counts.lm_head or counts.token_embedding)
    attention = AttentionShape.from_config(config, seq_len)
    return (6.0 * gemm + 14.0 * attention.lhqt) * tokens


def n_params_from_config(config: ModelConfig, *, exclude_embeddings: bool = True) -> tuple[float, str]:
    """N for the FLOP count of ``config`` and a note saying what it contains.

    Active parameters (MoE: router + top-k experts); with ``exclude_embeddings`` the lookup-only
    tables are left out (position table; token table if untied) — torchtitan/nanoGPT/Megatron; the
    LM head stays in. Without it N is every active parameter (PaLM and Kaplan count all).
    """
    counts = count_params(config)
    n = counts.flops_params(exclude_embeddings=exclude_embeddings)
    name = config.name or "custom model"
    parts = [f"{name} from its configuration"]
    if counts.active != counts.total:
        parts.append(f"active (top-{config.top_k} of {config.experts} experts), "
                     f"{format_count(counts.total)} in total")
    else:
        parts.append(f"{format_count(counts.total)} in total")
    if exclude_embeddings and counts.lookup_only:
        parts.append("embedding lookups excluded, LM head kept")
    elif exclude_embeddings:
        parts.append("no lookup-only tables")
    else:
        parts.append("embeddings included")
    return float(n), "; ".join(parts)


# --------------------------------------------------------------------------------------------------
# Tokens and step times


def tokens_per_step(
    micro_batch: int, seq_len: int, grad_accum_steps: int = 1, data_parallel: int = 1
) -> int:
    """Tokens per optimizer step = micro-batch × sequence × gradient-accumulation steps × DP replicas."""
    for name, value in (
        ("micro_batch", micro_batch), ("seq_len", seq_len),
        ("grad_accum_steps", grad_accum_steps), ("data_parallel", data_parallel),
    ):
        if value < 1:
            raise MfuInputError(name, f"{name.replace('_', ' ')} must be at least 1")
    return micro_batch * seq_len * grad_accum_steps * data_parallel


@dataclass(frozen=True)
class StepTimeStats:
    """Steady-state step times: warm-up dropped, median taken, spread reported."""

    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    stdev_s: float
    n_used: int
    n_dropped: int
    first_step_s: float  # the first step given (dropped or not)

    @property
    def relative_spread(self) -> float:
        """(max − min) / median of the steps used."""
        return (self.max_s - self.min_s) / self.median_s

    def describe(self) -> str:
        return (
            f"median of {self.n_used} steps ({self.n_dropped} warm-up dropped): "
            f"{format_duration(self.median_s)}, range {format_duration(self.min_s)}–"
            f"{format_duration(self.max_s)} (±{self.relative_spread / 2:.1%})"
        )


def summarize_step_times(times_s: Sequence[float], warmup_steps: int | None = None) -> StepTimeStats:
    """Drop ``warmup_steps`` leading steps (None: 1 when at least 3 are given), take the median.

    The first steps of a run pay for compilation, autotuning, allocator growth and data-loader
    start-up; the median of the rest is robust to the odd slow step (checkpoint, eval).
    """
    times = [float(t) for t in times_s]
    if not times:
        raise MfuInputError("step_times", "no step times given")
    if any(not math.isfinite(t) or t <= 0 for t in times):
        raise MfuInputError("step_times", "step times must be positive seconds")
    if warmup_steps is None:
        warmup_steps = 1 if len(times) >= 3 else 0
    if warmup_steps < 0 or warmup_steps >= len(times):
        raise MfuInputError("warmup_steps", f"cannot drop {warmup_steps} of {len(times)} steps")
    used = times[warmup_steps:]
    return StepTimeStats(
        median_s=statistics.median(used),
        mean_s=statistics.fmean(used),
        min_s=min(used),
        max_s=max(used),
        stdev_s=statistics.stdev(used) if len(used) > 1 else 0.0,
        n_used=len(used),
        n_dropped=warmup_steps,
        first_step_s=times[0],
    )


# --------------------------------------------------------------------------------------------------
# The denominator


@dataclass(frozen=True)
class Peak:
    """Peak FLOP/s of one GPU and where it came from."""

    flops_per_s_per_gpu: float
    source: str  # "h200 bf16 dense, database" or "explicit"
    precision: str | None = None
    device_id: str | None = None
    sparse: bool = False  # a 2:4-sparse datasheet figure: never a valid MFU denominator
    above_known: bool = False  # an explicit peak above every dense figure of the database (its precision)


def peak_from_device(device: Device, precision: str) -> Peak:
    """The dense peak of ``device`` at ``precision`` (``PrecisionUnavailableError`` if it has none)."""
    flops = device.peak_flops_per_s(precision)
    origin = "measured on this machine" if device.origin == "measured" else "dense, database"
    return Peak(flops, f"{device.id} {precision} {origin}", precision, device.id)


def explicit_peak(
    flops_per_s_per_gpu: float, device: Device | None = None, precision: str | None = None,
    known_devices: Sequence[Device] = (),
) -> Peak:
    """A peak typed by the user; checked against ``device``'s sparse figures when one is known, else
    against every ``known_devices`` (the database) at ``precision``: equal to one of their sparse
    figures and to none of their dense ones is a sparse figure; above all their dense ones is
    flagged too (:attr:`Peak.above_known`)."""
    if not math.isfinite(flops_per_s_per_gpu) or flops_per_s_per_gpu <= 0:
        raise MfuInputError("peak", "peak FLOP/s must be positive")
    sparse = False
    if device is not None:
        dense = dict(getattr(device, "dense_flops_per_s", {}) or {})
        sparse_figures = dict(getattr(device, "sparse_flops_per_s", {}) or {})
        if precision and precision in dense:
            sparse_figures.setdefault(precision, 2.0 * dense[precision])
        matches_dense = any(math.isclose(flops_per_s_per_gpu, v, rel_tol=0.02) for v in dense.values())
        matches_sparse = any(
            math.isclose(flops_per_s_per_gpu, v, rel_tol=0.02) for v in sparse_figures.values()
        )
        sparse = matches_sparse and not matches_dense
        if precision and precision in dense and math.isclose(
            flops_per_s_per_gpu, 2.0 * dense[precision], rel_tol=0.02
        ):
            sparse = True
        return Peak(flops_per_s_per_gpu, "explicit", precision, getattr(device, "id", None), sparse)
    sparse, above = _against_known(flops_per_s_per_gpu, precision, known_devices)
    return Peak(flops_per_s_per_gpu, "explicit", precision, None, sparse, above)


def _against_known(flops: float, precision: str | None, devices: Sequence[Device]) -> tuple[bool, bool]:
    """(a known sparse figure, above every known dense one) at ``precision`` (every precision
    without one). Per precision: H100's sparse bf16 1979e12 equals its dense fp8 figure."""
    def figures(kind: str) -> list[float]:
        out = []
        for d in devices:
            table = dict(getattr(d, kind, {}) or {})
            out += [v for p, v in table.items() if precision is None or p == precision]
        return out
    dense, sparse = figures("dense_flops_per_s"), figures("sparse_flops_per_s")
    is_dense = any(math.isclose(flops, v, rel_tol=0.005) for v in dense)
    is_sparse = any(math.isclose(flops, v, rel_tol=0.005) for v in sparse) and not is_dense
    above = bool(dense) and flops > 1.02 * max(dense) and not is_sparse
    return is_sparse, above


def resolve_peak(
    device: Device | None, precision: str | None, explicit_flops_per_s: float | None = None,
    known_devices: Sequence[Device] = (),
) -> Peak:
    """The denominator: an explicit per-GPU peak (checked against ``device``, else against
    ``known_devices``), else the device's dense peak."""
    if explicit_flops_per_s is not None:
        return explicit_peak(explicit_flops_per_s, device, precision, known_devices)
    if device is None or precision is None:
        raise MfuInputError("peak", "give a device and a precision, or an explicit peak")
    try:
        return peak_from_device(device, precision)
    except ValueError as exc:  # PrecisionUnavailableError
        raise MfuInputError("peak", str(exc)) from exc


def training_precision_peak(device: Device | None, precision: str | None) -> float | None:
    """The device's dense peak at the training precision, if both are known (for the mismatch check)."""
    if device is None or not precision:
        return None
    return (getattr(device, "dense_flops_per_s", {}) or {}).get(precision)


# --------------------------------------------------------------------------------------------------
# Ceiling model


@dataclass(frozen=True)
class CeilingModel:
    """A step's wall clock split into parts, each running at a fraction of peak.

    Defaults: big GEMMs 75 % of the time at 0.92 of peak, memory-bound ops 15 % at 0.10, exposed
    communication / launch gaps 10 % at 0 → a practical ceiling of 0.705 of peak (hardware FLOPs).
    """

    gemm_time_fraction: float = 0.75
    gemm_efficiency: float = 0.92
    memory_time_fraction: float = 0.15
    memory_efficiency: float = 0.10
    idle_time_fraction: float = 0.10
    idle_efficiency: float = 0.0

    def validate(self) -> None:
        for name, value in asdict(self).items():
            if not 0.0 <= value <= 1.0:
                raise MfuInputError(f"ceiling.{name}", f"{name.replace('_', ' ')} must be within 0..1")
        total = self.gemm_time_fraction + self.memory_time_fraction + self.idle_time_fraction
        if not math.isclose(total, 1.0, abs_tol=0.005):
            raise MfuInputError(
                "ceiling.idle_time_fraction", f"time fractions add up to {total:.1%}, not 100 %"
            )

    @property
    def ceiling(self) -> float:
        """Practical ceiling of HFU: Σ time fraction × efficiency."""
        return (
            self.gemm_time_fraction * self.gemm_efficiency
            + self.memory_time_fraction * self.memory_efficiency
            + self.idle_time_fraction * self.idle_efficiency
        )


# --------------------------------------------------------------------------------------------------
# The calculation


STEP_TIME_SOURCES = ("given", "trace", "example")
"""Where the step time came from: typed or given on the command line; the median of a trace's
steady steps (profiled, so slower than unprofiled ones); a preset's published example run."""

# What is physically meaningful: (smallest, largest, label, unit). A value outside is a typo or an
# attack, never a run: 1e-320 s steps, 1e29 GPUs and 1e400-wide layers are refused with the field named.
LIMITS: dict[str, tuple[float, float, str, str]] = {
    "n_params": (1e3, 1e15, "parameters N", ""),
    "tokens_per_step": (1.0, 1e11, "tokens per step", ""),
    "step_time_s": (1e-6, 1e7, "step time", " s"),
    "peak": (1e9, 1e18, "peak", " FLOP/s per GPU"),
    "gpus": (1.0, 1e7, "GPU count", ""),
    "layers": (1.0, 1e5, "layers", ""),
    "heads": (1.0, 1e5, "heads", ""),
    "head_dim": (1.0, 1e5, "head dim", ""),
    "seq_len": (1.0, 1e9, "sequence length", ""),
    "train_tokens": (0.0, 1e17, "tokens to train", ""),
    "price": (0.0, 1e7, "price per GPU-hour", ""),
    "counted_flops": (0.0, 1e30, "counted FLOPs per step", ""),
}


def check_limit(name: str, value: float, *, allow_zero: bool = False) -> None:
    """Raise :class:`MfuInputError` unless ``value`` is finite and within :data:`LIMITS` [name]."""
    low, high, label, unit = LIMITS[name]
    units = {"step_time_s": " (seconds)", "peak": " (FLOP/s per GPU)"}
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MfuInputError(name, f"{label} must be a finite number{units.get(name, '')}")
    if value < 0 or (value == 0 and not allow_zero):
        raise MfuInputError(name, f"{label} {'cannot be negative' if allow_zero else 'must be positive'}"
                            f"{units.get(name, '')}")
    if not low <= value <= high and not (allow_zero and value == 0):
        raise MfuInputError(name, f"{label} must be within {low:g}{unit} and {high:g}{unit}, not {value:g}")


@dataclass(frozen=True)
class MfuWarning:
    code: str
    message: str
    severity: str = "warning"  # "warning" | "error" (the number is impossible)


@dataclass(frozen=True)
class MfuInputs:
    """Everything the calculation needs. ``n_params`` is N as used for FLOPs (active, see convention)."""

    n_params: float
    tokens_per_step: float
    step_time_s: float
    peak: Peak
    gpus: int = 1
    attention: AttentionShape | None = None
    causal: bool = False
    recompute: Recompute = Recompute()
    n_params_note: str = "N given"
    training_precision: str | None = None
    training_precision_peak_flops_per_s: float | None = None  # the device's peak at that precision
    step_stats: StepTimeStats | None = None
    counted_flops_per_step: float | None = None  # e.g. from FlopCounterMode or a framework log
    train_tokens: float | None = None
    price_per_gpu_hour: float | None = None
    ceiling: CeilingModel = CeilingModel()

    step_time_source: str = "given"  # one of STEP_TIME_SOURCES
    profiler_overhead: float | None = None  # profiled / unprofiled step time − 1, where both were measured
    timed_steps: int | None = None  # steps behind a single step time (a trace's steady steps); None: unknown
    tokens_given: bool = False  # tokens per step typed, not micro-batch × sequence × accumulation × DP
    grad_accum: int = 1  # as given (ignored when tokens_given)
    data_parallel: int = 1
    config_n_params: float | None = None  # N of the configuration given beside an explicit N

    def validate(self) -> None:
        """Raise :class:`MfuInputError` naming the first input that is not a positive, finite number
        within :data:`LIMITS` (what is physically meaningful)."""
        checks = (
            ("n_params", self.n_params), ("tokens_per_step", self.tokens_per_step),
            ("step_time_s", self.step_time_s), ("peak", self.peak.flops_per_s_per_gpu),
            ("gpus", self.gpus),
        )
        for name, value in checks:
            check_limit(name, value)
        if self.gpus != int(self.gpus):
            raise MfuInputError("gpus", "GPU count must be a whole number")
        if self.attention is not None:
            for name, value in asdict(self.attention).items():
                check_limit(name, value)
        for name, value in (("train_tokens", self.train_tokens), ("price", self.price_per_gpu_hour),
                            ("counted_flops", self.counted_flops_per_step)):
            if value is not None:
                check_limit(name, value, allow_zero=True)
        if self.step_time_source not in STEP_TIME_SOURCES:
            raise MfuInputError("step_time_s", f"unknown step-time source {self.step_time_source!r}")
        self.ceiling.validate()


@dataclass(frozen=True)
class MfuResult:
    inputs: MfuInputs
    convention: str
    model_flops_per_token: float
    hardware_flops_per_token: float
    model_flops_per_step: float
    hardware_flops_per_step: float
    achieved_flops_per_s_per_gpu: float
    hardware_flops_per_s_per_gpu: float
    peak_flops_per_s_per_gpu: float
    peak_flops_per_s_total: float
    mfu: float
    hfu: float
    headroom_to_target: float  # MFU points to 50 % (0 when above)
    speedup_to_target: float  # step-time speedup needed to reach 50 % MFU
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    time_to_train_s: float | None
    cost_per_million_tokens: float | None
    practical_ceiling: float  # of HFU (ceiling model)
    mfu_ceiling: float  # the ceiling in MFU terms with this recompute (× MFU/HFU)
    counted_flops_ratio: float | None
    fraction_of_ceiling: float | None = None  # MFU / mfu_ceiling; None when the ceiling is 0
    hfu_over_mfu: float | None = None  # hardware ÷ model FLOPs (recompute); None when MFU is 0
    warnings: tuple[MfuWarning, ...] = field(default_factory=tuple)

    def to_json_dict(self) -> dict[str, Any]:
        """docs/cli.md's ``gpuperf mfu --json`` keys (fractions, SI units) plus the convention and extras."""
        i = self.inputs
        return {
            "mfu": self.mfu,
            "hfu": self.hfu,
            "model_flops_per_step": self.model_flops_per_step,
            "achieved_flops_per_s_per_gpu": self.achieved_flops_per_s_per_gpu,
            "peak_flops_per_s_per_gpu": self.peak_flops_per_s_per_gpu,
            "tokens_per_s": self.tokens_per_s,
            "warnings": [w.message for w in self.warnings],
            "warning_codes": [w.code for w in self.warnings],
            "convention": self.convention,
            "model_flops_per_token": self.model_flops_per_token,
            "hardware_flops_per_token": self.hardware_flops_per_token,
            "hardware_flops_per_step": self.hardware_flops_per_step,
            "peak_source": i.peak.source,
            "peak_precision": i.peak.precision,
            "gpus": i.gpus,
            "n_params": i.n_params,
            "tokens_per_step": i.tokens_per_step,
            "step_time_s": i.step_time_s,
            "recompute": i.recompute.kind,
            "recompute_convention": i.recompute.convention,
            "hfu_convention": i.recompute.hfu_label(),
            "attention_term": i.attention is not None,
            "causal_halving": i.causal and i.attention is not None,
            "headroom_to_50pct": self.headroom_to_target,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "time_to_train_s": self.time_to_train_s,
            "cost_per_million_tokens": self.cost_per_million_tokens,
            "practical_ceiling": self.practical_ceiling,
            "mfu_ceiling": self.mfu_ceiling,
            "step_time_stats": asdict(i.step_stats) if i.step_stats else None,
            "step_time_source": i.step_time_source,
            "profiler_overhead": i.profiler_overhead if (i.profiler_overhead or 0.0) > 0 else None,
        }

    def _rows(self) -> list[tuple[str, str]]:
        rows = [
            ("MFU", f"{self.mfu:.1%}"),
            ("HFU", f"{self.hfu:.1%} ({self.inputs.recompute.hfu_label()})"),
            ("Achieved per GPU", format_si(self.achieved_flops_per_s_per_gpu, "FLOP/s")),
            ("Peak per GPU", f"{format_si(self.peak_flops_per_s_per_gpu, 'FLOP/s', 4)} "
             f"({self.inputs.peak.source}) × {self.inputs.gpus} GPU(s)"),
            ("Headroom to 50 % MFU", f"{self.headroom_to_target:.1%} "
             f"(step {self.speedup_to_target:.2f}× faster)" if self.headroom_to_target > 0 else "none"),
            ("Model FLOPs per step", format_si(self.model_flops_per_step, "FLOP")),
            ("Tokens/s", f"{format_count(self.tokens_per_s)} ({format_count(self.tokens_per_s_per_gpu)} per GPU)"),
            ("Step time", (format_duration(self.inputs.step_time_s) if self.inputs.step_stats is None
                           else self.inputs.step_stats.describe())
             + {"trace": " (from a trace: profiled steps)", "example": " (published example run)"}.get(
                 self.inputs.step_time_source, "")),
            ("Practical ceiling", f"{self.practical_ceiling:.1%} HFU = {self.mfu_ceiling:.1%} MFU"),
        ]
        if self.time_to_train_s is not None:
            rows.append(("Time to train", format_duration(self.time_to_train_s)))
        if self.cost_per_million_tokens is not None:
            rows.append(("Cost per M tokens", f"{self.cost_per_million_tokens:.4g}"))
        return rows

    def to_text(self) -> str:
        """Plain text for a terminal or a chat message."""
        width = max(len(k) for k, _ in self._rows())
        lines = [f"{k:<{width}}  {v}" for k, v in self._rows()]
        lines.append(f"Convention: {self.convention}")
        lines += [f"WARNING: {w.message}" for w in self.warnings]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A Markdown table for a report."""
        lines = ["| Metric | Value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in self._rows()]
        lines += ["", f"*Convention:* {self.convention}"]
        lines += [f"- **Warning:** {w.message}" for w in self.warnings]
        return "\n".join(lines)


def describe_convention(inputs: MfuInputs) -> str:
    """One sentence naming the FLOP convention, N, the recompute policy and the denominator."""
    if inputs.attention is None:
        flops = "model FLOPs = 6·N per token (Kaplan/PaLM, no attention term)"
    elif inputs.causal:
        flops = ("model FLOPs = 6·N + 6·L·H·Q·T per token (attention halved for the causal mask, "
                 "Megatron-LM ≥ 2025-03)")
    else:
        flops = ("model FLOPs = 6·N + 12·L·H·Q·T per token (PaLM App. B / nanoGPT / torchtitan; "
                 "full T×T attention)")
    peak = inputs.peak
    return (
        f"{flops}; N = {format_count(inputs.n_params)} ({inputs.n_params_note}); "
        f"{inputs.recompute.describe()}; peak = {format_si(peak.flops_per_s_per_gpu, 'FLOP/s', 4)}"
        f" per GPU ({peak.source}) × {inputs.gpus} GPU(s)"
    )


def compute_mfu(inputs: MfuInputs) -> MfuResult:
    """MFU, HFU and the figures around them for one training configuration.

    Raises :class:`MfuInputError` (a ``ValueError`` naming the field) for inputs that make the
    result meaningless; returns warnings for inputs that make it probably wrong.
    """
    inputs.validate()
    model_per_token = model_flops_per_token(inputs.n_params, inputs.attention, causal=inputs.causal)
    hw_per_token = hardware_flops_per_token(
        inputs.n_params, inputs.attention, causal=inputs.causal, recompute=inputs.recompute
    )
    model_per_step = model_per_token * inputs.tokens_per_step
    hw_per_step = hw_per_token * inputs.tokens_per_step
    gpus = int(inputs.gpus)
    achieved = model_per_step / inputs.step_time_s / gpus
    achieved_hw = hw_per_step / inputs.step_time_s / gpus
    peak = inputs.peak.flops_per_s_per_gpu
    mfu, hfu = achieved / peak, achieved_hw / peak
    tokens_per_s = inputs.tokens_per_step / inputs.step_time_s
    ceiling = inputs.ceiling.ceiling
    mfu_ceiling = ceiling * model_per_token / hw_per_token
    result = MfuResult(
        inputs=inputs,
        convention=describe_convention(inputs),
        model_flops_per_token=model_per_token,
        hardware_flops_per_token=hw_per_token,
        model_flops_per_step=model_per_step,
        hardware_flops_per_step=hw_per_step,
        achieved_flops_per_s_per_gpu=achieved,
        hardware_flops_per_s_per_gpu=achieved_hw,
        peak_flops_per_s_per_gpu=peak,
        peak_flops_per_s_total=peak * gpus,
        mfu=mfu,
        hfu=hfu,
        headroom_to_target=max(0.0, TARGET_MFU - mfu),
        speedup_to_target=TARGET_MFU / mfu,
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=tokens_per_s / gpus,
        time_to_train_s=inputs.train_tokens / tokens_per_s if inputs.train_tokens else None,
        cost_per_million_tokens=(
            inputs.price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6
            if inputs.price_per_gpu_hour is not None else None
        ),
        practical_ceiling=ceiling,
        mfu_ceiling=mfu_ceiling,
        counted_flops_ratio=(
            inputs.counted_flops_per_step / model_per_step if inputs.counted_flops_per_step else None
        ),
        fraction_of_ceiling=mfu / mfu_ceiling if mfu_ceiling > 0 else None,
        hfu_over_mfu=hfu / mfu if mfu > 0 else None,
    )
    return _with_warnings(result)


class ImplausibleMfuError(MfuInputError):
    """MFU above 100 %: not a result but inconsistent inputs; the message says which is likely wrong."""


def require_plausible(result: MfuResult) -> MfuResult:
    """``result`` if its MFU is at most 100 %; else raise :class:`ImplausibleMfuError`.

    Over 100 % the inputs describe different runs (tokens of one run over the time or GPUs of
    another). The message names the likely wrong input (a trace measures the step time and the
    GPUs, so then the model or the tokens per step) and what each input would have to be.
    """
    if result.mfu <= 1.0:
        return result
    i, factor = result.inputs, result.mfu
    need = [f"tokens per step ≤ {format_count(i.tokens_per_step / factor)} "
            f"(given {format_count(i.tokens_per_step)})"]
    attention = result.model_flops_per_token - 6.0 * i.n_params
    n_max = (result.model_flops_per_token / factor - attention) / 6.0
    if n_max > 0:
        need.append(f"N ≤ {format_count(n_max)} (given {format_count(i.n_params)})")
    need.append(f"step time ≥ {format_duration(i.step_time_s * factor)} "
                f"(given {format_duration(i.step_time_s)})")
    need.append(f"GPUs ≥ {math.ceil(i.gpus * factor - 1e-9):,} (given {i.gpus:,})")
    ratio = _precision_ratio(i)
    if i.training_precision and i.peak.precision and ratio is not None and ratio > 1.01:
        likely = (f"Likely the peak: it is the {i.peak.precision} one, but training runs in "
                  f"{i.training_precision}, whose peak is {ratio:.3g}× higher"
                  + (f" (MFU {_percent(result.mfu / ratio)} against it)" if result.mfu / ratio <= 1 else "")
                  + f": use the {i.training_precision} peak.")
        field_name = "precision"
        need.insert(0, f"the {i.training_precision} peak")
    elif i.step_time_source == "trace":
        likely = ("The step time and the GPUs come from the trace, so the model size or the tokens "
                  "per step are likely wrong: enter those of the traced run.")
        field_name = "tokens_per_step"
    else:
        likely = ("Likely the tokens per step: tokens of the accumulated step over one micro-batch's "
                  "time, or tokens of all replicas over one replica's GPUs; or a peak that is too low.")
        field_name = "tokens_per_step"
    raise ImplausibleMfuError(
        field_name,
        f"MFU would be {_percent(result.mfu)}: impossible, so the inputs "
        f"describe different runs. {likely} For MFU ≤ 100 % with the rest unchanged: "
        + ", or ".join(need) + ".")


def _percent(fraction: float) -> str:
    """A fraction as "12%"; far above 1 (a slip in the inputs) as a multiple: "250× the peak"."""
    return format_percent(fraction, 0, space=False) if fraction < 100 else f"{fraction:.3g}× the peak"


def _with_warnings(result: MfuResult) -> MfuResult:
    return replace(result, warnings=tuple(check_result(result)))


def check_result(result: MfuResult) -> list[MfuWarning]:
    """The checks that catch a wrong MFU; each returns a plain-language warning, silent when sound."""
    i, warnings = result.inputs, []
    if i.peak.sparse:
        warnings.append(MfuWarning(
            "sparse_peak",
            f"The peak {format_si(i.peak.flops_per_s_per_gpu, 'FLOP/s')} is a 2:4-sparse "
            "datasheet figure (twice the dense one). Dense training cannot use sparsity: MFU against "
            "it is halved. Use the dense peak.", "error"))
    if i.peak.above_known:
        warnings.append(MfuWarning(
            "peak_above_known",
            f"The peak {format_si(i.peak.flops_per_s_per_gpu, 'FLOP/s')} per GPU is above every dense "
            f"{i.peak.precision or ''} peak in the device database: likely a sparse or a multi-GPU "
            "figure (a superchip, a node). Use one GPU's dense peak."))
    warnings += _precision_warnings(i)
    if i.recompute.kind == "selective" and i.attention is None:
        warnings.append(MfuWarning(
            "recompute_needs_attention",
            "Selective recompute repeats the attention core, which is only counted with the "
            "attention shape (layers, heads, head dim, sequence): HFU = MFU here."))
    warnings += _plausibility_warnings(result)
    warnings += _step_time_warnings(i.step_stats, i.timed_steps)
    warnings += _batch_warnings(i)
    warnings += _n_params_warnings(result)
    warnings += _profiler_warnings(i)
    return warnings


def _precision_ratio(i: MfuInputs) -> float | None:
    """The training precision's peak over the peak used (None: not known)."""
    if not i.training_precision_peak_flops_per_s:
        return None
    return i.training_precision_peak_flops_per_s / i.peak.flops_per_s_per_gpu


def _precision_warnings(i: MfuInputs) -> list[MfuWarning]:
    """The peak's precision is not the training precision, and (where both peaks are known) they
    differ: fp16 and bf16 on an H100 are the same 989.4 TFLOP/s, so nothing to warn about."""
    if not (i.training_precision and i.peak.precision and i.training_precision != i.peak.precision):
        return []
    ratio, direction = _precision_ratio(i), ""
    if ratio is not None:
        if 0.99 <= ratio <= 1.01:
            return []
        word = "higher: this MFU is overstated" if ratio > 1 else "lower: this MFU is understated"
        shown = f"{ratio:.2g}×" if ratio > 1 else f"{1 / ratio:.2g}×"
        direction = f" The {i.training_precision} peak is {shown} {word}."
    return [MfuWarning(
        "precision_mismatch",
        f"Training runs in {i.training_precision} but the peak is the {i.peak.precision} one."
        f"{direction} Use the peak of the precision the GEMMs run in.")]


def _batch_warnings(i: MfuInputs) -> list[MfuWarning]:
    if not i.tokens_given or (i.grad_accum == 1 and i.data_parallel == 1):
        return []
    factor = i.grad_accum * i.data_parallel
    return [MfuWarning(
        "batch_options_ignored",
        f"Gradient accumulation {i.grad_accum} and data parallel {i.data_parallel} are not used: the "
        f"tokens per step ({format_count(i.tokens_per_step)}) are taken as the whole optimizer step's, all "
        f"micro-batches of all replicas. If they are one micro-batch's, the step has {factor}× as many "
        f"({format_count(i.tokens_per_step * factor)}): give the micro-batch instead.")]


RECOMPUTE_AS_N = 8.0 / 6.0
"""N over the configuration's N when full recompute's 8·N was counted as 6·N (N taken 4/3 too large)."""


def _n_params_warnings(result: MfuResult) -> list[MfuWarning]:
    """N given beside a configuration is checked against the configuration's own count."""
    i = result.inputs
    if not i.config_n_params:
        return []
    ratio = i.n_params / i.config_n_params
    counted = {RECOMPUTE_AS_N}
    if i.recompute.kind != "none":
        counted.add(result.hfu_over_mfu or 1.0)
    if any(r > 1.01 and math.isclose(ratio, r, rel_tol=0.02) for r in counted):
        return [MfuWarning(
            "recompute_counted_as_useful",
            f"N = {format_count(i.n_params)} is {ratio:.3f}× the configuration's "
            f"{format_count(i.config_n_params)}, the factor recompute adds to the FLOPs: recompute FLOPs "
            "seem counted as useful (e.g. 8·N of full recompute taken as 6·N). MFU uses the model's N.")]
    if not 0.97 <= ratio <= 1.03:
        return [MfuWarning(
            "n_params_differs",
            f"N = {format_count(i.n_params)} is {ratio:.3g}× the {format_count(i.config_n_params)} the "
            "configuration gives: check which parameters N counts (embeddings, all or active experts).")]
    return []


# Profiled vs unprofiled median steps of the H200 runs in tests/data/shared_traces/h200 (meta.json has
# the unprofiled time): healthy_gpt_small +4.4 %, launch_bound_tiny +28 % (many tiny ops: the
# profiler's per-op cost shows most).
PROFILER_SLOWDOWN = "+4 % for a GEMM-bound GPT to +28 % for a launch-bound model"


def _profiler_warnings(i: MfuInputs) -> list[MfuWarning]:
    overhead = (f" On this run the profiled steps took {i.profiler_overhead:+.1%} longer than unprofiled ones."
                if i.profiler_overhead is not None else "")
    if i.profiler_overhead is not None and i.profiler_overhead <= 0:  # the profiler adds work, never removes it
        overhead = (f" The trace's profiled steps are {-i.profiler_overhead:.0%} shorter than the step time given: "
                    "the two were not timed on the same run or under the same conditions, so the profiler's "
                    "overhead is not measurable from them.")
    if i.step_time_source == "trace":
        return [MfuWarning(
            "profiled_step_time",
            "The step time is the median of the trace's steady steps, which ran under torch.profiler: "
            f"profiled steps run slower than unprofiled ones ({PROFILER_SLOWDOWN} on the H200 runs "
            f"measured for gpuperf), so this MFU is a lower bound.{overhead} Time unprofiled steps for the run's "
            "own MFU.")]
    if i.profiler_overhead is not None:
        return [MfuWarning("profiler_overhead", f"The step time is unprofiled.{overhead}")]
    return []


def _plausibility_warnings(result: MfuResult) -> list[MfuWarning]:
    i, ceiling = result.inputs, result.practical_ceiling
    if result.mfu > 1.0:
        return [MfuWarning(
            "mfu_above_100",
            f"MFU {result.mfu:.0%} is impossible. Tokens per step and step time describe different "
            "steps (e.g. tokens of the accumulated step over the time of one micro-batch, or tokens "
            "of all replicas over one replica's GPUs), or the peak is too low.", "error")]
    warnings = []
    if result.mfu > 1.15 * ceiling:
        warnings.append(MfuWarning(
            "mfu_above_ceiling",
            f"MFU {result.mfu:.0%} is far above the practical ceiling ({ceiling:.0%}). Check that the "
            "tokens per step and the step time are for the same step (micro-batch vs accumulated "
            "step, per-GPU vs global batch)."))
    elif i.recompute.kind != "none" and result.hfu > 1.05 * ceiling:
        warnings.append(MfuWarning(
            "recompute_counted_as_useful",
            f"With {i.recompute.kind} recompute the hardware does {result.hfu_over_mfu or 1.0:.2f}× the "
            f"model FLOPs, so HFU would be {result.hfu:.0%}, above the practical ceiling "
            f"({ceiling:.0%}): MFU this high is implausible. Recompute FLOPs may have been counted as "
            "useful (e.g. N or FLOPs per token taken from a counter or a 4×/8·N formula)."))
    if result.counted_flops_ratio is not None and result.counted_flops_ratio < COUNTED_FLOPS_LOW:
        warnings.append(MfuWarning(
            "counted_flops_low",
            f"The counted FLOPs per step are only {result.counted_flops_ratio * 100:.3g} % of the model FLOPs "
            f"({format_si(i.counted_flops_per_step or 0.0, 'FLOP')} counted vs "
            f"{format_si(result.model_flops_per_step, 'FLOP')}): the counted FLOPs are far below "
            "6·N·tokens: tokens per step or N may be too large (or the counter saw only part of the "
            "step, e.g. one micro-batch or one rank)."))
    if result.counted_flops_ratio is not None and result.counted_flops_ratio > 1.2:
        warnings.append(MfuWarning(
            "recompute_counted_as_useful",
            f"The counted FLOPs per step are {result.counted_flops_ratio:.2f}× the model FLOPs. A "
            "counter running during training also sees recomputed forwards (and FlashAttention's "
            "backward recompute): those are hardware FLOPs (HFU), not model FLOPs (MFU)."))
    return warnings


def _step_time_warnings(stats: StepTimeStats | None, timed_steps: int | None = None) -> list[MfuWarning]:
    if stats is None:
        if timed_steps == 1:
            return [MfuWarning(
                "single_step",
                "The step time is one step's (the trace has one steady step). A single step includes "
                "noise and, if it is the first, compilation and warm-up. Time 10 or more steps and take "
                "the median.")]
        return []
    if stats.n_used == 1:
        return [MfuWarning(
            "single_step",
            "Only one step is timed. A single step includes noise and, if it is the first, "
            "compilation and warm-up. Time 10 or more steps and take the median.")]
    if stats.n_dropped == 0 and stats.first_step_s > 1.3 * stats.median_s:
        return [MfuWarning(
            "warmup_included",
            f"The first step ({format_duration(stats.first_step_s)}) is "
            f"{stats.first_step_s / stats.median_s:.1f}× the median: a warm-up step is included. "
            "Drop it (warm-up steps ≥ 1).")]
    return []
