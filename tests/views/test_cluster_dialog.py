"""File ▸ Open on a Dask cluster…: the dialog's checks, and a job run on a LocalCluster shown from
compact results (verdict, heatmap with the late rank first, rank table); opening a rank asks for
that one file only (pytest-qt)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from gpuperf_gui.core.trace.synthetic import synth

pytest.importorskip("distributed")

RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth.write_synth_trace("straggler", tmp_path_factory.mktemp("cluster") / "job", world_size=8, steps=5)


def test_dialog_refuses_bad_inputs(qtbot, job: Path, tmp_path: Path) -> None:
    from gpuperf_gui.views.cluster_dialog import ClusterOpenDialog

    dialog = ClusterOpenDialog(None, str(tmp_path / "missing"), "local:2")
    qtbot.addWidget(dialog)
    assert "not a folder" in dialog.problem()
    dialog.folder_edit.setText(str(job))
    dialog.address_edit.setText("node1:8786")
    assert "not a scheduler address" in dialog.problem()
    dialog.accept()
    assert dialog.result() != dialog.DialogCode.Accepted and dialog.error.text()
    dialog.address_edit.setText("tcp://node1:8786")
    assert dialog.problem() is None
    assert dialog.values() == (job, "tcp://node1:8786")


def test_job_window_shows_compact_result_and_opens_one_rank(qtbot, job: Path) -> None:
    from gpuperf_gui.core.trace.engine.cluster import ClusterResult
    from gpuperf_gui.views.cluster_dialog import ClusterJobWindow

    window = ClusterJobWindow(job, "local:2")
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.result_ready, timeout=RUN_TIMEOUT_MS) as ready:
        assert window.start()
    qtbot.waitUntil(lambda: not window.task.is_running(), timeout=RUN_TIMEOUT_MS)
    result = ready.args[0]
    assert isinstance(result, ClusterResult)
    late = synth.STRAGGLER_RANK
    assert "straggler" in window.verdict.text() and f"late rank: {late}" in window.verdict.text()
    assert window.heatmap.ranks[0] == late and sorted(window.heatmap.ranks) == list(range(8))
    assert window.table.rowCount() == 8 and window.table.item(0, 0).text() == str(late)
    # compact: the window holds a few kB per rank, never a rank's lanes
    assert not any(hasattr(r, "strings") or hasattr(r, "flows") for r in result.ranks)
    assert len(pickle.dumps(result)) < 64 * 1024 * len(result.ranks)
    with qtbot.waitSignal(window.rank_file_opened) as opened:
        window.table.cellDoubleClicked.emit(0, 1)
    assert opened.args[0] == job.resolve() / f"rank{late}.json.gz"
    with qtbot.waitSignal(window.rank_file_opened) as opened:
        window.heatmap.rank_opened.emit(5)
    assert opened.args[0].name == "rank5.json.gz"
    window.close()


def test_unreachable_scheduler_is_shown(qtbot, job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuperf_gui.core.trace.engine import cluster
    from gpuperf_gui.views.cluster_dialog import ClusterJobWindow

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    window = ClusterJobWindow(job, "tcp://127.0.0.1:1")
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.task.run_finished, timeout=RUN_TIMEOUT_MS):
        window.start()   # the window's own producer: a Dask address runs in this process
    assert "cannot reach the Dask scheduler" in window.status.text()
    assert window.result is None
    window.close()


def test_file_menu_has_the_entry(make_main_window) -> None:
    window = make_main_window()
    file_menu = window.menuBar().actions()[0].menu()
    assert "Open on a &Dask cluster…" in [a.text() for a in file_menu.actions()]
