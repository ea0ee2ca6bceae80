"""A loaded trace as the Trace tab reads it, and every query the tab makes on it (no Qt).

:func:`iter_loaded_trace` is the loading worker's generator: :func:`iter_built_trace` runs the
engine (:class:`.trace.Trace`) and builds a :class:`LoadedTrace` (lane specs, op tables, the
diagnosis panel's figures, the overview page, the MFU figures and roofline points). Every question
the tab asks (an event's details and partners, a search, a selected range) is a method of it.

>>> for item in iter_loaded_trace([Path("t.json.gz")], 10.0, stop):   # doctest: +SKIP
...     ...  # Progress items, then one LoadedTrace and its snapshots
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np

from ...child_stream import SendMapped, iter_in_child, prestart_helper, release_freed_memory
from ...roofline import RooflinePoint
from ...units import format_duration_us, format_si
from ..diagnosis import figures
from ..analysis.rank_analysis import RankAnalysis
from ..engine.api import Progress, TraceResult
from ..ingest.budget import MemoryBudget
from ..diagnosis.figures import TraceMfuFigures
from ..ingest.heap import HELPER_INITIALIZER
from ..model.lanes import (DEFAULT_IDLE_THRESHOLD_US, EventRef, LaneSpec, RankSpec, compute_gaps, full_range,
                           prepare_lanes)
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..model.trace_model import RankTrace, TraceModel
from ..analysis.op_points import OpPoint
from .trace import Trace, isolated
from ..model.queries import Matches, event_partners, find_events, op_row_name
from ..analysis.overview import (ActivityProfile, Overview, SelectionSummary, activity_profile, build_overview,
                                 selection_summary)
from ..analysis.what_if import try_first_line
from .what_if_shown import WhatIfShown, what_if_shown

BUILDER = "gpuperf_gui.core.trace.session.loaded_trace:iter_built_trace"
HELPER_NICE = 5
"""The loading helper's CPU priority below the window's (POSIX): on a busy machine the GUI thread
gets a core when it needs one."""
MINIMAP_BINS = 800
__all__ = ["DEFAULT_IDLE_THRESHOLD_US", "EventRef", "LaneSpec", "RankSpec", "DiagnosisView", "EventDetails",
           "AnalysisUpdate", "LoadedTrace", "Matches", "OpTable", "Progress", "RooflineUpdate", "build_loaded_trace",
           "iter_loaded_trace", "op_row_name"]


@dataclass(frozen=True)
class RooflineUpdate:
    """Roofline points of the :class:`LoadedTrace` yielded before (found after it: the lanes show sooner)."""

    points: tuple[RooflinePoint, ...]
    notes: tuple[str, ...]
    seconds: float = 0.0


@dataclass(frozen=True)
class AnalysisUpdate:
    """The analysis of the :class:`LoadedTrace` yielded before without it (one file: its lanes are
    shown while the analysis runs); :meth:`LoadedTrace.with_analysis` makes the analysed trace on
    the GUI thread."""

    analysis: tuple[RankAnalysis, ...]
    diagnosis: DiagnosisView
    op_tables: dict[int, dict[str, OpTable]]
    mfu_figures: TraceMfuFigures | None
    overview: Overview | None
    notes: tuple[str, ...]
    seconds: float = 0.0
    what_if: WhatIfShown | None = None


@dataclass
class OpTable:
    """Columns and rows of one op table view; numbers sort numerically, ``kinds`` says how to print.

    ``kinds[i]`` is "text", "count", "us" (a duration in µs), "percent" (a fraction) or "flops".
    """

    columns: list[str]
    kinds: list[str]
    rows: list[tuple]
    name_column: int = 0


@dataclass
class DiagnosisView:
    """What the diagnosis panel shows: the engine's diagnosis and figures, in the panel's units."""

    signature: str | None
    confidence: float | None
    evidence: list[str]
    fix: str
    secondary: list[str]
    per_rank: list[dict] = field(default_factory=list)   # per rank: rank, device, step_median_us, gpu_busy, ...
    steps: list[tuple[int, float, float, bool]] = field(default_factory=list)   # (number, duration_us, busy, warmup)
    straggler: int | None = None
    notes: list[str] | None = None
    stragglers: list[int] = field(default_factory=list)
    """Every late rank (the engine's MultiRankSummary), latest first; ``straggler`` is the first."""
    collective_lag_us: dict[int, float] = field(default_factory=dict)
    """Median lateness of each rank's collectives vs the median rank (µs)."""
    close_call: list[str] = field(default_factory=list)
    """The two causes of a close call (the headline names both), else empty."""
    projection: str | None = None
    """The fix's projected speedup, the line ``gpuperf diagnose`` prints as "Try first:"
    (:func:`.what_if.try_first_line`), or None without a what-if."""


@dataclass
class EventDetails:
    """What the details panel shows for one event."""

    name: str
    category: str
    lane: str
    rank: int
    start_us: float
    duration_us: float
    depth: int
    rows: list[tuple[str, str]]
    partners: list[tuple[str, str]]     # (anchor href, text)
    partner_title: str = ""


@dataclass(frozen=True)
class LoadedTrace:
    """Everything the Trace tab shows, built off the GUI thread, and the queries it answers.

    Frozen: once handed to the GUI thread it is never patched; a change is a new trace (:meth:`then`,
    ``dataclasses.replace``) made on the thread that holds it, as are its caches (``activity_cache``,
    ``timings_s``) and the drawn lanes' gaps."""

    model: TraceModel
    ranks: list[RankSpec]
    lanes: list[LaneSpec]
    full_range_us: tuple[float, float]
    files: list[str] = field(default_factory=list)
    analysis: list[RankAnalysis] = field(default_factory=list)   # the engine's, one per rank
    diagnosis: DiagnosisView | None = None
    op_tables: dict[int, dict[str, OpTable]] = field(default_factory=dict)  # rank -> view -> table
    mfu_figures: TraceMfuFigures | None = None    # None when they could not be computed (see notes)
    roofline_points: list[RooflinePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)         # truncation and other warnings
    idle_threshold_us: float = DEFAULT_IDLE_THRESHOLD_US
    overview: Overview | None = None
    activity_cache: dict[int, ActivityProfile] = field(default_factory=dict)
    """Activity profiles by bin count (the minimap's is made in the worker)."""
    analysis_pending: bool = False
    """The lanes without the analysis yet: an :class:`AnalysisUpdate` follows."""
    what_if: WhatIfShown | None = None
    """The what-if and the critical path, ready to draw (:class:`AnalysisUpdate`'s)."""
    timings_s: dict[str, float] = field(default_factory=dict)
    """Where the loading time went: ``engine_s`` (load, analyse, diagnose), ``build_s`` (this
    object), ``transfer_s`` (from the helper interpreter to this process), ``spilled_bytes``,
    ``roofline_s`` (the roofline points, found after the rest)."""

    # -- the next snapshot ----------------------------------------------------------------------------
    def with_analysis(self, update: AnalysisUpdate) -> LoadedTrace:
        """This trace with ``update``'s analysis: new RankSpecs where step times or a late mark change."""
        ranks = []
        for spec, rank, analysis in zip(self.ranks, self.model.ranks, update.analysis):
            late = rank.rank in update.diagnosis.stragglers
            ranks.append(replace(spec, step_durations_us={s.number: s.duration_s * 1e6 for s in analysis.steps},
                                 straggler=spec.straggler or late,
                                 title=spec.title + (" ⚠ late (straggler)" if late else "")))
        return replace(self, ranks=ranks, analysis=list(update.analysis), diagnosis=update.diagnosis,
                       op_tables=update.op_tables, mfu_figures=update.mfu_figures, overview=update.overview,
                       notes=[*self.notes, *update.notes], analysis_pending=False, what_if=update.what_if,
                       timings_s={**self.timings_s, "analysis_s": update.seconds})

    def then(self, item: object) -> LoadedTrace:
        """The trace after ``item`` of :func:`iter_loaded_trace` (itself for progress items)."""
        if isinstance(item, AnalysisUpdate):
            return self.with_analysis(item)
        if isinstance(item, RooflineUpdate):
            return replace(self, roofline_points=list(item.points), notes=[*self.notes, *item.notes],
                           timings_s={**self.timings_s, "roofline_s": item.seconds})
        return self

    # -- events -------------------------------------------------------------------------------------
    def event_span_us(self, ref: EventRef) -> tuple[float, float]:
        lane = self.model.ranks[ref.rank_index].lanes[ref.lane_id]
        s = float(lane.start_us[ref.index])
        return s, s + float(lane.duration_us[ref.index])

    def partners(self, ref: EventRef) -> list[EventRef]:
        """The launch <-> device-work partners of an event (:func:`.queries.event_partners`)."""
        return event_partners(self.model, ref)

    def details(self, ref: EventRef, partners: list[EventRef] | None = None) -> EventDetails:
        """Name, category, lane, times (from the trace start), ids, FLOPs, shapes and partner links."""
        partners = self.partners(ref) if partners is None else partners
        rank = self.model.ranks[ref.rank_index]
        lane = rank.lanes[ref.lane_id]
        i = ref.index
        rows: list[tuple[str, str]] = []

        def col(name: str, default: float) -> float:
            arr = getattr(lane, name)
            return float(arr[i]) if len(arr) else default

        for label, column in (("correlation id", "correlation"), ("external id", "external_id")):
            if col(column, -1) >= 0:
                rows.append((label, str(int(col(column, -1)))))
        kc = int(col("kernel_class", -1))
        if kc >= 0:
            rows.append(("kernel class", KERNEL_CLASSES[kc]))
        for label, column, unit in (("FLOPs", "flops", "FLOP"), ("bytes", "bytes", "B")):
            if np.isfinite(value := col(column, float("nan"))):
                rows.append((label, format_si(value, unit)))
        shapes = int(col("shapes_id", -1))
        if shapes >= 0:
            rows.append(("input shapes", rank.strings[shapes]))
        links = []
        for p in partners:
            plane = rank.lanes[p.lane_id]
            links.append((f"event:{p.rank_index}:{p.lane_id}:{p.index}",
                          f"{rank.strings[int(plane.name_id[p.index])]} — {plane.label}, "
                          f"{format_duration_us(float(plane.duration_us[p.index]))}"))
        title = ("Launched kernel" + ("s" if len(links) > 1 else "")) if lane.kind == "cpu" else "Launched by"
        return EventDetails(name=rank.strings[int(lane.name_id[i])], category=rank.strings[int(lane.category_id[i])],
                            lane=lane.label, rank=rank.rank, start_us=float(lane.start_us[i]) - self.full_range_us[0],
                            duration_us=float(lane.duration_us[i]), depth=int(col("depth", 0)),
                            rows=rows, partners=links, partner_title=title)

    # -- search ------------------------------------------------------------------------------------
    def find(self, query: str, mode: str = "name", lanes: Sequence[tuple[int, int]] | None = None) -> Matches:
        """Events whose name matches ``query`` (see :data:`.queries.SEARCH_MODES`), in time order
        (:func:`.queries.find_events`); ``lanes`` limits the search to those (rank_index, lane_id)
        pairs (default: the drawn lanes)."""
        shown = [(s.rank_index, s.lane_id) for s in self.lanes] if lanes is None else lanes
        return find_events(self.model, query, mode, shown)

    def match_text(self, matches: Matches, k: int) -> str:
        """One line of the search list: start (from the trace start), name, duration, rank, lane."""
        ref = matches.ref(k)
        rank = self.model.ranks[ref.rank_index]
        lane = rank.lanes[ref.lane_id]
        start = float(lane.start_us[ref.index]) - self.full_range_us[0]
        return (f"{format_duration_us(start):>10}   {rank.strings[int(lane.name_id[ref.index])]}   "
                f"({format_duration_us(float(lane.duration_us[ref.index]))}, rank {rank.rank}, {lane.label})")

    # -- geometry and ranges ------------------------------------------------------------------------
    def idle_gaps(self, rank_index: int, lane_id: int, threshold_us: float) -> tuple[np.ndarray, np.ndarray]:
        """Idle gaps (start_us, end_us) of one lane, of at least ``threshold_us``."""
        return compute_gaps(self.model.ranks[rank_index].lanes[lane_id], threshold_us)

    def summarize_range(self, t0_us: float, t1_us: float,
                        rank_indices: Sequence[int] | None = None) -> SelectionSummary:
        """Perfetto's area selection: time by category and the top kernels in [t0_us, t1_us]."""
        ranks = range(len(self.model.ranks)) if rank_indices is None else rank_indices
        return selection_summary([self.model.ranks[i] for i in ranks], t0_us, t1_us)

    def activity(self, bins: int = MINIMAP_BINS) -> ActivityProfile:
        """GPU busy fraction per rank over the whole trace in ``bins`` bins (the minimap)."""
        if bins not in self.activity_cache:
            self.activity_cache[bins] = activity_profile(self.model.ranks, *self.full_range_us, bins=bins)
        return self.activity_cache[bins]

    def step_span_us(self, number: int) -> tuple[float, float] | None:
        """The extent of step ``number`` over every rank (CPU and GPU spans), None if absent."""
        spans = []
        for r in self.model.ranks:
            for s in r.steps:
                if s.number == number:
                    spans += [s.cpu_start_us, s.cpu_end_us]
                    if np.isfinite(s.gpu_end_us):
                        spans += [s.gpu_start_us, s.gpu_end_us]
        return (min(spans), max(spans)) if spans else None

    def step_numbers(self) -> list[int]:
        return sorted({s.number for r in self.model.ranks for s in r.steps})

    def straggler_rank_indices(self) -> list[int]:
        """Indices (into model.ranks) of the ranks the engine found late."""
        late = set(self.diagnosis.stragglers if self.diagnosis else [])
        return [i for i, r in enumerate(self.model.ranks) if r.rank in late]

    def series_name(self) -> str:
        """The Roofline series name: ``trace: <file or folder> (<device>)``."""
        if not self.files:
            name = "trace"
        elif len(self.files) == 1:
            name = Path(self.files[0]).name.removesuffix(".gz").removesuffix(".json")
        else:
            name = f"{Path(self.files[0]).parent.name} ({len(self.files)} ranks)"
        devices = sorted({(r.device_name or "").replace("NVIDIA ", "").strip() for r in self.model.ranks} - {""})
        return f"trace: {name} ({', '.join(devices) if devices else 'device unknown'})"

    def title(self) -> str:
        """File name (or folder and rank count)."""
        if not self.files:
            return "trace"
        if len(self.files) == 1:
            return Path(self.files[0]).name
        return f"{Path(self.files[0]).parent.name}/ ({len(self.files)} ranks)"

    @property
    def n_events(self) -> int:
        return sum(len(lane) for r in self.model.ranks for lane in r.lanes)


# -- building -------------------------------------------------------------------------------------------
def iter_loaded_trace(paths: Sequence[Path | str], idle_threshold_us: float, stop: threading.Event,
                      isolate: bool | None = None, memory_budget: int | None = None
                      ) -> Iterator[Progress | LoadedTrace | AnalysisUpdate | RooflineUpdate]:
    """The loading worker's generator: :func:`iter_built_trace`'s items, never changed after they are
    yielded (the receiver folds the snapshots into new traces, :meth:`LoadedTrace.then`). It runs in
    a helper interpreter (:func:`.trace.isolated`): decoding, analysing and building hold the GIL for
    long stretches, which would freeze the window; a stop kills the helper at once. Errors propagate.
    ``memory_budget`` (bytes, None: the default) bounds the load (:mod:`.budget`)."""
    stats: dict[str, float] = {}
    args = ([str(p) for p in paths], idle_threshold_us)
    if isolated(isolate):  # the budget counts the window's share of each event too (budget.WINDOW_EVENT_BYTES)
        tree_budget = MemoryBudget.of(memory_budget).for_window()
        items = iter_in_child(BUILDER, args, {"memory_budget": tree_budget}, stop=stop, grace_s=0.0, ahead=True,
                              nice=HELPER_NICE, stats=stats, initializer=HELPER_INITIALIZER)
    else:
        items = iter_built_trace(*args, stop, memory_budget=memory_budget)
    for item in items:
        if stop.is_set():
            return
        if isinstance(item, SendMapped):   # in-process: the generator keeps its own copy
            if not item.relay:
                continue
            item = item.item
        if isinstance(item, LoadedTrace):   # timed before it is handed over, never touched after
            item.timings_s.update(stats)
        yield item


HELPER_AHEAD = True
"""Start the next load's helper interpreter ahead (:func:`warm_helper`); internal (docs/environment.md)."""


def iter_built_trace(paths: Sequence[str], idle_threshold_us: float, stop: threading.Event | None = None,
                     memory_budget: MemoryBudget | int | None = None
                     ) -> Iterator[Progress | SendMapped | LoadedTrace | AnalysisUpdate | RooflineUpdate]:
    """Load, analyse and build (the helper interpreter's target, :func:`iter_loaded_trace`): progress,
    one :class:`LoadedTrace` (nothing if stopped), then its snapshots. One file's lanes are sent
    before it is analysed (an :class:`AnalysisUpdate`), so they are on screen meanwhile; several
    files come analysed with their lanes. Last a :class:`RooflineUpdate` (a big trace's FLOP counts
    take a while)."""
    stop = stop or threading.Event()
    started = time.perf_counter()
    trace = Trace(paths, memory_budget=memory_budget)
    lanes_first = trace.is_one_file()
    if lanes_first:
        yield Progress(0.0, f"reading {Path(paths[0]).name}")
        trace.model()        # loaded, not analysed yet
    else:
        for item in trace.iter_result(stop):
            if isinstance(item, Progress):
                yield Progress(0.8 * item.fraction, item.message)
    if stop.is_set():
        return
    engine_s = time.perf_counter() - started
    yield Progress(0.7 if lanes_first else 0.9, "preparing the lanes")
    # In the helper the model goes into the transfer file first and the build reads it from there:
    # the helper never holds its columns twice (its own and the file's), and they are written once.
    twin = yield SendMapped(trace.model(), relay=False)
    if twin is not None:
        trace.adopt_model(twin)
        release_freed_memory()
    started = time.perf_counter()
    if lanes_first:
        loaded = _lanes_trace(trace.model(), idle_threshold_us, stop)
    else:
        loaded = build_loaded_trace(trace.result(), idle_threshold_us, stop, roofline=False)
        found = [r.points for r in trace.result().ranks]   # the engine's, found with the op tables
        trace = item = None   # the rest of the result (the what-if's graph) is not held while sending
    if stop.is_set():
        return
    loaded.timings_s.update(engine_s=engine_s, build_s=time.perf_counter() - started)
    twin = yield SendMapped(loaded)
    if twin is not None:   # in the helper: go on with the arrays the GUI process maps too, free ours
        loaded = twin
        if lanes_first:   # the Trace analyses these next
            trace.adopt_model(loaded.model)
        release_freed_memory()
    if lanes_first:
        yield Progress(0.85, "analysing")
        started = time.perf_counter()
        result = trace.result()
        if stop.is_set():
            return
        yield _analysis_update(result, time.perf_counter() - started)
        found = [r.points for r in result.ranks]
    yield Progress(0.95, "placing the kernels on the roofline")
    started = time.perf_counter()
    notes: list[str] = []
    points = roofline_points(loaded.model.ranks, notes, found)
    if not stop.is_set():
        yield RooflineUpdate(tuple(points), tuple(notes), time.perf_counter() - started)


def warm_helper() -> None:
    """Start the next load's helper interpreter now, with this module imported: its start and
    imports are then not part of opening a trace (nothing when loads run in this process or
    :data:`HELPER_AHEAD` is False)."""
    if isolated() and HELPER_AHEAD:
        prestart_helper((__name__,), HELPER_INITIALIZER)


def build_loaded_trace(result: TraceResult, idle_threshold_us: float = DEFAULT_IDLE_THRESHOLD_US,
                       stop: threading.Event | None = None, roofline: bool = True) -> LoadedTrace:
    """The engine's TraceResult as the tab draws it (the roofline points only with ``roofline``)."""
    loaded = _lanes_trace(result.model, idle_threshold_us, stop).with_analysis(_analysis_update(result))
    loaded.timings_s.pop("analysis_s", None)   # part of the engine's time here
    if roofline:
        loaded = replace(loaded, roofline_points=roofline_points(result.model.ranks, loaded.notes,
                                                                 [r.points for r in result.ranks]))
    return loaded


def _lanes_trace(model: TraceModel, idle_threshold_us: float, stop: threading.Event | None) -> LoadedTrace:
    """The lanes of ``model`` as the tab draws them, ``analysis_pending`` (:func:`_analysis_update`)."""
    notes: list[str] = list(model.notes)  # run-folder files skipped or broken (core/trace/ingest/load.py)
    rank_specs, lanes = prepare_lanes(model, idle_threshold_us, stop)
    for rank in model.ranks:
        if rank.truncation is not None:
            notes.insert(0, f"{Path(rank.file).name}: {rank.truncation.describe()}")
        for w in rank.warnings[:3]:
            if "truncated" not in w:
                notes.append(f"{Path(rank.file).name}: {w}")
    loaded = LoadedTrace(model=model, ranks=rank_specs, lanes=lanes, full_range_us=full_range(model),
                         files=[r.file for r in model.ranks], notes=notes, idle_threshold_us=idle_threshold_us,
                         analysis_pending=True)
    loaded.activity(MINIMAP_BINS)   # made here, off the GUI thread
    return loaded


def _analysis_update(result: TraceResult, seconds: float = 0.0) -> AnalysisUpdate:
    """What the engine found, as the tab shows it: figures, diagnosis, op tables, overview."""
    notes: list[str] = []
    analyses = [r.analysis for r in result.ranks]
    mfu_figures = _noted(notes, "MFU figures", lambda: figures.mfu_figures(analyses))
    overview = _noted(notes, "overview", lambda: build_overview(result))
    shown, projection = None, None
    try:
        shown = what_if_shown(result)   # the graph is walked here, not on the GUI thread
        wi = result.what_if()           # found once: the same projections
        projection = try_first_line(wi, result.diagnosis.signature) if wi is not None else None
    except Exception as exc:  # noqa: BLE001 - shown as a note; the lanes still open
        notes.append(f"what-if failed: {type(exc).__name__}: {exc}")
    return AnalysisUpdate(tuple(analyses), _diagnosis_view(result, projection), _op_tables(result), mfu_figures,
                          overview, tuple(notes), seconds, shown)


_T = TypeVar("_T")


def _noted(notes: list[str], what: str, compute: Callable[[], _T]) -> _T | None:
    """``compute()``, or None and a note when it fails (the lanes still open)."""
    try:
        return compute()
    except Exception as exc:  # noqa: BLE001 - shown as a note
        notes.append(f"{what} failed: {type(exc).__name__}: {exc}")
        return None


def _op_tables(result: TraceResult) -> dict[int, dict[str, OpTable]]:
    """Per rank, the "ops" (host) and "kernels" (device work: the rows with a ``device_share``)
    views; every figure is the engine's (OpRow), only converted to µs here."""
    out: dict[int, dict[str, OpTable]] = {}
    for r in result.ranks:
        ops = [(o.name, o.calls, o.self_cpu_s * 1e6, o.cpu_total_s * 1e6, o.self_device_s * 1e6,
                o.device_total_s * 1e6, o.flops if o.flops else None) for o in r.ops if o.kind == "host"]
        kernels = [(o.name, o.calls, o.device_total_s * 1e6,
                    o.mean_device_s * 1e6 if o.mean_device_s is not None else None, o.device_share)
                   for o in r.ops if o.kind == "device" and o.device_share is not None]
        out[r.trace.rank] = {
            "ops": OpTable(["Name", "Calls", "Self CPU", "CPU total", "Self device", "Device total", "FLOPs"],
                           ["text", "count", "us", "us", "us", "us", "flops"], ops),
            "kernels": OpTable(["Kernel", "Calls", "Device total", "Mean", "Share"],
                               ["text", "count", "us", "us", "percent"], kernels),
        }
    return out


def _diagnosis_view(result: TraceResult, projection: str | None = None) -> DiagnosisView:
    """:func:`diagnosis_view` with the job's figures, in the panel's units."""
    stragglers = list(result.multi_rank.stragglers)
    per_rank = [{**a.to_json(), "step_median_us": a.step_time_median_s * 1e6 if a.step_time_median_s else None,
                 "rank": a.rank} for a in (r.analysis for r in result.ranks)]   # the engine's, plus µs
    steps = []
    if len(result.ranks) == 1:
        steps = [(s.number, s.duration_s * 1e6, s.gpu_busy_fraction, s.warmup) for s in result.ranks[0].analysis.steps]
    notes = []
    skew = result.multi_rank.step_time_skew_s
    if skew is not None and len(result.ranks) > 1:
        notes.append(f"step-time skew across ranks: {skew * 1e3:.3g} ms")
    lag = {int(k): float(v) * 1e6 for k, v in result.multi_rank.collective_start_lag_s.items()}
    return replace(diagnosis_view(result.diagnosis), per_rank=per_rank, steps=steps,
                   straggler=stragglers[0] if stragglers else None, notes=notes, stragglers=stragglers,
                   collective_lag_us=lag, close_call=list(result.diagnosis.close_call), projection=projection)


def roofline_points(ranks: Sequence[RankTrace], notes: list[str], found: Sequence[list[OpPoint]]
                    ) -> list[RooflinePoint]:
    """The points "Show on roofline" draws; a failure becomes a note (the lanes still open).
    ``found``: per rank, the engine's :func:`.op_points.op_points` (``RankResult.points``)."""
    points: list[RooflinePoint] = []
    try:
        for rt, known in zip(ranks, found, strict=True):
            pts = [p.roofline_point() for p in known]
            if len(ranks) > 1:
                pts = [replace(p, label=f"rank {rt.rank}: {p.label}") for p in pts]
            points += pts
    except Exception as exc:  # noqa: BLE001
        notes.append(f"roofline points failed: {type(exc).__name__}: {exc}")
    return points


# -- compare (the Compare page) ---------------------------------------------------------------------------
DIFF_ENGINE = "gpuperf_gui.core.trace.session.diff:iter_diff"


def diff_job(before: Sequence[Path | str], after: Sequence[Path | str]
             ) -> Callable[[threading.Event], Iterator[Progress | object]]:
    """A ``produce(stop)`` for the views' task runner: Progress items, then the TraceDiff. Runs
    in a helper interpreter unless ``GPUPERF_TRACE_INPROCESS=1`` (the decoder holds the GIL)."""
    from .diff import iter_diff

    isolate = isolated()
    args = ([str(p) for p in before], [str(p) for p in after])

    def produce(stop: threading.Event) -> Iterator[Progress | object]:
        items = iter_in_child(DIFF_ENGINE, args, stop=stop, grace_s=0.0,
                              initializer=HELPER_INITIALIZER) if isolate else iter_diff(*args, stop)
        for item in items:
            if stop.is_set():
                return
            yield item

    return produce


@dataclass(frozen=True)
class FigureDelta:
    """One row of the Compare page's figures: before, after and their delta (``kind``: "s" or "fraction")."""

    label: str
    kind: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


def diff_figures(d) -> list[FigureDelta]:  # noqa: ANN001 (diff.TraceDiff)
    """The headline figures of both sides (step time, GPU busy, exposed comm, idle split, kernel time)."""
    b, a = d.before, d.after
    from ..vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT, hta_idle_label

    rows = [FigureDelta("step time", "s", b.step_time_s, a.step_time_s),
            FigureDelta("GPU busy", "fraction", b.gpu_busy_fraction, a.gpu_busy_fraction),
            FigureDelta(COMM_WAIT.name, "fraction", b.comm_wait_fraction, a.comm_wait_fraction),
            FigureDelta(COMM_KERNELS_EXPOSED.name, "fraction", b.comm_exposed_fraction, a.comm_exposed_fraction)]
    for cause in sorted(set(b.idle_breakdown) | set(a.idle_breakdown)):
        rows.append(FigureDelta(f"{hta_idle_label(cause)} (share of idle)", "fraction",
                                b.idle_breakdown.get(cause), a.idle_breakdown.get(cause)))
    rows.append(FigureDelta("kernel time" + (" per step" if b.per_step and a.per_step else ""), "s",
                            b.kernel_time_s, a.kernel_time_s))
    return rows


def diagnosis_view(diagnosis) -> DiagnosisView:  # noqa: ANN001 (diagnose.Diagnosis)
    """A job diagnosis alone (no per-rank figures: the Compare page's)."""
    return DiagnosisView(diagnosis.signature, diagnosis.confidence, list(diagnosis.evidence), diagnosis.fix,
                         list(diagnosis.secondary))
