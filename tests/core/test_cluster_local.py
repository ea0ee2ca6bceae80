"""The compact path without Dask (``Trace(paths, compact=True)``: core/trace/engine/cluster.py ``iter_compact_analyse``, local process pool):
the full local run's figures and verdict, Dask never imported, and a 256-rank job brought back as a
few kB per rank with no per-event array. The late rank comes from the real recording
(tests/data/h200/ddp_straggler_gloo: rank 1 sleeps 40 ms before each forward), tiled by
tests/core/many_ranks.py."""
from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.engine.cluster import LANE_BINS, LOCAL_POOL, ClusterResult, engine_label
from gpuperf_gui.core.trace.model.trace_model import Flows, Lane, RankTrace, StringTable, TraceModel
from gpuperf_gui.core.trace.analysis.overview import build_overview
from gpuperf_gui.core.trace.session.trace import Trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_ranks import RECORDED_LATE_MS, reachable, tiled_straggler_job  # noqa: E402


@pytest.fixture(scope="module")
def job16(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiled_straggler_job(tmp_path_factory.mktemp("job16") / "job", 16, 11, shift_us=13)


def test_local_pool_equals_the_full_local_run(job16: Path) -> None:
    """Per-rank figures, op tables, roofline points, the straggler lags and the verdict: the same
    ``--json`` as the full load; the heatmap's matrices the same as the full overview's."""
    full = Trace([job16], workers=1).result()
    compact = Trace([job16], workers=2, overview=True, compact=True).result()
    full_json = full.to_json(top=5)
    # the what-if walks every rank's events together: the compact engine has none (docs/what-if.md)
    full_json.pop("what_if"), full_json.pop("critical_path")
    assert compact.to_json(top=5) == full_json
    assert compact.diagnosis.signature == "straggler" and compact.multi_rank.stragglers == [11]
    # the recording's rank 0 waits ~40 ms per step for the late rank: the lag found is that sleep
    assert compact.multi_rank.collective_start_lag_s[11] == pytest.approx(RECORDED_LATE_MS / 1e3, rel=0.25)
    local_overview = build_overview(full)
    for metric in ("busy", "exposed comm", "idle", "step time"):
        c_ranks, c_steps, c_values = compact.overview().rank_step_matrix(metric)
        f_ranks, f_steps, f_values = local_overview.rank_step_matrix(metric)
        assert (c_ranks, c_steps) == (f_ranks, f_steps) and c_ranks[0] == 11
        assert c_values.tolist() == f_values.tolist()


def test_local_pool_runs_without_dask(job16: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    monkeypatch.setitem(sys.modules, "dask", None)
    items = list(Trace([job16], compact=True, workers=2).iter_result())
    result = items[-1]
    assert isinstance(result, ClusterResult) and result.multi_rank.stragglers == [11]
    assert "local process pool of 2 processes" in items[0].message
    assert engine_label(None) == engine_label(LOCAL_POOL) == "the local process pool"


def test_importing_the_engine_imports_no_dask() -> None:
    code = ("import sys, gpuperf_gui.core.trace.engine.cluster; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": ""}).stdout
    assert out.strip() == "[]"


def test_stop_returns_without_a_result(job16: Path) -> None:
    import threading

    stop = threading.Event()
    items = []
    for item in Trace([job16], compact=True, workers=2).iter_result(stop):
        items.append(item)
        if len(items) == 3:
            stop.set()
    assert not any(isinstance(i, ClusterResult) for i in items)


# What one rank's RankSummary may weigh, pickled: its figures (RankAnalysis ~4 kB, 10 op-table rows
# ~1.2 kB, roofline points, file name and warnings: 8 kB in all), the overview's per-step breakdown
# and top kernels (2 kB a step), and the coarse lane summary (LANE_BINS bytes + label, 512 B a lane).
# Nothing in it scales with events; one float64 array over this recording's ~1,650 events of a rank
# would already add 13 kB, its whole RankTrace pickles to ~90 kB (measured: ~15.7 kB against a 19.5 kB bound).
FIXED_BYTES, PER_STEP_BYTES, PER_LANE_BYTES = 8 * 1024, 2 * 1024, 512


def test_256_ranks_come_back_compact(tmp_path: Path) -> None:
    job = tiled_straggler_job(tmp_path / "job256", 256, 200, steps=2, compress=False)
    result = Trace([job], workers=2, overview=True, compact=True).result()
    assert len(result.ranks) == 256 and result.multi_rank.stragglers == [200]
    assert result.diagnosis.signature == "straggler"
    for r in result.ranks:
        s = dataclasses.replace(r, diagnosis=None)   # as the worker sent it (the client diagnoses)
        bound = FIXED_BYTES + PER_STEP_BYTES * len(s.analysis.steps) + PER_LANE_BYTES * len(s.lanes)
        assert len(pickle.dumps(s)) <= bound, (r.rank, len(pickle.dumps(s)), bound)
    held = reachable(result)
    assert not [o for o in held if issubclass(type(o), (RankTrace, TraceModel, Lane, StringTable, Flows))]
    biggest = max(o.size for o in held if issubclass(type(o), np.ndarray))
    assert biggest <= LANE_BINS < min(r.n_events for r in result.ranks)
    assert len(pickle.dumps(result)) < 256 * 32 * 1024


def test_when_a_job_opens_as_an_overview(tmp_path: Path) -> None:
    """More than MANY_RANKS files, or several whose lanes would not fit the budget; never one file."""
    import gzip

    from gpuperf_gui.core.trace.engine.cluster import overview_reason
    from gpuperf_gui.core.trace.ingest.load import MANY_RANKS
    from gpuperf_gui.core.trace.ingest.source import text_size_hint as text_bytes

    job = tiled_straggler_job(tmp_path / "job", 2, 1, steps=2)
    files = sorted(job.iterdir())
    plain = [len(gzip.decompress(f.read_bytes())) for f in files]
    assert [text_bytes(f) for f in files] == plain            # the gzip trailer's recorded size
    roomy = 10**12
    assert overview_reason(files, roomy) is None
    assert overview_reason(files[:1], 1000) is None            # one file: the loader's budget guards it
    assert "over the" in overview_reason(files, int(0.5 * sum(plain)))
    assert overview_reason(files, int(1.0 * sum(plain))) is None
    many = [files[0]] * (MANY_RANKS + 1)
    assert overview_reason(many, roomy) == f"{MANY_RANKS + 1} rank files"
    assert overview_reason(many[:MANY_RANKS], roomy) is None


def test_small_ranks_share_dask_tasks_big_ones_do_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 files on 2 worker threads: 100 // (8 tasks x 2 threads) = 6 files a task, in file order;
    a file over the task's text bound gets a task of its own."""
    from gpuperf_gui.core.trace.engine import cluster
    files = []
    for i in range(100):
        f = tmp_path / f"rank{i:03d}.json"
        f.write_text("x" * (5000 if i == 40 else 100))
        files.append(f)
    monkeypatch.setattr(cluster, "TASK_MAX_TEXT_BYTES", 1000)
    batches = cluster.task_batches(files, threads=2)
    assert [i for b in batches for i in b] == list(range(100))
    assert [40] in batches and batches[0] == [0, 1, 2, 3, 4, 5]
    assert max(len(b) for b in batches) == 6
    assert cluster.task_batches(files[:3], threads=64) == [[0], [1], [2]]


def test_a_task_that_failed_outside_the_loader_names_each_of_its_files() -> None:
    """What ``as_completed(with_results=True, raise_errors=False)`` hands over for a task whose
    worker died (the (type, exception, traceback) triple) or that was cancelled (the exception)."""
    from types import SimpleNamespace

    from gpuperf_gui.core.trace.engine import cluster
    from gpuperf_gui.core.trace.ingest.load import FileFailure
    paths = [Path("job/rank0.json"), Path("job/rank1.json")]
    died = RuntimeError("worker died")
    for status, value in (("error", (RuntimeError, died, None)), ("cancelled", died)):
        out = cluster._results(SimpleNamespace(status=status), value, paths)  # noqa: SLF001
        assert [type(f) for f in out] == [FileFailure, FileFailure] and [f.path for f in out] == paths
        assert out[1].message == "job/rank1.json: the Dask task failed: RuntimeError: worker died"
    finished = [object()]
    assert cluster._results(SimpleNamespace(status="finished"), finished, paths) is finished  # noqa: SLF001
