"""Load trace files and folders of per-rank files into a :class:`.model.TraceModel`.

>>> model = load_trace(Path("rank0.json.gz"))            # doctest: +SKIP
>>> model = load_trace([Path("job/")], workers=4)         # a folder of per-rank files, in parallel
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from .build import build_rank
from .decode import DEFAULT_MAX_BYTES, GZIP_MAGIC, decode_trace, gc_paused, read_trace_bytes
from .model import RankTrace, TraceFormatError, TraceModel

TRACE_SUFFIXES = (".json", ".json.gz", ".gz", ".tmp", ".json.tmp")


def load_rank(path: Path | str, *, max_bytes: int = DEFAULT_MAX_BYTES, order_index: int = 0) -> RankTrace:
    """Load one trace file (plain or gzip JSON) into a :class:`RankTrace`.

    Raises
    ------
    TraceFormatError
        The file is not a trace (message names the file and the reason), or it is over
        ``max_bytes`` (decompressed).
    """
    path = Path(path)
    text, stream_truncated = read_trace_bytes(path, max_bytes)
    decoded = decode_trace(text, path, stream_truncated, compressed=_is_gzip(path))
    del text
    with gc_paused():
        return build_rank(decoded, path, order_index)


def _is_gzip(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def discover_files(paths: Iterable[Path | str]) -> list[Path]:
    """Expand folders into their trace files (sorted by name); keep files as given."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and _looks_like_trace(f))
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
    if name.endswith((".meta.json", ".key_averages.txt")) or name == "ceilings.json":
        return False
    return name.endswith(TRACE_SUFFIXES)


def load_trace(paths: Path | str | Sequence[Path | str], *, max_bytes: int = DEFAULT_MAX_BYTES,
               workers: int | None = None) -> TraceModel:
    """Load files and/or folders of per-rank files into one aligned :class:`TraceModel`.

    Parameters
    ----------
    paths : a file, a folder, or a list of them.
    max_bytes : per-file limit on the (decompressed) trace size.
    workers : processes to load ranks in parallel (default: one per file, at most the CPU count;
        1 loads in this process).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = discover_files(paths)
    by_index = dict(iter_per_file(files, partial(load_rank, max_bytes=max_bytes), workers=workers))
    return TraceModel.aligned(dedupe_ranks([by_index[i] for i in range(len(files))]))


_T = TypeVar("_T")
_POLL_S = 0.1
"""How often the parallel loop looks at ``stop`` while files are being decoded."""


def iter_per_file(files: Sequence[Path], work: Callable[..., _T], stop: threading.Event | None = None, *,
                  workers: int | None = None) -> Iterator[tuple[int, _T]]:
    """Run ``work(file, order_index=i)`` for every file; yield ``(i, result)`` as each one finishes.

    The one per-file loop of the loader (:func:`load_trace` and :func:`.api.iter_load_and_analyse`).
    ``workers`` processes (default: one per file, at most the CPU count; 1 runs in this process)
    share the files; ``work`` must be picklable (a module-level function or a ``partial`` of one).
    The loop returns early, without the remaining results, once ``stop`` is set (checked between
    files, and every 0.1 s while files are decoded in parallel). When it ends early (``stop``, an
    error in one file, or the consumer closing the generator) the pending files are cancelled and
    the worker processes are terminated before control returns: none outlives the call.
    """
    stop = stop or threading.Event()
    n = len(files)
    n_workers = min(n, os.cpu_count() or 1) if workers is None else max(1, workers)
    if n_workers <= 1 or n <= 1:
        for i, f in enumerate(files):
            if stop.is_set():
                return
            yield i, work(f, order_index=i)
        return
    pool = ProcessPoolExecutor(max_workers=min(n_workers, n))
    finished = False
    try:
        futures: dict[Future, int] = {pool.submit(work, f, order_index=i): i for i, f in enumerate(files)}
        pending = set(futures)
        while pending and not stop.is_set():
            done, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=futures.__getitem__):
                if stop.is_set():
                    return
                yield futures[fut], fut.result()
        finished = not pending
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _abandon(pool)


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
