"""``host_bound``: the GPU idles while the host runs work that launches nothing and reads no input:
Python between the step's ops (metric or logging work, a framework's bookkeeping between CUDA-graph
replays), CPU ops that launch no kernel (cuDNN autotuning), a sleep or a lock.

It is what a host stall is when it carries no *data tell* (no DataLoader, no host-to-device copy
ending it: :func:`.data_starved.data_tells`) and does not follow a blocking sync that drained the
GPU (:mod:`.host_sync_bound`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Finding, Signature, Threshold, ms, pct
from ._rules import LOSS_MIN
from .data_starved import STARVED_MIN, TELLS_MIN, data_tells
from .host_sync_bound import share as host_sync_share

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis

THRESHOLDS = {
    "host_stall_min": Threshold(
        0.10, "host_bound needs its loss (host stalls without launches, with no data tell and not after a sync "
              "that drained the GPU) above this share of the step, as data_starved does (starved_min): the "
              "smallest loss worth a fix first."),
    "host_confidence": Threshold(
        0.5, "Its confidence is halved (the factor): the trace shows that the host launched nothing, not what it "
             "did; code the profiler does not see may be Python, a sleep or a lock (with_stack=True or py-spy "
             "tells). As data_starved without a tell had it."),
    "untold_stall_dominance": Threshold(
        2.0, "Beside another cause above loss_min, host_bound only when its stall is at least twice the largest "
             "cause that has its evidence (a host that sleeps or works 78 % of the step, against 16 % of "
             "collectives). The sampled production ranks (host stall 28-29 % with events dropped, against "
             "25-28 % of exposed NCCL) stay comm_bound."),
}

FIX = ("Find the host work between the step's launches and take it off the GPU's path: profile the host "
       "(torch.profiler with_stack=True, or py-spy) to see what runs there; move metric, logging and "
       "bookkeeping work after the next step's work is launched or to another thread or process; make it "
       "cheaper; if it is framework overhead between small launches, capture the step in CUDA graphs "
       "(torch.compile mode=\"reduce-overhead\").")

GRAPHED_FIX = ("The step already replays CUDA graphs, so the host's own time between replays sets the pace: put "
               "more work in each replay (a bigger batch, the optimizer step inside the compiled region), fewer "
               "graph calls per step, no host syncs (.item()) between them, and look at the Python around the "
               "compiled call (guards, input copies) with with_stack=True or py-spy.")


def untold(a: RankAnalysis) -> bool:
    """The host-stall idle is the largest host cause, has no data tell (data_starved's rule does not hold)
    and no sync that drained the GPU explains it (host_sync_bound's does not)."""
    c = a.idle_causes
    return data_tells(c) < TELLS_MIN * c.data and host_sync_share(c) < LOSS_MIN and c.data > c.launch


def evidence(a: RankAnalysis) -> Finding:
    c, k = a.idle_causes, a.kernel_evidence
    ev = [f"GPU compute idle {pct(c.data)} of the step while the host works without launching "
          f"({c.stall_gaps} stretch{'es' if c.stall_gaps != 1 else ''} without a launch call, longest "
          f"{ms(c.stall_longest_s)}; launch overhead only {pct(c.launch)})",
          f"in those stretches the host is in code the profiler does not see {pct(c.stall_uninstrumented)} "
          f"(Python between ops, a sleep or a lock), in CPU ops that launch nothing {pct(c.stall_cpu_ops)}, "
          f"in blocking sync/copy calls {pct(c.stall_blocking)}",
          "no data tell (no DataLoader, no host-to-device copy ending the stall) and no blocking sync that "
          "drained the GPU before it: the host is busy with its own work, not waiting for input or the GPU"]
    if c.cpu_ops_in_stall:
        ev.append("CPU ops inside the stalls: " + ", ".join(f"{n[:60]} {ms(sec)}" for n, sec in c.cpu_ops_in_stall))
    fix = ""
    if a.launch.graph_launches:
        ev.append(f"the step replays CUDA graphs ({a.launch.graph_launches} graph launches, "
                  f"{pct(k.graph_replay_share)} of GPU time): the host's time between replays sets the pace")
        fix = GRAPHED_FIX
    return Finding("host_bound", c.data, min(1.0, c.data / (2 * STARVED_MIN)), ev, fix)


def finding(a: RankAnalysis) -> Finding | None:
    if a.idle_causes.data < THRESHOLDS["host_stall_min"].value or not untold(a):
        return None
    f = evidence(a)
    f.confidence = round(f.confidence * THRESHOLDS["host_confidence"].value, 2)
    return f


SIGNATURE = Signature(
    name="host_bound", label="Host-bound",
    hint="the GPU idles while the host runs work that launches nothing: Python, bookkeeping, no input",
    fix=FIX, thresholds=THRESHOLDS, finding=finding, heatmap_metric="idle", gap_cause="data_stall")
