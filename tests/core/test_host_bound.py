"""host_bound: a GPU idle on host work that launches nothing and has no data tell is named for what
the lanes show, never data_starved with DataLoader advice it has no evidence for."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _names(path: Path) -> list[str]:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return [e.get("name", "") for e in events if e.get("ph") == "X"]


def test_python_work_after_the_launches_is_host_bound(tmp_path: Path) -> None:
    """synth._step_host_bound: 6 GEMMs of 600 µs queued, then 6 ms of Python: the GPU idles about
    6 - 3.6 = 2.4 ms of each ~6 ms step (40 %), with no sync, DataLoader or copy."""
    result = Trace([write_synth_trace("host_bound", tmp_path / "t.json", steps=5)], workers=1).result()
    d = result.diagnosis
    assert d.signature == "host_bound" and d.confidence <= 0.5
    assert d.loss_fraction == pytest.approx(2.4 / 6.0, abs=0.03)
    assert "with_stack=True" in d.fix and "DataLoader" not in d.fix


def test_losses_kept_on_the_gpu_with_python_work_between_micro_batches_is_host_bound() -> None:
    """pairs/item_none: the .item() pair's after-trace. Per its meta the host does 43.6 ms of Python per
    step that launches nothing; the trace has no DataLoader span, no HtoD copy and one .item() per step,
    so the GPU idle in that work is host-bound (unprofiled the step is 75.95 ms against 4 x 13.6 ms of
    micro-batch GPU time: the host's launches plus its Python outlast the GPU's queue)."""
    path = H200 / "pairs" / "item_none.json.gz"
    meta = json.loads((H200 / "pairs" / "item_none.meta.json").read_text())
    names = _names(path)
    assert not any("DataLoader" in n or "HtoD" in n for n in names)
    result = Trace([path], workers=1).result()
    d, a = result.diagnosis, result.ranks[0].analysis
    assert d.signature == "host_bound", d.evidence
    assert "no data tell" in " ".join(d.evidence) and "DataLoader" not in d.fix
    idle_per_step_s = a.idle_causes.host_stall * a.step_time_median_s
    assert 0.1 * meta["expected"]["host_work_s_per_step"] < idle_per_step_s <= meta["expected"]["host_work_s_per_step"]


def test_reduce_overhead_compile_is_host_bound_between_graph_replays() -> None:
    """compiled_tiny_cudagraphs (torch.compile mode="reduce-overhead"): 8 cudaGraphLaunch calls in the
    file (2 per step), no DataLoader, no HtoD copy: the host's time between replays sets the pace."""
    path = H200 / "compiled_tiny_cudagraphs.json.gz"
    names = _names(path)
    assert names.count("cudaGraphLaunch") == 8 and not any("DataLoader" in n or "HtoD" in n for n in names)
    d = Trace([path], workers=1).result().diagnosis
    assert d.signature == "host_bound", d.evidence
    assert any("replays CUDA graphs" in e for e in d.evidence) and "already replays CUDA graphs" in d.fix


def test_try_first_follows_the_host_signatures(capsys: pytest.CaptureFixture) -> None:
    """The "Try first" projection is the diagnosis's own fix: host_sync_bound's is no host syncs, an upper
    bound of the pair's unprofiled speedup (pairs/pairs.json: item_per_microbatch -> item_none 1.289x);
    host_bound's is the host stalls removed, in its own words (never "DataLoader workers")."""
    from gpuperf_gui.cli import main

    pairs = json.loads((H200 / "pairs" / "pairs.json").read_text())["pairs"]
    measured = next(p["unprofiled_speedup"] for p in pairs if p["cause"] == "host_syncs")
    assert main(["diagnose", "--top", "0", str(H200 / "item_per_microbatch.json.gz")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Try first"))
    bound = float(line.split("projected <= ")[1].split("x")[0])
    assert line.startswith("Try first: fix: no host syncs") and measured <= bound < 1.5 * measured
    assert main(["diagnose", "--top", "0", str(H200 / "pairs" / "item_none.json.gz")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Try first"))
    assert line.startswith("Try first: fix: host work off the step") and "DataLoader" not in line.split("—")[0]
