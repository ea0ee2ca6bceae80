"""Property tests of the loader: whatever the bytes, it loads what is valid or raises TraceFormatError."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuperf_gui.core.trace.ingest.budget import MemoryBudgetError
from gpuperf_gui.core.trace.ingest.decode import estimated_load_bytes
from gpuperf_gui.core.trace.ingest.load import load_rank, load_rank_whole
from gpuperf_gui.core.trace.ingest.stream_decode import STREAM_EVENT_COST_BYTES, streamed_load_bytes
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.trace.ingest.source import EventCounter

DATA = Path(__file__).resolve().parents[1] / "data"
RAW = gzip.decompress((DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes())
SMALL = (DATA / "backward_thread.json").read_bytes()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LIMIT = 1 << 20


def _load_or_format_error(tmp_path: Path, data: bytes, name: str = "t.json") -> None:
    path = tmp_path / name
    path.write_bytes(data)
    try:
        rt = load_rank(path, max_bytes=LIMIT)
    except TraceFormatError as exc:
        assert str(path) in str(exc)
        return
    for lane in rt.lanes:  # whatever loaded is consistent
        n = len(lane)
        assert all(len(a) == n for a in (lane.duration_us, lane.name_id, lane.depth, lane.correlation))
        assert (lane.duration_us >= 0).all()


@FAST
@given(cut=st.integers(min_value=0, max_value=len(RAW)))
def test_truncation_at_any_offset(tmp_path: Path, cut: int) -> None:
    _load_or_format_error(tmp_path, RAW[:cut])


@FAST
@given(flips=st.lists(st.tuples(st.integers(0, len(SMALL) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_random_byte_flips(tmp_path: Path, flips: list[tuple[int, int]]) -> None:
    data = bytearray(SMALL)
    for pos, value in flips:
        data[pos] = value
    _load_or_format_error(tmp_path, bytes(data))


@FAST
@given(cut=st.integers(0, 6785), flip=st.integers(0, 6784))
def test_corrupt_gzip(tmp_path: Path, cut: int, flip: int) -> None:
    data = bytearray((DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes()[:cut])
    if flip < len(data):
        data[flip] ^= 0xFF
    _load_or_format_error(tmp_path, bytes(data), "t.json.gz")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)
event_fields = st.fixed_dictionaries({}, optional={
    "ph": st.sampled_from(["X", "B", "E", "M", "i", "s", "f", "C", "zz"]) | json_values,
    "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "Trace"]) | json_values,
    "name": st.text(max_size=30) | json_values, "pid": json_values, "tid": json_values,
    "ts": st.floats(allow_nan=False) | json_values, "dur": st.floats(allow_nan=False) | json_values,
    "args": st.dictionaries(st.sampled_from(["correlation", "External id", "stream", "bytes", "Input Dims",
                                             "device", "name"]), json_values, max_size=4) | json_values,
})


@FAST
@given(top=st.one_of(json_values, st.fixed_dictionaries({"traceEvents": st.lists(event_fields, max_size=12)},
                                                          optional={"deviceProperties": json_values,
                                                                    "distributedInfo": json_values,
                                                                    "baseTimeNanoseconds": json_values})))
def test_wrong_field_types_and_missing_trace_events(tmp_path: Path, top: object) -> None:
    _load_or_format_error(tmp_path, json.dumps(top).encode())


def test_deep_nesting_giant_strings_and_empty_files(tmp_path: Path) -> None:
    _load_or_format_error(tmp_path, b'{"traceEvents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}")
    giant = json.dumps({"traceEvents": [{"ph": "X", "name": "x" * 5_000_000, "ts": 1, "dur": 2,
                                         "cat": "cpu_op", "pid": 1, "tid": 1}]}).encode()
    _load_or_format_error(tmp_path, giant)
    _load_or_format_error(tmp_path, b"")
    _load_or_format_error(tmp_path, b"   \n")
    _load_or_format_error(tmp_path, gzip.compress(b"{" * (2 << 20)), "bomb.json.gz")


@FAST
@given(text=st.lists(st.sampled_from([b'{"ph":"X"}', b'"ph"', b"{", b"}", b",", b'"p', b'h"', b" ", b"x"]),
                     max_size=40).map(b"".join),
       cuts=st.lists(st.integers(0, 400), max_size=6))
def test_event_counter_does_not_depend_on_how_the_text_is_chunked(text: bytes, cuts: list[int]) -> None:
    whole = EventCounter()
    whole.feed(text)
    assert whole.ph_keys == text.count(b'"ph"') and whole.braces == text.count(b"{")
    chunked = EventCounter()
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    for a, b in zip(bounds, bounds[1:]):
        chunked.feed(text[a:b])
    assert (chunked.ph_keys, chunked.braces) == (whole.ph_keys, whole.braces)


@FAST
@given(n_events=st.integers(1, 3000), budget_mb=st.integers(16, 64))
def test_a_whole_file_load_is_refused_exactly_when_its_cost_model_says_it_does_not_fit(
        tmp_path: Path, n_events: int, budget_mb: int) -> None:
    event = b'{"ph":"X","cat":"cpu_op","name":"%d","pid":1,"tid":1,"ts":%d,"dur":1,"args":{"x":"' + b"y" * 3000 + b'"}},'
    text = b'{"traceEvents":[' + b"".join(event % (i, i) for i in range(n_events))[:-1] + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(text)
    budget = budget_mb * 1_000_000
    fits = estimated_load_bytes(len(text), n_events) <= budget
    try:
        rt = load_rank_whole(path, memory_budget=budget)
    except MemoryBudgetError as exc:
        assert not fits and f"{budget_mb} MB memory budget" in str(exc)
    else:
        assert fits and rt.n_events == n_events


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_events=st.integers(1, 150_000), budget_mb=st.integers(16, 64), gz=st.booleans())
def test_a_streamed_load_is_refused_between_its_cost_models_bounds(
        tmp_path: Path, n_events: int, budget_mb: int, gz: bool) -> None:
    """Refused whenever its columns alone (190 B an event) exceed the budget; loaded whenever the
    most the streamed model can count fits (every event, all the text and every struct at once)."""
    event = b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":%d,"dur":1},'
    text = b'{"traceEvents":[' + b"".join(event % i for i in range(n_events))[:-1] + b"]}"
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(text, 1) if gz else text)
    budget = budget_mb * 1_000_000
    try:
        rt = load_rank(path, memory_budget=budget)
    except MemoryBudgetError as exc:
        assert f"{budget_mb} MB memory budget" in str(exc)
        assert streamed_load_bytes(n_events, len(text), n_events) > budget
    else:
        assert rt.n_events == n_events
        assert STREAM_EVENT_COST_BYTES * n_events <= budget
