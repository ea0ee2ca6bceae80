"""Run a core generator in a helper interpreter and relay what it yields.

Why: work that holds the GIL for long stretches (msgspec decoding a 50 MB trace, importing torch,
``torch.compile``) freezes the GUI thread even from a worker thread. In a separate process it cannot,
and a crash there (a CUDA fault, an out-of-memory kill) leaves the app running.

The helper is a ``multiprocessing`` process of the *spawn* context (a fresh interpreter: no copy of
the GUI's threads, Qt state or locks; it sees this process's ``sys.path``, environment and working
folder) with two one-way pipes (``multiprocessing.Pipe``):
parent → child: one message ``(target, args, kwargs, spill_dir)``; then closing that pipe asks the
child to stop (it also ends a child whose parent died).
child → parent: ``("item", x)`` per yielded item, then ``("done", None)`` or ``("error", exc)``.

Big items do not go through the pipe; this is the one layer of our own. Pickle protocol 5 hands the
child each large contiguous buffer (a numpy array's data) out of band; the child appends them to one
transfer file in ``spill_dir`` (a folder the parent made in /dev/shm where it has room, and removes
with the file at the end) and sends ``("spilled", (pickle, file name, spans, write_s))``. The parent
maps the file copy-on-write and unpickles the arrays as views of the mapping: no copy, no second set
of the arrays in the parent, pages read only where the GUI looks (a column never read costs no
memory). A generator with more to do after a big item yields ``SendMapped(item)``: it is resumed
with a twin of the item whose arrays are read-only views of the file, so it drops its own copy and
goes on with the twin (the pages serve both processes); an array of a twin sent again is referenced
in the file, not written twice. A child that cannot write the file (no room) sends the item through
the pipe.

A helper can be started ahead (:func:`prestart_helper`): it runs its initializer, imports the modules
it is told to and waits for its task, and the next :func:`iter_in_child` asked to (``ahead``) takes
it instead of starting one (the Trace tab keeps one ready: a helper's start and imports are ~0.35 s
of every trace opened). The initializer (``"package.module:function"``, called with no arguments)
is where process-wide settings for the work go (the trace loader's allocator settings,
``core/trace/ingest/heap.py``): they then hold in the helper only, never in the GUI's process.
The target is ``"package.module:function"`` called as ``function(*args, stop, **kwargs)`` with a
``threading.Event`` that is set when the parent asks to stop, so the generator ends cleanly (and
keeps what it measured); after ``grace_s`` the parent kills it and whatever it started (the helper
leads its own process group). A helper that dies (killed, a segfault, out of memory) is a
:class:`HelperProcessError` that says how it ended.
"""

from __future__ import annotations

import atexit
import importlib
import mmap
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:   # multiprocessing is imported when the first helper starts (the window's start-up)
    from multiprocessing.connection import Connection

SPILL_MIN_BYTES = 1 << 16
"""Buffers at least this large travel out of band (through the spill file); smaller ones in the pickle."""
_ALIGN = 64  # each spilled buffer starts at a multiple of this (numpy's SIMD loops like aligned data)
CAN_SPILL = os.name == "posix"  # elsewhere a mapped file cannot be unlinked: everything goes in band
SHM_MIN_FREE_BYTES = 4 << 30    # /dev/shm holds the transfer file when it has this much room
_POLL_S = 0.05   # how often the parent looks at its stop event while no item comes

_spare_lock = threading.Lock()
_spare: Helper | None = None     # the helper started ahead, waiting for its task
_live: set[Helper] = set()       # every helper started and not yet ended (ended at exit)


class SendMapped:
    """Yielded by a child's generator: send ``item`` and resume the generator with its mapped twin
    (``None`` when nothing was mapped, or when the generator runs in-process). With ``relay`` False
    the item only goes into the transfer file (a part of a later item, whose arrays it holds): the
    parent is not sent it and does not unpickle it; an in-process consumer skips it."""

    __slots__ = ("item", "relay")

    def __init__(self, item: Any, relay: bool = True) -> None:
        self.item, self.relay = item, relay


def release_freed_memory() -> None:
    """Give the memory of freed objects back to the system now (glibc keeps freed heap pages)."""
    import gc

    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


