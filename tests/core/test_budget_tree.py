"""The memory budget holds for the process tree (docs/robustness.md, Memory budget): a load in the window's helper counts
the window's share of each event (the transfer file and the window's arrays), which the helper's
own cost model does not see. 10^7 tiny events passed a 2 GB budget and the tree peaked at 2.25 GB
(figures in core/trace/ingest/budget.py: WINDOW_EVENT_BYTES); the test is on the model, not a 10M run."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.session import loaded_trace as session
from gpuperf_gui.core.trace.ingest import stream_decode
from gpuperf_gui.core.trace.ingest.budget import WINDOW_EVENT_BYTES, MemoryBudget, MemoryBudgetError
from gpuperf_gui.core.trace.ingest.load import load_rank

TINY = b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":%d,"dur":1},'
IN_FLIGHT = stream_decode.MIN_DECODE_BYTES + (8 << 20)  # a decode's text and a read chunk
STRUCTS = stream_decode.STRUCT_BUDGET_BYTES // stream_decode.STRUCT_COST_BYTES


def test_ten_million_tiny_events_no_longer_pass_the_default_budget_in_the_window() -> None:
    events = 10**7
    helper_only = stream_decode.streamed_load_bytes(events, IN_FLIGHT, STRUCTS)
    assert helper_only < 2e9  # what passed before
    window = MemoryBudget().for_window()
    assert window.tree_bytes(helper_only, events) > window.limit_bytes
    # the tree's measured growth per event (200 B: 1M -> 2M tiny events, trace_tab_scale.py) is covered
    assert stream_decode.STREAM_EVENT_COST_BYTES + WINDOW_EVENT_BYTES >= 200


def test_the_window_share_survives_a_split_of_the_budget() -> None:
    shared = MemoryBudget(4_000_000_000).for_window().share(4)
    assert shared.limit_bytes == 1_000_000_000 and shared.event_bytes_elsewhere == WINDOW_EVENT_BYTES


def _tiny(path: Path, n: int) -> Path:
    with path.open("wb") as out:
        out.write(b'{"traceEvents":[')
        for start in range(0, n, 100_000):
            out.write(b"".join(TINY % i for i in range(start, min(n, start + 100_000))))
        out.write(b'{"ph":"M"}]}')
    return path


@pytest.mark.slow
def test_a_load_the_helper_alone_would_fit_is_refused_for_the_window(tmp_path: Path) -> None:
    """1M tiny events: the helper's model ~0.19 GB (+ text and structs in flight), the tree's 0.25 GB;
    a 240 MB budget lies between. Refused at the first projection (no 1M-event load here)."""
    path = _tiny(tmp_path / "tiny.json", 1_000_000)
    budget = MemoryBudget(240_000_000)
    assert stream_decode.streamed_load_bytes(1_000_000, IN_FLIGHT, STRUCTS) < budget.limit_bytes
    with pytest.raises(MemoryBudgetError, match="240 MB memory budget"):
        load_rank(path, memory_budget=budget.for_window())


def test_the_window_load_hands_its_helper_the_tree_budget(monkeypatch) -> None:
    seen = {}

    def fake_child(builder, args, kwargs, **options):  # noqa: ANN001, ANN003
        seen.update(kwargs)
        return iter(())

    monkeypatch.setattr(session, "iter_in_child", fake_child)
    list(session.iter_loaded_trace(["x.json"], 1.0, threading.Event(), isolate=True, memory_budget=3_000_000_000))
    assert seen["memory_budget"] == MemoryBudget(3_000_000_000).for_window()
