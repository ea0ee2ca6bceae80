"""The C scanner (core/trace/ingest/scanner/_scan.c, core/trace/ingest/scanner/scan.py) against msgspec, the independent reader.

A run the scanner reads must give exactly the columns that msgspec's typed decode of the same text
gives through :meth:`EventColumns.add` (every column, string and id codes, shapes, B/E/M events);
a run it does not read exactly must be handed back (None), never read differently. Oracles: the
real traces in tests/data, hand-written runs at every edge msgspec draws (types, escapes, numbers,
duplicates, UTF-8), and random events from hypothesis.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuperf_gui.core.trace.ingest.scanner import scan
from gpuperf_gui.core.trace.ingest import stream_decode
from gpuperf_gui.core.trace.ingest.build import EventColumns

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stream_decode import TRACE_FILES, _streamed, fingerprint  # noqa: E402

# Every test here reads with the extension. Where it is not built (no C compiler) they are skipped:
# msgspec reads every run there (tests/core/test_no_scanner.py). CI builds it, and with
# GPUPERF_NO_SKIPS=1 a skip fails there, so CI still fails when the build did not happen.
pytestmark = pytest.mark.skipif(scan._scan is None, reason="the C scanner is not built (no C compiler)")

KEYS = ("cat", "name", "pid", "tid", "ts", "dur", "correlation", "external", "external_2021", "flops",
        "device_rows", "bytes", "device", "stream")


def test_the_extension_is_built_here() -> None:
    """CI compiles it (setup.py): without it every test below would compare msgspec with itself."""
    assert scan._scan is not None and scan.ENABLED


def _state(columns: EventColumns) -> dict:
    out = {key: columns.column(key).tolist() for key in KEYS}
    out["ids"] = [list(ids.items()) for ids in (columns._cats, columns._names, columns._pids, columns._tids)]
    rows, codes, shape_keys = columns.shapes()
    out["shapes"] = [(i, shape_keys[c]) for i, c in zip(rows.tolist(), codes.tolist())]
    out["rest"] = [msgspec.json.encode(e) for e in columns._rest]
    out["n"] = columns.n
    return out


def _decoded(text: bytes, use_scanner: bool, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202
    """``(entries, kept, columns state)`` or the error msgspec raises."""
    monkeypatch.setattr(scan, "ENABLED", use_scanner)
    columns = EventColumns()
    try:
        entries, kept, _ = stream_decode.decode_into(columns, bytearray(text), len(text))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return type(exc).__name__
    return entries, kept, json.dumps(_state(columns), default=repr)


def _same(text: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both readers agree on ``text``; returns whether the scanner read it itself."""
    assert _decoded(text, True, monkeypatch) == _decoded(text, False, monkeypatch), text
    monkeypatch.setattr(scan, "ENABLED", True)
    try:
        return scan.scan_run(bytearray(text), len(text)) is not None
    except msgspec.ValidationError:  # read, but a B/E/M event in it is refused (by msgspec)
        return False


KINETO = (b'{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":5237975810948.347,"dur":44.478,'
          b'"args":{"External id":31,"Sequence number":3707,"Input Dims":[[2048,512],[512,1536]],'
          b'"Input type":["float","float"],"Concrete Inputs":["",""],"Ev Idx":3106896}}')
KERNEL = (b'{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_tn","pid":0,"tid":"stream 7","ts":12.5,'
          b'"dur":3,"args":{"External id":31,"correlation":99,"device":0,"stream":7,"bytes":4096,'
          b'"flops":1.5e9,"grid":[1,2,3]}}')
