"""Streamed decode: trace bytes -> event columns, a chunk of events at a time.

The decompressed text (:class:`.source.TraceStream`) is cut after the last complete event that has
arrived: the last ``}`` ``,`` ``{`` of the buffer (whitespace between), found without scanning every
byte. That run is decoded into :class:`.build.EventColumns` and its text dropped; only the text
outside the events array is kept, and decoded at the end. Peak memory is the columns plus one chunk,
where the whole-file path (:func:`.decode.decode_trace`) holds the whole text and every event struct.

Runs go to the C scanner where the extension is built, on threads (the scan releases the GIL). A run
it hands back (a false cut inside a string or a nested value, the array's end, anything it does not
read exactly as msgspec) turns the splitter careful: from that run on, msgspec decodes in this thread,
as it does every run without the scanner (it holds the GIL: a thread beside it would wait). Anything
not clean (a syntax error, a field of the wrong type, NaN literals, a file cut short, a second
document) stops the streamed decode, and the whole-file path repairs, skips, salvages and reports.
"""
from __future__ import annotations

import os
import re
from collections import deque
from pathlib import Path
from functools import partial
from typing import Callable, Iterator

import msgspec

from .scanner import scan
from . import source
from ...units import format_bytes
from .budget import MemoryBudget
from .build import EventColumns, add_events, build_rank_columns
from .decode import _EVENTS_DECODER, _FILE_DECODER, TraceFile, _content_start, _error_byte, gc_paused
from ..model.trace_model import RankTrace
from .scanner.scan import ScannedRun, scan_run
from .source import TraceStream, text_size_hint

MIN_DECODE_BYTES = 4 << 20
"""Events are decoded once this much undecoded text has arrived (and at the end)."""
MAX_CUT_ATTEMPTS = 16
"""Cuts tried per decode before the file goes to the whole-file path (a false one costs a decode)."""
MAX_HEAD_BYTES = 64 << 20
"""Text before the events array kept while looking for it; beyond it the whole-file path decodes."""
STRUCT_BUDGET_BYTES = 32 << 20
"""Decoded structs alive at once: the next decode waits for less text when events are small."""
STREAM_EVENT_COST_BYTES = 190
"""Memory per event of a streamed load, its analysis and op table (columns, lanes, sort keys);
tests/core/test_trace_load.py checks the bound."""
STRUCT_COST_BYTES = 300
"""Memory per decoded event struct (with its args struct and strings) while its run is in flight."""
MIN_EVENT_BYTES = 100
"""Fewer bytes of JSON than any profiler's complete event takes: a file's size over this is the most
events it can hold, the room its columns reserve."""
SCANNED_EVENT_BYTES = 150
"""Memory per event of a run the C scanner read, until its columns are appended (13 columns of 4-8
bytes and the raw args' offsets)."""
TYPICAL_EVENT_BYTES = 250
"""JSON bytes per event of a typical Kineto trace: for planning only."""
RUN_BYTES = 8 << 20
"""Text per run (a chunk): more threads than a file has runs would idle."""
SCAN_THREADS_MIN_BYTES = 16 << 20
"""Files with less JSON text than this are scanned on one thread."""
SCAN_MAX_THREADS = 8
RUN_SLACK_BYTES = 1 << 20
"""Room in a read buffer beyond a chunk for the event begun in the chunk before."""


def streamed_load_bytes(events: int, text_bytes: int, structs: int) -> float:
    """Memory (bytes) a streamed load holds with ``events`` events decoded into columns,
    ``text_bytes`` of text not decoded yet and ``structs`` event structs alive: the cost model
    :class:`.budget.MemoryBudget` checks on this path."""
    return STREAM_EVENT_COST_BYTES * events + text_bytes + STRUCT_COST_BYTES * structs


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENTS_KEY_TEXT = b'"traceEvents"'
_WHITESPACE = b" \t\r\n"
_CHUNK_DECODER = _EVENTS_DECODER   # the whole-file decoder's event types


class NotStreamable(Exception):
    """The file needs the whole-file decoder (repairs, skips, salvage, ...): not an error."""


