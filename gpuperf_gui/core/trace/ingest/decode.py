"""Text -> typed events: the msgspec structs both decoders use, and the whole-file decode.

The structs (``gc=False``, made from :data:`.schema.FIELDS`) are decoded with the garbage collector
off (:func:`gc_paused`): typed msgspec is the fastest and leanest decoder measured
(docs/reference/environment.md). :func:`decode_trace` reads a file that is not clean JSON whole: each
repair is picked from where and why the decoder stopped, an event with fields of the wrong type or
broken syntax is skipped and counted, and a file cut short keeps its complete events. Every message
says what was wrong and at which byte or event.
"""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Union

import msgspec

import numpy as np

from ..vocabulary import schema
from .budget import MemoryBudget
from .source import EventCounter, TraceStream
from ...units import format_bytes
from ..model.trace_model import NotATraceError, TraceFormatError, Truncation

DEFAULT_MAX_BYTES = 4 * 1024**3
"""Largest (decompressed) trace text accepted by default: 4 GiB. Callers can raise it."""

_MAX_SALVAGE_ATTEMPTS = 24
_MAX_REPAIRS = 8
_MAX_SKIPPED_SYNTAX = 16
"""Events with broken syntax skipped at most (each costs one more decode of the whole text)."""
TEXT_COST = 1.5
"""Memory per byte of JSON text while it is decoded: the text itself plus the strings copied out."""
EVENT_COST_BYTES = 600
"""Memory per event while it is decoded and built into lanes (structs, boxed numbers, columns, sort
keys); measured 420 B on 1M tiny events and 200-350 B on real Kineto traces, rounded up."""
_LEADING_SPACE = re.compile(rb"\s*")


Args = msgspec.defstruct("Args", schema.struct_fields("args"), gc=False, module=__name__)
Args.__doc__ = """The ``args`` keys the analysis uses (:data:`.schema.FIELDS`); every other key is skipped."""

Event = msgspec.defstruct("Event", [*schema.struct_fields("event"),
                                    (schema.ARGS_KEY, Args, msgspec.field(default_factory=Args))],
                          gc=False, tag_field=schema.EVENT_TAG, module=__name__)
Event.__doc__ = """One trace event with the fields we use (:data:`.schema.FIELDS`). Subclasses are
tagged by phase (``ph``)."""


class XEvent(Event, tag="X"):
    """Complete event (ts + dur): almost everything in a Kineto trace."""


class BEvent(Event, tag="B"):
    """Begin of a duration event (paired with the next ``E`` on the same thread)."""


class EEvent(Event, tag="E"):
    """End of a duration event."""


class MEvent(Event, tag="M"):
    """Metadata: process_name, thread_name, ... (``args.name``)."""


_SKIPPED = tuple(msgspec.defstruct(f"Skipped_{ph}", [], gc=False, tag_field="ph", tag=ph)
                 for ph in schema.SKIPPED_PHASES)
AnyEvent = Union[(XEvent, BEvent, EEvent, MEvent, *_SKIPPED)]  # type: ignore[valid-type]


class TraceFile(msgspec.Struct, gc=False):
    """The JSON-object form of a trace (Kineto always writes this form)."""

    traceEvents: Union[list[AnyEvent], None] = None  # noqa: N815 (JSON key); None: key absent
    deviceProperties: Any = None  # noqa: N815
    computeProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: Union[int, float, None] = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    cuda_runtime_version: Any = None
    hip_runtime_version: Any = None
    roctracer_version: Any = None
    trace_id: Any = None
    gpuperf_unprofiled: Any = None  # written by `gpuperf profile`: step times with the profiler idle


_FILE_DECODER = msgspec.json.Decoder(TraceFile)
_EVENTS_DECODER = msgspec.json.Decoder(list[AnyEvent])


