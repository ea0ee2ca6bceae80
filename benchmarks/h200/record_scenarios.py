"""Record real torch.profiler traces of known performance scenarios (issues 9 and 14).

Run on a two-GPU machine (the 2-rank cases need two GPUs for NCCL):

    NCCL_NVLS_ENABLE=0 python3 benchmarks/h200/record_scenarios.py --out DIR [--tar FILE]
    python benchmarks/h200/record_scenarios.py --device cpu --dry-run --out /tmp/x   # logic check

Each scenario runs in its own child process (a failure or a hang costs only that scenario) and writes
under --out:
  <name>.json.gz                 one rank's trace (export_chrome_trace, gzipped), or
  <name>/rank<R>.json.gz         one file per rank for the 2-rank cases,
  <name>.key_averages.txt        prof.key_averages().table(...) of rank 0 (the op-table oracle),
  <name>.key_averages.json       the same rows as numbers (count, CPU and device times in us),
  <name>.meta.json               what ran, world size, tokens/step, unprofiled step times (median of
                                 synced steps), profiled step times, expected_signature and the
                                 figures that make it expected (by construction and measured).
Profiler: CPU + CUDA activities, record_shapes=True, schedule(wait=1, warmup=1, active=N), prof.step()
once per training step. "trace_gpu_busy_fraction" in the meta is this script's own estimate: the union
of kernel/memcpy/memset intervals inside the ProfilerStep window over that window's length.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

WAIT, WARMUP = 1, 1

# Order = priority: the diagnosis cases first.
SCENARIOS = (
    "data_starved_python", "compiled_tiny", "eager_tiny", "ddp_straggler", "ddp_comm_bound",
    "ddp_healthy", "pipeline_2mb", "pipeline_8mb", "gloo_cpu_allreduce", "packed_elementwise",
    "data_starved_loader0", "loader_fed", "nested_sum", "attention", "adamw_foreach", "compiled_small",
    "eager_small", "compiled_tiny_cudagraphs", "ddp_straggler_gloo", "fsdp_healthy",
    # issues 20, 25, 26: graph-replayed decode, host syncs, before/after pairs, gloo versions on one GPU
    "decode_cudagraph", "item_per_microbatch", "item_none", "mlp_eager", "mlp_cudagraph",
    "elementwise_eager", "elementwise_compiled", "ddp_healthy_gloo", "decode_eager", "ddp_item_gloo",
    "pipeline_8mb_gloo", "ddp_item",
    # held-out before/after pairs: the pairs' kinds at other sizes, recorded once, never tuned on
    "heldout_loader0", "heldout_loader4", "heldout_mlp_eager", "heldout_mlp_cudagraph", "heldout_item_each",
    "heldout_item_none", "heldout_elementwise_eager", "heldout_elementwise_compiled", "heldout_late_rank0_gloo",
    "heldout_ontime_gloo",
)


# ----------------------------------------------------------------------------- helpers

class Ctx:
    """Settings one scenario runs with."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        self.out = Path(args.out)
        self.dry = bool(args.dry_run)
        self.device = "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
        self.cuda = self.device == "cuda"
        self.n_gpu = torch.cuda.device_count() if self.cuda else 0

    def dev(self, rank: int = 0) -> str:
        """One GPU per rank; ranks share GPU 0 where there is one GPU (gloo cases only)."""
        return f"cuda:{rank % self.n_gpu}" if self.cuda else "cpu"


def sync(ctx_cuda: bool) -> None:
    import torch

    if ctx_cuda:
        torch.cuda.synchronize()


def time_steps(step: Callable[[], Any], cuda: bool, n: int = 10, warm: int = 3) -> list[float]:
    """Wall time of n steps, each followed by a device synchronize (after `warm` untimed steps)."""
    for _ in range(warm):
        step()
    sync(cuda)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        sync(cuda)
        times.append(time.perf_counter() - t0)
    return times


def profile_steps(step: Callable[[], Any], cuda: bool, active: int, trace_path: Path,
                  before_first: Callable[[], None] | None = None, record_shapes: bool = True):
    """Run wait+warmup+active steps under torch.profiler, prof.step() after each; write gz trace.

    Returns (prof, wall seconds of each active step, not counting the prof.step() call)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    times = []
    with profile(activities=acts, schedule=schedule(wait=WAIT, warmup=WARMUP, active=active, repeat=1),
                 record_shapes=record_shapes) as prof:
        if before_first is not None:
            before_first()
        for _ in range(WAIT + WARMUP + active):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)  # the step alone, not prof.step()'s collection
            prof.step()
        sync(cuda)
    write_trace(prof, trace_path)
    return prof, times[WAIT + WARMUP:]


def write_trace(prof, trace_path: Path) -> None:
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    raw = trace_path.with_suffix("")  # x.json.gz -> x.json
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(trace_path, "wb", compresslevel=9) as dst:
        dst.write(src.read())
    raw.unlink()


def key_average_rows(prof, limit: int = 80) -> tuple[str, list[dict]]:
    """key_averages table text (sorted by device time) and its rows as numbers."""
    events = prof.key_averages()
    rows = []
    for e in events:
        dev_total = float(getattr(e, "device_time_total", 0.0) or 0.0)
        dev_self = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        rows.append({"name": e.key, "count": int(e.count), "cpu_time_total_us": float(e.cpu_time_total),
                     "self_cpu_time_total_us": float(e.self_cpu_time_total),
                     "device_time_total_us": dev_total, "self_device_time_total_us": dev_self})
    rows.sort(key=lambda r: (-r["device_time_total_us"], -r["cpu_time_total_us"]))
    sort_key = "device_time_total" if any(r["device_time_total_us"] for r in rows) else "cpu_time_total"
    try:
        text = events.table(sort_by=sort_key, row_limit=limit)
    except Exception:  # noqa: BLE001 - older key names
        text = events.table(sort_by="cpu_time_total", row_limit=limit)
    return text, rows[:limit]


def trace_busy(trace_path: Path) -> dict:
    """GPU busy fraction inside the ProfilerStep window, overall and per step (independent of gpuperf)."""
    with gzip.open(trace_path, "rt") as fh:
        data = json.load(fh)
    evs = [e for e in data.get("traceEvents", []) if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    merged: list[list[float]] = []
    for a, b in gpu:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])

    def covered(lo: float, hi: float) -> float:
        return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in merged)

    out: dict = {"kernels": len(gpu), "steps": len(steps), "events": len(data.get("traceEvents", []))}
    if steps and merged:
        lo, hi = steps[0][0], steps[-1][1]
        out["gpu_busy_fraction"] = covered(lo, hi) / (hi - lo)
        out["per_step_busy_fraction"] = [covered(a, b) / (b - a) for a, b in steps]
        out["step_durations_s"] = [(b - a) * 1e-6 for a, b in steps]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_work(n_iter: int, seed: int = 1) -> int:
    """Plain-Python work the profiler cannot see (an LCG)."""
    s = seed
    for _ in range(n_iter):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
    return s


def calibrate_cpu_work(target_s: float) -> int:
    n = 200_000
    t0 = time.perf_counter()
    cpu_work(n)
    per_iter = (time.perf_counter() - t0) / n
    return max(1, int(target_s / per_iter))


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


# ----------------------------------------------------------------------------- models

def make_gpt(vocab: int, d: int, layers: int, heads: int, seq: int):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, vocab).float(), targets.view(-1))

    return GPT()


def gpt_mid_cfg(ctx: Ctx) -> dict:
    if ctx.dry:
        return dict(vocab=512, d=64, layers=2, heads=2, seq=32, batch=4)
    return dict(vocab=8192, d=1024, layers=6, heads=16, seq=512, batch=64)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def train_step_fn(model, opt, batch_fn: Callable[[], tuple], cuda: bool, amp: bool):
    """One training step; loss.item() at the end, as a loop that logs its loss does."""
    import torch

    def step() -> float:
        idx, tgt = batch_fn()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp and cuda):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    return step


# ----------------------------------------------------------------------------- single-GPU scenarios

def _gpt_mid(ctx: Ctx):
    import torch

    cfg = gpt_mid_cfg(ctx)
    torch.manual_seed(0)
    model = make_gpt(cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]).to(ctx.dev())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=ctx.cuda)
    return cfg, model, opt


def _gpu_only_step_time(ctx: Ctx, cfg: dict, model, opt) -> float:
    """Synced step time with batches already on the device (the GPU's own time per step)."""
    import torch

    idx = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=ctx.dev())
    step = train_step_fn(model, opt, lambda: (idx, idx.roll(-1, 1)), ctx.cuda, amp=True)
    return median(time_steps(step, ctx.cuda, n=10, warm=3))