def load_rank_streamed(path: Path, *, budget: MemoryBudget, max_bytes: int | None,
                       order_index: int = 0, threads: int | None = None) -> RankTrace | None:
    """Load a clean trace file chunk by chunk; None when it needs the whole-file path.

    ``threads``: threads scanning runs of events at once with the C scanner (None: by the file's
    size and the CPU count, :func:`scan_threads`; 1: this thread). Raises what the whole-file path
    raises while reading (not a regular file, over ``max_bytes``, not JSON at its first byte),
    :class:`.budget.MemoryBudgetError` when the streamed cost model says the load does not fit, and
    what building raises (no usable event).
    """
    try:
        with gc_paused():
            columns, meta, n_entries = _stream_columns(path, budget, max_bytes, threads)
            return build_rank_columns(columns, meta, path, order_index, n_entries=n_entries)
    except NotStreamable:
        return None


def _usable_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _idle_cpus() -> float:
    """CPUs this process may use less the other work running now (Linux: the runnable tasks of
    ``/proc/loadavg`` besides this one; elsewhere the last minute's load average)."""
    cpus = _usable_cpus()
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            running = int(fh.read().split()[3].split("/")[0]) - 1
        return float(cpus - max(running, 0))
    except (OSError, ValueError, IndexError):
        pass
    try:
        return cpus - os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return float(cpus)


