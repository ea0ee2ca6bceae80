"""Synthetic Kineto-like traces, one per diagnosis signature (demos and tests).

Each trace has ``ProfilerStep#N`` annotations, ``cpu_op`` ops launching kernels through
``cudaLaunchKernel`` (correlation ids and ``ac2g`` flows), GPU streams (compute on 7,
communication on 20), ``deviceProperties`` and ``distributedInfo``. ``size`` scales the number of
kernels per step; ``seed`` drives a small timing jitter.

Each scenario is one step writer of ``_STEPS`` (a docstring says which loop it mimics where the
code does not); :data:`SCENARIO_SIGNATURE` maps each scenario to the diagnosis it must get. The jobs of
:data:`MULTI_RANK_SCENARIOS` are folders of rank files (``straggler_nccl``: :mod:`.synth_nccl`).
"""
from __future__ import annotations

import gzip
import random
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec

from . import synth_nccl

SCENARIO_SIGNATURE = {
    "healthy": "healthy", "launch_bound": "launch_bound", "launch_bound_compiled": "launch_bound",
    "comm_bound": "comm_bound", "data_starved": "data_starved", "data_starved_loader": "data_starved",
    "memory_bound": "memory_bound", "memory_bound_optimizer": "memory_bound",
    "pipeline_bubble": "pipeline_bubble", "pipeline_gpipe": "pipeline_bubble", "straggler": "straggler",
    "straggler_nccl": "straggler", "host_sync_bound": "host_sync_bound", "host_bound": "host_bound",
    "memory_bound_decode_graph": "memory_bound", "memory_bound_decode_warm": "memory_bound",
    "inconclusive": "inconclusive",
}
SCENARIOS = tuple(SCENARIO_SIGNATURE)
MULTI_RANK_SCENARIOS = {"straggler": 4, "pipeline_gpipe": 2, "straggler_nccl": 2}
"""Scenarios written as a folder of rank files, with their world size."""
STRAGGLER_RANK = 2
STRAGGLER_DELAY_US = 4000.0
STRAGGLER_BUCKETS = 3
"""DDP all-reduce buckets per step: only the first waits for the late rank."""
TRITON_POINTWISE = "triton_poi_fused_add_mul_view_0"
TRITON_REDUCTION = "triton_per_fused_native_layer_norm_1"
ADAMW = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
         "::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>>")
HTOD = "Memcpy HtoD (Pageable -> Device)"

PID, TID, DEVICE, COMPUTE_STREAM, COMM_STREAM = 4242, 4242, 0, 7, 20
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
               "(at::TensorIteratorBase&)::{lambda()#1}>(int, at::native::GeluFunctor, at::detail::Array<char*, 2>)")
LAYERNORM = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SENDRECV = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


