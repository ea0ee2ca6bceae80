"""The Trace tab's life as an explicit state machine (no Qt): what is shown, and what comes next.

One open goes ``IDLE -> LOADING -> LANES_SHOWN -> ANALYSING -> READY`` (:class:`Phase`), or ends
``FAILED`` or ``CANCELLED``; a new open starts again at ``LOADING`` from any phase (the newest
request wins). The worker sends immutable snapshots (:class:`~.loaded_trace.LoadedTrace` for the
lanes, then :class:`~.loaded_trace.AnalysisUpdate` and :class:`~.loaded_trace.RooflineUpdate`); this
object, held by the GUI thread, folds each into a new :attr:`LoadState.trace`. The analysis is
accepted only in ``LANES_SHOWN`` (or arrives with the lanes), so it is shown once per open whatever
the event queue does (tests/views/test_trace_tab_race.py). Every method returns what the tab must
do; the tab only draws.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from .loaded_trace import AnalysisUpdate, LoadedTrace, RooflineUpdate


@dataclass(frozen=True)
class RunItem:
    """An item of the worker, with the open it belongs to (:meth:`LoadState.open`'s number): a
    replaced open's items can still be in the GUI thread's queue when the next open starts."""

    run: int
    item: object


def tag_items(produce: Callable[[threading.Event], Iterator[object]], run: int
              ) -> Callable[[threading.Event], Iterator[RunItem]]:
    """``produce(stop)`` whose items come as :class:`RunItem` of ``run``."""
    def tagged(stop: threading.Event) -> Iterator[RunItem]:
        for item in produce(stop):
            yield RunItem(run, item)

    return tagged


class Phase(enum.Enum):
    IDLE = "idle"
    LOADING = "loading"            # the worker reads the file(s); the trace shown before stays on screen
    LANES_SHOWN = "lanes shown"    # the new lanes are drawn; their analysis is still being computed
    ANALYSING = "analysing"        # the analysis is here and the tab is drawing it
    READY = "ready"                # everything is drawn (``trace_loaded`` fires on the way in)
    FAILED = "failed"
    CANCELLED = "cancelled"


class Ending(enum.Enum):
    """How a run ended, for the tab's message."""

    DONE = "done"                                   # nothing to say (or the failure said it)
    CANCELLED_BEFORE_LANES = "cancelled before the lanes"       # the trace shown before stays
    CANCELLED_BEFORE_ANALYSIS = "cancelled before the analysis"  # lanes without diagnosis
    CANCELLED_BEFORE_ROOFLINE = "cancelled before the roofline points"


class Failure(enum.Enum):
    """What a failed run leaves on screen."""

    NOT_OPENED = "not opened"           # the trace shown before (if any) stays
    ANALYSIS_FAILED = "analysis failed"  # the new lanes, without an analysis


TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.LOADING}),
    Phase.LOADING: frozenset({Phase.LOADING, Phase.LANES_SHOWN, Phase.ANALYSING, Phase.FAILED, Phase.CANCELLED,
                              Phase.IDLE}),
    Phase.LANES_SHOWN: frozenset({Phase.LOADING, Phase.ANALYSING, Phase.FAILED, Phase.CANCELLED}),
    Phase.ANALYSING: frozenset({Phase.LOADING, Phase.READY}),
    Phase.READY: frozenset({Phase.LOADING}),
    Phase.FAILED: frozenset({Phase.LOADING}),
    Phase.CANCELLED: frozenset({Phase.LOADING}),
}
"""The moves allowed; any other is a bug and raises (``LOADING -> ANALYSING``: the one-step path,
whose lanes arrive with their analysis; ``LOADING -> IDLE``: a run that ended without a trace)."""


class IllegalTransition(RuntimeError):
    pass


