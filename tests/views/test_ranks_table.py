"""The diagnosis panel's ranks table: exposed communication counts host-side (gloo) collectives too."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.views.trace.panels import _comm_wait, _ranks_table_html

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def test_gloo_ranks_show_the_exposed_communication_of_the_recording() -> None:
    """ddp_straggler_gloo: the recording measured rank 0's exposed communication as 1 - (the same step
    without DDP) / (the DDP step) = 0.899 (meta.json); its collectives are gloo's host spans, so the
    GPU-stream figure alone reads 0 and the table must not."""
    meta = json.loads((H200 / "ddp_straggler_gloo.meta.json").read_text())
    ranks = Trace([H200 / "ddp_straggler_gloo"]).result().to_json()["ranks"]
    rank0 = next(r for r in ranks if r["rank"] == 0)
    assert rank0["comm_exposed_fraction"] == pytest.approx(0.0, abs=0.01)   # no NCCL kernels
    assert _comm_wait(rank0) == pytest.approx(meta["expected"]["comm_exposed_fraction_rank0"], abs=0.05)
    html = _ranks_table_html(ranks, late=[1], lag_us={1: 40.1e3})
    assert f"{100 * _comm_wait(rank0):.1f} %" in html
