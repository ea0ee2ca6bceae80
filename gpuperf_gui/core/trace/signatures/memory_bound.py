"""``memory_bound``: a packed GPU whose kernels move bytes rather than compute."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, pct

if TYPE_CHECKING:
    from ..analysis import RankAnalysis

THRESHOLDS = {
    "memory_busy_min": Threshold(
        0.60, "memory_bound: a packed GPU (busy >= 60 %) whose kernel time is >= 50 % elementwise/normalisation/"
              "reduction, with GEMM+attention under 40 % (H100 Qwen decode: 63 % elementwise, 36 % "
              "GEMM+attention; memory_bound_visible: 100 % / 0 %; healthy GPT: 36 % / 61 %)."),
    "memory_elementwise_min": Threshold(0.50, "See memory_busy_min."),
    "memory_gemm_max": Threshold(0.40, "See memory_busy_min."),
    "optimizer_share_min": Threshold(
        0.25, "... whose fix is the optimizer's when optimizer kernels (multi_tensor_apply, foreach AdamW) take a "
              "quarter of kernel time or more: in a training step that computes anything, AdamW is a few % "
              "(it reads and writes ~16 bytes per parameter once per step, against 6 FLOPs per parameter per "
              "token of forward+backward)."),
}

OPTIMIZER_FIX = ("The optimizer dominates: use a fused optimizer (torch.optim.AdamW(..., fused=True)) or "
                 "foreach=True, fewer optimizer passes (gradient accumulation: one step per several "
                 "micro-batches), and compile the step with the optimizer inside.")


def short_kernel_name(name: str, width: int = 80) -> str:
    """A kernel name a person can read: the function without namespaces and templates, plus the
    functor it runs (``multi_tensor_apply_kernel (FusedAdamMathFunctor)``)."""
    base = name.removeprefix("void ").split("<")[0].split("::")[-1].split("(")[0] or name
    functors = re.findall(r"(\w+Functor)\b", name)
    if functors and functors[-1] not in base:
        base = f"{base} ({functors[-1]})"
    return base[:width]


def evidence(a: RankAnalysis, gemm: float) -> Finding:
    share = a.kernel_time_share
    ew = share.get("elementwise", 0.0)
    ev = [f"GPU busy {pct(a.gpu_busy_fraction)} but {pct(ew)} of kernel time is elementwise/"
          "normalisation/reduction", f"GEMM + attention only {pct(gemm)} of kernel time"]
    fix = ""
    if a.optimizer_kernel_share >= THRESHOLDS["optimizer_share_min"].value:
        top = ", ".join(f"{short_kernel_name(n)} {pct(s)}" for n, s in a.top_kernels[:3])
        ev.insert(0, f"the optimizer's kernels take {pct(a.optimizer_kernel_share)} of kernel time "
                     f"(top kernels: {top})")
        fix = OPTIMIZER_FIX
    return Finding("memory_bound", a.gpu_busy_fraction * ew, min(1.0, ew), ev, fix)


def finding(a: RankAnalysis) -> Finding | None:
    t = {k: v.value for k, v in THRESHOLDS.items()}
    share = a.kernel_time_share
    gemm = share.get("gemm", 0.0) + share.get("attention", 0.0)
    if a.gpu_busy_fraction >= t["memory_busy_min"] and share.get("elementwise", 0.0) >= \
            t["memory_elementwise_min"] and gemm <= t["memory_gemm_max"]:
        return evidence(a, gemm)
    return None


SIGNATURE = Signature(
    name="memory_bound", label="Memory-bound",
    hint="the GPU is busy, but with elementwise/norm kernels, not GEMMs",
    fix="Fuse the elementwise/normalisation chain (torch.compile, fused kernels), use "
        "lower precision activations, avoid materialising intermediates.",
    thresholds=THRESHOLDS, finding=finding, gap_cause="memory_bound", scenario="memory_bound")
