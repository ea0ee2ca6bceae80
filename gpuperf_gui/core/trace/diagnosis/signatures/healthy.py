"""``healthy``: the GPU is busy and no cause of lost time is worth a fix first."""
from __future__ import annotations

from ._base import Signature, Threshold

THRESHOLDS = {
    "healthy_idle_max": Threshold(
        0.15, "healthy never when the GPU idles more than this share of the step (metrics.md §8 anchors a "
              "healthy step at >= 90 % busy; 15 % leaves room for the profiler's own overhead, +4 % on the "
              "H200 runs). ResNet num_workers_4 idles 23 % (launch-bound); the H200 fed DataLoader and profile "
              "runs idle 5-6 %, healthy GPT and vLLM decode 1-2 %."),
}

SIGNATURE = Signature(
    name="healthy", label="Healthy",
    hint="the GPU is busy with GEMMs, with no gap worth a fix",
    fix="Nothing dominates: measure MFU against the roofline and look at the biggest kernels.",
    thresholds=THRESHOLDS)
