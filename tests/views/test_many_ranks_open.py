"""Opening a folder of many ranks the ordinary way (File ▸ Open, drop, ``gpuperf-gui FOLDER``, the
Trace tab's own open) shows the job overview from compact results on the local process pool, holds
no rank's lanes, and opening a rank loads that rank only; small folders still load into the Trace
tab (pytest-qt, offscreen; no Dask needed)."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from many_ranks import reachable, tiled_straggler_job  # noqa: E402 (tests/core/many_ranks.py)

N_RANKS = 256
LATE_RANK = 173
RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # three of the recording's four steps (one is warm-up), plain JSON: ~2,450 events a rank
    return tiled_straggler_job(tmp_path_factory.mktemp("many") / "job256", N_RANKS, LATE_RANK, steps=3,
                               compress=False)


def test_folder_of_many_ranks_opens_as_overview_and_one_rank_on_demand(make_main_window, qtbot, job: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # the local engine needs no Dask
    monkeypatch.setitem(sys.modules, "dask", None)
    from gpuperf_gui.core.trace.engine.cluster import LANE_BINS, ClusterResult
    from gpuperf_gui.core.trace.model.lanes import LaneSpec
    from gpuperf_gui.core.trace.model.trace_model import Flows, Lane, RankTrace, StringTable, TraceModel

    def alive(types: tuple[type, ...]) -> list[object]:
        return [o for o in gc.get_objects() if issubclass(type(o), types)]  # type(): no lazy module proxy runs

    per_event_types = (RankTrace, TraceModel, Lane, StringTable, Flows, LaneSpec)
    # earlier tests' objects may be freed while this one runs: hold them (so no id is reused) and
    # ask that nothing per event is alive that was not alive before
    alive_before = alive(per_event_types)
    ids_before = {id(o) for o in alive_before}
    window = make_main_window()
    window.show()
    window.open_traces([job])                  # File ▸ Open, drop and the command line all come here
    assert len(window.job_windows) == 1 and window.trace_tab.loaded is None
    assert not window.trace_tab.task.is_running()
    jw = window.job_windows[0]
    with qtbot.waitSignal(jw.result_ready, timeout=RUN_TIMEOUT_MS) as ready:
        pass
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=RUN_TIMEOUT_MS)
    result = ready.args[0]
    assert isinstance(result, ClusterResult)

    # the overview: 256 rows, the injected late rank first, the verdict, the engine named
    assert jw.table.rowCount() == N_RANKS
    assert jw.table.item(0, 0).text() == str(LATE_RANK) and "late" in jw.table.item(0, 6).text()
    assert jw.heatmap.ranks[0] == LATE_RANK and sorted(jw.heatmap.ranks) == list(range(N_RANKS))
    # a straggler's row differs in exposed communication (gloo waits), so the colour starts there:
    # the late rank waits far less than the others (the recording: 0.899 for the waiting rank)
    assert jw.heatmap.metric == "exposed comm"
    late_row, others = np.nanmedian(jw.heatmap.values[0]), np.nanmedian(jw.heatmap.values[1:])
    assert others > 0.8 and late_row < others / 2
    assert "straggler" in jw.verdict.text() and f"late rank: {LATE_RANK}" in jw.verdict.text()
    assert "local process pool" in jw.engine_note.text() and "load on demand" in jw.engine_note.text()
    assert "local process pool" in jw.windowTitle() and window.tabs.currentWidget() is jw
    # exposed communication counts the host-side (gloo) collectives, as the recording measured it
    meta_path = Path(__file__).resolve().parents[1] / "data" / "h200" / "ddp_straggler_gloo.meta.json"
    meta = json.loads(meta_path.read_text())
    row0 = next(i for i in range(N_RANKS) if jw.table.item(i, 0).text() == "0")
    exposed = float(jw.table.item(row0, 5).text().rstrip(" %")) / 100
    assert exposed == pytest.approx(meta["expected"]["comm_exposed_fraction_rank0"], abs=0.05)
    # the selected (first, late) rank's lanes in brief, from its compact result
    late = jw.rank_summary(LATE_RANK)
    assert jw.lane_preview.rank == LATE_RANK
    shown = [lane for lane in late.lanes if lane.events and lane.kind != "gpu_annotation"]
    assert jw.lane_preview.values.shape == (len(shown), LANE_BINS)
    assert 0.0 < jw.lane_preview.values.max() <= 1.0

    # nothing per event is held: no rank model, lane or string table, no array longer than a lane summary
    held = reachable(jw.result)
    assert not [o for o in held if issubclass(type(o), per_event_types)]
    gc.collect()
    assert [o for o in alive(per_event_types) if id(o) not in ids_before] == []   # none in this process at all
    arrays = [o for o in held if issubclass(type(o), np.ndarray)]
    assert arrays and max(a.size for a in arrays) <= LANE_BINS < min(r.n_events for r in result.ranks)
    assert window.trace_tab.loaded is None

    # opening a rank loads exactly that rank's file in the Trace tab
    row = next(i for i in range(N_RANKS) if jw.table.item(i, 0).text() == "5")
    with qtbot.waitSignal(window.trace_tab.trace_loaded, timeout=RUN_TIMEOUT_MS):
        jw.table.cellDoubleClicked.emit(row, 0)
    loaded = window.trace_tab.loaded
    assert [Path(r.file).name for r in loaded.model.ranks] == ["rank00005.json"]
    assert loaded.model.ranks[0].rank == 5 and len(window.job_windows) == 1
    assert window.current_tab_key() == "trace"
    window.close_job_tab(window.tabs.indexOf(jw))     # its tab closes; the instruments stay
    assert window.job_windows == [] and window.tabs.count() == 4


def test_trace_tab_drop_of_many_ranks_goes_to_the_overview(make_main_window, qtbot, job: Path) -> None:
    """The Trace tab's own open (its drop target) takes the same route; the run can be cancelled."""
    window = make_main_window()
    window.trace_tab.open_paths([job])
    assert len(window.job_windows) == 1 and not window.trace_tab.task.is_running()
    jw = window.job_windows[0]
    jw.cancel()
    qtbot.waitUntil(lambda: not jw.is_busy(), timeout=RUN_TIMEOUT_MS)
    assert jw.result is None and jw.table.rowCount() == 0


def test_small_folder_keeps_loading_into_the_trace_tab(make_main_window, qtbot, tmp_path: Path) -> None:
    from gpuperf_gui.core.trace.ingest.load import MANY_RANKS

    folder = tiled_straggler_job(tmp_path / "job4", 4, 1)
    assert 4 <= MANY_RANKS
    window = make_main_window()
    with qtbot.waitSignal(window.trace_tab.trace_loaded, timeout=RUN_TIMEOUT_MS):
        window.open_traces([folder])
    assert window.job_windows == []
    assert len(window.trace_tab.loaded.model.ranks) == 4