@dataclass
class Decoded:
    """Result of decoding one file."""

    events: list[Any]  # XEvent, BEvent, EEvent, MEvent or skipped-phase structs (None: no traceEvents)
    meta: TraceFile
    truncation: Truncation | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    """Entries of the events list dropped because they are not events or have fields of wrong types."""


_FILE_DECODER_LAX = msgspec.json.Decoder(TraceFile, strict=False)  # "NaN" strings -> float nan
_EVENTS_DECODER_LAX = msgspec.json.Decoder(list[AnyEvent], strict=False)
_EVENT_DECODER = msgspec.json.Decoder(AnyEvent)
_EVENT_DECODER_LAX = msgspec.json.Decoder(AnyEvent, strict=False)
_TOP_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
Text = Union[bytes, bytearray, memoryview]


def estimated_load_bytes(text_bytes: int, events: int) -> float:
    """Memory (bytes) that decoding ``text_bytes`` of JSON holding ``events`` events and building
    them into lanes needs at its peak: the cost model :class:`.budget.MemoryBudget` checks."""
    return TEXT_COST * text_bytes + EVENT_COST_BYTES * events


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector for a large decode (it dominates dict-heavy decoding)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def decode_trace(path: Path, budget: MemoryBudget, max_bytes: int | None) -> Decoded:
    """Read a file whole into one buffer and decode it into typed events, repairing, skipping or
    salvaging where possible.

    ``budget`` (:func:`estimated_load_bytes`) is checked before reading a plain file, from its size,
    after every chunk, and before a repair that copies the text. Raises :class:`TraceFormatError` when
    the text is not a trace: not JSON (the message gives the byte, line and column where it stops being
    JSON, and why), a JSON object without a ``traceEvents`` list, or a JSON value that is neither an
    object nor an array (a trace whose events are all unusable is refused by the build).
    """
    with TraceStream(path, max_bytes) as stream:
        if not stream.compressed:
            budget.check(path, estimated_load_bytes(stream.file_bytes, 0),
                         f"loading this {format_bytes(stream.file_bytes, decimal=True)} file")
        text = bytearray()
        counter = EventCounter()
        for chunk in stream:
            text += chunk  # grows in place (realloc), so no second copy of the text
            counter.feed(chunk)
            budget.check(path, estimated_load_bytes(len(text), counter.events), events=counter.events, what=
                         f"loading this trace ({format_bytes(len(text), decimal=True)} of JSON "
                         f"{'decompressed so far' if stream.compressed else 'read so far'}, "
                         f"at least {counter.events:,} events)")
    decoded = _Decoding(text, stream, budget).run()
    if decoded.events is None:
        raise NotATraceError(f"{path}: no traceEvents list: a JSON object, but not a Chrome/Kineto trace")
    return decoded


_RAW_EVENT_BYTES = 100
"""Extra memory per event on the one-by-one path: its raw slice and list slot."""
_MSGSPEC_BYTE = re.compile(r"\(byte (\d+)\)")


