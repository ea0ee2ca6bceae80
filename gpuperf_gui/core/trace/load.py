"""Load trace files and folders of per-rank files into a :class:`.model.TraceModel`.

>>> model = load_trace(Path("rank0.json.gz"))            # doctest: +SKIP
>>> model = load_trace([Path("job/")], workers=4)         # a folder of per-rank files, in parallel
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Sequence

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
    n_workers = min(len(files), os.cpu_count() or 1) if workers is None else max(1, workers)
    if len(files) <= 1 or n_workers <= 1:
        ranks = [load_rank(f, max_bytes=max_bytes, order_index=i) for i, f in enumerate(files)]
    else:
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            futures = [pool.submit(load_rank, f, max_bytes=max_bytes, order_index=i)
                       for i, f in enumerate(files)]
            ranks = [fut.result() for fut in futures]
    return TraceModel.aligned(dedupe_ranks(ranks))


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
