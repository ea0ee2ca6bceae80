"""`gpuperf profile` on the CPU: a real child interpreter runs tests/data/scripts/* under torch.profiler.

Expected values come from the scripts themselves (their iteration counts, what they print, where they
fail) and from the trace file read as plain JSON, not from the code under test.
"""
from __future__ import annotations

import gzip
import json
import threading
import time
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.profile_script import (
    STOP_AT_STEP_WAIT_S,
    ProfileOutput, ProfileProgress, ProfileRequest, ProfileResult, iter_profile, parse_progress,
)
from gpuperf_gui.core.trace.session.trace import Trace

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "scripts"
TRAIN = SCRIPTS / "train_tiny.py"


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    return [e for e in data["traceEvents"] if e.get("ph") == "X"]


def _steps(events: list[dict]) -> list[dict]:
    return sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])


def _collect(req: ProfileRequest, stop: threading.Event | None = None,
             stop_after_recorded: int | None = None) -> tuple[list, ProfileResult]:
    items = []
    for item in iter_profile(req, stop):
        items.append(item)
        if (stop is not None and isinstance(item, ProfileProgress) and stop_after_recorded is not None
                and item.recorded >= stop_after_recorded):
            stop.set()
    assert isinstance(items[-1], ProfileResult)
    return items[:-1], items[-1]


def test_training_script_records_the_requested_optimizer_steps(tmp_path: Path, capfd) -> None:
    out = tmp_path / "train.json.gz"
    rc = main(["profile", "--steps", "3", "-o", str(out), str(TRAIN), "--marker", "hello world", "--iters", "12"])
    captured = capfd.readouterr()
    assert rc == 0, captured.err
    # the script's own output and arguments pass through
    assert "train_tiny argv=['--marker', 'hello world', '--iters', '12'] marker=hello world" in captured.out
    assert "train_tiny stderr line" in captured.err
    assert "train_tiny done" not in captured.out  # ended cleanly once the steps were recorded
    assert "[gpuperf profile] finished ok=True steps=3 mode=steps" in captured.err
    events = _events(out)
    steps = _steps(events)
    assert len(steps) == 3
    # the step boundary is the optimizer step: each step holds exactly one whole Optimizer.step span
    opt = [e for e in events if str(e["name"]).startswith("Optimizer.step#SGD.step")]
    for s in steps:
        inside = [o for o in opt if s["ts"] <= o["ts"] and o["ts"] + o["dur"] <= s["ts"] + s["dur"]]
        cut = [o for o in opt if o["ts"] < s["ts"] < o["ts"] + o["dur"]
               or o["ts"] < s["ts"] + s["dur"] < o["ts"] + o["dur"]]
        assert len(inside) == 1 and not cut
        assert any(e["name"] == "aten::linear" and s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for e in events)
    with gzip.open(out, "rt") as fh:
        assert json.load(fh)["gpuperf_profile_mode"] == "steps"
    result = Trace([out]).result()  # the app's own loader reads it
    assert len(result.ranks) == 1 and len(result.ranks[0].analysis.steps) == 3


def test_run_to_end_and_exit_status(tmp_path: Path, capfd) -> None:
    out = tmp_path / "t.json"
    rc = main(["profile", "--steps", "2", "--run-to-end", "-o", str(out), str(TRAIN), "--iters", "12",
               "--exit-code", "3"])
    captured = capfd.readouterr()
    assert rc == 2
    assert "train_tiny done iters=12" in captured.out  # ran on after the trace
    assert "gpuperf: error: the script exited with status 3; trace written to" in captured.err
    assert len(_steps(_events(out))) == 2