@dataclass
class _Writer:
    rng: random.Random
    rank: int = 0
    world_size: int = 1
    exact: bool = False
    events: list[dict] = field(default_factory=list)
    corr: int = 1
    ext: int = 1
    cpu_t: float = 10.0
    gpu_free: dict[int, float] = field(default_factory=dict)
    late_rank: int = 0
    """straggler_nccl: the rank whose host sleeps before each step."""
    steps: int = 1
    step_index: int = 0
    sync_mode: str = "lagged"
    """straggler_nccl: when each rank's host waits for its GPU (:mod:`.synth_nccl`)."""
    gpipe_origin: float | None = None
    """pipeline_gpipe: where the current step's schedule starts (the same on every rank)."""

    def gemms(self, n: int, kernel_us: float) -> float:
        """``n`` ``aten::mm`` GEMMs of ``kernel_us`` each; returns the last one's end (0 for none)."""
        end = 0.0
        for _ in range(n):
            end = self.launch("aten::mm", GEMM, kernel_us)
        return end

    def jitter(self, us: float) -> float:
        return us if self.exact else us * (1.0 + 0.05 * (self.rng.random() - 0.5))

    def cpu(self, name: str, start: float, dur: float, cat: str = "cpu_op", **args: object) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                            "ts": round(start, 3), "dur": round(dur, 3),
                            "args": {"External id": self.ext, **args}})
        self.ext += 1

    def launch(self, op: str, kernel: str, kernel_us: float, *, stream: int = COMPUTE_STREAM,
               call_us: float = 5.0, op_us: float = 8.0, not_before: float = 0.0,
               call: str = "cudaLaunchKernel", call_cat: str = "cuda_runtime", kernel_cat: str = "kernel",
               end_at: float | None = None, op_args: dict | None = None) -> float:
        """An op on the CPU launching one kernel; returns the kernel end time. ``end_at`` fixes the
        kernel's end (a collective that waits for the last rank); ``op_args`` go to the op's args
        (``Input Dims``, ``Input type``)."""
        start = self.cpu_t
        ext = self.ext
        self.cpu(op, start, max(op_us, call_us + 2.0), **(op_args or {}))
        call_start = start + 1.0
        corr = self.corr
        self.corr += 1
        self.events.append({"ph": "X", "cat": call_cat, "name": call, "pid": PID,
                            "tid": TID, "ts": round(call_start, 3), "dur": call_us,
                            "args": {"External id": ext, "cbid": 211, "correlation": corr}})
        k_start = max(call_start + min(call_us, 5.0), self.gpu_free.get(stream, 0.0), not_before)
        k_dur = self.jitter(kernel_us) if end_at is None else max(end_at - k_start, kernel_us)
        self.events.append({"ph": "X", "cat": kernel_cat, "name": kernel, "pid": DEVICE, "tid": stream,
                            "ts": round(k_start, 3), "dur": round(k_dur, 3),
                            "args": {"External id": ext, "device": DEVICE, "stream": stream,
                                     "correlation": corr, "grid": [132, 1, 1], "block": [256, 1, 1]}})
        self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": round(call_start, 3),
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": DEVICE, "tid": stream, "ts": round(k_start, 3),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.cpu_t = start + max(op_us, call_us + 2.0) + 1.0
        self.gpu_free[stream] = k_start + k_dur
        return k_start + k_dur

    def item(self) -> None:
        """``loss.item()``: aten::item > aten::_local_scalar_dense, a 4-byte device-to-host copy and
        cudaStreamSynchronize: the host waits until the GPU has run everything queued."""
        start = self.cpu_t
        self.launch("aten::copy_", "Memcpy DtoH (Device -> Pageable)", 2.0, call="cudaMemcpyAsync",
                    kernel_cat="gpu_memcpy")
        end = self.sync("cudaStreamSynchronize", 6.0)
        self.cpu("aten::item", start - 2.0, end - start + 4.0)
        self.cpu("aten::_local_scalar_dense", start - 1.0, end - start + 2.0)
        self.cpu_t = end + 3.0

    def sync(self, call: str = "cudaDeviceSynchronize", after_us: float = 0.0) -> float:
        """``call``: the CPU waits for every stream, then ``after_us`` more; returns when it stops waiting."""
        end = max(self.gpu_free.values(), default=self.cpu_t) + after_us
        dur = max(end - self.cpu_t, 1.0)
        self.cpu(call, self.cpu_t, dur, cat="cuda_runtime", correlation=self.corr)
        self.corr += 1
        self.cpu_t += dur + 1.0
        return end


def _step_healthy(w: _Writer, size: int) -> None:
    """GEMMs and their activations, then one sync a step."""
    for _ in range(8 * size):
        w.launch("aten::mm", GEMM, 600.0)
        w.launch("aten::gelu", ELEMENTWISE, 60.0)
    w.sync()  # loss.item(): the CPU waits once per step, as a real training loop does


def _step_host_sync_bound(w: _Writer, size: int) -> None:
    """Gradient accumulation over 4 micro-batches, each followed by ``loss.item()`` and 1.5 ms of
    Python metric work (no ops): the GPU drains at every read and idles while the host works."""
    for _ in range(4):
        w.gemms(3 * size, 400.0)
        w.launch("aten::add", ELEMENTWISE, 20.0)
        w.item()
        w.cpu_t += 1500.0 * size


