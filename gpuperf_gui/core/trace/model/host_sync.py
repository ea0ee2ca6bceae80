"""Host stalls that follow a blocking sync: the GPU drains at ``.item()`` / ``.cpu()`` /
``.tolist()`` / ``torch.cuda.synchronize()``, then idles while the host works on the value without
launching anything.

A host stall (a stretch of a compute-idle gap with no launch call, :mod:`.rank_analysis`) *follows a
sync* when a blocking call is still running, or has just returned, at the moment the stretch
begins: the host waited for the GPU to finish (so the GPU drained) and then did host work before
its next launch. A stall that ends with a host-to-device copy or lies in the DataLoader is a data
stall, not counted here. Which op issued the sync is the outermost matching CPU event at that
moment (``aten::item`` over its ``aten::_local_scalar_dense`` and ``cudaStreamSynchronize``).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..vocabulary.categories import HOST_SYNC_CALL_RE, HTOD_NAME_RE
from .trace_model import RankTrace
from .name_masks import pattern_mask

SYNC_CALL_RE = re.compile(rf"synchroni[sz]e|^aten::(item|_local_scalar_dense)$|{HOST_SYNC_CALL_RE.pattern}", re.I)
"""Calls that block the host until the GPU is done: the runtime's (:data:`HOST_SYNC_CALL_RE`), the
scalar read behind ``.item()``, and any span named for a sync (``torch.cuda.synchronize``)."""
SYNC_ISSUER_RE = re.compile(r"synchroni[sz]e|^(cuda|hip)Memcpy|^aten::(item|_local_scalar_dense|tolist|to|_to_copy"
                            r"|copy_|cpu|nonzero|masked_select|unique\w*)$", re.I)
"""CPU events that may hold a sync (``.cpu()``/``.tolist()`` are ``aten::to``/``_to_copy``/``copy_``
with a device-to-host copy inside; ``nonzero`` and friends read a size back)."""
TOUCH_US = 100.0
"""A sync ending at most this long before a stall begins (or still running) is the stall's cause:
the host returns from a sync a few to tens of µs after the GPU's last kernel ends."""
GAP_KINDS = ("idle", "host_sync")
"""What a compute stream's idle gap is in the Trace lanes (index = the gap's kind): plain idle, or
idle after a blocking sync (:class:`SyncGapClassifier`)."""
GAP_KIND_SIGNATURE = {"host_sync": "host_sync_bound"}
"""The signature whose colour and label a gap kind is drawn with (the registry's)."""


@dataclass
class HostSyncStalls:
    """Host stalls that follow a blocking sync (fractions of the analysis window, like
    :class:`.rank_analysis.IdleCauses`)."""

    fraction: float = 0.0
    recoverable: float = 0.0
    """Per stall, the lesser of the stall and the time the host waited in the sync before it (while the
    GPU still worked): what reading the value later would give back, the host's work then overlapping
    the GPU's. Host work longer than the GPU's between syncs stays exposed without them."""
    stalls: int = 0
    syncs: int = 0
    """Blocking runtime syncs (stream/device/event synchronize, synchronous cudaMemcpy) in the window."""
    idle_median_s: float = 0.0
    issuers: list[tuple[str, int]] = field(default_factory=list)
    """(op name, stalls it issued), most first: the outermost sync-holding op at each stall's start."""


