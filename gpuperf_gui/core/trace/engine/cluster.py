"""The compact engine: each rank is analysed next to its file (a Dask task, or a process of the local
pool) and only a :class:`RankSummary` of a few kB comes back: for jobs too big for one machine, and
for the job window. The client does what :func:`.api.assemble_job` does on the summaries, so
``gpuperf diagnose --dask-scheduler`` prints the same ``--json`` as the local run.

``address`` is ``tcp://host:8786`` (a running scheduler) or ``local[:N]`` (a ``LocalCluster`` of N
worker processes, one thread each; N defaults to the CPUs). Dask is an optional extra
(``pip install 'gpuperf-gui[cluster]'``), imported only here and lazily. Callers ask
:class:`.trace.Trace` (``dask_scheduler=`` or ``compact=True``).
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Sequence

import numpy as np

from ...json_text import EncodedJSON, encode_around
from ...units import json_safe
from ..analysis import intervals as iv
from ..analysis.rank_analysis import RankAnalysis
from .api import (MultiRankSummary, Progress, analyse_loaded_rank, diagnose_ranks, job_json, multi_rank_summary,
                  rank_collectives, rank_collectives_by_step, rank_json)
from ..ingest.budget import MemoryBudget
from ..ingest.decode import DEFAULT_MAX_BYTES
from ..ingest.heap import reused_heap
from ..diagnosis.diagnose import Diagnosis, diagnose_rank
from ..diagnosis.stragglers import RankCollectives
from ..ingest.load import (MANY_RANKS, FileFailure, _failure, dedupe_ranks, discover_files, failure_notes,
                           iter_per_file, load_rank, plan_workers)
from ..model.trace_model import ClusterError, RankTrace
from ..ingest.source import text_size_hint
from ..analysis.optable import OpRow
from ..analysis.overview import Overview, RankOverview, rank_overview, step_breakdown

LANE_BINS = 256
"""Time bins of a lane's coarse busy profile (the lane summary)."""
CONNECT_TIMEOUT_S = 10.0
"""How long the client waits for a scheduler (read at each connect: a test shortens it)."""
_POLL_S = 0.2
"""How often the client looks at ``stop`` while tasks run."""
_LOCAL_RE = re.compile(r"^local(?::(\d+))?$")
LOCAL_POOL = "local-pool"
"""The job window's ``address`` that means the local process pool (no Dask: :func:`iter_compact_analyse`)."""


# -- the compact per-rank result ---------------------------------------------------------------------
@dataclass
class LaneSummary:
    """One lane at a coarse level of detail: its busy fraction in :data:`LANE_BINS` equal bins over
    the rank's span (the rank's own clock), kept in 1/255 steps (one byte a bin)."""

    kind: str
    label: str
    events: int
    busy_u8: np.ndarray

    @property
    def busy(self) -> np.ndarray:
        """Busy fraction per bin (to within 1/510)."""
        return self.busy_u8.astype(np.float32) / 255.0


@dataclass
class RankSummary:
    """What a task sends back for one rank file: a few kB, whatever the rank's event count.

    Times are in the rank's own clock (``origin_us``); the client aligns them. ``collective_*``:
    :func:`.api.rank_collectives` of the rank.
    """

    order_index: int
    file: str
    rank: int
    rank_source: str
    origin_us: float
    span_us: tuple[float, float]
    device_name: str
    n_events: int
    analysis: RankAnalysis
    ops: list[OpRow]
    roofline_points: list[dict]
    collective_start_us: np.ndarray | None
    collective_duration_us: np.ndarray | None
    overview: RankOverview | None = None
    collectives: RankCollectives | None = None
    """Every collective with the step that launched it (:func:`.api.rank_collectives_by_step`)."""
    lanes: list[LaneSummary] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    truncation: str | None = None
    rank_json_parts: tuple[str, ...] | None = None
    """The rank's part of ``gpuperf diagnose --json`` (:func:`.api.rank_json`) encoded in its Dask
    task, around a hole for its diagnosis; ``rank_json_as``: for which rank number, file name and
    op-table rows (:meth:`ClusterResult.to_json`)."""
    rank_json_as: tuple[int, str, int] | None = None
    diagnosis: Diagnosis | None = None
    """The rank's verdict, found on the client (:func:`assemble`), as :class:`.api.RankResult`'s."""