class _Decoding:
    """One file's decode: the fast typed decode, then error-guided repairs, skips and salvage."""

    def __init__(self, text: bytearray, read: TraceStream, budget: MemoryBudget) -> None:
        self.text = text  # a bytearray, as every repair's text: blanked and closed in place
        self.path, self.budget, self.read = read.path, budget, read
        start = _content_start(self.text)
        self.list_form = self.text[start:start + 1] == b"["  # (repairs keep the first byte)
        self.end = len(self.text)  # the first JSON document ends here (a second one may follow)
        self.lax = False  # after quoting NaN/Infinity literals: "NaN" strings decode as floats
        self.warnings: list[str] = []
        self.repairs_done: set[str] = set()
        self.syntax_skips: list[tuple[int, str]] = []
        self.last_error = ""

    def view(self) -> Text:
        return self.text if self.end == len(self.text) else memoryview(self.text)[: self.end]

    def run(self) -> Decoded:
        if _content_start(self.text) == len(self.text):  # (the reader refused any other first byte)
            raise TraceFormatError(f"{self.path}: empty file{' (after decompression)' if self.read.compressed else ''}")
        for _ in range(_MAX_REPAIRS + _MAX_SKIPPED_SYNTAX + 2):
            try:
                return self._finish(self._decode())
            except RecursionError:
                raise TraceFormatError(f"{self.path}: JSON nested too deeply to be a trace") from None
            except msgspec.DecodeError as exc:
                self.last_error = str(exc)
                if not self._recover(self.last_error):
                    break
        return self._finish(self._salvage_or_fail())

    # -- the typed decode -------------------------------------------------------------------------
    def _decode(self) -> Decoded:
        """The typed decode; events of the wrong types are skipped one by one (a syntax error
        anywhere raises ``msgspec.DecodeError``)."""
        try:
            if self.list_form:
                decoder = _EVENTS_DECODER_LAX if self.lax else _EVENTS_DECODER
                return Decoded(decoder.decode(self.view()), TraceFile())
            meta = (_FILE_DECODER_LAX if self.lax else _FILE_DECODER).decode(self.view())
        except msgspec.ValidationError:
            return self._per_event()
        events = meta.traceEvents
        meta.traceEvents = []
        return Decoded(events, meta)  # events None: no traceEvents key

    def _finish(self, decoded: Decoded) -> Decoded:
        decoded.warnings[:0] = self.warnings
        if self.syntax_skips:
            first_byte, why = self.syntax_skips[0]
            decoded.skipped += len(self.syntax_skips)
            decoded.warnings.append(
                f"skipped {len(self.syntax_skips)} event{'s' if len(self.syntax_skips) > 1 else ''} "
                f"with broken JSON syntax (first at byte {first_byte:,}: {why})")
        return decoded

    # -- recovering from a syntax error ------------------------------------------------------------
    def _recover(self, message: str) -> bool:
        """Apply the repair the error calls for; False when none applies."""
        at = _error_byte(message)
        if "trailing characters" in message and at is not None and 0 < at <= self.end:
            at = at - 1 if self.text[at - 1:at] not in (b" ", b"\t", b"\r", b"\n") else at  # msgspec: 1 past it
            rest = len(self.text) - at
            self.end = at
            first = len(bytes(self.text[:at]).rstrip()) if at < (1 << 24) else at
            self.warnings.append(
                f"the file holds more than one JSON document: read the first ({first:,} bytes), "
                f"ignored the {rest:,} bytes after it, from byte {at:,}")
            return True
        for name, needed, repair in _REPAIRS:
            if name in self.repairs_done or not needed(self.text, at, message):
                continue
            self.repairs_done.add(name)
            self.budget.check(self.path, estimated_load_bytes(2 * len(self.text), 0),
                              f"repairing it ({name})")
            view = self.view()  # a second document after ``end`` is ignored: repair only the first
            self.text = bytearray(repair(bytes(view) if isinstance(view, memoryview) else view))
            self.end = len(self.text)
            if name == "NaN/Infinity literals read as numbers":
                self.lax = True
            self.warnings.append(f"repaired: {name}")
            return True
        if at is not None and "truncated" not in message and not self.read.stream_error:
            return self._skip_broken_event(at, message)
        return False

    def _skip_broken_event(self, at: int, message: str) -> bool:
        """Blank out the event around byte ``at`` (an event of the events array with broken syntax)."""
        if len(self.syntax_skips) >= _MAX_SKIPPED_SYNTAX:
            return False
        array = _events_array_start(self.text)
        if array is None or at <= array[0]:
            return False
        region = _event_region(self.text, array[0], at, self.end)
        if region is None:
            return False
        lo, hi = region
        self.syntax_skips.append((at, _describe_syntax_error(message, self.text, at)))
        self.text[lo:hi] = b" " * (hi - lo)
        return True

    def _salvage_or_fail(self) -> Decoded:
        """The text is cut short (or broken where nothing else helps): keep its complete events."""
        message = self.last_error
        truncated = bool(self.read.stream_error) or "truncated" in message
        if truncated:
            salvaged = self._salvage()
            if salvaged is not None:
                return salvaged
        at = _error_byte(message)
        where = "" if at is None else f" at byte {at:,}{_line_col(self.text, at)}"
        why = _describe_syntax_error(message, self.text, at)
        if truncated and self.read.stream_error:
            why = f"{self.read.stream_error}, and no complete event before the damage"
        elif truncated and _events_array_start(self.text) is None:
            why = f"the JSON ends before it is complete ({self.end:,} bytes), and holds no traceEvents list"
        elif truncated:
            why = f"the JSON is cut short ({self.end:,} bytes) before its first complete event"
        raise TraceFormatError(f"{self.path}: not valid JSON{where}: {why}")

    def _salvage(self) -> Decoded | None:
        """Recover every complete event of a file cut short (a killed job's ``.tmp`` file).

        Tries cut points at event boundaries (a ``}`` followed by ``,``/``]``/end), from the end
        backwards, closing the array and object after each (written in place: no copy of the
        text); at most a few dozen attempts.
        """
        start = _events_array_start(self.text)
        if start is None:
            return None
        body_start, suffix = start
        total = self.end
        try:
            self.text += b" " * len(suffix)  # room to close the array after any cut point
        except BufferError:  # a view of the text is still alive: close the array in a copy
            self.text = bytearray(self.text) + b" " * len(suffix)
        reason = self.read.stream_error or "JSON cut short"
        at = _error_byte(self.last_error)  # a damaged stream can decompress to garbage: cut before it
        pos, attempts, decoded, used = total if at is None else min(total, at), 0, None, body_start
        while decoded is None and attempts < _MAX_SALVAGE_ATTEMPTS:
            pos = self.text.rfind(b"}", body_start, pos)
            if pos < 0:
                break
            nxt = bytes(self.text[pos + 1: pos + 64]).lstrip()
            if nxt[:1] not in (b",", b"]", b""):
                continue
            attempts += 1
            decoded, used = self._decode_closed(pos + 1, suffix), pos + 1
        if decoded is None and attempts:
            return None  # complete-looking events, none of which decodes: not a cut, a broken file
        if decoded is None:  # nothing complete after the array opened
            decoded = self._decode_closed(body_start, suffix)
        if decoded is not None and decoded.events is not None:  # (None: "traceEvents" was only a string)
            decoded.truncation = Truncation(total, used, len(decoded.events), reason)
        return decoded

    def _decode_closed(self, cut: int, suffix: bytes) -> Decoded | None:
        saved = bytes(self.text[cut: cut + len(suffix)])
        self.text[cut: cut + len(suffix)] = suffix
        end, self.end = self.end, cut + len(suffix)
        try:
            return self._decode()
        except (TraceFormatError, msgspec.DecodeError, RecursionError):
            return None
        finally:
            self.text[cut: cut + len(suffix)] = saved
            self.end = end

    # -- skipping events of the wrong types --------------------------------------------------------
    def _per_event(self) -> Decoded:
        """Slow path: decode the event list as raw slices, then each event on its own; an event
        that does not decode is skipped and counted (its index, byte and why are reported)."""
        text = self.view()  # '{' or '[' first (the reader refuses any other byte): the raw decoders take it
        if self.list_form:
            raw_events, meta = _RAW_LIST_DECODER.decode(text), TraceFile()
        else:
            top = _TOP_DECODER.decode(text)
            raw_list = top.pop("traceEvents", None)
            if raw_list is None:
                return Decoded(None, TraceFile())  # type: ignore[arg-type]
            head = memoryview(raw_list)[:20].tobytes()
            if head[:1] != b"[":
                raise NotATraceError(f"{self.path}: traceEvents is not a list (it starts with "
                                     f"{head!r}): not a Chrome/Kineto trace")
            raw_events = _RAW_LIST_DECODER.decode(raw_list)
            meta = _fieldwise(TraceFile, top, lambda key, raw: msgspec.json.decode(
                b'{"%s":%s}' % (key.encode(), bytes(raw)), type=TraceFile, strict=not self.lax))
        n_raw = len(raw_events)
        self.budget.check(self.path, estimated_load_bytes(len(text), n_raw) + _RAW_EVENT_BYTES * n_raw,
                          f"decoding its {n_raw:,} events one by one (some have fields of the wrong type)")
        events: list[Any] = []
        skipped = args_dropped = 0
        first = ""
        event_decoder = _EVENT_DECODER_LAX if self.lax else _EVENT_DECODER
        for i, raw in enumerate(raw_events):
            try:
                events.append(event_decoder.decode(raw))
                continue
            except msgspec.ValidationError as exc:
                error = str(exc)
            event = _convert_event(raw, self.lax)
            if event is None:
                skipped += 1
                if not first:
                    first = f"event #{i:,} at byte {_offset_in(raw, self.text):,}: {error}"
            else:
                args_dropped += 1
                events.append(event)
        decoded = Decoded(events, meta, skipped=skipped)
        if skipped:
            decoded.warnings.append(f"skipped {skipped:,} bad event{'s' if skipped > 1 else ''} of "
                                    f"{len(raw_events):,} (first: {first})")
        if args_dropped:
            decoded.warnings.append(f"{args_dropped:,} events had args of the wrong type (those args ignored)")
        return decoded