def _step_host_bound(w: _Writer, size: int) -> None:
    """A step's GEMMs launched, then 6 ms of Python per size (metric and logging work: no op, no sync,
    no input copy) while the GPU runs the 3.6 ms queued: the GPU idles the rest, waiting on the host."""
    w.gemms(6 * size, 600.0)
    w.cpu_t += 6000.0 * size


SKINNY_GEMMS = ("nvjet_sm90_tst_128x8_64x8_2x1_v_bz_splitK_TNT", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_bias_TNT",
                "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false>")


def _step_memory_bound_decode_graph(w: _Writer, size: int) -> None:
    """One decoded token of a batch-1 bf16 model replayed as one CUDA graph: a single cudaGraphLaunch
    launches every layer's skinny GEMMs (a tile side of 8, GEMV) and norms; no CPU op launches them,
    so no shapes; then the next token id is read with .item()."""
    call = w.cpu_t + 1.0
    corr = w.corr
    w.corr += 1
    w.cpu("CUDAGraph.replay", w.cpu_t, 12.0, cat="user_annotation")
    w.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": PID, "tid": TID,
                     "ts": round(call, 3), "dur": 9.0, "args": {"cbid": 311, "correlation": corr}})
    t = max(call + 12.0, w.gpu_free.get(COMPUTE_STREAM, 0.0))
    for layer in range(12 * size):
        for kernel, us in ((LAYERNORM, 4.0), (SKINNY_GEMMS[layer % 3], 48.0), (SKINNY_GEMMS[(layer + 1) % 3], 40.0),
                           (ELEMENTWISE, 3.0), (SKINNY_GEMMS[(layer + 2) % 3], 64.0)):
            dur = w.jitter(us)
            w.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": DEVICE, "tid": COMPUTE_STREAM,
                             "ts": round(t, 3), "dur": round(dur, 3),
                             "args": {"device": DEVICE, "stream": COMPUTE_STREAM, "correlation": corr,
                                      "grid": [132, 1, 1], "block": [128, 1, 1]}})
            w.events.append({"ph": "f", "id": corr, "pid": DEVICE, "tid": COMPUTE_STREAM, "ts": round(t, 3),
                             "cat": "ac2g", "name": "ac2g", "bp": "e"})
            t += dur + 1.0  # kernels of one graph follow each other within a microsecond
    w.events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": round(call, 3), "cat": "ac2g",
                     "name": "ac2g"})
    w.gpu_free[COMPUTE_STREAM] = t
    w.cpu_t += 14.0
    w.item()  # the sampled token id: the host waits for the replay


SKINNY_SHAPES = ([[1, 8192], [8192, 10240]], [[1, 10240], [10240, 8192]], [[1, 8192], [8192, 8192]])
"""The (M, K) x (K, N) shapes of the eager calls of :data:`SKINNY_GEMMS` in the warm-up token: the
weights of an 8192-wide model, which the graph's ~51 µs per GEMM stream at about 3 TB/s."""


def _prologue_decode_warm_token(w: _Writer) -> None:
    """One token decoded eagerly before the graph was captured (inside the trace, before its first
    step): each skinny GEMM kernel once, launched by an ``aten::mm`` with its bf16 shapes."""
    for kernel, dims in zip(SKINNY_GEMMS, SKINNY_SHAPES):
        w.launch("aten::mm", kernel, 50.0, op_args={"Input Dims": dims, "Input type": ["c10::BFloat16"] * 2})
    w.cpu_t = max(w.cpu_t, w.gpu_free[COMPUTE_STREAM]) + 50.0


def _step_launch_bound(w: _Writer, size: int) -> None:
    """Eager PyTorch: a wall of small ops, each kernel shorter than its launch."""
    for _ in range(200 * size):
        w.launch("aten::add", ELEMENTWISE, 2.0, call_us=6.0, op_us=18.0)
    w.sync()


def _step_comm_bound(w: _Writer, size: int) -> None:
    end = w.gemms(4 * size, 500.0)
    w.launch("nccl:all_reduce", ALLREDUCE, 3000.0 * size, stream=COMM_STREAM, not_before=end)
    w.sync()


