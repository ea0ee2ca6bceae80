"""EventColumns writes the columns every event has in place (core/trace/ingest/build.py): whatever room it
reserves, it holds the same columns as the events appended one batch after another."""
from __future__ import annotations

import msgspec
import numpy as np
import pytest

from gpuperf_gui.core.trace.ingest.build import EventColumns
from gpuperf_gui.core.trace.ingest.decode import XEvent

DENSE = ("cat", "name", "pid", "tid", "ts", "dur", "correlation", "external")


def _batch(start: int, n: int) -> list:
    events = [{"ph": "X", "cat": "cpu_op" if i % 3 else "kernel", "name": f"op{i % 7}", "pid": 1 + i % 2,
               "tid": 10 + i % 5, "ts": 1000.5 + i, "dur": 0.25 * (i % 9),
               "args": {"External id": i, "correlation": 2 * i}} for i in range(start, start + n)]
    return msgspec.json.decode(msgspec.json.encode(events), type=list[XEvent])


def _expected(sizes: list[int]) -> dict[str, list]:
    """The columns by hand: codes in order of first appearance, ids and times as written."""
    rows = [i for k, n in enumerate(sizes) for i in range(sum(sizes[:k]), sum(sizes[:k]) + n)]
    first_cat = list(dict.fromkeys("cpu_op" if i % 3 else "kernel" for i in rows))
    first_name = list(dict.fromkeys(f"op{i % 7}" for i in rows))
    first_pid = list(dict.fromkeys(1 + i % 2 for i in rows))
    first_tid = list(dict.fromkeys(10 + i % 5 for i in rows))
    return {"cat": [first_cat.index("cpu_op" if i % 3 else "kernel") for i in rows],
            "name": [first_name.index(f"op{i % 7}") for i in rows],
            "pid": [first_pid.index(1 + i % 2) for i in rows], "tid": [first_tid.index(10 + i % 5) for i in rows],
            "ts": [1000.5 + i for i in rows], "dur": [0.25 * (i % 9) for i in rows],
            "correlation": [2 * i for i in rows], "external": list(rows)}


@pytest.mark.parametrize("capacity", [0, 5, 37, 10_000])   # none, outgrown (twice), exact-ish, ample
def test_dense_columns_hold_every_batch_in_order(capacity: int) -> None:
    sizes = [12, 0, 25, 1, 40]
    columns = EventColumns(capacity)
    start = 0
    for n in sizes:
        columns.add(_batch(start, n))
        start += n
    assert columns.n == sum(sizes)
    want = _expected(sizes)
    for key in DENSE:
        assert columns.column(key).tolist() == want[key], key
    ts = columns.take("ts")
    assert ts.tolist() == want["ts"] and columns.column("ts").size == 0   # handed over
