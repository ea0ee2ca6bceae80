"""The C scanner (``_scan.c``): a run of trace events' text straight to numpy columns.

:func:`scan_run` returns None where the extension is not built (the package installs without a
compiler) or where the run holds anything the scanner does not read exactly as the typed msgspec
structs of :mod:`.decode` do: msgspec then decodes the run (:mod:`.stream_decode`).
"""
from __future__ import annotations

import json

import numpy as np

from ...vocabulary import schema
from ..decode import _EVENT_DECODER

try:
    from . import _scan
except ImportError:  # built without a C compiler: msgspec decodes every run
    _scan = None

ENABLED = _scan is not None
"""Whether :func:`scan_run` scans (the extension is built; an internal switch: docs/environment.md)."""

_COLUMNS = tuple((key, schema.column_dtype(key)) for key in schema.SCAN_COLUMNS)


class ScannedRun:
    """One run's ``X`` events as columns (codes of ``cat``/``name``/``pid``/``tid`` local to the run,
    their keys in ``cats``/``names``/``pids``/``tids``), and its ``B``/``E``/``M`` events decoded.

    ``bytes``, ``device`` and ``stream`` are the args as numbers, -1 where absent; ``shape`` is the
    code of an event's (``Input Dims``, ``Input type``, ``Concrete Inputs``) as written (-1: no
    dims), its keys in ``shapes`` (absent parts ``b""``), interned in C: no Python per event.
    """

    def __init__(self, result: tuple, text: bytes | bytearray | memoryview) -> None:
        self.entries, self.xs, columns, cats, names, pids, tids, rest, escaped, self.shapes = result
        self.columns = {key: np.frombuffer(col, dtype=dtype) for (key, dtype), col in zip(_COLUMNS, columns)}
        self.keys = {"cat": cats, "name": names, "pid": pids, "tid": tids}
        for keys, indices in zip(self.keys.values(), escaped):
            for i in indices:  # written with JSON escapes: read as JSON reads them
                keys[i] = json.loads(f'"{keys[i]}"')
        spans = np.frombuffer(rest, dtype=np.int64).reshape(-1, 2).tolist()
        self.paired_and_meta = [_EVENT_DECODER.decode(bytes(text[start:stop])) for start, stop in spans]


def scan_run(text: bytes | bytearray | memoryview, end: int) -> ScannedRun | None:
    """``text[:end]`` (a JSON list of events) scanned; None when not scanned (see the module)."""
    if not ENABLED or _scan is None:  # (ENABLED set True where it is not built: msgspec, not a crash)
        return None
    result = _scan.scan(text, end)
    return None if result is None else ScannedRun(result, text)