READ_BY_SCANNER = [
    b"[]",
    b"[" + KINETO + b"]",
    b"[" + KINETO + b"," + KERNEL + b"]",
    b' [ \n' + KERNEL + b' ,\n\t' + KINETO + b' ] \n',
    b'[{"ph":"s","id":1,"ts":"not checked in a skipped phase"},' + KINETO + b']',
    b'[{"ph":"M","name":"process_name","pid":7,"args":{"name":"python"}},' + KINETO + b']',
    b'[{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},{"ph":"E","pid":1,"tid":1,"ts":2.5}]',
    b'[{"ph":"X","name":"quote \\" slash \\\\ tab \\t","cat":"a\\/b","ts":1}]',
    b'[{"ph":"X","name":"caf\xc3\xa9 \xe2\x86\x92","ts":1,"zz":"\xff skipped bytes are not checked"}]',
    b'[{"ph":"X","ts":-0.0,"dur":-0},{"ph":"X","ts":1E5,"dur":2.5e-3},{"ph":"X","ts":0.1}]',
    b'[{"ph":"X","ts":123456789012345678901234567890,"args":{"flops":1.7976931348623157e308}}]',
    b'[{"ph":"X","ts":5237975810948.3471234,"dur":1e-320}]',   # beyond the fast path: strtod
    b'[{"ph":"X","pid":-3,"tid":9223372036854775807,"args":{"External id":-9223372036854775808}}]',
    b'[{"ph":"X","args":{"name":null,"Input Dims":"[2, 3]","Concrete Inputs":null}}]',
    b'[{"ph":"X","zz":[1,{"a":[[],{}],"b":[true,false,null]}],"ts":2}]',
    b'[{"ph":"X"}, {"ph":"i","s":"t"}, {"ph":"C","args":{"x":1}}]',
]
HANDED_BACK = [
    b'[{"ph":"X","ts":"1"}]',                              # wrong type: msgspec refuses
    b'[{"ph":"X","pid":1.0}]',
    b'[{"ph":"X","args":{"External id":2.0}}]',
    b'[{"ph":"X","args":{"External id":18446744073709551615}}]',  # beyond int64: msgspec's big int
    b'[{"ph":"X","ts":1e400}]',
    b'[{"ph":"X","args":null}]',
    b'[{"ph":"X","cat":null}]',
    b'[{"ph":"X","args":{"stream":true}}]',
    b'[{"ph":"X","args":{"stream":"0x0"}}]',              # a string number: msgspec's path reads it
    b'[{"ph":"X","name":"a","name":"b"}]',                 # duplicate key
    b'[{"ph":"X","ph":"s"}]',
    b'[{"ph":"Q"}]', b'[{"ts":1}]', b'[{}]',
    b'[{"ph":"X","name":"\xff"}]',                         # invalid UTF-8 in a kept string
    b'[{"ph":"X","args":{"name":"\xff"}}]',
    b'[{"ph":"X","zz":"\\ud800"}]',                        # \\u escapes: msgspec's rules
    b'[{"ph":"X","name":"\\u00e9"}]',
    b'[{"ph":"X","zz":"a\x01b"}]',                         # control character
    b'[{"ph":"X","ts":01}]', b'[{"ph":"X","ts":-}]', b'[{"ph":"X","ts":1.}]', b'[{"ph":"X","ts":.5}]',
    b'[{"ph":"X"},]', b'[{"ph":"X"}', b'[{"ph":"X"}] x', b'[{"ph":"X",}]', b'[{"ph":"X" "ts":1}]',
    b'[{"ph":"X","zz":[1,,2]}]', b'[{"ph":"X","zz":tru}]', b'[{"ph":"X","zz":{"a"}}]',
    b'[{"ph":"X","zz":' + b"[" * 300 + b"]" * 300 + b'}]',  # deeper than the scanner reads
    b'[{"ph":"X","ts":1}], "deviceProperties": []',       # the events array's end: msgspec finds it
]


@pytest.mark.parametrize("text", READ_BY_SCANNER)
def test_runs_the_scanner_reads_give_msgspecs_columns(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same(text, monkeypatch)


@pytest.mark.parametrize("text", HANDED_BACK)
def test_runs_it_does_not_read_exactly_are_handed_to_msgspec(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _same(text, monkeypatch)


def test_kept_strings_with_escapes_map_to_one_id_per_string(monkeypatch: pytest.MonkeyPatch) -> None:
    text = b'[{"ph":"X","name":"a/b","ts":1},{"ph":"X","name":"a\\/b","ts":2},{"ph":"X","name":"c","ts":3}]'
    assert _same(text, monkeypatch)
    columns = EventColumns()
    columns.add_scanned(scan.scan_run(bytearray(text), len(text)))
    assert columns.column("name").tolist() == [0, 0, 1] and list(columns._names) == ["a/b", "c"]


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
_names = st.sampled_from(["aten::mm", "ampere_sgemm", "", "a\"b", "é", "ProfilerStep#3", "cudaLaunchKernel"])
_numbers = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                     st.integers(0, 10**16).map(lambda v: v / 1000))
_args = st.fixed_dictionaries({}, optional={
    "External id": st.one_of(st.integers(-2**63, 2**64), st.floats(allow_nan=False, allow_infinity=False)),
    "correlation": st.integers(-5, 10**12), "stream": st.one_of(st.integers(-1, 40), st.just("0x0")),
    "device": st.integers(-1, 8), "bytes": _numbers, "flops": _numbers, "Input Dims": _values,
    "Input type": _values, "Concrete Inputs": _values, "name": st.one_of(st.none(), _names), "zz": _values})
_events = st.fixed_dictionaries({"ph": st.sampled_from(["X", "X", "X", "B", "E", "M", "s", "f", "i"])}, optional={
    "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", "Trace", ""]), "name": _names,
    "pid": st.one_of(st.integers(-2, 2**40), st.sampled_from(["rank 0", "0"])),
    "tid": st.one_of(st.integers(0, 9), st.just("stream 7")), "ts": _numbers, "dur": _numbers,
    "args": _args, "id": st.integers(0, 9), "zz": _values})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_events, max_size=12), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_random_events_read_as_msgspec_reads_them(events: list, separators: tuple) -> None:
    text = json.dumps(events, separators=separators, ensure_ascii=False).encode()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same(text, monkeypatch)


