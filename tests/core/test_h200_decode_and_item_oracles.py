"""Two H200 recordings the rules were not built on (tests/data/h200, SOURCES.md runs 5-6): a
batch-1 bf16 decode replayed as CUDA graphs, and a training loop that reads its loss with .item()
after each micro-batch. Expected verdicts and counts come from their meta.json (the recorder)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from gpuperf_gui.core.trace.session.trace import Trace

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _meta(name: str) -> dict:
    return json.loads((H200 / f"{name}.meta.json").read_text())


def test_cuda_graph_decode_is_memory_bound_on_skinny_gemms() -> None:
    meta = _meta("decode_cudagraph")
    result = Trace([H200 / "decode_cudagraph.json.gz"], workers=1).result()
    d, a = result.diagnosis, result.ranks[0].analysis
    assert d.signature == meta["expected_signature"] == "memory_bound"
    assert d.confidence <= 0.5  # the evidence is kernel names: no shapes under graph replay
    assert any("skinny GEMMs" in e for e in d.evidence)
    assert any(e.startswith("no shapes for 100 % of GPU time: CUDA graph replay") for e in d.evidence)
    # One replay per token (meta tokens_per_step) in each ProfilerStep but the first (warm-up, left
    # out of the window), counted in the JSON.
    events = json.loads(gzip.decompress((H200 / "decode_cudagraph.json.gz").read_bytes()))["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"))
    launches = [e for e in events if e.get("name") == "cudaGraphLaunch"
                and any(s <= e["ts"] < t for s, t in steps[1:])]
    assert len(launches) == meta["tokens_per_step"] * (len(steps) - 1) == a.launch.graph_launches


def test_item_per_micro_batch_is_host_sync_bound() -> None:
    meta = _meta("item_per_microbatch")
    result = Trace([H200 / "item_per_microbatch.json.gz"], workers=1).result()
    d, a = result.diagnosis, result.ranks[0].analysis
    assert d.signature == meta["expected_signature"] == "host_sync_bound"
    assert ".item()" in d.fix
    steady = sum(not s.warmup for s in a.steps)
    c = a.idle_causes
    assert c.sync_stalls == meta["micro_batches"] * steady  # a stall after each micro-batch's .item()
    assert c.sync_issuers == [("aten::item", c.sync_stalls)]
    # The GPU idles about the host work after each sync: meta's expected idle share, profiled (looser).
    assert 0.3 <= c.stall_after_sync <= meta["expected"]["gpu_idle_fraction_expected"] + 0.05
