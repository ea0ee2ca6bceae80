"""How tests/data/cpu_nested was made (torch 2.13.0+cpu, this machine): `python record.py plain` and
`python record.py stack` write nested_<v>.json and print key_averages (saved as the .txt files)."""
import sys, torch
from torch.profiler import profile, ProfilerActivity, record_function
stack = sys.argv[1] == "stack"
x = torch.randn(256, 256)
w = torch.randn(256, 256)
def step():
    with record_function("block"):
        for _ in range(3):
            y = x.sum()          # aten::sum -> aten::sum
            z = x.sum(dim=0)
        with record_function("block"):   # same-name annotation nested, only child
            a = torch.mm(x, w)
        b = torch.nn.functional.linear(x, w)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=stack) as prof:
    for _ in range(3):
        step()
prof.export_chrome_trace(f"nested_{sys.argv[1]}.json")
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=-1, max_name_column_width=55))
