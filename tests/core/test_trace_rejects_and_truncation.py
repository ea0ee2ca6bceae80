"""Inputs that are not traces are refused with a clear message (API and CLI exit 2); a CPU-only trace
is accepted; a truncated trace says what may be missing and lowers the diagnosis' confidence."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.trace.synthetic.synth import synth_trace, write_synth_trace


@pytest.mark.parametrize("content, reason", [
    (b'{"foo": 1}', "no traceEvents list"),
    (b"[1, 2, 3]", "no events with a phase and timestamp"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "abc", "dur": 1}]}', "no events with a phase and timestamp"),
    (b'{"traceEvents": []}', "no events with a phase and timestamp"),
    (b'{"traceEvents": [{"ph": "X", "name": "no ts", "cat": "cpu_op", "pid": 1, "tid": 1}]}',
     "no events with a phase and timestamp"),
])
def test_json_that_is_not_a_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture,
                                             content: bytes, reason: str) -> None:
    path = tmp_path / "n.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=reason) as info:
        load_rank(path)
    assert str(path) in str(info.value)
    assert main(["diagnose", str(path)]) == 2
    assert reason in capsys.readouterr().err


def test_a_small_cpu_only_trace_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 5, "dur": 3}]}))
    result = Trace([path]).result()
    assert result.diagnosis.signature == "inconclusive"


def test_gzip_of_garbage_says_so_without_raw_bytes(tmp_path: Path) -> None:
    path = tmp_path / "g.json.gz"
    path.write_bytes(gzip.compress(b"\xa0'\x00garbage"))
    with pytest.raises(TraceFormatError) as info:
        load_rank(path)
    message = str(info.value)
    assert "decompressed data does not start with '{' or '['" in message
    assert "\\x" not in message and "b'" not in message and 'b"' not in message


def _kineto_ordered(scenario: str) -> bytes:
    """A synthetic trace with its events in Kineto's order: CPU events first, GPU events after."""
    data = synth_trace(scenario, steps=4)
    events = data["traceEvents"]
    data["traceEvents"] = sorted(events, key=lambda e: e.get("pid") == 0 and e.get("ph") == "X")
    return json.dumps(data).encode()


def test_a_trace_cut_in_half_says_gpu_events_may_be_missing_and_is_not_healthy(tmp_path: Path) -> None:
    raw = _kineto_ordered("healthy")
    path = tmp_path / "half.json"
    path.write_bytes(raw[: len(raw) // 2])
    rt = load_rank(path)
    assert rt.truncation is not None and rt.truncation.gpu_events_may_be_missing
    note = rt.truncation.describe()
    assert f"after its first {rt.truncation.bytes_used:,} bytes is lost" in note
    assert "GPU events may be missing" in note
    d = Trace([path]).result().diagnosis
    assert d.signature == "inconclusive"
    assert "cut short" in d.evidence[0]


def test_a_truncated_trace_with_gpu_events_carries_the_caveat(tmp_path: Path) -> None:
    full = write_synth_trace("launch_bound", tmp_path / "full.json", steps=4)
    raw = full.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) * 9 // 10])  # events in time order: GPU events interleaved
    whole, part = Trace([full]).result().diagnosis, Trace([cut]).result().diagnosis
    assert part.signature == whole.signature == "launch_bound"
    assert part.confidence == pytest.approx(round(whole.confidence / 2, 2))
    assert any("truncated" in e for e in part.evidence)
