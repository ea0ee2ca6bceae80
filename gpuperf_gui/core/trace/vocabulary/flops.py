"""FLOPs and minimal bytes of one GEMM or attention op call, from the shapes the profiler recorded.

``record_shapes=True`` writes each op's "Input Dims", "Input type" and "Concrete Inputs" (the
scalar arguments as text). :func:`estimate_op` turns them into an :class:`OpEstimate`; the loader
(:mod:`.build`) calls it for the ops :data:`SHAPED_OP_RE` matches.

Formulas (torch.utils.flop_counter's, which count 2 FLOPs per multiply-add):

* ``mm``/``addmm``/``_scaled_mm`` (m, k) @ (k, n): 2·m·k·n; ``bmm``/``baddbmm``: 2·b·m·k·n;
  ``linear`` x (..., k), W (n, k): 2·prod(x[:-1])·k·n; ``matmul`` with broadcast batch dims.
* attention forward (``sdpa_flop_count``): 2·B·Hq·Tq·Tk·Dq + 2·B·Hq·Tq·Tk·Dv (Q·Kᵀ, then P·V).
  Backward (``sdpa_backward_flop_count``): 2·B·Hq·Tq·Tk·(3·Dq + 2·Dv) (scores recomputed, dV, dP,
  dQ, dK). GQA: K/V may have fewer heads; FLOPs follow the query heads.
* The layout is per op (ATen's schemas): the ``_scaled_dot_product_*`` ops (flash, efficient,
  cudnn, math, for_cpu, overrideable) and ``_cudnn_attention_*`` take (B, H, T, D); the kernels
  under them, ``_flash_attention_*`` and ``_efficient_attention_*``, take (B, T, H, D). Reading
  the latter as (B, H, T, D) gives 4·B·T·H²·D instead of 4·B·H·T²·D: T/H times off.
  torch.utils.flop_counter itself reads ``_flash_attention_forward``'s inputs as (B, H, T, D); it
  never sees them under SDPA, we do.
* Causal masking (``is_causal``, or ``custom_mask_type`` != 0 for the efficient kernels): half the
  score matrix is skipped by the kernels, so FLOPs are halved; the shapes text then ends with
  :data:`CAUSAL_NOTE` so every label and JSON point built from it says so. torch's flop counter
  does not halve ("we aren't accounting for causal attention here").
* Bytes: each input read once and the output written once at the first input's dtype size (2 when
  unknown): GEMM A + B + C; attention forward Q + K + V + O; backward Q, K, V, O, dO read and dQ, dK,
  dV written. A lower bound, the roofline's x axis.

Shapes that are missing, not integers, not positive, inconsistent (inner dims that differ) or
absurd (a dim beyond 2**40) give no estimate (0 FLOPs, 0 bytes), never an exception. Varlen
attention (3-D (total, H, D) inputs with cumulative lengths) gives none either: the per-sequence
lengths are not in the trace.
"""
from __future__ import annotations

import math
import re
from typing import NamedTuple

import msgspec

SHAPED_OP_RE = re.compile(
    r"^aten::(mm|addmm|bmm|baddbmm|linear|matmul|_scaled_mm|"
    r"_scaled_dot_product_\w*attention\w*|_(flash|efficient|cudnn)_attention_(forward|backward))$")
"""Ops whose FLOPs and bytes :func:`estimate_op` can estimate from their input shapes."""
IO_OP_RE = re.compile(r"^aten::")
"""Ops whose largest input the loader sizes (:func:`largest_input_bytes`): the what-if's floor for a
fused elementwise chain (core/trace/analysis/what_if.py) reads the first op's input and writes the last's."""

CAUSAL_NOTE = " (causal: FLOPs halved)"
"""Appended to an attention op's shapes text when it ran with a causal mask."""

DTYPE_BYTES = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "c10::Float8_e4m3fn": 1,
               "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "int": 4,
               "long int": 8, "signed char": 1, "unsigned char": 1}
_MAX_DIM = 2**40


class _Attention(NamedTuple):
    token_major: bool
    """(B, T, H, D) inputs; else (B, H, T, D)."""
    backward: bool
    causal_arg: int
    """Position of ``is_causal`` (``custom_mask_type`` for the efficient kernels) in the default
    overload; stable across torch versions, which append new arguments at the end."""
    other_overloads: dict[int, int] = {}
    """Argument count of another overload -> its position (the quantized flash SDPA)."""


