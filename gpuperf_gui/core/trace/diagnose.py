"""Diagnosis: which signature the largest gap has, its evidence, and the fix to try first.

Every threshold lives in :data:`THRESHOLDS`, with the reason for its value. Each signature gets a
*loss*: the fraction of the analysis window it explains. The primary signature is the one with the
largest loss among those whose conditions hold. The losses come from one attribution of the compute
streams' idle time (:class:`.analysis.IdleCauses`), so they never overlap and the evidence of the
verdict is the figure that chose it. With no signature above ``loss_min``, a GPU idle more than
``healthy_idle_max`` of the step is never ``healthy``: when the host explains most of the idle, the
larger host cause (launch overhead or a starved GPU) is named; otherwise the rank is
``inconclusive``, as it is when the trace has no GPU activity at all or too little to show a pattern.

A job of several ranks is ``straggler`` when one or more ranks start their collectives late and the
others' collectives last longer by about that lag (:func:`straggler_diagnosis`): the late rank is
the cause, the others' exposed communication the symptom. Pipelines (send/recv between stages,
offset by design) are never stragglers. ``inconclusive`` claims nothing: its
confidence is 0 and its evidence says what is missing.

A truncated trace is diagnosed from the part that was kept, with an evidence line saying so and
half the confidence.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from .analysis import LAUNCH_SPACING_MAX_US, IdleCauses, RankAnalysis
from .glossary import COMM_KERNELS_EXPOSED, COMM_WAIT, format_fraction

SIGNATURES = ("healthy", "launch_bound", "comm_bound", "data_starved", "memory_bound", "pipeline_bubble",
              "straggler", "inconclusive")
"""Every diagnosis outcome. ``straggler`` is a job-level verdict (several ranks); ``inconclusive``: no
GPU activity, too little evidence, or a GPU idle with no dominant cause."""

THRESHOLDS: dict[str, float] = {
    # comm_bound: compute idle while communication runs (GPU collectives, or CPU-side collectives
    # that block the host: gloo, c10d waits) above 10 % of the step: the TB profiler plugin's 10 %
    # rule (metrics.md §2). DLRM ranks: 29-63 %; the H200 gloo host all-reduce: 78 %; healthy
    # trace_diff/test: 10 %.
    "comm_exposed_min": 0.10,
    # ... and larger than compute-busy time x this (communication on the critical path).
    "comm_vs_compute_min": 0.25,
    # data_starved needs its loss (DataLoader + host stalls) above loss_min; the DataLoader share is
    # reported against TB's 5 % rule (metrics.md §2). ResNet num_workers_0: DataLoader 39 %;
    # num_workers_4: 1 %.
    "dataloader_min": 0.05,
    "starved_min": 0.10,
    # ... and at least half of that loss must carry a data tell: the DataLoader, a blocking
    # sync/copy call, or a stall that ends with a host-to-device copy (the batch made on the CPU).
    # A stall with no tell (a sampled trace, host work the profiler does not see) names data_starved
    # only through the host-share rule below, at half the confidence.
    "data_tells_min": 0.5,
    # ... unless that stall is at least twice the largest cause that has its evidence (a host that
    # sleeps or works 78 % of the step, against 16 % of collectives): then it is named, at half
    # the confidence. The sampled production ranks (host stall 28-29 % with events dropped, against
    # 25-28 % of exposed NCCL) stay comm_bound.
    "untold_stall_dominance": 2.0,
    # launch_bound vs a host stall: inside a host-wait gap, a stretch of more than 333 µs without a
    # launch call (fewer than 3 per ms) is a host stall, the rest launch overhead. Eager PyTorch
    # spends 10-50 µs of host time per op, so a thread that launches less often is busy with
    # something else. Launch-bound traces launch 5-27 per ms; the H200 data stalls are 15-65 ms long.
    "launch_density_min_per_ms": 1000.0 / LAUNCH_SPACING_MAX_US,
    # memory_bound: a packed GPU (busy >= 60 %) whose kernel time is >= 50 % elementwise/
    # normalisation/reduction, with GEMM+attention under 40 % (H100 Qwen decode: 63 % elementwise,
    # 36 % GEMM+attention; memory_bound_visible: 100 % / 0 %; healthy GPT: 36 % / 61 %).
    "memory_busy_min": 0.60,
    "memory_elementwise_min": 0.50,
    "memory_gemm_max": 0.40,
    # ... whose fix is the optimizer's when optimizer kernels (multi_tensor_apply, foreach AdamW)
    # take a quarter of kernel time or more: in a training step that computes anything, AdamW is a
    # few % (it reads and writes ~16 bytes per parameter once per step, against 6 FLOPs per parameter
    # per token of forward+backward).
    "optimizer_share_min": 0.25,
    # pipeline_bubble: compute idle in gaps touching send/recv >= 10 % of the step. A GPipe/1F1B
    # schedule of p stages and m micro-batches idles (p-1)/(m+p-1): 1/3 for p=2, m=2; 1/9 for p=2, m=8.
    "bubble_idle_min": 0.10,
    # A signature is named when its loss exceeds this (the smallest loss worth a fix first).
    "loss_min": 0.10,
    # healthy never when the GPU idles more than this share of the step (metrics.md §8 anchors a
    # healthy step at >= 90 % busy; 15 % leaves room for the profiler's own overhead, +4 % on the
    # H200 runs). ResNet num_workers_4 idles 23 % (launch-bound); the H200 fed DataLoader and profile
    # runs idle 5-6 %, healthy GPT and vLLM decode 1-2 %.
    "healthy_idle_max": 0.15,
    # With no cause above loss_min, host-bound when DataLoader + launch + host stalls explain at
    # least half of the compute-idle time (else the idle has no dominant cause: inconclusive).
    "host_share_min": 0.5,
    # inconclusive for too little evidence: fewer than 20 device events in the window *and* under
    # 1 ms of device work. The HTA test traces with 1-14 kernels (call_stack, triton_example,
    # event_sync, large_integer, the MI250 mini-toy: 2-150 µs of GPU work) show no pattern;
    # torch_compile_triton's 12 fused kernels fill 12.5 ms and are a fair "healthy".
    "evidence_min_kernels": 20,
    "evidence_min_busy_s": 1e-3,
    # straggler: a rank's collectives start later than the median of the other ranks' by more than
    # 10 % of the step (the same 10 % rule as comm_bound: a lag that size is exposed communication
    # on every other rank) and at least 100 µs (launch jitter is tens of µs) ...
    "straggler_lag_min_step": 0.10,
    "straggler_lag_min_s": 100e-6,
    # ... and the others' collectives last longer than the late rank's by at least half the lag:
    # they spend the lag waiting in the collective, so the lag explains their exposed communication.
    "straggler_wait_explained_min": 0.5,
}

FIXES = {
    "healthy": "Nothing dominates: measure MFU against the roofline and look at the biggest kernels.",
    "launch_bound": "Cut launch overhead: capture the step in CUDA graphs or torch.compile "
                    "(mode=\"reduce-overhead\"); fuse small ops; use a bigger batch.",
    "comm_bound": "Overlap communication with compute: prefetch/overlap collectives (DDP bucket size, "
                  "FSDP prefetch), bigger buckets, fewer/larger messages, gradient accumulation.",
    "data_starved": "Feed the GPU: prepare batches off the training loop (DataLoader with num_workers > 0, "
                    "pin_memory=True, prefetch_factor), non_blocking copies, and no host syncs or "
                    "CPU preprocessing between steps.",
    "memory_bound": "Fuse the elementwise/normalisation chain (torch.compile, fused kernels), use "
                    "lower precision activations, avoid materialising intermediates.",
    "pipeline_bubble": "Shrink the pipeline bubble: more micro-batches per step, an interleaved 1F1B "
                       "or zero-bubble schedule.",
    "straggler": "Fix the late rank, not the communication: the others' exposed collectives are waiting "
                 "for it.",
    "inconclusive": "Get a trace that shows the GPU: profile with ProfilerActivity.CUDA over a few "
                    "steady-state steps (schedule(wait=1, warmup=1, active=3)); if the GPU is idle "
                    "waiting on the host, read the op table's self CPU column for where the host time goes.",
}
OPTIMIZER_FIX = ("The optimizer dominates: use a fused optimizer (torch.optim.AdamW(..., fused=True)) or "
                 "foreach=True, fewer optimizer passes (gradient accumulation: one step per several "
                 "micro-batches), and compile the step with the optimizer inside.")

GRAPHED_LAUNCH_FIX = ("The step already replays CUDA graphs, so the host's own time between replays sets the "
                      "pace: put more work in each replay (a bigger batch, the optimizer step inside the "
                      "compiled region), fewer graph calls per step, and no host syncs (.item()) between them.")
CPU_COMM_FIX = ("The collectives run on the host (gloo / CPU tensors) and block it: keep gradients on the GPU "
                "and all-reduce them with NCCL (DDP), or issue them with async_op=True and overlap; fewer, "
                "larger messages.")


def short_kernel_name(name: str, width: int = 80) -> str:
    """A kernel name a person can read: the function without namespaces and templates, plus the
    functor it runs (``multi_tensor_apply_kernel (FusedAdamMathFunctor)``)."""
    base = name.removeprefix("void ").split("<")[0].split("::")[-1].split("(")[0] or name
    functors = re.findall(r"(\w+Functor)\b", name)
    if functors and functors[-1] not in base:
        base = f"{base} ({functors[-1]})"
    return base[:width]


@dataclass
class Finding:
    signature: str
    loss_fraction: float
    confidence: float
    evidence: list[str]
    fix: str = ""


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

    def to_json(self) -> dict:
        return asdict(self)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def findings(a: RankAnalysis) -> list[Finding]:
    """Every signature whose conditions hold, with its loss and evidence."""
    t = THRESHOLDS
    out: list[Finding] = []
    c = a.idle_causes
    comm = _comm_finding(a)
    if comm.loss_fraction >= t["comm_exposed_min"] and \
            comm.loss_fraction >= t["comm_vs_compute_min"] * a.compute_busy_fraction:
        out.append(comm)
    if c.data >= t["starved_min"] and data_tells(c) >= t["data_tells_min"] * c.data:
        out.append(_data_finding(a))
    if c.launch >= t["loss_min"]:
        out.append(_launch_finding(a))
    share = a.kernel_time_share
    gemm = share.get("gemm", 0.0) + share.get("attention", 0.0)
    if a.gpu_busy_fraction >= t["memory_busy_min"] and share.get("elementwise", 0.0) >= \
            t["memory_elementwise_min"] and gemm <= t["memory_gemm_max"]:
        out.append(_memory_finding(a, gemm))
    if (a.p2p_kernels or a.p2p_cpu_ops) and c.pipeline >= t["bubble_idle_min"]:
        out.append(_bubble_finding(a))
    return out


def data_tells(c: IdleCauses) -> float:
    """The part of a starved GPU's idle that carries a data tell (DataLoader, blocking call, a stall
    ending with a host-to-device copy)."""
    return c.dataloader + min(c.host_stall, c.stall_blocking + c.stall_before_htod)


def _comm_finding(a: RankAnalysis) -> Finding:
    c = a.idle_causes
    loss = c.communication
    gpu_part = loss - c.communication_cpu
    evidence = [f"{COMM_WAIT.name} (compute idle while communication runs): {format_fraction(loss)} of the step"]
    if gpu_part > 0.005 or a.comm_fraction > 0:
        evidence.append(f"GPU collectives: {_pct(a.comm_fraction)} of the step, "
                        f"{_pct(a.comm_overlap_fraction or 0.0)} of it overlapped with compute, "
                        f"{COMM_KERNELS_EXPOSED.name} {format_fraction(a.comm_exposed_fraction)}")
    if c.communication_cpu > 0.005:
        evidence.append(f"CPU-side collectives (gloo, c10d waits) block the host for "
                        f"{_pct(c.communication_cpu)} of the step while no compute kernel runs")
    evidence.append(f"compute busy {_pct(a.compute_busy_fraction)} of the step")
    fix = CPU_COMM_FIX if c.communication_cpu > 0.5 * loss else ""
    return Finding("comm_bound", loss, min(1.0, loss / (2 * THRESHOLDS["comm_exposed_min"])), evidence, fix)


def _data_finding(a: RankAnalysis) -> Finding:
    c = a.idle_causes
    ev = [f"GPU compute idle {_pct(c.data)} of the step while the host prepares work instead of "
          f"launching it (launch overhead only {_pct(c.launch)})"]
    if c.dataloader > 0.005:
        ev.append(f"the host is inside the DataLoader (__next__) for {_pct(c.dataloader)} of the step "
                  f"while the GPU idles (DataLoader spans {_pct(a.dataloader_fraction)} of the step)")
    if c.host_stall >= 0.1 * c.data:
        ev.append(f"{c.stall_gaps} host stall{'s' if c.stall_gaps != 1 else ''} (longest "
                  f"{_ms(c.stall_longest_s)}) cover {_pct(c.host_stall)} of the step: blocking "
                  f"sync/copy calls {_pct(c.stall_blocking)}, CPU ops that launch nothing "
                  f"{_pct(c.stall_cpu_ops)}, code the profiler does not see {_pct(c.stall_uninstrumented)}")
    if c.host_stall > 0 and c.stall_before_htod >= 0.5 * c.host_stall:
        ev.append("the stalls end with a host-to-device copy: the next batch is made on the CPU inside "
                  "the training loop")
    if c.data > 0 and data_tells(c) < THRESHOLDS["data_tells_min"] * c.data:
        ev.append("no data tell (DataLoader, blocking copy, host-to-device copy after the stall): the host "
                  "is busy with other work that launches nothing")
    if c.cpu_ops_in_stall:
        ev.append("CPU ops inside the stalls: " + ", ".join(f"{n[:60]} {_ms(sec)}" for n, sec in c.cpu_ops_in_stall))
    conf = min(1.0, c.data / (2 * THRESHOLDS["starved_min"]))
    return Finding("data_starved", c.data, conf, ev)


def _launch_finding(a: RankAnalysis) -> Finding:
    c, launch = a.idle_causes, a.launch
    ev = [f"GPU compute idle {_pct(c.launch)} of the step in {c.launch_gaps} short gaps (median "
          f"{c.launch_gap_median_us:.0f} µs) that the CPU fills with launch calls "
          f"({launch.launches_per_ms:.1f} launches per ms)",
          f"median kernel {launch.median_kernel_us:.1f} µs; {_pct(launch.kernels_shorter_than_launch_fraction)} "
          f"of kernels are shorter than their launch call (median call {launch.median_launch_call_us:.1f} µs, "
          f"launch-to-kernel latency {launch.median_launch_delay_us:.1f} µs)"]
    if c.data > 0.005:
        ev.append(f"host stalls without launches: {_pct(c.data)} of the step"
                  + (" (no data tell: host overhead between launches)" if data_tells(c) < 0.5 * c.data else ""))
    if c.data > c.launch:
        ev.insert(0, f"GPU compute idle {_pct(c.host)} of the step waiting on the host: launching work "
                     f"{_pct(c.launch)}, host work between launches that launches nothing {_pct(c.data)}")
    fix = ""
    if launch.graph_launches:
        ev.append(f"the step already replays CUDA graphs ({launch.graph_launches} graph launches in the window)")
        fix = GRAPHED_LAUNCH_FIX
    conf = min(1.0, c.launch / (2 * THRESHOLDS["loss_min"]))
    return Finding("launch_bound", c.launch, conf, ev, fix)


def _memory_finding(a: RankAnalysis, gemm: float) -> Finding:
    share = a.kernel_time_share
    ew = share.get("elementwise", 0.0)
    ev = [f"GPU busy {_pct(a.gpu_busy_fraction)} but {_pct(ew)} of kernel time is elementwise/"
          "normalisation/reduction", f"GEMM + attention only {_pct(gemm)} of kernel time"]
    fix = ""
    if a.optimizer_kernel_share >= THRESHOLDS["optimizer_share_min"]:
        top = ", ".join(f"{short_kernel_name(n)} {_pct(share)}" for n, share in a.top_kernels[:3])
        ev.insert(0, f"the optimizer's kernels take {_pct(a.optimizer_kernel_share)} of kernel time "
                     f"(top kernels: {top})")
        fix = OPTIMIZER_FIX
    return Finding("memory_bound", a.gpu_busy_fraction * ew, min(1.0, ew), ev, fix)


def _bubble_finding(a: RankAnalysis) -> Finding:
    c = a.idle_causes
    ev = [f"compute streams idle {_pct(1.0 - a.compute_busy_fraction)} of the step; idle next to "
          f"point-to-point send/recv (the bubble): {_pct(c.pipeline)} of the step"]
    if a.p2p_kernels:
        ev.append(f"{a.p2p_kernels} p2p send/recv kernels; compute busy {_pct(a.compute_busy_fraction)}"
                  f" (GPU busy {_pct(a.gpu_busy_fraction)} counts the send/recv kernels)")
    if c.p2p_cpu_blocking > 0.005:
        ev.append(f"the CPU blocks in send/recv for {_pct(c.p2p_cpu_blocking)} of the step")
    ev.append("a schedule of p stages and m micro-batches idles (p-1)/(m+p-1) of the step")
    return Finding("pipeline_bubble", c.pipeline, 0.6, ev)


def diagnose_rank(a: RankAnalysis) -> Diagnosis:
    """Pick the primary signature for one rank."""
    d = _diagnose_rank(a)
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
                              f"GPU busy {_pct(a.gpu_busy_fraction)} of the window"])
    found = sorted(findings(a), key=lambda f: -f.loss_fraction)
    scores: dict[str, float] = {}
    for f in found:
        scores[f.signature] = max(scores.get(f.signature, 0.0), f.loss_fraction)
    real = [f for f in found if f.loss_fraction >= t["loss_min"]]
    idle = 1.0 - a.gpu_busy_fraction
    c = a.idle_causes
    untold = c.data >= t["starved_min"] and not any(f.signature == "data_starved" for f in found)
    if untold and c.data > c.launch and (not real or c.data >= t["untold_stall_dominance"] * real[0].loss_fraction):
        f = _data_finding(a)  # a host stall with no data tell that dwarfs every other cause
        f.confidence = round(f.confidence / 2, 2)
        scores["data_starved"] = f.loss_fraction
        real = [f, *real]
    if not real:
        c = a.idle_causes
        if idle <= t["healthy_idle_max"]:
            ev = [f"GPU busy {_pct(a.gpu_busy_fraction)} of the step; compute idle while communication "
                  f"runs {_pct(c.communication)}; host-bound idle {_pct(c.host)}"]
            return Diagnosis("healthy", round(min(1.0, a.gpu_busy_fraction), 2), ev, FIXES["healthy"],
                             [f.signature for f in found], 0.0, scores)
        if c.compute_idle > 0 and c.host >= t["host_share_min"] * c.compute_idle:
            f = _launch_finding(a) if c.launch >= c.data else _data_finding(a)
            f.evidence.insert(0, f"GPU idle {_pct(idle)} of the step; the host explains "
                                 f"{_pct(c.host / c.compute_idle)} of the compute-idle time")
            f.confidence = round(f.confidence / 2, 2)
            real = [f]
            scores.setdefault(f.signature, f.loss_fraction)
        else:
            return _inconclusive(_idle_evidence(a), [f.signature for f in found], scores)
    primary = real[0]
    secondary = []
    for f in found:
        if f.signature != primary.signature and f.signature not in secondary and f.loss_fraction >= t["loss_min"] / 2:
            secondary.append(f.signature)
    return Diagnosis(primary.signature, round(primary.confidence, 2), list(primary.evidence),
                     primary.fix or FIXES[primary.signature], secondary, primary.loss_fraction, scores)


def _idle_evidence(a: RankAnalysis) -> list[str]:
    """Evidence for a GPU idle with no signature that explains it."""
    c = a.idle_causes
    idle = 1.0 - a.gpu_busy_fraction
    return [f"GPU idle {_pct(idle)} of the window with no dominant cause: of the step, compute idles "
            f"while communication runs {_pct(c.communication)}, next to send/recv {_pct(c.pipeline)}, "
            f"waiting on other streams/events {_pct(c.gpu_wait)}, on the host {_pct(c.host)} "
            f"(launch overhead {_pct(c.launch)}, host stalls and DataLoader {_pct(c.data)})"
            + (f"; {_pct(c.unattributed)} cannot be told (the trace has no launch calls)" if c.unattributed > 0.005 else ""),
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
    by_rank = {a.rank: (a, d) for a, d in per_rank}
    others = [(a, d) for a, d in per_rank if a.rank not in {s.rank for s in late}]
    names = ", ".join(str(s.rank) for s in late)
    ev = []
    for s in late:
        ev.append(f"rank {s.rank} arrives late at collectives: they start {_ms(s.lag_s)} after the other "
                  f"ranks' (median over {s.collectives} {s.counted}; {_pct(s.lag_s / s.step_s) if s.step_s else 'n/a'}"
                  f" of a {_ms(s.step_s)} step)")
    other_comm = [a.idle_causes.communication for a, _ in others]
    if other_comm:
        span = (_pct(min(other_comm)) if max(other_comm) - min(other_comm) < 0.01 else
                f"{_pct(min(other_comm))}-{_pct(max(other_comm))}")
        wait = f" ({_pct(worst.wait_s / worst.step_s)} of the step)" if worst.step_s else ""
        ev.append(f"the other ranks wait for it inside the collective: theirs last {_ms(worst.wait_s)} longer "
                  f"than rank {worst.rank}'s{wait}; that wait is most of their exposed communication "
                  f"({span} of the step)")
    own, fix = _late_rank_lane(by_rank[worst.rank], others)
    ev.append(own)
    loss = worst.lag_s / worst.step_s if worst.step_s else 0.0
    secondary = sorted({d.signature for _, d in per_rank} - {"straggler"})
    return Diagnosis("straggler", round(min(1.0, worst.wait_s / max(worst.lag_s, 1e-12)), 2), ev,
                     f"{FIXES['straggler']} Rank {names}: {fix}", secondary, min(loss, 1.0),
                     {"straggler": min(loss, 1.0)}, [s.rank for s in late])


def _late_rank_lane(late: tuple[RankAnalysis, Diagnosis], others: list[tuple[RankAnalysis, Diagnosis]]
                    ) -> tuple[str, str]:
    """What the late rank's own lane shows, and the fix that follows."""
    a, d = late
    c = a.idle_causes
    if c.host >= THRESHOLDS["loss_min"]:
        if c.launch > c.data:
            return (f"rank {a.rank}'s own lane is host-bound (launch_bound): {_launch_finding(a).evidence[0]}",
                    FIXES["launch_bound"])
        if data_tells(c) >= THRESHOLDS["data_tells_min"] * c.data:
            return (f"rank {a.rank}'s own lane is host-bound (data_starved): {_data_finding(a).evidence[0]}",
                    FIXES["data_starved"])
        ops = ", ".join(f"{n[:50]} {_ms(sec)}" for n, sec in c.cpu_ops_in_stall[:2])
        return (f"rank {a.rank}'s own lane is host-bound: its host stalls {_pct(c.data)} of the step without "
                f"launching (longest {_ms(c.stall_longest_s)}; code the profiler does not see "
                f"{_pct(c.stall_uninstrumented)}, CPU ops {_pct(c.stall_cpu_ops)}{': ' + ops if ops else ''})",
                "find what its host does before the step's work: the profiler shows no op there (input on "
                "that node, host-side work, a sleep or lock); profile that rank with with_stack=True or py-spy.")
    compute = [o.compute_busy_fraction * (o.step_time_median_s or 0.0) for o, _ in others]
    mine = a.compute_busy_fraction * (a.step_time_median_s or 0.0)
    if compute and mine > 1.1 * float(np.median(compute)) > 0:
        return (f"rank {a.rank}'s own lane runs slower kernels: {_ms(mine)} of compute per step against "
                f"{_ms(float(np.median(compute)))} on the other ranks",
                "check its GPU (clocks, throttling, a different device) and its share of the work "
                "(uneven shards or sequence lengths).")
    return (f"rank {a.rank}'s own lane: {d.signature}, GPU busy {_pct(a.gpu_busy_fraction)}; the delay "
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
        return Diagnosis(d.signature, d.confidence, list(d.evidence), d.fix, list(d.secondary),
                         d.loss_fraction, dict(d.scores), [a.rank])
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
    evidence = list(worst.evidence)
    if len(per_rank) > 1:
        evidence.insert(0, f"{len(ranks)} of {len(per_rank)} ranks show {signature} "
                           f"(worst: rank {worst_a.rank})")
    secondary = sorted({s for _, d in per_rank for s in [d.signature, *d.secondary]} - {signature})
    return Diagnosis(signature, worst.confidence, evidence, worst.fix, secondary,
                     worst.loss_fraction, dict(worst.scores), ranks)


def _job_from_rank(per_rank: list[tuple[RankAnalysis, Diagnosis]], a: RankAnalysis, signature: str) -> Diagnosis:
    """The job verdict ``signature`` with the evidence of rank ``a``'s finding for it."""
    f = next((f for f in findings(a) if f.signature == signature), None)
    if f is None:  # the cause came from a rank-level rule (host share, untold stall): use that rank's own
        d = next(d for b, d in per_rank if b is a)
        return Diagnosis(d.signature, d.confidence, list(d.evidence), d.fix, list(d.secondary),
                         d.loss_fraction, dict(d.scores), [a.rank])
    secondary = sorted({d.signature for _, d in per_rank} - {signature})
    ev = [f"{signature} costs the ranks the most in total, though each names another cause first "
          f"(largest: rank {a.rank}, {_pct(f.loss_fraction)} of the step)", *f.evidence]
    return Diagnosis(signature, round(f.confidence / 2, 2), ev, f.fix or FIXES[signature], secondary,
                     f.loss_fraction, {signature: f.loss_fraction}, [a.rank])