def sc_data_starved_python(ctx: Ctx, name: str) -> dict:
    """No DataLoader: each batch is tokenised in plain Python on the host, then copied (H2D)."""
    import torch

    cfg, model, opt = _gpt_mid(ctx)
    gpu_s = _gpu_only_step_time(ctx, cfg, model, opt)
    n_tok = cfg["batch"] * cfg["seq"]
    per_tok = calibrate_cpu_work(gpu_s / n_tok)  # host prep per batch ~= the GPU's step time
    counter = [0]

    def python_batch():
        counter[0] += 1
        ids = [cpu_work(per_tok, counter[0] * n_tok + i) % cfg["vocab"] for i in range(n_tok)]
        idx = torch.tensor(ids, dtype=torch.long).view(cfg["batch"], cfg["seq"]).to(ctx.dev())
        return idx, idx.roll(-1, 1)

    t0 = time.perf_counter()
    for _ in range(3):
        python_batch()
    host_s = (time.perf_counter() - t0) / 3
    step = train_step_fn(model, opt, python_batch, ctx.cuda, amp=True)
    unprof = time_steps(step, ctx.cuda, n=10, warm=2)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    idle_expected = 1 - gpu_s / median(unprof)
    return dict(prof=prof, what="GPT (bf16 autocast, fused AdamW) fed by plain-Python per-token preprocessing "
                "on the host each step (no DataLoader), then a pageable H2D copy; loss.item() per step",
                model=cfg, n_params=n_params(model), tokens_per_step=n_tok, unprofiled=unprof,
                profiled=prof_times, expected_signature="data_starved",
                expected={"gpu_idle_fraction": idle_expected, "host_prep_s_per_step": host_s,
                          "gpu_step_s_with_device_batches": gpu_s,
                          "how": "idle = 1 - (synced step time with batches already on the GPU) / "
                                 "(unprofiled step time with host preprocessing)"})


def _cpu_heavy_dataset(ctx: Ctx, cfg: dict, item_s: float):
    import torch
    from torch.utils.data import Dataset

    class TokenDataset(Dataset):
        def __init__(self, n_iter: int) -> None:
            self.n_iter = n_iter

        def __len__(self) -> int:
            return 1_000_000

        def __getitem__(self, i: int):
            seed = cpu_work(self.n_iter, i)  # CPU-heavy "decode/tokenise" in plain Python
            g = torch.Generator().manual_seed(seed)
            return torch.randint(0, cfg["vocab"], (cfg["seq"],), generator=g)

    return TokenDataset(calibrate_cpu_work(item_s))


def _loader_scenario(ctx: Ctx, name: str, workers: int, host_factor: float = 1.2) -> dict:
    import torch
    from torch.utils.data import DataLoader

    cfg, model, opt = _gpt_mid(ctx)
    gpu_s = _gpu_only_step_time(ctx, cfg, model, opt)
    # host time per batch = host_factor x the GPU's step: starved at 0 workers, fed with enough of them.
    ds = _cpu_heavy_dataset(ctx, cfg, host_factor * gpu_s / cfg["batch"])
    kw: dict = dict(batch_size=cfg["batch"], num_workers=workers, pin_memory=ctx.cuda)
    if workers:
        kw.update(prefetch_factor=4, persistent_workers=True)
    it = iter(DataLoader(ds, **kw))

    def batch():
        idx = next(it).to(ctx.dev(), non_blocking=True)
        return idx, idx.roll(-1, 1)

    step = train_step_fn(model, opt, batch, ctx.cuda, amp=True)
    unprof = time_steps(step, ctx.cuda, n=10, warm=6)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    fed = workers > 0
    return dict(prof=prof, what=f"GPT (bf16, fused AdamW) fed by DataLoader(num_workers={workers}"
                + (", pin_memory, prefetch_factor=4, persistent_workers" if fed else "")
                + f") whose __getitem__ does plain-Python CPU work; host time per batch = {host_factor} x GPU step",
                model=cfg, n_params=n_params(model), tokens_per_step=cfg["batch"] * cfg["seq"],
                num_workers=workers, unprofiled=unprof, profiled=prof_times,
                expected_signature="healthy" if fed else "data_starved",
                expected={"gpu_idle_fraction": 1 - gpu_s / median(unprof),
                          "gpu_step_s_with_device_batches": gpu_s,
                          "host_s_per_batch_one_process": host_factor * gpu_s,
                          "how": "idle = 1 - (synced step time with batches already on the GPU) / "
                                 "(unprofiled step time fed by the DataLoader)"})


def sc_data_starved_loader0(ctx: Ctx, name: str) -> dict:
    return _loader_scenario(ctx, name, 0)


def sc_loader_fed(ctx: Ctx, name: str) -> dict:
    return _loader_scenario(ctx, name, 2 if ctx.dry else 8)


