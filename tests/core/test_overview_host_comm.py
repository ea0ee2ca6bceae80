"""The overview's step breakdown and rank × step heatmap count host-side (gloo) collectives as the
communication a step waits for, as the diagnosis panel's ranks table does."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.analysis.overview import build_overview

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def test_gloo_all_reduce_steps_wait_on_host_collectives_as_the_recording_measured() -> None:
    """gloo_cpu_allreduce: the recorder timed each rank's wall time inside ``dist.all_reduce`` over its
    unprofiled step (0.757 and 0.745, meta.json). No NCCL kernel runs, so the GPU-stream figure is 0;
    the heatmap's "exposed comm" must read the host collective instead (the profiler stretches the
    step a little: 10 points of tolerance)."""
    meta = json.loads((H200 / "gloo_cpu_allreduce.meta.json").read_text())
    overview = build_overview(Trace([H200 / "gloo_cpu_allreduce"]).result())
    ranks, _, values = overview.rank_step_matrix("exposed comm")
    for rank, expected in enumerate(meta["expected"]["comm_exposed_fraction_per_rank"]):
        steps = [s for s in next(r for r in overview.ranks if r.rank == rank).steps if not s.warmup]
        assert all(s.comm_exposed_us == 0.0 for s in steps)
        row = values[ranks.index(rank)]
        assert statistics.median(row[row == row]) == pytest.approx(expected, abs=0.10)
        assert all(0 < s.host_comm_idle_us <= sum(s.idle_us.values()) + 1e-6 for s in steps)


def test_nccl_free_single_gpu_training_has_no_host_collective_wait() -> None:
    overview = build_overview(Trace([H200 / "loader_fed.json.gz"]).result())
    assert all(s.host_comm_idle_us == 0.0 for r in overview.ranks for s in r.steps)
