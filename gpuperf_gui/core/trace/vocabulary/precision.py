"""The precision each kernel ran in, and the trace's, from the trace itself (never the toolbar's).

A kernel's precision decides which peak its "% of roof" is measured against, and the trace's
precision which peak its MFU is: a bf16 GEMM judged against the fp32 peak shows 1200 % of roof, an
fp32 run's MFU against the bf16 peak is 15× too small. A trace says which it was:

* **the kernel's name**, when it spells a type (:data:`_NAME_RULES`: ``e4m3``/``fp8`` → fp8, ``tf32``,
  ``bf16``, ``f16``/``half``/``hgemm`` → fp16, the CUDA-core fp32 families ``sgemm``/``ffma``/``simt``).
  cuBLAS's Hopper ``nvjet_*`` names spell none. cuDNN's fused attention kernels say ``f16`` for both
  16-bit types: when the op says bf16 or fp16 and the name the other, the op's type wins.
* else **the op that launched it** (Kineto's "External id"): its "Input type" arg, the narrowest
  floating type of its inputs (``c10::Float8_e4m3fn`` → fp8, ``c10::BFloat16`` → bf16,
  ``c10::Half`` → fp16, ``float`` → fp32). The narrowest, because under autocast ``aten::linear``
  records a bf16 input and fp32 weights and runs its GEMM in bf16. ``float`` inputs on a
  tensor-core kernel (``nvjet``, ``wgmma``, … by :func:`.kernel_table.uses_tensor_cores`'s list) ran as
  tf32 (``torch.backends.cuda.matmul.allow_tf32``); on any other kernel as fp32.
* else a name's weaker hint (``float`` among its template arguments) → fp32; else unknown.

The trace's precision is the one that holds most of the math kernels' time (GEMM and attention
kernels whose precision is known), or ``"mixed"`` when none holds :data:`DOMINANT_SHARE` of it; the
split is kept either way, and the dominant one is the peak MFU uses (said beside it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import msgspec

__all__ = ["DOMINANT_SHARE", "PRECISION_CODES", "TracePrecision", "code_of", "dtype_precision",
           "is_math_kernel", "kernel_precision", "name_precision", "trace_precision"]

PRECISION_CODES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
"""Index = the int8 code a lane stores (-1: unknown); names are :data:`..hardware.PRECISIONS`'."""

DOMINANT_SHARE = 0.9
"""A precision holding at least this share of the math kernels' time is the trace's; below, "mixed"."""

_DTYPE = {"double": "fp64", "float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
          "c10::Float8_e5m2fnuz": "fp8", "c10::Float8_e8m0fnu": "fp8"}
_NARROW_ORDER = ("fp8", "fp16", "bf16", "fp32", "fp64")   # narrowest first

# Explicit types in kernel names, checked in this order (bf16 before f16: "bf16" contains "f16").
_NAME_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fp8", re.compile(r"e4m3|e5m2|fp8|float8|f8f8")),
    ("tf32", re.compile(r"tf32")),
    ("bf16", re.compile(r"bf16|bfloat16")),
    ("fp16", re.compile(r"(?<![a-z0-9])f16|fp16|half|hgemm|h884|h1688|h16816")),
    ("fp32", re.compile(r"sgemm|ffma|simt|f32f32|(?<![a-z0-9])f32(?![a-z0-9])")),
)
_WEAK_FP32 = re.compile(r"(?<![a-z0-9_])float(?![a-z0-9_])")

_HALF = ("bf16", "fp16")
MATH_CLASSES = ("gemm", "attention")
_NOT_MATH = re.compile(r"reduce|reduction|memset|memcpy|copy|(?<!broad)cast|convert|fill|transpose|"
                       r"dot_do_o|elementwise|zero|embedding|quantize|to_float|permute", re.IGNORECASE)
_OWN_NAME = re.compile(r"^(?:void\s+)?([^<(]*)")


def is_math_kernel(name: str, kernel_class: str) -> bool:
    """A kernel that does the op's multiply-adds: a GEMM/attention/convolution kernel that is not
    one of the helpers an op also launches (cuBLASLt's ``splitKreduce_kernel``, a ``Memset`` of
    the output, a cast or layout copy, flash attention's ``dot_do_o``/``convert_dq``), nor one of
    FBGEMM's embedding/quantize/permute kernels that the class rules call GEMMs for the "gemm" in
    "fbgemm_gpu"."""
    if kernel_class not in MATH_CLASSES:
        return False
    own = _OWN_NAME.match(name.strip())   # the name before its template arguments: those say
    text = own.group(1) if own else name   # "ReduceOp", "Copy" too
    low = text.lower()   # FBGEMM's embedding, quantize, permute kernels are classed gemm by "fbgemm"
    if "fbgemm" in low and "gemm" not in low.replace("fbgemm", ""):
        return False
    return _NOT_MATH.search(text) is None


