"""Transformer model configurations, their parameter counts, and presets of well-known models.

Every preset is the model's *published configuration* (layers, width, heads, FFN size, vocabulary, …);
its parameter count is computed here from that configuration, never typed in as a number, so a
preset can be checked against the paper or the checkpoint that published it.

Conventions of the count (decoder-only transformer):

- attention: Q projection ``d_model × heads·head_dim``, K and V ``d_model × kv_heads·head_dim`` each
  (GQA/MQA: ``kv_heads < heads``), output projection ``heads·head_dim × d_model``;
- MLP: ``2·d_model·ffn`` (ungated, GELU) or ``3·d_model·ffn`` (gated: SwiGLU/GeGLU), per expert;
  MoE layers add a router ``d_model × experts``; a token runs through ``top_k`` experts;
- norms: LayerNorm has a weight and, if ``bias``, a bias (``2·d_model``), RMSNorm a weight only; two per layer
  (one for "parallel" blocks such as PaLM), plus a final norm;
- embeddings: token table ``vocab × d_model``, optional learned position table ``seq × d_model``;
  the LM head is the token table when tied, a separate ``d_model × vocab`` matrix when untied.

No Qt here (R1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

__all__ = [
    "ConfigError",
    "EXAMPLE_RUNS",
    "ExampleRun",
    "ModelConfig",
    "ParamCount",
    "PRESETS",
    "config_from_hf",
    "count_params",
    "get_preset",
    "preset_names",
]


class ConfigError(ValueError):
    """An inconsistent model configuration; ``field`` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


CONFIG_LIMITS: dict[str, int] = {
    "layers": 100_000, "d_model": 10_000_000, "heads": 100_000, "vocab_size": 1_000_000_000,
    "seq_len": 1_000_000_000, "experts": 1_000_000, "top_k": 1_000_000, "kv_heads": 100_000,
    "head_dim": 100_000, "ffn_size": 1_000_000_000, "norms_per_layer": 8,
}


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, as its paper or ``config.json`` describes it."""

    name: str
    layers: int
    d_model: int
    heads: int
    vocab_size: int
    seq_len: int
    kv_heads: int | None = None  # None: = heads (multi-head attention)
    head_dim: int | None = None  # None: d_model // heads
    ffn_size: int | None = None  # None: 4 * d_model
    gated_mlp: bool = False
    tied_embeddings: bool = False
    learned_positions: bool = False
    bias: bool = False  # biases in the linear layers and LayerNorms (GPT-2: yes; Llama: no)
    norm: str = "rmsnorm"  # "layernorm" (weight + bias) | "rmsnorm" (weight)
    norms_per_layer: int = 2
    experts: int = 1
    top_k: int = 1
    source: str = ""  # where the configuration was published

    @property
    def kv_heads_eff(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def head_dim_eff(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.heads

    @property
    def ffn_size_eff(self) -> int:
        return self.ffn_size if self.ffn_size is not None else 4 * self.d_model

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first inconsistent field or one outside
        :data:`CONFIG_LIMITS` (no real transformer is wider, deeper or longer)."""
        for name, high in CONFIG_LIMITS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(name, f"{name} must be a whole number, not {value!r}")
            if not 1 <= value <= high:
                raise ConfigError(name, f"{name} must be within 1 and {high:,}, not {value:,}")
        if self.head_dim is None and self.d_model % self.heads:
            raise ConfigError("heads", "d_model must be divisible by heads (or give head_dim)")
        if self.heads % self.kv_heads_eff:
            raise ConfigError("kv_heads", "heads must be a multiple of kv_heads")
        if self.top_k > self.experts:
            raise ConfigError("top_k", "top_k cannot exceed the number of experts")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ConfigError("norm", "norm must be 'layernorm' or 'rmsnorm'")


@dataclass(frozen=True)
class ParamCount:
    """Parameters of a :class:`ModelConfig`, split the ways MFU conventions need."""

    total: int  # every parameter (all experts)
    active: int  # parameters a token runs through (top_k experts)
    token_embedding: int  # vocab × d_model input table (also the LM head when tied)
    position_embedding: int  # learned position table (0 if none)
    lm_head: int  # separate output matrix (0 when tied)
    attention_per_layer: int
    mlp_per_layer_total: int
    mlp_per_layer_active: int
    tied: bool = field(default=False)

    @property
    def lookup_only(self) -> int:
        """Parameters used only as lookup tables (no matmul): positions, and the token table if untied."""
        return self.position_embedding + (0 if self.tied else self.token_embedding)

    def flops_params(self, *, exclude_embeddings: bool = True) -> int:
        """N for the FLOP count: active parameters, without the lookup-only tables if asked.

        With ``exclude_embeddings`` (torchtitan, nanoGPT, Megatron: no GEMM for a lookup) a tied token
        table stays in N because it is the LM head's weight; an untied LM head always stays in.
        """
        return self.active - (self.lookup_only if exclude_embeddings else 0)