def _stream_columns(path: Path, budget: MemoryBudget, max_bytes: int | None, threads: int | None
                   ) -> tuple[EventColumns, TraceFile, int]:
    """``(columns, metadata, entries of the event list)`` of a clean trace file, read in chunks;
    raises :class:`NotStreamable` when the file is not clean JSON of a trace's usual shape."""
    with TraceStream(path, max_bytes) as stream:
        text_bytes_hint = text_size_hint(path)  # the columns reserve room for the most events it holds
        threads = scan_threads(text_bytes_hint, threads) if scan.ENABLED else None
        splitter = _Splitter(threads, text_bytes_hint // MIN_EVENT_BYTES)
        try:
            for chunk in stream:
                splitter.feed(chunk)
                _check_budget(budget, splitter, stream)
                if splitter.reads_runs and not stream.compressed:
                    for _ in splitter.read_runs(stream):
                        _check_budget(budget, splitter, stream)
            if stream.stream_error:
                raise NotStreamable("the gzip stream is cut short")
            return splitter.finish()
        finally:
            splitter.close()


def scan_threads(text_bytes_hint: int, threads: int | None = None) -> int:
    """Threads to scan a file of about ``text_bytes_hint`` bytes of JSON: ``threads`` if given; else
    1 below :data:`SCAN_THREADS_MIN_BYTES` or on one CPU, otherwise one per idle CPU and at least 2,
    at most :data:`SCAN_MAX_THREADS` (``GPUPERF_DECODE_WORKERS`` caps it; 1 turns them off). A
    thread costs no start-up, memory or copy, so a second one is used however busy the machine
    looks: the load average counts the window and its polling as running."""
    if threads is not None:
        return max(1, threads)
    asked = os.environ.get("GPUPERF_DECODE_WORKERS", "").strip()
    asked_n = int(asked) if asked.isdigit() else None
    if (asked_n is not None and asked_n <= 1) or text_bytes_hint < SCAN_THREADS_MIN_BYTES:
        return 1
    n = min(asked_n or max(2, round(_idle_cpus())), _usable_cpus(), SCAN_MAX_THREADS, text_bytes_hint // RUN_BYTES)
    return n if n >= 2 else 1


def _check_budget(budget: MemoryBudget, splitter: _Splitter, stream: TraceStream) -> None:
    """Refuse when the events decoded so far (projected to the whole file when its size is known)
    and the text and structs in flight would not fit the budget."""
    events, decoded_bytes = splitter.columns.n + splitter.kept, splitter.decoded_bytes
    file_bytes = None if stream.compressed else stream.file_bytes  # projects the events to come
    if file_bytes and decoded_bytes:
        events = int(events * file_bytes / decoded_bytes)
        what = (f"loading this {format_bytes(file_bytes, decimal=True)} file (about {events:,} events, "
                f"projected from the {format_bytes(decoded_bytes, decimal=True)} decoded)")
    else:
        what = (f"loading this trace ({format_bytes(stream.text_bytes, decimal=True)} of JSON so far, "
                f"{events:,} events decoded)")
    in_flight = stream.text_bytes - decoded_bytes + splitter.buffer_bytes
    need = streamed_load_bytes(events, in_flight, splitter.structs_in_flight)
    budget.check(stream.path, need, what, events=events)


class _Splitter:
    """Cuts the text into runs of complete events, each decoded into the columns in file order.

    ``threads``: the C scanner's threads (1: this thread); None: no scanner, every run is decoded
    carefully (:meth:`_decode_complete`). With the scanner a plain file is read (:meth:`read_runs`)
    straight into a few reused buffers: no new memory per chunk, no copy but the event that spans two.
    """

    def __init__(self, threads: int | None, capacity_events: int) -> None:
        self.columns = EventColumns(capacity_events)
        self.n_entries = 0
        self.kept = 0  # B/E/M events kept as structs
        self.decoded_bytes = 0  # text decoded into the columns so far
        self.structs_in_flight = 0  # event structs of the last run (alive while it is added)
        self.buffer_bytes = 0  # memory held beside the text in flight: read_runs' buffers
        self._runs = threads is not None  # runs go to the scanner (False: careful)
        self._max_in_flight = threads if threads is not None and threads > 1 else 0  # beyond the one merged
        self._pool = None
        if self._max_in_flight:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="gpuperf-scan")
        # (the run's scan: a thread's future's result, or the scan itself on this thread; text, end, separator)
        self._in_flight: deque[tuple[Callable[[], ScannedRun | None], bytearray, int, bytes]] = deque()
        self._free: list[bytearray] = []  # read_runs' buffers not in use
        self._decode_at = MIN_DECODE_BYTES  # undecoded text that triggers a careful decode
        self._head = bytearray()  # the text up to and including the events array's '['
        self._list_form = False
        self._pending: bytearray | None = None  # '[' then the events not decoded yet
        self._tail: bytearray | None = None  # the text after the events array

    def close(self) -> None:
        """No more runs to the scanner: its threads stopped (a scan in flight ends within
        milliseconds), read_runs' buffers dropped."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._runs = False
        self._free.clear()
        self.buffer_bytes = 0

    @property
    def reads_runs(self) -> bool:
        """Whether :meth:`read_runs` can take the rest of a plain file now (inside the events array,
        scanning runs: a scanned run keeps no view of its text, so the buffers are reused)."""
        return self._runs and self._pending is not None and self._tail is None

    def feed(self, chunk: bytes) -> None:
        if self._tail is not None:
            self._tail += chunk
        elif self._pending is None:
            self._find_array(chunk)
        elif self._runs:
            self._feed_run(chunk)
        else:
            self._pending += chunk
            if len(self._pending) >= self._decode_at:
                self._decode_complete()

    def _feed_run(self, chunk: bytes) -> None:
        """The pending event and ``chunk`` up to its last complete event: one run to scan (when no
        event ends in ``chunk``, it joins the pending text)."""
        cut = _last_boundary(chunk, len(chunk))
        if cut is None:
            self._pending += chunk
            return
        close, following = cut
        run = self._pending  # '[' and the event begun in the last chunk
        run += memoryview(chunk)[:close + 1]
        run += b"]"
        separator = bytes(memoryview(chunk)[close + 1:following])
        self._pending = _opened(memoryview(chunk)[following:])
        self._submit(run, len(run), separator)

    def read_runs(self, stream: TraceStream) -> Iterator[int]:
        """Read the rest of a plain file into reused buffers, scanning each run; yields the bytes
        read. Stops where the scanner hands a run back or an event outgrows a chunk: the caller
        reads the rest in chunks and feeds them as usual."""
        chunk_bytes = source.OUT_CHUNK_BYTES
        while self.reads_runs and len(self._pending) <= chunk_bytes:
            chunk_bytes = stream.read_size()  # the file's rest when that is less
            if chunk_bytes == 1:  # read to its end (a small file came whole in the first chunk): no buffer for it
                return
            while not self._free and len(self._in_flight) > self._max_in_flight - 1 >= 0:
                self._merge_oldest()
            if not self.reads_runs:
                return
            carry = len(self._pending)
            buf = self._buffer(carry + chunk_bytes)
            buf[:carry] = self._pending  # '[' and the event begun (same length: no resize)
            n = stream.readinto(memoryview(buf)[carry:carry + chunk_bytes])
            if not n:
                self._free.append(buf)
                return
            yield n
            end = carry + n
            cut = _last_boundary(buf, end)
            if cut is None:  # no event ends in this chunk: it joins the next one
                self._pending = bytearray(memoryview(buf)[:end])
                self._free.append(buf)
                continue
            close, following = cut
            separator = bytes(memoryview(buf)[close + 1:following])
            self._pending = _opened(memoryview(buf)[following:end])
            buf[close + 1] = ord("]")
            self._submit(buf, close + 2, separator)

    def _buffer(self, size: int) -> bytearray:
        """A free buffer of at least ``size`` bytes (the budget counts every buffer held: they
        outlive the text in flight)."""
        buf = self._free.pop() if self._free else None
        if buf is None or len(buf) < size:
            self.buffer_bytes -= len(buf) if buf is not None else 0
            buf = bytearray(size + min(RUN_SLACK_BYTES, size))  # a small file's one buffer: no 1 MiB slack
            self.buffer_bytes += len(buf)
        return buf

    def _submit(self, text: bytearray, end: int, separator: bytes) -> None:
        """Scan ``text[:end]`` ('[' run ']'), on a thread where there are several."""
        pool = self._pool  # none: the scan runs here when merged, at once (_max_in_flight is 0)
        scanned = partial(scan_run, text, end) if pool is None else pool.submit(scan_run, text, end).result
        self._in_flight.append((scanned, text, end, separator))
        while len(self._in_flight) > self._max_in_flight and self._runs:
            self._merge_oldest()

    def _merge_oldest(self) -> None:
        scanned, text, end, separator = self._in_flight[0]
        try:
            run = scanned()
        except Exception:  # noqa: BLE001 - (a B/E/M event msgspec refuses) the careful path decides
            run = None
        if run is None:
            self._go_careful()
            return
        self._in_flight.popleft()
        self._count(add_scanned(self.columns, run))
        self.decoded_bytes += end - 2 + len(separator)
        if len(text) > end:  # one of read_runs' buffers
            self._free.append(text)

    def _go_careful(self) -> None:
        """From the oldest run in flight on, the exact text goes back to the pending buffer."""
        runs = list(self._in_flight)
        self._in_flight.clear()
        self.close()
        texts = [part for _, text, end, separator in runs for part in (memoryview(text)[1:end - 1], separator)]
        self._pending = _opened(*texts, memoryview(self._pending)[1:])
        if len(self._pending) >= self._decode_at:
            self._decode_complete()

    def _find_array(self, chunk: bytes) -> None:
        """Look for the events array in the head so far and ``chunk``. The first chunk is searched
        as it came (a small file comes whole in it: its text is copied once, not twice)."""
        head = self._head
        if head:
            head += chunk
        text = head if head else chunk
        start = _content_start(text)
        if start == len(text):
            head += chunk if text is chunk else b""
            return
        if text[start] == ord("["):
            split, self._list_form = start + 1, True
        else:
            m = _EVENTS_KEY.search(text, max(0, len(text) - len(chunk) - 64))  # the text before chunk was searched
            if m is None:
                head += chunk if text is chunk else b""
                if len(head) > MAX_HEAD_BYTES:
                    raise NotStreamable("no events array near the start")
                return
            split = m.end()
        self.decoded_bytes += split
        if text is chunk:
            head += chunk[:split]
            if isinstance(chunk, bytearray):  # a plain file's: kept as it is
                del chunk[:split - 1]  # O(1) at a bytearray's front; what stays starts with the '['
                self._pending = chunk
            else:
                self._pending = _opened(memoryview(chunk)[split:])
        else:
            self._pending = _opened(memoryview(head)[split:])
            del head[split:]
        if len(self._pending) >= self._decode_at:
            self._decode_complete()

    def _decode_complete(self) -> None:
        """Decode the complete events of the pending text (all but the one still arriving). A cut
        inside a string or a nested value does not decode ("truncated"): the one before it is tried."""
        buf = self._pending
        before = len(buf)
        for _ in range(MAX_CUT_ATTEMPTS):
            cut = _last_boundary(buf, before)
            if cut is None:
                return
            close, following = cut
            saved = buf[close + 1]
            buf[close + 1] = ord("]")  # a whitespace or comma byte: the run ends there, no copy made
            try:
                self._decode_run(buf, close + 2)
            except msgspec.ValidationError as exc:  # (a DecodeError too: caught first)
                raise NotStreamable(str(exc)) from None
            except msgspec.DecodeError as exc:
                buf[close + 1] = saved
                if "trailing characters" in str(exc):
                    self._array_ends_early(str(exc))
                    return
                before = close
                continue
            buf[close + 1] = saved
            self.decoded_bytes += following - 1
            self._pending = _opened(memoryview(buf)[following:])  # a new buffer: the old one may be viewed
            return
        raise NotStreamable("no cut between events decodes")

    def _decode_run(self, buf: bytearray, end: int) -> None:
        """Decode ``buf[:end]`` (a JSON list of events) into the columns, without copying it. The
        structs' ``msgspec.Raw`` args are views of ``buf``, so ``buf`` is never resized after a decode
        (the text after the cut goes to a new one) and the view is not released by hand: something
        else may hold a struct a while longer (a sampling profiler holding a frame, as Dask's workers
        run one)."""
        self._count(decode_into(self.columns, buf, end))
        structs = self.structs_in_flight
        # the next decode waits for less text when events are so small that its structs would hold
        # more than STRUCT_BUDGET_BYTES
        by_structs = (STRUCT_BUDGET_BYTES * end // (structs * STRUCT_COST_BYTES) if structs
                      else MIN_DECODE_BYTES)
        self._decode_at = max(1, min(MIN_DECODE_BYTES, by_structs))

    def _count(self, added: tuple[int, int, int]) -> None:
        """Count a run appended to the columns: ``(entries, events kept as structs, structs)``."""
        entries, kept, self.structs_in_flight = added
        self.n_entries += entries
        self.kept += kept

    def _array_ends_early(self, message: str) -> None:
        """The run decoded up to the events array's end (msgspec's trailing-characters error gives
        the byte just past the first trailing character): keep the rest as tail."""
        buf = self._pending
        at = _error_byte(message) if "trailing characters" in message else None
        end = 0 if at is None else buf.rfind(b"]", 0, at - 1) + 1
        if end <= 0:
            raise NotStreamable(message)
        try:
            self._decode_run(buf, end)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise NotStreamable(str(exc)) from None
        self.decoded_bytes += end - 1
        self._tail, self._pending = buf[end:], None

    def finish(self) -> tuple[EventColumns, TraceFile, int]:
        while self._in_flight and self._runs:
            self._merge_oldest()
        self.close()
        if self._tail is None and self._pending is None:
            raise NotStreamable("no events array")
        if self._tail is None and not self._scanned_to_array_end():
            try:
                self._decode_run(self._pending, len(self._pending))
            except msgspec.ValidationError as exc:
                raise NotStreamable(str(exc)) from None
            except msgspec.DecodeError as exc:
                self._array_ends_early(str(exc))
            else:
                self._tail, self._pending = bytearray(), None
        return self.columns, self._meta(), self.n_entries

    def _scanned_to_array_end(self) -> bool:
        """The last run, up to the ``]`` that closes the events array, read by the C scanner; False
        (nothing changed) when no candidate scans: msgspec's path decides. The keys after the array
        (Kineto's ``traceName``, ...) are in no scanner run, and msgspec would decode the whole run as
        structs only to fail at them; a run the scanner reads whole is a complete JSON list, so its
        ``]`` is where msgspec's value ends too."""
        if not scan.ENABLED or self._list_form:
            return False
        buf = self._pending
        for end in _array_end_candidates(buf):
            try:
                run = scan_run(buf, end)
            except Exception:  # noqa: BLE001 - as in _merge_oldest
                return False
            if run is None:
                continue
            self._count(add_scanned(self.columns, run))
            self.decoded_bytes += end - 1
            self._tail, self._pending = buf[end:], None
            return True
        return False

    def _meta(self) -> TraceFile:
        tail = self._tail
        if self._list_form:
            if bytes(tail).strip(_WHITESPACE):
                raise NotStreamable("text after the list of events")
            return TraceFile()
        if self._head.count(_EVENTS_KEY_TEXT) != 1 or _EVENTS_KEY_TEXT in tail:
            raise NotStreamable("more than one traceEvents key")
        try:
            meta = _FILE_DECODER.decode(bytes(self._head) + b"]" + bytes(tail))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            raise NotStreamable(str(exc)) from None
        if meta.traceEvents != []:
            raise NotStreamable("the events array is not the top-level traceEvents")
        return meta


