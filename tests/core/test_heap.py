"""core/trace/heap.py: the allocator settings of a process made for loads, set in that process only."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpuperf_gui.core import child_stream
from gpuperf_gui.core.trace import heap


def _numpy_hugepages() -> bool:
    before = heap._set_numpy_hugepages(True)
    heap._set_numpy_hugepages(before)
    return before


@pytest.mark.skipif(heap._LIBC is None, reason="glibc only (elsewhere the settings do nothing)")
def test_the_helper_is_tuned_and_this_process_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # child_targets, for the helper
    before = _numpy_hugepages()
    [(tuned, hugepages)] = list(child_stream.iter_in_child("child_targets:heap_settings",
                                                           initializer=heap.HELPER_INITIALIZER))
    assert tuned and hugepages is False                      # the helper: set up for loads
    assert not heap._tuned and _numpy_hugepages() is before  # this process: untouched
    [(tuned, _)] = list(child_stream.iter_in_child("child_targets:heap_settings"))
    assert not tuned                                         # a helper without the initializer


def test_without_glibc_it_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off (no glibc, or turned off by setting ``_LIBC`` None): the heap and numpy left as they are."""
    before = _numpy_hugepages()
    monkeypatch.setattr(heap, "_LIBC", None)
    assert heap.tune_process_for_loads() is False
    assert _numpy_hugepages() is before and not heap._tuned