def count_params(config: ModelConfig) -> ParamCount:
    """Count the parameters of ``config`` (see the module docstring for what is counted)."""
    config.validate()
    d, q_width = config.d_model, config.heads * config.head_dim_eff
    kv_width = config.kv_heads_eff * config.head_dim_eff
    attention = d * q_width + 2 * d * kv_width + q_width * d
    if config.bias:
        attention += q_width + 2 * kv_width + d
    ffn = config.ffn_size_eff
    expert = (3 if config.gated_mlp else 2) * d * ffn
    if config.bias:
        expert += (2 * ffn if config.gated_mlp else ffn) + d
    router = d * config.experts if config.experts > 1 else 0
    mlp_total = config.experts * expert + router
    mlp_active = config.top_k * expert + router
    norm_size = (2 if config.norm == "layernorm" and config.bias else 1) * d
    per_layer_norms = config.norms_per_layer * norm_size
    token = config.vocab_size * d
    position = config.seq_len * d if config.learned_positions else 0
    lm_head = 0 if config.tied_embeddings else d * config.vocab_size
    common = token + position + lm_head + norm_size  # + the final norm
    total = config.layers * (attention + mlp_total + per_layer_norms) + common
    active = config.layers * (attention + mlp_active + per_layer_norms) + common
    return ParamCount(
        total=total,
        active=active,
        token_embedding=token,
        position_embedding=position,
        lm_head=lm_head,
        attention_per_layer=attention,
        mlp_per_layer_total=mlp_total,
        mlp_per_layer_active=mlp_active,
        tied=config.tied_embeddings,
    )


_GPT2_LIKE = dict(
    tied_embeddings=True, learned_positions=True, bias=True, norm="layernorm", vocab_size=50257
)

PRESETS: dict[str, ModelConfig] = {
    c.name: c
    for c in (
        ModelConfig(
            name="GPT-2 124M", layers=12, d_model=768, heads=12, seq_len=1024, **_GPT2_LIKE,
            source="GPT-2 small (Radford et al. 2019); nanoGPT GPTConfig: 12 layers, 12 heads, "
            "768 wide, block 1024, vocab 50257, tied, biases",
        ),
        ModelConfig(
            name="GPT-3 175B", layers=96, d_model=12288, heads=96, head_dim=128, seq_len=2048,
            **_GPT2_LIKE,
            source="Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads of 128, "
            "context 2048; GPT-2 tokenizer (50257)",
        ),
        ModelConfig(
            name="Llama-3 8B", layers=32, d_model=4096, heads=32, kv_heads=8, ffn_size=14336,
            gated_mlp=True, vocab_size=128256, seq_len=8192,
            source="meta-llama/Meta-Llama-3-8B config.json: 32 layers, 4096, 32 heads, 8 KV heads, "
            "FFN 14336 SwiGLU, vocab 128256, untied",
        ),
        ModelConfig(
            name="Llama-3 70B", layers=80, d_model=8192, heads=64, kv_heads=8, ffn_size=28672,
            gated_mlp=True, vocab_size=128256, seq_len=8192,
            source="meta-llama/Meta-Llama-3-70B config.json: 80 layers, 8192, 64 heads, 8 KV heads, "
            "FFN 28672 SwiGLU, vocab 128256, untied",
        ),
        ModelConfig(
            name="Mixtral 8x7B", layers=32, d_model=4096, heads=32, kv_heads=8, ffn_size=14336,
            gated_mlp=True, vocab_size=32000, seq_len=32768, experts=8, top_k=2,
            source="mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, 4096, 32 heads, 8 KV heads, "
            "8 experts (top-2) of FFN 14336 SwiGLU, vocab 32000, untied",
        ),
        ModelConfig(
            name="PaLM 540B", layers=118, d_model=18432, heads=48, kv_heads=1, head_dim=256,
            ffn_size=73728, gated_mlp=True, vocab_size=256000, seq_len=2048, tied_embeddings=True,
            norm="layernorm", norms_per_layer=1,
            source="Chowdhery et al. 2022, Table 1: 118 layers, d_model 18432, 48 heads of 256, "
            "multi-query, SwiGLU FFN 4·d, parallel block (one norm), vocab 256k, tied, no biases "
            "(not even in the layer norms)",
        ),
    )
}


def preset_names() -> list[str]:
    """Names of the presets, in display order."""
    return list(PRESETS)