def spill_root() -> str:
    """Where transfer files go: /dev/shm when it has room (no disk writeback), else the temp folder."""
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= SHM_MIN_FREE_BYTES and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except (OSError, AttributeError):
        pass
    return tempfile.gettempdir()


class HelperProcessError(RuntimeError):
    """The helper process died without saying why (killed, segfault, out of memory)."""


def _address(raw: memoryview) -> int:
    """Where a buffer's bytes start in this process's memory."""
    import numpy as np

    return int(np.frombuffer(raw, dtype=np.uint8).__array_interface__["data"][0])


class SpillFile:
    """The child's side of one transfer file, appended to item after item.

    A buffer that is already in the file (an array of a twin the child mapped back, see
    :meth:`twin`) is referenced where it is, not written again: a model sent first and then sent
    again inside the finished result costs its bytes once."""

    def __init__(self, folder: Path, min_bytes: int = SPILL_MIN_BYTES) -> None:
        fd, path = tempfile.mkstemp(prefix="items-", suffix=".bin", dir=folder)
        self.file = os.fdopen(fd, "wb")
        self.path = Path(path)
        self.size = 0
        self.min_bytes = min_bytes
        self._mapped: list[tuple[int, int]] = []   # (address, length) of the child's maps of the file

    def close(self) -> None:
        self.file.close()

    def _in_file(self, raw: memoryview) -> int | None:
        """The file offset of a buffer that lies in one of the child's maps of the file, else None."""
        if not self._mapped:
            return None
        at = _address(raw)
        for base, length in self._mapped:
            if base <= at and at + raw.nbytes <= base + length:
                return at - base
        return None

    def dump(self, payload: Any) -> tuple[bytes, str | None, list[tuple[int, int]], float]:
        """Pickle ``payload``, its large buffers in the file: (pickle, file name or None when
        nothing was large enough, (offset, size) per out-of-band buffer, seconds writing)."""
        buffers: list[pickle.PickleBuffer] = []

        def out_of_band(buf: pickle.PickleBuffer) -> bool:
            if buf.raw().nbytes < self.min_bytes:
                return True          # in band
            buffers.append(buf)
            return False

        data = pickle.dumps(payload, protocol=5, buffer_callback=out_of_band)
        if not buffers:
            return data, None, [], 0.0
        started = time.perf_counter()
        spans: list[tuple[int, int]] = []
        size = self.size
        try:
            for buf in buffers:
                raw = buf.raw()
                offset = self._in_file(raw)
                if offset is None:
                    pad = -size % _ALIGN
                    if pad:
                        self.file.write(bytes(pad))
                    offset = size + pad
                    self.file.write(raw)
                    size = offset + raw.nbytes
                spans.append((offset, raw.nbytes))
            self.file.flush()
        except OSError:   # a full /dev/shm or disk: back to what the file was
            self.file.seek(self.size)
            self.file.truncate()
            raise
        finally:
            for buf in buffers:
                buf.release()
        self.size = size
        return data, self.path.name, spans, time.perf_counter() - started

    def twin(self, data: bytes, spans: list[tuple[int, int]]) -> Any:
        """The item just dumped, unpickled here with its buffers read from the file (read-only
        views: the child must not change what the GUI process sees)."""
        with open(self.path, "rb") as f:
            mapping = mmap.mmap(f.fileno(), self.size, access=mmap.ACCESS_READ)
        view = memoryview(mapping)
        self._mapped.append((_address(view), self.size))
        return pickle.loads(data, buffers=[view[o:o + n] for o, n in spans])  # noqa: S301


def dump_spilled(payload: Any, folder: Path, min_bytes: int = SPILL_MIN_BYTES) -> tuple[bytes, str | None, list[tuple[int, int]], float]:
    """Pickle ``payload`` with its large buffers written to a new file in ``folder`` (see
    :class:`SpillFile`; no file is left when nothing was large enough)."""
    spill = SpillFile(folder, min_bytes)
    try:
        out = spill.dump(payload)
    except OSError:
        spill.close()
        spill.path.unlink(missing_ok=True)
        raise
    spill.close()
    if out[1] is None:
        spill.path.unlink(missing_ok=True)
    return out


