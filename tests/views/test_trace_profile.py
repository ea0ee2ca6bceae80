"""File ▸ Profile a script…: a real CPU training script runs under torch.profiler from the Trace tab,
its trace opens and is diagnosed; Stop keeps the recorded steps; a failing script says why (pytest-qt).

Expected values come from the script (tests/data/scripts/train_tiny.py: its arguments, what it prints,
where it fails) and the trace file read as plain JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuperf_gui.core.profile_script import ProfileProgress, ProfileRequest

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "scripts"
TRAIN = SCRIPTS / "train_tiny.py"
RUN_TIMEOUT_MS = 120_000


def _steps_in(path: Path) -> int:
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")


def _profile_children() -> list[int]:
    """Pids of this process's children running the profiler child (``--gpuperf-profile-child``)."""
    import os

    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"--gpuperf-profile-child" in cmdline:
            pids.append(int(entry.name))
    return pids


def test_profile_a_script_opens_its_trace(qtbot, tab, tmp_path):
    runner = tab.profiler
    assert runner is not None
    out = tmp_path / "train.pt.trace.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--marker", "from the GUI", "--iters", "10"],
                         steps=2, wait=2, warmup=1, device="cpu")
    with qtbot.waitSignal(tab.trace_loaded, timeout=RUN_TIMEOUT_MS):
        assert runner.run(req)
        assert tab.is_busy() and runner.isVisible()
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=RUN_TIMEOUT_MS)
    assert out.exists() and _steps_in(out) == 2
    assert runner.result.ok and runner.result.steps_recorded == 2
    assert len(runner.result.unprofiled_step_times_s) == 2  # the schedule's wait steps, timed
    assert "step time without the profiler" in runner.status.text() and "median of 2 wait steps" in runner.status.text()
    assert "train_tiny argv=['--marker', 'from the GUI', '--iters', '10']" in runner.output.toPlainText()
    assert "train_tiny stderr line" in runner.output.toPlainText()
    assert Path(tab.loaded.files[0]) == out
    assert len(tab.loaded.model.ranks[0].steps) == 2
    assert tab.diagnosis.signature is not None     # diagnosed as soon as it is written


def test_stop_writes_the_steps_recorded_so_far(qtbot, tab, tmp_path):
    runner = tab.profiler
    out = tmp_path / "forever.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever"], steps=1000, wait=0, warmup=0,
                         device="cpu")
    recorded: list[int] = []

    def on_item(item: object) -> None:
        if isinstance(item, ProfileProgress) and item.recorded >= 2 and not recorded:
            recorded.append(item.recorded)
            runner.stop()

    runner.task.item_produced.connect(on_item)
    assert runner.run(req)
    qtbot.waitUntil(lambda: runner.result is not None, timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=RUN_TIMEOUT_MS)
    assert recorded, "no progress reached two recorded steps"
    assert runner.result.ok and runner.result.stopped_early, runner.result
    assert tab.loaded is not None and Path(tab.loaded.files[0]) == out, tab.message.text()
    assert 2 <= _steps_in(out) < 1000
    assert "stopped when you asked" in runner.status.text() and "stopped early" not in runner.status.text()


def test_a_failing_script_says_why(qtbot, tab, tmp_path):
    runner = tab.profiler
    req = ProfileRequest(script=str(TRAIN), out=str(tmp_path / "fail.json.gz"), args=["--fail-at", "0"],
                         steps=3, wait=0, warmup=0, device="cpu")
    with qtbot.waitSignal(runner.profile_failed, timeout=RUN_TIMEOUT_MS):
        runner.run(req)
    qtbot.waitUntil(lambda: not runner.is_busy(), timeout=RUN_TIMEOUT_MS)
    assert "planted failure at iteration 0" in runner.status.text() + runner.output.toPlainText()
    assert tab.loaded is None
    # arguments that cannot run are refused before anything starts
    bad = ProfileRequest(script=str(tmp_path / "missing.py"), out=str(tmp_path / "x.json.gz"))
    assert not runner.run(bad)
    assert "no such script" in runner.status.text() and not runner.is_busy()