def _slug(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def preset_name(text: str) -> str | None:
    """The preset a loosely typed name means: "llama3-8b", "Llama-3 8B" and "gpt2-124m" all match."""
    wanted = _slug(text)
    return next((name for name in PRESETS if _slug(name) == wanted), None)


def get_preset(name: str, **overrides: object) -> ModelConfig:
    """The preset called ``name`` (``KeyError`` lists the known names), optionally with fields replaced."""
    config = PRESETS.get(name) or PRESETS.get(preset_name(name) or "")
    if config is None:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return replace(config, **overrides) if overrides else config


def config_from_hf(data: dict[str, object], name: str = "") -> ModelConfig:
    """A :class:`ModelConfig` from a Hugging Face ``config.json`` (Llama/Mistral/Mixtral/Qwen or GPT-2 keys).

    Raises :class:`ConfigError` naming the first missing key, or a key whose value is not a whole
    number within :data:`CONFIG_LIMITS` (``"abc"``, ``1e400``, ``2.5``, ``true``).
    """
    if not isinstance(data, dict):
        raise ConfigError("config", "config.json must hold a JSON object")

    def get(*keys: str, default: int | None = None) -> int:
        for key in keys:
            if data.get(key) is not None:
                return _whole(key, data[key])
        if default is None:
            raise ConfigError(keys[0], f"config.json has no {' / '.join(keys)}")
        return default

    def optional(key: str) -> int | None:
        return None if data.get(key) is None else _whole(key, data[key])

    gpt2 = data.get("model_type") == "gpt2" or "n_embd" in data
    d_model = get("hidden_size", "n_embd", "d_model")
    experts = get("num_local_experts", "num_experts", "n_routed_experts", default=1)
    config = ModelConfig(
        name=name or str(data.get("_name_or_path") or data.get("model_type") or "config.json"),
        layers=get("num_hidden_layers", "n_layer", "num_layers"),
        d_model=d_model,
        heads=get("num_attention_heads", "n_head"),
        kv_heads=optional("num_key_value_heads"),
        head_dim=optional("head_dim"),
        ffn_size=get("intermediate_size", "n_inner", default=4 * d_model),
        gated_mlp=not gpt2,
        vocab_size=get("vocab_size"),
        seq_len=get("max_position_embeddings", "n_positions", "n_ctx"),
        tied_embeddings=bool(data.get("tie_word_embeddings", gpt2)),
        learned_positions=gpt2,
        bias=gpt2,
        norm="layernorm" if gpt2 else "rmsnorm",
        experts=experts,
        top_k=get("num_experts_per_tok", default=1) if experts > 1 else 1,
        source="Hugging Face config.json",
    )
    config.validate()
    return config


def _whole(key: str, value: object) -> int:
    """``value`` of ``key`` as an int: a JSON integer, or a float with no fraction (``4096.0``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"{key} must be a whole number, not {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise ConfigError(key, f"{key} must be a whole number, not {value!r}")
    number = int(value)
    field_name = _HF_FIELDS.get(key, key)
    high = CONFIG_LIMITS.get(field_name, 1_000_000_000)
    if not 1 <= number <= high:
        raise ConfigError(key, f"{key} must be within 1 and {high:,}, not {value:g}")
    return number


_HF_FIELDS = {
    "hidden_size": "d_model", "n_embd": "d_model", "num_hidden_layers": "layers", "n_layer": "layers",
    "num_layers": "layers", "num_attention_heads": "heads", "n_head": "heads",
    "num_key_value_heads": "kv_heads", "intermediate_size": "ffn_size", "n_inner": "ffn_size",
    "max_position_embeddings": "seq_len", "n_positions": "seq_len", "n_ctx": "seq_len",
    "num_local_experts": "experts", "num_experts": "experts", "n_routed_experts": "experts",
    "num_experts_per_tok": "top_k",
}


# --------------------------------------------------------------------------------------------------
# Example runs: each preset brings a published run (batch, sequence, GPUs, step time), so the MFU
# tab never pairs one model with another model's batch and step time.


@dataclass(frozen=True)
class ExampleRun:
    """A training run of a preset's model as published; ``source`` cites it and says what is assumed.

    The step time is ``step_time_s`` when the source gives it (or tokens/s), else it is computed
    (in :mod:`.mfu_inputs`) from the published FLOP rate per GPU or the published MFU.
    """

    micro_batch: int  # sequences per replica per micro-step
    grad_accum: int
    data_parallel: int
    seq_len: int
    gpus: int
    hardware: str  # "64× A100 SXM 80GB"
    source: str
    device_id: str | None = None  # database id of the GPU; None: ``peak_flops_per_s`` is given
    peak_flops_per_s: float | None = None  # dense peak per chip when the device is not in the database
    precision: str = "bf16"
    recompute: str = "none"
    recompute_fractions: tuple[float, float] | None = None  # (dense, attention) for "custom"
    step_time_s: float | None = None
    achieved_flops_per_s_per_gpu: float | None = None
    published_mfu: float | None = None
    source_mfu: float | None = None  # the MFU the source prints (a fraction), to compare with ours
    source_hfu: float | None = None  # the HFU it prints, where it does
    source_counts_embeddings: bool = False  # the source's N keeps the embedding lookup tables
    source_recompute_convention: str = "gpuperf"  # how the source counts selective recompute in HFU

    @property
    def tokens_per_step(self) -> int:
        return self.micro_batch * self.grad_accum * self.data_parallel * self.seq_len

    @property
    def step_time_basis(self) -> str:
        if self.step_time_s is not None:
            return "published"
        if self.achieved_flops_per_s_per_gpu is not None:
            return "computed from the published FLOP rate per GPU"
        return "computed from the published MFU"


EXAMPLE_RUNS: dict[str, ExampleRun] = {
    "GPT-2 124M": ExampleRun(
        micro_batch=20, grad_accum=5, data_parallel=1, seq_len=1024, gpus=1, hardware="1× A100",
        device_id="a100-sxm-40gb", step_time_s=0.755, source_mfu=0.3714,
        source="karpathy/nanoGPT transformer_sizing.ipynb: batch 20 × gradient accumulation 5 of "
        "1024 tokens, 755 ms per iteration on one A100 (it reports 37.14 % of the A100's 312 "
        "TFLOP/s for the model without biases)"),
    "GPT-3 175B": ExampleRun(
        micro_batch=1, grad_accum=96, data_parallel=16, seq_len=2048, gpus=1024,
        hardware="1024× A100 SXM 80GB", device_id="a100-sxm-80gb", recompute="selective",
        published_mfu=0.514, source_mfu=0.514, source_hfu=0.528, source_recompute_convention="korthikanti2022",
        source="NVIDIA/Megatron-LM README (Korthikanti et al. 2022): 175B at 51.4 % MFU, 52.8 % HFU "
        "with selective recompute on A100 80GB. Assumed here: batch 1536 × 2048 tokens (≈ GPT-3's "
        "3.2M) on 1024 GPUs (TP 8 × PP 8 × DP 16); the step time is computed from that MFU"),
    "Llama-3 8B": ExampleRun(
        micro_batch=1, grad_accum=1, data_parallel=64, seq_len=8192, gpus=64,
        hardware="64× A100 SXM 80GB", device_id="a100-sxm-80gb", recompute="selective",
        step_time_s=8192 / 2973, source_mfu=0.582, source_counts_embeddings=True,
        source="pytorch/torchtitan docs/performance.md (commit 0413364): FSDP2 on 64 A100 80GB, local "
        "batch 1 × 8192 tokens, selective op recompute: 2,973 tokens/s per GPU, so a step takes "
        "8192 / 2973 s (torchtitan's own count gives 58.2 % MFU)"),
    "Llama-3 70B": ExampleRun(
        micro_batch=1, grad_accum=1, data_parallel=64, seq_len=8192, gpus=64,
        hardware="64× A100 SXM 80GB", device_id="a100-sxm-80gb", recompute="full",
        step_time_s=8192 / 331, source_mfu=0.517, source_counts_embeddings=True,
        source="pytorch/torchtitan docs/performance.md (commit 0413364): FSDP2 on 64 A100 80GB, local "
        "batch 1 × 8192 tokens, full recompute: 331 tokens/s per GPU, so a step takes 8192 / 331 s "
        "(torchtitan's own count gives 51.7 % MFU)"),
    "Mixtral 8x7B": ExampleRun(
        micro_batch=1, grad_accum=16, data_parallel=16, seq_len=4096, gpus=64,
        hardware="64× H100 SXM", device_id="h100-sxm", achieved_flops_per_s_per_gpu=468e12,
        source="NVIDIA/Megatron-LM Megatron-Core MoE README: 468 TFLOP/s per GPU for Mixtral 8x7B "
        "bf16 training on H100. Assumed here: batch 256 × 4096 tokens on 64 GPUs (PP 4 × DP 16); "
        "the step time is computed from that rate"),
    "PaLM 540B": ExampleRun(
        micro_batch=4, grad_accum=1, data_parallel=512, seq_len=2048, gpus=6144,
        hardware="6144 TPU v4 chips", peak_flops_per_s=275e12, recompute="custom",
        recompute_fractions=(0.75, 1.0), step_time_s=2048 * 2048 / 238.3e3, source_mfu=0.462, source_hfu=0.578,
        source="Chowdhery et al. 2022 (PaLM) §4.1, Table 3 and App. B: 238.3k tokens/s on 6144 TPU "
        "v4 chips (275 TFLOP/s bf16 each), 46.2 % MFU, 57.8 % HFU with rematerialization; batch "
        "2048 × 2048 tokens, so a step takes 4.19M / 238.3k s"),
}
