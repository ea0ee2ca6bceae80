"""host_sync_bound (GPU idle after .item()/.cpu() syncs), packed skinny GEMMs of a graph-replayed
decode (memory_bound on weak evidence), graph launches begun before the window, close calls."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.analysis.kernel_evidence import is_skinny_gemm
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

DATA = Path(__file__).resolve().parents[1] / "data"
VLLM = DATA / "shared_traces" / "tracelens" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"


def test_item_after_each_micro_batch_is_host_sync_bound(tmp_path: Path) -> None:
    """The scenario reads the loss with .item() after each of 4 micro-batches, then spends 1.5 ms in
    Python without launching (synth._step_host_sync_bound)."""
    result = Trace([write_synth_trace("host_sync_bound", tmp_path / "t.json", steps=5)], workers=1).result()
    d, c = result.diagnosis, result.ranks[0].analysis.idle_causes
    assert d.signature == "host_sync_bound"
    assert ".item()" in d.fix and "non_blocking" in d.fix and "off the step" in d.fix
    steps = sum(not s.warmup for s in result.ranks[0].analysis.steps)
    assert c.sync_stalls == 4 * steps and c.sync_issuers == [("aten::item", 4 * steps)]
    assert c.sync_idle_median_s == pytest.approx(1.5e-3, rel=0.05)
    assert "4.0 blocking syncs per step, 4.0 followed by a stall" in d.evidence[0]


@pytest.mark.parametrize(("path", "signature"), [
    (DATA / "h200" / "compiled_tiny_cudagraphs.json.gz", "host_bound"),  # .item() per step; host overhead sets the pace
    (DATA / "h200" / "data_starved_python.json.gz", "data_starved"),      # the stall ends with the batch's HtoD copy
    (DATA / "h200" / "eager_small.json.gz", "launch_bound"),
])
def test_traces_with_syncs_limited_by_something_else_keep_their_verdicts(path: Path, signature: str) -> None:
    d = Trace([path], workers=1).result().diagnosis
    assert d.signature == signature


def test_healthy_loop_with_one_sync_per_step_stays_healthy(tmp_path: Path) -> None:
    result = Trace([write_synth_trace("healthy", tmp_path / "t.json", steps=5)], workers=1).result()
    assert result.diagnosis.signature == "healthy"


@pytest.mark.parametrize(("name", "skinny"), [
    ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_bias_TNT", True), ("nvjet_sm90_tst_128x8_64x8_2x1_v_bz_splitK_TNT", True),
    ("void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>", True),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", True),
    ("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", False),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel", False),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN", False),
])
def test_skinny_gemm_names(name: str, skinny: bool) -> None:
    assert is_skinny_gemm(name) is skinny


def test_graph_replayed_decode_of_skinny_gemms_is_memory_bound_on_weak_evidence(tmp_path: Path) -> None:
    path = write_synth_trace("memory_bound_decode_graph", tmp_path / "t.json", steps=5)
    result = Trace([path], workers=1).result()
    d, a = result.diagnosis, result.ranks[0].analysis
    assert d.signature == "memory_bound" and d.confidence <= 0.5
    assert any("skinny GEMMs" in e for e in d.evidence)
    assert any(e.startswith("no shapes for 100 % of GPU time: CUDA graph replay") for e in d.evidence)
    assert a.launch.graph_launches == 4  # one replay per step; the first of 5 steps is warm-up


def test_graph_launch_before_the_window_is_counted() -> None:
    """vLLM's decode graph: one hipGraphLaunch, 6.9 ms before the first kernel (read from the JSON)."""
    events = json.loads(gzip.decompress(VLLM.read_bytes()))["traceEvents"]
    launches = [e for e in events if e.get("name") == "hipGraphLaunch"]
    first_kernel = min(e["ts"] for e in events if e.get("cat") == "kernel")
    assert len(launches) == 1 and launches[0]["ts"] < first_kernel
    result = Trace([VLLM], workers=1).result()
    assert result.ranks[0].analysis.launch.graph_launches == 1
    assert result.diagnosis.signature == "memory_bound" and result.diagnosis.confidence <= 0.5


def test_close_call_names_both_causes(shared_traces: Path) -> None:
    """DLRM, 8 ranks: 3 ranks comm-bound, 5 launch-bound; the two causes' mean losses differ by < 3 points."""
    d = Trace([shared_traces / "param" / "dlrm_kineto"], workers=1).result().diagnosis
    assert d.close_call == ["comm_bound", "launch_bound"] and d.headline == "comm_bound ~ launch_bound"
    assert d.confidence <= 0.5 and d.evidence[0].startswith("close call:") and d.secondary[0] == "launch_bound"


def test_eager_decode_stays_launch_bound_and_names_its_skinny_gemms(shared_traces: Path) -> None:
    """The eager H200 bf16 decode (batch 1): 88 % idle between launches; its GEMMs are 64x8/256x8 tiles."""
    d = Trace([shared_traces / "h200" / "decode_bf16.json.gz"], workers=1).result().diagnosis
    assert d.signature == "launch_bound"
    assert any("skinny GEMMs" in e and "memory-bound" in e for e in d.evidence)


def test_a_one_file_trace_keeps_its_rank_close_call(shared_traces: Path) -> None:
    """DLRM's worker 4 alone: launch- and comm-bound within 3 points of the step on that rank, so the
    trace's verdict, which is the rank's, names both (as its first evidence line already says)."""
    folder = shared_traces / "param" / "dlrm_kineto"
    result = Trace(sorted(folder.glob("worker4_*.json")), workers=1).result()
    rank = result.ranks[0].diagnosis
    assert abs(rank.scores["launch_bound"] - rank.scores["comm_bound"]) < 0.03
    d = result.diagnosis
    assert d.close_call == rank.close_call == ["launch_bound", "comm_bound"]
    assert d.headline == "launch_bound ~ comm_bound" and d.evidence[0].startswith("close call:")
