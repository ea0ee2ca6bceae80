"""Broken, truncated and hostile trace inputs (docs/robustness.md, Traces), each a regression test: a correct load with every
figure in range, or a clear error (exit 2, no traceback) that says what was wrong and where."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.ingest.budget import MemoryBudgetError
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

from fuzz_support import figure_problems

ROOT = Path(__file__).resolve().parents[2]


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op", pid: int = 1, tid: int = 1, **args: object) -> dict:
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def _kernel(ts: float, dur: float) -> dict:
    return _x("gemm_kernel", ts, dur, cat="kernel", pid=0, tid=7, device=0, stream=7)


def _steps(numbers: list[int], t0: float = 0.0) -> list[dict]:
    """Steps of 100 µs one after another, each with one 50 µs kernel (GPU busy: exactly 1/2)."""
    events = []
    for i, number in enumerate(numbers):
        start = t0 + 100.0 * i
        events += [_x(f"ProfilerStep#{number}", start, 100.0), _kernel(start + 10.0, 50.0)]
    return events


def _write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return path


def _diagnose(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    rc = main(["diagnose", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _ok_json(capsys: pytest.CaptureFixture, path: Path) -> dict:
    rc, out, err = _diagnose(capsys, str(path), "--json")
    assert rc == 0, err
    obj = json.loads(out)
    json.dumps(obj, allow_nan=False)
    assert figure_problems(obj) == []
    return obj


# -- crashes and silent wrong figures ---------------------------------------------------------------

def test_profiler_step_with_5000_digits_is_not_a_step(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _write(tmp_path, "t.json", {"traceEvents": [_x("ProfilerStep#" + "9" * 5000, 0, 100), _kernel(10, 50)]})
    obj = _ok_json(capsys, path)
    (rank,) = obj["ranks"]
    assert rank["steps"] == [] and rank["gpu_busy_fraction"] == 1.0  # window = the one kernel
    assert any("more than 18 digits" in w for w in load_rank(path).warnings)


def test_steps_out_of_time_order_are_ordered_by_time(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _write(tmp_path, "t.json", {"traceEvents": _steps([4, 2, 3, 1])})
    rt = load_rank(path)
    assert [s.number for s in rt.steps] == [4, 2, 3, 1]  # time order, as the windows happened
    assert any("not in time order" in w for w in rt.warnings)
    (rank,) = _ok_json(capsys, path)["ranks"]
    assert rank["window_s"] in (pytest.approx(300e-6), pytest.approx(400e-6))  # with or without warm-up
    assert rank["gpu_busy_fraction"] == pytest.approx(0.5)  # 50 of every 100 µs, by construction
    assert rank["step_time_median_s"] == pytest.approx(100e-6)


def test_negative_timestamps_give_the_figures_of_the_same_trace_shifted(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    plain = _ok_json(capsys, _write(tmp_path, "a.json", {"traceEvents": _steps([1, 2, 3, 4])}))["ranks"][0]
    shifted = _ok_json(capsys, _write(tmp_path, "b.json", {"traceEvents": _steps([1, 2, 3, 4], t0=-1e6)}))["ranks"][0]
    for key in ("window_s", "gpu_busy_fraction", "step_time_median_s", "idle_breakdown"):
        assert shifted[key] == plain[key], key
    assert plain["window_s"] > 0


def test_gemm_shapes_that_broke_the_flop_estimate_load(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    events = _steps([1, 2]) + [
        _x("aten::bmm", 5, 10, **{"Input Dims": [[4, 4, 4]], "Input type": ["float"]}),       # < 2 shapes
        _x("aten::mm", 105, 10, **{"Input Dims": [[1e308, 2], [2, 1e308]], "Input type": ["float"]}),
    ]
    _ok_json(capsys, _write(tmp_path, "t.json", {"traceEvents": events}))


# -- special files -------------------------------------------------------------------------------------

@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this OS")
def test_dev_zero_is_refused_at_once(capsys: pytest.CaptureFixture) -> None:
    t0 = time.perf_counter()
    rc, _, err = _diagnose(capsys, "/dev/zero")
    assert time.perf_counter() - t0 < 1.0
    assert rc == 2 and "a character device, not a regular file" in err and "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this OS")
def test_named_pipe_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    rc, _, err = _diagnose(capsys, str(fifo))
    assert time.perf_counter() - t0 < 1.0
    assert rc == 2 and "a named pipe (FIFO), not a regular file" in err


# -- lenient where real tools are -------------------------------------------------------------------

def test_nan_and_infinity_literals_as_python_writes_them(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    events = _steps([1, 2]) + [_x("no_time", float("nan"), 1.0), _x("forever", 5.0, float("inf")),
                               _x("with_flops", 5.0, 1.0, flops=float("-inf"))]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))  # json.dump's default: NaN, Infinity literals
    assert b"NaN" in path.read_bytes() and b"-Infinity" in path.read_bytes()
    rt = load_rank(path)
    assert sum(len(lane) for lane in rt.lanes) == 5  # 2 steps + 2 kernels + with_flops
    assert any("skipped 2 events without a usable time" in w and "'no_time'" in w for w in rt.warnings)
    assert _ok_json(capsys, path)["ranks"][0]["gpu_busy_fraction"] == pytest.approx(0.5)


def test_lone_surrogate_escape_is_replaced(tmp_path: Path) -> None:
    text = json.dumps({"traceEvents": _steps([1, 2])}).replace('"gemm_kernel"', '"gemm\\ud800kernel"', 1)
    rt = load_rank(_write(tmp_path, "t.json", text.encode()))
    assert "gemm\ufffdkernel" in list(rt.strings)
    assert any("lone UTF-16 surrogates replaced" in w for w in rt.warnings)


def test_two_concatenated_documents_read_the_first_and_say_so(tmp_path: Path) -> None:
    first = json.dumps({"traceEvents": _steps([1, 2])}).encode()
    second = json.dumps({"traceEvents": _steps([3, 4, 5])}).encode()
    rt = load_rank(_write(tmp_path, "t.json", first + b"\n" + second))
    assert [s.number for s in rt.steps] == [1, 2]
    (note,) = [w for w in rt.warnings if "more than one JSON document" in w]
    assert f"the first ({len(first):,} bytes)" in note and f"the {len(second):,} bytes after it" in note


def test_a_bad_event_is_skipped_and_counted_with_its_index_and_byte(tmp_path: Path) -> None:
    events = _steps([1, 2])
    events.insert(3, {"ph": "X", "name": "bad", "ts": "abc", "dur": 1, "pid": 1, "tid": 1})
    text = json.dumps({"traceEvents": events}).encode()
    rt = load_rank(_write(tmp_path, "t.json", text))
    assert sum(len(lane) for lane in rt.lanes) == 4
    (note,) = [w for w in rt.warnings if "bad event" in w]
    byte = text.index(b'{"ph": "X", "name": "bad"')
    assert "skipped 1 bad event of 5" in note and f"event #3 at byte {byte:,}" in note and "`$.ts`" in note


def test_an_event_with_broken_syntax_is_skipped_with_its_byte(tmp_path: Path) -> None:
    text = json.dumps({"traceEvents": _steps([1, 2, 3])}, indent=1)
    broken = text.replace('"name": "gemm_kernel"', '"name": gemm_kernel"', 1)  # the first kernel
    rt = load_rank(_write(tmp_path, "t.json", broken.encode()))
    assert sum(len(lane) for lane in rt.lanes) == 5  # 3 steps, 2 of the 3 kernels
    (note,) = [w for w in rt.warnings if "broken JSON syntax" in w]
    assert f"at byte {broken.index('gemm_kernel'):,}" in note and "invalid character" in note


def test_messages_say_what_is_wrong_and_where(tmp_path: Path) -> None:
    cases = {
        b'{"traceEvents": 5}': "traceEvents is not a list",
        b'{"traceEvents": [], "x": tru}': "at byte 26 (line 1, column 27): invalid character 'r'",
        b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "args": {"a": 1}, "name": "a': "cut short",
        b'{"schemaVersion": 1}': "no traceEvents list",
        b"[1, 2, 3]": "none of the 3 entries of the event list is an X or B/E event",
    }
    for content, expected in cases.items():
        path = _write(tmp_path, "t.json", content)
        with pytest.raises(TraceFormatError) as info:
            load_rank(path)
        assert expected in str(info.value) and str(path) in str(info.value), (content, str(info.value))
        assert "cut before its first complete event" not in str(info.value) or expected == "cut short"


def test_corrupt_gzip_in_the_middle_keeps_what_came_before(tmp_path: Path) -> None:
    raw = json.dumps({"traceEvents": _steps(list(range(1, 400)))}).encode()
    packed = bytearray(gzip.compress(raw))
    packed[len(packed) // 2:] = bytes(len(packed) - len(packed) // 2)  # second half zeroed
    rt = load_rank(_write(tmp_path, "t.json.gz", bytes(packed)))
    assert rt.truncation is not None and "gzip" in rt.truncation.reason
    assert 0 < rt.truncation.events_kept < 798


# -- the memory budget --------------------------------------------------------------------------------

_TINY = b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1},'


def test_a_trace_over_the_budget_is_refused_early_naming_the_budget_and_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _write(tmp_path, "t.json.gz", gzip.compress(b'{"traceEvents":[' + _TINY * 400_000 + _TINY[:-1] + b"]}"))
    with pytest.raises(MemoryBudgetError) as info:
        load_rank(path, memory_budget=16_000_000)
    message = str(info.value)
    assert "16 MB memory budget" in message and "--memory-budget" in message and str(path) in message
    rc, _, err = _diagnose(capsys, str(path), "--memory-budget", "16MB")
    assert rc == 2 and "16 MB memory budget" in err
    assert load_rank(path, memory_budget=2_000_000_000).n_events == 400_001  # fits the default
    rc, _, err = _diagnose(capsys, str(path), "--memory-budget", "lots")
    assert rc == 2 and "not a size" in err


def _peak_rss_bytes(code: str, *args: str) -> tuple[int, float, str]:
    """Run ``code`` in a fresh interpreter: (peak RSS, wall seconds, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL,  # noqa: S603
                            stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.stderr.close()
    return usage.ru_maxrss * 1024, time.perf_counter() - t0, err


_LOAD = ("import sys\nfrom gpuperf_gui.core.trace.ingest.load import load_rank\n"
         "from gpuperf_gui.core.trace.model.trace_model import TraceFormatError\n"
         "try:\n    load_rank(sys.argv[1], memory_budget=int(sys.argv[2]))\n"
         "except TraceFormatError as e:\n    print(e, file=sys.stderr)\n")
_IMPORT_ONLY = "import gpuperf_gui.core.trace.ingest.load, gpuperf_gui.core.trace.analysis.rank_analysis"


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="peak RSS of a child needs wait4")
def test_gzip_bombs_stay_within_the_budget_plus_the_interpreter(tmp_path: Path) -> None:
    """Small-scale versions of benchmarks/gzip_bombs.py: 256 MB of zeros and 64 MB of tiny events."""
    zeros = _write(tmp_path, "zeros.json.gz", gzip.compress(b"\0" * (16 << 20), 9) * 16)
    member = gzip.compress(_TINY * ((16 << 20) // len(_TINY)), 9)
    events = _write(tmp_path, "events.json.gz", gzip.compress(b'{"traceEvents":[') + member * 4
                    + gzip.compress(_TINY[:-1] + b"]}"))
    budget = 48_000_000
    baseline, _, _ = _peak_rss_bytes(_IMPORT_ONLY)  # the fixed overhead: interpreter + modules
    for path, expected in ((zeros, "not JSON"), (events, "48 MB memory budget")):
        peak, wall_s, err = _peak_rss_bytes(_LOAD, str(path), str(budget))
        assert expected in err, err
        assert peak - baseline < budget, (path.name, peak, baseline)
        assert wall_s < 30


# -- run folders ------------------------------------------------------------------------------------

def test_run_folder_skips_other_json_and_marks_a_broken_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for rank in range(3):
        write_synth_trace("healthy", tmp_path / f"worker{rank}.pt.trace.json", steps=3, rank=rank)
    (tmp_path / "meta.json").write_text(json.dumps({"run": "x", "ranks": 3}))
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1}))
    model = Trace([tmp_path], workers=1).model()
    assert [r.rank for r in model.ranks] == [0, 1, 2]
    assert sorted(n.split(":")[0] for n in model.notes) == ["skipped config.json", "skipped meta.json"]
    broken = tmp_path / "worker1.pt.trace.json"
    broken.write_bytes(broken.read_bytes()[:40] + b"\x00garbage")
    rc, out, err = _diagnose(capsys, str(tmp_path), "--json", "--workers", "2")
    assert rc == 0, err
    obj = json.loads(out)
    assert [r["rank"] for r in obj["ranks"]] == [0, 2]
    (note,) = [n for n in obj["load_notes"] if "worker1" in n]
    assert note.startswith("rank file worker1.pt.trace.json could not be loaded") and "byte" in note


