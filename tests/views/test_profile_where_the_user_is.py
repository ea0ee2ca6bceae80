"""File ▸ Profile a script… started from another tab: its progress in the main window's status bar,
the trace opened on the Timeline page, its banner and output belonging to that trace only, what was
recorded said plainly, and a step cut short by Stop kept out of the median step time (pytest-qt).

The scripts are tests/data/scripts (train_tiny.py: a CPU training loop). Expected step times come
from the written trace read as plain JSON (its ProfilerStep events), not from the code under test."""
from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest

from gpuperf_gui.core.profile_script import ProfileProgress, ProfileRequest, ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
TRAIN = DATA / "scripts" / "train_tiny.py"
OTHER_TRACE = DATA / "h200" / "profile_launch.json.gz"
RUN_TIMEOUT_MS = 120_000


def _step_durations_s(path: Path) -> list[float]:
    """The ProfilerStep# spans of a trace, in order (the CPU annotations torch.profiler writes)."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("ph") == "X" and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    return [e["dur"] * 1e-6 for e in steps]


@pytest.fixture
def window(make_main_window):
    window = make_main_window(device_id="h100-sxm")
    yield window
    window.trace_tab.shutdown()


@pytest.mark.slow
def test_a_script_profiled_from_the_roofline_tab(qtbot, window, tmp_path):
    trace_tab, runner = window.trace_tab, window.trace_tab.profiler
    window.show_tab("roofline")
    out = tmp_path / "forever.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever"], steps=1000, wait=0, warmup=0,
                         device="cpu")
    seen: list[str] = []

    def on_item(item: object) -> None:
        if isinstance(item, ProfileProgress) and item.recorded:
            seen.append(runner._window_row.label.text())      # what the status bar says, on the Roofline tab
            if item.recorded >= 3 and not runner._stop_asked:
                runner._window_row.stop_button.click()      # Stop from the status bar

    runner.task.item_produced.connect(on_item)
    with qtbot.waitSignal(trace_tab.trace_loaded, timeout=RUN_TIMEOUT_MS):
        assert runner.run(req)
    qtbot.waitUntil(lambda: not trace_tab.is_busy(), timeout=RUN_TIMEOUT_MS)
    assert seen and seen[0].startswith("Profiling train_tiny.py: recorded 1 of 1000 steps")
    # the trace is shown, on the Timeline page
    assert window.tabs.currentWidget() is trace_tab
    assert trace_tab.pages.currentWidget() is trace_tab.main_split
    # what was recorded: stopped on request, the step in progress cut short and out of the median
    result = runner.result
    assert result.ok and result.partial_last_step
    status = runner.status.text()
    assert f"{result.steps_recorded} steps of 1000 (stopped when you asked)" in status
    assert "stopped early" not in status and "left out of the median step time" in status
    durations = _step_durations_s(out)
    assert len(durations) == result.steps_recorded + 1           # the whole steps and the cut one
    rank = trace_tab.loaded.analysis[0]
    assert rank.steps[-1].partial and not any(s.partial for s in rank.steps[:-1])
    steady = [d for s, d in zip(rank.steps, durations) if not s.warmup][:-1]
    assert rank.step_time_median_s == pytest.approx(statistics.median(steady), rel=1e-6)
    assert "Profiled" not in window.statusBar().currentMessage()
    # another trace: the banner and the script's output were this run's, they go
    assert not runner.isHidden() and runner.output.toPlainText()
    with qtbot.waitSignal(trace_tab.trace_loaded, timeout=RUN_TIMEOUT_MS):
        window.open_traces([OTHER_TRACE], remember=False)
    assert runner.isHidden() and runner.output.toPlainText() == ""


def test_the_steps_asked_for_do_not_read_like_a_failure(qtbot, window):
    runner = window.trace_tab.profiler
    runner.last_request = ProfileRequest(script=str(TRAIN), out="t.json.gz", steps=3)
    done = ProfileResult(ok=True, message="", mode="steps", steps_recorded=3, stopped_early=True)
    assert runner.recorded_text(done) == "the 3 steps asked for (the script was ended there, as planned)"
    short = ProfileResult(ok=True, message="", mode="steps", steps_recorded=2, partial_last_step=True)
    assert runner.recorded_text(short).startswith("2 steps of 3 (the script ended first); the step in progress")
    window_mode = ProfileResult(ok=True, message="", mode="window")
    assert runner.recorded_text(window_mode) == "a wall-clock window (no optimizer step)"
