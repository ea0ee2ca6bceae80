"""Diagnosis labels on real traces (the issue's expected list), synthetic scenarios, multi-rank."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.api import Progress, TraceResult, analyse_paths, iter_load_and_analyse
from gpuperf_gui.core.trace.diagnose import SIGNATURES, THRESHOLDS, diagnose_rank
from gpuperf_gui.core.trace.synth import SCENARIOS, write_synth_trace
from trace_support import loaded

EXPECTED = {
    "h200/healthy_gpt_small.json.gz": "healthy",
    "h200/launch_bound_tiny.json.gz": "launch_bound",
    "h200/decode_bf16.json.gz": "launch_bound",
    "h200/memory_bound_visible.json.gz": "memory_bound",
    "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz": "data_starved",
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz": "launch_bound",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": "memory_bound",
    "tracelens/inference/vllm_decode_full/graph_execution.json.gz": "healthy",
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
    result = analyse_paths([shared_traces / "param/dlrm_kineto"], workers=1)
    assert result.diagnosis.signature == "comm_bound"
    assert [r.analysis.rank for r in result.ranks] == list(range(8))
    # metrics.md §5: exposed NCCL 13-56 % of the step per rank
    exposed = [r.analysis.comm_exposed_fraction for r in result.ranks]
    assert min(exposed) == pytest.approx(0.13, abs=0.01) and max(exposed) == pytest.approx(0.56, abs=0.01)
    assert result.multi_rank.step_time_skew_s is not None


def test_straggler_is_the_rank_whose_collectives_start_late(tmp_path: Path) -> None:
    for rank in range(3):
        write_synth_trace("comm_bound", tmp_path / f"rank{rank}.json", steps=3, seed=rank, rank=rank)
    import json
    late = tmp_path / "rank2.json"
    data = json.loads(late.read_text())
    for e in data["traceEvents"]:
        if e.get("ph") == "X" and e.get("tid") == 20:
            e["ts"] += 2000.0  # rank 2's collectives start 2 ms late
    late.write_text(json.dumps(data))
    result = analyse_paths([tmp_path], workers=1)
    assert result.multi_rank.stragglers == [2]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("seed", [0, 7])
def test_synthetic_scenarios_are_diagnosed_as_themselves(tmp_path: Path, scenario: str, seed: int) -> None:
    path = write_synth_trace(scenario, tmp_path / f"{scenario}.json.gz", steps=4, seed=seed)
    assert analyse_paths([path]).diagnosis.signature == scenario


def test_thresholds_live_in_one_table() -> None:
    assert set(SCENARIOS) == set(SIGNATURES)
    assert THRESHOLDS["comm_exposed_min"] == 0.10  # TB plugin: communication > 10 %
    assert THRESHOLDS["dataloader_min"] == 0.05  # TB plugin: DataLoader > 5 %


def test_progress_then_result_and_cancel(tmp_path: Path) -> None:
    paths = [write_synth_trace("healthy", tmp_path / f"rank{i}.json", rank=i) for i in range(2)]
    items = list(iter_load_and_analyse(paths, threading.Event(), workers=1))
    assert isinstance(items[-1], TraceResult)
    fractions = [i.fraction for i in items if isinstance(i, Progress)]
    assert fractions == sorted(fractions) and fractions[0] == 0.0
    stop = threading.Event()
    stop.set()
    assert not any(isinstance(i, TraceResult) for i in iter_load_and_analyse(paths, stop, workers=1))