def load_spilled(data: bytes, name: str | None, spans: list[tuple[int, int]], folder: Path,
                 unlink: bool = True) -> Any:
    """Unpickle what :func:`dump_spilled` wrote: the out-of-band buffers become views of a
    copy-on-write mapping of the file, which is unlinked at once (unless not ``unlink``)."""
    if name is None:
        return pickle.loads(data)  # noqa: S301 - our own child process
    path = Path(folder) / name
    try:
        with open(path, "rb") as f:
            mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    finally:
        if unlink:
            path.unlink(missing_ok=True)
    view = memoryview(mapping)
    return pickle.loads(data, buffers=[view[o:o + n] for o, n in spans])  # noqa: S301


def _resolve(target: str) -> Callable[..., Any]:
    module_name, _, function_name = target.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def _started_in(initializer: str | None) -> tuple:
    """What a helper's start depends on: one started before any of it changed would not see it."""
    return dict(os.environ), os.getcwd(), tuple(sys.path), initializer


class Helper:
    """One helper process and this side's ends of its two pipes."""

    def __init__(self, preload: tuple[str, ...] = (), initializer: str | None = None) -> None:
        import multiprocessing

        _register_exit_hook()
        context = multiprocessing.get_context("spawn")
        task_end, self.tasks = context.Pipe(duplex=False)
        self.items, item_end = context.Pipe(duplex=False)
        self.started_in = _started_in(initializer)
        # not a daemon: a daemonic process may not start workers (the trace engine's process pool)
        self.process = context.Process(target=helper_main, name="gpuperf-helper", daemon=False,
                                       args=(task_end, item_end, tuple(preload), initializer))
        self.process.start()
        self.pid = int(self.process.pid or 0)
        self.exitcode: int | None = None   # kept once known: the process object is closed at the end
        with _live_lock:
            _live.add(self)
        task_end.close()   # the child's ends: `items` reads EOF once the child is gone
        item_end.close()

    def poll(self) -> int | None:
        """Its exit code, None while it runs."""
        if self.exitcode is None:
            self.exitcode = self.process.exitcode
        return self.exitcode

    def wait(self, timeout_s: float | None = 5.0) -> int | None:
        if self.exitcode is None:
            self.process.join(timeout_s)
        return self.poll()

    def ask_to_stop(self) -> None:
        """Close the task pipe: the child's stop event is set (see :func:`_watch_parent`)."""
        _close(self.tasks)

    def how_it_ended(self) -> str:
        code = self.wait()
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            why = ": out of memory? (the kernel's OOM killer sends SIGKILL)" if -code == signal.SIGKILL else ""
            return f"the helper process was killed by {name} (exit code {code}){why}"
        return f"the helper process ended unexpectedly (exit code {code})"

    def kill(self) -> None:
        """Kill the helper and whatever it started (its process group), if still running."""
        if os.name == "posix":
            try:
                os.killpg(self.pid, signal.SIGKILL)   # the group outlives a helper that already exited
                return
            except (ProcessLookupError, PermissionError):
                pass                                  # not yet its own group: kill the process
        if self.poll() is None:
            self.process.kill()

    def end(self, grace_s: float = 0.0) -> None:
        """Close the pipes, give it ``grace_s`` to exit, then kill it and its group; reap it."""
        _close(self.tasks)
        _close(self.items)
        if grace_s:
            self.wait(grace_s)
        self.kill()
        self.wait()
        with _live_lock:
            _live.discard(self)
        if self.exitcode is not None:
            self.process.close()   # its sentinel pipe now, not when the object is collected


def _close(conn: Connection) -> None:
    try:
        conn.close()
    except OSError:
        pass


_live_lock = threading.Lock()


def _end_all_helpers() -> None:
    """At exit: no helper outlives the app (multiprocessing would otherwise wait for each to end)."""
    with _live_lock:
        helpers = list(_live)
    for helper in helpers:
        helper.end()


_exit_hook_registered = False


