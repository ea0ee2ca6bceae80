"""The before/after pairs as one training script, for `gpuperf profile` and for a plain run.

    python3 benchmarks/h200/pair_train.py --case CASE [--iters N] [--item-iters K] [--time-json OUT]
    python3 benchmarks/h200/pair_train.py --calibrate          # prints {"item_iters": K, ...}

Cases (the models and data of benchmarks/h200/record_scenarios.py, same sizes):
  loader0, loader_fed   GPT d=1024 x 6 layers, bf16 autocast, fused AdamW, batch 64 x seq 512, fed by a
                        DataLoader whose __getitem__ does K iterations of plain-Python work (an LCG);
                        loader0: num_workers=0, loader_fed: num_workers=8, pin_memory, prefetch_factor=4,
                        persistent_workers. Pass the same K to both (``--calibrate`` makes it: host time
                        per batch = 1.2 x the GPU's step with batches already on the device).
  eager_tiny, compiled_tiny   GPT d=256 x 4 layers fp32, batch 4 x seq 64, foreach AdamW; compiled_tiny
                        wraps the model in torch.compile (inductor, default mode).
Every step ends with loss.item(), as a loop that logs its loss does.

``--time-json OUT`` (the plain run, no profiler anywhere): times each step with time.perf_counter and
a torch.cuda.synchronize() after it, leaves out the first ``--warm`` steps, and writes the step times
and their median to OUT: the independent reference `gpuperf diff`'s unprofiled speedup is checked
against (benchmarks/h200/check_unprofiled.py).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_scenarios import calibrate_cpu_work, cpu_work, make_gpt  # noqa: E402

CASES = ("loader0", "loader_fed", "eager_tiny", "compiled_tiny")
MID = dict(vocab=8192, d=1024, layers=6, heads=16, seq=512, batch=64)
TINY = dict(vocab=4096, d=256, layers=4, heads=4, seq=64, batch=4)


class TokenDataset:
    """Map-style dataset: each item costs ``n_iter`` LCG iterations of plain Python (picklable)."""

    def __init__(self, n_iter: int, vocab: int, seq: int) -> None:
        self.n_iter, self.vocab, self.seq = n_iter, vocab, seq

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int):
        import torch

        seed = cpu_work(self.n_iter, i)
        return torch.randint(0, self.vocab, (self.seq,), generator=torch.Generator().manual_seed(seed))


def _sync(cuda: bool) -> None:
    import torch

    if cuda:
        torch.cuda.synchronize()


def _mid_model(dev: str):
    import torch

    torch.manual_seed(0)
    model = make_gpt(MID["vocab"], MID["d"], MID["layers"], MID["heads"], MID["seq"]).to(dev)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev == "cuda")


def _train_step(model, opt, batch, amp: bool):
    import torch

    def step() -> float:
        idx, tgt = batch()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    return step


def calibrate(dev: str) -> dict:
    """K for the loader cases: plain-Python host time per batch = 1.2 x the GPU's own step."""
    import torch

    model, opt = _mid_model(dev)
    idx = torch.randint(0, MID["vocab"], (MID["batch"], MID["seq"]), device=dev)
    step = _train_step(model, opt, lambda: (idx, idx.roll(-1, 1)), amp=dev == "cuda")
    times = _timed(step, dev == "cuda", iters=13, warm=3)
    gpu_s = statistics.median(times)
    return {"item_iters": calibrate_cpu_work(1.2 * gpu_s / MID["batch"]), "gpu_step_s_with_device_batches": gpu_s,
            "host_s_per_batch_target": 1.2 * gpu_s}


def make_step(case: str, dev: str, item_iters: int):
    import torch

    if case in ("loader0", "loader_fed"):
        from torch.utils.data import DataLoader

        model, opt = _mid_model(dev)
        workers = 8 if case == "loader_fed" else 0
        kw: dict = dict(batch_size=MID["batch"], num_workers=workers, pin_memory=dev == "cuda")
        if workers:
            kw.update(prefetch_factor=4, persistent_workers=True)
        it = iter(DataLoader(TokenDataset(item_iters, MID["vocab"], MID["seq"]), **kw))

        def batch():
            idx = next(it).to(dev, non_blocking=True)
            return idx, idx.roll(-1, 1)

        return _train_step(model, opt, batch, amp=dev == "cuda")
    torch.manual_seed(0)
    model = make_gpt(TINY["vocab"], TINY["d"], TINY["layers"], TINY["heads"], TINY["seq"]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    fwd = torch.compile(model) if case == "compiled_tiny" else model
    idx = torch.randint(0, TINY["vocab"], (TINY["batch"], TINY["seq"]), device=dev)
    return _train_step(fwd, opt, lambda: (idx, idx.roll(-1, 1)), amp=False)


def _timed(step, cuda: bool, iters: int, warm: int) -> list[float]:
    """Each step's wall time with a device synchronize after it; the first ``warm`` left out."""
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        _sync(cuda)
        times.append(time.perf_counter() - t0)
    return times[warm:] if warm >= 0 else times


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--case", choices=CASES)
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--warm", type=int, default=6, help="plain run: steps left out before timing")
    p.add_argument("--item-iters", type=int, default=0, help="LCG iterations per item (loader cases)")
    p.add_argument("--time-json", default="", help="plain run: write the step times here")
    p.add_argument("--calibrate", action="store_true")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    if args.calibrate:
        print(json.dumps(calibrate(args.device)))
        return 0
    if args.case in ("loader0", "loader_fed") and args.item_iters <= 0:
        p.error("--item-iters is needed for the loader cases (use --calibrate)")
    step = make_step(args.case, args.device, args.item_iters)
    if not args.time_json:
        for _ in range(args.iters):  # gpuperf profile ends the script once its steps are recorded
            step()
        return 0
    t0 = time.perf_counter()
    every = _timed(step, args.device == "cuda", args.iters, warm=-1)
    times = every[args.warm:]
    Path(args.time_json).write_text(json.dumps({
        "case": args.case, "step_times_s": times, "median_s": statistics.median(times), "warm": args.warm,
        "all_step_times_s": every,
        "iters": args.iters, "item_iters": args.item_iters, "wall_s": time.perf_counter() - t0,
        "method": "plain run, no profiler: time.perf_counter around each step, torch.cuda.synchronize() "
                  "after it, first --warm steps left out"}))
    print(f"{args.case}: median {1e3 * statistics.median(times):.2f} ms over {len(times)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