class LoadState:
    """The phase of the current open, the trace shown, and whether roofline points are still due."""

    def __init__(self) -> None:
        self.phase = Phase.IDLE
        self.trace: LoadedTrace | None = None
        """The trace on screen: the previous one while LOADING, then this open's latest snapshot."""
        self.roofline_pending = False
        self.cancelling = False
        self.run = 0
        """The number of the current open; items of another are dropped (:meth:`current`)."""
        self.history: list[Phase] = [Phase.IDLE]

    def _go(self, phase: Phase) -> None:
        if phase not in TRANSITIONS[self.phase]:
            raise IllegalTransition(f"{self.phase.value} -> {phase.value}")
        self.phase = phase
        self.history.append(phase)

    # -- the tab's requests ----------------------------------------------------------------------------
    def open(self) -> int:
        """A new load starts (the newest request wins); returns its number, for :func:`tag_items`."""
        self._go(Phase.LOADING)
        self.roofline_pending = False
        self.cancelling = False
        self.history = [Phase.LOADING]
        self.run += 1
        return self.run

    def current(self, item: object) -> object | None:
        """The item inside ``item`` (a :class:`RunItem`) if it is the current open's, else None."""
        if isinstance(item, RunItem) and item.run == self.run:
            return item.item
        return None

    def cancel(self) -> None:
        """Cancel requested: later items of this run are dropped (the analysis being drawn stays)."""
        if self.phase in (Phase.LOADING, Phase.LANES_SHOWN):
            self.cancelling = True

    # -- the worker's snapshots (on the GUI thread) -----------------------------------------------------
    def lanes_ready(self, trace: LoadedTrace) -> bool | None:
        """The lanes came: :attr:`trace` is now ``trace``. Returns None when the item is dropped
        (not loading, or cancelling), else whether the analysis came with them (draw it too)."""
        if self.phase is not Phase.LOADING or self.cancelling:
            return None
        self.trace = trace
        self.roofline_pending = True
        if trace.analysis_pending:
            self._go(Phase.LANES_SHOWN)
            return False
        self._go(Phase.ANALYSING)
        return True

    def analysis_ready(self, update: AnalysisUpdate) -> bool:
        """The analysis came: fold it into a new trace. Returns whether to draw it: only once per
        open, in LANES_SHOWN (a stale or repeated update is dropped)."""
        if self.phase is not Phase.LANES_SHOWN or self.cancelling or self.trace is None:
            return False
        self.trace = self.trace.then(update)
        self._go(Phase.ANALYSING)
        return True

    def roofline_ready(self, update: RooflineUpdate) -> bool:
        """The roofline points came: fold them in. Returns whether they were taken."""
        shown = self.phase in (Phase.LANES_SHOWN, Phase.ANALYSING, Phase.READY)   # this open's lanes
        if not shown or not self.roofline_pending or self.trace is None:
            return False
        self.trace = self.trace.then(update)
        self.roofline_pending = False
        return True

    def analysis_shown(self) -> bool:
        """The tab has drawn the analysis. Returns True once per open: emit ``trace_loaded``."""
        if self.phase is not Phase.ANALYSING:
            return False
        self._go(Phase.READY)
        return True

    def failed(self) -> Failure:
        """The run raised. What is left on screen decides the message."""
        if self.phase is Phase.LANES_SHOWN:
            self._go(Phase.FAILED)
            return Failure.ANALYSIS_FAILED
        if self.phase is Phase.LOADING:
            self._go(Phase.FAILED)
        return Failure.NOT_OPENED   # (after the analysis: only the roofline points were still to come)

    def finished(self, cancelled: bool) -> Ending:
        """The run ended (after its last item, or its failure); no more roofline points come."""
        self.roofline_pending = False
        if self.phase is Phase.LOADING:
            self._go(Phase.CANCELLED if cancelled else Phase.IDLE)
            return Ending.CANCELLED_BEFORE_LANES if cancelled else Ending.DONE
        if self.phase is Phase.LANES_SHOWN:   # not cancelled: it ended without its analysis and without an error
            self._go(Phase.CANCELLED if cancelled else Phase.FAILED)
            return Ending.CANCELLED_BEFORE_ANALYSIS if cancelled else Ending.DONE
        if cancelled and self.phase in (Phase.ANALYSING, Phase.READY):
            return Ending.CANCELLED_BEFORE_ROOFLINE
        return Ending.DONE
