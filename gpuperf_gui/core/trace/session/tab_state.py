"""The Trace tab's state without Qt: the load's phase, the trace shown, and what is selected in it.

:class:`TraceTabState` is the tab's one state object, a :class:`~.load_state.LoadState` plus what a
person did with the trace (the range selected, the search, the critical path shown), and the
module holds the tab's rules and the words of its messages. The tab reads its widgets into calls
on it and draws what it returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from ..model.lanes import EventRef
from .load_state import Ending, LoadState
from ..model.queries import Matches, op_row_name

if TYPE_CHECKING:
    from gpuperf_gui.core.hardware import Device, DeviceDatabase

    from ..model.lanes import LaneSpec
    from .loaded_trace import LoadedTrace

MAX_LISTED_MATCHES = 500
"""The Search tab lists this many matches' texts (all are highlighted and counted)."""
CLEAR_ERRORS = frozenset({"TraceFormatError", "NotATraceError", "MemoryBudgetError", "HelperProcessError"})
"""Exceptions whose message is written for the user."""
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
    """A search's matches (empty on a bad query: ``error`` says why) and the first :data:`MAX_LISTED_MATCHES` texts."""

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
        """A new trace with idle gaps of at least ``threshold_us``; returns the compute lanes to redraw."""
        self.trace = replace(self.trace, idle_threshold_us=threshold_us)   # a new trace, on its thread
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
        """What Enter in the search box does: "clear" (empty box), "next" (the same query again) or "search"."""
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
        """The op-table rows holding the search's matches (:func:`.queries.op_row_name`) when ``on``, else None."""
        if not (on and self.trace is not None and len(self.matches)):
            return None
        return {op_row_name(n) for n in self.matches.names}
