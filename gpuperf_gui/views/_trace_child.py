"""The Trace tab's helper process: runs the engine and streams progress and the result back.

Started as ``python -c "...; stdio_main()"``: a fresh interpreter that imports only the core engine
(no Qt, and not the parent's ``__main__``, which multiprocessing's spawn/forkserver would re-run). It
reads the paths as JSON on stdin and writes length-prefixed pickles of ``(kind, payload)`` on its
stdout: ("progress", (fraction, message)) items, then ("result", TraceResult) or ("error", exc).
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO, Iterator

_HEADER = struct.Struct("<Q")


def iter_engine(paths: list[Path], stop: threading.Event) -> Iterator[tuple[str, Any]]:
    """("progress", (fraction, message)) items, then ("result", TraceResult)."""
    from gpuperf_gui.core.trace.api import Progress, iter_load_and_analyse

    for item in iter_load_and_analyse(paths, stop):
        if isinstance(item, Progress):
            yield "progress", (item.fraction, item.message)
        else:
            yield "result", item


def write_frame(out: BinaryIO, kind: str, payload: Any) -> None:
    data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def read_exact(read: Any, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = read(n - got)
        if not chunk:
            raise EOFError("the trace loader process ended unexpectedly")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(read: Any) -> tuple[str, Any]:
    (size,) = _HEADER.unpack(read_exact(read, _HEADER.size))
    return pickle.loads(read_exact(read, size))  # noqa: S301 - our own child process


def stdio_main() -> None:
    """Entry point of the helper process."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                      # stray prints go to stderr, not into the frame stream
    sys.stdout = sys.stderr
    paths = [Path(p) for p in json.loads(sys.stdin.read())]
    try:
        for kind, payload in iter_engine(paths, threading.Event()):
            write_frame(out, kind, payload)
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI as a message
        try:
            write_frame(out, "error", exc)
        except Exception:  # noqa: BLE001 - the exception does not pickle
            write_frame(out, "error", RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        out.close()
