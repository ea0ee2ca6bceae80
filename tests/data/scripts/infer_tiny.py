"""A tiny CPU inference loop (no optimizer) for the `gpuperf profile` tests."""
import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=1.0)
args = parser.parse_args()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).eval()
x = torch.randn(16, 64)
n, t0 = 0, time.perf_counter()
with torch.no_grad():
    while time.perf_counter() - t0 < args.seconds:
        x = torch.tanh(model(x))
        n += 1
        time.sleep(0.005)
print(f"infer_tiny done batches={n}", flush=True)