def _opened(*parts: bytes | memoryview) -> bytearray:
    """A new pending buffer: the events array's ``[`` then ``parts`` (copied)."""
    buf = bytearray(b"[")
    for part in parts:
        buf += part
    return buf


def decode_into(columns: EventColumns, buf: bytearray, end: int) -> tuple[int, int, int]:
    """Decode ``buf[:end]`` (a JSON list of events) into ``columns``: by the C scanner where it
    reads the run (:mod:`.scan`), else by msgspec. Returns ``(entries, events kept as structs,
    structs decoded)``; raises msgspec's errors when the run does not decode."""
    try:
        run = scan_run(buf, end)
        if run is not None:
            return add_scanned(columns, run)
        events = _CHUNK_DECODER.decode(memoryview(buf)[:end])
    except RecursionError:  # a value nested ~1000 deep: the whole-file path says "nested too deeply"
        raise NotStreamable("JSON nested too deeply") from None
    return len(events), add_events(columns, events), len(events)


def add_scanned(columns: EventColumns, run: ScannedRun) -> tuple[int, int, int]:
    """Append a run the C scanner read: ``X`` events as columns, ``B``/``E``/``M`` kept. Returns
    ``(entries, events kept as structs, structs its columns weigh as much as)``."""
    columns.add_scanned(run)
    columns.keep_paired_and_meta(run.paired_and_meta)
    kept = len(run.paired_and_meta)
    return run.entries, kept, run.xs * SCANNED_EVENT_BYTES // STRUCT_COST_BYTES + kept


