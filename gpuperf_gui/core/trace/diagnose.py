"""Diagnosis: which signature the largest gap has, its evidence, and the fix to try first.

Every threshold lives in :data:`THRESHOLDS`, with the reason for its value. Each signature gets a
*loss*: the fraction of the analysis window it explains. The primary signature is the one with the
largest loss among those whose conditions hold. With none, the rank is ``healthy`` only when the GPU
is busy most of the window; otherwise it is ``inconclusive``, as it is when the trace has no GPU
activity at all or too little of it to show a pattern. ``inconclusive`` claims nothing: its
confidence is 0 and its evidence says what is missing.

A truncated trace is diagnosed from the part that was kept, with an evidence line saying so and
half the confidence.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .analysis import RankAnalysis

SIGNATURES = ("healthy", "launch_bound", "comm_bound", "data_starved", "memory_bound", "pipeline_bubble",
              "inconclusive")
"""Every diagnosis outcome. ``inconclusive``: no GPU activity, too little evidence, or a GPU idle most
of the window with no dominant cause."""

THRESHOLDS: dict[str, float] = {
    # comm_bound: exposed communication above 10 % of the window: the TB profiler plugin's 10 % rule
    # (metrics.md §2). DLRM ranks: 13-56 %; healthy trace_diff/test: 9.6 %, control 20 % (see note).
    "comm_exposed_min": 0.10,
    # ... and exposed communication larger than compute-busy time x this (comm on the critical path).
    "comm_vs_compute_min": 0.25,
    # data_starved: GPU idle while the host is in the DataLoader or outside any op, > 10 % of the
    # window, and the DataLoader share above TB's 5 % rule. ResNet num_workers_0: 40 % DataLoader;
    # num_workers_4: ~1 %.
    "starved_min": 0.10,
    "dataloader_min": 0.05,
    # launch_bound: GPU busy below 50 % (TB's "GPU utilization < 50 %" rule) with short kernels
    # (median at most 12 µs: the launch-bound traces measure 1.1-6.3 µs, the comm-bound sampled
    # production ranks 19-21 µs; "kernels under ~20 µs are dominated by launch cost", environment.md) and
    # most idle time not explained by waits on other streams.
    "launch_busy_max": 0.50,
    "launch_median_kernel_max_us": 12.0,
    # ... and launches issued densely: at least 3 per ms (one every <= 333 µs; eager PyTorch spends
    # 10-50 µs of host time per op, so a thread that launches less often is busy with something
    # else). Launch-bound traces: 5.2 (hta negative_queue) to 26.6 (h200 launch_bound_tiny) per ms;
    # sparse, host-bound ones: hta alexnet 0.008, event_sync 1.6, the MI250 mini-toy 1.7.
    "launch_density_min_per_ms": 3.0,
    # memory_bound: a packed GPU (busy >= 60 %) whose kernel time is >= 50 % elementwise/
    # normalisation/reduction, with GEMM+attention under 40 % (H100 Qwen decode: 63 % elementwise,
    # 36 % GEMM+attention; memory_bound_visible: 100 % / 0 %; healthy GPT: 36 % / 61 %).
    "memory_busy_min": 0.60,
    "memory_elementwise_min": 0.50,
    "memory_gemm_max": 0.40,
    # pipeline_bubble: point-to-point kernels present, idle gaps touching them >= 10 % of the window,
    # and per-step idle time repeating (coefficient of variation <= 0.35).
    "bubble_idle_min": 0.10,
    "bubble_step_cv_max": 0.35,
    # healthy: the primary loss must exceed this to name a bottleneck at all.
    "loss_min": 0.10,
    # ... and healthy needs the GPU busy at least half the window (TB's "GPU utilization < 50 %"
    # rule again): a GPU idle most of the time without a named cause is inconclusive, never healthy.
    "healthy_busy_min": 0.50,
    # inconclusive for too little evidence: fewer than 20 device events in the window *and* under
    # 1 ms of device work. The HTA test traces with 1-14 kernels (call_stack, triton_example,
    # event_sync, large_integer, the MI250 mini-toy: 2-150 µs of GPU work) show no pattern;
    # torch_compile_triton's 12 fused kernels fill 12.5 ms and are a fair "healthy".
    "evidence_min_kernels": 20,
    "evidence_min_busy_s": 1e-3,
}

FIXES = {
    "healthy": "Nothing dominates: measure MFU against the roofline and look at the biggest kernels.",
    "launch_bound": "Cut launch overhead: capture the step in CUDA graphs or torch.compile "
                    "(mode=\"reduce-overhead\"); fuse small ops; use a bigger batch.",
    "comm_bound": "Overlap communication with compute: prefetch/overlap collectives (DDP bucket size, "
                  "FSDP prefetch), bigger buckets, fewer/larger messages, gradient accumulation.",
    "data_starved": "Feed the GPU: more DataLoader workers, pin_memory=True, prefetching and "
                    "non_blocking copies; move preprocessing off the training loop.",
    "memory_bound": "Fuse the elementwise/normalisation chain (torch.compile, fused kernels), use "
                    "lower precision activations, avoid materialising intermediates.",
    "pipeline_bubble": "Shrink the pipeline bubble: more micro-batches per step, an interleaved 1F1B "
                       "or zero-bubble schedule.",
    "inconclusive": "Get a trace that shows the GPU: profile with ProfilerActivity.CUDA over a few "
                    "steady-state steps (schedule(wait=1, warmup=1, active=3)); if the GPU is idle "
                    "waiting on the host, read the op table's self CPU column for where the host time goes.",
}


@dataclass
class Finding:
    signature: str
    loss_fraction: float
    confidence: float
    evidence: list[str]


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

    def to_json(self) -> dict:
        return asdict(self)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def findings(a: RankAnalysis) -> list[Finding]:
    """Every signature whose conditions hold, with its loss and evidence."""
    t = THRESHOLDS
    out: list[Finding] = []
    share = a.kernel_time_share
    gemm = share.get("gemm", 0.0) + share.get("attention", 0.0)
    idle = 1.0 - a.gpu_busy_fraction
    # Compute idle next to point-to-point transfers is the pipeline bubble, not collective time.
    comm_loss = max(a.comm_exposed_fraction, a.comm_critical_fraction) - a.p2p_adjacent_idle_fraction
    if comm_loss >= t["comm_exposed_min"] and comm_loss >= t["comm_vs_compute_min"] * a.compute_busy_fraction:
        evidence = [f"exposed communication {_pct(a.comm_exposed_fraction)} of the step "
                    f"(communication {_pct(a.comm_fraction)}, overlapped "
                    f"{_pct(a.comm_overlap_fraction or 0.0)})",
                    f"compute busy only {_pct(a.compute_busy_fraction)}"]
        if a.cpu_collective_exposed_fraction > 0.01:
            evidence.append(f"the CPU waits on collectives for {_pct(a.cpu_collective_exposed_fraction)} "
                            "of the step while no compute kernel runs")
        out.append(Finding("comm_bound", comm_loss, min(1.0, comm_loss / (2 * t["comm_exposed_min"])),
                           evidence))
    if a.host_starved_fraction >= t["starved_min"] and a.dataloader_fraction >= t["dataloader_min"]:
        out.append(Finding("data_starved", a.host_starved_fraction,
                           min(1.0, a.dataloader_fraction / (4 * t["dataloader_min"])),
                           [f"GPU idle while the host loads data or runs no op: "
                            f"{_pct(a.host_starved_fraction)} of the step",
                            f"DataLoader {_pct(a.dataloader_fraction)} of the step",
                            f"host wait {_pct(a.idle_breakdown.get('host_wait', 0.0))} of GPU idle time"]))
    launch = a.launch
    if a.has_device_work and a.gpu_busy_fraction < t["launch_busy_max"] and \
            launch.median_kernel_us <= t["launch_median_kernel_max_us"] and launch.kernels > 0 and \
            launch.launches_per_ms >= t["launch_density_min_per_ms"]:
        loss = idle - a.host_starved_fraction * (a.dataloader_fraction >= t["dataloader_min"])
        loss -= max(a.comm_exposed_fraction, a.comm_critical_fraction)
        out.append(Finding("launch_bound", max(loss, 0.0),
                           min(1.0, (t["launch_median_kernel_max_us"] / max(launch.median_kernel_us, 1.0)) / 4
                               + (1 - a.gpu_busy_fraction) / 2),
                           [f"GPU idle {_pct(idle)} of the step; median kernel "
                            f"{launch.median_kernel_us:.1f} µs",
                            f"{launch.launches_per_ms:.1f} launches per ms on the CPU; median launch call "
                            f"{launch.median_launch_call_us:.1f} µs",
                            f"{_pct(launch.kernels_shorter_than_launch_fraction)} of kernels are "
                            "shorter than their launch call"]))
    if a.gpu_busy_fraction >= t["memory_busy_min"] and share.get("elementwise", 0.0) >= \
            t["memory_elementwise_min"] and gemm <= t["memory_gemm_max"]:
        loss = a.gpu_busy_fraction * share.get("elementwise", 0.0)
        out.append(Finding("memory_bound", loss, min(1.0, share.get("elementwise", 0.0)),
                           [f"GPU busy {_pct(a.gpu_busy_fraction)} but "
                            f"{_pct(share.get('elementwise', 0.0))} of kernel time is elementwise/"
                            "normalisation/reduction",
                            f"GEMM + attention only {_pct(gemm)} of kernel time"]))
    if a.p2p_kernels and a.p2p_adjacent_idle_fraction >= t["bubble_idle_min"] and \
            (a.step_idle_cv is None or a.step_idle_cv <= t["bubble_step_cv_max"]):
        out.append(Finding("pipeline_bubble", a.p2p_adjacent_idle_fraction, 0.6,
                           [f"compute streams idle {_pct(1.0 - a.compute_busy_fraction)} of the step "
                            f"(GPU busy {_pct(a.gpu_busy_fraction)} counts the send/recv kernels as busy)",
                            f"of that, idle gaps next to point-to-point send/recv: "
                            f"{_pct(a.p2p_adjacent_idle_fraction)} of the step ({a.p2p_kernels} p2p kernels)",
                            "per-step idle time varies by "
                            + (f"{_pct(a.step_idle_cv)}" if a.step_idle_cv is not None else "n/a")]))
    return out


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
    if not real:
        if a.gpu_busy_fraction < t["healthy_busy_min"]:
            return _inconclusive(_idle_evidence(a), [f.signature for f in found], scores)
        ev = [f"GPU busy {_pct(a.gpu_busy_fraction)} of the step; exposed communication "
              f"{_pct(a.comm_exposed_fraction)}; DataLoader {_pct(a.dataloader_fraction)}"]
        return Diagnosis("healthy", round(min(1.0, a.gpu_busy_fraction), 2), ev, FIXES["healthy"],
                         [f.signature for f in found], 0.0, scores)
    primary = real[0]
    secondary = []
    for f in real[1:]:
        if f.signature != primary.signature and f.signature not in secondary:
            secondary.append(f.signature)
    return Diagnosis(primary.signature, round(primary.confidence, 2), list(primary.evidence),
                     FIXES[primary.signature], secondary, primary.loss_fraction, scores)


def _idle_evidence(a: RankAnalysis) -> list[str]:
    """Evidence for a GPU idle most of the window with no signature that explains it."""
    idle = 1.0 - a.gpu_busy_fraction
    host_wait = a.idle_breakdown.get("host_wait", 0.0)
    if host_wait >= 0.5:
        head = (f"GPU idle {_pct(idle)} of the window, waiting on the host ({_pct(host_wait)} host wait)"
                " — no dominant cause found")
    else:
        head = (f"GPU idle {_pct(idle)} of the window (host wait {_pct(host_wait)}, kernel wait "
                f"{_pct(a.idle_breakdown.get('kernel_wait', 0.0))}, other "
                f"{_pct(a.idle_breakdown.get('other', 0.0))} of the idle time) — no dominant cause found")
    launch = a.launch
    ev = [head, f"the CPU issues {launch.launches_per_ms:.1f} launches per ms (median kernel "
                f"{launch.median_kernel_us:.1f} µs): too few for launch overhead to explain the idle time"
          if launch.launches_per_ms < THRESHOLDS["launch_density_min_per_ms"] else
          f"{launch.launches_per_ms:.1f} launches per ms; median kernel {launch.median_kernel_us:.1f} µs"]
    if a.host_starved_fraction >= THRESHOLDS["starved_min"]:
        ev.append(f"the main thread runs no profiled op for {_pct(a.host_starved_fraction)} of the window "
                  f"while the GPU idles (DataLoader only {_pct(a.dataloader_fraction)})")
    return ev


def diagnose_job(per_rank: list[tuple[RankAnalysis, Diagnosis]]) -> Diagnosis:
    """One diagnosis for a job: the signature with the largest total loss over ranks."""
    if not per_rank:
        return _inconclusive(["no ranks"])
    totals: dict[str, float] = {}
    for _, d in per_rank:
        totals[d.signature] = totals.get(d.signature, 0.0) + max(d.loss_fraction, 1e-9)
    signature = max(totals, key=totals.get)
    ranks = [a.rank for a, d in per_rank if d.signature == signature]
    worst_a, worst = max(((a, d) for a, d in per_rank if d.signature == signature),
                         key=lambda ad: ad[1].loss_fraction)
    evidence = list(worst.evidence)
    if len(per_rank) > 1:
        evidence.insert(0, f"{len(ranks)} of {len(per_rank)} ranks show {signature} "
                           f"(worst: rank {worst_a.rank})")
    secondary = sorted({s for _, d in per_rank for s in [d.signature, *d.secondary]} - {signature})
    return Diagnosis(signature, worst.confidence, evidence, FIXES[signature], secondary,
                     worst.loss_fraction, dict(worst.scores))
