"""Diagnosis labels on real traces (the issue's expected list), synthetic scenarios, multi-rank."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.engine.api import Progress, TraceResult
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.diagnosis.diagnose import THRESHOLDS, diagnose_rank
from gpuperf_gui.core.trace.diagnosis.signatures import SIGNATURES
from gpuperf_gui.core.trace.synthetic.synth import (SCENARIO_SIGNATURE, SCENARIOS, STRAGGLER_DELAY_US, STRAGGLER_RANK,
                                                    write_synth_trace)
from trace_support import loaded

EXPECTED = {
    "h200/healthy_gpt_small.json.gz": "healthy",
    "h200/launch_bound_tiny.json.gz": "launch_bound",
    "h200/decode_bf16.json.gz": "launch_bound",
    "h200/memory_bound_visible.json.gz": "memory_bound",
    "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz": "data_starved",
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz": "launch_bound",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": "memory_bound",
    # a MoE decode replayed as one HIP graph: 68 % of kernel time in 16-row GEMM tiles (skinny), no shapes
    "tracelens/inference/vllm_decode_full/graph_execution.json.gz": "memory_bound",
}


@pytest.mark.parametrize("rel, signature", sorted(EXPECTED.items()))
def test_expected_labels(shared_traces: Path, rel: str, signature: str) -> None:
    _, a = loaded(shared_traces / rel)
    d = diagnose_rank(a)
    assert d.signature == signature, (d.evidence, d.scores)
    assert d.evidence and d.fix


def test_more_dataloader_workers_is_not_data_starved(shared_traces: Path) -> None:
    _, a = loaded(shared_traces / "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    assert diagnose_rank(a).signature != "data_starved"


def test_dlrm_job_is_comm_bound(shared_traces: Path) -> None:
    result = Trace([shared_traces / "param/dlrm_kineto"], workers=1).result()
    assert result.diagnosis.signature == "comm_bound"
    assert [r.analysis.rank for r in result.ranks] == list(range(8))
    # metrics.md §5: exposed NCCL 13-56 % of the step per rank
    exposed = [r.analysis.comm_exposed_fraction for r in result.ranks]
    assert min(exposed) == pytest.approx(0.13, abs=0.01) and max(exposed) == pytest.approx(0.56, abs=0.01)
    assert result.multi_rank.step_time_skew_s is not None


def test_late_collective_start_without_a_wait_is_not_a_straggler(tmp_path: Path) -> None:
    """Shifting one rank's kernels by 2 ms without the others waiting for it is a clock offset,
    not a straggler: nobody's collective lasts longer because of it."""
    for rank in range(3):
        write_synth_trace("comm_bound", tmp_path / f"rank{rank}.json", steps=3, seed=rank, rank=rank)
    late = tmp_path / "rank2.json"
    data = json.loads(late.read_text())
    for e in data["traceEvents"]:
        if e.get("ph") == "X" and e.get("tid") == 20:
            e["ts"] += 2000.0
    late.write_text(json.dumps(data))
    result = Trace([tmp_path], workers=1).result()
    assert result.multi_rank.collective_start_lag_s[2] == pytest.approx(2e-3, rel=0.05)
    assert result.multi_rank.stragglers == []
    assert result.diagnosis.signature == "comm_bound"


def test_straggler_job_names_the_late_rank_and_points_the_fix_at_it(tmp_path: Path) -> None:
    folder = write_synth_trace("straggler", tmp_path / "job", steps=5)
    result = Trace([folder], workers=1).result()
    d = result.diagnosis
    assert d.signature == "straggler" and d.ranks == [STRAGGLER_RANK]
    assert result.multi_rank.stragglers == [STRAGGLER_RANK]
    # The generator delays rank 2's batch by STRAGGLER_DELAY_US every step.
    assert result.multi_rank.collective_start_lag_s[STRAGGLER_RANK] == pytest.approx(STRAGGLER_DELAY_US / 1e6, rel=0.05)
    assert f"rank {STRAGGLER_RANK} arrives late" in d.evidence[0]
    assert "host-bound (data_starved)" in d.evidence[2]
    assert f"Rank {STRAGGLER_RANK}:" in d.fix and "DataLoader" in d.fix
    # The others' per-rank verdict is the symptom (comm_bound); the late rank's row is the straggler,
    # with its own lane's cause of lateness (data_starved here: the HtoD copy after the stall) kept.
    per_rank = {r.analysis.rank: r.diagnosis for r in result.ranks}
    assert per_rank[STRAGGLER_RANK].signature == "straggler" and per_rank[STRAGGLER_RANK].secondary[0] == "data_starved"
    per_rank = {r: d.signature for r, d in per_rank.items()}
    assert {per_rank[r] for r in per_rank if r != STRAGGLER_RANK} == {"comm_bound"}


def test_pipeline_stages_are_never_stragglers(tmp_path: Path) -> None:
    """Stage 1 of a pipeline starts its send/recv later by design."""
    for rank in range(2):
        path = write_synth_trace("pipeline_bubble", tmp_path / f"rank{rank}.json", steps=4, rank=rank, world_size=2)
        if rank == 1:
            data = json.loads(path.read_text())
            for e in data["traceEvents"]:
                if e.get("ph") == "X" and e.get("tid") == 20:
                    e["ts"] += 3000.0
            path.write_text(json.dumps(data))
    result = Trace([tmp_path], workers=1).result()
    assert result.multi_rank.pipeline and result.multi_rank.stragglers == []
    assert result.diagnosis.signature != "straggler"


def test_cli_report_names_the_late_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from gpuperf_gui.cli import main
    folder = write_synth_trace("straggler", tmp_path / "job", steps=4)
    assert main(["diagnose", str(folder), "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "Diagnosis: straggler" in out and f"Late rank: {STRAGGLER_RANK}" in out
    assert f"{STRAGGLER_RANK}  Synthetic" in out.split("Diagnosis")[0] and "<- late (straggler)" in out
    assert "Fix to try first: Fix the late rank" in out


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("seed", [0, 7])
def test_synthetic_scenarios_are_diagnosed_as_themselves(tmp_path: Path, scenario: str, seed: int) -> None:
    path = write_synth_trace(scenario, tmp_path / f"{scenario}.json.gz", steps=4, seed=seed)
    assert Trace([path], workers=1).result().diagnosis.signature == SCENARIO_SIGNATURE[scenario]


def test_thresholds_live_in_one_table() -> None:
    assert set(SCENARIO_SIGNATURE.values()) == set(SIGNATURES)
    assert THRESHOLDS["comm_exposed_min"] == 0.10  # TB plugin: communication > 10 %
    assert THRESHOLDS["dataloader_min"] == 0.05  # TB plugin: DataLoader > 5 %


def test_progress_then_result_and_cancel(tmp_path: Path) -> None:
    paths = [write_synth_trace("healthy", tmp_path / f"rank{i}.json", rank=i) for i in range(2)]
    items = list(Trace(paths, workers=1).iter_result(threading.Event()))
    assert isinstance(items[-1], TraceResult)
    fractions = [i.fraction for i in items if isinstance(i, Progress)]
    assert fractions == sorted(fractions) and fractions[0] == 0.0
    stop = threading.Event()
    stop.set()
    assert not any(isinstance(i, TraceResult) for i in Trace(paths, workers=1).iter_result(stop))
