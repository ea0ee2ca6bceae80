"""``launch_bound``: the GPU idles in short gaps the CPU fills with launch calls."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis.rank_analysis import LAUNCH_SPACING_MAX_US
from ._base import Finding, Signature, Threshold, pct
from ._rules import LOSS_MIN
from .data_starved import TELLS_MIN, data_tells
from .memory_bound import THRESHOLDS as MEMORY_THRESHOLDS, skinny_bytes_lines

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis

THRESHOLDS = {
    "launch_density_min_per_ms": Threshold(
        1000.0 / LAUNCH_SPACING_MAX_US,
        "launch_bound vs a host stall: inside a host-wait gap, a stretch of more than 333 µs without a launch "
        "call (fewer than 3 per ms) is a host stall, the rest launch overhead. Eager PyTorch spends 10-50 µs "
        "of host time per op, so a thread that launches less often is busy with something else. Launch-bound "
        "traces launch 5-27 per ms; the H200 data stalls are 15-65 ms long."),
}

GRAPHED_LAUNCH_FIX = ("The step already replays CUDA graphs, so the host's own time between replays sets the "
                      "pace: put more work in each replay (a bigger batch, the optimizer step inside the "
                      "compiled region), fewer graph calls per step, and no host syncs (.item()) between them.")


def evidence(a: RankAnalysis) -> Finding:
    c, launch = a.idle_causes, a.launch
    ev = [f"GPU compute idle {pct(c.launch)} of the step in {c.launch_gaps} short gaps (median "
          f"{c.launch_gap_median_us:.0f} µs) that the CPU fills with launch calls "
          f"({launch.launches_per_ms:.1f} launches per ms)",
          f"median kernel {launch.median_kernel_us:.1f} µs; {pct(launch.kernels_shorter_than_launch_fraction)} "
          f"of kernels are shorter than their launch call (median call {launch.median_launch_call_us:.1f} µs, "
          f"launch-to-kernel latency {launch.median_launch_delay_us:.1f} µs)"]
    if c.data > 0.005:
        ev.append(f"host stalls without launches: {pct(c.data)} of the step"
                  + (" (no data tell: host overhead between launches)" if data_tells(c) < TELLS_MIN * c.data else ""))
    if c.data > c.launch:
        ev.insert(0, f"GPU compute idle {pct(c.host)} of the step waiting on the host: launching work "
                     f"{pct(c.launch)}, host work between launches that launches nothing {pct(c.data)}")
    skinny = a.kernel_evidence.skinny_gemm_share
    if skinny >= MEMORY_THRESHOLDS["skinny_gemm_min"].value:
        ev.append(f"{pct(skinny)} of kernel time is skinny GEMMs (GEMV, a tile side <= 16: a decode of a few "
                  "tokens): with the launches gone (CUDA graphs) the GPU will be memory-bound")
        ev.extend(skinny_bytes_lines(a)[:1])
    fix = ""
    if launch.graph_launches:
        ev.append(f"the step already replays CUDA graphs ({launch.graph_launches} graph launches in the window)")
        fix = GRAPHED_LAUNCH_FIX
    return Finding("launch_bound", c.launch, min(1.0, c.launch / (2 * LOSS_MIN)), ev, fix)


def finding(a: RankAnalysis) -> Finding | None:
    return evidence(a) if a.idle_causes.launch >= LOSS_MIN else None


SIGNATURE = Signature(
    name="launch_bound", label="Launch-bound",
    hint="tiny kernels, gaps between them: the CPU cannot launch fast enough",
    fix="Cut launch overhead: capture the step in CUDA graphs or torch.compile "
        "(mode=\"reduce-overhead\"); fuse small ops; use a bigger batch.",
    thresholds=THRESHOLDS, finding=finding, heatmap_metric="idle", gap_cause="launch_gaps")
