"""A late rank over NCCL: the others' all-reduce kernels spin until it joins (synthetic jobs of 2
and 8 ranks, the late rank not always rank 1), and the real H200 NCCL jobs keep their verdicts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import _NCCL_NAMES, write_synth_trace
from gpuperf_gui.core.trace.synthetic.synth_nccl import plan

NCCL = Path(__file__).resolve().parents[1] / "data" / "shared_traces" / "h200_nccl"


def _planned_lag_us(world: int, late: int, steps: int, sync: str) -> float:
    """The lag by construction: per recorded step, the late rank's start of the all-reduce the
    others spin longest in, minus the others' median start (the plan, not the rule's reading)."""
    job = plan(world, late, steps + 1, sync, _NCCL_NAMES)
    lags = []
    for s in range(1, steps + 1):
        comm = [[x for x in job[r][s][0] if x.stream == _NCCL_NAMES.comm_stream] for r in range(world)]
        spread = [max(c[b].end_us - c[b].start_us for c in comm) - min(c[b].end_us - c[b].start_us for c in comm)
                  for b in range(len(comm[0]))]
        b = int(np.argmax(spread))
        lags.append(comm[late][b].start_us - float(np.median([comm[r][b].start_us for r in range(world) if r != late])))
    return float(np.median(lags))


@pytest.mark.parametrize(("world", "late", "sync"), [(2, 0, "lagged"), (2, 1, "step"), (8, 5, "none"),
                                                       (8, 3, "lagged")])
def test_the_late_nccl_rank_is_the_straggler_and_its_row_says_why(tmp_path: Path, world: int, late: int,
                                                                 sync: str) -> None:
    folder = write_synth_trace("straggler_nccl", tmp_path / "job", world_size=world, late_rank=late, sync=sync,
                               steps=5)
    result = Trace([folder], workers=1).result()
    d = result.diagnosis
    assert d.signature == "straggler" and d.ranks == [late] and result.multi_rank.stragglers == [late]
    lag_s = result.multi_rank.collective_start_lag_s[late]
    assert lag_s == pytest.approx(_planned_lag_us(world, late, 5, sync) / 1e6, rel=0.02)
    row = next(r.diagnosis for r in result.ranks if r.analysis.rank == late)
    # its own lane's verdict, kept second: a host stall with no data tell (after its loss.item() with "step")
    assert row.signature == "straggler" and row.secondary[0] in ("host_bound", "host_sync_bound")
    cause = next(e for e in row.evidence if e.startswith("cause of its lateness"))
    assert "host stalls" in cause and "without launching" in cause
    assert "DataLoader" not in row.fix and "DataLoader" not in d.fix
    others = [r.diagnosis.signature for r in result.ranks if r.analysis.rank != late]
    assert set(others) == {"comm_bound"}  # the symptom, on every other rank


@pytest.mark.parametrize(("job", "signature"), [("ddp_nccl_comm", "comm_bound"), ("ddp_nccl_healthy", "healthy")])
def test_real_nccl_jobs_keep_their_verdicts(job: str, signature: str) -> None:
    """Two H200s over NCCL, no late rank (meta.json sleep_rank null): no straggler."""
    result = Trace([NCCL / job], workers=1).result()
    assert result.diagnosis.signature == signature
    assert result.multi_rank.stragglers == []
