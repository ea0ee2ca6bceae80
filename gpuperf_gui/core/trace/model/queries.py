"""Questions asked of a loaded trace's events, with no drawing state: find events by name or kernel
class, and an event's launch <-> device-work partners. :class:`~.loaded_trace.LoadedTrace` (the Trace
tab) and :class:`~.trace.Trace` (the CLI, scripts) both answer them here.

>>> find_events(model, "gemm", "class").ref(0); event_partners(model, EventRef(0, lane_id, i))  # doctest: +SKIP
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .lanes import EventRef
from ..vocabulary.categories import STEP_NAME_RE
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from .trace_model import TraceModel

MAX_PARTNERS = 40
"""Partners listed per direction at most."""
SEARCH_MODES = ("name", "exact", "regex", "class")
"""``find`` modes: substring of the name (case-insensitive), the exact name, a regular expression
over the name (case-insensitive), a kernel class (device events of that class)."""


@dataclass
class Matches:
    """Events found by :func:`find_events`, in time order.

    ``rank_index``, ``lane_id``, ``index`` and ``start_us`` are parallel arrays; ``masks`` marks the
    matches per (rank_index, lane_id) for highlighting; ``names`` the distinct names matched (the op
    table filter)."""

    rank_index: np.ndarray
    lane_id: np.ndarray
    index: np.ndarray
    start_us: np.ndarray
    masks: dict[tuple[int, int], np.ndarray]
    names: set[str]

    def __len__(self) -> int:
        return int(self.index.size)

    def ref(self, k: int) -> EventRef:
        return EventRef(int(self.rank_index[k]), int(self.lane_id[k]), int(self.index[k]))

    @classmethod
    def empty(cls) -> Matches:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, np.zeros(0), {}, set())


def event_partners(model: TraceModel, ref: EventRef) -> list[EventRef]:
    """The launch <-> device-work partners of an event.

    Through the launch flows (correlation id) first: a kernel's launch call, a launch call's
    kernels. An event without flows (a CPU op such as ``aten::mm``) gets the device events that
    carry its Kineto "External id" instead. At most :data:`MAX_PARTNERS` per direction.
    """
    rank = model.ranks[ref.rank_index]
    flows = rank.flows
    out: list[EventRef] = []
    if len(flows):
        for src, dst in (((flows.src_lane, flows.src_index), (flows.dst_lane, flows.dst_index)),
                         ((flows.dst_lane, flows.dst_index), (flows.src_lane, flows.src_index))):
            m = (src[0] == ref.lane_id) & (src[1] == ref.index)
            pairs = zip(dst[0][m][:MAX_PARTNERS].tolist(), dst[1][m][:MAX_PARTNERS].tolist())
            out += [EventRef(ref.rank_index, int(lane_id), int(i)) for lane_id, i in pairs]
    if out:
        return out
    lane = rank.lanes[ref.lane_id]
    ext = int(lane.external_id[ref.index]) if len(lane.external_id) else -1
    if lane.kind == "cpu" and ext >= 0:
        for other in rank.gpu_lanes:
            hits = np.flatnonzero(other.external_id == ext)[:MAX_PARTNERS]
            out += [EventRef(ref.rank_index, other.lane_id, int(i)) for i in hits.tolist()]
    return out[:MAX_PARTNERS]


def find_events(model: TraceModel, query: str, mode: str = "name", lanes: Sequence[tuple[int, int]] | None = None
                ) -> Matches:
    """Events whose name matches ``query`` (see :data:`SEARCH_MODES`), in time order.

    ``lanes`` limits the search to those (rank_index, lane_id) pairs (default: every lane).
    A regular expression that does not compile raises ``re.error``; an unknown kernel class
    ``ValueError``."""
    if mode not in SEARCH_MODES:
        raise ValueError(f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}")
    shown = None if lanes is None else set(lanes)
    predicate = _name_predicate(query, mode)
    kernel_class = KERNEL_CLASSES.index(query.strip().lower()) if mode == "class" else -1
    masks: dict[tuple[int, int], np.ndarray] = {}
    parts: list[tuple[np.ndarray, ...]] = []
    names: set[str] = set()
    for ri, rank in enumerate(model.ranks):
        ids = None if predicate is None else rank.strings.ids_matching(predicate)
        if ids is not None and not ids.any():
            continue
        for lane in rank.lanes:
            if (shown is not None and (ri, lane.lane_id) not in shown) or not len(lane):
                continue
            if ids is None:
                if lane.kind == "cpu":
                    continue
                mask = lane.kernel_class == kernel_class
            else:
                mask = ids[lane.name_id]
            if not mask.any():
                continue
            masks[(ri, lane.lane_id)] = mask
            idx = np.flatnonzero(mask)
            names.update(rank.strings[int(n)] for n in np.unique(lane.name_id[idx]).tolist())
            parts.append((np.full(idx.size, ri), np.full(idx.size, lane.lane_id), idx, lane.start_us[idx]))
    if not parts:
        return Matches.empty()
    rk, ln, ix, st = (np.concatenate([p[k] for p in parts]) for k in range(4))
    order = np.argsort(st, kind="stable")
    return Matches(rk[order], ln[order], ix[order], st[order], masks, names)


def op_row_name(name: str) -> str:
    """The op-table row of an event name: torch's key_averages groups ``ProfilerStep#N`` as
    ``ProfilerStep*`` (the rule of :mod:`.optable`)."""
    return "ProfilerStep*" if STEP_NAME_RE.fullmatch(name) else name


def _name_predicate(query: str, mode: str) -> Callable[[str], bool] | None:
    if mode == "class":
        return None
    if mode == "exact":
        return lambda s: s == query
    if mode == "regex":
        pattern = re.compile(query, re.IGNORECASE)
        return lambda s: pattern.search(s) is not None
    needle = query.lower()
    return lambda s: needle in s.lower()