def _error_byte(message: str) -> int | None:
    m = _MSGSPEC_BYTE.search(message)
    return int(m.group(1)) if m else None


def _line_col(text: bytes | bytearray, at: int) -> str:
    at = min(at, len(text))
    line = text.count(b"\n", 0, at) + 1
    col = at - (text.rfind(b"\n", 0, at) + 1) + 1
    return f" (line {line:,}, column {col:,})"


def _describe_syntax_error(message: str, text: Text, at: int | None) -> str:
    """msgspec's reason without its byte note, and what is there: ``invalid character 'x'``."""
    reason = _MSGSPEC_BYTE.sub("", message).replace("JSON is malformed: ", "").strip()
    if at is None or at >= len(text):
        return reason
    snippet = bytes(text[max(0, at - 20): at + 20]).decode("utf-8", "replace")
    char = bytes(text[at:at + 1])
    shown = repr(char.decode()) if 32 <= char[0] < 127 else f"byte 0x{char[0]:02x}"
    return f"{reason} {shown} in {snippet!r}"


def _offset_in(raw: msgspec.Raw, text: Text) -> int:
    """Byte offset of a raw slice inside the text it was decoded from (-1 when it was copied)."""
    try:
        view = np.frombuffer(memoryview(raw), np.uint8)
        base = np.frombuffer(text, np.uint8)
        offset = view.ctypes.data - base.ctypes.data
    except (TypeError, ValueError):
        return -1
    return offset if 0 <= offset < len(text) else -1