def test_well_formed_kineto_numbers_are_read_exactly() -> None:
    """Timestamps of every shape Kineto writes: the scanner's doubles equal Python's float()."""
    rng = np.random.default_rng(7)
    texts = [f"{v:.3f}" for v in rng.uniform(0, 9e15, 2000)] + [repr(v) for v in rng.uniform(-1e6, 1e18, 2000).tolist()]
    events = ",".join(f'{{"ph":"X","ts":{t}}}' for t in texts).encode()
    scanned_ts = scan.scan_run(bytearray(b"[" + events + b"]"), len(events) + 2).columns["ts"]
    assert np.array_equal(scanned_ts, np.array([float(t) for t in texts]))   # NaN would differ too


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.name)
def test_every_trace_loads_the_same_with_and_without_the_scanner(path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = []
    for enabled in (True, False):
        monkeypatch.setattr(scan, "ENABLED", enabled)
        try:
            rt = _streamed(path)
            outcomes.append(None if rt is None else fingerprint(rt))
        except Exception as exc:  # noqa: BLE001 - the same refusal on both paths
            outcomes.append(f"{type(exc).__name__}: {exc}")
    assert outcomes[0] == outcomes[1]


@pytest.fixture
def scan_threads_used(monkeypatch: pytest.MonkeyPatch) -> list:
    """Lists the loads that finished on scanning threads (the one-thread scans not)."""
    finished: list = []
    real_finish = stream_decode._Splitter.finish

    def finish(self):  # noqa: ANN001, ANN202
        if self._max_in_flight:  # started with threads (a run handed back stops them)
            finished.append(1)
        return real_finish(self)

    monkeypatch.setattr(stream_decode._Splitter, "finish", finish)
    return finished


def test_scanning_threads_identical_to_one_thread_on_the_largest_real_traces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_threads_used: list) -> None:
    """Two threads, 256 kB runs, plain and gzip: every column, string and warning as one thread."""
    from gpuperf_gui.core.trace.ingest import source
    from gpuperf_gui.core.trace.ingest.budget import MemoryBudget
    from test_stream_decode import SHARED

    monkeypatch.setattr(source, "OUT_CHUNK_BYTES", 256 << 10)
    largest = sorted(SHARED, key=lambda p: p.stat().st_size)[-3:]
    for path in largest:
        one = stream_decode.load_rank_streamed(path, budget=MemoryBudget(), max_bytes=None, threads=1)
        two = stream_decode.load_rank_streamed(path, budget=MemoryBudget(), max_bytes=None, threads=2)
        assert one is not None and two is not None
        assert fingerprint(two) == fingerprint(one), path
    assert len(scan_threads_used) == len(largest)


def test_scanning_threads_hand_false_cuts_and_the_array_end_to_the_serial_splitter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_threads_used: list) -> None:
    """The hand-made file of test_stream_decode (false cuts, B/E pairs, metadata after the events)
    read straight into 4 kB buffers by two scanning threads: what the whole-file path gives."""
    from gpuperf_gui.core.trace.ingest import source
    from test_stream_decode import check_false_cuts_and_array_end

    monkeypatch.setattr(source, "OUT_CHUNK_BYTES", 4096)
    check_false_cuts_and_array_end(tmp_path)
    assert scan_threads_used == [1]


def test_scanning_threads_for_big_files_on_several_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUPERF_DECODE_WORKERS", raising=False)
    big = 1 << 30
    monkeypatch.setattr(stream_decode.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(stream_decode, "_idle_cpus", lambda: 0.0)  # every core looks busy: still two
    assert stream_decode.scan_threads(big) == 2
    assert stream_decode.scan_threads(big, 3) == 3  # asked for: given
    monkeypatch.setattr(stream_decode, "_idle_cpus", lambda: 5.6)
    assert stream_decode.scan_threads(big) == 6
    monkeypatch.setattr(stream_decode.os, "sched_getaffinity", lambda pid: {0})
    assert stream_decode.scan_threads(big) == 1  # one CPU: no thread
    assert stream_decode.scan_threads(1 << 20) == 1  # 1 MB: one thread
    monkeypatch.setenv("GPUPERF_DECODE_WORKERS", "1")
    assert stream_decode.scan_threads(big) == 1
