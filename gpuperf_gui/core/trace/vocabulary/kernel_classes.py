"""Kernel classes by name: the one table of rules.

Classes (:data:`KERNEL_CLASSES`): ``gemm`` (matrix multiply and convolution, the
tensor-core work), ``attention`` (fused attention kernels), ``elementwise`` (elementwise,
normalisation, reduction, indexing, optimizer kernels: the memory-bound family),
``communication`` (NCCL/RCCL/HCCL), ``copy`` (memcpy/memset), ``other``.

Rules are checked in order, first match wins, on the lower-cased kernel name. They follow HTA's
regexes for communication and memory (``hta/common/types.py``: ``^nccl``, ``ncclKernel``, ``^hip``-
``Memcpy``, ``^(hip)?Memset``, ``^dma``) and extend them with the kernel families seen in the
traces of ``tests/data/shared_traces`` (cuBLAS, cuDNN, ROCm Tensile, flash/fmha attention, ATen, Triton).
"""
from __future__ import annotations

import re

from .categories import COPY_CATEGORIES

KERNEL_CLASSES: tuple[str, ...] = (
    "gemm", "attention", "elementwise", "communication", "copy", "other",
)
"""Kernel classes; :attr:`.trace_model.Lane.kernel_class` holds indices into this tuple (-1 = not device work)."""

P2P_KERNEL_NAME_RE = re.compile(r"sendrecv|_send|_recv|send_|recv_|nccl:send|nccl:recv|p2p", re.IGNORECASE)
"""A communication kernel that moves data between two ranks (NCCL's SendRecv kernels). NCCL runs
all-to-all as SendRecv kernels too: its callers also ask whether the host issued send/recv ops."""

KERNEL_CLASS_RULES: tuple[tuple[str, str], ...] = (
    ("communication", r"nccl|rccl|^hccl|^c10d::|allreduce|allgather|reducescatter|alltoall"),
    ("copy", r"^(hip)?memcpy|^(hip)?memset|^dma|^memcpy|copybuffer|fillbuffer"),
    ("attention", r"flash|fmha|attention|attn|_sdpa|mha_|paged_attention"),
    ("gemm", r"gemm|gemv|nvjet|xmma|cutlass|cublas|cijk_|scudnn|hcudnn|implicit_convolve|"
             r"winograd|conv|fprop|dgrad|wgrad|wmma|hmma|tensorop|triton_tem_fused_.*mm|"
             r"_mm_|bmm|matmul|ck_gemm|hipblaslt"),
    ("elementwise", r"elementwise|vectorized|unrolled|reduce|norm|softmax|bn_|dropout|gelu|relu|"
                    r"silu|sigmoid|tanh|adam|sgd|multi_tensor|index|gather|scatter|embedding|"
                    r"pool|fill|copy|cat_|catarray|triton_poi|triton_red|triton_per|rotary|rope|"
                    r"loss|nll|cross_entropy|transpose|permute|pad|upsample|where|clamp|mul|add|"
                    r"cast|topk|sort|cumsum|arange|_kernel_impl|compare"),
)


class _Rule:
    """One rule's alternatives, split at their top-level ``|``: plain words are substring tests,
    ``^word`` a prefix test (both far cheaper than a regex search of a 200-character kernel name);
    the rest stay one regex. Matches exactly when the whole pattern's ``search`` does."""

    def __init__(self, pattern: str) -> None:
        words, prefixes, rest = [], [], []
        for alt in _top_level_alternatives(pattern):
            body = alt[1:] if alt.startswith("^") else alt
            if body and re.escape(body) == body:
                (prefixes if alt.startswith("^") else words).append(body)
            else:
                rest.append(alt)
        self.words = tuple(words)
        self.prefixes = tuple(prefixes)
        self.rest = re.compile("|".join(rest)) if rest else None

    def search(self, lowered: str) -> bool:
        return (any(w in lowered for w in self.words) or lowered.startswith(self.prefixes)
                or (self.rest is not None and self.rest.search(lowered) is not None))


def _top_level_alternatives(pattern: str) -> list[str]:
    """``pattern`` split at each ``|`` outside parentheses (the rules escape nothing)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(pattern):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    return out + [pattern[start:]]


_COMPILED = tuple((cls, _Rule(pat)) for cls, pat in KERNEL_CLASS_RULES)
_CLASS_CODE = {name: i for i, name in enumerate(KERNEL_CLASSES)}


def classify_kernel(name: str, category: str = "kernel") -> str:
    """Return the class of one device event from its name and Kineto category."""
    if category in COPY_CATEGORIES:
        return "copy"
    lowered = name.lower()
    for cls, rule in _COMPILED:
        if rule.search(lowered):
            return cls
    return "other"


def class_code(cls: str) -> int:
    return _CLASS_CODE[cls]
