"""Load trace files and folders of per-rank files, rank by rank (:func:`load_rank`).

A clean file is decoded chunk by chunk straight into columns (:mod:`.stream_decode`); a file
that is not clean JSON goes to the whole-file path (:func:`load_rank_whole`), which repairs, skips
and salvages. Ranks loaded in parallel share one memory budget (:mod:`.budget`). In a load of several
files a file that is not a trace is skipped and a broken rank file is named in
:attr:`.trace_model.TraceModel.notes`; the other ranks load. The one way in for a caller is
:class:`..session.trace.Trace` (``Trace(paths).model()``, ``.result()``); this module is its loader.
"""
from __future__ import annotations

import os
import queue
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence, TypeVar

from .budget import MemoryBudget
from . import stream_decode
from .build import EventColumns, add_events, build_rank_columns
from .heap import reused_heap
from .decode import DEFAULT_MAX_BYTES, decode_trace, gc_paused
from ..model.trace_model import NotATraceError, RankTrace, TraceFormatError
from .source import text_size_hint

if TYPE_CHECKING:  # imported when a pool starts: a single-file load never pays for them
    from concurrent.futures import ProcessPoolExecutor

MANY_RANKS = 32
"""More rank files than this open as a job overview from compact results, a rank's lanes on demand;
`gpuperf diagnose` of more rank files analyses them as compact results too. Why 32: the lanes of more
ranks cannot be read side by side (32 ranks already stack 130+ lanes), and holding them costs the
window every rank's events, where a compact result is ~20 kB a rank (benchmarks/many_ranks_gui.py)."""

TRACE_SUFFIXES = (".json", ".json.gz", ".gz", ".tmp", ".json.tmp")
REUSED_HEAP_MIN_BYTES = 32 << 20
"""Files of less JSON than this load without :func:`.heap.reused_heap`: what it saves (fresh pages for
columns of tens of MB) a small load does not have, and its ``mallopt`` calls and ``malloc_trim`` cost
every rank the same."""


def load_rank(path: Path | str, *, max_bytes: int | None = DEFAULT_MAX_BYTES, order_index: int = 0,
              memory_budget: MemoryBudget | int | None = None) -> RankTrace:
    """Load one trace file (plain or gzip JSON) into a :class:`RankTrace`.

    ``memory_budget`` (bytes, default :data:`.budget.DEFAULT_MEMORY_BUDGET_BYTES`): the file is
    refused as soon as reading shows that decoding it would not fit. Raises :class:`TraceFormatError`
    when the file is not a trace or not a regular file (the message names the file and the reason), is
    over ``max_bytes`` (decompressed), or (:class:`.budget.MemoryBudgetError`) would not fit the budget.
    """
    path = Path(path)
    budget = MemoryBudget.of(memory_budget)
    heap = reused_heap() if text_size_hint(path) >= REUSED_HEAP_MIN_BYTES else nullcontext()
    with heap:  # clean files: chunk by chunk, straight into columns
        rank = stream_decode.load_rank_streamed(path, budget=budget, max_bytes=max_bytes, order_index=order_index)
        if rank is not None:
            return rank
        return load_rank_whole(path, max_bytes=max_bytes, order_index=order_index, memory_budget=budget)


def load_rank_whole(path: Path | str, *, max_bytes: int | None = DEFAULT_MAX_BYTES, order_index: int = 0,
                    memory_budget: MemoryBudget | int | None = None) -> RankTrace:
    """:func:`load_rank` by the whole-file path: the text read whole, decoded (repaired, skipped,
    salvaged where needed), then built. Every file that the streamed decode does not take."""
    path = Path(path)
    budget = MemoryBudget.of(memory_budget)
    with gc_paused():
        decoded = decode_trace(path, budget, max_bytes)
        columns = EventColumns()
        add_events(columns, decoded.events)
        return build_rank_columns(columns, decoded.meta, path, order_index, n_entries=len(decoded.events),
                                  skipped=decoded.skipped, truncation=decoded.truncation, warnings=decoded.warnings)


def discover_files(paths: Iterable[Path | str]) -> list[Path]:
    """Expand folders into their trace files (sorted by name); keep files as given."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            # Named like a trace but not a regular file (a FIFO, a folder, a dangling link): kept, so
            # that opening it fails and the load notes it as it notes a broken rank, never drops it.
            found = sorted(f for f in p.iterdir() if _looks_like_trace(f))
            if not found:
                raise TraceFormatError(f"{p}: folder holds no .json or .json.gz trace files")
            files.extend(found)
        elif p.exists():
            files.append(p)
        else:
            raise TraceFormatError(f"{p}: no such file or folder")
    return files


def _looks_like_trace(path: Path) -> bool:
    name = path.name.lower()
    not_traces = name.endswith((".meta.json", ".key_averages.txt")) or name == "ceilings.json"
    return name.endswith(TRACE_SUFFIXES) and not not_traces


@dataclass(frozen=True)
class FileFailure:
    """A file of a multi-file load that did not load: ``not_a_trace`` (skipped) or broken."""

    path: Path
    message: str
    not_a_trace: bool


def failure_notes(failures: Sequence[FileFailure], n_files: int) -> list[str]:
    """One note per file that did not load; raises the first file's error when none loaded."""
    if failures and len(failures) >= n_files:
        broken = [f for f in failures if not f.not_a_trace] or list(failures)
        more = len(failures) - 1
        others = "" if not more else f" (and {more} more file{'s' if more > 1 else ''} did not load either)"
        raise TraceFormatError(f"{broken[0].message}{others}")
    notes = []
    for f in failures:
        reason = f.message.removeprefix(f"{f.path}: ")
        if f.not_a_trace:
            notes.append(f"skipped {f.path.name}: not a trace ({reason})")
        else:
            notes.append(f"rank file {f.path.name} could not be loaded, the other ranks are shown: {reason}")
    return notes