def summarize_rank(path: str, order_index: int, *, max_bytes: int | None = DEFAULT_MAX_BYTES,
                   memory_budget: int | None = None, top: int = 10, overview: bool = False,
                   shown: str | None = None, encode_json: bool = False) -> RankSummary | FileFailure:
    """Load, analyse and summarise one rank file (the task a worker runs). The overview's parts (step
    breakdown, top kernels, lane summaries: what the job window draws) only with ``overview``: the
    CLI's JSON reads none of them. ``shown``: the file's name in the result and its failure (the path
    as the user gave it, as the local run names it; ``path`` is what the worker reads). ``encode_json``:
    also encode the rank's part of the JSON here (:attr:`RankSummary.rank_json_parts`). A file that
    fails gives a :class:`.load.FileFailure`, so one broken rank never fails the job."""
    try:
        rt = load_rank(path, max_bytes=max_bytes, order_index=order_index, memory_budget=memory_budget)
        summary = _summary(rt, order_index, top, overview)
    except Exception as exc:  # noqa: BLE001 - reported per file, as iter_per_file does
        failure = _failure(Path(path), exc)
        if shown is None:
            return failure
        return FileFailure(Path(shown), failure.message.replace(path, shown), failure.not_a_trace)
    if shown is not None and summary.file == path:
        summary.file = summary.analysis.file = shown
    if encode_json:
        _encode_rank_json(summary, top)
    return summary


RANK_JSON_INDENT = "    "
"""The indent of a rank's part in ``gpuperf diagnose --json`` (an item of ``ranks``): encoded for that
place, the part is written as it is."""


def _encode_rank_json(summary: RankSummary, top: int) -> None:
    """The rank's ``diagnose --json`` part, with a hole for its diagnosis (a late rank's changes)."""
    a = summary.analysis
    a.rank = summary.rank  # as assemble() sets it

    def rank_part(tokens: list[str]) -> object:
        hole = SimpleNamespace(to_json=lambda: tokens[0])   # the diagnosis's place, which the client fills
        return json_safe(rank_json(a, hole, summary.ops[:top], summary.roofline_points))  # type: ignore[arg-type]

    summary.rank_json_parts = encode_around(rank_part, 1, RANK_JSON_INDENT).parts
    summary.rank_json_as = (summary.rank, a.file, top)


def _summary(rt: RankTrace, order_index: int, top: int, with_overview: bool) -> RankSummary:
    analysis, ops, points = analyse_loaded_rank(rt)
    starts, durations = rank_collectives(rt)   # as the local run picks them: the same spans, bit for bit
    ov = None
    if with_overview:
        warmup = {s.number for s in analysis.steps if s.warmup}
        ov = rank_overview(rt, analysis, step_breakdown(rt, warmup))
    return RankSummary(
        order_index=order_index, file=rt.file, rank=rt.rank, rank_source=rt.rank_source,
        origin_us=rt.origin_us, span_us=rt.span_us, device_name=rt.device_name, n_events=rt.n_events,
        analysis=analysis, ops=ops[:top], roofline_points=[p.to_json() for p in points],
        collective_start_us=starts, collective_duration_us=durations,
        overview=ov, collectives=rank_collectives_by_step(rt) if len(rt.steps) >= 2 else None,
        lanes=_lane_summaries(rt) if with_overview else [], warnings=list(rt.warnings),
        truncation=rt.truncation.describe() if rt.truncation else None)


def _lane_summaries(rt: RankTrace) -> list[LaneSummary]:
    """Every lane's busy fraction per bin over the rank's span (union of its events)."""
    t0, t1 = rt.span_us
    edges = np.linspace(t0, t1, LANE_BINS + 1)
    width = max((t1 - t0) / LANE_BINS, 1e-12)
    out = []
    for lane in rt.lanes:
        busy = np.zeros(LANE_BINS)
        if len(lane):
            s, e = iv.union(lane.start_us, lane.start_us + lane.duration_us)
            busy = np.clip(np.diff(iv.covered_before((s, e), edges)) / width, 0.0, 1.0)
        out.append(LaneSummary(lane.kind, lane.label, len(lane), np.rint(255.0 * busy).astype(np.uint8)))
    return out


