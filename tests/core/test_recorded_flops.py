"""FLOPs a profiler recorded (``with_flops=True`` writes an ``flops`` arg) reach the op's lane row, by
both decoders; ops without one get none recorded (NaN) unless their shapes give an estimate."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.ingest.scanner import scan
from gpuperf_gui.core.trace.ingest.load import load_rank


@pytest.mark.parametrize("scanner", [True, False])
def test_recorded_flops_land_on_their_ops(tmp_path: Path, scanner: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "ENABLED", scanner)
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0,
               "args": {"flops": 1000 * i} if i % 2 else {}} for i in range(6)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    rt = load_rank(path)
    (lane,) = rt.lanes
    names = [rt.strings[i] for i in lane.name_id.tolist()]
    flops = dict(zip(names, lane.flops.tolist()))
    assert [flops[f"op{i}"] for i in (1, 3, 5)] == [1000.0, 3000.0, 5000.0]   # as recorded
    assert all(np.isnan(flops[f"op{i}"]) for i in (0, 2, 4))                   # none recorded
