"""The op table against torch's own key_averages() tables saved beside the H200 traces."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.optable import op_table
from trace_support import loaded

_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def _seconds(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    assert m, text
    return float(m.group(1)) * _UNIT[m.group(2)]


def parse_key_averages(path: Path) -> list[dict]:
    """Rows of `prof.key_averages().table(...)`: name (55-char column), self/total CUDA, calls."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("-") or "Self CPU %" in line or "time total" in line or not line.strip():
            continue
        name, cols = line[:55].strip(), line[55:].split()
        rows.append({"name": name, "self_cpu": _seconds(cols[1]), "self_dev": _seconds(cols[5]),
                     "dev_total": _seconds(cols[7]), "calls": int(cols[9])})
    return rows


def _matches(ref: dict, ours: list) -> list:
    name = ref["name"]
    if name.endswith("..."):
        cands = [r for r in ours if r.name.startswith(name[:-3])]
    else:
        cands = [r for r in ours if r.name == name]
    kind = "device" if ref["self_cpu"] == 0 and ref["self_dev"] > 0 else "host"
    return [r for r in cands if r.kind == kind] or cands


@pytest.mark.parametrize("name", ["healthy_gpt_small", "launch_bound_tiny", "memory_bound_visible"])
def test_kernel_rows_within_1_percent_and_top10_ops_within_5_percent(shared_traces: Path, name: str) -> None:
    rt, _ = loaded(shared_traces / f"h200/{name}.json.gz")
    ours = op_table(rt)
    reference = parse_key_averages(shared_traces / f"h200/{name}.key_averages.txt")
    kernel_rows = [r for r in reference if r["self_cpu"] == 0 and r["self_dev"] > 0
                   and not r["name"].startswith(("ProfilerStep", "Optimizer"))]
    assert kernel_rows
    for ref in kernel_rows:
        assert any(r.calls == ref["calls"] and r.self_device_s == pytest.approx(ref["self_dev"], rel=0.01)
                   for r in _matches(ref, ours)), ref
    for ref in reference[:10]:
        assert any(r.device_total_s == pytest.approx(ref["dev_total"], rel=0.05) for r in _matches(ref, ours)), ref
