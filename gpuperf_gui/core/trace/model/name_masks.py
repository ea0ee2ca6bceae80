"""Boolean masks over a rank's string table, each computed once per rank and each string tested once.

The analysis asks the same questions of a rank's strings many times ("which names are CPU
collectives?", "which categories are launch calls?"). A question is a regex ``search`` or a set of
exact strings; :func:`pattern_mask` / :func:`member_mask` answer it with a boolean mask over the
table's ids (``mask[i]`` is the answer for ``table[i]``), like ``StringTable.ids_matching``.

Two caches keep the fixed per-rank cost low (most of it used to be regex passes over kernel names
hundreds of characters long):

* the masks of the table analysed last (identity and length checked: tables only grow), so a
  question asked by several steps of one analysis costs one pass;
* each pattern's answer per string, kept across ranks (the ranks of one job share their names), up
  to ``MEMO_MAX_STRINGS`` strings per pattern.

Both are pure caches: answers are those of ``pattern.search(s) is not None`` / ``s in members``.
Returned masks are read-only (shared between callers).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Hashable

import numpy as np

from .trace_model import StringTable

MEMO_MAX_STRINGS = 20_000
"""Strings remembered per pattern across ranks; past this the memo starts afresh, and a table larger
than this is not memoised at all (bounded memory: ~2 MB of dict per pattern plus the strings)."""

_table_state: tuple[StringTable | None, int, dict] = (None, 0, {})
_memo: dict[re.Pattern, dict[str, bool]] = {}


def _masks_of(strings: StringTable) -> dict:
    """The mask dict of ``strings`` (a fresh one when the table changed or grew). One tuple swap:
    threads analysing different ranks each keep the dict they got."""
    global _table_state
    table, n, masks = _table_state
    if table is not strings or n != len(strings):
        masks = {}
        _table_state = (strings, len(strings), masks)
    return masks


def _frozen(values: list[bool]) -> np.ndarray:
    mask = np.array(values, dtype=bool) if values else np.zeros(0, dtype=bool)
    mask.setflags(write=False)
    return mask


def pattern_mask(strings: StringTable, pattern: re.Pattern) -> np.ndarray:
    """``mask[i]`` is ``pattern.search(strings[i]) is not None``."""
    masks = _masks_of(strings)
    mask = masks.get(pattern)
    if mask is not None:
        return mask
    search = pattern.search
    if len(strings) > MEMO_MAX_STRINGS:
        mask = masks[pattern] = _frozen([search(s) is not None for s in strings])
        return mask
    memo = _memo.get(pattern)
    if memo is None or len(memo) > MEMO_MAX_STRINGS:  # at most twice the cap
        memo = _memo[pattern] = {}
    get = memo.get
    values = []
    for s in strings:
        v = get(s)
        if v is None:
            v = memo[s] = search(s) is not None
        values.append(v)
    mask = masks[pattern] = _frozen(values)
    return mask


def member_mask(strings: StringTable, members: frozenset[str]) -> np.ndarray:
    """``mask[i]`` is ``strings[i] in members``."""
    return predicate_mask(strings, ("in", members), members.__contains__)


def predicate_mask(strings: StringTable, key: Hashable, predicate: Callable[[str], bool]) -> np.ndarray:
    """``mask[i]`` is ``bool(predicate(strings[i]))``, cached for this table under ``key`` (one key,
    one predicate)."""
    masks = _masks_of(strings)
    mask = masks.get(key)
    if mask is None:
        mask = masks[key] = _frozen([bool(predicate(s)) for s in strings])
    return mask
