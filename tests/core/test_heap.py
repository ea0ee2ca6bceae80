"""core/trace/ingest/heap.py: a load's heap settings are set once, restored by the last load to end, and only
in a process made for loads (the helper, the gpuperf command)."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core import child_stream
from gpuperf_gui.core.trace.ingest import heap


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_enabled", True)   # as in a process made for loads


def _numpy_hugepages() -> bool:
    before = heap._set_numpy_hugepages(True)
    heap._set_numpy_hugepages(before)
    return before


@pytest.mark.skipif(heap._LIBC is None, reason="glibc only (elsewhere reused_heap does nothing)")
def test_huge_pages_are_off_while_loads_run_and_restored_after_the_last(enabled: None) -> None:
    before = _numpy_hugepages()
    with heap.reused_heap():
        assert _numpy_hugepages() is False
        with heap.reused_heap():     # a load inside a load (or on another thread)
            assert _numpy_hugepages() is False
        assert _numpy_hugepages() is False and heap._depth == 1
        big = np.ones(8_000_000)     # 64 MB: on the heap now, not a fresh mapping
        assert big.sum() == 8_000_000
    assert _numpy_hugepages() is before and heap._depth == 0


@pytest.mark.skipif(heap._LIBC is None, reason="glibc only")
def test_loads_on_threads_leave_the_defaults_back(enabled: None) -> None:
    before = _numpy_hugepages()
    inside = threading.Barrier(4)

    def load() -> None:
        with heap.reused_heap():
            inside.wait(timeout=10)
            np.zeros(1_000_000).sum()

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert heap._depth == 0 and _numpy_hugepages() is before


def test_without_glibc_it_changes_nothing(monkeypatch: pytest.MonkeyPatch, enabled: None) -> None:
    """Off (no glibc, or turned off by setting ``_LIBC`` None): the heap and numpy left as they are."""
    before = _numpy_hugepages()
    monkeypatch.setattr(heap, "_LIBC", None)
    with heap.reused_heap():
        assert _numpy_hugepages() is before and heap._depth == 0


def test_a_process_not_made_for_loads_keeps_its_heap_as_it_is() -> None:
    """The window's process, a notebook's: a load there sets nothing process-wide."""
    before = _numpy_hugepages()
    assert not heap._enabled
    with heap.reused_heap():
        assert _numpy_hugepages() is before and heap._depth == 0


@pytest.mark.skipif(heap._LIBC is None, reason="glibc only (elsewhere the settings do nothing)")
def test_the_loading_helper_sets_its_heap_up_and_this_process_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # child_targets, for the helper
    [(enabled, hugepages_in_load)] = list(child_stream.iter_in_child(
        "child_targets:heap_settings", initializer=heap.HELPER_INITIALIZER))
    assert enabled and hugepages_in_load is False            # the helper: set up for its loads
    assert not heap._enabled                                 # this process: untouched
    [(enabled, hugepages_in_load)] = list(child_stream.iter_in_child("child_targets:heap_settings"))
    assert not enabled and hugepages_in_load is _numpy_hugepages()   # a helper without the initializer