def test_failing_script_gives_a_clear_error_and_its_recorded_steps(tmp_path: Path) -> None:
    out = tmp_path / "fail.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--fail-at", "3"], steps=3, skip_first=0, wait=1,
                         warmup=1)
    items, result = _collect(req)
    err = "".join(i.text for i in items if isinstance(i, ProfileOutput) and i.stream == "stderr")
    assert 'train_tiny.py", line' in err and "ValueError: planted failure at iteration 3" in err
    assert "profile_script.py" not in err  # the traceback is the script's, not the runner's
    assert not result.ok
    assert result.script_error == "ValueError: planted failure at iteration 3"
    assert "the script raised ValueError" in result.message
    # the failure came after optimizer step 4 (iteration 3): wait 1 + warmup 1 leave step #2 complete,
    # #3 was running when it raised
    assert result.optimizer_steps == 4 and result.steps_recorded == 1
    assert [s["name"] for s in _steps(_events(out))] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert result.profiler_left_running is False


def test_inference_script_gets_a_wall_clock_window(tmp_path: Path) -> None:
    out = tmp_path / "infer.json.gz"
    req = ProfileRequest(script=str(SCRIPTS / "infer_tiny.py"), out=str(out), args=["--seconds", "1.5"],
                         window_s=0.5)
    items, result = _collect(req)
    assert result.ok and result.mode == "window" and result.steps_recorded == 0
    assert any(isinstance(i, ProfileProgress) and i.event == "window" for i in items)
    assert any(isinstance(i, ProfileOutput) and "infer_tiny done" in i.text for i in items)  # ran on
    events = _events(out)
    assert not _steps(events)
    linear = [e for e in events if e["name"] == "aten::linear"]
    assert linear
    span_s = (max(e["ts"] + e["dur"] for e in linear) - min(e["ts"] for e in linear)) * 1e-6
    assert 0.2 < span_s < 1.0  # the 0.5 s window, not the script's 1.5 s


def test_stop_ends_the_script_and_keeps_the_recorded_steps(tmp_path: Path) -> None:
    out = tmp_path / "stop.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever"], steps=1000)
    _items, result = _collect(req, threading.Event(), stop_after_recorded=1)
    assert result.ok and result.stopped_early and result.steps_recorded >= 1
    assert len(_steps(_events(out))) >= result.steps_recorded
    assert result.profiler_left_running is False


def test_stop_during_a_stalled_step_does_not_wait_for_the_next_step(tmp_path: Path) -> None:
    """Stop ends the script at the next optimizer step (whole steps, no torch code interrupted), but
    a step that does not come within STOP_AT_STEP_WAIT_S is not waited for."""
    out = tmp_path / "stall.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever", "--stall-after", "4"], steps=1000,
                         skip_first=0, wait=1, warmup=1)
    started = time.monotonic()
    _items, result = _collect(req, threading.Event(), stop_after_recorded=2)
    # The script sleeps 60 s after step 4: waiting for its next step would take over 60 s. The
    # margin is the script's start (torch's import: 3 s idle, over 25 s beside a busy test run).
    assert time.monotonic() - started < STOP_AT_STEP_WAIT_S + 45
    assert result.ok and result.stopped_early and result.steps_recorded == 2, result
    assert len(_steps(_events(out))) >= 2
    assert result.profiler_left_running is False


def test_module_mode_with_cwd(tmp_path: Path) -> None:
    out = tmp_path / "mod.json.gz"
    req = ProfileRequest(script="train_tiny", module=True, cwd=str(SCRIPTS), out=str(out),
                         args=["--marker", "as-module"], steps=2, wait=1, warmup=0)
    items, result = _collect(req)
    assert result.ok, result.message
    assert any(isinstance(i, ProfileOutput) and "marker=as-module" in i.text for i in items)
    assert len(_steps(_events(out))) == 2


