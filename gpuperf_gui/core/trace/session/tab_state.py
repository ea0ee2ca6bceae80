"""The Trace tab's state without Qt: the load's life as a state machine, the trace shown, and what
is selected in it.

One open goes ``IDLE -> LOADING -> LANES_SHOWN -> ANALYSING -> READY``, or ends ``FAILED`` or
``CANCELLED``; a new open starts again at ``LOADING`` from any phase (the newest request wins).

- ``LOADING``: the worker reads the file(s); the trace shown before (if any) stays on screen.
- ``LANES_SHOWN``: the new trace's lanes are drawn; its analysis is still being computed (one big
  file: the lanes come first).
- ``ANALYSING``: the analysis is here and the tab is drawing it (diagnosis, steps, op table).
- ``READY``: everything is drawn; ``trace_loaded`` fires on the way in, once per open.

The worker sends immutable snapshots (:class:`~.loaded_trace.LoadedTrace` for the lanes, then
:class:`~.loaded_trace.AnalysisUpdate` and :class:`~.loaded_trace.RooflineUpdate`); :class:`LoadState`,
held by the GUI thread, folds each into a new trace (:meth:`~.loaded_trace.LoadedTrace.then`) and
replaces :attr:`LoadState.trace` with it. The analysis is accepted only in ``LANES_SHOWN`` (or
arrives with the lanes), so it is shown once per open whatever the event queue does (a stalled GUI
thread once saw it twice: tests/views/test_trace_tab_race.py).

:class:`TraceTabState`, the tab's one state object, is that plus what a person did with the trace:
the range selected, the search and its current match, the critical path shown. Here too are the
tab's rules: which controls the trace enables (:class:`Controls`), what Enter does in the search
box, what the idle threshold changes, how an event is brought into view (:func:`reveal_range`), and
the words of its messages (:func:`failure_text`, :func:`ending_text`, :func:`notes_text`). Every
method returns what the tab must do; the tab reads its widgets into calls and draws what comes back.

>>> state = TraceTabState(); run = state.open(); state.phase      # doctest: +SKIP
<Phase.LOADING: 'loading'>
>>> state.lanes_ready(trace)      # -> True: draw the analysis too (it came with the lanes)  # doctest: +SKIP
>>> state.search("gemm", "name", lanes)   # doctest: +SKIP
"""

from __future__ import annotations

import enum
import re
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..model.lanes import EventRef
from ..model.queries import Matches

if TYPE_CHECKING:
    from gpuperf_gui.core.hardware import Device, DeviceDatabase

    from ..model.lanes import LaneSpec
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
    LOADING = "loading"
    LANES_SHOWN = "lanes shown"
    ANALYSING = "analysing"
    READY = "ready"
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
        """A new load starts (any phase: the newest request wins). Returns its number: tag its
        items with it (:func:`tag_items`)."""
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

    @property
    def shown_by_run(self) -> bool:
        """This open's lanes are on screen."""
        return self.phase in (Phase.LANES_SHOWN, Phase.ANALYSING, Phase.READY)

    @property
    def busy(self) -> bool:
        return self.phase in (Phase.LOADING, Phase.LANES_SHOWN, Phase.ANALYSING)

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
        self.trace = self.trace.with_analysis(update)
        self._go(Phase.ANALYSING)
        return True

    def roofline_ready(self, update: RooflineUpdate) -> bool:
        """The roofline points came: fold them in. Returns whether they were taken."""
        if not self.shown_by_run or not self.roofline_pending or self.trace is None:
            return False
        self.trace = self.trace.with_roofline(update)
        self.roofline_pending = False
        return True

    def update_trace(self, trace: LoadedTrace) -> None:
        """The tab's own change of the trace shown (a new idle threshold): a new trace, on its thread."""
        if self.trace is not None:
            self.trace = trace

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
        if self.phase is Phase.LANES_SHOWN:
            if cancelled:
                self._go(Phase.CANCELLED)
                return Ending.CANCELLED_BEFORE_ANALYSIS
            self._go(Phase.FAILED)    # ended without its analysis and without an error
            return Ending.DONE
        if cancelled and self.phase in (Phase.ANALYSING, Phase.READY):
            return Ending.CANCELLED_BEFORE_ROOFLINE
        return Ending.DONE


MAX_LISTED_MATCHES = 500
"""The Search tab lists this many matches' texts (all are highlighted and counted)."""
CLEAR_ERRORS = frozenset({"TraceFormatError", "NotATraceError", "MemoryBudgetError", "HelperProcessError"})
"""Exceptions whose message is written for the user (core/trace/model/trace_model.py, budget.py, child_stream.py)."""
SAME_THRESHOLD_US = 1e-9
"""Idle thresholds closer than this are the same (the spin box's value is a float)."""


