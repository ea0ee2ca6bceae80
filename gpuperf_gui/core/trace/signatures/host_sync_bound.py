"""``host_sync_bound``: the GPU idles after blocking syncs (``.item()``, ``.cpu()``, ``.tolist()``,
``cudaStreamSynchronize``, a synchronous device-to-host copy, ``torch.cuda.synchronize()``) while
the host works on the value without launching anything (:mod:`..host_sync`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, ms, pct
from ._rules import LOSS_MIN

if TYPE_CHECKING:
    from ..analysis import RankAnalysis

THRESHOLDS = {
    "sync_stall_share_min": Threshold(
        0.5, "host_sync_bound needs at least half of the host stalls to follow a blocking sync (then the syncs, "
             "not the input or code the profiler misses, shape the idle) and its loss above loss_min. Its loss "
             "is what reading later gives back: per stall, the lesser of the stall and the host's wait in the "
             "sync before it, while the GPU still worked. Host work longer than the GPU's work between syncs "
             "stays exposed without them: the CUDA-graph step that reads its loss once per step stalls 30 % "
             "after it but gets 1 % back (host overhead, not the sync); the gloo late rank sleeps after its "
             ".item() (0.1 %); 4 micro-batches of 1.2 ms GPU work, each read with .item() and followed by "
             "1.5 ms of Python, get 44 % back."),
}

FIX = ("Stop syncing the host on every (micro-)batch: keep the value on the GPU (accumulate the loss or "
       "metric in a tensor) and read it with .item() every N steps; copy to the host with "
       "non_blocking=True into pinned memory instead of .cpu()/.tolist(); move the metric and logging "
       "work off the step (after the next step's work is launched, or to another thread).")


def finding(a: RankAnalysis) -> Finding | None:
    c = a.idle_causes
    loss = c.sync_recoverable
    if loss < LOSS_MIN or c.stall_after_sync < THRESHOLDS["sync_stall_share_min"].value * c.host_stall:
        return None
    steps = sum(not s.warmup for s in a.steps) or len(a.steps)
    per_step = f" ({c.sync_stalls / steps:.1f} per step)" if steps else ""
    ev = [f"GPU compute idle {pct(c.stall_after_sync)} of the step after {c.sync_stalls} blocking syncs{per_step}: "
          f"the host waits for the GPU to drain, then works without launching (median idle after each "
          f"{ms(c.sync_idle_median_s)}); reading the values later gives back {pct(loss)} of the step, the "
          "host's work overlapping the GPU's"]
    if c.sync_issuers:
        ev.append("the syncs come from " + ", ".join(f"{n[:50]} ({k}×)" for n, k in c.sync_issuers))
    ev.append(f"host stalls without launches {pct(c.host_stall)} of the step, "
              f"{pct(c.stall_after_sync / max(c.host_stall, 1e-12))}"
              " of it right after a sync; no data tell (no DataLoader, no host-to-device copy ending the stall)")
    return Finding("host_sync_bound", loss, min(1.0, loss / (2 * LOSS_MIN)), ev)


SIGNATURE = Signature(
    name="host_sync_bound", label="Host-sync-bound",
    hint="the GPU drains at each .item()/.cpu(), then idles while the host works on the value",
    fix=FIX, thresholds=THRESHOLDS, finding=finding, heatmap_metric="idle", gap_cause="host_sync",
    scenario="host_sync_bound")
