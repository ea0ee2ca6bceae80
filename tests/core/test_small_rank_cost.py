"""The fixed cost of a small rank: the shortcuts read what the long ways read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.ingest import build, source, stream_decode
from gpuperf_gui.core.trace.ingest.budget import MemoryBudget


def _trace(path: Path, n: int) -> Path:
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i % 3}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
              for i in range(n)]
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    return path


@pytest.mark.parametrize("chunk_bytes", [64, 8 << 20])
def test_owned_chunks_are_the_file_bytes_as_bytearrays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       chunk_bytes: int) -> None:
    monkeypatch.setattr(source, "OUT_CHUNK_BYTES", chunk_bytes)
    path = _trace(tmp_path / "t.json", 40)
    with source.TraceStream(path) as stream:
        chunks = list(stream)
        assert stream.read_size() == 1  # read to its end
    assert all(type(c) is bytearray for c in chunks)
    assert b"".join(chunks) == path.read_bytes()


def test_a_file_read_whole_in_one_chunk_streams_all_its_events(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json", 40)
    rt = stream_decode.load_rank_streamed(path, budget=MemoryBudget.of(None), max_bytes=None)
    assert rt is not None and rt.n_events == 40   # by hand: 40 X events, one thread; the streamed path took it
    assert rt.metadata.get("displayTimeUnit") == "ms"  # the keys after the events array: the head and tail kept
    assert sorted({rt.strings[i] for lane in rt.cpu_lanes for i in lane.name_id.tolist()}) == ["op0", "op1", "op2"]


def test_first_run_codes_are_those_of_first_appearance() -> None:
    ids = build._Ids()
    assert build._remapped(ids, ["x", "y"]).tolist() == [0, 1]          # distinct: 0, 1 at once
    assert build._remapped(ids, ["y", "z"]).tolist() == [1, 2]          # later runs: looked up, new ones added
    dup = build._Ids()
    assert build._remapped(dup, ["a", "b", "a"]).tolist() == [0, 1, 0]  # not distinct: one at a time
    assert list(dup.items()) == [("a", 0), ("b", 1)]