# -- the job, assembled on the client ----------------------------------------------------------------
@dataclass
class ClusterResult:
    """A job analysed on a cluster: per-rank compact results, the straggler summary and the verdict."""

    ranks: list[RankSummary]
    diagnosis: Diagnosis
    multi_rank: MultiRankSummary
    notes: list[str] = field(default_factory=list)

    def to_json(self, top: int = 10, *, encoded: bool = False) -> dict:
        """The ``gpuperf diagnose --json`` object, the same as :meth:`.api.TraceResult.to_json`.
        ``encoded``: a rank its worker encoded (:attr:`RankSummary.rank_json_parts`, still valid) is
        that text around its diagnosis, a :class:`.json_text.EncodedJSON` that ``print_json`` writes
        as it is."""
        ranks: list[Any] = []
        for r in self.ranks:
            if encoded and r.rank_json_parts is not None and r.rank_json_as == (r.analysis.rank, r.analysis.file, top):
                ranks.append(EncodedJSON(r.rank_json_parts, [json_safe(r.diagnosis.to_json())], RANK_JSON_INDENT))
            else:
                ranks.append(rank_json(r.analysis, r.diagnosis, r.ops[:top], r.roofline_points))
        return job_json(self.diagnosis, ranks, self.multi_rank, self.notes)

    def overview(self) -> Overview:
        """The overview (rank × step heatmap) from the ranks' compact step breakdowns."""
        ranks = [r.overview for r in self.ranks if r.overview is not None]
        return Overview(ranks, list(self.multi_rank.stragglers))

    @property
    def n_events(self) -> int:
        return sum(r.n_events for r in self.ranks)


def assemble(summaries: Sequence[RankSummary], notes: list[str] | None = None) -> ClusterResult:
    """What :func:`.api.assemble_job` does, from compact results (``summaries`` in file order)."""
    summaries = dedupe_ranks(sorted(summaries, key=lambda s: s.order_index))
    ordered = sorted(summaries, key=lambda s: s.rank)  # TraceModel.aligned
    origin = min((s.origin_us for s in ordered), default=0.0)
    spans, by_step = {}, {}
    for s in ordered:
        s.analysis.rank = s.rank
        if s.overview is not None:
            s.overview.rank = s.rank
        s.diagnosis = diagnose_rank(s.analysis)
        shift = s.origin_us - origin
        if s.collective_start_us is not None and s.collective_start_us.size:  # as api._collective_spans
            start = s.collective_start_us + shift if shift != 0 else s.collective_start_us
            spans[s.rank] = (start, start + s.collective_duration_us)  # in start order already
        if (c := s.collectives) is not None:
            by_step[s.rank] = replace(c, start_us=c.start_us + shift if shift != 0 else c.start_us)
    summary = multi_rank_summary(ordered, spans=spans, by_step=by_step or None)  # type: ignore[arg-type]
    diagnosis = diagnose_ranks(ordered, summary)  # type: ignore[arg-type]
    return ClusterResult(ordered, diagnosis, summary, list(notes or []))


# -- the scheduler -----------------------------------------------------------------------------------
def parse_address(address: str) -> tuple[str, int | None]:
    """``("local", n_workers or None)`` or ``("remote", None)``; raises :class:`ClusterError`."""
    text = address.strip()
    m = _LOCAL_RE.match(text)
    if m:
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and n < 1:
            raise ClusterError(f"{address}: local needs at least one worker")
        return "local", n
    if re.match(r"^(tcp|tls|ucx|inproc)://[^\s/]+$", text):
        return "remote", None
    raise ClusterError(f"{address!r} is not a scheduler address: give tcp://host:port or local[:N]")


def _import_distributed() -> Any:  # noqa: ANN401 (the module)
    try:
        import distributed  # noqa: PLC0415 - optional extra, imported only when asked for
    except ImportError as exc:
        raise ClusterError("Dask is not installed: pip install 'gpuperf-gui[cluster]' "
                           f"(dask[distributed]) ({exc})") from None
    return distributed


