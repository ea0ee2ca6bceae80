"""The trace fields read, in one table: JSON key, type, default, column, dtype and where it is kept.

Adding a field of the trace format starts here. From :data:`FIELDS` are derived

- the msgspec structs of :mod:`.decode` (``Event``'s fields and ``Args``; the streamed decoder uses
  the same structs), so both Python decoders read a key with the same type and default;
- the column dtypes of :class:`.build.EventColumns` and of the C scanner's columns (:mod:`.scan`),
  and which columns every event has (``dense``) and which only some kinds of events keep.

The C scanner (``_scan.c``) cannot import this table; ``tests/core/test_trace_schema.py`` parses its
key lists, column order, defaults and skipped phases and fails when they disagree with it. The
scanner skips a key it does not know, so the runs it reads would lack a new field while msgspec's
have it: add the key to ``field_index``/``arg_index`` (and ``emit_x``) there too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union

import msgspec
import numpy as np

Storage = Literal["dense", "sparse", "device", "shaped", "meta"]
"""Where a field's value is kept, per event kind:

- ``dense``: a column of every complete (``X``) event, written in place;
- ``sparse``: a column of every event, kept as a count while a whole batch holds only the default;
- ``device``: only for events that are not CPU ops (kernels, copies, runtime calls), by event index;
- ``shaped``: only for CPU ops of GEMM/attention names, as one code of the three shape keys;
- ``meta``: read from ``M`` (metadata) events only; no column.
"""


@dataclass(frozen=True)
class TraceField:
    """One key of a trace event (or of its ``args``) that the analysis reads."""

    key: str                  # as written in the JSON
    attr: str                 # the struct attribute
    within: Literal["event", "args"]
    type: Any                 # the msgspec annotation: what the decoders accept
    default: Any              # the value when the key is absent
    storage: Storage
    column: str | None        # EventColumns' / the scanner's column (several shape keys: one column)
    dtype: type | None        # the column's numpy dtype (strings and ids: int32 codes)
    c_name: str               # the key's index in _scan.c (F_... for event keys, A_... for args keys)
    c_column: str | None      # the scanner's column (C_...), None where it has none
    why: str = ""


EVENT_TAG = "ph"
"""The phase key: it picks the struct (``X``, ``B``, ``E``, ``M``, or an empty skipped one)."""
ARGS_KEY = "args"
SKIPPED_PHASES = "iIsftCbenSTpFPNODRcVv"
"""Phases decoded into empty structs, which skips their fields cheaply (the scanner skips them too)."""

_RAW = msgspec.Raw()

FIELDS: tuple[TraceField, ...] = (
    TraceField("cat", "cat", "event", str, "", "dense", "cat", np.int32, "F_CAT", "C_CAT"),
    TraceField("name", "name", "event", str, "", "dense", "name", np.int32, "F_NAME", "C_NAME"),
    TraceField("pid", "pid", "event", Union[int, str], 0, "dense", "pid", np.int32, "F_PID", "C_PID"),
    TraceField("tid", "tid", "event", Union[int, str], 0, "dense", "tid", np.int32, "F_TID", "C_TID"),
    TraceField("ts", "ts", "event", float, float("nan"), "dense", "ts", np.float64, "F_TS", "C_TS",
               "absent: NaN, so an event without a timestamp is never placed at 0"),
    TraceField("dur", "dur", "event", float, 0.0, "dense", "dur", np.float64, "F_DUR", "C_DUR"),
    TraceField("External id", "external_id", "args", int, -1, "dense", "external", np.int64, "A_EXT", "C_EXT"),
    TraceField("external id", "external_id_2021", "args", int, -1, "sparse", "external_2021", np.int64,
               "A_EXT_2021", "C_EXT_2021", "Kineto of 2021 spelt it in lower case"),
    TraceField("correlation", "correlation", "args", int, -1, "dense", "correlation", np.int64, "A_CORR", "C_CORR"),
    TraceField("stream", "stream", "args", Union[int, str], -1, "device", "stream", np.float64, "A_STREAM",
               "C_STREAM", 'ROCm writes "0x0" on runtime calls'),
    TraceField("device", "device", "args", Union[int, str], -1, "device", "device", np.float64, "A_DEVICE",
               "C_DEVICE"),
    TraceField("bytes", "bytes", "args", Union[float, str], -1.0, "device", "bytes", np.float64, "A_BYTES",
               "C_BYTES", 'ROCm writes "128" on hipMemcpyAsync'),
    TraceField("flops", "flops", "args", float, -1.0, "sparse", "flops", np.float64, "A_FLOPS", "C_FLOPS"),
    TraceField("Input Dims", "input_dims", "args", msgspec.Raw, _RAW, "shaped", "shape", np.int32, "A_DIMS",
               "C_SHAPE", "kept as written: FLOPs of GEMM/attention ops (flops.py)"),
    TraceField("Input type", "input_type", "args", msgspec.Raw, _RAW, "shaped", "shape", np.int32, "A_TYPES",
               "C_SHAPE", "the precision of an op (precision.py)"),
    TraceField("Concrete Inputs", "concrete_inputs", "args", msgspec.Raw, _RAW, "shaped", "shape", np.int32,
               "A_CONCRETE", "C_SHAPE", "is_causal of attention (flops.py)"),
    TraceField("name", "name", "args", Union[str, None], None, "meta", None, None, "A_NAME", None,
               "M events: process_name / thread_name"),
)

SCAN_COLUMNS: tuple[str, ...] = ("cat", "name", "pid", "tid", "ts", "dur", "correlation", "external",
                                 "external_2021", "flops", "bytes", "device", "stream", "shape")
"""The scanner's columns in its order (``_scan.c``'s ``C_CAT`` ... ``C_SHAPE``)."""


def fields_within(within: str) -> tuple[TraceField, ...]:
    """The fields of the event itself (``"event"``) or of its ``args`` (``"args"``), in table order."""
    return tuple(f for f in FIELDS if f.within == within)


def struct_fields(within: str) -> list[tuple[str, Any, Any]]:
    """``msgspec.defstruct`` field specs of ``within``'s keys: (attribute, type, default / field)."""
    return [(f.attr, f.type, msgspec.field(default=f.default, name=None if f.key == f.attr else f.key))
            for f in fields_within(within)]


def column_dtype(column: str) -> type:
    return next(f.dtype for f in FIELDS if f.column == column)


def columns(*storages: str) -> tuple[str, ...]:
    """The columns kept as ``storages`` (all when none given), each once, in table order."""
    out: dict[str, None] = {}
    for f in FIELDS:
        if f.column is not None and (not storages or f.storage in storages):
            out[f.column] = None
    return tuple(out)
