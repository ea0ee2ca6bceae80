"""``data_starved``: the GPU idles while the host prepares input instead of launching work."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, ms, pct

if TYPE_CHECKING:
    from ...analysis.rank_analysis import IdleCauses, RankAnalysis

THRESHOLDS = {
    "dataloader_min": Threshold(
        0.05, "data_starved needs its loss (DataLoader + host stalls) above loss_min; the DataLoader share is "
              "reported against TB's 5 % rule (metrics.md §2). ResNet num_workers_0: DataLoader 39 %; "
              "num_workers_4: 1 %."),
    "starved_min": Threshold(0.10, "The least DataLoader + host-stall share of the step that names it."),
    "data_tells_min": Threshold(
        0.5, "... and at least half of that loss must carry a data tell: the DataLoader, a blocking sync/copy "
             "call, or a stall that ends with a host-to-device copy (the batch made on the CPU). A stall with "
             "no tell (host work the profiler does not see, CPU ops that launch nothing) is host_bound, never "
             "data_starved: the DataLoader advice would have no evidence."),
}
STARVED_MIN = THRESHOLDS["starved_min"].value
TELLS_MIN = THRESHOLDS["data_tells_min"].value


def data_tells(c: IdleCauses) -> float:
    """The part of a starved GPU's idle that carries a data tell (DataLoader, blocking call, a stall
    ending with a host-to-device copy)."""
    return c.dataloader + min(c.host_stall, c.stall_blocking + c.stall_before_htod)


def evidence(a: RankAnalysis) -> Finding:
    c = a.idle_causes
    ev = [f"GPU compute idle {pct(c.data)} of the step while the host prepares work instead of "
          f"launching it (launch overhead only {pct(c.launch)})"]
    if c.dataloader > 0.005:
        ev.append(f"the host is inside the DataLoader (__next__) for {pct(c.dataloader)} of the step "
                  f"while the GPU idles (DataLoader spans {pct(a.dataloader_fraction)} of the step)")
    if c.host_stall >= 0.1 * c.data:
        ev.append(f"{c.stall_gaps} host stall{'s' if c.stall_gaps != 1 else ''} (longest "
                  f"{ms(c.stall_longest_s)}) cover {pct(c.host_stall)} of the step: blocking "
                  f"sync/copy calls {pct(c.stall_blocking)}, CPU ops that launch nothing "
                  f"{pct(c.stall_cpu_ops)}, code the profiler does not see {pct(c.stall_uninstrumented)}")
    if c.host_stall > 0 and c.stall_before_htod >= 0.5 * c.host_stall:
        ev.append("the stalls end with a host-to-device copy: the next batch is made on the CPU inside "
                  "the training loop")
    if c.data > 0 and data_tells(c) < TELLS_MIN * c.data:
        ev.append("no data tell (DataLoader, blocking copy, host-to-device copy after the stall): the host "
                  "is busy with other work that launches nothing")
    if c.cpu_ops_in_stall:
        ev.append("CPU ops inside the stalls: " + ", ".join(f"{n[:60]} {ms(sec)}" for n, sec in c.cpu_ops_in_stall))
    return Finding("data_starved", c.data, min(1.0, c.data / (2 * STARVED_MIN)), ev)


def finding(a: RankAnalysis) -> Finding | None:
    c = a.idle_causes
    if c.data >= STARVED_MIN and data_tells(c) >= TELLS_MIN * c.data:
        return evidence(a)
    return None


SIGNATURE = Signature(
    name="data_starved", label="Data-starved",
    hint="the GPU idles between steps while the CPU prepares data",
    fix="Feed the GPU: prepare batches off the training loop (DataLoader with num_workers > 0, "
        "pin_memory=True, prefetch_factor), non_blocking copies, and no host syncs or "
        "CPU preprocessing between steps.",
    thresholds=THRESHOLDS, finding=finding, heatmap_metric="idle", gap_cause="data_stall")
