"""The one table of trace fields (core/trace/vocabulary/schema.py) against the places that read them.

The C scanner cannot import the table: its key lists, column order, defaults and skipped phases are
parsed out of ``_scan.c`` and must be the table's. The Python side (the msgspec structs, the columns
of EventColumns and of the scanner) is derived from the table; these tests fail when a hand edit
there drifts from it. Last, one event holding every key of the table is read by both decoders
into the same columns, the table's defaults where a key is absent.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import msgspec
import numpy as np
import pytest

from gpuperf_gui.core.trace.ingest import decode, stream_decode
from gpuperf_gui.core.trace.ingest.scanner import scan
from gpuperf_gui.core.trace.vocabulary import schema
from gpuperf_gui.core.trace.ingest.build import EventColumns

SCAN_C = (Path(scan.__file__).parent / "_scan.c").read_text()  # the C source lies beside its Python face


def _c_function(name: str) -> str:
    """The body of one C function of _scan.c (up to the first closing brace at column 0)."""
    start = re.search(rf"^static [^\n(]*\b{name}\([^\n]*\{{$", SCAN_C, re.M).start()
    return SCAN_C[start: SCAN_C.index("\n}", start)]


def _c_keys(function: str) -> dict[str, str]:
    """JSON key -> index name, as the C function compares keys: ``IS("cat") ? F_CAT``."""
    return dict(re.findall(r'IS\("([^"]+)"\) \? ([FA]_\w+)', _c_function(function)))


def test_the_c_event_keys_are_the_tables() -> None:
    expected = {f.key: f.c_name for f in schema.fields_within("event")}
    expected |= {schema.EVENT_TAG: "F_PH", schema.ARGS_KEY: "F_ARGS"}
    assert _c_keys("field_index") == expected


def test_the_c_args_keys_are_the_tables() -> None:
    assert _c_keys("arg_index") == {f.key: f.c_name for f in schema.fields_within("args")}


def test_the_c_index_enums_list_every_key_once() -> None:
    """``enum { F_PH, ... N_FIELDS }`` and ``enum { A_EXT, ... N_ARGS }``: one slot per key."""
    for first, count, within, extra in (("F_PH", "N_FIELDS", "event", {"F_PH", "F_ARGS"}),
                                        ("A_EXT", "N_ARGS", "args", set())):
        names = re.search(rf"enum \{{ ({first},[^}}]*?), {count} \}};", SCAN_C).group(1)
        declared = [n.strip() for n in names.split(",")]
        assert sorted(declared) == sorted({f.c_name for f in schema.fields_within(within)} | extra)


def test_the_c_columns_are_the_tables_in_its_order() -> None:
    names = re.search(r"enum \{ (C_CAT,[^}]*?), N_COLS \};", SCAN_C, re.S).group(1)
    declared = [n.strip() for n in names.split(",")]
    c_column = {f.column: f.c_column for f in schema.FIELDS if f.c_column}
    assert declared == [c_column[key] for key in schema.SCAN_COLUMNS]
    assert set(schema.SCAN_COLUMNS) == set(schema.columns())
    # what emit_x writes into each column: put_i32 / put_f64 / put_i64, the table's dtype
    written = dict((c, kind) for kind, c in re.findall(r"put_(i32|i64|f64)\(r, (C_\w+),", _c_function("emit_x")))
    width = {"i32": np.int32, "i64": np.int64, "f64": np.float64}
    assert {c: width[kind] for c, kind in written.items()} == {
        f.c_column: f.dtype for f in schema.FIELDS if f.c_column}


def test_the_c_defaults_are_the_tables() -> None:
    """What the scanner writes for an absent key (a float, an int, a string, an id) is the default."""
    emit = _c_function("emit_x")
    by_c_name = {f.c_name: f for f in schema.FIELDS}
    floats = re.findall(r"float_field\(&[fa]\[(\w+)\], ([^,]+), ", emit)
    assert floats
    for name, value in floats:
        default = by_c_name[name].default
        assert (math.isnan(default) if value == "NAN" else float(value) == default), name
    ints = re.findall(r"(?:int_field|int_or_str_number)\(&a\[(\w+)\]", emit)
    assert "*out = -1; return 0;" in _c_function("int_field")
    assert "*out = -1.0; return 0;" in _c_function("int_or_str_number")
    assert {name for name in ints} == {f.c_name for f in schema.FIELDS if f.within == "args" and f.default == -1 and type(f.default) is int}
    strings = re.findall(r'f\[(F_\w+)\]\.type == T_NONE\) \w+ = table_code\(&r->\w+, \(const unsigned char \*\)"(.*?)"',
                         emit)
    assert sorted(strings) == sorted((f.c_name, f.default) for f in schema.FIELDS if f.type is str)
    absent_id = re.search(r"if \(!present\) return table_code\(t, NULL, 0, (-?\d+), 1\);", _c_function("id_code"))
    assert {f.default for f in schema.FIELDS if f.c_name in ("F_PID", "F_TID")} == {int(absent_id.group(1))}


def test_the_c_skipped_phases_are_the_tables() -> None:
    assert re.search(r'SKIPPED_PHASES\[\] = "(\w+)";', SCAN_C).group(1) == schema.SKIPPED_PHASES
    assert "".join(s.__struct_config__.tag for s in decode._SKIPPED) == schema.SKIPPED_PHASES


@pytest.mark.parametrize("within, struct", [("event", decode.Event), ("args", decode.Args)])
def test_the_structs_are_the_tables(within: str, struct: type) -> None:
    fields = [f for f in msgspec.structs.fields(struct) if f.encode_name != schema.ARGS_KEY]
    assert [(f.encode_name, f.name, f.type) for f in fields] == [
        (f.key, f.attr, f.type) for f in schema.fields_within(within)]
    for got, field in zip(fields, schema.fields_within(within)):
        assert repr(got.default) == repr(field.default) or bytes(got.default) == bytes(field.default)
    for tagged in (decode.XEvent, decode.BEvent, decode.EEvent, decode.MEvent):
        assert tagged.__struct_config__.tag_field == schema.EVENT_TAG


def test_the_columns_are_the_tables() -> None:
    assert scan._COLUMNS == tuple((key, schema.column_dtype(key)) for key in schema.SCAN_COLUMNS)
    for key, dtype in EventColumns._DTYPES.items():
        if key != "device_rows":
            assert dtype == schema.column_dtype(key)
    assert set(EventColumns._DENSE) == {f.column for f in schema.FIELDS if f.storage == "dense"}
    assert set(EventColumns._DTYPES) - {"device_rows"} == set(schema.columns("dense", "sparse", "device"))


_FULL = {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 3, "tid": 7, "ts": 10.5, "dur": 2.25,
         "args": {"External id": 11, "external id": 12, "correlation": 13, "stream": 7, "device": 3,
                  "bytes": 4096, "flops": 1e9, "Input Dims": [[2, 3]], "Input type": ["float"],
                  "Concrete Inputs": [""], "name": "x"}}
_CPU_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 3, "tid": 1, "ts": 1.0, "dur": 5.0,
           "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Concrete Inputs": ["", ""]}}


def _columns(events: list[dict], use_scanner: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(scan, "ENABLED", use_scanner)
    text = bytearray(json.dumps(events).encode())
    if use_scanner:
        assert scan.scan_run(text, len(text)) is not None, "the scanner handed this run back"
    columns = EventColumns()
    stream_decode.decode_into(columns, text, len(text))
    out = {key: columns.column(key).tolist() for key in EventColumns._DTYPES}
    rows, codes, keys = columns.shapes()
    out["shapes"] = [(i, keys[c]) for i, c in zip(rows.tolist(), codes.tolist())]
    return out


def test_every_key_of_the_table_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """By msgspec as written by hand here, and by the scanner (where built) as by msgspec."""
    events = [_FULL, _CPU_OP, {"ph": "X", "cat": "kernel"}]  # the last: every other key absent
    got = _columns(events, False, monkeypatch)
    assert got["ts"][:2] == [10.5, 1.0] and math.isnan(got["ts"][2])  # absent ts: NaN (the table)
    assert {key: got[key] for key in ("dur", "correlation", "external", "external_2021", "flops")} == {
        "dur": [2.25, 5.0, 0.0], "correlation": [13, -1, -1], "external": [11, -1, -1],
        "external_2021": [12, -1, -1], "flops": [1e9, -1.0, -1.0]}
    assert got["device_rows"] == [0, 2]  # the kernels; the CPU op keeps no device args
    assert got["bytes"][0] == 4096 and got["device"][0] == 3 and got["stream"][0] == 7
    assert all(math.isnan(got[key][1]) for key in ("bytes", "device", "stream"))  # absent: none
    assert got["shapes"] == [(1, (b"[[2, 3], [3, 4]]", b'["float", "float"]', b'["", ""]'))]
    if scan._scan is not None:  # built (CI builds it): the scanner reads every key as msgspec does
        assert json.dumps(_columns(events, True, monkeypatch), default=repr) == json.dumps(got, default=repr)
