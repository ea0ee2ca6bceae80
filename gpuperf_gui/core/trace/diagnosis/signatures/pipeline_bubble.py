"""``pipeline_bubble``: pipeline stages idle next to their send/recv, waiting for each other."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, pct

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis

THRESHOLDS = {
    "bubble_idle_min": Threshold(
        0.10, "pipeline_bubble: compute idle in gaps touching send/recv >= 10 % of the step. A GPipe/1F1B "
              "schedule of p stages and m micro-batches idles (p-1)/(m+p-1): 1/3 for p=2, m=2; 1/9 for p=2, m=8."),
}


def finding(a: RankAnalysis) -> Finding | None:
    c = a.idle_causes
    if not ((a.p2p_kernels or a.p2p_cpu_ops) and c.pipeline >= THRESHOLDS["bubble_idle_min"].value):
        return None
    ev = [f"compute streams idle {pct(1.0 - a.compute_busy_fraction)} of the step; idle next to "
          f"point-to-point send/recv (the bubble): {pct(c.pipeline)} of the step"]
    if a.p2p_kernels:
        ev.append(f"{a.p2p_kernels} p2p send/recv kernels; compute busy {pct(a.compute_busy_fraction)}"
                  f" (GPU busy {pct(a.gpu_busy_fraction)} counts the send/recv kernels)")
    if c.p2p_cpu_blocking > 0.005:
        ev.append(f"the CPU blocks in send/recv for {pct(c.p2p_cpu_blocking)} of the step")
    ev.append("a schedule of p stages and m micro-batches idles (p-1)/(m+p-1) of the step")
    return Finding("pipeline_bubble", c.pipeline, 0.6, ev)


SIGNATURE = Signature(
    name="pipeline_bubble", label="Pipeline bubble",
    hint="stages wait for each other: idle at the start and end of the step",
    fix="Shrink the pipeline bubble: more micro-batches per step, an interleaved 1F1B "
        "or zero-bubble schedule.",
    thresholds=THRESHOLDS, finding=finding, heatmap_metric="idle", gap_cause="pipeline_bubble")