@contextmanager
def dask_client(address: str, timeout_s: float | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` on ``address``; for ``local[:N]`` a ``LocalCluster`` that lives
    as long as the client. Raises :class:`ClusterError` when it cannot connect within ``timeout_s``
    (default :data:`CONNECT_TIMEOUT_S`)."""
    timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    kind, n = parse_address(address)
    distributed = _import_distributed()
    cluster = None
    try:
        if kind == "local":
            n_workers = n or (os.cpu_count() or 1)
            cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                               dashboard_address=":0", silence_logs=40)
            client = distributed.Client(cluster, timeout=f"{timeout_s}s")
        else:
            client = distributed.Client(address.strip(), timeout=f"{timeout_s}s")
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


_Item = Progress | RankSummary | FileFailure


def _on_dask(files: list[Path], address: str, stop: threading.Event, budget_bytes: int, **options: Any
             ) -> Iterator[_Item]:
    """The ranks' summaries (or failures) from Dask tasks, with Progress items; nothing more once
    ``stop`` is set (the pending tasks are then cancelled). The workers read the files by their
    absolute paths; the results name them as given. The client takes the results in batches as they
    finish (``distributed.as_completed``), so its work per rank is constant (docs/scaling.md)."""
    n = len(files)
    yield Progress(0.0, f"connecting to {address}")
    run_id = uuid.uuid4().hex[:12]  # task keys unique on a shared scheduler
    with dask_client(address) as client:
        distributed = _import_distributed()
        yield Progress(0.02, f"analysing {n} file{'s' if n != 1 else ''} on {address}")
        workers = client.scheduler_info().get("workers", {})   # none reported yet: one thread
        batches = task_batches(files, max(1, sum(int(w.get("nthreads", 1)) for w in workers.values())))
        # the JSON's rank parts are encoded by the workers, in parallel, for the CLI (which takes no
        # overview); the window reads the figures, not the text
        futures = client.map(partial(summarize_ranks, memory_budget=budget_bytes, **options,
                                     encode_json=not options["overview"]),
                             [[str(files[i].resolve()) for i in b] for b in batches], batches,
                             [[str(files[i]) for i in b] for b in batches], pure=False,
                             key=[f"gpuperf-ranks-{b[0]}-{run_id}" for b in batches])
        index = {fut.key: k for k, fut in enumerate(futures)}
        done = distributed.as_completed(futures, with_results=True, raise_errors=False)
        del futures  # as_completed holds the pending ones; a finished one is released at once
        count = 0
        while not done.is_empty() or done.has_ready():
            if stop.is_set():  # looked at every _POLL_S, also while tasks run
                client.cancel(list(done.futures))
                return
            finished = done.next_batch(block=False)
            if not finished:
                # wait for a result or _POLL_S: as_completed notifies its condition after queueing each
                # result (checked under it, so no wake-up is lost)
                with done.thread_condition:
                    if not done.has_ready():
                        done.thread_condition.wait(_POLL_S)
                continue
            for fut, value in sorted(finished, key=lambda pair: index[pair[0].key]):
                batch = batches[index[fut.key]]
                yield from _results(fut, value, [files[i] for i in batch])
                fut.release()  # the cluster forgets it: nothing of the rank stays there
                count += len(batch)
            yield Progress(0.02 + 0.93 * count / n, f"analysed {files[batch[-1]].name}")


TASK_MAX_FILES = 16
TASK_MAX_TEXT_BYTES = 32 << 20
TASKS_PER_THREAD = 8
"""Rank files share a task up to TASK_MAX_FILES and TASK_MAX_TEXT_BYTES of JSON, while there are
still TASKS_PER_THREAD tasks for each worker thread (the tail stays short): a Dask task costs its
worker and the scheduler about as much as analysing a small rank; a big rank gets a task of its own."""


def task_batches(files: Sequence[Path], threads: int) -> list[list[int]]:
    """The files' indices grouped into tasks (in file order; see :data:`TASK_MAX_FILES`)."""
    per_task = max(1, min(TASK_MAX_FILES, len(files) // max(1, TASKS_PER_THREAD * threads)))
    batches: list[list[int]] = []
    text = 0
    for i, f in enumerate(files):
        size = text_size_hint(Path(f))
        if not batches or len(batches[-1]) >= per_task or text + size > TASK_MAX_TEXT_BYTES:
            batches.append([])
            text = 0
        batches[-1].append(i)
        text += size
    return batches


def summarize_ranks(paths: Sequence[str], order_indices: Sequence[int], shown: Sequence[str], **kwargs: Any
                    ) -> list[RankSummary | FileFailure]:
    """:func:`summarize_rank` for each file of one task, in order (``shown``: their names in the result).

    On one reused heap (:func:`.heap.reused_heap`, trimmed once at the task's end): ``dask worker``'s
    nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which turns glibc's adaptive mmap
    threshold off, so every block over 128 kB a small rank's load takes is mapped and zeroed afresh."""
    with reused_heap():
        return [summarize_rank(p, i, shown=name, **kwargs) for p, i, name in zip(paths, order_indices, shown)]


def _results(fut: Any, value: Any, paths: Sequence[Path]  # noqa: ANN401 (distributed's)
             ) -> list[RankSummary | FileFailure]:
    """A task's results (``value``, as ``as_completed(with_results=True, raise_errors=False)`` gives
    it); a task that failed outside the loader (its worker died) names each of its files."""
    if fut.status == "finished":
        return value
    exc = value[1] if isinstance(value, tuple) and len(value) == 3 else value  # (type, exception, traceback)
    return [FileFailure(p, f"{p}: the Dask task failed: {type(exc).__name__}: {exc}", False) for p in paths]


# -- when a job opens as an overview ------------------------------------------------------------------
HELD_BYTES_PER_TEXT_BYTE = 0.8
"""What a window holding loaded lanes keeps per byte of the traces' JSON text: ~205 bytes per event
(benchmarks/many_ranks_gui.py, full load of 3.02M events: +619 MB) over ~250 bytes of JSON an event."""


def overview_reason(files: Sequence[Path], budget_bytes: int) -> str | None:
    """Why ``files`` should open as a job overview (None: load their lanes): more than
    :data:`MANY_RANKS` rank files, or several files whose lanes would not fit ``budget_bytes``
    (a single file always loads; the loader's budget guards it)."""
    if len(files) > MANY_RANKS:
        return f"{len(files)} rank files"
    if len(files) < 2:
        return None
    held = HELD_BYTES_PER_TEXT_BYTE * sum(text_size_hint(Path(f)) for f in files)
    if held > budget_bytes:
        return (f"{len(files)} rank files whose lanes would hold ~{held / 1e9:.1f} GB, over the "
                f"{budget_bytes / 1e9:.1f} GB memory budget")
    return None


# -- the compact engine: the local pool or Dask ------------------------------------------------------
def is_local_pool(address: str | None) -> bool:
    """True for the local process pool (``None`` or :data:`LOCAL_POOL`), False for a Dask address."""
    return address is None or address.strip() == LOCAL_POOL


def engine_label(address: str | None, n_workers: int | None = None) -> str:
    """What ran the ranks, in words (the job window says it)."""
    if is_local_pool(address):
        n = f" of {n_workers} process{'es' if n_workers != 1 else ''}" if n_workers else ""
        return f"the local process pool{n}"
    kind, n = parse_address(address)  # type: ignore[arg-type]
    if kind == "local":
        return f"a Dask LocalCluster ({address.strip()})"  # type: ignore[union-attr]
    return f"the Dask scheduler at {address.strip()}"  # type: ignore[union-attr]


def iter_compact_analyse(paths: Sequence[Path | str], stop: threading.Event, *,
                         address: str | None = None, workers: int | None = None,
                         max_bytes: int | None = DEFAULT_MAX_BYTES, memory_budget: MemoryBudget | int | None = None,
                         top: int = 10, overview: bool = False) -> Iterator[Progress | ClusterResult]:
    """:class:`.api.Progress` items, then one :class:`ClusterResult` (nothing when ``stop`` is set):
    :func:`summarize_rank` of each file on the local process pool or, with ``address``, in Dask tasks."""
    files = discover_files(paths)
    options = {"max_bytes": max_bytes, "top": top, "overview": overview}
    if address is None:
        items = _on_pool(files, stop, workers, MemoryBudget.of(memory_budget), **options)
    else:
        items = _on_dask(files, address, stop, MemoryBudget.of(memory_budget).limit_bytes, **options)
    summaries: list[RankSummary] = []
    failures: list[FileFailure] = []
    for item in items:
        if isinstance(item, Progress):
            yield item
        else:
            (failures if isinstance(item, FileFailure) else summaries).append(item)
    if stop.is_set():
        return
    failures.sort(key=lambda f: str(f.path))
    notes = failure_notes(failures, len(files))
    yield Progress(0.97, "diagnosing")
    yield assemble(summaries, notes)


def _on_pool(files: list[Path], stop: threading.Event, workers: int | None, budget: MemoryBudget, **options: Any
             ) -> Iterator[_Item]:
    """The ranks' summaries (or failures) from the local process pool, with Progress items."""
    n = len(files)
    n_workers, share = plan_workers(files, budget, workers)
    yield Progress(0.0, f"analysing {n} file{'s' if n != 1 else ''} on {engine_label(None, n_workers)}")
    work = partial(summarize_rank, memory_budget=share.limit_bytes, **options)
    with closing(iter_per_file(files, work, stop, workers=n_workers, collect_failures=True)) as results:
        for count, (i, item) in enumerate(results, 1):
            yield item
            yield Progress(0.95 * count / n, f"analysed {files[i].name}")
