"""A synthetic DDP job over NCCL whose late rank the others wait for inside the collective kernel
(what that looks like in a trace: :mod:`..diagnosis.stragglers`).

The whole job is planned at once (every rank's kernels depend on the others' through the
all-reduces), then :func:`step_straggler_nccl` writes one rank's step from the plan. A step: forward
(4 GEMMs), backward (4 GEMMs) with three gradient buckets all-reduced on the communication stream as
they are ready, the optimizer after the last bucket. The late rank's host sleeps :data:`DELAY_US` before
each step's forward (``time.sleep``: host work the profiler does not see). ``sync`` says when a
rank's host waits for its GPU: ``"step"``, at the end of each step (its ``loss.item()``);
``"lagged"``, at the end of each step for the step before (the previous step's loss logged, a common
way to keep one step in flight); ``"none"``, never. Without a sync at the step's end the fast ranks'
hosts run ahead of their GPUs, so the profiler starts recording while a fast rank's GPU still runs
the step before: :func:`prologue` writes those kernels, with no launch record.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Names:
    """What :mod:`.synth` calls its kernels and streams (given by it: this module imports it not)."""

    gemm: str
    allreduce: str
    adamw: str
    compute_stream: int
    comm_stream: int
    device: int


DELAY_US = 20000.0
FWD_US, BWD_US, OPT_US = 400.0, 800.0, 200.0
ALLREDUCE_US = 600.0
"""Each bucket's all-reduce once every rank has joined (the transfer itself)."""
LAYERS = 4
BUCKET_AFTER = (1, 2, 3)
"""Backward GEMMs after which a gradient bucket is ready (its all-reduce launched)."""
OP_US = 9.0
"""Host time per launched op, as :meth:`.synth._Writer.launch` spends it (8 µs op + 1)."""
LAUNCH_DELAY_US = 6.0
"""The writer's kernel starts no earlier than its call start (op start + 1) + 5 µs."""


@dataclass(frozen=True)
class Launch:
    op: str
    kernel: str
    stream: int  # names.compute_stream or names.comm_stream
    cpu_us: float  # op start on the host
    start_us: float
    end_us: float


@lru_cache(maxsize=16)
def plan(world_size: int, late_rank: int, steps: int, sync: str, names: Names
         ) -> tuple[tuple[tuple[tuple[Launch, ...], float, float], ...], ...]:
    """Per rank, per step: (launches, the step's CPU start, its CPU end) for the whole job."""
    cpu = [10.0] * world_size
    compute_free = [0.0] * world_size
    comm_free = [0.0] * world_size
    out: list[list] = [[] for _ in range(world_size)]
    done_before = [0.0] * world_size  # when each rank's GPU finished the step before this one
    for _ in range(steps):
        step_start = list(cpu)
        t = [c + 2.0 + (DELAY_US if r == late_rank else 0.0) for r, c in enumerate(cpu)]
        launches: list[list[Launch]] = [[] for _ in range(world_size)]

        def compute(r: int, op: str, kernel: str, us: float, after: float = 0.0) -> float:
            start = max(t[r] + LAUNCH_DELAY_US, compute_free[r], after)
            launches[r].append(Launch(op, kernel, names.compute_stream, t[r], start, start + us))
            compute_free[r] = start + us
            t[r] += OP_US
            return start + us

        ready = [[0.0] * len(BUCKET_AFTER) for _ in range(world_size)]
        bucket_launch = [[0.0] * len(BUCKET_AFTER) for _ in range(world_size)]
        for r in range(world_size):
            for _ in range(LAYERS):
                compute(r, "aten::mm", names.gemm, FWD_US)
            for i in range(LAYERS):
                end = compute(r, "aten::mm", names.gemm, BWD_US)
                if i in BUCKET_AFTER:
                    b = BUCKET_AFTER.index(i)
                    ready[r][b], bucket_launch[r][b] = end, t[r]
                    t[r] += OP_US  # the all-reduce's op on the host
        ar_end = [0.0] * world_size
        for b in range(len(BUCKET_AFTER)):
            starts = [max(bucket_launch[r][b] + LAUNCH_DELAY_US, ready[r][b], comm_free[r]) for r in range(world_size)]
            end = max(starts) + ALLREDUCE_US  # NCCL: every rank's kernel ends once the last has joined
            for r in range(world_size):
                launches[r].append(Launch("record_param_comms", names.allreduce, names.comm_stream, bucket_launch[r][b],
                                          starts[r], end))
                comm_free[r] = ar_end[r] = end
        for r in range(world_size):
            compute(r, "aten::_foreach_add_", names.adamw, OPT_US, after=ar_end[r])
            launches[r].sort(key=lambda x: x.cpu_us)
            cpu[r] = t[r]
            if sync != "none":  # loss.item(): the host waits for its GPU (this step's end, or the last one's)
                cpu[r] = max(cpu[r], compute_free[r] if sync == "step" else done_before[r]) + 1.0
            done_before[r] = compute_free[r]
            out[r].append((tuple(launches[r]), step_start[r], cpu[r]))
            cpu[r] += 5.0
    return tuple(tuple(rank) for rank in out)


def _plan(w: Any, names: Names) -> tuple:
    return plan(w.world_size, w.late_rank, w.steps + 1, w.sync_mode, names)[w.rank]  # step 0: before the window


def prologue(w: Any, names: Names) -> None:
    """The window opens at the first recorded step's CPU start; the kernels of the step before that
    still run then are in the trace, without their launch calls (launched before the window).
    ``w`` is :mod:`.synth`'s writer."""
    steps = _plan(w, names)
    opens = steps[1][1]
    w.cpu_t = opens
    for x in steps[0][0]:
        if x.end_us > opens:
            w.events.append({"ph": "X", "cat": "kernel", "name": x.kernel, "pid": names.device, "tid": x.stream,
                             "ts": round(x.start_us, 3), "dur": round(x.end_us - x.start_us, 3),
                             "args": {"device": names.device, "stream": x.stream, "correlation": w.corr}})
            w.corr += 1


def step_straggler_nccl(w: Any, size: int, names: Names) -> None:
    """One rank's step ``w.step_index`` of the planned job (``size`` is not used: the plan is fixed)."""
    launches, _, cpu_end = _plan(w, names)[w.step_index + 1]
    for x in launches:
        w.cpu_t = max(w.cpu_t, x.cpu_us)
        if x.stream == names.comm_stream:
            w.cpu("nccl:all_reduce", w.cpu_t, OP_US - 1.0, cat="user_annotation")
        w.launch(x.op, x.kernel, x.end_us - x.start_us, stream=x.stream, not_before=x.start_us, end_at=x.end_us)
    if w.sync_mode != "none":
        dur = max(cpu_end - 1.0 - w.cpu_t, 1.0)
        w.cpu("aten::item", w.cpu_t, dur)
        w.cpu("cudaStreamSynchronize", w.cpu_t + 0.5, dur - 1.0, cat="cuda_runtime", correlation=w.corr)
        w.corr += 1
    w.cpu_t = max(w.cpu_t, cpu_end)
    w.step_index += 1