def _last_boundary(buf: bytearray, before: int) -> tuple[int, int] | None:
    """``(i, j)``: ``buf[i]`` the last ``}`` before ``before`` that looks like the end of an event,
    ``buf[j]`` the ``{`` after it (a ``,`` and whitespace between); None when none is seen."""
    pos = before
    for _ in range(256):
        pos = buf.rfind(b"{", 1, pos)
        if pos < 1:
            return None
        j = pos - 1
        while j > 0 and buf[j] in _WHITESPACE:
            j -= 1
        if buf[j] != ord(","):
            continue
        j -= 1
        while j > 0 and buf[j] in _WHITESPACE:
            j -= 1
        if buf[j] == ord("}"):
            return j, pos
    return None


ARRAY_END_CANDIDATES = 3
"""How many ``]`` from the end :meth:`_Splitter._scanned_to_array_end` tries (a list in the keys after
the events array adds one; Kineto's traceName, displayTimeUnit and baseTimeNanoseconds add none)."""
_AFTER_ARRAY = re.compile(rb"[ \t\r\n]*[,}]")


def _array_end_candidates(buf: bytearray) -> Iterator[int]:
    """Offsets just past the last few ``]`` of ``buf`` (:data:`ARRAY_END_CANDIDATES`) that a ``,`` or
    ``}`` follows (whitespace between): where the events array may close, nearest the end first."""
    pos = len(buf)
    for _ in range(ARRAY_END_CANDIDATES):
        close = buf.rfind(b"]", 0, pos)
        if close <= 0:
            return
        if _AFTER_ARRAY.match(buf, close + 1):
            yield close + 1
        pos = close