def _tiny_gpt(ctx: Ctx, name: str, compiled: bool, small: bool = False, cudagraphs: bool = False) -> dict:
    import torch

    cfg = dict(vocab=4096, d=256, layers=4, heads=4, seq=64, batch=4)
    if small:
        cfg = dict(vocab=8192, d=512, layers=6, heads=8, seq=256, batch=8)
    if ctx.dry:
        cfg.update(vocab=256, d=32, layers=1, heads=2, seq=16, batch=2)
    torch.manual_seed(0)
    model = make_gpt(cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]).to(ctx.dev())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    mode = "reduce-overhead" if cudagraphs and ctx.cuda else None
    fwd = torch.compile(model, backend="eager" if ctx.dry else "inductor", mode=mode) if compiled else model
    idx = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=ctx.dev())
    tgt = idx.roll(-1, 1)

    def step() -> float:
        loss = fwd(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    t0 = time.perf_counter()
    step()
    first_s = time.perf_counter() - t0
    unprof = time_steps(step, ctx.cuda, n=10, warm=5)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    label = f"torch.compile (inductor, mode={mode or 'default'}) " if compiled else "eager "
    return dict(prof=prof, what=label
                + f"GPT d={cfg['d']} x {cfg['layers']} layers, fp32, batch {cfg['batch']} x seq {cfg['seq']}, "
                "foreach AdamW; loss.item() per step",
                model=cfg, n_params=n_params(model), tokens_per_step=cfg["batch"] * cfg["seq"],
                first_step_s_including_compile=first_s, unprofiled=unprof, profiled=prof_times,
                expected_signature=None if small or cudagraphs else "launch_bound",
                expected={"how": "measured only: an eager -> compiled pair for gpuperf diff" if small or cudagraphs else
                          "tiny kernels (a few us each), GPU idle between launches; the host's "
                                 "launch/dispatch time sets the step time"})


def sc_compiled_tiny(ctx: Ctx, name: str) -> dict:
    return _tiny_gpt(ctx, name, compiled=True)


def sc_eager_tiny(ctx: Ctx, name: str) -> dict:
    return _tiny_gpt(ctx, name, compiled=False)


def sc_compiled_tiny_cudagraphs(ctx: Ctx, name: str) -> dict:
    return _tiny_gpt(ctx, name, compiled=True, cudagraphs=True)


def sc_compiled_small(ctx: Ctx, name: str) -> dict:
    return _tiny_gpt(ctx, name, compiled=True, small=True)


def sc_eager_small(ctx: Ctx, name: str) -> dict:
    return _tiny_gpt(ctx, name, compiled=False, small=True)


def sc_packed_elementwise(ctx: Ctx, name: str) -> dict:
    """A long chain of big in-place elementwise kernels; the host runs at most 3 steps ahead (it waits
    on the event of step i-3), so every step keeps the GPU busy. A backlog of 15 steps' kernels is
    launched just before the profiler starts, so the first traced kernels were launched untraced."""
    import torch

    n = 1 << 16 if ctx.dry else 1 << 27  # 128 Mi fp32 = 512 MiB: ~0.25 ms per read+write pass
    chain = 4 if ctx.dry else 40
    x = torch.rand(n, device=ctx.dev())
    marks: list = []

    def launch() -> None:
        for _ in range(chain // 2):
            x.mul_(0.999)
            x.add_(0.001)

    def step() -> None:
        launch()
        if ctx.cuda:
            marks.append(torch.cuda.Event())
            marks[-1].record()
            if len(marks) > 3:
                marks.pop(0).synchronize()  # bounded run-ahead: the host waits for step i-3

    def backlog() -> None:
        for _ in range(15):
            launch()

    step()
    sync(ctx.cuda)
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    sync(ctx.cuda)
    steady_s = (time.perf_counter() - t0) / 20
    unprof = time_steps(step, ctx.cuda, n=10, warm=2)
    marks.clear()
    prof, prof_times = profile_steps(step, ctx.cuda, 5, ctx.out / f"{name}.json.gz", before_first=backlog)
    bytes_per_step = chain * 2 * n * 4
    return dict(prof=prof, what=f"{chain} in-place elementwise kernels (mul_/add_) per step on a {n}-element "
                "fp32 tensor; the host waits on the CUDA event of step i-3 (bounded run-ahead), so the "
                "launch queue never drains; 15 steps of kernels (600) queued just before the profiler's "
                "first step",
                unprofiled=unprof, profiled=prof_times, steady_state_step_s=steady_s,
                expected_signature="memory_bound",
                expected={"gpu_busy_fraction_min": 0.98, "bytes_per_step": bytes_per_step,
                          "achieved_bytes_per_s": bytes_per_step / steady_s,
                          "how": "the queue always holds 3 steps of kernels, so the GPU is busy all of "
                                 "every step (busy per step = busy per rank); unprofiled_step_time_s "
                                 "includes a full drain (synced), steady_state_step_s does not"})


def sc_nested_sum(ctx: Ctx, name: str) -> dict:
    """aten::sum inside aten::sum: a __torch_dispatch__ wrapper subclass re-dispatches sum on its inner
    tensor, so the profiler records the outer and the inner aten::sum, nested."""
    import torch
    from torch.utils._pytree import tree_map

    class Wrapped(torch.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

        def __init__(self, elem) -> None:
            self.elem = elem

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            unwrap = lambda t: t.elem if isinstance(t, Wrapped) else t  # noqa: E731
            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t, out)

    rows = 256 if ctx.dry else 8192
    x = torch.rand(rows, 4096 if not ctx.dry else 64, device=ctx.dev())
    w = Wrapped(x)
    nested_per_step, plain_per_step = 4, 3

    def step() -> None:
        for _ in range(nested_per_step):
            torch.sum(w, dim=1)
        for _ in range(plain_per_step):
            torch.sum(x, dim=0)
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=2)
    active = 3
    prof, prof_times = profile_steps(step, ctx.cuda, active, ctx.out / f"{name}.json.gz")
    return dict(prof=prof, what="per step: 4 torch.sum on a __torch_dispatch__ wrapper subclass (outer "
                "aten::sum wraps an inner aten::sum that launches the kernel) + 3 plain torch.sum",
                unprofiled=unprof, profiled=prof_times, expected_signature=None,
                expected={"aten_sum_records_per_step": 2 * nested_per_step + plain_per_step,
                          "sum_kernels_per_step": nested_per_step + plain_per_step,
                          "active_steps": active,
                          "how": "oracle for the op table: see key_averages.json (count, self and total "
                                 "device time of aten::sum)"})


def sc_attention(ctx: Ctx, name: str) -> dict:
    """SDPA forward+backward with known (B, H, T, D) on each backend, causal and not."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    B, H, T, D = (2, 2, 64, 16) if ctx.dry else (4, 16, 2048, 128)
    dtype = torch.float32 if ctx.dry else torch.bfloat16
    configs = [(b, c) for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION") for c in (False, True)]
    q, k, v = (torch.randn(B, H, T, D, device=ctx.dev(), dtype=dtype, requires_grad=True) for _ in range(3))

    def run(backend: str, causal: bool) -> None:
        with sdpa_kernel(getattr(SDPBackend, backend)):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(torch.ones_like(out))

    ok, per_config = [], {}
    for b, c in configs:
        key = f"{b}{'_causal' if c else ''}"
        try:
            run(b, c)
            with FlopCounterMode(display=False) as fc:
                run(b, c)
            counts = {str(op): int(f) for op, f in fc.get_flop_counts().get("Global", {}).items()}
            times = []
            for _ in range(10):
                if ctx.cuda:
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    run(b, c)
                    e1.record()
                    e1.synchronize()
                    times.append(e0.elapsed_time(e1) * 1e-3)
                else:
                    t0 = time.perf_counter()
                    run(b, c)
                    times.append(time.perf_counter() - t0)
            per_config[key] = {"backend": b, "causal": c, "flop_counter": counts,
                               "fwd_bwd_s_median": median(times),
                               "fwd_bwd_flops_per_s": sum(counts.values()) / median(times)}
            ok.append((b, c))
        except Exception as exc:  # noqa: BLE001 - a backend missing on this device
            per_config[key] = {"backend": b, "causal": c, "error": f"{type(exc).__name__}: {exc}"[:300]}
    schedule = list(ok)
    pos = [0]

    def step() -> None:  # one (backend, causal) per active step, labelled
        i = pos[0] - WAIT - WARMUP
        pos[0] += 1
        todo = schedule if i < 0 else [schedule[i]]
        for b, c in todo:
            with torch.profiler.record_function(f"sdpa {b} causal={c}"):
                run(b, c)
        sync(ctx.cuda)

    prof, prof_times = profile_steps(step, ctx.cuda, len(schedule), ctx.out / f"{name}.json.gz")
    fwd_full = 4 * B * H * T * T * D
    return dict(prof=prof, what=f"F.scaled_dot_product_attention q,k,v (B,H,T,D)=({B},{H},{T},{D}) {dtype}, "
                "forward+backward; one backend x causal per active step (record_function 'sdpa <backend> "
                "causal=<c>'), in the order of 'active_step_configs'",
                shape_bhtd=[B, H, T, D], dtype=str(dtype), unprofiled=[], profiled=prof_times,
                active_step_configs=[f"{b} causal={c}" for b, c in schedule], configs=per_config,
                expected_signature=None,
                expected={"hand_forward_flops_noncausal": fwd_full,
                          "hand_forward_flops_causal_useful": fwd_full // 2,
                          "hand_backward_flops_noncausal": int(2.5 * fwd_full),
                          "how": "forward = 2 matmuls of 2*B*H*T*T*D; backward = 5 such matmuls (2.5x); "
                                 "causal masks half (the kernels skip about half); FlopCounterMode's own "
                                 "counts per op are under configs[*].flop_counter"})


def sc_adamw_foreach(ctx: Ctx, name: str) -> dict:
    """A step dominated by AdamW(foreach=True): large params, a tiny batch, so the optimizer's passes
    over params, grads and moments are most of the GPU time."""
    import torch
    import torch.nn as nn

    width, layers, rows = (64, 4, 4) if ctx.dry else (8192, 8, 8)
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.LayerNorm(width)]
    model = nn.Sequential(*mods).to(ctx.dev())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True, fused=False)
    x = torch.randn(rows, width, device=ctx.dev())

    def step() -> float:
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    opt_frac = None
    if ctx.cuda:  # optimizer share: events around opt.step alone
        s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(10):
            loss = model(x).pow(2).mean()
            loss.backward()
            torch.cuda.synchronize()
            s0.record()
            opt.step()
            s1.record()
            s1.synchronize()
            ts.append(s0.elapsed_time(s1) * 1e-3)
            opt.zero_grad(set_to_none=True)
        opt_frac = median(ts) / median(unprof)
    prof, prof_times = profile_steps(step, ctx.cuda, 3, ctx.out / f"{name}.json.gz")
    np_ = n_params(model)
    return dict(prof=prof, what=f"{layers} x (Linear({width},{width}) + LayerNorm), batch {rows} rows, "
                "AdamW(foreach=True, fused=False); loss.item() per step",
                n_params=np_, param_tensors=len(list(model.parameters())), unprofiled=unprof,
                profiled=prof_times, expected_signature="memory_bound",
                expected={"optimizer_fraction_of_step": opt_frac,
                          "adamw_min_bytes_per_step": 28 * np_,
                          "how": "optimizer share = median CUDA-event time of opt.step() alone / "
                                 "unprofiled step time; foreach AdamW makes several passes over "
                                 "params/grads/moments (>= 28 B per param)"})


# ----------------------------------------------------------------------------- what-if and NCCL scenarios

def _decode_model(ctx: Ctx):
    """A Llama-shaped stack for batch-1 decode: per layer qkv (d x 3d), o (d x d), gate/up (d x 2.75d each),
    down (2.75d x d), RMS norms; attention over a fixed KV cache of `ctx_len` positions (two skinny matmuls)."""
    import torch
    import torch.nn as nn

    d, layers, ctx_len = (64, 2, 16) if ctx.dry else (2048, 16, 1024)
    ff = int(2.75 * d)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            self.gate, self.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
            self.down = nn.Linear(ff, d, bias=False)
            self.register_buffer("k", torch.randn(ctx_len, d) / d ** 0.5)
            self.register_buffer("v", torch.randn(ctx_len, d))

        def forward(self, x):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            q, _, _ = self.qkv(h).split(d, dim=-1)
            att = torch.softmax(q @ self.k.T, dim=-1) @ self.v  # [1, ctx] then [1, d]
            x = x + self.o(att)
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))

    torch.manual_seed(0)
    model = nn.Sequential(*[Layer() for _ in range(layers)]).to(ctx.dev(), torch.bfloat16).eval()
    return model, dict(d=d, layers=layers, ctx_len=ctx_len, ff=ff, batch=1, dtype="bf16")


def _decode(ctx: Ctx, name: str, graphed: bool) -> dict:
    """Batch-1 bf16 decode, 16 tokens per step; `graphed`: each token is one CUDA-graph replay."""
    import torch

    model, cfg = _decode_model(ctx)
    tokens = 16
    x = torch.randn(1, cfg["d"], device=ctx.dev(), dtype=torch.bfloat16)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    weight_bytes += sum(b.numel() * b.element_size() for b in model.buffers())
    if graphed and ctx.cuda:
        static_x = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            static_y = model(static_x)

        def token() -> None:
            graph.replay()
            static_x.copy_(static_y)
    else:
        state = [x]

        def token() -> None:
            with torch.no_grad():
                state[0] = model(state[0])

    def step() -> None:
        for _ in range(tokens):
            token()
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    per_token_s = median(unprof) / tokens
    return dict(prof=prof, what=f"batch-1 bf16 decode, {'one CUDA-graph replay' if graphed else 'eager'} per "
                f"token, {tokens} tokens per step: {cfg['layers']} Llama-shaped layers d={cfg['d']} "
                f"(qkv, o, gate/up/down {cfg['ff']}), attention over a fixed {cfg['ctx_len']}-position cache",
                model=cfg, n_params=sum(p.numel() for p in model.parameters()), tokens_per_step=tokens,
                unprofiled=unprof, profiled=prof_times,
                expected_signature="memory_bound" if graphed else None,
                expected={"weight_and_cache_bytes_per_token": weight_bytes,
                          "achieved_bytes_per_s_unprofiled": weight_bytes / per_token_s,
                          "h200_hbm_bytes_per_s_datasheet": 4.8e12,
                          "how": "every token reads every weight and the KV cache once (batch 1: skinny GEMMs, "
                                 "~2 FLOP/byte); bytes / unprofiled time per token against HBM bandwidth"})


def sc_decode_cudagraph(ctx: Ctx, name: str) -> dict:
    return _decode(ctx, name, graphed=True)


def sc_decode_eager(ctx: Ctx, name: str) -> dict:
    return _decode(ctx, name, graphed=False)


def _deep_mlp(ctx: Ctx, name: str, graphed: bool, shape: tuple[int, int, int, int] = (256, 48, 32, 8)) -> dict:
    """A deep small MLP (48 x Linear(256,256)+ReLU, batch 32, fp32), 8 forwards per step: eager is
    launch-bound; the same forwards replayed as one CUDA graph each."""
    import torch
    import torch.nn as nn

    width, layers, rows, fwd = (32, 4, 8, 2) if ctx.dry else shape
    torch.manual_seed(0)
    mods: list = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*mods).to(ctx.dev()).eval()
    x = torch.randn(rows, width, device=ctx.dev())
    if graphed and ctx.cuda:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            model(x)
        run = graph.replay
    else:
        def run() -> None:
            with torch.no_grad():
                model(x)

    def step() -> None:
        for _ in range(fwd):
            run()
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    return dict(prof=prof, what=f"deep small MLP ({layers} x Linear({width},{width})+ReLU, fp32, batch {rows}), "
                f"{fwd} forwards per step, {'each one CUDA-graph replay' if graphed else 'eager'}",
                model=dict(width=width, layers=layers, rows=rows, forwards_per_step=fwd),
                n_params=n_params(model), tokens_per_step=rows * fwd, unprofiled=unprof, profiled=prof_times,
                expected_signature=None if graphed else "launch_bound",
                expected={"how": "eager: ~2 tiny kernels (a few us) per layer, host launch time sets the step; "
                                 "graphed: the same kernels back to back (a before/after pair for the what-if)"})


def sc_mlp_eager(ctx: Ctx, name: str) -> dict:
    return _deep_mlp(ctx, name, graphed=False)


def sc_mlp_cudagraph(ctx: Ctx, name: str) -> dict:
    return _deep_mlp(ctx, name, graphed=True)


def _micro_batch_loop(ctx: Ctx, name: str, item_each: bool, micro: int = 4, host_factor: float = 0.8) -> dict:
    """GPT (bf16) with 4 micro-batches of gradient accumulation per step; after each micro-batch Python
    metric work (an LCG, ~0.8 x the micro-batch's GPU time) that launches nothing. `item_each`: the loss
    is read with .item() before that work (the host waits for the GPU, then the GPU waits for the host);
    otherwise the losses stay on the GPU and are read once at the end of the step."""
    import torch

    # d=2048 x 2 layers, 16 x 512 tokens: ~10 ms of GEMMs per micro-batch against ~1 ms of launches
    cfg = dict(vocab=512, d=64, layers=1, heads=2, seq=16, batch=2) if ctx.dry else \
        dict(vocab=8192, d=2048, layers=2, heads=16, seq=512, batch=16)
    torch.manual_seed(0)
    model = make_gpt(cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]).to(ctx.dev())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=ctx.cuda)
    idx = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=ctx.dev())
    tgt = idx.roll(-1, 1)

    def fwd_bwd():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=ctx.cuda):
            loss = model(idx, tgt) / micro
        loss.backward()
        return loss

    mb_gpu_s = median(time_steps(fwd_bwd, ctx.cuda, n=10, warm=3))
    n_iter = calibrate_cpu_work(host_factor * mb_gpu_s)
    metric: list[float] = []

    def step() -> float:
        total = torch.zeros((), device=ctx.dev())
        for i in range(micro):
            loss = fwd_bwd()
            if item_each:
                metric.append(loss.item())  # blocks until the micro-batch's kernels are done
            else:
                total += loss.detach()
            cpu_work(n_iter, i)  # per-micro-batch logging/metric work in Python: no launches
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total.item() if not item_each else sum(metric[-micro:])

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    prof, prof_times = profile_steps(step, ctx.cuda, 3, ctx.out / f"{name}.json.gz")
    host_s = micro * host_factor * mb_gpu_s
    return dict(prof=prof, what=f"GPT d={cfg['d']} x {cfg['layers']} layers bf16 autocast, fused AdamW, {micro} "
                f"micro-batches of {cfg['batch']} x {cfg['seq']} per step; after each micro-batch Python work of "
                f"~{host_factor} x its GPU time" + (", preceded by loss.item()" if item_each else
                                         "; losses kept on the GPU, one .item() per step"),
                model=cfg, n_params=n_params(model), tokens_per_step=micro * cfg["batch"] * cfg["seq"],
                micro_batches=micro, unprofiled=unprof, profiled=prof_times,
                expected_signature="host_sync_bound" if item_each else "healthy",
                expected={"micro_batch_gpu_s": mb_gpu_s, "host_work_s_per_step": host_s,
                          "syncs_per_step": micro + 1 if item_each else 1,
                          "gpu_idle_fraction_expected": (host_s / (host_s + micro * mb_gpu_s)) if item_each else 0.0,
                          "how": "item_each: the GPU idles during each micro-batch's host work (the .item() "
                                 "drained its queue); without it the host work overlaps the queued kernels"})


def sc_item_per_microbatch(ctx: Ctx, name: str) -> dict:
    return _micro_batch_loop(ctx, name, item_each=True)


def sc_item_none(ctx: Ctx, name: str) -> dict:
    return _micro_batch_loop(ctx, name, item_each=False)


def _elementwise_chain(ctx: Ctx, name: str, compiled: bool, heldout: bool = False) -> dict:
    """An unfused chain of 8 elementwise ops over 64 M fp32 values (eager: 8 kernels, 8 reads + 8 writes);
    torch.compile fuses it into one kernel (1 read + 1 write)."""
    import torch

    n = 1 << 12 if ctx.dry else (1 << 25 if heldout else 1 << 26)

    def chain(x):
        y = x * 1.5 + 0.25
        y = torch.sin(y) * x
        y = torch.relu(y) - 0.1
        y = torch.exp(-y.abs()) * y
        return y

    def chain_heldout(x):  # 7 kernels eager: tanh, mul, sigmoid, add, mul, sub, clamp
        y = torch.tanh(x) * 0.5
        y = torch.sigmoid(y) + x
        y = y * y - 0.3
        return torch.clamp(y, -1.0, 1.0)

    chain = chain_heldout if heldout else chain
    per_step = 12 if heldout else 10

    fn = torch.compile(chain, backend="eager" if ctx.dry else "inductor") if compiled else chain
    x = torch.randn(n, device=ctx.dev())

    def step() -> None:
        for _ in range(per_step):
            fn(x)
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / f"{name}.json.gz")
    ops = "tanh, mul, sigmoid, add, mul, sub, clamp" if heldout else "mul-add, sin, mul, relu, sub, abs, neg, exp, mul"
    return dict(prof=prof, what=f"{'torch.compile (inductor) of ' if compiled else 'eager '}an elementwise chain "
                f"({ops}) over {n} fp32 values, {per_step} per step",
                model=dict(elements=n, chains_per_step=per_step), tokens_per_step=None, unprofiled=unprof,
                profiled=prof_times, expected_signature="memory_bound",
                expected={"bytes_per_chain_fused": 8 * n, "bytes_per_chain_eager_min": 8 * n * 10,
                          "how": "memory-bound elementwise kernels back to back; eager moves ~10x the bytes of "
                                 "the fused kernel (a before/after pair for the what-if)"})


def sc_elementwise_eager(ctx: Ctx, name: str) -> dict:
    return _elementwise_chain(ctx, name, compiled=False)


def sc_elementwise_compiled(ctx: Ctx, name: str) -> dict:
    return _elementwise_chain(ctx, name, compiled=True)


# Held-out pairs: the what-if's five fixes at other sizes and loads, recorded to check projections once.
def sc_heldout_loader0(ctx: Ctx, name: str) -> dict:
    return _loader_scenario(ctx, name, 0, host_factor=1.6)


def sc_heldout_loader4(ctx: Ctx, name: str) -> dict:
    return _loader_scenario(ctx, name, 4, host_factor=1.6)


def sc_heldout_mlp_eager(ctx: Ctx, name: str) -> dict:
    return _deep_mlp(ctx, name, graphed=False, shape=(512, 24, 64, 6))


def sc_heldout_mlp_cudagraph(ctx: Ctx, name: str) -> dict:
    return _deep_mlp(ctx, name, graphed=True, shape=(512, 24, 64, 6))


def sc_heldout_item_each(ctx: Ctx, name: str) -> dict:
    return _micro_batch_loop(ctx, name, item_each=True, micro=6, host_factor=0.5)


def sc_heldout_item_none(ctx: Ctx, name: str) -> dict:
    return _micro_batch_loop(ctx, name, item_each=False, micro=6, host_factor=0.5)


def sc_heldout_elementwise_eager(ctx: Ctx, name: str) -> dict:
    return _elementwise_chain(ctx, name, compiled=False, heldout=True)


def sc_heldout_elementwise_compiled(ctx: Ctx, name: str) -> dict:
    return _elementwise_chain(ctx, name, compiled=True, heldout=True)


# ----------------------------------------------------------------------------- 2-rank scenarios

def _dist_init(rank: int, world: int, port: int, backend: str, cuda: bool) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group(backend, rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}") if cuda and backend == "nccl" else None)


def _rank_main(rank: int, world: int, port: int, args_ns: dict, name: str, result_file: str) -> None:
    import torch.distributed as dist

    ctx = Ctx(argparse.Namespace(**args_ns))
    fn = globals()[f"rank_{name.split('_')[0]}" if name.startswith("pipeline") else f"rank_{name}"]
    backend = "gloo" if ("gloo" in name or not ctx.cuda) else "nccl"
    _dist_init(rank, world, port, backend, ctx.cuda)
    try:
        res = fn(ctx, name, rank, world)
        prof = res.pop("prof", None)
        if rank == 0 and prof is not None:
            _write_key_averages(ctx.out, name, prof)
        if prof is not None:
            res["trace_busy"] = trace_busy(ctx.out / name / f"rank{rank}.json.gz")
        Path(f"{result_file}.{rank}").write_text(json.dumps(res, default=str))
    finally:
        dist.destroy_process_group()


def _ddp_model(ctx: Ctx, kind: str, rank: int):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    if kind == "comm":  # ~67 M fp32 params, 32 rows: all-reduce of 268 MB vs microseconds of compute
        width, layers, rows = (64, 2, 4) if ctx.dry else (4096, 4, 32)
    elif kind == "gloo":  # ~4.2 M params (17 MB of grads, a few ms through gloo), 32 k rows of bf16 GEMMs
        width, layers, rows = (64, 2, 32) if ctx.dry else (1024, 4, 32768)
    else:  # ~33 M params, 32 k rows: ~12 ms of bf16 GEMMs per step, grads all-reduced in buckets
        width, layers, rows = (64, 2, 32) if ctx.dry else (2048, 8, 32768)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*mods).to(ctx.dev(rank))
    return model, width, rows


def _ddp_run(ctx: Ctx, name: str, rank: int, world: int, kind: str, late_rank: int | None, late_s: float,
             item_micro_batches: int = 0) -> dict:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    model, width, rows = _ddp_model(ctx, kind, rank)
    ddp = DDP(model, device_ids=[rank % ctx.n_gpu] if ctx.cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3, momentum=0.9, foreach=True)
    x = torch.randn(rows, width, device=ctx.dev(rank))
    amp = kind != "comm"

    # item runs: each micro-batch is 4x the plain batch, so that its GPU time dwarfs its launches
    x_micro = torch.randn(4 * rows, width, device=ctx.dev(rank)) if item_micro_batches else x
    host_work = [0]

    def item_step() -> float:
        """Micro-batches with gradient accumulation (no_sync but the last); after each, loss.item() and
        Python metric work that launches nothing (host_work[0] LCG iterations)."""
        got = 0.0
        for i in range(item_micro_batches):
            xs = x_micro
            ctx_mgr = ddp.no_sync() if i < item_micro_batches - 1 else contextlib.nullcontext()
            with ctx_mgr:
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp and ctx.cuda):
                    loss = ddp(xs).float().pow(2).mean() / item_micro_batches
                loss.backward()
            got += loss.item()  # the host waits for this micro-batch's kernels
            cpu_work(host_work[0], i)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return got

    def step() -> float:
        if item_micro_batches:
            return item_step()
        if rank == late_rank:
            time.sleep(late_s)  # this rank's host is late every step (e.g. slow input on that node)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp and ctx.cuda):
            loss = ddp(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    if item_micro_batches:  # host work per micro-batch ~0.8 x its GPU time (measured without the work)
        mb_s = median(time_steps(item_step, ctx.cuda, n=5, warm=2)) / item_micro_batches
        host_work[0] = calibrate_cpu_work(0.8 * mb_s)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    # compute alone (no DDP hooks): the step without communication, for the comm-exposed estimate
    local_opt = torch.optim.SGD(model.parameters(), lr=0.0)

    def local_step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp and ctx.cuda):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        local_opt.step()
        local_opt.zero_grad(set_to_none=True)

    compute_s = median(time_steps(local_step, ctx.cuda, n=10, warm=2))
    dist.barrier()
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / name / f"rank{rank}.json.gz")
    return dict(prof=prof, rank=rank, unprofiled=unprof, profiled=prof_times, compute_only_step_s=compute_s,
                n_params=n_params(model), rows=rows, width=width)


def rank_ddp_comm_bound(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "comm", None, 0.0)


def rank_ddp_healthy(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "compute", None, 0.0)


def rank_ddp_straggler(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "compute", 1, 0.040)


def rank_ddp_straggler_gloo(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "gloo", 1, 0.040)


def rank_ddp_healthy_gloo(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "gloo", None, 0.0)


def rank_heldout_late_rank0_gloo(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "gloo", 0, 0.025)


def rank_heldout_ontime_gloo(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "gloo", None, 0.0)


def rank_ddp_item(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "compute", None, 0.0, item_micro_batches=4)


def rank_ddp_item_gloo(ctx, name, rank, world):
    return _ddp_run(ctx, name, rank, world, "gloo", None, 0.0, item_micro_batches=4)


def rank_pipeline(ctx: Ctx, name: str, rank: int, world: int) -> dict:
    """2-stage GPipe over send/recv: all forwards, then all backwards, then the optimizer."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    m = int(name.split("_")[1].rstrip("mb"))
    width, layers, total_rows = (64, 2, 64) if ctx.dry else (4096, 8, 16384)
    mb_rows = total_rows // m
    dtype = torch.float32 if ctx.dry else torch.bfloat16
    torch.manual_seed(rank)
    stage = nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)]).to(ctx.dev(rank), dtype)
    opt = torch.optim.SGD(stage.parameters(), lr=1e-4, foreach=True)
    xs = [torch.randn(mb_rows, width, device=ctx.dev(rank), dtype=dtype) for _ in range(m)]
    if "gloo" in name and ctx.cuda:  # gloo sends host tensors: stage each one through the CPU
        def send(t, peer: int) -> None:
            dist.send(t.cpu(), peer)

        def recv(t, peer: int) -> None:
            host = torch.empty(t.shape, dtype=t.dtype)
            dist.recv(host, peer)
            t.copy_(host)
    else:
        send, recv = dist.send, dist.recv

    def step() -> None:
        if rank == 0:
            outs = []
            for i in range(m):
                y = stage(xs[i])
                send(y.detach(), 1)
                outs.append(y)
            for i in range(m):
                g = torch.empty_like(outs[i])
                recv(g, 1)
                outs[i].backward(g)
        else:
            ins, losses = [], []
            for i in range(m):
                buf = torch.empty(mb_rows, width, device=ctx.dev(rank), dtype=dtype)
                recv(buf, 0)
                buf.requires_grad_(True)
                losses.append(stage(buf).float().pow(2).mean())
                ins.append(buf)
            for i in range(m):
                losses[i].backward()
                send(ins[i].grad, 0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)

    def compute_only() -> None:  # this stage's own work for all micro-batches, no waiting
        for i in range(m):
            inp = xs[i].detach().requires_grad_(rank == 1)
            stage(inp).float().pow(2).mean().backward()
        opt.zero_grad(set_to_none=True)

    dist.barrier()
    compute_s = median(time_steps(compute_only, ctx.cuda, n=10, warm=2))
    dist.barrier()
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / name / f"rank{rank}.json.gz")
    return dict(prof=prof, rank=rank, unprofiled=unprof, profiled=prof_times, compute_only_step_s=compute_s,
                micro_batches=m, micro_batch_rows=mb_rows, width=width, layers_per_stage=layers)