def _step_data_starved(w: _Writer, size: int) -> None:
    """Plain-Python batch preparation with no DataLoader (no op the profiler sees), then a blocking
    pageable ``aten::to`` and its HtoD copy."""
    w.cpu_t += 5000.0 * size
    w.launch("aten::to", HTOD, 60.0, call="cudaMemcpyAsync", call_us=300.0, op_us=310.0,
             kernel_cat="gpu_memcpy")
    w.gemms(6 * size, 600.0)
    w.sync()


def _step_data_starved_loader(w: _Writer, size: int) -> None:
    """The host waits in ``DataLoader.__next__``, then copies the pinned batch."""
    w.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", w.cpu_t, 6000.0 * size,
          cat="user_annotation")
    w.cpu_t += 6000.0 * size + 2.0
    w.launch("aten::copy_", "Memcpy HtoD (Pinned -> Device)", 50.0, call="cudaMemcpyAsync",
             kernel_cat="gpu_memcpy")
    w.gemms(6 * size, 600.0)
    w.sync()


def _step_launch_bound_compiled(w: _Writer, size: int) -> None:
    """A ``torch.compile``d graph's Python wrapper: ~30 µs of host time per launch of a tiny Triton
    kernel (3-6 µs) through ``cuLaunchKernel``."""
    start = w.cpu_t
    w.cpu_t += 40.0  # guards and the cache lookup
    for i in range(150 * size):
        w.cpu_t += 22.0  # the wrapper's Python between launches (no op recorded)
        if i % 5 == 4:
            w.launch("aten::mm", GEMM.replace("128x128", "64x64"), 6.0, call_us=5.0, op_us=9.0)
        else:
            w.launch("triton_poi_fused", TRITON_POINTWISE if i % 2 else TRITON_REDUCTION, 3.0,
                     call="cuLaunchKernel", call_cat="cuda_driver", call_us=4.0, op_us=6.0)
    w.cpu("Torch-Compiled Region: 0/0", start, w.cpu_t - start, cat="user_annotation")
    w.sync()


def _step_memory_bound_optimizer(w: _Writer, size: int) -> None:
    w.gemms(2 * size, 150.0)
    for _ in range(12 * size):  # foreach AdamW: one multi_tensor_apply pass per tensor list chunk
        w.launch("aten::_foreach_add_", ADAMW, 400.0, call_us=6.0, op_us=12.0)
    w.sync()


def _step_straggler(w: _Writer, size: int) -> None:
    """DDP over NCCL where rank :data:`STRAGGLER_RANK` prepares its batch late every step: batch,
    4 GEMMs, then the gradient buckets' all-reduces; the first ends when the last rank has joined."""
    compute_us = 60.0 + 4 * 500.0 * size
    late = w.rank == STRAGGLER_RANK
    step_start = w.cpu_t
    if late:
        w.cpu_t += STRAGGLER_DELAY_US  # its host prepares the batch in plain Python, late every step
    w.launch("aten::to", "Memcpy HtoD (Pinned -> Device)", 60.0, call="cudaMemcpyAsync",
             kernel_cat="gpu_memcpy", not_before=w.cpu_t)
    end = w.gemms(4 * size, 500.0)
    # Every rank's compute ends at a known time (exact kernels): the first bucket's all-reduce ends
    # after the last rank joins; the next buckets queue behind it on every rank and run together.
    last_ready = step_start + STRAGGLER_DELAY_US + compute_us + 200.0
    w.launch("nccl:all_reduce", ALLREDUCE, 300.0, stream=COMM_STREAM, not_before=end,
             end_at=last_ready + 300.0)
    for _ in range(STRAGGLER_BUCKETS - 1):
        w.launch("nccl:all_reduce", ALLREDUCE, 250.0, stream=COMM_STREAM)
    w.sync()