def sync_stalls(rt: RankTrace, stall_s: np.ndarray, stall_len: np.ndarray, data_tell: np.ndarray,
                scale: float, span: float, window: tuple[float, float] = (-np.inf, np.inf)) -> HostSyncStalls:
    """Of the host-stall stretches starting at ``stall_s`` (idle ``stall_len`` µs each, ``scale``
    the analysis's cap to the gaps), those that begin as a blocking sync returns and carry no data
    tell (``data_tell``: the stall ends with an HtoD copy or lies in the DataLoader)."""
    out = HostSyncStalls()
    calls = rt.cpu_spans(pattern_mask(rt.strings, SYNC_CALL_RE))
    runtime = rt.cpu_spans(pattern_mask(rt.strings, HOST_SYNC_CALL_RE))[0]
    out.syncs = int(((runtime >= window[0]) & (runtime < window[1])).sum())
    if not calls[0].size or not stall_s.size:
        return out
    touching, waited = _touching(*calls, stall_s)
    after = touching & ~data_tell & (stall_len > 0)
    if not after.any():
        return out
    out.fraction = float(stall_len[after].sum()) * scale / span
    out.recoverable = float(np.minimum(stall_len[after] * scale, waited[after]).sum()) / span
    out.stalls = int(after.sum())
    out.idle_median_s = float(np.median(stall_len[after])) * scale / 1e6
    issuer = pattern_mask(rt.strings, SYNC_ISSUER_RE)
    starts, ends = rt.cpu_spans(issuer)
    names = np.concatenate([np.zeros(0, np.int32)] + [lane.name_id[issuer[lane.name_id]]
                                                        for lane in rt.cpu_lanes])
    counts: Counter[int] = Counter()
    for s in stall_s[after].tolist():
        hit = np.flatnonzero((starts <= s + TOUCH_US) & (ends >= s - TOUCH_US))
        if hit.size:
            outer = hit[np.argmax(ends[hit] - starts[hit])]
            counts[int(names[outer])] += 1
    out.issuers = [(rt.strings[n], c) for n, c in counts.most_common(4)]  # ties: first seen first
    return out


def _touching(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether a call (``starts``, ``ends``) runs at, or ended within TOUCH_US before, each instant of
    ``at``; and how long before that instant the host entered it (µs: its wait while the GPU worked, 0
    where none)."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    latest = np.maximum.accumulate(ends)  # the latest end of the calls started so far
    k = np.searchsorted(starts, at + TOUCH_US, side="right") - 1
    hit = (k >= 0) & (latest[np.maximum(k, 0)] >= at - TOUCH_US)
    waited = np.zeros(at.size)
    for i in np.flatnonzero(hit).tolist():   # one per stall after a sync: a few per step
        j = np.flatnonzero((starts[: k[i] + 1] <= at[i] + TOUCH_US) & (ends[: k[i] + 1] >= at[i] - TOUCH_US))
        waited[i] = max(float(at[i] - starts[j].min()), 0.0)
    return hit, waited


class SyncGapClassifier:
    """Which of a compute stream's idle gaps follow a blocking sync (kind 1 of :data:`GAP_KINDS`), by
    the rule :func:`sync_stalls` reads a host stall with (the module docstring). Built once per rank,
    it classifies any set of gaps (another idle threshold) without the events; it pickles, so lane
    specs made in the loading helper carry it."""

    __slots__ = ("call_start_us", "call_end_us", "htod_start_us")

    def __init__(self, call_start_us: np.ndarray, call_end_us: np.ndarray, htod_start_us: np.ndarray) -> None:
        self.call_start_us, self.call_end_us = call_start_us, call_end_us
        self.htod_start_us = np.sort(htod_start_us)

    def __call__(self, gap_start_us: np.ndarray, gap_end_us: np.ndarray) -> np.ndarray:
        """The kind (uint8 index into :data:`GAP_KINDS`) of each gap ``[gap_start_us, gap_end_us]``."""
        gs, ge = np.asarray(gap_start_us, dtype=np.float64), np.asarray(gap_end_us, dtype=np.float64)
        kind = np.zeros(gs.size, dtype=np.uint8)
        if not gs.size or not self.call_start_us.size:
            return kind
        after = _touching(self.call_start_us, self.call_end_us, gs)[0]
        h = self.htod_start_us
        told = (np.searchsorted(h, ge + TOUCH_US, side="right") - np.searchsorted(h, gs, side="left")) > 0
        kind[after & ~told] = GAP_KINDS.index("host_sync")
        return kind


def sync_gap_classifier(rt: RankTrace) -> SyncGapClassifier:
    """The :class:`SyncGapClassifier` of one rank: its blocking calls and its host-to-device copies."""
    s, e = rt.cpu_spans(pattern_mask(rt.strings, SYNC_CALL_RE))
    htod = pattern_mask(rt.strings, HTOD_NAME_RE)  # one that ends a GPU-idle gap is a data tell (the next batch)
    starts = [lane.start_us[htod[lane.name_id]] for lane in rt.gpu_lanes if len(lane)]
    return SyncGapClassifier(s, e, np.concatenate(starts) if starts else np.zeros(0))
