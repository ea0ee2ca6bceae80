"""``straggler``: a job-level verdict: one late rank explains the others' wait in collectives
(the rule is :func:`..api.multi_rank_summary`, the verdict :func:`..diagnose.straggler_diagnosis`)."""
from __future__ import annotations

from ._base import Signature, Threshold

THRESHOLDS = {
    "straggler_lag_min_step": Threshold(
        0.10, "straggler: a rank's collectives start later than the median of the other ranks' by more than "
              "10 % of the step (the same 10 % rule as comm_bound: a lag that size is exposed communication on "
              "every other rank) and at least 100 µs (launch jitter is tens of µs) ..."),
    "straggler_lag_min_s": Threshold(100e-6, "See straggler_lag_min_step."),
    "straggler_wait_explained_min": Threshold(
        0.5, "... and the others' collectives last longer than the late rank's by at least half the lag: they "
             "spend the lag waiting in the collective, so the lag explains their exposed communication."),
}

SIGNATURE = Signature(
    name="straggler", label="Straggler: a late rank",
    hint="one rank arrives late; the others wait for it inside the collective",
    fix="Fix the late rank, not the communication: the others' exposed collectives are waiting "
        "for it.",
    thresholds=THRESHOLDS, heatmap_metric="exposed comm", gap_cause="exposed_comm")
