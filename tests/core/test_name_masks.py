"""name_masks: cached masks over a string table answer exactly as a direct pass does."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gpuperf_gui.core.trace.model import name_masks
from gpuperf_gui.core.trace.model.trace_model import StringTable

_NAMES = ["ProfilerStep#3", "nccl:all_reduce", "cudaLaunchKernel", "gloo:send", "aten::mm",
          "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "Memcpy HtoD (Pageable -> Device)",
          "ncclDevKernel_SendRecv", "x" * 800 + "launch", "kernel", "cuda_runtime"]


def test_pattern_mask_is_the_direct_search_and_is_read_only() -> None:
    table = StringTable(_NAMES)
    pattern = re.compile(r"launch|memcpy", re.I)
    mask = name_masks.pattern_mask(table, pattern)
    # by hand: cudaLaunchKernel, the HtoD memcpy, the long name ending in "launch"
    assert np.flatnonzero(mask).tolist() == [2, 6, 8]
    assert name_masks.pattern_mask(table, pattern) is mask  # one pass per table
    with pytest.raises(ValueError):
        mask[0] = True


def test_mask_follows_a_new_or_grown_table() -> None:
    pattern = re.compile(r"^gloo:")
    table = StringTable(_NAMES)
    assert np.flatnonzero(name_masks.pattern_mask(table, pattern)).tolist() == [3]
    table.intern("gloo:all_reduce")
    assert np.flatnonzero(name_masks.pattern_mask(table, pattern)).tolist() == [3, len(_NAMES)]
    other = StringTable(["gloo:recv", "aten::add"])  # same strings memoised, different ids
    assert name_masks.pattern_mask(other, pattern).tolist() == [True, False]
    assert name_masks.pattern_mask(StringTable(), pattern).shape == (0,)


def test_member_and_predicate_masks() -> None:
    table = StringTable(_NAMES)
    assert np.flatnonzero(name_masks.member_mask(table, frozenset({"kernel", "cuda_runtime"}))).tolist() == [9, 10]
    graph = name_masks.predicate_mask(table, "upper", lambda s: s[:1].isupper())
    assert np.flatnonzero(graph).tolist() == [0, 6]


def test_memo_is_bounded_and_a_large_table_is_answered_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(name_masks, "MEMO_MAX_STRINGS", 4)
    monkeypatch.setattr(name_masks, "_memo", name_masks._Memo())
    pattern = re.compile(r"send|recv")
    big = StringTable([f"op{i}" for i in range(5)] + ["nccl:send"])  # larger than the cap: no memo
    assert np.flatnonzero(name_masks.pattern_mask(big, pattern)).tolist() == [5]
    assert "nccl:send" not in name_masks._memo.ids
    for k in range(4):  # the memo grows to the cap, then starts afresh
        table = StringTable([f"a{k}", f"b{k}", "gloo:recv"])
        assert name_masks.pattern_mask(table, pattern).tolist() == [False, False, True]
        assert len(name_masks._memo.strings) <= 2 * 4


def test_answers_are_kept_across_tables_and_asked_once_per_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(name_masks, "_memo", name_masks._Memo())
    asked: list[str] = []

    def has_digit(s: str) -> bool:
        asked.append(s)
        return any(c.isdigit() for c in s)

    key = ("test", "has_digit")
    first = StringTable(["rank7 only", "aten::mm", "ProfilerStep#3"])
    assert np.flatnonzero(name_masks.predicate_mask(first, key, has_digit)).tolist() == [0, 2]
    second = StringTable(["ProfilerStep#3", "nccl:all_reduce", "aten::mm", "sm80_gemm"])  # other ids
    assert np.flatnonzero(name_masks.predicate_mask(second, key, has_digit)).tolist() == [0, 3]
    assert sorted(asked) == sorted(["rank7 only", "aten::mm", "ProfilerStep#3", "nccl:all_reduce", "sm80_gemm"])
