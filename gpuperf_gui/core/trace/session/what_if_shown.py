"""The what-if as the window shows it: a frozen snapshot the loading worker makes (no Qt).

The projections per cause (:mod:`.what_if`) and the critical path's masks over the lanes
(:mod:`.critical_path`) are found where the analysis is, in the loading helper (walking the graph
of a big job takes a while), and sent with it (``AnalysisUpdate.what_if``). The views only draw
them and never import the graph's modules themselves (tests/views/test_what_if_view.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import critical_path as cp
from ..analysis.what_if import FIX_LABELS

if TYPE_CHECKING:
    from ..engine.api import TraceResult


@dataclass(frozen=True)
class WhatIfRow:
    """One cause removed, as a row of the Overview's table and an item of the MFU tab's selector."""

    cause: str
    fix: str
    """What to do ("DataLoader workers"; "both" for the combination of the top two)."""
    assumption: str
    step_time_s: float
    speedup_upper_bound: float
    mfu: float | None
    new_dominant: str | None

    def mfu_after(self, mfu: float | None) -> float | None:
        """The MFU this projection gives from ``mfu`` measured now: MFU scales as 1 / step time."""
        return None if mfu is None else mfu * self.speedup_upper_bound


@dataclass(frozen=True)
class WhatIfShown:
    """Every projection (largest gain first), the critical path's share per category (largest
    first) and its events as masks over the lanes, keyed ``(rank index, lane id)`` (the
    timeline's keys)."""

    rows: tuple[WhatIfRow, ...]
    path_share: tuple[tuple[str, float], ...]
    step_time_s: float
    replay_error: float
    path_masks: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)

    def for_cause(self, cause: str) -> WhatIfRow | None:
        return next((r for r in self.rows if r.cause == cause), None)


def what_if_shown(result: TraceResult) -> WhatIfShown | None:
    """The snapshot of an analysed job (:meth:`.api.TraceResult.what_if`), over its ranks' lanes."""
    wi = result.what_if()
    if wi is None:
        return None
    rows = tuple(WhatIfRow(p.cause, FIX_LABELS.get(p.cause, "both"), p.assumption, p.step_time_s,
                           p.speedup_upper_bound, p.mfu, p.new_dominant) for p in wi.projections)
    share = tuple(sorted(wi.critical_path.share.items(), key=lambda kv: -kv[1]))
    masks = cp.path_masks(wi.graph, wi.critical_path.nodes, result.model.ranks) if wi.graph is not None else {}
    return WhatIfShown(rows, share, wi.step_time_s, wi.replay_error, masks)
