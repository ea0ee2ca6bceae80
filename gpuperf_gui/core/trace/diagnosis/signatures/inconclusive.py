"""``inconclusive``: no GPU activity, too little evidence, or a GPU idle with no dominant cause.
It claims nothing: confidence 0, and its evidence says what is missing."""
from __future__ import annotations

from ._base import Signature, Threshold

THRESHOLDS = {
    "evidence_min_kernels": Threshold(
        20, "inconclusive for too little evidence: fewer than 20 device events in the window *and* under 1 ms "
            "of device work. The HTA test traces with 1-14 kernels (call_stack, triton_example, event_sync, "
            "large_integer, the MI250 mini-toy: 2-150 µs of GPU work) show no pattern; torch_compile_triton's "
            "12 fused kernels fill 12.5 ms and are a fair \"healthy\"."),
    "evidence_min_busy_s": Threshold(1e-3, "See evidence_min_kernels: both must fail."),
}

SIGNATURE = Signature(
    name="inconclusive", label="Inconclusive",
    hint="no GPU events, or an idle GPU with no cause the trace can show",
    fix="Get a trace that shows the GPU: profile with ProfilerActivity.CUDA over a few "
        "steady-state steps (schedule(wait=1, warmup=1, active=3)); if the GPU is idle "
        "waiting on the host, read the op table's self CPU column for where the host time goes.",
    thresholds=THRESHOLDS)
