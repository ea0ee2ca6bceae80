"""Allocator settings for a process made to load traces: fewer fresh pages to fault in and zero.

A load writes each event's columns several times (scanned, joined, sorted into lanes), each time into
a new array of tens of megabytes. glibc maps every block over its mmap threshold afresh and unmaps it
on free, and numpy asks for transparent huge pages on big arrays: every new array is page-faulted and
zeroed by the kernel again (on a 10M-event trace 3.5 s of system time out of 13 s of CPU, in
``clear_page_erms`` under ``do_huge_pmd_anonymous_page``). :func:`tune_process_for_loads` keeps big
blocks on the heap, so a freed column's pages serve the next one; the load's peak is unchanged.

These settings are process-wide and kept for the process's life (the freed pages go back to the
system when it ends), so they are made only by processes that exist for the load: the loading helper
(``child_stream``'s initializer :data:`HELPER_INITIALIZER`) and the ``gpuperf`` console command
(``cli.entry``), never by the window's process nor by a library user's (a notebook's ``Trace``).
A forked decoding worker inherits them. Elsewhere than glibc they do nothing (:data:`_LIBC` None).
"""
from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4       # mallopt parameters (malloc.h)
_KEEP_FREED_BYTES = 2**31 - 1                 # mallopt takes an int: freed pages stay on the heap
HELPER_INITIALIZER = f"{__name__}:tune_process_for_loads"
"""The loading helper's initializer (``child_stream.iter_in_child(..., initializer=...)``)."""

_tuned = False


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
    import numpy as np

    core = getattr(np, "_core", None) or np.core
    return bool(core.multiarray._set_madvise_hugepage(enabled))


def tune_process_for_loads() -> bool:
    """Big blocks from the heap, freed ones kept there, numpy's huge-page advice off, for the rest
    of this process's life (glibc's ``GLIBC_TUNABLES=glibc.malloc.mmap_max=0:...`` and numpy's
    ``NUMPY_MADVISE_HUGEPAGE=0`` at start would do the same). Whether anything was set (False
    without glibc); a second call does nothing."""
    global _tuned
    if _LIBC is None or _tuned:
        return _tuned
    _LIBC.mallopt(_M_MMAP_MAX, 0)
    _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED_BYTES)
    _set_numpy_hugepages(False)
    _tuned = True
    return True