def _step_memory_bound(w: _Writer, size: int) -> None:
    for _ in range(10 * size):
        w.launch("aten::native_layer_norm", LAYERNORM, 300.0)
        w.launch("aten::gelu", ELEMENTWISE, 250.0)
        w.launch("aten::add", ELEMENTWISE, 250.0)
    w.sync()


def _step_pipeline_bubble(w: _Writer, size: int) -> None:
    for _ in range(4 * size):
        recv_end = w.launch("nccl:recv", SENDRECV, 900.0, stream=COMM_STREAM,
                            not_before=w.gpu_free.get(COMPUTE_STREAM, 0.0))
        w.launch("aten::mm", GEMM, 700.0, not_before=recv_end)
        w.launch("aten::mm", GEMM, 700.0)
        w.launch("nccl:send", SENDRECV, 200.0, stream=COMM_STREAM,
                 not_before=w.gpu_free.get(COMPUTE_STREAM, 0.0))
    w.sync()


# GPipe, 2 stages x 2 micro-batches, forward = backward = 1 unit per stage, 0.05 unit per p2p hop:
# per stage, (op, start, end) in units from the step's start. Each stage idles (p-1)/(m+p-1) = 1/3
# of the step plus the hops, next to its recv/send. A step of the schedule is GPIPE_STEP_UNITS: the
# last stage-0 kernel ends at 6.1, and the host needs ~0.1 to issue the next.
_GPIPE = {
    0: (("aten::mm", 0.0, 1.0), ("nccl:send", 1.0, 1.05), ("aten::mm", 1.0, 2.0), ("nccl:send", 2.0, 2.05),
        ("nccl:recv", 2.05, 4.1), ("aten::mm", 4.1, 5.1), ("nccl:recv", 4.1, 5.1), ("aten::mm", 5.1, 6.1)),
    1: (("nccl:recv", 0.0, 1.05), ("nccl:recv", 1.05, 2.05), ("aten::mm", 1.05, 2.05), ("aten::mm", 2.05, 3.05),
        ("aten::mm", 3.05, 4.05), ("nccl:send", 4.05, 4.1), ("aten::mm", 4.05, 5.05), ("nccl:send", 5.05, 5.1)),
}
GPIPE_STEP_UNITS = 6.2


def _step_pipeline_gpipe(w: _Writer, size: int) -> None:
    """One GPipe step of stage ``w.rank`` (0 or 1): all ops issued up front (NCCL p2p is
    asynchronous), then the host waits for its GPU. Compute and sends run at the schedule's times
    (the same on both ranks: step n starts :data:`GPIPE_STEP_UNITS` after step n-1); a recv kernel
    starts when its stream reaches it and ends when the other stage's data is there (NCCL's recv
    waits inside the kernel), so the stage that finishes early waits in its next step's first recv."""
    unit = 1000.0 * size
    origin = w.cpu_t + 100.0 if w.gpipe_origin is None else w.gpipe_origin + GPIPE_STEP_UNITS * unit
    w.gpipe_origin = origin   # the ops are issued within the first ~80 µs of step 0
    for op, start, end in _GPIPE[w.rank % 2]:
        kernel, stream = (GEMM, COMPUTE_STREAM) if op == "aten::mm" else (SENDRECV, COMM_STREAM)
        w.launch(op, kernel, (end - start) * unit, stream=stream,
                 not_before=0.0 if op == "nccl:recv" else origin + start * unit, end_at=origin + end * unit)
    w.sync()


def _step_cpu_only(w: _Writer, size: int) -> None:
    """A profile taken without ``ProfilerActivity.CUDA``: ops on the CPU, and no runtime calls,
    kernels or GPU rows at all."""
    for _ in range(8 * size):
        w.cpu("aten::mm", w.cpu_t, 40.0)
        w.cpu("aten::gelu", w.cpu_t + 41.0, 12.0)
        w.cpu_t += 55.0