@dataclass(frozen=True)
class Controls:
    """Which of the tab's controls the trace shown enables."""

    lanes: bool            # search, zoom, steps, the Lanes menu: the lanes answer them
    send_to_mfu: bool      # the trace has MFU figures
    roofline: bool         # its kernels have roofline points
    roofline_pending: bool  # the points are still being found
    ranks_page: bool       # more than one rank


@dataclass(frozen=True)
class SearchResult:
    """A search's outcome: the matches (empty on a bad query, with ``error`` saying why) and the
    texts of the first :data:`MAX_LISTED_MATCHES`."""

    matches: Matches
    texts: tuple[str, ...] = ()
    error: str | None = None

    @property
    def label(self) -> str:
        """The count beside the search box."""
        if self.error is not None:
            return self.error
        n = len(self.matches)
        return f"{n:,} matches" if n else "no match"


def failure_text(message: str) -> str:
    """The words for a failed load (``message`` is ``"<ExceptionName>: <detail>"``): core's own
    message when it is written for the user, else a bug report request."""
    kind, _, detail = message.partition(": ")
    if kind in CLEAR_ERRORS:
        return detail
    return f"an unexpected error in the loader ({message}); please report it with the file"


def ending_text(ending: Ending, trace_shown: bool) -> tuple[str, bool] | None:
    """(message, is a note) for how a run ended, None when there is nothing to say."""
    if ending is Ending.CANCELLED_BEFORE_ANALYSIS:
        return "Cancelled before the analysis (open the trace again to analyse it).", True
    if ending is Ending.CANCELLED_BEFORE_ROOFLINE:
        return ("Cancelled before the kernels were placed on the roofline "
                "(open the trace again to place them)."), True
    if ending is Ending.CANCELLED_BEFORE_LANES:
        return "Loading cancelled." + (" The trace shown before is still open." if trace_shown else ""), False
    return None


def notes_text(notes: Sequence[str]) -> str:
    """The loader's notes worth a line over the lanes: a truncated trace first, else the first three."""
    truncated = [n for n in notes if "truncated" in n]
    if truncated:
        return "Truncated trace: " + "; ".join(truncated)
    return "; ".join([n for n in notes if "truncated" not in n][:3])


def reveal_range(span_us: tuple[float, float], view_us: tuple[float, float]
                 ) -> tuple[str, float, float] | None:
    """How to bring an event spanning ``span_us`` into a view of ``view_us``: ``("zoom", s, e)``
    when it is wider than the view, ``("pan", x0, x1)`` (the same width, centred on it) when it is
    outside, None when it is in view already."""
    s, e = span_us
    x0, x1 = view_us
    width = x1 - x0
    if e - s > width:
        return ("zoom", s, e)
    if not (x0 <= s and e <= x1):
        c = (s + e) / 2
        return ("pan", c - width / 2, c + width / 2)
    return None


def roof_device(trace: LoadedTrace | None, database: DeviceDatabase | None, toolbar: Device | None
                ) -> tuple[Device | None, str]:
    """(device, label) the trace's kernels are judged on: its GPU when the database knows it, else
    the toolbar's device (and why)."""
    from ..analysis.kernel_roof import trace_device

    names = [r.device_name for r in trace.model.ranks if r.device_name] if trace is not None else []
    device = trace_device(names[0], database) if names else None
    if device is not None:
        return device, f"{device.name} (the trace's GPU)"
    if toolbar is None:
        return None, ""
    why = f"the trace's GPU ({names[0]}) is not in the database" if names else "the trace names no GPU"
    return toolbar, f"{toolbar.name}, the toolbar's device ({why})"


def ranks_shown_after(shown: set[int] | None, n_ranks: int, rank_index: int, on: bool) -> set[int] | None:
    """The ranks drawn after showing (``on``) or hiding one; None: all of them."""
    current = set(range(n_ranks)) if shown is None else set(shown)
    (current.add if on else current.discard)(rank_index)
    return None if len(current) == n_ranks else current