# Argument positions from the ATen schemas (checked against torch in tests/core/test_flops.py).
_ATTENTION: dict[str, _Attention] = {
    "_scaled_dot_product_flash_attention": _Attention(False, False, 4, {10: 7}),
    "_scaled_dot_product_flash_attention_for_cpu": _Attention(False, False, 4),
    "_scaled_dot_product_efficient_attention": _Attention(False, False, 6),
    "_scaled_dot_product_cudnn_attention": _Attention(False, False, 6),
    "_scaled_dot_product_attention_math": _Attention(False, False, 5),
    "_scaled_dot_product_attention_math_for_mps": _Attention(False, False, 5),
    "_scaled_dot_product_fused_attention_overrideable": _Attention(False, False, 5),
    "_cudnn_attention_forward": _Attention(False, False, 10),
    "_flash_attention_forward": _Attention(True, False, 8),
    "_efficient_attention_forward": _Attention(True, False, 9),
    "_scaled_dot_product_flash_attention_backward": _Attention(False, True, 11),
    "_scaled_dot_product_flash_attention_for_cpu_backward": _Attention(False, True, 7),
    "_scaled_dot_product_efficient_attention_backward": _Attention(False, True, 11),
    "_scaled_dot_product_cudnn_attention_backward": _Attention(False, True, 14),
    "_scaled_dot_product_fused_attention_overrideable_backward": _Attention(False, True, 13),
    "_cudnn_attention_backward": _Attention(False, True, 14),
    "_flash_attention_backward": _Attention(True, True, 11),
    "_efficient_attention_backward": _Attention(True, True, 14),
}


class OpEstimate(NamedTuple):
    """One call's FLOPs and minimal bytes (0 and 0 when unknown) and its shapes text for labels."""

    flops: float
    bytes: float
    shapes: str
    """The "Input Dims" text, plus :data:`CAUSAL_NOTE` for causal attention."""

    @property
    def causal(self) -> bool:
        return self.shapes.endswith(CAUSAL_NOTE)


Shape = tuple[int, ...]


def estimate_op(name: str, dims_raw: bytes, types_raw: bytes = b"", concrete_raw: bytes = b"") -> OpEstimate:
    """FLOPs and bytes of one call of ``name`` ("aten::mm") from its recorded args (raw JSON)."""
    text = dims_raw.decode("utf-8", "replace")
    dims = _decode(dims_raw)
    op = name.removeprefix("aten::")
    attention = _ATTENTION.get(op)
    got = None
    if isinstance(dims, list):
        shapes = [_shape(d) for d in dims]
        got = _gemm(op, shapes) if attention is None else _attention(attention, shapes, _list(concrete_raw))
    if got is None:
        return OpEstimate(0.0, 0.0, text)
    flops, elements, type_index, note = got
    return OpEstimate(flops, elements * _elem_bytes(_list(types_raw), type_index, 1 if op == "_scaled_mm" else 2),
                      text + note)


def largest_input_bytes(dims_raw: bytes, types_raw: bytes = b"") -> float:
    """Bytes of the largest tensor among an op's recorded inputs (numel x its dtype's size; 0 when
    no input is a tensor of a known dtype, so a floor made from it is never too high)."""
    dims = _decode(dims_raw)
    if not isinstance(dims, list):
        return 0.0
    types = _list(types_raw)
    best = 0.0
    for i, d in enumerate(dims):
        shape = _shape(d)
        size = _elem_bytes(types, i, 0)
        if shape is not None and size:
            best = max(best, float(math.prod(shape)) * size)
    return best


def _decode(raw: bytes) -> object:
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def _list(raw: bytes) -> list:
    """``raw`` decoded where it is a JSON list, else []."""
    got = _decode(raw) if raw else None
    return got if isinstance(got, list) else []


def _shape(d: object) -> Shape | None:
    """A tensor's dims, () for a non-tensor argument, None when not a list of sane integers."""
    if not isinstance(d, list):
        return None
    if not all(type(x) is int and 0 <= x <= _MAX_DIM for x in d):
        return None
    return tuple(d)


def _elem_bytes(types: list, index: int, default: int) -> int:
    t = types[index] if index < len(types) else None
    return DTYPE_BYTES.get(t, default) if isinstance(t, str) else default


_PAIRED = {"mm": (0, 2), "_scaled_mm": (0, 2), "addmm": (1, 2), "bmm": (0, 3), "baddbmm": (1, 3)}
"""GEMM ops on a pair of inputs: (position of A, rank of A and B: 3 with one batch dim on both)."""


