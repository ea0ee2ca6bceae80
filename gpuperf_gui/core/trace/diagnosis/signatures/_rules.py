"""Thresholds every rule shares (the per-signature ones live in each signature's module)."""
from __future__ import annotations

from ._base import Threshold

THRESHOLDS = {
    "loss_min": Threshold(0.10, "A signature is named when its loss exceeds this (the smallest loss worth a "
                                "fix first)."),
    "host_share_min": Threshold(0.5, "With no cause above loss_min, host-bound when DataLoader + launch + host "
                                     "stalls explain at least half of the compute-idle time (else the idle has "
                                     "no dominant cause: inconclusive)."),
    "close_call_points": Threshold(0.03, "Two causes whose losses differ by less than 3 points of the step are a close "
                                         "call: the headline names both and the confidence is at most 0.5 (the 8-rank "
                                         "DLRM job loses 41.6 % to exposed communication and 41.1 % to launch gaps; "
                                         "either fix alone leaves the other)."),
}
LOSS_MIN = THRESHOLDS["loss_min"].value
CLOSE_CALL_POINTS = THRESHOLDS["close_call_points"].value