class TraceTabState(LoadState):
    """The Trace tab's state: the load (:class:`LoadState`) and what is selected in the trace shown."""

    def __init__(self) -> None:
        super().__init__()
        self.selected_range: tuple[float, float] | None = None   # the right-dragged range (µs)
        self.matches = Matches.empty()
        self.match_pos = -1
        self.last_query: tuple[str, str] | None = None   # (mode, text) searched by Enter: Enter again steps
        self.search_args: tuple[str, str] | None = None  # (text, mode) of the last search that ran
        self.path_shown = False   # the critical path highlighted

    # -- what the trace enables ---------------------------------------------------------------------
    def controls(self) -> Controls:
        trace = self.trace
        return Controls(lanes=trace is not None, send_to_mfu=trace is not None and trace.mfu_figures is not None,
                        roofline=trace is not None and bool(trace.roofline_points),
                        roofline_pending=self.roofline_pending,
                        ranks_page=trace is not None and len(trace.model.ranks) > 1)

    # -- the idle threshold ---------------------------------------------------------------------------
    def threshold_differs(self, threshold_us: float) -> bool:
        """``threshold_us`` is not the trace's idle threshold (and there is a trace)."""
        return self.trace is not None and abs(threshold_us - self.trace.idle_threshold_us) >= SAME_THRESHOLD_US

    def apply_idle_threshold(self, threshold_us: float) -> list[LaneSpec]:
        """A new trace with idle gaps of at least ``threshold_us``; returns the compute lanes whose
        gaps changed (given their new gaps: redraw them)."""
        self.update_trace(replace(self.trace, idle_threshold_us=threshold_us))
        trace, changed = self.trace, []
        for spec in trace.lanes:
            if spec.kind == "gpu_compute":
                spec.set_gaps(trace.idle_gaps(spec.rank_index, spec.lane_id, threshold_us))
                changed.append(spec)
        return changed

    # -- selection ---------------------------------------------------------------------------------
    def select_range(self, t0: float, t1: float) -> bool:
        """A range was right-dragged; True when it is one (not a click) and there is a trace to sum."""
        self.selected_range = (t0, t1) if t1 > t0 else None
        return self.selected_range is not None and self.trace is not None

    def take_range(self) -> tuple[float, float] | None:
        """The selected range, to zoom to it (the selection then ends)."""
        taken, self.selected_range = self.selected_range, None
        return taken

    def partners(self, ref: EventRef | None) -> list[EventRef]:
        return [] if ref is None or self.trace is None else self.trace.partners(ref)

    def selection_span_us(self, ref: EventRef) -> tuple[float, float]:
        """The span of an event and its partners (the kernel it launched, the launch of a kernel)."""
        spans = [self.trace.event_span_us(r) for r in [ref, *self.trace.partners(ref)]]
        return min(a for a, _ in spans), max(b for _, b in spans)

    def rank_index(self, rank: int) -> int | None:
        """The index in the trace shown of the rank numbered ``rank``."""
        if self.trace is None:
            return None
        return next((i for i, r in enumerate(self.trace.model.ranks) if r.rank == rank), None)

    # -- search ------------------------------------------------------------------------------------
    def clear_search(self) -> None:
        self.matches, self.match_pos, self.last_query = Matches.empty(), -1, None

    def enter(self, text: str, mode: str) -> str:
        """What Enter in the search box does: ``"clear"`` (empty box), ``"next"`` (the same query
        again: the next match) or ``"search"``."""
        if not text:
            return "clear"
        if len(self.matches) and self.last_query == (mode, text):
            return "next"
        return "search"

    def search(self, text: str, mode: str, lanes: Sequence[tuple[int, int]]) -> SearchResult:
        """Find ``text`` (``mode``: name, exact, regex, class) among the events of ``lanes`` (the
        drawn (rank index, lane id)); the matches become the current ones."""
        self.last_query = None
        if self.trace is None:
            return SearchResult(Matches.empty())
        try:
            self.matches = self.trace.find(text, mode, lanes)
        except (re.error, ValueError) as exc:
            self.matches = Matches.empty()
            return SearchResult(self.matches, error=f"bad {'regex' if mode == 'regex' else 'query'}: {exc}"[:60])
        self.match_pos = -1
        self.search_args = (text, mode)
        n = min(len(self.matches), MAX_LISTED_MATCHES)
        return SearchResult(self.matches, tuple(self.trace.match_text(self.matches, k) for k in range(n)))

    def step_match(self, direction: int) -> int | None:
        """The index of the next (+1) or previous (-1) match, wrapping around; None without matches."""
        if not len(self.matches):
            return None
        return (self.match_pos + direction) % len(self.matches)

    def go_to_match(self, k: int) -> EventRef | None:
        """Match ``k`` becomes the current one; its event (None when there is no such match)."""
        if not (0 <= k < len(self.matches)):
            return None
        self.match_pos = k
        return self.matches.ref(k)

    def rerun_search(self) -> tuple[str, str] | None:
        """The (text, mode) to search again after the drawn lanes changed, if a search has matches."""
        return self.search_args if self.search_args is not None and len(self.matches) else None

    def op_filter(self, on: bool) -> set[str] | None:
        """The op-table names the search's matches have, when filtering is ``on`` (else None)."""
        if not (on and self.trace is not None and len(self.matches)):
            return None
        return self.trace.op_table_names(self.matches)