def _content_start(text: Text) -> int:
    """Offset of the first non-whitespace byte (``len(text)`` if none); no copy, unlike ``lstrip``."""
    return _LEADING_SPACE.match(text).end()


def _convert_event(raw: msgspec.Raw, lax: bool) -> Any:
    """Convert one event that failed the typed decode; drop only the ``args`` keys of unusable types."""
    try:
        item = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(item, dict):
        return None
    args = item.pop("args", None)
    try:
        event = msgspec.convert(item, AnyEvent, strict=False)
    except (msgspec.ValidationError, TypeError, OverflowError):
        return None
    if not isinstance(event, Event) or not isinstance(args, dict):
        return event
    try:
        event.args = msgspec.convert(args, Args, strict=False)
    except (msgspec.ValidationError, TypeError, OverflowError):
        event.args = _fieldwise(Args, args,
                                lambda key, value: msgspec.convert({key: value}, Args, strict=False))
    return event


def _fieldwise(struct: type, values: dict[str, Any], convert: Callable[[str, Any], Any]) -> Any:
    """``struct`` from ``values``, each key converted on its own (``convert(key, value)`` -> a
    ``struct`` with that field set): a key of the wrong type is left out (its default kept)."""
    out = struct()
    for f in msgspec.structs.fields(struct):
        if f.encode_name in values:
            try:
                setattr(out, f.name, getattr(convert(f.encode_name, values[f.encode_name]), f.name))
            except (msgspec.DecodeError, TypeError, OverflowError, RecursionError):  # (ValidationError too)
                pass
    return out