_Estimate = tuple[float, float, int, str]
"""(FLOPs, elements moved, index of the input whose dtype sizes them, note for the shapes text)."""


def _gemm(op: str, s: list[Shape | None]) -> _Estimate | None:
    if op in ("linear", "matmul"):
        return _linear(s) if op == "linear" else _matmul(s)
    if op not in _PAIRED:
        return None
    first, rank = _PAIRED[op]
    a, b = (s[first], s[first + 1]) if len(s) >= first + 2 else (None, None)
    if a is None or b is None or len(a) != rank or len(b) != rank or a[:-2] != b[:-2] or a[-1] != b[-2]:
        return None
    return _result(math.prod(a[:-2]), a[-2], a[-1], b[-1], first)


def _result(batch: int, m: int, k: int, n: int, index: int, inputs: int | None = None) -> _Estimate | None:
    """``inputs``: elements of A and B as stored (a broadcast B is read once), default batch·(mk + kn)."""
    if min(batch, m, k, n) <= 0:
        return None
    read = batch * (m * k + k * n) if inputs is None else inputs
    return 2.0 * batch * m * k * n, float(read + batch * m * n), index, ""


def _linear(s: list[Shape | None]) -> _Estimate | None:
    if len(s) < 2 or s[0] is None or s[1] is None or not s[0] or len(s[1]) != 2:
        return None
    x, (n, k) = s[0], s[1]
    if x[-1] != k:
        return None
    return _result(1, math.prod(x[:-1]), k, n, 0)


def _matmul(s: list[Shape | None]) -> _Estimate | None:
    if len(s) < 2 or not s[0] or not s[1]:
        return None
    a = (1, *s[0]) if len(s[0]) == 1 else s[0]
    b = (*s[1], 1) if len(s[1]) == 1 else s[1]
    if a[-1] != b[-2]:
        return None
    batch = _broadcast(a[:-2], b[:-2])
    if batch is None:
        return None
    return _result(math.prod(batch), a[-2], a[-1], b[-1], 0, math.prod(a) + math.prod(b))


def _broadcast(x: Shape, y: Shape) -> Shape | None:
    out = []
    for i in range(1, max(len(x), len(y)) + 1):
        p = x[-i] if i <= len(x) else 1
        q = y[-i] if i <= len(y) else 1
        if p != q and 1 not in (p, q):
            return None
        out.append(max(p, q))
    return tuple(reversed(out))


def _attention(spec: _Attention, s: list[Shape | None], concrete: list) -> _Estimate | None:
    """The estimate of one attention call (sized by its first input), or None when the shapes do not fit."""
    first = 1 if spec.backward else 0
    if len(s) < first + 3:
        return None
    qkv = s[first:first + 3]
    if any(x is None or len(x) != 4 for x in qkv):
        return None
    if spec.token_major:  # (B, T, H, D) -> (B, H, T, D)
        qkv = [(x[0], x[2], x[1], x[3]) for x in qkv]
    (b, hq, tq, dq), (bk, hk, tk, dk), (bv, hv, tv, dv) = qkv
    if not (b == bk == bv and hk == hv and tk == tv and dq == dk) or min(b, hq, tq, dq, hk, tk, dv) <= 0:
        return None
    if hq % hk:
        return None
    q, k, v, out = b * hq * tq * dq, b * hk * tk * dk, b * hk * tk * dv, b * hq * tq * dv
    pairs = 2.0 * b * hq * tq * tk
    if spec.backward:
        grad = s[0]
        expect = (b, tq, hq, dv) if spec.token_major else (b, hq, tq, dv)
        if grad != expect:
            return None
        flops, elements = pairs * (3 * dq + 2 * dv), 2.0 * (q + k + v + out)
    else:
        flops, elements = pairs * (dq + dv), float(q + k + v + out)
    if _is_causal(spec, concrete):
        return flops / 2, elements, 0, CAUSAL_NOTE
    return flops, elements, 0, ""


def _is_causal(spec: _Attention, concrete: list) -> bool:
    """The causal flag from "Concrete Inputs": "True"/"False", or a mask type ("0" none, "1"/"2"
    causal); anything else (a missing or odd value) reads as not causal."""
    index = spec.other_overloads.get(len(concrete), spec.causal_arg)
    value = concrete[index] if index < len(concrete) else None
    if not isinstance(value, str):
        return False
    value = value.strip()
    if value in ("True", "False"):
        return value == "True"
    return value.isdigit() and int(value) > 0