def _register_exit_hook() -> None:
    """Register :func:`_end_all_helpers` after multiprocessing's own exit hook, so it runs first
    (exit hooks run last registered first): that one waits for every child process to end, and a
    helper started ahead waits for a task that will never come."""
    global _exit_hook_registered
    import multiprocessing.util  # noqa: F401 - registers its exit hook on import

    with _live_lock:
        if not _exit_hook_registered:
            atexit.register(_end_all_helpers)
            _exit_hook_registered = True


def prestart_helper(preload: tuple[str, ...] = (), initializer: str | None = None) -> None:
    """Start a helper ahead that runs ``initializer``, imports ``preload`` and waits: the next
    :func:`iter_in_child` with ``ahead`` and the same initializer takes it. One at a time; a helper
    already waiting is kept."""
    global _spare
    with _spare_lock:
        if _spare is not None and _spare.poll() is None:
            return
        _spare = Helper(preload, initializer)


def discard_spare_helper() -> None:
    """End the helper started ahead, if one waits (it exits when its task pipe closes)."""
    global _spare
    with _spare_lock:
        helper, _spare = _spare, None
    if helper is not None:
        helper.end(grace_s=2.0)


def _take_spare(initializer: str | None) -> Helper | None:
    """The helper started ahead, if it still waits, was started with ``initializer`` and in the
    environment, folder and ``sys.path`` a helper would start in now (else None)."""
    global _spare
    with _spare_lock:
        helper, _spare = _spare, None
    if helper is None:
        return None
    if helper.poll() is None and helper.started_in == _started_in(initializer):
        return helper
    helper.end()
    return None


def iter_in_child(target: str, args: tuple = (), kwargs: dict | None = None,
                  stop: threading.Event | None = None, grace_s: float = 10.0,
                  nice: int = 0, stats: dict[str, float] | None = None, ahead: bool = False,
                  initializer: str | None = None) -> Iterator[Any]:
    """Yield what ``target(*args, stop, **kwargs)`` yields, computed in a helper interpreter.

    When ``stop`` is set the child is asked to stop and its remaining items are still relayed; if it
    has not finished ``grace_s`` later it is killed. Errors raised in the child are re-raised here;
    a child that dies is a :class:`HelperProcessError`. ``nice`` lowers the child's CPU priority
    (POSIX) so the GUI wins a contended core. ``stats``, when given, sums over the items
    ``transfer_s`` (the child's pickling and spill-file writing plus this side's reading and
    unpickling), ``spilled_bytes`` (what went out of band) and ``file_bytes`` (the transfer file's
    size: less than spilled_bytes when a twin's arrays were sent again). ``ahead``: run in the helper
    :func:`prestart_helper` started, if one waits (the work it was started for). ``initializer``:
    ``"module:function"`` the helper calls before the task (process-wide settings for the work).
    """
    stop = stop or threading.Event()
    helper = (_take_spare(initializer) if ahead else None) or Helper(initializer=initializer)
    if nice and hasattr(os, "setpriority"):
        try:
            os.setpriority(os.PRIO_PROCESS, helper.pid, nice)
        except OSError:
            pass
    stop_sent_at: float | None = None
    spill_dir: Path | None = None
    try:
        if CAN_SPILL:   # after the start, inside the try: a failed start or mkdtemp leaves nothing
            spill_dir = Path(tempfile.mkdtemp(prefix="gpuperf-transfer-", dir=spill_root()))
        try:
            helper.tasks.send((target, tuple(args), dict(kwargs or {}), None if spill_dir is None else str(spill_dir)))
        except OSError:   # it died before its task (a helper started ahead, killed while it waited)
            raise HelperProcessError(helper.how_it_ended()) from None
        while True:
            if stop.is_set() and stop_sent_at is None:
                stop_sent_at = time.monotonic()
                helper.ask_to_stop()
            if stop_sent_at is not None and time.monotonic() - stop_sent_at > grace_s:
                return
            if not helper.items.poll(_POLL_S):
                continue
            started = time.perf_counter()
            try:
                kind, payload = helper.items.recv()
            except (EOFError, OSError):
                raise HelperProcessError(helper.how_it_ended()) from None
            if kind == "spilled":
                data, name, spans, write_s = payload
                payload = load_spilled(data, name, spans, spill_dir, unlink=False)   # goes with the folder
                kind = "item"
                if stats is not None:
                    stats["transfer_s"] = stats.get("transfer_s", 0.0) + write_s + time.perf_counter() - started
                    stats["spilled_bytes"] = stats.get("spilled_bytes", 0.0) + sum(n for _, n in spans)
                    if name is not None:
                        stats["file_bytes"] = float((spill_dir / name).stat().st_size)
            if kind == "stored":   # an item put in the transfer file only
                if stats is not None:
                    stats["transfer_s"] = stats.get("transfer_s", 0.0) + payload
                continue
            if kind == "item":
                yield payload
            elif kind == "error":
                raise payload
            else:
                return
    finally:
        helper.end()
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)   # a file the child wrote but we never read


