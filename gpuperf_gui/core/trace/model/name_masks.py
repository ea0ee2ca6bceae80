"""Boolean masks over a rank's string table, each computed once per rank and each string tested once.

A question is a regex ``search``, a set of exact strings or a named predicate; :func:`pattern_mask` /
:func:`member_mask` / :func:`predicate_mask` answer it with a read-only boolean mask over the table's
ids (``mask[i]`` is the answer for ``table[i]``; shared between callers). Two pure caches keep the
per-rank cost low (Python predicates over kernel names hundreds of characters long, asked again of
every rank's table):

* the masks of the table analysed last (identity and length checked: tables only grow), so a
  question asked by several steps of one analysis costs one pass;
* the strings seen by this process (the ranks of one job share nearly all their names), numbered
  once, with each question's answer per string number: a new table costs one dict look-up per
  string, and each question over it one numpy gather (bounded: :data:`MEMO_MAX_STRINGS`).

:func:`step_name_mask` asks the one shared question every layer asks of a name (is it a step
annotation) and :func:`step_lane` finds the thread that holds those annotations.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable
from itertools import islice

import numpy as np

from ..vocabulary.categories import STEP_NAME_RE
from .trace_model import Lane, RankTrace, StringTable

MEMO_MAX_STRINGS = 20_000
"""Strings remembered across ranks; past this the memo starts afresh, and a table larger than this
is not memoised at all (bounded memory: the strings, their numbers, a byte per string per question)."""


class _Memo:
    """The strings seen (numbered in order of first sight) and each question's answers over them."""

    __slots__ = ("answers", "ids", "strings")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.strings: list[str] = []
        self.answers: dict[Hashable, np.ndarray] = {}  # key -> bool per string number, a prefix

    def numbers(self, strings: list[str]) -> np.ndarray:
        """The number of each of ``strings`` (new ones added)."""
        ids, known = self.ids, self.strings
        out = []
        for s in strings:
            i = ids.get(s)
            if i is None:
                i = ids[s] = len(known)
                known.append(s)
            out.append(i)
        return np.array(out, dtype=np.intp)

    def answer(self, key: Hashable, predicate: Callable[[str], object]) -> np.ndarray:
        """``key``'s answer for every string seen, asked of the strings it has not seen yet."""
        done = self.answers.get(key)
        if done is not None and done.size == len(self.strings):
            return done
        n_done = 0 if done is None else done.size
        new = np.array([bool(predicate(s)) for s in self.strings[n_done:]], dtype=bool)
        done = new if done is None else np.concatenate((done, new))
        self.answers[key] = done
        return done


_lock = threading.Lock()  # the memo is shared by threads analysing different ranks
_memo = _Memo()
_table_state: tuple[StringTable | None, int, dict, _Memo | None, np.ndarray | None] = (None, 0, {}, None, None)


def _state_of(strings: StringTable) -> tuple[dict, _Memo, np.ndarray | None]:
    """The mask dict of ``strings``, the memo and the numbers of its strings in it (None for a table
    larger than the cap): a fresh dict when the table changed or grew, a grown table's numbers
    extended. One tuple swap: threads analysing different ranks each keep the state they got."""
    global _memo, _table_state
    table, n, masks, memo, numbers = _table_state
    if table is strings and n == len(strings):
        return masks, memo, numbers
    with _lock:
        if len(strings) > MEMO_MAX_STRINGS:
            numbers = None
        elif table is strings and memo is _memo and numbers is not None:
            numbers = np.concatenate((numbers, _memo.numbers(list(islice(strings, numbers.size, None)))))
        else:
            numbers = _memo.numbers(list(strings))
        if len(_memo.strings) > MEMO_MAX_STRINGS:  # at most twice the cap
            _memo = _Memo()
            numbers = _memo.numbers(list(strings))
        _table_state = (strings, len(strings), {}, _memo, numbers)
        return _table_state[2:]


def predicate_mask(strings: StringTable, key: Hashable, predicate: Callable[[str], object]) -> np.ndarray:
    """``mask[i]`` is ``bool(predicate(strings[i]))``, cached under ``key`` (one key, one pure
    predicate of the string: the answers are kept across tables)."""
    masks, memo, numbers = _state_of(strings)
    mask = masks.get(key)
    if mask is not None:
        return mask
    with _lock:
        if numbers is None:
            mask = np.array([bool(predicate(s)) for s in strings], dtype=bool)
        else:
            mask = memo.answer(key, predicate)[numbers]
    mask.setflags(write=False)
    masks[key] = mask
    return mask


def pattern_mask(strings: StringTable, pattern: re.Pattern) -> np.ndarray:
    """``mask[i]`` is ``pattern.search(strings[i]) is not None``."""
    search = pattern.search
    return predicate_mask(strings, pattern, lambda s: search(s) is not None)


def step_name_mask(strings: StringTable) -> np.ndarray:
    """``mask[i]``: ``strings[i]`` is a step annotation's name (:data:`.categories.STEP_NAME_RE`)."""
    fullmatch = STEP_NAME_RE.fullmatch
    return predicate_mask(strings, ("step name", STEP_NAME_RE), lambda s: fullmatch(s) is not None)


def step_lane(rt: RankTrace) -> Lane | None:
    """The CPU lane holding the step annotations (the training loop's thread; where torch files the
    profiler's own overhead), None when no lane has one."""
    step = step_name_mask(rt.strings)
    return next((lane for lane in rt.cpu_lanes if step[lane.name_id].any()), None)


def member_mask(strings: StringTable, members: frozenset[str]) -> np.ndarray:
    """``mask[i]`` is ``strings[i] in members``."""
    return predicate_mask(strings, ("in", members), members.__contains__)
