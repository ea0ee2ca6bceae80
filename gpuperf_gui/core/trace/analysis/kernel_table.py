"""The kernels of a rank as the Overview's table shows them: one row per kernel name, with its
device time, tensor-core use, precision and the FLOPs and bytes of the ops that launched it (no Qt).

* **Tensor-core share** of kernel time (memcpy/memset excluded): the kernel-name allowlist of the
  TensorBoard plugin (``tensor_core.py``, after NVIDIA PyProf) plus the Hopper/Ampere families it
  predates (``nvjet``, ``wgmma``, cutlass ``tensorop``, flash attention); names with ``ffma`` (CUDA-core
  FMA, e.g. ``sm80_xmma_gemm_f32f32..._ffma``) are not tensor-core kernels even when ``xmma`` matches.
* **FLOPs** where the op that launched a kernel has a FLOP count (Kineto's "External id" joins a
  kernel to its op): the op's FLOPs and estimated bytes go to its math kernels only, split by
  duration (see :func:`kernel_rows`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..model.name_masks import predicate_mask
from ..model.trace_model import RankTrace
from ..vocabulary.precision import MATH_CLASSES, PRECISION_CODES, is_math_kernel, kernel_precision

TOP_KERNELS = 15
_COPY = KERNEL_CLASSES.index("copy")
_MATH_CODES = [KERNEL_CLASSES.index(c) for c in MATH_CLASSES]

TENSOR_CORE_TOKENS = (
    # TensorBoard plugin / PyProf allowlist
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688",
    # newer families (Ampere/Hopper cuBLAS, CUTLASS, flash attention)
    "nvjet", "wgmma", "gmma", "tensorop", "flash_fwd", "flash_bwd", "flash::", "fmha_cutlass", "hgemm",
    "bf16gemm", "s16816", "cutlass3x_sm90", "cudnn_generated_fort_native_sdpa",
)
CUDA_CORE_TOKENS = ("ffma", "sgemm_", "dgemm")


def uses_tensor_cores(name: str) -> bool:
    """Whether a kernel runs on tensor cores, by its name (see the module docstring)."""
    low = name.lower()
    if any(t in low for t in CUDA_CORE_TOKENS):
        return False
    return any(t in low for t in TENSOR_CORE_TOKENS)


_kernel_precision = lru_cache(maxsize=1 << 14)(kernel_precision)  # pure: the ranks of a job share kernels


def math_kernel_names(rt: RankTrace) -> np.ndarray:
    """Per string id: whether a GEMM/attention kernel of that name is a math kernel
    (:func:`.precision.is_math_kernel`, whose answer past the class is the same for both classes)."""
    return predicate_mask(rt.strings, "math_gemm", lambda name: is_math_kernel(name, "gemm"))


@dataclass(frozen=True)
class KernelRow:
    """Device time of one kernel name, with FLOPs where its launching op has a count."""

    name: str
    kernel_class: str
    calls: int
    seconds: float
    share: float
    tensor_cores: bool
    flops: float = 0.0
    """FLOPs of the calls whose op has a FLOP count (``flops_seconds`` is their time)."""
    flops_seconds: float = 0.0
    bytes: float = 0.0
    precision: str | None = None
    """The precision this kernel ran in (:mod:`.precision`); None for non-math kernels or unknown."""
    math: bool = False
    """A GEMM/attention kernel that does its op's multiply-adds (gets its FLOPs)."""

    @property
    def achieved_flops_per_s(self) -> float | None:
        return self.flops / self.flops_seconds if self.flops > 0 and self.flops_seconds > 0 else None

    def to_json(self) -> dict:
        return {"name": self.name, "class": self.kernel_class, "calls": self.calls, "seconds": self.seconds,
                "share": self.share, "tensor_cores": self.tensor_cores, "flops": self.flops or None,
                "bytes": self.bytes or None, "achieved_flops_per_s": self.achieved_flops_per_s,
                "ai_flops_per_byte": self.ai_flops_per_byte, "precision": self.precision, "math": self.math}

    @property
    def ai_flops_per_byte(self) -> float | None:
        return self.flops / self.bytes if self.flops > 0 and self.bytes > 0 else None


# -- kernels -------------------------------------------------------------------------------------------
def op_counts_by_external_id(rt: RankTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sorted external ids, FLOPs, bytes, precision codes) of the CPU ops that have a FLOP count."""
    ids, fl, by, pr = [], [], [], []
    for lane in rt.cpu_lanes:
        if not len(lane.flops):
            continue
        m = np.isfinite(lane.flops) & (lane.flops > 0) & (lane.external_id >= 0)
        if m.any():
            ids.append(lane.external_id[m])
            fl.append(lane.flops[m])
            by.append(np.where(np.isfinite(lane.bytes[m]), lane.bytes[m], 0.0))
            pr.append(lane.op_precision[m].astype(np.int64) if len(lane.op_precision) else np.full(int(m.sum()), -1))
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    e, f, b, p = np.concatenate(ids), np.concatenate(fl), np.concatenate(by), np.concatenate(pr)
    order = np.argsort(e, kind="stable")
    return e[order], f[order], b[order], p[order]


def external_ids(lanes: list) -> np.ndarray:
    """The External id of each event of the (non-empty list of) device lanes, -1 where none."""
    return np.concatenate([lane.external_id if len(lane.external_id) else np.full(len(lane), -1)
                           for lane in lanes]).astype(np.int64)


def join_ops(op_ext: np.ndarray, ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in the sorted, non-empty ``op_ext``, found there) of each kernel's External id."""
    pos = np.clip(np.searchsorted(op_ext, ext), 0, op_ext.size - 1)
    return pos, (ext >= 0) & (op_ext[pos] == ext)


