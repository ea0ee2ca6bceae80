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

from dataclasses import dataclass, field, replace

__all__ = [
    "ConfigError",
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
        """Raise :class:`ConfigError` naming the first inconsistent field."""
        for name in ("layers", "d_model", "heads", "vocab_size", "seq_len", "experts", "top_k",
                     "kv_heads", "head_dim", "ffn_size", "norms_per_layer"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(name, f"{name.replace('_', ' ')} must be at least 1")
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

    Raises :class:`ConfigError` naming the first missing key.
    """

    def get(*keys: str, default: object = None) -> object:
        for key in keys:
            if data.get(key) is not None:
                return data[key]
        if default is None:
            raise ConfigError(keys[0], f"config.json has no {' / '.join(keys)}")
        return default

    gpt2 = data.get("model_type") == "gpt2" or "n_embd" in data
    d_model = int(get("hidden_size", "n_embd", "d_model"))  # type: ignore[arg-type]
    experts = int(get("num_local_experts", "num_experts", "n_routed_experts", default=1))  # type: ignore[arg-type]
    return ModelConfig(
        name=name or str(data.get("_name_or_path") or data.get("model_type") or "config.json"),
        layers=int(get("num_hidden_layers", "n_layer", "num_layers")),  # type: ignore[arg-type]
        d_model=d_model,
        heads=int(get("num_attention_heads", "n_head")),  # type: ignore[arg-type]
        kv_heads=data.get("num_key_value_heads"),  # type: ignore[arg-type]
        head_dim=data.get("head_dim"),  # type: ignore[arg-type]
        ffn_size=int(get("intermediate_size", "n_inner", default=4 * d_model)),  # type: ignore[arg-type]
        gated_mlp=not gpt2,
        vocab_size=int(get("vocab_size")),  # type: ignore[arg-type]
        seq_len=int(get("max_position_embeddings", "n_positions", "n_ctx")),  # type: ignore[arg-type]
        tied_embeddings=bool(data.get("tie_word_embeddings", gpt2)),
        learned_positions=gpt2,
        bias=gpt2,
        norm="layernorm" if gpt2 else "rmsnorm",
        experts=experts,
        top_k=int(get("num_experts_per_tok", default=1)) if experts > 1 else 1,  # type: ignore[arg-type]
        source="Hugging Face config.json",
    )