# ----------------------------------------------------------------------------- the helper's side

def _send_item(out: Connection, item: Any, spill: SpillFile | None, want_twin: bool = False,
               relay: bool = True) -> Any:
    """Send one item; with ``want_twin``, return its twin mapped from the transfer file (or None).
    Not ``relay``: only store it in the file (nothing when there is no file)."""
    if spill is None:
        if relay:
            out.send(("item", item))
        return None
    started = time.perf_counter()
    try:
        data, name, spans, _ = spill.dump(item)   # name None: all of it in ``data``
    except OSError:   # no room for the file: through the pipe
        if relay:
            out.send(("item", item))
        return None
    twin = spill.twin(data, spans) if want_twin and name else None
    if relay:
        out.send(("spilled", (data, name, spans, time.perf_counter() - started)))
    else:
        out.send(("stored", time.perf_counter() - started))
    return twin


def _watch_parent(tasks: Connection, stop: threading.Event) -> None:
    """Set ``stop`` when the task pipe reads EOF: the parent closed it (stop) or died."""
    try:
        while True:
            tasks.recv()
    except (EOFError, OSError):
        pass
    stop.set()


def _open_spill(spill_dir: str | None) -> SpillFile | None:
    """The transfer file in the parent's folder; None (everything through the pipe) when there is
    no folder or the file cannot be made."""
    if spill_dir is None:
        return None
    try:
        return SpillFile(Path(spill_dir))
    except OSError:
        return None


def _preload(modules: tuple[str, ...]) -> None:
    """Import what a helper started ahead was told to, while it waits (a failure is the task's to
    report when it imports the module itself)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


def _run(target: str, args: tuple, kwargs: dict, spill: SpillFile | None, out: Connection,
         stop: threading.Event) -> None:
    items = iter(_resolve(target)(*args, stop, **kwargs))
    send = getattr(items, "send", None)   # a generator is resumed with the twin it asked for
    reply = None
    while True:
        try:
            item = send(reply) if send is not None else next(items)
        except StopIteration:
            break
        mapped = isinstance(item, SendMapped)
        reply = _send_item(out, item.item if mapped else item, spill, want_twin=mapped,
                           relay=item.relay if mapped else True)
        del item


def helper_main(tasks: Connection, out: Connection, preload: tuple[str, ...], initializer: str | None) -> None:
    """The helper process (see the module docstring)."""
    if hasattr(os, "setsid"):
        os.setsid()   # its own process group: a kill reaches the workers it starts
    os.dup2(2, 1)     # stray prints go to stderr: the parent's stdout may be a CLI's JSON
    sys.stdout = sys.stderr
    init_error: BaseException | None = None
    try:
        if initializer:
            _resolve(initializer)()
    except BaseException as exc:  # noqa: BLE001 - reported as the task's failure
        init_error = exc
    _preload(preload)
    try:
        target, args, kwargs, spill_dir = tasks.recv()
    except (EOFError, OSError):
        return   # discarded before it was given a task
    stop = threading.Event()
    threading.Thread(target=_watch_parent, args=(tasks, stop), daemon=True).start()
    try:
        if init_error is not None:
            raise init_error
        _run(target, args, kwargs, _open_spill(spill_dir), out, stop)
        out.send(("done", None))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent stopped listening (cancel): nothing to report
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            out.send(("error", exc))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # noqa: BLE001 - the exception does not pickle
            out.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