def test_cli_refuses_bad_requests_without_a_traceback(tmp_path: Path, capsys) -> None:
    assert main(["profile", "-o", str(tmp_path / "x.json.gz"), str(tmp_path / "missing.py")]) == 2
    assert "gpuperf: error: no such script" in capsys.readouterr().err
    assert main(["profile", "--steps", "0", "-o", str(tmp_path / "x.json.gz"), str(TRAIN)]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    assert main(["profile", "-o", str(tmp_path / "x.txt"), str(TRAIN)]) == 2
    assert ".json or .json.gz" in capsys.readouterr().err


def test_progress_lines_parse() -> None:
    p = parse_progress("[gpuperf profile] step n=4 recorded=2 target=3\n")
    assert p is not None and p.event == "step" and (p.recorded, p.target) == (2, 3)
    assert parse_progress("[gpuperf profile] trace path=/tmp/a.json.gz mode=steps steps=3").fields["mode"] == "steps"
    assert parse_progress("epoch 1 loss=0.3") is None


@pytest.mark.gpu
def test_cuda_training_script_traces_kernels(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    out = tmp_path / "cuda.json.gz"
    req = ProfileRequest(script=str(SCRIPTS / "train_gpu.py"), out=str(out), args=["--mode", "fed"],
                         steps=4, device="cuda")
    _items, result = _collect(req)
    assert result.ok and result.activities == ["CPU", "CUDA"], result.message
    events = _events(out)
    assert len(_steps(events)) == 4
    assert any(e.get("cat") == "kernel" for e in events)
    # a GPU-bound loop with its batch on the device (busy ~93 % on an H200, by the trace's own kernels)
    assert Trace([out]).result().ranks[0].diagnosis.signature == "healthy"


def test_the_trace_carries_step_times_measured_with_the_profiler_idle_and_recording(tmp_path: Path, capfd) -> None:
    """skip 1, wait 4, warmup 1, record 3: four unprofiled step times and three recorded ones (counts
    from the schedule), each recorded one inside its ProfilerStep span read from the file."""
    out = tmp_path / "timed.json.gz"
    rc = main(["profile", "--steps", "3", "--skip-first", "1", "--wait", "4", "--warmup", "1", "-o", str(out),
               str(TRAIN), "--iters", "14"])
    err = capfd.readouterr().err
    assert rc == 0, err
    with gzip.open(out, "rt") as fh:
        key = json.load(fh)["gpuperf_unprofiled"]
    assert len(key["step_times_s"]) == 4 and len(key["profiled_step_times_s"]) == 3
    assert key["steps_skipped"] == 1 and key["schedule"] == {"skip_first": 1, "wait": 4, "warmup": 1, "active": 3}
    assert all(t > 0 for t in key["step_times_s"] + key["profiled_step_times_s"])
    spans_s = [s["dur"] * 1e-6 for s in _steps(_events(out))]
    assert [s["name"] for s in _steps(_events(out))] == ["ProfilerStep#6", "ProfilerStep#7", "ProfilerStep#8"]
    for timed, span in zip(key["profiled_step_times_s"], spans_s):
        # timed between the boundaries' bookkeeping, so inside the span (clocks read to ~1 µs)
        assert 0.2 * span < timed <= span + 5e-5
    assert "step time without the profiler" in err and "median of 4 wait steps" in err
    result = Trace([out]).result()
    assert result.ranks[0].trace.gpuperf_unprofiled == key


def test_step_times_reach_the_result_and_a_stop_keeps_them(tmp_path: Path) -> None:
    out = tmp_path / "stopped.json.gz"
    req = ProfileRequest(script=str(TRAIN), out=str(out), args=["--forever"], steps=1000, skip_first=0, wait=2,
                         warmup=0)
    _items, result = _collect(req, threading.Event(), stop_after_recorded=2)
    assert result.ok and result.stopped_early
    assert len(result.unprofiled_step_times_s) == 2 and len(result.profiled_step_times_s) >= 2
    with gzip.open(out, "rt") as fh:
        key = json.load(fh)["gpuperf_unprofiled"]
    assert key["step_times_s"] == result.unprofiled_step_times_s
    # written when the stop came: the recorded steps complete by then
    assert key["profiled_step_times_s"] == result.profiled_step_times_s[:len(key["profiled_step_times_s"])]
    # train_tiny --forever sleeps 20 ms per iteration, so every timed step is at least that long
    assert min(key["step_times_s"] + key["profiled_step_times_s"]) >= 0.02
