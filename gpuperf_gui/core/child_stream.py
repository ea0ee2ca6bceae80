"""Run a core generator in a helper interpreter and relay what it yields.

Why: work that holds the GIL for long stretches (msgspec decoding a 50 MB trace, importing torch,
``torch.compile``) freezes the GUI thread even from a worker thread. In a separate process it cannot,
and a crash there (a CUDA fault, an out-of-memory kill) leaves the app running.

Protocol over the child's stdin/stdout, length-prefixed pickles:
parent → child: one frame ``(target, args, kwargs, spill_dir)``; then closing stdin asks the child to stop.
child → parent: ``("item", x)`` per yielded item, then ``("done", None)`` or ``("error", exc)``.

Big items do not go through the pipe. Pickle protocol 5 hands the child each large contiguous buffer
(a numpy array's data) out of band; the child appends them to one transfer file in ``spill_dir`` (a
folder the parent made in /dev/shm where it has room, and removes with the file at the end) and sends
``("spilled", (pickle, file name, spans, write_s))``. The parent maps the file copy-on-write and
unpickles the arrays as views of the mapping: no copy, no second set of the arrays in the parent,
pages read only where the GUI looks (a column never read costs no memory). A generator with more to
do after a big item yields ``SendMapped(item)``: it is resumed with a twin of the item whose arrays
are read-only views of the file, so it drops its own copy and goes on with the twin (the pages serve
both processes); an array of a twin sent again is referenced in the file, not written twice. A child
that cannot write the file (no room) sends the item through the pipe.
A helper can be started ahead (:func:`prestart_helper`): it imports the modules it is told to and
waits for its task, and the next :func:`iter_in_child` asked to (``ahead``) takes it instead of
starting one (the Trace tab keeps one ready: a helper's start and imports are ~0.35 s of every trace
opened).
The target is ``"package.module:function"`` called as ``function(*args, stop, **kwargs)`` with a
``threading.Event`` that is set when the parent asks to stop, so the generator ends cleanly (and
keeps what it measured); after ``grace_s`` the parent kills it.
"""

from __future__ import annotations

import importlib
import mmap
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

_HEADER = struct.Struct("<Q")
CHILD_FLAG = "--gpuperf-child"  # frozen builds: the app's own executable runs child_main()
SPILL_MIN_BYTES = 1 << 16
"""Buffers at least this large travel out of band (through the spill file); smaller ones in the pickle."""
_ALIGN = 64  # each spilled buffer starts at a multiple of this (numpy's SIMD loops like aligned data)
CAN_SPILL = os.name == "posix"  # elsewhere a mapped file cannot be unlinked: everything goes in band
SHM_MIN_FREE_BYTES = 4 << 30    # /dev/shm holds the transfer file when it has this much room
PRELOAD_ENV = "GPUPERF_HELPER_PRELOAD"
"""Modules (comma-separated) a helper started ahead imports while it waits for its task."""

_spare_lock = threading.Lock()
_spare: subprocess.Popen | None = None
_spare_started_in: tuple[dict[str, str], str] | None = None   # its environment and working folder


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


def write_frame(out: BinaryIO, payload: Any) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(stream: BinaryIO) -> Any:
    (size,) = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    return pickle.loads(_read_exact(stream, size))  # noqa: S301 - our own child process


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


def _resolve(target: str) -> Callable[..., Iterator[Any]]:
    module_name, _, function_name = target.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def _start_helper(env: dict[str, str]) -> subprocess.Popen:
    # Its own process group: the helper may start workers (the trace engine's process pool),
    # and a kill must reach them too.
    return subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,  # noqa: S603
                            env=env, start_new_session=os.name == "posix")


def prestart_helper(preload: tuple[str, ...] = ()) -> None:
    """Start a helper ahead that imports ``preload`` and waits: the next :func:`iter_in_child` takes
    it. One at a time; a helper already waiting is kept."""
    global _spare, _spare_started_in
    with _spare_lock:
        if _spare is not None and _spare.poll() is None:
            return
        env = _child_env()
        _spare = _start_helper({**env, PRELOAD_ENV: ",".join(preload)})
        _spare_started_in = (env, os.getcwd())


def discard_spare_helper() -> None:
    """End the helper started ahead, if one waits (it exits when its stdin closes)."""
    proc = _take_spare()
    if proc is not None:
        _close_pipes(proc)
        if _wait(proc, 2.0) is None:
            _kill_group(proc)
            _wait(proc)


def _take_spare() -> subprocess.Popen | None:
    """The helper started ahead, if it still waits in the environment and folder a helper would
    start in now (else None: one started before a setting changed would not see it)."""
    global _spare
    with _spare_lock:
        proc, _spare = _spare, None
    if proc is None:
        return None
    if proc.poll() is None and _spare_started_in == (_child_env(), os.getcwd()):
        return proc
    _close_pipes(proc)
    if proc.poll() is None:
        _kill_group(proc)
    _wait(proc)
    return None


def _close_pipes(proc: subprocess.Popen) -> None:
    for pipe in (proc.stdin, proc.stdout):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass


def child_command() -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, CHILD_FLAG]
    return [sys.executable, "-c", "from gpuperf_gui.core.child_stream import child_main; child_main()"]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the package's parent, for source checkouts
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _readable(fd: int, timeout_s: float) -> bool:
    if os.name == "nt":  # select() takes no pipes there: block on the read instead
        return True
    return bool(select.select([fd], [], [], timeout_s)[0])


def iter_in_child(target: str, args: tuple = (), kwargs: dict | None = None,
                  stop: threading.Event | None = None, grace_s: float = 10.0,
                  nice: int = 0, stats: dict[str, float] | None = None, ahead: bool = False) -> Iterator[Any]:
    """Yield what ``target(*args, stop, **kwargs)`` yields, computed in a helper interpreter.

    When ``stop`` is set the child is asked to stop and its remaining items are still relayed; if it
    has not finished ``grace_s`` later it is killed. Errors raised in the child are re-raised here.
    ``nice`` lowers the child's CPU priority (POSIX) so the GUI wins a contended core. ``stats``, when
    given, sums over the items ``transfer_s`` (the child's pickling and spill-file writing plus this
    side's reading and unpickling), ``spilled_bytes`` (what went out of band) and ``file_bytes`` (the
    transfer file's size: less than spilled_bytes when a twin's arrays were sent again). ``ahead``:
    run in the helper :func:`prestart_helper` started, if one waits (the work it was started for).
    """
    stop = stop or threading.Event()
    spill_dir = Path(tempfile.mkdtemp(prefix="gpuperf-transfer-", dir=spill_root())) if CAN_SPILL else None
    proc = (_take_spare() if ahead else None) or _start_helper(_child_env())
    if nice and hasattr(os, "setpriority"):
        try:
            os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
        except OSError:
            pass
    assert proc.stdin is not None and proc.stdout is not None
    stop_sent_at: float | None = None
    try:
        write_frame(proc.stdin, (target, tuple(args), dict(kwargs or {}), None if spill_dir is None else str(spill_dir)))
        fd = proc.stdout.fileno()
        while True:
            if stop.is_set() and stop_sent_at is None:
                stop_sent_at = time.monotonic()
                proc.stdin.close()  # EOF on the child's stdin: its stop event is set
            if stop_sent_at is not None and time.monotonic() - stop_sent_at > grace_s:
                return
            if not _readable(fd, 0.05):
                continue
            started = time.perf_counter()
            try:
                kind, payload = read_frame(proc.stdout)
            except EOFError:
                code = _wait(proc)
                raise HelperProcessError(f"the helper process ended unexpectedly (exit code {code})") from None
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
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        _kill_group(proc)
        _wait(proc)
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)   # a file the child wrote but we never read


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the helper and whatever it started (its process group), if still running."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group outlives a helper that already exited
        except (ProcessLookupError, PermissionError):
            pass
    elif proc.poll() is None:
        proc.kill()


def _wait(proc: subprocess.Popen, timeout_s: float = 5.0) -> int | None:
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        return None


def _send_item(out: BinaryIO, item: Any, spill: SpillFile | None, want_twin: bool = False,
               relay: bool = True) -> Any:
    """Send one item; with ``want_twin``, return its twin mapped from the transfer file (or None).
    Not ``relay``: only store it in the file (nothing when there is no file)."""
    if spill is None:
        if relay:
            write_frame(out, ("item", item))
        return None
    started = time.perf_counter()
    try:
        data, name, spans, _ = spill.dump(item)   # name None: all of it in ``data``
    except OSError:   # no room for the file: through the pipe
        if relay:
            write_frame(out, ("item", item))
        return None
    twin = spill.twin(data, spans) if want_twin and name else None
    if relay:
        write_frame(out, ("spilled", (data, name, spans, time.perf_counter() - started)))
    else:
        write_frame(out, ("stored", time.perf_counter() - started))
    return twin


def _watch_stdin(stdin: BinaryIO, stop: threading.Event) -> None:
    try:
        while stdin.read(1):
            pass
    except (OSError, ValueError):
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


def _preload(modules: str) -> None:
    """Import what a helper started ahead was told to, while it waits (a failure is the task's to
    report when it imports the module itself)."""
    for name in filter(None, modules.split(",")):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


def child_main() -> None:
    """Entry point of the helper process (see the module docstring)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr, not into the frame stream
    sys.stdout = sys.stderr
    # Our own handle on the pipe; fd 0 and sys.stdin become /dev/null. A forked worker (the trace
    # engine's process pool) closes sys.stdin at start-up and would deadlock on the lock the
    # watcher thread holds while it blocks in read().
    stdin = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the process
    stop = threading.Event()
    _preload(os.environ.pop(PRELOAD_ENV, ""))
    try:
        target, args, kwargs, spill_dir = read_frame(stdin)
        spill = _open_spill(spill_dir)
        threading.Thread(target=_watch_stdin, args=(stdin, stop), daemon=True).start()
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
        write_frame(out, ("done", None))
    except BrokenPipeError:
        pass  # the parent stopped listening (cancel): nothing to report
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            write_frame(out, ("error", exc))
        except BrokenPipeError:
            pass
        except Exception:  # noqa: BLE001 - the exception does not pickle
            write_frame(out, ("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        try:
            out.close()
        except BrokenPipeError:
            pass
