"""Skinny GEMMs judged by their bytes: the bytes a GEMM of their shapes must move, (M·K + K·N + M·N) x
bytes per element, over their time, against the device's HBM bandwidth (H200: 4.8 TB/s, the datasheet
in resources/devices.toml); graph-replayed calls take the shapes of un-graphed calls of the same kernel;
with neither, only the names tell and the confidence says so."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

DATA = Path(__file__).resolve().parents[1] / "data"
H200_BW = 4.8e12  # bytes/s, H200 SXM datasheet
BF16 = 2


def _events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def _gemm_bytes(m: int, k: int, n: int) -> int:
    return (m * k + k * n + m * n) * BF16


def test_eager_decode_skinny_gemms_move_two_thirds_of_hbm_bandwidth(shared_traces: Path) -> None:
    """decode_bf16 (eager, shapes recorded): its meta gives d_model 2048, 12 layers and 737,472,512
    parameters, which a GPT with a 4·d MLP, vocab 32000 (untied head), 1024 positions and biases
    counts exactly. Batch 1: every MLP GEMM is (1, d) x (d, 4d) or (1, 4d) x (4d, d), the head
    (1, d) x (d, 32000); the call counts are the trace's aten::addmm / aten::mm events."""
    path = shared_traces / "h200" / "decode_bf16.json.gz"
    meta = json.loads(path.with_name("decode_bf16.meta.json").read_text())
    d, layers, vocab, ctx = meta["d_model"], meta["layers"], 32000, 1024
    per_layer = (4 * d * d + 4 * d) + (2 * d * 4 * d + 4 * d + d) + 2 * 2 * d   # attention, MLP, 2 norms
    assert layers * per_layer + 2 * vocab * d + ctx * d + 2 * d == meta["n_params"]
    events = _events(path)
    addmm = sum(e.get("name") == "aten::addmm" for e in events)
    head = sum(e.get("name") == "aten::mm" for e in events)
    expected = addmm // 2 * (_gemm_bytes(1, d, 4 * d) + _gemm_bytes(1, 4 * d, d)) + head * _gemm_bytes(1, d, vocab)
    gemm_us = sum(e["dur"] for e in events if e.get("cat") == "kernel" and e["name"].startswith("nvjet"))
    result = Trace([path], workers=1).result()
    k, dg = result.ranks[0].analysis.kernel_evidence, result.diagnosis
    assert k.skinny_bytes == pytest.approx(expected, rel=1e-6)
    assert not k.skinny_names_only and k.skinny_borrowed_seconds == 0.0
    hbm = expected / (gemm_us / 1e6) / H200_BW
    assert 0.5 < hbm < 0.8  # 66 %: close to bandwidth, memory-bound
    assert dg.signature == "launch_bound"  # kept: the launches, not the GEMMs, set its pace
    line = next(e for e in dg.evidence if "of HBM bandwidth" in e)
    assert f"= {100 * hbm:.0f} % of HBM bandwidth (4.8 TB/s)" in line


def test_graph_replayed_decode_without_any_shapes_rests_on_names() -> None:
    """decode_cudagraph: the graph was captured before the profiler started, so no call of its GEMM
    kernels has shapes. Its meta: 16 layers, d 2048, MLP 5632, 16 tokens per step; each token reads
    every weight once: layers·(4·d² + 3·d·ff) bf16 weights (its expected weight+cache bytes minus the
    1024-position KV cache, 2·layers·1024·d·2 bytes, agree)."""
    path = DATA / "h200" / "decode_cudagraph.json.gz"
    meta = json.loads(path.with_name("decode_cudagraph.meta.json").read_text())
    m = meta["model"]
    weights = m["layers"] * (4 * m["d"] ** 2 + 3 * m["d"] * m["ff"]) * BF16
    cache = 2 * m["layers"] * m["ctx_len"] * m["d"] * BF16
    assert weights + cache == meta["expected"]["weight_and_cache_bytes_per_token"]
    result = Trace([path], workers=1).result()
    k, d = result.ranks[0].analysis.kernel_evidence, result.diagnosis
    assert d.signature == "memory_bound" and d.confidence <= 0.5
    assert k.skinny_names_only and k.skinny_bytes == 0.0
    assert any(e.startswith("only the names tell") for e in d.evidence)
    bound = next(e for e in d.evidence if "could move at most" in e)
    at_most = float(re.search(r"at most ([\d.]+) GB", bound).group(1)) * 1e9
    need = weights * meta["tokens_per_step"]
    assert need <= at_most <= 3 * need  # the GEMMs run at 1/3 .. 1 of HBM bandwidth


def test_graph_replays_take_the_shapes_of_an_eager_call_of_the_same_kernel(tmp_path: Path) -> None:
    """memory_bound_decode_warm: one token decoded eagerly before the graph (each kernel once, with
    shapes (1, 8192) x (8192, 10240), (1, 10240) x (10240, 8192), (1, 8192) x (8192, 8192) in bf16),
    then graph replays of the same three kernels with no shapes."""
    path = write_synth_trace("memory_bound_decode_warm", tmp_path / "t.json.gz", steps=5)
    events = _events(path)
    per_call = {"128x8": _gemm_bytes(1, 8192, 10240), "64x8": _gemm_bytes(1, 10240, 8192),
                "gemv": _gemm_bytes(1, 8192, 8192)}
    first_step = min(e["ts"] + e["dur"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    moved, seconds = 0.0, 0.0
    for e in events:   # the replays after the warm-up step, each with its kernel's bytes per call
        if e.get("cat") == "kernel" and e["ts"] >= first_step:
            key = next((t for t in per_call if t in e["name"]), None)
            if key:
                moved += per_call[key]
                seconds += e["dur"] / 1e6
    result = Trace([path], workers=1).result()
    k, d = result.ranks[0].analysis.kernel_evidence, result.diagnosis
    assert k.skinny_borrowed_seconds == pytest.approx(k.skinny_seconds) and not k.skinny_names_only
    assert k.skinny_bytes_per_s == pytest.approx(moved / seconds, rel=0.02)
    assert d.signature == "memory_bound" and d.confidence > 0.9
    assert any("shapes from un-graphed calls of the same kernels" in e for e in d.evidence)