def test_a_folder_where_nothing_loads_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "meta.json").write_text("{}")
    (tmp_path / "rank0.json").write_text("[")
    rc, _, err = _diagnose(capsys, str(tmp_path))
    assert rc == 2 and "rank0.json" in err and "1 more file did not load either" in err


# -- the CLI --------------------------------------------------------------------------------------------

def test_synth_with_absurd_steps_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    t0 = time.perf_counter()
    rc = main(["synth", "launch_bound", "--steps", "99999999999", "-o", str(tmp_path / "t.json")])
    _, err = capsys.readouterr()
    assert rc == 2 and "--steps" in err and time.perf_counter() - t0 < 5
    rc = main(["synth", "launch_bound", "--steps", "20000", "--size", "1", "-o", str(tmp_path / "t.json")])
    _, err = capsys.readouterr()
    assert rc == 2 and "events" in err and not (tmp_path / "t.json").exists()


def test_trace_result_takes_the_budget(tmp_path: Path) -> None:
    path = write_synth_trace("healthy", tmp_path / "t.json", steps=3)
    assert Trace([path], memory_budget=16_000_000).result().ranks
    with pytest.raises(ValueError, match="outside"):
        Trace([path], memory_budget=1000).result()


def test_digit_strings_as_thread_and_stream_ids(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Found by the fuzz: a 5,000-digit string as a tid (lane sort and stream labels parse digits)."""
    events = _steps([1, 2]) + [_x("op", 5, 1, tid="9" * 5000), dict(_kernel(150, 10), tid="stream " + "7" * 5000)]
    _ok_json(capsys, _write(tmp_path, "t.json", {"traceEvents": events}))


def test_a_kernel_of_1e_320_us_gives_no_division_by_zero(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Found by benchmarks/fuzz.py: a GEMM whose only kernel lasts 1e-320 µs (0 s once summed in seconds)."""
    events = _steps([1, 2]) + [
        _x("aten::mm", 20, 30, **{"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}),
        _x("cudaLaunchKernel", 25, 5, cat="cuda_runtime", correlation=9),
        dict(_x("gemm", 40, 1e-320, cat="kernel", pid=0, tid=7, device=0, stream=7, correlation=9)),
    ]
    obj = _ok_json(capsys, _write(tmp_path, "t.json", {"traceEvents": events}))
    points = obj["ranks"][0]["roofline_points"]
    assert all(p["achieved_flops_per_s"] is None or p["achieved_flops_per_s"] > 0 for p in points)


def test_a_cut_file_whose_only_trace_events_is_inside_a_string(tmp_path: Path) -> None:
    """Found by benchmarks/fuzz.py: salvage closed a JSON object that has no traceEvents key."""
    path = _write(tmp_path, "t.json", b'{"name": "\\"traceEvents\\": [", "x": 1, "y": [{"a": 1}, {"b"')
    with pytest.raises(TraceFormatError, match="no traceEvents list"):
        load_rank(path)
