"""Synthetic Kineto-like traces, one per diagnosis signature (demos and tests).

Each trace has ``ProfilerStep#N`` annotations, ``cpu_op`` ops launching kernels through
``cudaLaunchKernel`` (correlation ids and ``ac2g`` flows), GPU streams (compute on 7,
communication on 20), ``deviceProperties`` and ``distributedInfo``. ``size`` scales the number of
kernels per step; ``seed`` drives a small timing jitter.

``inconclusive`` is the trace of a profile taken without ``ProfilerActivity.CUDA``: the same steps
of ops on the CPU, and no runtime calls, kernels or GPU rows at all.
"""
from __future__ import annotations

import gzip
import random
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

SCENARIOS = ("healthy", "launch_bound", "comm_bound", "data_starved", "memory_bound", "pipeline_bubble",
             "inconclusive")

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
    events: list[dict] = field(default_factory=list)
    corr: int = 1
    ext: int = 1
    cpu_t: float = 0.0
    gpu_free: dict[int, float] = field(default_factory=dict)

    def jitter(self, us: float) -> float:
        return us * (1.0 + 0.05 * (self.rng.random() - 0.5))

    def cpu(self, name: str, start: float, dur: float, cat: str = "cpu_op", **args: object) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                            "ts": round(start, 3), "dur": round(dur, 3),
                            "args": {"External id": self.ext, **args}})
        self.ext += 1

    def launch(self, op: str, kernel: str, kernel_us: float, *, stream: int = COMPUTE_STREAM,
               call_us: float = 5.0, op_us: float = 8.0, not_before: float = 0.0) -> float:
        """An op on the CPU launching one kernel; returns the kernel end time."""
        start = self.cpu_t
        ext = self.ext
        self.cpu(op, start, op_us)
        call_start = start + 1.0
        corr = self.corr
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID,
                            "tid": TID, "ts": round(call_start, 3), "dur": call_us,
                            "args": {"External id": ext, "cbid": 211, "correlation": corr}})
        k_start = max(call_start + call_us, self.gpu_free.get(stream, 0.0), not_before)
        k_dur = self.jitter(kernel_us)
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": DEVICE, "tid": stream,
                            "ts": round(k_start, 3), "dur": round(k_dur, 3),
                            "args": {"External id": ext, "device": DEVICE, "stream": stream,
                                     "correlation": corr, "grid": [132, 1, 1], "block": [256, 1, 1]}})
        self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": round(call_start, 3),
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": DEVICE, "tid": stream, "ts": round(k_start, 3),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.cpu_t = start + op_us + 1.0
        self.gpu_free[stream] = k_start + k_dur
        return k_start + k_dur

    def sync(self) -> None:
        """cudaDeviceSynchronize: the CPU waits for every stream."""
        end = max(self.gpu_free.values(), default=self.cpu_t)
        dur = max(end - self.cpu_t, 1.0)
        self.cpu("cudaDeviceSynchronize", self.cpu_t, dur, cat="cuda_runtime", correlation=self.corr)
        self.corr += 1
        self.cpu_t += dur + 1.0


def _step_healthy(w: _Writer, size: int) -> None:
    for _ in range(8 * size):
        w.launch("aten::mm", GEMM, 600.0)
        w.launch("aten::gelu", ELEMENTWISE, 60.0)
    w.sync()  # loss.item(): the CPU waits once per step, as a real training loop does


def _step_launch_bound(w: _Writer, size: int) -> None:
    for _ in range(200 * size):
        w.launch("aten::add", ELEMENTWISE, 2.0, call_us=6.0, op_us=18.0)
    w.sync()


def _step_comm_bound(w: _Writer, size: int) -> None:
    end = 0.0
    for _ in range(4 * size):
        end = w.launch("aten::mm", GEMM, 500.0)
    w.launch("nccl:all_reduce", ALLREDUCE, 3000.0 * size, stream=COMM_STREAM, not_before=end)
    w.sync()


def _step_data_starved(w: _Writer, size: int) -> None:
    w.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", w.cpu_t, 6000.0 * size,
          cat="user_annotation")
    w.cpu_t += 6000.0 * size + 2.0
    w.launch("aten::copy_", "Memcpy HtoD (Pageable -> Device)", 50.0)
    for _ in range(6 * size):
        w.launch("aten::mm", GEMM, 600.0)
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


def _step_cpu_only(w: _Writer, size: int) -> None:
    for _ in range(8 * size):
        w.cpu("aten::mm", w.cpu_t, 40.0)
        w.cpu("aten::gelu", w.cpu_t + 41.0, 12.0)
        w.cpu_t += 55.0


_STEPS = {"healthy": _step_healthy, "launch_bound": _step_launch_bound, "comm_bound": _step_comm_bound,
          "data_starved": _step_data_starved, "memory_bound": _step_memory_bound,
          "pipeline_bubble": _step_pipeline_bubble, "inconclusive": _step_cpu_only}


def synth_trace(scenario: str, *, steps: int = 5, seed: int = 0, size: int = 1, rank: int = 0,
                world_size: int = 1) -> dict:
    """Build the trace as a JSON-ready dict."""
    if scenario not in _STEPS:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if steps < 1 or size < 1:
        raise ValueError("steps and size must be >= 1")
    w = _Writer(random.Random(seed))
    w.cpu_t = 10.0
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


def write_synth_trace(scenario: str, path: Path | str, **kwargs: int) -> Path:
    """Write a synthetic trace; gzip it when the name ends in ``.gz``."""
    path = Path(path)
    data = msgspec.json.encode(synth_trace(scenario, **kwargs))
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    path.write_bytes(data)
    return path
