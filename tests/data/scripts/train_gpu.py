"""A training loop with a known bottleneck, for `gpuperf profile` on a GPU (tests and the H200 check).

--mode fed:     8 x Linear(4096, 4096) in bf16 autocast on 8192 rows already on the device; the GPU is
                busy nearly all of every step (expected diagnosis: healthy).
--mode starved: the same model, but each batch is first "preprocessed" in plain Python on the host for
                --host-ms (default 1.5 x the GPU's step time, measured at start) and then copied to
                the device; the GPU idles while the host works (expected: data_starved).
--mode launch:  a tiny model (32 x Linear(64, 64), 8 rows): thousands of microsecond kernels whose
                launches the host cannot issue fast enough (expected: launch_bound).
Without CUDA it runs on the CPU with small sizes (to test the script itself).
"""
import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=("fed", "starved", "launch"), default="fed")
parser.add_argument("--iters", type=int, default=30)
parser.add_argument("--host-ms", type=float, default=None)
args = parser.parse_args()

cuda = torch.cuda.is_available()
dev = "cuda" if cuda else "cpu"
width, layers, rows = (4096, 8, 8192) if cuda else (128, 4, 256)
if args.mode == "launch":
    width, layers, rows = 64, 32, 8
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)]).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=args.mode != "launch")
x_dev = torch.randn(rows, width, device=dev)
x_host = torch.randn(rows, width).pin_memory() if cuda else torch.randn(rows, width)


def train_step(x: torch.Tensor) -> float:
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=cuda and args.mode != "launch"):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def python_preprocess(ms: float) -> None:
    """Plain-Python work the profiler cannot see (tokenising, augmenting ...)."""
    end, s = time.perf_counter() + ms / 1e3, 1
    while time.perf_counter() < end:
        for _ in range(1000):
            s = (s * 1103515245 + 12345) & 0x7FFFFFFF


def forward_backward(x: torch.Tensor) -> float:
    """The step without optimizer.step(): calibration must not count as profiled steps."""
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=cuda):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss.item()


host_ms = args.host_ms
if args.mode == "starved" and host_ms is None:  # 1.5 x the GPU's own step time
    for _ in range(3):
        forward_backward(x_dev)
    t0 = time.perf_counter()
    for _ in range(5):
        forward_backward(x_dev)
    host_ms = 1.5 * (time.perf_counter() - t0) / 5 * 1e3
print(f"train_gpu mode={args.mode} device={dev} host_ms={host_ms}", flush=True)
for i in range(args.iters):
    if args.mode == "starved":
        python_preprocess(host_ms)
        loss = train_step(x_host.to(dev, non_blocking=True))
    else:
        loss = train_step(x_dev)
print(f"train_gpu done iters={args.iters} loss={loss:.4g}", flush=True)
