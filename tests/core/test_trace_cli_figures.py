"""`gpuperf diagnose` / `gpuperf synth`, the MFU figures and the roofline points of a trace."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.roofline import RooflinePoint
from gpuperf_gui.core.trace.analysis.op_points import op_points
from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures, mfu_figures
from trace_support import loaded

DATA = Path(__file__).resolve().parents[1] / "data"


def test_synth_then_diagnose_json_follows_the_contract(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "lb.json.gz"
    assert main(["synth", "launch_bound", "-o", str(out), "--steps", "3"]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json", "--top", "3"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["diagnosis"]) >= {"signature", "evidence", "fix", "secondary"}
    assert payload["diagnosis"]["signature"] == "launch_bound"
    (rank,) = payload["ranks"]
    assert set(rank) >= {"rank", "file", "device", "steps", "gpu_busy_fraction", "idle_breakdown",
                         "comm_exposed_fraction", "kernel_time_share", "diagnosis"}
    assert set(rank["idle_breakdown"]) == {"host_wait", "kernel_wait", "other"}
    assert len(rank["op_table"]) == 3


def test_diagnose_report_and_errors(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    assert main(["diagnose", str(DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz")]) == 0
    report = capsys.readouterr().out
    assert "Diagnosis:" in report and "Op table" in report
    bad = tmp_path / "x.json"
    bad.write_text("nope")
    assert main(["diagnose", str(bad)]) == 2
    assert "x.json" in capsys.readouterr().err


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_diagnose_of_a_missing_path_or_a_folder_without_traces_is_one_line_exit_2(
        capsys: pytest.CaptureFixture, tmp_path: Path, json_flag: list[str]) -> None:
    (tmp_path / "runs" / "rank0").mkdir(parents=True)   # trace files one level further down
    for path, says in ((tmp_path / "missing", "no such file or folder"),
                       (tmp_path / "runs", "folder holds no .json or .json.gz trace files")):
        assert main(["diagnose", str(path), *json_flag]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"gpuperf: error: {path}: {says}\n" and captured.out == ""


def test_mfu_figures_of_a_comm_bound_job(shared_traces: Path) -> None:
    _, a = loaded(shared_traces / "param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json")
    fig = mfu_figures([a])
    assert isinstance(fig, TraceMfuFigures)
    assert a.comm_exposed_fraction == pytest.approx(0.56, abs=0.01)  # metrics.md §5: up to 56 % exposed
    # the MFU figure also counts CPU waits on collectives while no kernel runs
    assert a.comm_exposed_fraction <= fig.exposed_comm <= a.comm_exposed_fraction + 0.1
    assert sum([fig.exposed_comm, fig.data_stall, fig.launch_gaps, fig.pipeline_bubble, fig.memory_bound]) <= 1.0


def test_roofline_points_of_gemms(shared_traces: Path) -> None:
    rt, _ = loaded(shared_traces / "h200/healthy_gpt_small.json.gz")
    points = [p.roofline_point() for p in op_points(rt)]
    assert points and all(isinstance(p, RooflinePoint) and p.kind == "trace" for p in points)
    lm_head = [p for p in points if p.label.startswith("aten::mm [[16384, 1536], [1536, 50304]]")]
    assert lm_head and lm_head[0].flops == pytest.approx(3 * 2 * 16384 * 1536 * 50304)
    # ceilings.json: bf16 matmul ~710 TFLOP/s on this card; the big GEMMs run at 60-110 % of that
    assert 0.6 * 710e12 < lm_head[0].achieved_flops_per_s < 1.1 * 710e12
