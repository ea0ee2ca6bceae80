"""A tiny CPU training loop for the `gpuperf profile` tests: three Linear layers and SGD."""
import argparse
import sys
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=12)
parser.add_argument("--marker", default="")
parser.add_argument("--fail-at", type=int, default=-1, help="raise ValueError after this iteration's step")
parser.add_argument("--exit-code", type=int, default=None, help="sys.exit(CODE) after the loop")
parser.add_argument("--forever", action="store_true", help="train until stopped")
parser.add_argument("--stall-after", type=int, default=-1, help="after this iteration's step, sleep 60 s")
args = parser.parse_args()
print(f"train_tiny argv={sys.argv[1:]} marker={args.marker}", flush=True)
print("train_tiny stderr line", file=sys.stderr, flush=True)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
i = 0
while args.forever or i < args.iters:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == args.fail_at:
        raise ValueError(f"planted failure at iteration {i}")
    if i == args.stall_after:
        time.sleep(60)  # a step that never ends in time: Stop must not wait for it
    i += 1
    if args.forever:
        time.sleep(0.02)
print(f"train_tiny done iters={i} loss={loss.item():.4f}", flush=True)
if args.exit_code is not None:
    sys.exit(args.exit_code)
