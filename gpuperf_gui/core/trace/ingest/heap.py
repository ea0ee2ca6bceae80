"""Big loads on a reused heap: fewer fresh pages to fault in and zero.

A load writes each event's columns several times (scanned, joined, sorted into lanes), each time into
a new array of tens of megabytes. glibc maps every block over its mmap threshold afresh and unmaps it
on free, and numpy asks for transparent huge pages on big arrays, so the kernel faults in and zeroes
every new array again. :func:`reused_heap` keeps big blocks on the heap while a load runs, so a freed
column's pages serve the next one, and gives the free pages back when the load ends (``malloc_trim``):
the load's peak is unchanged, and the process holds less after it than before.

These are process-wide settings, so only a process that exists for loads makes them: it calls
:func:`enable_reused_heap` first (the loading helper, through :data:`HELPER_INITIALIZER`, and the
``gpuperf`` console command, ``cli.entry``). Elsewhere (the window's process, a notebook's ``Trace``,
a libc that is not glibc) :func:`reused_heap` changes nothing. Not for the whole life of the process
(``GLIBC_TUNABLES=glibc.malloc.mmap_max=0``): the analysis after a load would keep every freed block.
"""
from __future__ import annotations

import ctypes
import os
import threading
from contextlib import contextmanager
from typing import Iterator


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4   # mallopt parameters (malloc.h)
_KEEP_FREED_BYTES = 2**31 - 1                 # mallopt takes an int: no trim while a load runs
# After a load: glibc's own settings once it has seen big blocks freed (its dynamic mmap threshold
# rises to at most 32 MiB, the trim threshold to twice that). Any mallopt call turns that
# adjustment off for good, so they are set as it would have left them: an analysis's temporaries
# up to 32 MiB then come from the heap again, not from fresh mappings.
_AFTER_MMAP_THRESHOLD_BYTES = 32 * 2**20
_AFTER_TRIM_THRESHOLD_BYTES = 64 * 2**20
_DEFAULT_MMAP_MAX = 65536

_lock = threading.Lock()
_depth = 0
_numpy_hugepages_before = True
_enabled = False
HELPER_INITIALIZER = f"{__name__}:enable_reused_heap"
"""The loading helper's initializer (``child_stream.iter_in_child(..., initializer=...)``)."""


def _glibc() -> ctypes.CDLL | None:
    try:   # glibc says so itself (platform.libc_ver() would read the whole executable)
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return None
        return ctypes.CDLL("libc.so.6")
    except (AttributeError, ValueError, OSError):   # no confstr (Windows), not glibc (musl), no libc.so.6
        return None


_LIBC = _glibc()


def _set_numpy_hugepages(enabled: bool) -> bool:
    """numpy's madvise(MADV_HUGEPAGE) of big arrays on or off; the setting before."""
    import numpy as np   # here: `gpuperf mfu` enables the heap at start and may never load a trace

    core = getattr(np, "_core", None) or np.core
    return bool(core.multiarray._set_madvise_hugepage(enabled))


def enable_reused_heap() -> None:
    """Let :func:`reused_heap` set this process's heap up (a process made for loads; not without glibc)."""
    global _enabled
    _enabled = _LIBC is not None


@contextmanager
def reused_heap() -> Iterator[None]:
    """Keep freed big blocks on the heap while the block runs; give them back at its end. Loads may
    nest or overlap on threads: the first to enter sets the heap up, the last to leave sets glibc's
    thresholds as its own adjustment would have and trims."""
    global _depth, _numpy_hugepages_before
    if _LIBC is None or not _enabled:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            _LIBC.mallopt(_M_MMAP_MAX, 0)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED_BYTES)
            _numpy_hugepages_before = _set_numpy_hugepages(False)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _LIBC.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
                _LIBC.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP_THRESHOLD_BYTES)
                _LIBC.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM_THRESHOLD_BYTES)
                _set_numpy_hugepages(_numpy_hugepages_before)
                _LIBC.malloc_trim(0)