# Repairs for known quirks of real writers (metrics.md §4.3), each picked by the decoder's error:
# (name, needed(text, error_byte, message), repair(text) -> text).
_CONTROL_TABLE = bytes(b if b >= 32 else 32 for b in range(256))
_NA = re.compile(rb"(:\s*)N/A\b")
_TRAILING_COMMA = re.compile(rb",(\s*[\]}])")
_NON_FINITE = re.compile(rb"([:\[,]\s*)(-?Infinity|NaN)(?=\s*[,\]}])")
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})")


def _at(text: Text, at: int | None) -> bytes:
    return b"" if at is None else bytes(text[max(0, at - 1): at + 12])


_REPAIRS = (
    ("invalid UTF-8 replaced", lambda t, at, m: "UTF-8" in m,
     lambda t: bytes(t).decode("utf-8", errors="replace").encode("utf-8")),
    ("NaN/Infinity literals read as numbers",
     lambda t, at, m: b"NaN" in _at(t, at) or b"Infinity" in _at(t, at),
     lambda t: _NON_FINITE.sub(rb'\1"\2"', t)),
    ("lone UTF-16 surrogates replaced",
     lambda t, at, m: ("surrogate" in m or "truncated" in m) and _LONE_SURROGATE.search(t) is not None,
     lambda t: _LONE_SURROGATE.sub(rb"\1\\ufffd", t)),
    ("control characters in strings",
     lambda t, at, m: "invalid character" in m and at is not None and at < len(t) and t[at] < 32,
     lambda t: bytes(t).translate(_CONTROL_TABLE)),
    ("bare N/A quoted", lambda t, at, m: b"N/A" in _at(t, at), lambda t: _NA.sub(rb'\1"N/A"', t)),
    ("trailing commas removed", lambda t, at, m: "trailing comma" in m,
     lambda t: _TRAILING_COMMA.sub(rb"\1", t)),
)

_EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_LAST_EVENT_END = re.compile(rb"\}\s*\]")


def _event_region(text: Text, body_start: int, at: int, end: int) -> tuple[int, int] | None:
    """Bytes to blank so that the event holding byte ``at`` drops out of the events array: from
    the comma before it to the comma before the next event (for the first event, from the array's
    start through the comma after it; for the last, up to the array's closing bracket). None when
    no event boundary is near."""
    window = 1 << 20  # events are small: look this far each way
    before = None
    for before in _EVENT_BOUNDARY.finditer(text, max(body_start, at - window), at):
        pass
    after = _EVENT_BOUNDARY.search(text, at, min(end, at + window))
    if after is not None:
        comma_after = text.find(b",", after.start(), after.end())
        if before is None:
            return body_start, comma_after + 1
        return text.find(b",", before.start(), before.end()), comma_after
    last = _LAST_EVENT_END.search(text, at, min(end, at + window))
    if before is None or last is None:
        return None
    return text.find(b",", before.start(), before.end()), last.end() - 1


def _events_array_start(text: Text) -> tuple[int, bytes] | None:
    """Position just after the ``[`` that opens the events array, and the closing suffix."""
    offset = _content_start(text)
    if text[offset:offset + 1] == b"[":
        return offset + 1, b"]"
    key = text.find(b'"traceEvents"')
    bracket = text.find(b"[", key) if key >= 0 else -1
    return (bracket + 1, b"]}") if bracket >= 0 else None