SMALL_JOB_TEXT_BYTES = 16 << 20
"""Files of less JSON than this in all load in this process unless ``workers`` is given: their
work is less than starting a pool and sending every rank's events back from it (docs/performance.md)."""


def plan_workers(files: Sequence[Path], budget: MemoryBudget, workers: int | None) -> tuple[int, MemoryBudget]:
    """How many files to load at once, and each one's share of the budget.

    As many as asked (default: one per file, at most the CPU count), but no more than the budget
    holds for the largest file (its size, or a gzip file's recorded uncompressed size), so large
    ranks load one after another with the whole budget and small ones in parallel. A small job
    (:data:`SMALL_JOB_TEXT_BYTES`) loads in this process, one file at a time, each file with the share
    it would have had in the pool (so the same files fit).
    """
    wanted = (os.cpu_count() or 1) if workers is None else workers
    wanted = max(1, min(wanted, len(files)))
    sizes = [text_size_hint(f) for f in files]
    largest = max(sizes, default=0)
    events = largest // stream_decode.TYPICAL_EVENT_BYTES
    need = budget.tree_bytes(stream_decode.streamed_load_bytes(events, 0, 0), events)
    fits = int(budget.limit_bytes // need) if need > 0 else wanted
    n_workers = max(1, min(wanted, fits))
    share = budget.share(n_workers)
    if workers is None and sum(sizes) < SMALL_JOB_TEXT_BYTES:
        return 1, share
    return n_workers, share


_T = TypeVar("_T")
_POLL_S = 0.1


def iter_per_file(files: Sequence[Path], work: Callable[..., _T], stop: threading.Event | None = None, *,
                  workers: int, collect_failures: bool = False) -> Iterator[tuple[int, _T | FileFailure]]:
    """Run ``work(file, order_index=i)`` for every file; yield ``(i, result)`` as each one finishes.

    The one per-file loop of the loader (:func:`.api.iter_load_and_analyse`). ``workers`` processes
    (:func:`plan_workers`; 1 runs in this process) share the files; ``work`` must be picklable (a
    module-level function or a ``partial`` of one). The loop returns early, without the remaining
    results, once ``stop`` is set (checked between files, and every :data:`_POLL_S` while files are
    decoded in parallel). When it ends early (``stop``, an error in one file, or the consumer closing
    the generator) the pending files are cancelled and the worker processes are terminated before
    control returns: none outlives the call. With ``collect_failures`` a file whose work raises yields
    a :class:`FileFailure` instead (the other files go on).
    """
    stop = stop or threading.Event()
    n = len(files)
    if workers <= 1 or n <= 1:
        for i, f in enumerate(files):
            if stop.is_set():
                return
            yield i, _outcome(partial(work, f, order_index=i), f, collect_failures)
        return
    from concurrent.futures import Future, ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(workers, n))
    finished = False
    try:
        # Each future reports itself on a queue when done: waiting costs O(1) per file, where
        # concurrent.futures.wait over the pending set installs a waiter on every pending future
        # each time (quadratic in the number of files).
        done_queue: queue.SimpleQueue[int] = queue.SimpleQueue()
        futures: list[Future] = []
        for i, f in enumerate(files):
            fut = pool.submit(work, f, order_index=i)
            fut.add_done_callback(lambda _fut, i=i: done_queue.put(i))
            futures.append(fut)
        pending = n
        while pending and not stop.is_set():
            try:
                batch = [done_queue.get(timeout=_POLL_S)]
            except queue.Empty:
                continue
            while not done_queue.empty():  # (this loop is the only consumer)
                batch.append(done_queue.get_nowait())
            pending -= len(batch)
            for i in sorted(batch):
                if stop.is_set():
                    return
                yield i, _outcome(futures[i].result, files[i], collect_failures)
        finished = pending == 0
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _abandon(pool)


def _outcome(result: Callable[[], _T], path: Path, collect_failures: bool) -> _T | FileFailure:
    """``result()``, or with ``collect_failures`` the :class:`FileFailure` of what it raised."""
    try:
        return result()
    except Exception as exc:  # noqa: BLE001 - reported per file when collecting
        if not collect_failures:
            raise
        return _failure(path, exc)


def _failure(path: Path, exc: Exception) -> FileFailure:
    if isinstance(exc, TraceFormatError):
        return FileFailure(Path(path), str(exc), isinstance(exc, NotATraceError))
    return FileFailure(Path(path), f"{path}: {type(exc).__name__}: {exc}", False)


def _abandon(pool: ProcessPoolExecutor, grace_s: float = 1.0) -> None:
    """Cancel what has not started, terminate the workers and reap them (Python 3.14's
    ``terminate_workers``, which 3.11 lacks): ``shutdown(wait=True)`` would wait for every file
    being decoded."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()
            proc.join()


def dedupe_ranks(ranks: list[RankTrace]) -> list[RankTrace]:
    """Give ranks that collide (two files without rank info) distinct numbers, in file order."""
    seen: set[int] = set()
    for r in ranks:
        if r.rank in seen:
            r.warnings.append(f"rank {r.rank} appears in several files; renumbered")
            r.rank = max(seen) + 1
            r.rank_source = "order"
        seen.add(r.rank)
    return ranks
