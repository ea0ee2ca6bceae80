"""``comm_bound``: compute idles while communication runs, on the critical path."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, pct
from ...vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT, format_fraction

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis

THRESHOLDS = {
    "comm_exposed_min": Threshold(
        0.10, "comm_bound: compute idle while communication runs (GPU collectives, or CPU-side collectives that "
              "block the host: gloo, c10d waits) above 10 % of the step: the TB profiler plugin's 10 % rule "
              "(metrics.md §2). DLRM ranks: 29-63 %; the H200 gloo host all-reduce: 78 %; healthy "
              "trace_diff/test: 10 %."),
    "comm_vs_compute_min": Threshold(
        0.25, "... and larger than compute-busy time x this (communication on the critical path)."),
}
EXPOSED_MIN = THRESHOLDS["comm_exposed_min"].value

CPU_COMM_FIX = ("The collectives run on the host (gloo / CPU tensors) and block it: keep gradients on the GPU "
                "and all-reduce them with NCCL (DDP), or issue them with async_op=True and overlap; fewer, "
                "larger messages.")


def evidence(a: RankAnalysis) -> Finding:
    c = a.idle_causes
    loss = c.communication
    gpu_part = loss - c.communication_cpu
    ev = [f"{COMM_WAIT.name} (compute idle while communication runs): {format_fraction(loss)} of the step"]
    if gpu_part > 0.005 or a.comm_fraction > 0:
        ev.append(f"GPU collectives: {pct(a.comm_fraction)} of the step, "
                  f"{pct(a.comm_overlap_fraction or 0.0)} of it overlapped with compute, "
                  f"{COMM_KERNELS_EXPOSED.name} {format_fraction(a.comm_exposed_fraction)}")
    if c.communication_cpu > 0.005:
        ev.append(f"CPU-side collectives (gloo, c10d waits) block the host for "
                  f"{pct(c.communication_cpu)} of the step while no compute kernel runs")
    ev.append(f"compute busy {pct(a.compute_busy_fraction)} of the step")
    fix = CPU_COMM_FIX if c.communication_cpu > 0.5 * loss else ""
    return Finding("comm_bound", loss, min(1.0, loss / (2 * EXPOSED_MIN)), ev, fix)


def finding(a: RankAnalysis) -> Finding | None:
    comm = evidence(a)
    if comm.loss_fraction >= EXPOSED_MIN and \
            comm.loss_fraction >= THRESHOLDS["comm_vs_compute_min"].value * a.compute_busy_fraction:
        return comm
    return None


SIGNATURE = Signature(
    name="comm_bound", label="Communication-bound",
    hint="compute waits while the communication stream runs",
    fix="Overlap communication with compute: prefetch/overlap collectives (DDP bucket size, "
        "FSDP prefetch), bigger buckets, fewer/larger messages, gradient accumulation.",
    thresholds=THRESHOLDS, finding=finding, heatmap_metric="exposed comm", gap_cause="exposed_comm")
