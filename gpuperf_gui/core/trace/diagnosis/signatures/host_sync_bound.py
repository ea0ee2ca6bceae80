"""``host_sync_bound``: the GPU idles after blocking syncs (``.item()``, ``.cpu()``, ``.tolist()``,
``cudaStreamSynchronize``, a synchronous device-to-host copy, ``torch.cuda.synchronize()``) while
the host works on the value without launching anything (:mod:`..host_sync`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, ms, pct
from ._rules import LOSS_MIN

if TYPE_CHECKING:
    from ...analysis.rank_analysis import IdleCauses, RankAnalysis

THRESHOLDS = {
    "sync_stall_share_min": Threshold(
        0.5, "host_sync_bound needs its loss (the GPU idle in host stalls that begin as a blocking sync returns) "
             "above loss_min and at least half of all host stalls: then the syncs, not the input or code the "
             "profiler misses, shape the idle."),
    "sync_wait_min": Threshold(
        0.1, "... and the syncs must have drained a queue: the host waited in them (while the GPU still worked) "
             "at least a tenth of the idle that follows. A sync that returns at once found the GPU done, and the "
             "idle after it is the host's own work, there with or without the sync. Recorded on an H200: .item() "
             "after each micro-batch waits 0.20 of the idle after it (the profiler's slower launches shrink the "
             "queue; unprofiled the sync costs 44 % of the step); the CUDA-graph step that reads its loss once "
             "waits 0.04 (host overhead sets the pace); the gloo late rank, sleeping after its .item(), 0.001."),
}

FIX = ("Stop syncing the host on every (micro-)batch: keep the value on the GPU (accumulate the loss or "
       "metric in a tensor) and read it with .item() every N steps; copy to the host with "
       "non_blocking=True into pinned memory instead of .cpu()/.tolist(); move the metric and logging "
       "work off the step (after the next step's work is launched, or to another thread).")


def share(c: IdleCauses) -> float:
    """The step share the host syncs cost (the MFU gap's "host syncs"): the idle after the syncs where
    the rule's conditions on them hold (most host stalls follow a sync that drained a queue), else 0."""
    t = {k: v.value for k, v in THRESHOLDS.items()}
    after = c.stall_after_sync
    if after <= 0 or after < t["sync_stall_share_min"] * c.host_stall or c.sync_recoverable < t["sync_wait_min"] * after:
        return 0.0
    return after


def finding(a: RankAnalysis) -> Finding | None:
    c = a.idle_causes
    loss = share(c)
    if loss < LOSS_MIN:
        return None
    steps = sum(not s.warmup for s in a.steps) or len(a.steps)
    syncs = max(c.syncs, c.sync_stalls)
    per_step = (f" ({syncs / steps:.1f} blocking syncs per step, {c.sync_stalls / steps:.1f} followed by a stall)"
                if steps else "")
    ev = [f"GPU compute idle {pct(loss)} of the step after {c.sync_stalls} of {syncs} blocking syncs{per_step}: "
          f"the host waits for the GPU to drain, then works without launching (median idle after each "
          f"{ms(c.sync_idle_median_s)})",
          f"the host waits inside the syncs while the GPU still works: reading the values later gives back at "
          f"least {pct(c.sync_recoverable)} of the step here, more without the profiler's launch overhead"]
    if c.sync_issuers:
        ev.append("the syncs come from " + ", ".join(f"{n[:50]} ({k}×)" for n, k in c.sync_issuers))
    ev.append(f"host stalls without launches {pct(c.host_stall)} of the step, "
              f"{pct(c.stall_after_sync / max(c.host_stall, 1e-12))}"
              " of it right after a sync; no data tell (no DataLoader, no host-to-device copy ending the stall)")
    return Finding("host_sync_bound", loss, min(1.0, loss / (2 * LOSS_MIN)), ev)


SIGNATURE = Signature(
    name="host_sync_bound", label="Host-sync-bound",
    hint="the GPU drains at each .item()/.cpu(), then idles while the host works on the value",
    fix=FIX, thresholds=THRESHOLDS, finding=finding, heatmap_metric="host-sync idle", gap_cause="host_sync")
