"""World size and device of a trace: recorded (distributedInfo, deviceProperties) or unknown (None in
the MFU figures, null in the CLI JSON), and never the number of rank files loaded."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures, mfu_figures
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace
from trace_support import loaded

DATA = Path(__file__).resolve().parents[1] / "data"


def test_json_device_is_null_when_unknown(capsys: pytest.CaptureFixture) -> None:
    assert main(["diagnose", str(DATA / "backward_thread.json"), "--json"]) == 0  # no deviceProperties
    (rank,) = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["device"] is None


def test_mfu_figures_carry_world_size_and_device(tmp_path: Path) -> None:
    paths = [write_synth_trace("healthy", tmp_path / f"rank{r}.json", steps=3, rank=r, world_size=8)
             for r in range(2)]
    result = Trace(paths, workers=1).result()
    fig = mfu_figures([r.analysis for r in result.ranks])
    assert fig.world_size == 8  # distributedInfo.world_size, not the 2 files loaded
    assert fig.device_name == "Synthetic GPU (H200-like)"
    _, a = loaded(DATA / "backward_thread.json")  # no world_size, no deviceProperties
    fig = mfu_figures([a])
    assert (fig.world_size, fig.device_name, fig.ranks_loaded) == (None, None, 1)  # world size not recorded
    assert TraceMfuFigures(None, 0.0, 0.0, 0.0, 0.0, 0.0).world_size is None  # old constructor still works


def test_one_rank_file_without_distributed_info_does_not_claim_a_world_size(tmp_path: Path) -> None:
    _, a = loaded(DATA / "backward_thread.json")  # no distributedInfo
    fig = mfu_figures([a])
    assert (fig.world_size, fig.ranks_loaded) == (None, 1)
    one_of_eight = write_synth_trace("healthy", tmp_path / "rank3.json", steps=3, rank=3, world_size=8)
    fig = mfu_figures([r.analysis for r in Trace([one_of_eight]).result().ranks])
    assert (fig.world_size, fig.ranks_loaded) == (8, 1)
    assert mfu_figures([]).ranks_loaded == 0
