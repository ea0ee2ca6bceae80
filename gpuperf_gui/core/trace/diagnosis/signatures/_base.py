"""What a signature module declares (:class:`Signature`), and the formatting its evidence uses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ...analysis.rank_analysis import RankAnalysis


@dataclass
class Finding:
    """A signature whose conditions hold on one rank: the share of the step it explains (its loss),
    the confidence, the evidence lines and a fix that replaces the signature's own (or ""). A module's
    ``evidence(a)``, where it has one, makes its Finding whether or not the conditions hold."""

    signature: str
    loss_fraction: float
    confidence: float
    evidence: list[str]
    fix: str = ""


@dataclass(frozen=True)
class Threshold:
    """A threshold's value and why it has that value (the reasons live next to the rule)."""

    value: float
    reason: str


@dataclass(frozen=True)
class Signature:
    """One diagnosis outcome, as the diagnosis, the CLI and the window know it.

    Attributes
    ----------
    name : the JSON name (``"launch_bound"``).
    label : the name a person reads in the window ("Launch-bound").
    hint : one line that teaches what the lanes look like (the presentation's panels).
    fix : the fix to try first (``gpuperf diagnose``'s "Fix to try first").
    thresholds : the rule's thresholds, name -> :class:`Threshold`.
    finding : the rule: one rank's :class:`.Finding` when the conditions hold, else None (None for
        the outcomes that no per-rank rule finds: healthy, straggler, inconclusive).
    heatmap_metric : the heatmap metric that tells it (``"idle"``, ``"exposed comm"``), or None
        (the user's choice is kept).
    gap_cause : the MFU gap cause it feeds (a key of :data:`gpuperf_gui.core.mfu_gap.CAUSE_LABELS`),
        or None.
    """

    name: str
    label: str
    hint: str
    fix: str
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    finding: Callable[[RankAnalysis], Finding | None] | None = None
    heatmap_metric: str | None = None
    gap_cause: str | None = None


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"
