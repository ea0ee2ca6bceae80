"""``memory_bound``: a packed GPU whose kernels move bytes rather than compute."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ....units import format_si
from ._base import Finding, Signature, Threshold, ms, pct

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis

THRESHOLDS = {
    "memory_busy_min": Threshold(
        0.60, "memory_bound: a packed GPU (busy >= 60 %) whose kernel time is >= 50 % elementwise/normalisation/"
              "reduction, with GEMM+attention under 40 % (H100 Qwen decode: 63 % elementwise, 36 % "
              "GEMM+attention; memory_bound_visible: 100 % / 0 %; healthy GPT: 36 % / 61 %)."),
    "memory_elementwise_min": Threshold(0.50, "See memory_busy_min."),
    "memory_gemm_max": Threshold(0.40, "See memory_busy_min."),
    "skinny_gemm_min": Threshold(
        0.50, "... or a packed GPU (busy >= memory_busy_min) whose kernel time is >= 50 % skinny GEMMs (GEMV, or a "
              "tile with a side <= 16 in the kernel's name): a decode of 1-16 tokens per weight read, each GEMM "
              "streaming its weight matrix at up to HBM bandwidth for 2 FLOPs per weight (an AI near 1 FLOP/byte "
              "in bf16, far below any ridge). The eager H200 bf16 decode: 70 % of kernel time in nvjet 64x8 / "
              "256x8 tiles; the vLLM MoE decode graph: 68 % in 16x128 blocks; the healthy GPT training: 0 %."),
    "optimizer_share_min": Threshold(
        0.25, "... whose fix is the optimizer's when optimizer kernels (multi_tensor_apply, foreach AdamW) take a "
              "quarter of kernel time or more: in a training step that computes anything, AdamW is a few % "
              "(it reads and writes ~16 bytes per parameter once per step, against 6 FLOPs per parameter per "
              "token of forward+backward)."),
    "skinny_hbm_min": Threshold(
        0.30, "... and, where their bytes are known (shapes of their own op, or of un-graphed calls of the same "
              "kernels), they should move them at a good part of HBM bandwidth: the eager H200 bf16 decode's skinny "
              "GEMMs move 66 % of it (44.97 GB in 14.15 ms; the hand count from its shapes agrees). Below 30 % the "
              "GEMMs are too small to stream at bandwidth (latency, not bytes, sets their time): the confidence is "
              "three quarters."),
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


SKINNY_FIX = ("The GEMMs are skinny (a few tokens per weight read): read each weight for more tokens (a larger "
              "decode batch, continuous batching, speculative decoding), move fewer bytes per weight (fp8/int8/"
              "int4 weight-only quantisation), and fuse the small ops between the GEMMs.")
WEAK_EVIDENCE = 0.5
"""The confidence factor when the verdict rests on kernel names alone: shapes (own, or borrowed from
un-graphed calls of the same kernel names) for less than half of the skinny GEMM time."""


def hbm_bandwidth_bytes_per_s(a: RankAnalysis) -> float | None:
    """The rank's device's HBM bandwidth from the device database (None: device unknown)."""
    from ...analysis.kernel_roof import trace_device  # noqa: PLC0415 - the database only when a rule needs it

    device = trace_device(a.device)
    return device.memory_bandwidth_bytes_per_s if device else None


def skinny_bytes_lines(a: RankAnalysis) -> list[str]:
    """What the bytes say of the skinny GEMMs: the rate they move the bytes their shapes must move, set
    against the device's HBM bandwidth; with names alone, the most that bandwidth lets their time move."""
    k, bw = a.kernel_evidence, hbm_bandwidth_bytes_per_s(a)
    rate = k.skinny_bytes_per_s
    if rate is not None and not k.skinny_names_only:
        borrowed = (f"; {pct(k.skinny_borrowed_seconds / k.skinny_shaped_seconds)} of that time graph-replayed, its "
                    "shapes from un-graphed calls of the same kernels" if k.skinny_borrowed_seconds > 0 else "")
        versus = f" = {pct(rate / bw)} of HBM bandwidth ({format_si(bw, 'B/s')})" if bw else ""
        return [f"the skinny GEMMs move ~{format_si(rate, 'B/s')}{versus} while they run: the bytes a GEMM of "
                f"their shapes must move ((M·K + K·N + M·N) x bytes per element) over their time{borrowed}"]
    lines = ["only the names tell: no call of these kernels in the trace has shapes, so their bytes and FLOPs "
             "are unknown"]
    if bw and a.step_time_median_s and a.window_s > 0:
        per_step_s = k.skinny_seconds / a.window_s * a.step_time_median_s
        lines.append(f"at HBM bandwidth ({format_si(bw, 'B/s')}) their {ms(per_step_s)} per step could move at most "
                     f"{format_si(bw * per_step_s, 'B')}: the weights they read per step, against that, say how "
                     "close to bandwidth they run")
    return lines


def skinny_evidence(a: RankAnalysis) -> Finding:
    k = a.kernel_evidence
    names = ", ".join(k.skinny_examples[:2])
    ev = [f"GPU busy {pct(a.gpu_busy_fraction)} but {pct(k.skinny_gemm_share)} of kernel time is skinny GEMMs "
          f"(GEMV, or a tile side <= 16 in the name: {names}): each streams its weights for a few rows of "
          "output, memory-bound", *skinny_bytes_lines(a)]
    weak = k.skinny_names_only
    bw, rate = hbm_bandwidth_bytes_per_s(a), k.skinny_bytes_per_s
    slow = not weak and bw is not None and rate is not None and rate < THRESHOLDS["skinny_hbm_min"].value * bw
    if slow:
        ev.append("that is well below HBM bandwidth: the GEMMs are too small to stream at it (latency sets their "
                  "time), so the confidence is three quarters")
    if k.no_shapes_share > 0.005:
        why = "CUDA graph replay" if k.graph_replay_share >= k.unlaunched_share else "no launch record in the window"
        ev.append(f"no shapes for {pct(k.no_shapes_share)} of GPU time: {why}"
                  + (f" ({a.launch.graph_launches} graph launch{'es' if a.launch.graph_launches != 1 else ''})"
                     if a.launch.graph_launches else ""))
    if weak:
        ev.append("the evidence is the kernels' names, so the confidence is halved")
    conf = min(1.0, k.skinny_gemm_share) * (WEAK_EVIDENCE if weak else 0.75 if slow else 1.0)
    return Finding("memory_bound", a.gpu_busy_fraction * k.skinny_gemm_share, conf, ev, SKINNY_FIX)


def finding(a: RankAnalysis) -> Finding | None:
    t = {k: v.value for k, v in THRESHOLDS.items()}
    share = a.kernel_time_share
    gemm = share.get("gemm", 0.0) + share.get("attention", 0.0)
    if a.gpu_busy_fraction >= t["memory_busy_min"] and share.get("elementwise", 0.0) >= \
            t["memory_elementwise_min"] and gemm <= t["memory_gemm_max"]:
        return evidence(a, gemm)
    if a.gpu_busy_fraction >= t["memory_busy_min"] and a.kernel_evidence.skinny_gemm_share >= t["skinny_gemm_min"]:
        return skinny_evidence(a)
    return None


SIGNATURE = Signature(
    name="memory_bound", label="Memory-bound",
    hint="the GPU is busy, but with elementwise/norm kernels or skinny GEMMs that stream their weights",
    fix="Fuse the elementwise/normalisation chain (torch.compile, fused kernels), use "
        "lower precision activations, avoid materialising intermediates.",
    thresholds=THRESHOLDS, finding=finding, gap_cause="memory_bound")
