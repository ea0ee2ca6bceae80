"""The one check before a file is opened for reading: a regular file (not a FIFO, a device, a folder)
of at most a size bound, opened non-blocking and judged by ``fstat`` on the open descriptor. Kept apart
from :mod:`.state_files` (tomllib, tempfile) so the trace loader pays only for this."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO

MAX_STATE_FILE_BYTES = 64 << 20
"""Largest state file read (saved ceilings, devices.toml, settings; run files have their own bound):
a FIFO, a device such as ``/dev/zero`` or a file this big is refused before a byte is read."""


class UnusableStateFile(OSError):
    """A state file that is not a regular file, or is over its size bound (``strerror`` says which)."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(errno.EINVAL, problem, str(path))


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def regular_file_problem(st: os.stat_result, max_bytes: int | None) -> str | None:
    """What makes a file of this ``stat`` unusable (not a regular file, over ``max_bytes``), or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"{kind_of(st.st_mode)}, not a regular file"
    if max_bytes is not None and st.st_size > max_bytes:
        return f"{st.st_size:,} bytes, over the {max_bytes:,} bytes a file of this kind may have"
    return None


def open_regular(path: Path | str, max_bytes: int | None = MAX_STATE_FILE_BYTES) -> IO[bytes]:
    """The one way a file we read is opened: non-blocking (a FIFO without a writer cannot block the
    open), then ``fstat`` on the open descriptor (no race with a file swapped in between) must say
    a regular file of at most ``max_bytes``. Raises ``FileNotFoundError`` and other ``OSError``s
    of the open as they are, :class:`UnusableStateFile` (an ``OSError``) for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        problem = regular_file_problem(os.fstat(fd), max_bytes)
        if problem is not None:
            raise UnusableStateFile(path, problem)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