def test_the_dialog_builds_the_request(qtbot, tmp_path):
    from gpuperf_gui.views.trace.profile import ProfileDialog

    dialog = ProfileDialog()
    qtbot.addWidget(dialog)
    dialog.script_edit.setText(str(TRAIN))
    dialog.script_edit.editingFinished.emit()
    assert dialog.out_edit.text() == str(TRAIN.parent / "train_tiny.pt.trace.json.gz")
    dialog.args_edit.setText("--marker 'two words' --iters 4")
    dialog.steps_spin.setValue(5)
    dialog.skip_spin.setValue(2)
    dialog.wait_spin.setValue(4)
    dialog.device_combo.setCurrentText("cpu")
    req = dialog.request()
    assert req.args == ["--marker", "two words", "--iters", "4"] and req.steps == 5 and req.device == "cpu"
    assert (req.skip_first, req.wait) == (2, 4)
    assert req.cwd == str(TRAIN.parent) and req.record_shapes
    dialog.args_edit.setText("--marker 'unclosed")
    dialog._accept()
    assert "do not parse" in dialog.error.text() and dialog.result() == 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_closing_mid_run_stops_the_script(qtbot, tab, tmp_path):
    runner = tab.profiler
    out = tmp_path / "closed.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever"], steps=1000, wait=0, warmup=0,
                         device="cpu")
    steps: list[int] = []
    runner.task.item_produced.connect(
        lambda item: steps.append(item.recorded) if isinstance(item, ProfileProgress) and item.recorded else None)
    assert runner.run(req)
    qtbot.waitUntil(lambda: bool(steps), timeout=RUN_TIMEOUT_MS)
    assert _profile_children(), "the script runs in a child interpreter"
    tab.shutdown()                         # the window closes while the script trains
    assert not tab.is_busy()
    assert not _profile_children()         # no profiler left running (core's tests check what it wrote)


def test_closing_mid_compare_returns_at_once(qtbot, tab):
    data = Path(__file__).resolve().parents[1] / "data" / "h200"
    page = tab.compare
    page.compare_paths([data / "eager_small.json.gz"], [data / "compiled_small.json.gz"])
    assert page.is_busy()
    tab.shutdown()
    assert not page.is_busy() and page.diff is None


def _trace_with_key(tmp_path: Path, name: str, key: dict | None) -> Path:
    """A small real trace (tests/data/h200/profile_launch) with a hand-written gpuperf_unprofiled key."""
    base = Path(__file__).resolve().parents[1] / "data" / "h200" / "profile_launch.json.gz"
    data = json.loads(gzip.decompress(base.read_bytes()))
    if key is not None:
        data["gpuperf_unprofiled"] = key
    out = tmp_path / f"{name}.json.gz"
    out.write_bytes(gzip.compress(json.dumps(data).encode()))
    return out


def _compare(qtbot, tab, before: Path, after: Path):  # noqa: ANN202
    page = tab.compare
    with qtbot.waitSignal(page.compared, timeout=RUN_TIMEOUT_MS):
        page.compare_paths([before], [after])
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=RUN_TIMEOUT_MS)
    return page


def test_compare_shows_the_unprofiled_speedup_and_names_its_source(qtbot, tab, tmp_path):
    # hand-chosen step times: before idle median 12 ms (recorded 15), after idle median 4 ms (recorded 5):
    # 3.00x faster without the profiler, +25 % profiler overhead on both sides; same trace both sides,
    # so the profiled speedup is 1.00x
    before = _trace_with_key(tmp_path, "before", {"step_times_s": [0.011, 0.012, 0.013],
                                                  "profiled_step_times_s": [0.015, 0.015, 0.016]})
    after = _trace_with_key(tmp_path, "after", {"step_times_s": [0.004, 0.004, 0.0039],
                                                "profiled_step_times_s": [0.005, 0.005, 0.0051]})
    page = _compare(qtbot, tab, before, after)
    head = page.headline.text()
    assert "3.00× faster" in head and "without the profiler" in head
    assert "unprofiled steps measured by gpuperf profile" in head
    assert "(1.00×)" in head and "+25 % before, +25 % after" in head
    rows = {page.figures.item(r, 0).text(): [page.figures.item(r, c).text() for c in (1, 2)]
            for r in range(page.figures.rowCount())}
    assert rows["step time without profiler (gpuperf profile)"] == ["12 ms", "4 ms"]
    assert rows["profiler overhead (profiled / unprofiled − 1)"] == ["25.0 %", "25.0 %"]
    assert any("without the profiler" in line for line in page.changes.toPlainText().splitlines())


def test_compare_without_unprofiled_times_says_how_to_get_them(qtbot, tab, tmp_path):
    plain = _trace_with_key(tmp_path, "plain", None)
    page = _compare(qtbot, tab, plain, plain)
    head = page.headline.text()
    assert "1.00× faster" in head and "profiled steps" in head and "gpuperf profile" in head
    labels = [page.figures.item(r, 0).text() for r in range(page.figures.rowCount())]
    assert labels[0] == "step time" and not any("without profiler" in x for x in labels)