_NCCL_NAMES = synth_nccl.Names(GEMM, ALLREDUCE, ADAMW, COMPUTE_STREAM, COMM_STREAM, DEVICE)
_STEPS = {"healthy": _step_healthy, "launch_bound": _step_launch_bound,
          "launch_bound_compiled": _step_launch_bound_compiled, "comm_bound": _step_comm_bound,
          "data_starved": _step_data_starved, "data_starved_loader": _step_data_starved_loader,
          "memory_bound": _step_memory_bound, "memory_bound_optimizer": _step_memory_bound_optimizer,
          "pipeline_bubble": _step_pipeline_bubble, "pipeline_gpipe": _step_pipeline_gpipe,
          "straggler": _step_straggler, "straggler_nccl": partial(synth_nccl.step_straggler_nccl, names=_NCCL_NAMES),
          "host_sync_bound": _step_host_sync_bound, "host_bound": _step_host_bound,
          "memory_bound_decode_graph": _step_memory_bound_decode_graph,
          "memory_bound_decode_warm": _step_memory_bound_decode_graph, "inconclusive": _step_cpu_only}


_PROLOGUES = {"straggler_nccl": partial(synth_nccl.prologue, names=_NCCL_NAMES),
              "memory_bound_decode_warm": _prologue_decode_warm_token}
"""What a scenario writes before its first step (device work launched before the window)."""


def synth_trace(scenario: str, *, steps: int = 5, seed: int = 0, size: int = 1, rank: int = 0,
                world_size: int = 1, late_rank: int = 0, sync: str = "lagged") -> dict:
    """Build the trace as a JSON-ready dict (``late_rank``, ``sync``: ``straggler_nccl`` only)."""
    if scenario not in _STEPS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if steps < 1 or size < 1:
        raise ValueError("steps and size must be >= 1")
    if scenario in MULTI_RANK_SCENARIOS:
        world_size = max(world_size, MULTI_RANK_SCENARIOS[scenario])
    w = _Writer(random.Random(seed), rank=rank, world_size=world_size,
                exact=scenario in MULTI_RANK_SCENARIOS, late_rank=late_rank, steps=steps, sync_mode=sync)
    if scenario in _PROLOGUES:
        _PROLOGUES[scenario](w)
    for n in range(steps):
        step_start = w.cpu_t
        ext = w.ext
        w.ext += 1
        w.cpu_t += 2.0
        _STEPS[scenario](w, size)
        w.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": PID,
                         "tid": TID, "ts": round(step_start, 3), "dur": round(w.cpu_t - step_start, 3),
                         "args": {"External id": ext}})
        w.cpu_t += 5.0
    meta = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": TID,
         "args": {"name": f"thread {TID} (python3)"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": DEVICE, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": 0, "pid": DEVICE, "tid": 0, "args": {"labels": "GPU 0"}},
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Synthetic GPU (H200-like)", "totalGlobalMem": 150109880320,
                              "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size},
        "synthetic": {"scenario": scenario, "steps": steps, "seed": seed, "size": size},
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": meta + sorted(w.events, key=lambda e: e["ts"]),
        "traceName": f"synthetic-{scenario}",
    }


def write_synth_trace(scenario: str, path: Path | str, **kwargs: int | str) -> Path:
    """Write a synthetic trace; gzip it when the name ends in ``.gz``.

    A multi-rank scenario (:data:`MULTI_RANK_SCENARIOS`) writes a folder at ``path`` (a ``.json`` /
    ``.json.gz`` suffix is dropped from the folder name) with one ``rank<N>.json.gz`` per rank, and
    returns the folder."""
    path = Path(path)
    if scenario in MULTI_RANK_SCENARIOS:
        folder = path.with_name(path.name.removesuffix(".gz").removesuffix(".json"))
        folder.mkdir(parents=True, exist_ok=True)
        world = max(int(kwargs.pop("world_size", 0)), MULTI_RANK_SCENARIOS[scenario])
        kwargs.pop("rank", None)
        for rank in range(world):
            _write(folder / f"rank{rank}.json.gz", synth_trace(scenario, rank=rank, world_size=world, **kwargs))
        return folder
    return _write(path, synth_trace(scenario, **kwargs))


def _write(path: Path, trace: dict) -> Path:
    data = msgspec.json.encode(trace)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    path.write_bytes(data)
    return path