def name_precision(name: str) -> str | None:
    """The precision a kernel name spells explicitly (see the module docstring), else None."""
    low = name.lower()
    for precision, rule in _NAME_RULES:
        if rule.search(low):
            return precision
    return None


def dtype_precision(types: object) -> str | None:
    """The narrowest floating precision among an op's recorded "Input type" list (raw JSON bytes
    or the decoded list), None when it names no floating type."""
    if isinstance(types, (str, bytes, bytearray, memoryview)):
        try:
            types = msgspec.json.decode(types if isinstance(types, str) else bytes(types))
        except msgspec.DecodeError:
            return None
    if not isinstance(types, list):
        return None
    found = {_DTYPE[t] for t in types if isinstance(t, str) and t in _DTYPE}
    return next((p for p in _NARROW_ORDER if p in found), None)


def kernel_precision(name: str, op_precision: str | None, tensor_cores: bool) -> str | None:
    """One kernel's precision: its name's, else its op's (fp32 inputs on tensor cores: tf32), else
    the name's weak fp32 hint, else None."""
    named = name_precision(name)
    if named in _HALF and op_precision in _HALF:
        return op_precision   # cuDNN's sdpa kernels say "f16" for bf16 inputs too
    if named is not None:
        return named
    if op_precision is not None:
        return "tf32" if op_precision == "fp32" and tensor_cores else op_precision
    return "fp32" if _WEAK_FP32.search(name.lower()) else None


def code_of(precision: str | None) -> int:
    """The int8 code of ``precision`` (-1 for None or a name outside :data:`PRECISION_CODES`)."""
    return PRECISION_CODES.index(precision) if precision in PRECISION_CODES else -1


@dataclass(frozen=True)
class TracePrecision:
    """The trace's precision: ``precision`` (the dominant one, or "mixed"), ``peak_precision`` (the
    dominant one always: the peak MFU uses), the split of math-kernel time by precision (shares,
    largest first) and the seconds it was measured on; ``override`` when the user chose one."""

    precision: str | None
    peak_precision: str | None
    split: dict[str, float] = field(default_factory=dict)
    math_seconds: float = 0.0
    unknown_seconds: float = 0.0
    """Math-kernel time whose precision could not be told (left out of the split)."""
    override: str | None = None

    @property
    def effective(self) -> str | None:
        """The precision the trace's peak is taken at: the override, else the dominant one."""
        return self.override or self.peak_precision

    @property
    def source(self) -> str:
        if self.override:
            return "override"
        return "detected" if self.peak_precision else "unknown"

    def with_override(self, precision: str | None) -> TracePrecision:
        return replace(self, split=dict(self.split), override=precision or None)

    def describe(self) -> str:
        """"bf16 (detected: 100 % of the GEMM/attention time)", "mixed: bf16 78 %, fp32 22 %; …", …"""
        split = ", ".join(f"{p} {100 * s:.0f} %" for p, s in self.split.items())
        unknown = (f"; precision unknown for {100 * self.unknown_seconds / self.math_seconds:.0f} % of that time"
                   if self.math_seconds > 0 and self.unknown_seconds > 0.05 * self.math_seconds else "")
        return self._describe(split) + unknown

    def _describe(self, split: str) -> str:
        if self.override:
            detected = self.precision or "unknown"
            return f"{self.override} (chosen; detected {detected}{': ' + split if split else ''})"
        if self.precision is None:
            return "unknown (no GEMM/attention kernel with a known precision)"
        if self.precision == "mixed":
            return f"mixed: {split}; peak at {self.peak_precision}, the largest"
        return f"{self.precision} (detected: {100 * self.split[self.precision]:.0f} % of the GEMM/attention time)"

    def to_json(self) -> dict:
        return {"precision": self.precision, "peak_precision": self.effective, "detected_peak_precision":
                self.peak_precision, "split": dict(self.split), "math_kernel_time_s": self.math_seconds,
                "unknown_precision_time_s": self.unknown_seconds, "source": self.source,
                "override": self.override}


def trace_precision(seconds_by_precision: dict[str | None, float]) -> TracePrecision:
    """The trace's precision from the math kernels' seconds per precision (None: unknown)."""
    unknown = float(seconds_by_precision.get(None, 0.0))
    known = {p: float(s) for p, s in seconds_by_precision.items() if p is not None and s > 0}
    total = sum(known.values())
    if total <= 0:
        return TracePrecision(None, None, {}, unknown, unknown)
    split = dict(sorted(((p, s / total) for p, s in known.items()), key=lambda kv: -kv[1]))
    top, share = next(iter(split.items()))
    return TracePrecision(top if share >= DOMINANT_SHARE else "mixed", top, split, total + unknown, unknown)
