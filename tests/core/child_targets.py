"""Generators run by tests/core/test_child_stream.py in a helper interpreter."""

from __future__ import annotations

import os
import threading
import time
from typing import Iterator


def count(n: int, stop: threading.Event, *, scale: int = 1) -> Iterator[int]:
    for i in range(n):
        yield i * scale


def fail_after(n: int, stop: threading.Event) -> Iterator[int]:
    yield from range(n)
    raise ValueError("bad input in the child")


def until_stopped(stop: threading.Event) -> Iterator[str]:
    yield "started"
    while not stop.wait(0.01):
        pass
    yield "stopped cleanly"


def die(stop: threading.Event) -> Iterator[int]:
    yield 1
    os._exit(9)


def ignore_stop(stop: threading.Event) -> Iterator[str]:
    yield "started"
    time.sleep(60)
    yield "never"


def spawn_sleeper(stop: threading.Event) -> Iterator[int]:
    """Starts a grandchild (like the trace engine's process pool) and yields its pid."""
    import subprocess
    import sys

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield sleeper.pid
    time.sleep(60)


def arrays(n: int, stop: threading.Event) -> Iterator[object]:
    """A big item (out of band), a small one (through the pipe), and the child's pid."""
    import numpy as np

    rng = np.random.default_rng(7)
    yield {"f8": rng.random(n), "i4": np.arange(n, dtype=np.int32)[::-1].copy(),
           "strided": np.arange(2 * n, dtype=np.int64)[::2], "small": np.arange(5), "text": "kept"}
    yield os.getpid()


def mapped_twin(n: int, stop: threading.Event) -> Iterator[object]:
    """Yields a big array as SendMapped, then reports what it was resumed with."""
    import numpy as np

    from gpuperf_gui.core.child_stream import SendMapped

    twin = yield SendMapped({"a": np.arange(n, dtype=np.float64)})
    if twin is None:
        yield "no twin"
        return
    import mmap

    base = twin["a"]
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    yield ("twin", float(twin["a"].sum()), base is not None)


def twin_sent_again(n: int, stop: threading.Event) -> Iterator[object]:
    """Sends an array, then its mapped twin again beside a new array."""
    import numpy as np

    from gpuperf_gui.core.child_stream import SendMapped

    twin = yield SendMapped(np.arange(n, dtype=np.float64))
    yield {"again": twin, "new": np.full(n, 2.0)}


def stored_then_sent(n: int, stop: threading.Event) -> Iterator[object]:
    """Stores an array in the transfer file only, then sends its twin."""
    import numpy as np

    from gpuperf_gui.core.child_stream import SendMapped

    twin = yield SendMapped(np.arange(n, dtype=np.float64), relay=False)
    yield {"twin": twin, "was_mapped": twin is not None}


def whoami(stop: threading.Event) -> Iterator[tuple[int, bool]]:
    """This helper's pid, and whether it imported the preloaded module before its task came."""
    import os
    import sys

    yield os.getpid(), "child_targets_preloaded" in sys.modules


def heap_settings(stop: threading.Event) -> Iterator[tuple[bool, bool]]:
    """Whether this helper may set its heap up for loads, and numpy's huge-page advice inside a load."""
    from gpuperf_gui.core.trace.ingest import heap

    with heap.reused_heap():
        inside = heap._set_numpy_hugepages(False)
        heap._set_numpy_hugepages(inside)
    yield heap._enabled, inside


def killed(stop: threading.Event) -> Iterator[int]:
    """Dies as the kernel's out-of-memory killer would end it."""
    import signal

    yield 1
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("not picklable")


def unpicklable_error(stop: threading.Event) -> Iterator[int]:
    yield 1
    raise _Unpicklable("lost in transit")


def prints(stop: threading.Event) -> Iterator[str]:
    print("a stray print in the helper")
    yield "after the print"


def failing_initializer() -> None:
    raise RuntimeError("the initializer failed")


def big_arrays_forever(n: int, stop: threading.Event) -> Iterator[object]:
    """Big items without end, whatever ``stop`` says (a transfer cancelled midway)."""
    import numpy as np

    while True:
        yield os.getpid(), np.ones(n)
