"""Streamed decode: trace bytes -> event columns, a chunk of events at a time.

The whole-file path (:func:`.source.read_trace_text`, :func:`.decode.decode_trace`,
:func:`.build.build_rank`) holds the file's whole text and every decoded event struct at once.
Here the decompressed bytes (:class:`.source.TraceStream`, at most 8 MB a step) are cut after the
last complete event of what has arrived, that run of events is decoded by one typed
``msgspec`` call (the same structs as the whole-file decoder) and appended to
:class:`.build.EventColumns`, and the text and structs are dropped; only the text outside the
events array (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds``, ... before or
after it) is kept and decoded at the end. Peak memory is the columns plus one chunk.

A cut is found without scanning every byte: the last ``}`` ``,`` ``{`` (whitespace between) of the
buffer. A false one (inside a string or a nested value) cannot decode, and the array's end is where
msgspec reports trailing characters. Anything not clean (a syntax error, a field of the wrong type,
NaN literals, a file cut short, a second document, an unexpected shape) stops the streamed decode:
:func:`load_rank_streamed` returns None and the caller loads the file with the whole-file path,
which repairs, skips, salvages and reports exactly as before. The memory budget and the size
limit are checked after every chunk, as :func:`.source.read_trace_text` does.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

from .budget import MemoryBudget, format_bytes
from .build import EventColumns, build_rank_columns
from .decode import (AnyEvent, BEvent, EEvent, Event, MEvent, TraceFile, XEvent, _content_start,
                     estimated_load_bytes, gc_paused)
from .model import RankTrace
from .source import EventCounter, TraceStream, _check_json_start, _check_max

ENABLED = os.environ.get("GPUPERF_STREAM_DECODE", "1") != "0"
"""The switch: :func:`.load.load_rank` tries the streamed decode first when True (the environment
variable ``GPUPERF_STREAM_DECODE=0`` turns it off, for comparisons)."""

MIN_DECODE_BYTES = 4 << 20
"""Events are decoded once this much undecoded text has arrived (and at the end)."""
MAX_CUT_ATTEMPTS = 16
"""Cuts tried per decode before the file goes to the whole-file path (a false one costs a decode)."""
MAX_HEAD_BYTES = 64 << 20
"""Text before the events array kept while looking for it; beyond it the whole-file path decodes."""

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENTS_KEY_TEXT = b'"traceEvents"'
_WHITESPACE = b" \t\r\n"
_PAIRED_OR_META = frozenset({BEvent, EEvent, MEvent})
_CHUNK_DECODER = msgspec.json.Decoder(list[AnyEvent])  # the whole-file decoder's event types
_FILE_DECODER = msgspec.json.Decoder(TraceFile)


class NotStreamable(Exception):
    """The file needs the whole-file decoder (repairs, skips, salvage, ...): not an error."""


def load_rank_streamed(path: Path, *, budget: MemoryBudget, max_bytes: int | None,
                       order_index: int = 0) -> RankTrace | None:
    """Load a clean trace file chunk by chunk; None when it needs the whole-file path.

    Raises what the whole-file path raises while reading (not a regular file, over ``max_bytes``,
    over the memory budget, not JSON at its first byte) and while building (no usable event).
    """
    try:
        with gc_paused():
            columns, meta, n_entries = stream_columns(path, budget, max_bytes)
            return build_rank_columns(columns, meta, path, order_index, n_entries=n_entries)
    except NotStreamable:
        return None


def stream_columns(path: Path, budget: MemoryBudget, max_bytes: int | None
                   ) -> tuple[EventColumns, TraceFile, int]:
    """``(columns, metadata, entries of the event list)`` of a clean trace file, read in chunks.

    Raises :class:`NotStreamable` when the file is not clean JSON of a trace's usual shape.
    """
    splitter = _Splitter()
    with TraceStream(path) as stream:
        what = "the decompressed data" if stream.compressed else "the data"
        if not stream.compressed:
            budget.check(path, estimated_load_bytes(stream.file_bytes, 0),
                         f"loading this {format_bytes(stream.file_bytes)} file")
            _check_max(path, stream.file_bytes, max_bytes, stream.compressed)
        counter = EventCounter()
        total = 0
        started = False
        for chunk in stream:
            if not started:
                started = _check_json_start(path, chunk, what)
            total += len(chunk)
            counter.feed(chunk)
            _check_max(path, total, max_bytes, stream.compressed)
            budget.check(path, estimated_load_bytes(total, counter.events),
                         f"loading this trace ({format_bytes(total)} of JSON "
                         f"{'decompressed so far' if stream.compressed else 'read so far'}, "
                         f"at least {counter.events:,} events)")
            splitter.feed(chunk)
        if stream.stream_truncated:
            raise NotStreamable("the gzip stream is cut short")
    return splitter.finish()


class _Splitter:
    """Cuts the text into runs of complete events and decodes each run into the columns."""

    def __init__(self) -> None:
        self.columns = EventColumns()
        self.n_entries = 0
        self._head = bytearray()  # the text up to and including the events array's '['
        self._list_form = False
        self._searched = 0
        self._pending: bytearray | None = None  # '[' then the events not decoded yet
        self._tail: bytearray | None = None  # the text after the events array

    def feed(self, chunk: bytes) -> None:
        if self._tail is not None:
            self._tail += chunk
        elif self._pending is not None:
            self._pending += chunk
            if len(self._pending) >= MIN_DECODE_BYTES:
                self._decode_complete()
        else:
            self._head += chunk
            self._find_array()

    def _find_array(self) -> None:
        head = self._head
        start = _content_start(head)
        if start == len(head):
            return
        if head[start] == ord("["):
            split, self._list_form = start + 1, True
        else:
            m = _EVENTS_KEY.search(head, max(0, self._searched - 64))
            if m is None:
                self._searched = len(head)
                if len(head) > MAX_HEAD_BYTES:
                    raise NotStreamable("no events array near the start")
                return
            split = m.end()
        self._pending = bytearray(b"[") + head[split:]
        del head[split:]
        if len(self._pending) >= MIN_DECODE_BYTES:
            self._decode_complete()

    def _decode_complete(self) -> None:
        """Decode the complete events of the pending text (all but the one still arriving).

        A cut that turns out to lie inside a string or a nested value does not decode ("truncated"):
        the one before it is tried, a few times, before the file goes to the whole-file path.
        """
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
            del buf[1:following]
            return
        raise NotStreamable("no cut between events decodes")

    def _decode_run(self, buf: bytearray, end: int) -> None:
        """Decode ``buf[:end]`` (a JSON list of events) into the columns, without copying it. The
        structs' ``msgspec.Raw`` args point into ``buf``: they are dropped before the view is."""
        with memoryview(buf) as view:
            run = view[:end]
            try:
                events = _CHUNK_DECODER.decode(run)
                self._add(events)
                del events
            finally:
                run.release()

    def _array_ends_early(self, message: str) -> None:
        """The run decoded up to the events array's end (trailing characters): keep the rest as tail."""
        end = _array_end(self._pending, message)
        self._decode_last(end)

    def _decode_last(self, end: int) -> None:
        buf = self._pending
        try:
            self._decode_run(buf, end)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise NotStreamable(str(exc)) from None
        self._tail = buf[end:]
        self._pending = None

    def _add(self, events: list) -> None:
        self.n_entries += len(events)
        xs = [e for e in events if type(e) is XEvent]
        self.columns.add(xs)
        if len(xs) < len(events):  # other phases: keep B/E/M (paired at the end)
            rest = [e for e in events if type(e) in _PAIRED_OR_META]
            if rest:
                self.columns.keep_paired_and_meta(list(map(_own_raw_args, rest)))

    def finish(self) -> tuple[EventColumns, TraceFile, int]:
        if self._tail is None:
            if self._pending is None:
                raise NotStreamable("no events array")
            try:
                self._decode_run(self._pending, len(self._pending))
            except msgspec.ValidationError as exc:
                raise NotStreamable(str(exc)) from None
            except msgspec.DecodeError as exc:
                self._array_ends_early(str(exc))
            else:
                self._tail, self._pending = bytearray(), None
        return self.columns, self._meta(), self.n_entries

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


def _own_raw_args(event: Event) -> Event:
    """An event kept past its chunk: its raw args copied out of the chunk's buffer (a
    ``msgspec.Raw`` is a view of the text it was decoded from)."""
    args = event.args
    for field in _RAW_ARGS:
        raw = getattr(args, field)
        if raw:
            setattr(args, field, msgspec.Raw(bytes(raw)))
    return event


_RAW_ARGS = ("input_dims", "input_type", "concrete_inputs")


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


_TRAILING_AT = re.compile(r"trailing characters \(byte (\d+)\)")


def _array_end(buf: bytearray, message: str) -> int:
    """Offset just past the ``]`` that closes the events array, from msgspec's trailing-characters
    error (it gives the byte just past the first trailing character)."""
    m = _TRAILING_AT.search(message)
    if m is None:
        raise NotStreamable(message)
    close = buf.rfind(b"]", 0, int(m.group(1)) - 1)
    if close < 0:
        raise NotStreamable(message)
    return close + 1
