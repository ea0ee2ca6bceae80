"""Diagnosis: which signature the largest gap has, its evidence, and the fix to try first.

Each signature (a module of :mod:`.signatures`; :data:`THRESHOLDS` gathers their thresholds) gets a
*loss*: the fraction of the analysis window it explains. The primary signature is the one with the
largest loss among those whose conditions hold. The losses come from one attribution of the compute
streams' idle time (:class:`.rank_analysis.IdleCauses`), so they never overlap and the evidence of the
verdict is the figure that chose it. With no signature above ``loss_min``, a GPU idle more than
``healthy_idle_max`` of the step is never ``healthy``: when the host explains most of the idle, the
larger host cause (launch overhead or a starved GPU) is named; otherwise the rank is
``inconclusive``, as it is when the trace has no GPU activity at all or too little to show a pattern.

A job of several ranks is ``straggler`` when one or more ranks start their collectives late and the
others' collectives last longer by about that lag (:func:`straggler_diagnosis`): the late rank is
the cause, the others' exposed communication the symptom. Pipelines (send/recv between stages,
offset by design) are never stragglers.

A truncated trace is diagnosed from the part that was kept, with an evidence line saying so and
half the confidence.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..analysis.rank_analysis import RankAnalysis
from .signatures import REGISTRY, data_starved, host_bound, launch_bound
from .signatures import thresholds as signature_thresholds
from .signatures._base import Finding, ms, pct
from .signatures._rules import CLOSE_CALL_POINTS, LOSS_MIN
from .signatures.data_starved import data_tells

__all__ = ["FIXES", "THRESHOLDS", "Diagnosis", "Finding", "StragglerEvidence", "data_tells",
           "diagnose_job", "diagnose_rank", "findings", "straggler_diagnosis"]

THRESHOLDS: dict[str, float] = signature_thresholds()

FIXES = {name: sig.fix for name, sig in REGISTRY.items()}


@dataclass
class Diagnosis:
    """The diagnosis object of the JSON contract."""

    signature: str
    confidence: float
    evidence: list[str]
    fix: str
    secondary: list[str] = field(default_factory=list)
    loss_fraction: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)
    """For a job: the ranks the verdict names (the late ranks of a straggler, the ranks showing it)."""
    close_call: list[str] = field(default_factory=list)
    """The two causes, when their losses differ by less than ``close_call_points``: the headline names
    both, and the confidence is at most 0.5 (:func:`close_call`)."""

    @property
    def headline(self) -> str:
        """``comm_bound``, or ``comm_bound ~ launch_bound`` for a close call."""
        return " ~ ".join(self.close_call) if self.close_call else self.signature

    def to_json(self) -> dict:
        return asdict(self)


def close_call(d: Diagnosis, first: tuple[str, float], second: tuple[str, float] | None, unit: str) -> Diagnosis:
    """Mark ``d`` a close call when ``second``'s loss is within ``close_call_points`` of ``first``'s
    (fractions of the step; ``unit`` says what they are the mean of, for the evidence)."""
    if second is None or first[1] - second[1] >= CLOSE_CALL_POINTS or second[1] < LOSS_MIN:
        return d
    d.close_call = [first[0], second[0]]
    gap = max(first[1] - second[1], 0.0)
    d.confidence = round(min(d.confidence, 0.25 + 0.25 * gap / CLOSE_CALL_POINTS), 2)
    d.evidence.insert(0, f"close call: {first[0]} costs {100 * first[1]:.1f} % of the step{unit}, {second[0]} "
                         f"{100 * second[1]:.1f} %: fix both (either alone leaves the other)")
    d.fix = f"{d.fix} Close behind, {second[0]}: {FIXES[second[0]]}"
    d.secondary = [second[0], *(s for s in d.secondary if s != second[0])]
    return d


def findings(a: RankAnalysis) -> list[Finding]:
    """Every signature whose conditions hold, with its loss and evidence (each signature's rule)."""
    found = (sig.finding(a) for sig in REGISTRY.values() if sig.finding is not None)
    return [f for f in found if f is not None]


UNLAUNCHED_NOTE_MIN = 0.05
"""Kernel time without a launch record worth a line in the evidence (5 % of GPU time)."""


def diagnose_rank(a: RankAnalysis) -> Diagnosis:
    """Pick the primary signature for one rank."""
    d = _diagnose_rank(a)
    k = a.kernel_evidence
    if k.unlaunched_share >= UNLAUNCHED_NOTE_MIN and a.has_device_work:
        d.evidence.append(f"{k.unlaunched_kernels} kernels ({pct(k.unlaunched_share)} of GPU time) have no launch "
                          "record in the window (launched before it, e.g. during warm-up): the op table's device "
                          "totals and the launch statistics leave them out; busy time and idle gaps count them")
    if a.truncation and not (a.truncation_gpu_missing and not a.has_device_work):
        d.evidence.append("the trace is truncated: these figures cover only the part that was kept"
                          + ("; GPU events may be missing" if a.truncation_gpu_missing else ""))
        d.confidence = round(d.confidence / 2, 2)
    return d


def _inconclusive(evidence: list[str], secondary: list[str] | None = None,
                  scores: dict[str, float] | None = None) -> Diagnosis:
    return Diagnosis("inconclusive", 0.0, evidence, FIXES["inconclusive"], secondary or [], 0.0,
                     scores or {})


def _diagnose_rank(a: RankAnalysis) -> Diagnosis:
    t = THRESHOLDS
    if not a.has_device_work:
        if a.truncation_gpu_missing:
            return _inconclusive(["no GPU events in the part of the trace that was kept: the file was cut "
                                  "short, and Kineto writes GPU events after the CPU events"])
        return _inconclusive(["no GPU activity in this trace: CPU-only or a profiler mode without kernel events"])
    busy_s = a.gpu_busy_fraction * a.window_s
    if a.launch.kernels < t["evidence_min_kernels"] and busy_s < t["evidence_min_busy_s"]:
        return _inconclusive([f"too little GPU activity to diagnose: {a.launch.kernels} "
                              f"kernel{'s' if a.launch.kernels != 1 else ''}, "
                              f"{busy_s * 1e6:.0f} µs of device work in a {a.window_s * 1e3:.3g} ms window",
                              f"GPU busy {pct(a.gpu_busy_fraction)} of the window"])
    found = _without_weak_host_bound(sorted(findings(a), key=lambda f: -f.loss_fraction))
    scores: dict[str, float] = {}
    for f in found:
        scores[f.signature] = max(scores.get(f.signature, 0.0), f.loss_fraction)
    real = [f for f in found if f.loss_fraction >= t["loss_min"]]
    idle = 1.0 - a.gpu_busy_fraction
    if not real:
        c = a.idle_causes
        if idle <= t["healthy_idle_max"]:
            ev = [f"GPU busy {pct(a.gpu_busy_fraction)} of the step; compute idle while communication "
                  f"runs {pct(c.communication)}; host-bound idle {pct(c.host)}"]
            return Diagnosis("healthy", round(min(1.0, a.gpu_busy_fraction), 2), ev, FIXES["healthy"],
                             [f.signature for f in found], 0.0, scores)
        if c.compute_idle > 0 and c.host >= t["host_share_min"] * c.compute_idle:
            f = launch_bound.evidence(a) if c.launch >= c.data else \
                data_starved.evidence(a) if data_tells(c) >= t["data_tells_min"] * c.data else host_bound.evidence(a)
            f.evidence.insert(0, f"GPU idle {pct(idle)} of the step; the host explains "
                                 f"{pct(c.host / c.compute_idle)} of the compute-idle time")
            f.confidence = round(f.confidence / 2, 2)
            real = [f]
            scores.setdefault(f.signature, f.loss_fraction)
        else:
            return _inconclusive(_idle_evidence(a), [f.signature for f in found], scores)
    primary = real[0]
    secondary = list(dict.fromkeys(f.signature for f in found
                                   if f.signature != primary.signature and f.loss_fraction >= t["loss_min"] / 2))
    d = Diagnosis(primary.signature, round(primary.confidence, 2), list(primary.evidence),
                  primary.fix or FIXES[primary.signature], secondary, primary.loss_fraction, scores)
    runner = next((f for f in real[1:] if f.signature != primary.signature), None)
    return close_call(d, (primary.signature, primary.loss_fraction),
                      (runner.signature, runner.loss_fraction) if runner else None, "")


def _without_weak_host_bound(found: list[Finding]) -> list[Finding]:
    """``found`` (largest loss first) without host_bound when another cause has its own evidence and the
    untold stall is not ``untold_stall_dominance`` times it (the sampled production ranks: comm_bound)."""
    others = [f for f in found if f.signature != "host_bound" and f.loss_fraction >= THRESHOLDS["loss_min"]]
    if others and any(f.signature == "host_bound" and f.loss_fraction < THRESHOLDS["untold_stall_dominance"]
                      * others[0].loss_fraction for f in found):
        return [f for f in found if f.signature != "host_bound"]
    return found


def _idle_evidence(a: RankAnalysis) -> list[str]:
    """Evidence for a GPU idle with no signature that explains it."""
    c = a.idle_causes
    idle = 1.0 - a.gpu_busy_fraction
    return [f"GPU idle {pct(idle)} of the window with no dominant cause: of the step, compute idles "
            f"while communication runs {pct(c.communication)}, next to send/recv {pct(c.pipeline)}, "
            f"waiting on other streams/events {pct(c.gpu_wait)}, on the host {pct(c.host)} "
            f"(launch overhead {pct(c.launch)}, host stalls and DataLoader {pct(c.data)})"
            + (f"; {pct(c.unattributed)} cannot be told (the trace has no launch calls)" if c.unattributed > 0.005 else ""),
            f"{a.launch.launches_per_ms:.1f} launches per ms; median kernel {a.launch.median_kernel_us:.1f} µs"]


@dataclass
class StragglerEvidence:
    """What the cross-rank comparison found for one late rank (seconds)."""

    rank: int
    lag_s: float
    wait_s: float
    collectives: int
    step_s: float
    counted: str = "collectives"
    """What the median runs over: "collectives", or "steps' first collectives"."""


def straggler_diagnosis(per_rank: list[tuple[RankAnalysis, Diagnosis]], late: list[StragglerEvidence]
                        ) -> Diagnosis:
    """The job verdict when ``late`` ranks arrive late at collectives and the others wait for them."""
    worst = max(late, key=lambda s: s.lag_s)
    others = [(a, d) for a, d in per_rank if a.rank not in {s.rank for s in late}]
    names = ", ".join(str(s.rank) for s in late)
    ev = [f"rank {s.rank} arrives late at collectives: they start {ms(s.lag_s)} after the other ranks' (median "
          f"over {s.collectives} {s.counted}; {pct(s.lag_s / s.step_s) if s.step_s else 'n/a'} of a "
          f"{ms(s.step_s)} step)" for s in late]
    other_comm = [a.idle_causes.communication for a, _ in others]
    if other_comm:
        span = (pct(min(other_comm)) if max(other_comm) - min(other_comm) < 0.01 else
                f"{pct(min(other_comm))}-{pct(max(other_comm))}")
        wait = f" ({pct(worst.wait_s / worst.step_s)} of the step)" if worst.step_s else ""
        ev.append(f"the other ranks wait for it inside the collective: theirs last {ms(worst.wait_s)} longer "
                  f"than rank {worst.rank}'s{wait}; that wait is most of their exposed communication "
                  f"({span} of the step)")
    own, fix = _late_rank_lane(next((a, d) for a, d in per_rank if a.rank == worst.rank), others)
    ev.append(own)
    loss = worst.lag_s / worst.step_s if worst.step_s else 0.0
    secondary = sorted({d.signature for _, d in per_rank} - {"straggler"})
    return Diagnosis("straggler", round(min(1.0, worst.wait_s / max(worst.lag_s, 1e-12)), 2), ev,
                     f"{FIXES['straggler']} Rank {names}: {fix}", secondary, min(loss, 1.0),
                     {"straggler": min(loss, 1.0)}, [s.rank for s in late])


def late_rank_diagnoses(per_rank: list[tuple[RankAnalysis, Diagnosis]], late: list[StragglerEvidence]
                        ) -> dict[int, Diagnosis]:
    """The late ranks' own verdicts in a straggler job: ``straggler``, with what their lanes show as
    the cause of their lateness (a host stall without launches, a DataLoader, slower kernels) in
    place of a verdict of their own (``data_starved`` with advice it may have no tell for). The
    rank's own signature is kept first in ``secondary``; its scores are kept."""
    out = {}
    others = [(a, d) for a, d in per_rank if a.rank not in {s.rank for s in late}]
    for s in late:
        a, d = next((a, d) for a, d in per_rank if a.rank == s.rank)
        cause, fix = _late_rank_lane((a, d), others)
        share = f" ({pct(s.lag_s / s.step_s)} of the step)" if s.step_s else ""
        ev = [f"rank {s.rank} is the straggler: its collectives start {ms(s.lag_s)} after the other ranks'{share}, "
              f"and they wait for it inside the collective", "cause of its lateness: " + cause, *d.evidence]
        secondary = [d.signature, *[x for x in d.secondary if x != d.signature]]
        out[s.rank] = Diagnosis("straggler", d.confidence, ev, fix, secondary, d.loss_fraction, dict(d.scores),
                                [s.rank])
    return out


def _late_rank_lane(late: tuple[RankAnalysis, Diagnosis], others: list[tuple[RankAnalysis, Diagnosis]]
                    ) -> tuple[str, str]:
    """What the late rank's own lane shows, and the fix that follows."""
    a, d = late
    c = a.idle_causes
    if c.host >= THRESHOLDS["loss_min"]:
        if c.launch > c.data:
            return (f"rank {a.rank}'s own lane is host-bound (launch_bound): {launch_bound.evidence(a).evidence[0]}",
                    FIXES["launch_bound"])
        if data_tells(c) >= THRESHOLDS["data_tells_min"] * c.data:
            return (f"rank {a.rank}'s own lane is host-bound (data_starved): {data_starved.evidence(a).evidence[0]}",
                    FIXES["data_starved"])
        ops = ", ".join(f"{n[:50]} {ms(sec)}" for n, sec in c.cpu_ops_in_stall[:2])
        return (f"rank {a.rank}'s own lane is host-bound: its host stalls {pct(c.data)} of the step without "
                f"launching (longest {ms(c.stall_longest_s)}; code the profiler does not see "
                f"{pct(c.stall_uninstrumented)}, CPU ops {pct(c.stall_cpu_ops)}{': ' + ops if ops else ''})",
                "find what its host does before the step's work: the profiler shows no op there (input on "
                "that node, host-side work, a sleep or lock); profile that rank with with_stack=True or py-spy.")
    compute = [o.compute_busy_fraction * (o.step_time_median_s or 0.0) for o, _ in others]
    mine = a.compute_busy_fraction * (a.step_time_median_s or 0.0)
    if compute and mine > 1.1 * float(np.median(compute)) > 0:
        return (f"rank {a.rank}'s own lane runs slower kernels: {ms(mine)} of compute per step against "
                f"{ms(float(np.median(compute)))} on the other ranks",
                "check its GPU (clocks, throttling, a different device) and its share of the work "
                "(uneven shards or sequence lengths).")
    return (f"rank {a.rank}'s own lane: {d.signature}, GPU busy {pct(a.gpu_busy_fraction)}; the delay "
            "comes before its collectives (host work the profiler does not show, or uneven work)",
            "find what delays it before the collective (input, host work, uneven batches).")


def diagnose_job(per_rank: list[tuple[RankAnalysis, Diagnosis]],
                 late: list[StragglerEvidence] | None = None) -> Diagnosis:
    """One diagnosis for a job: ``straggler`` when late ranks explain the others' wait, else the
    signature with the largest total loss over ranks."""
    if not per_rank:
        return _inconclusive(["no ranks"])
    if late:
        return straggler_diagnosis(per_rank, late)
    if len(per_rank) == 1:
        a, d = per_rank[0]
        return _rank_verdict_as_job(d, a.rank)
    # What the job loses to each cause: every rank's loss to it, named or not (a cause that is
    # second on half the ranks can outweigh one that is first on a few).
    totals: dict[str, float] = {}
    for _, d in per_rank:
        for sig, loss in d.scores.items():
            if loss >= THRESHOLDS["loss_min"] / 2:
                totals[sig] = totals.get(sig, 0.0) + loss
    if not totals:
        for _, d in per_rank:
            totals[d.signature] = totals.get(d.signature, 0.0) + max(d.loss_fraction, 1e-9)
    signature = max(totals, key=totals.get)
    ranks = [a.rank for a, d in per_rank if d.signature == signature]
    if not ranks:  # the job's cause is second on every rank: report the rank that loses most to it
        a_max, _ = max(per_rank, key=lambda ad: ad[1].scores.get(signature, 0.0))
        return _job_from_rank(per_rank, a_max, signature)
    worst_a, worst = max(((a, d) for a, d in per_rank if d.signature == signature),
                         key=lambda ad: ad[1].loss_fraction)
    evidence = [f"{len(ranks)} of {len(per_rank)} ranks show {signature} (worst: rank {worst_a.rank})",
                *worst.evidence]
    secondary = sorted({s for _, d in per_rank for s in [d.signature, *d.secondary]} - {signature})
    job = Diagnosis(signature, worst.confidence, evidence, worst.fix, secondary,
                    worst.loss_fraction, dict(worst.scores), ranks)
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    n = len(per_rank)
    return close_call(job, (signature, totals[signature] / n),
                      (ranked[1][0], ranked[1][1] / n) if len(ranked) > 1 else None, f" (mean over {n} ranks)")


def _rank_verdict_as_job(d: Diagnosis, rank: int) -> Diagnosis:
    """Rank ``rank``'s verdict ``d`` as the job's, all of it (a close call too: its evidence says so)."""
    return replace(d, evidence=list(d.evidence), secondary=list(d.secondary), scores=dict(d.scores),
                   ranks=[rank], close_call=list(d.close_call))


def _job_from_rank(per_rank: list[tuple[RankAnalysis, Diagnosis]], a: RankAnalysis, signature: str) -> Diagnosis:
    """The job verdict ``signature`` with the evidence of rank ``a``'s finding for it."""
    f = next((f for f in findings(a) if f.signature == signature), None)
    if f is None:  # the cause came from a rank-level rule (host share, untold stall): use that rank's own
        return _rank_verdict_as_job(next(d for b, d in per_rank if b is a), a.rank)
    secondary = sorted({d.signature for _, d in per_rank} - {signature})
    ev = [f"{signature} costs the ranks the most in total, though each names another cause first "
          f"(largest: rank {a.rank}, {pct(f.loss_fraction)} of the step)", *f.evidence]
    return Diagnosis(signature, round(f.confidence / 2, 2), ev, f.fix or FIXES[signature], secondary,
                     f.loss_fraction, {signature: f.loss_fraction}, [a.rank])