def duration_weights(ext: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Each kernel's share of the time of its op's kernels (``ext``: the op's External id): how an
    op's FLOPs and bytes are split over its math kernels."""
    uniq, group = np.unique(ext, return_inverse=True)
    total = np.bincount(group, weights=dur, minlength=uniq.size)
    return np.where(total[group] > 0, dur / np.maximum(total[group], 1e-30), 0.0)


def kernel_precision_of(rt: RankTrace, names: list[str], ext: np.ndarray) -> list[str | None]:
    """The precision of each of a rank's kernels (``names``, their External ids ``ext``) by the kernel
    rows' rule (:func:`.precision.kernel_precision`): the name's, else the launching op's input types."""
    op_ext, _, _, op_prec = op_counts_by_external_id(rt)
    codes = np.full(len(names), -1, np.int64)
    if op_ext.size:
        pos, joined = join_ops(op_ext, ext)
        codes[joined] = op_prec[pos[joined]]
    found: dict[tuple[str, int], str | None] = {}   # a rank's GEMMs are a few kernels, called many times
    out = []
    for key in zip(names, codes.tolist()):
        if key not in found:
            name, code = key
            found[key] = _kernel_precision(name, PRECISION_CODES[code] if code >= 0 else None, uses_tensor_cores(name))
        out.append(found[key])
    return out


def kernel_rows(rt: RankTrace) -> tuple[list[KernelRow], float | None, float]:
    """(kernel rows by device time, tensor-core share, total kernel seconds) over the whole trace.

    An op's FLOPs and its estimated bytes go to its math kernels only (GEMM/attention kernels,
    :func:`.precision.is_math_kernel`), split over them by duration; the other kernels it launched
    (a ``Memset`` of the output, cuBLASLt's split-K reduce, a cast) get no FLOPs, and a copy
    kernel keeps the bytes the profiler recorded for it. Each row has the precision it ran in
    (:func:`.precision.kernel_precision`: its name, else its op's input types)."""
    lanes = [lane for lane in rt.gpu_lanes if len(lane)]
    if not lanes:
        return [], None, 0.0
    name = np.concatenate([lane.name_id for lane in lanes]).astype(np.int64)
    dur = np.concatenate([lane.duration_us for lane in lanes])
    cls = np.concatenate([lane.kernel_class for lane in lanes]).astype(np.int64)
    ext = external_ids(lanes)
    own_bytes = np.concatenate([lane.bytes if len(lane.bytes) else np.full(len(lane), np.nan) for lane in lanes])
    names, inv = np.unique(name, return_inverse=True)
    n = names.size
    cls_of = np.zeros(n, np.int64)
    cls_of[inv] = cls
    texts = [rt.strings[int(i)] for i in names.tolist()]
    tc = predicate_mask(rt.strings, "tensor_cores", uses_tensor_cores)[names]
    math_name = math_kernel_names(rt)[names] & np.isin(cls_of, _MATH_CODES)
    math = math_name[inv]
    op_ext, op_flops, op_bytes, op_prec = op_counts_by_external_id(rt)
    k_flops = np.zeros(dur.size)
    k_bytes = np.where(cls == _COPY, np.nan_to_num(own_bytes), 0.0)
    k_prec = np.full(dur.size, -1, np.int64)
    if op_ext.size:
        pos, joined = join_ops(op_ext, ext)
        k_prec[joined] = op_prec[pos[joined]]
        known = joined & math
        if known.any():
            weight = duration_weights(ext[known], dur[known])
            k_flops[known] = op_flops[pos[known]] * weight
            k_bytes[known] = op_bytes[pos[known]] * weight
    seconds = np.bincount(inv, weights=dur, minlength=n) / 1e6
    calls = np.bincount(inv, minlength=n)
    flops = np.bincount(inv, weights=k_flops, minlength=n)
    nbytes = np.bincount(inv, weights=k_bytes, minlength=n)
    flops_s = np.bincount(inv, weights=np.where(k_flops > 0, dur, 0.0), minlength=n) / 1e6
    op_prec_of = _majority_code(inv, k_prec, dur, n)
    total_s = float(seconds.sum())
    not_copy = cls_of != _COPY
    kernel_s = float(seconds[not_copy].sum())
    tc_share = float(seconds[tc & not_copy].sum()) / kernel_s if kernel_s > 0 else None
    rows = []
    for j in np.argsort(-seconds, kind="stable").tolist():
        op_p = PRECISION_CODES[op_prec_of[j]] if op_prec_of[j] >= 0 else None
        precision = _kernel_precision(texts[j], op_p, bool(tc[j])) if math_name[j] else None
        rows.append(KernelRow(texts[j], KERNEL_CLASSES[cls_of[j]] if cls_of[j] >= 0 else "other",
                              int(calls[j]), float(seconds[j]), float(seconds[j]) / total_s if total_s > 0 else 0.0,
                              bool(tc[j]), float(flops[j]), float(flops_s[j]), float(nbytes[j]),
                              precision=precision, math=bool(math_name[j])))
    return rows, tc_share, kernel_s


def _majority_code(inv: np.ndarray, code: np.ndarray, dur: np.ndarray, n: int) -> np.ndarray:
    """Per name, the op precision code that holds most of its time (-1 when none is known)."""
    out = np.full(n, -1, np.int64)
    has = code >= 0
    k = len(PRECISION_CODES)
    per = np.bincount(inv[has] * k + code[has], weights=dur[has] + 1e-9, minlength=n * k).reshape(n, k)
    known = per.max(axis=1) > 0
    out[known] = per.argmax(axis=1)[known]
    return out
