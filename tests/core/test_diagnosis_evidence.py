"""Diagnosis verdict edges: idle or GPU-less traces are inconclusive (never healthy), a GPU idle on host
work is host-bound, and pipeline-bubble evidence leads with the compute streams' idle share."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.diagnosis.diagnose import diagnose_rank
from gpuperf_gui.core.trace.diagnosis.signatures import SIGNATURES
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace
from trace_support import loaded


INCONCLUSIVE = {
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": "no GPU activity",
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz": "no GPU activity",
    "hta/distributed_info_unavailable/distributed_info_not_found.json.gz": "no GPU activity",
    "hta/triton_example/triton_example.json.gz": "too little GPU activity",  # 1 kernel, 2 µs
}


@pytest.mark.parametrize("rel, why", sorted(INCONCLUSIVE.items()))
def test_idle_or_gpu_less_traces_are_inconclusive_never_healthy(shared_traces: Path, rel: str, why: str) -> None:
    _, a = loaded(shared_traces / rel)
    d = diagnose_rank(a)
    assert d.signature == "inconclusive" and d.confidence == 0.0, d.evidence
    assert why in d.evidence[0]


def test_a_gpu_idle_on_host_work_is_host_bound_not_inconclusive(shared_traces: Path) -> None:
    """alexnet: GPU busy 0.5 %, host wait 100 %: the host runs cuDNN autotuning (aten::cudnn_convolution
    for seconds) and launches nothing. Never `inconclusive` when the idle is clearly host wait (docs/signatures.md)."""
    _, a = loaded(shared_traces / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz")
    d = diagnose_rank(a)
    assert d.signature == "host_bound" and d.confidence <= 0.5, d.evidence
    assert re.match(r"GPU (compute )?idle (99|100) % of the step", d.evidence[0]), d.evidence  # busy 0.5 %
    assert any("no data tell" in e for e in d.evidence)
    assert any("aten::cudnn_convolution" in e for e in d.evidence)


def test_inconclusive_is_a_documented_signature_and_a_synthetic_scenario(tmp_path: Path) -> None:
    assert "inconclusive" in SIGNATURES
    path = write_synth_trace("inconclusive", tmp_path / "cpu.json", steps=3)
    assert Trace([path]).result().diagnosis.evidence[0].startswith("no GPU activity in this trace")


def test_pipeline_bubble_evidence_leads_with_compute_idle(tmp_path: Path) -> None:
    path = write_synth_trace("pipeline_bubble", tmp_path / "pb.json", steps=4)
    result = Trace([path]).result()
    a, d = result.ranks[0].analysis, result.diagnosis
    assert d.signature == "pipeline_bubble"
    assert d.evidence[0].startswith(f"compute streams idle {100 * (1 - a.compute_busy_fraction):.0f} %")
    assert a.gpu_busy_fraction > 0.99 and 1 - a.compute_busy_fraction > 0.4
