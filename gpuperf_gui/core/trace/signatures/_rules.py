"""Thresholds every rule shares (the per-signature ones live in each signature's module)."""
from __future__ import annotations

from ._base import Threshold

THRESHOLDS = {
    "loss_min": Threshold(0.10, "A signature is named when its loss exceeds this (the smallest loss worth a "
                                "fix first)."),
    "host_share_min": Threshold(0.5, "With no cause above loss_min, host-bound when DataLoader + launch + host "
                                     "stalls explain at least half of the compute-idle time (else the idle has "
                                     "no dominant cause: inconclusive)."),
}
LOSS_MIN = THRESHOLDS["loss_min"].value
HOST_SHARE_MIN = THRESHOLDS["host_share_min"].value