def rank_gloo_cpu_allreduce(ctx: Ctx, name: str, rank: int, world: int) -> dict:
    """GPU compute, then the gradients go to the host and are all-reduced with gloo (blocking)."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    width, layers, rows = (64, 2, 16) if ctx.dry else (2048, 4, 1024)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)]).to(ctx.dev(rank))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(rows, width, device=ctx.dev(rank))
    params = list(model.parameters())
    host = torch.empty(sum(p.numel() for p in params), pin_memory=ctx.cuda)
    ar_times: list[float] = []

    def step() -> None:
        model(x).pow(2).mean().backward()
        host.copy_(torch.cat([p.grad.reshape(-1) for p in params]), non_blocking=True)  # D2H, pinned
        sync(ctx.cuda)
        flat = host
        t0 = time.perf_counter()
        dist.all_reduce(flat)  # gloo, CPU tensor: blocks the host, GPU idles
        ar_times.append(time.perf_counter() - t0)
        flat = flat.to(ctx.dev(rank)) / world
        off = 0
        for p in params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(ctx.cuda)

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    ar_unprof = median(ar_times[-10:])
    dist.barrier()
    prof, prof_times = profile_steps(step, ctx.cuda, 4, ctx.out / name / f"rank{rank}.json.gz")
    np_ = n_params(model)
    return dict(prof=prof, rank=rank, unprofiled=unprof, profiled=prof_times, n_params=np_,
                allreduce_bytes=4 * np_, allreduce_s_median=ar_unprof,
                exposed_comm_fraction=ar_unprof / median(unprof))


def rank_fsdp_healthy(ctx: Ctx, name: str, rank: int, world: int) -> dict:
    """FSDP2 (fully_shard) over a compute-heavy MLP: prefetched all-gathers, overlapped reduce-scatters."""
    import torch
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard

    width, layers, rows = (64, 2, 32) if ctx.dry else (2048, 8, 32768)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(layers)]).to(ctx.dev(rank))
    for blk in model:
        fully_shard(blk)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(rows, width, device=ctx.dev(rank))

    def step() -> float:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=ctx.cuda):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    unprof = time_steps(step, ctx.cuda, n=10, warm=3)
    prof, prof_times = profile_steps(step, ctx.cuda, 3, ctx.out / name / f"rank{rank}.json.gz")
    return dict(prof=prof, rank=rank, unprofiled=unprof, profiled=prof_times, rows=rows, width=width)


MULTI_RANK = {
    "ddp_comm_bound": ("comm_bound", "DDP (NCCL) over 4 x Linear(4096,4096) fp32 (~67 M params, 268 MB of "
                       "grads all-reduced per step) with a 32-row batch: almost no compute to hide the "
                       "all-reduce behind; SGD foreach; loss.item() per step"),
    "ddp_healthy": ("healthy", "DDP (NCCL) over 8 x Linear(2048,2048) bf16 autocast (~33.6 M params), "
                    "32768 rows: ~10 ms of GEMMs per step, 25 MB buckets all-reduced during backward"),
    "ddp_straggler": ("straggler", "as ddp_healthy, but rank 1's host sleeps 40 ms before its forward "
                      "every step; rank 0 waits for it in the first all-reduce"),
    "ddp_straggler_gloo": ("straggler", "DDP over gloo (CUDA tensors staged through the host) on "
                           "4 x Linear(1024,1024) bf16 autocast (~4.2 M params), 32768 rows; rank 1's host "
                           "sleeps 40 ms before its forward every step. With one GPU both ranks share it "
                           "(gpus_used)"),
    "pipeline_2mb": ("pipeline_bubble", "2-stage GPipe (8 x Linear(4096,4096) bf16 per stage, 16384 rows) "
                     "over NCCL send/recv, 2 micro-batches: all forwards, all backwards, SGD"),
    "pipeline_8mb": ("pipeline_bubble", "the same GPipe with 8 micro-batches of 2048 rows"),
    "pipeline_8mb_gloo": ("pipeline_bubble", "the 8-micro-batch GPipe over gloo (activations staged through the "
                          "host); with one GPU both stages share it (gpus_used): theory bubble 1/9 = 11 %, near the "
                          "10 % threshold"),
    "ddp_healthy_gloo": ("healthy", "as ddp_straggler_gloo with no late rank (the after-trace of the late-rank "
                         "pair)"),
    "heldout_late_rank0_gloo": ("straggler", "held out: DDP over gloo on the ddp_straggler_gloo model; rank 0's "
                                "host sleeps 25 ms before its forward every step (one GPU: both ranks share it)"),
    "heldout_ontime_gloo": ("healthy", "held out: heldout_late_rank0_gloo with no late rank (its after-trace)"),
    "ddp_item": ("host_sync_bound", "DDP (NCCL) as ddp_healthy, 4 micro-batches of 4 x its rows (no_sync but the last); after "
                 "each, loss.item() then Python metric work of ~0.8 x its GPU time that launches nothing"),
    "ddp_item_gloo": ("host_sync_bound", "ddp_item over gloo on 4 x Linear(1024,1024) (the ddp_straggler_gloo "
                      "model); with one GPU both ranks share it (gpus_used)"),
    "gloo_cpu_allreduce": ("comm_bound", "4 x Linear(2048,2048) fp32 on the GPU (16.8 M params), 1024 "
                           "rows; each step copies the flat grads to a pinned host buffer and all-reduces "
                           "them with gloo (blocking the host, GPU idle), copies back, SGD. With one GPU "
                           "both ranks share it (gpus_used)"),
    "fsdp_healthy": ("healthy", "FSDP2 fully_shard per block over 8 x Linear(2048,2048) bf16 autocast, "
                     "32768 rows, AdamW"),
}


def run_multi(ctx_args: argparse.Namespace, name: str) -> dict:
    import torch.multiprocessing as mp

    world = 2
    result_file = str(Path(ctx_args.out) / f".{name}.result")
    mp.spawn(_rank_main, args=(world, free_port(), vars(ctx_args), name, result_file), nprocs=world, join=True)
    ranks = [json.loads(Path(f"{result_file}.{r}").read_text()) for r in range(world)]
    for r in range(world):
        Path(f"{result_file}.{r}").unlink()
    sig, what = MULTI_RANK[name]
    r0 = ranks[0]
    step_s = median(r0["unprofiled"])
    expected: dict = {}
    if name.startswith(("ddp", "heldout_")):
        expected = {"comm_exposed_fraction_rank0": max(0.0, 1 - r0["compute_only_step_s"] / step_s),
                    "how": "exposed comm ~ 1 - (same step without DDP: compute only) / (DDP step)"}
    if name == "heldout_late_rank0_gloo":
        expected.update(late_rank=0, late_ms=25.0, late_how="rank 0 sleeps 25 ms on the host before each forward")
    if name.startswith("ddp_straggler"):
        expected.update(late_rank=1, late_ms=40.0,
                        late_how="rank 1 sleeps 40 ms on the host before each forward; rank 0's first "
                            "all-reduce of each step waits for it")
    if name.startswith("pipeline"):
        m, p = r0["micro_batches"], world
        expected = {"bubble_fraction_theory": (p - 1) / (m + p - 1),
                    "bubble_fraction_measured_per_rank": [max(0.0, 1 - r["compute_only_step_s"] / median(r["unprofiled"]))
                                                          for r in ranks],
                    "how": "theory (p-1)/(m+p-1); measured = 1 - (the stage's compute for all micro-batches "
                           "run alone) / (pipelined step time)"}
    if name.startswith("gloo"):
        expected = {"comm_exposed_fraction_per_rank": [r["exposed_comm_fraction"] for r in ranks],
                    "allreduce_s_median": r0["allreduce_s_median"], "allreduce_bytes": r0["allreduce_bytes"],
                    "how": "host wall time inside dist.all_reduce (gloo) / unprofiled step time"}
    return dict(what=what, world_size=world, gpus_used=Ctx(ctx_args).n_gpu, unprofiled=r0["unprofiled"], profiled=r0["profiled"],
                unprofiled_per_rank=[r["unprofiled"] for r in ranks],
                profiled_per_rank=[r["profiled"] for r in ranks],
                trace_busy_per_rank=[r.get("trace_busy") for r in ranks], per_rank=ranks,
                expected_signature=sig, expected=expected)


# ----------------------------------------------------------------------------- driver

def _write_key_averages(out: Path, name: str, prof) -> None:
    text, rows = key_average_rows(prof)
    (out / f"{name}.key_averages.txt").write_text(text)
    (out / f"{name}.key_averages.json").write_text(json.dumps(rows, indent=1))


def run_one(args: argparse.Namespace) -> int:
    """Child process: one scenario, writes its files and <name>.meta.json."""
    import torch

    name = args.scenario
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(args)
    t0 = time.perf_counter()
    if name in MULTI_RANK:
        res = run_multi(args, name)
        files = [f"{name}/rank{r}.json.gz" for r in range(res["world_size"])]
    else:
        res = globals()[f"sc_{name}"](ctx, name)
        prof = res.pop("prof")
        _write_key_averages(out, name, prof)
        res["world_size"] = 1
        res["trace_busy"] = trace_busy(out / f"{name}.json.gz")
        files = [f"{name}.json.gz"]
    unprof = res.pop("unprofiled")
    prof_t = res.pop("profiled")
    meta = {"scenario": name, "what": res.pop("what"), "world_size": res.pop("world_size"),
            "expected_signature": res.pop("expected_signature"), "expected": res.pop("expected"),
            "unprofiled_step_time_s": median(unprof), "unprofiled_step_times_s": unprof,
            "profiled_step_times_s": prof_t, "files": files,
            "profiler": {"activities": ["CPU", "CUDA"] if ctx.cuda else ["CPU"], "record_shapes": True,
                         "schedule": {"wait": WAIT, "warmup": WARMUP, "active": len(prof_t)}},
            "device": torch.cuda.get_device_name(0) if ctx.cuda else "cpu", "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": sys.version.split()[0], "dry_run": ctx.dry,
            "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "scenario_wall_s": time.perf_counter() - t0}
    meta.update(res)
    (out / f"{name}.meta.json").write_text(json.dumps(meta, indent=1, default=str))
    return 0


def _summary_row(out: Path, name: str, status: str) -> str:
    meta_p = out / f"{name}.meta.json"
    if not meta_p.exists():
        return f"{name:22s} {status}"
    meta = json.loads(meta_p.read_text())
    size = sum((out / f).stat().st_size for f in meta["files"] if (out / f).exists())
    busy = meta.get("trace_busy") or {}
    busies = [busy.get("gpu_busy_fraction")] if busy else [b.get("gpu_busy_fraction") if b else None
                                                          for b in meta.get("trace_busy_per_rank", [])]
    bs = "/".join("-" if b is None else f"{100 * b:.1f}%" for b in busies)
    st = meta.get("unprofiled_step_time_s")
    return (f"{name:22s} {status:6s} {size / 1e6:6.2f} MB  busy {bs:14s} step "
            f"{'-' if st is None else f'{st * 1e3:.2f} ms':>10s}  expect {meta['expected_signature']}")


def _tar(out: Path, tar_path: Path | None) -> None:
    if tar_path is None:
        return
    tmp = tar_path.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tf:
        tf.add(out, arcname=out.name)
    tmp.replace(tar_path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes (logic check on the CPU)")
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--skip", nargs="*", default=[])
    p.add_argument("--tar", default=None, help="re-written after every scenario")
    p.add_argument("--deadline-s", type=float, default=510.0, help="start no scenario after this")
    p.add_argument("--timeout-s", type=float, default=150.0, help="per scenario")
    p.add_argument("--scenario", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.scenario:
        return run_one(args)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tar_path = Path(args.tar) if args.tar else None
    names = [n for n in (args.only or SCENARIOS) if n not in args.skip]
    n_gpu = Ctx(args).n_gpu
    start, rows = time.perf_counter(), []
    for name in names:
        left = args.deadline_s - (time.perf_counter() - start)
        if left <= 10:
            rows.append(f"{name:22s} SKIPPED (deadline)")
            continue
        if name in MULTI_RANK and "gloo" not in name and 0 < n_gpu < 2:
            rows.append(f"{name:22s} SKIPPED (NCCL needs 2 GPUs, {n_gpu} here)")
            continue
        cmd = [sys.executable, __file__, "--scenario", name, "--out", str(out), "--device", args.device]
        cmd += ["--dry-run"] if args.dry_run else []
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=min(args.timeout_s, left),
                                  start_new_session=False)
            status = "ok" if proc.returncode == 0 else f"rc={proc.returncode}"
            log = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            status = "TIMEOUT"
            log = f"{exc.stdout or ''}{exc.stderr or ''}"
            log = log.decode(errors="replace") if isinstance(log, bytes) else log
        (out / f"{name}.log").write_text(log)
        if status != "ok":
            print(f"--- {name} {status}\n{log[-2500:]}", flush=True)
        rows.append(_summary_row(out, name, status))
        print(f"[{time.perf_counter() - start:6.1f}s] {rows[-1]}  ({time.perf_counter() - t0:.1f}s)", flush=True)
        _tar(out, tar_path)
    print("\nscenario               status   size     GPU busy (trace)       unprofiled step   expected")
    print("\n".join(rows))
    _tar(out, tar_path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
