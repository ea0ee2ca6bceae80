"""Bytes -> typed events: reading (gzip by magic, size limits), JSON decoding, repair, salvage.

The hot path is one ``msgspec.json.decode`` into ``gc=False`` structs with the garbage collector off
(see shared/reference/environment.md: typed msgspec is the fastest and leanest decoder measured),
straight from the decompressed bytes (no copy of the text is ever made on that path). Gzip goes
through python-isal when it is installed (about 2.5x faster than zlib), else through zlib.
Everything else here is the tolerant slow path for files that are not clean JSON.
"""
from __future__ import annotations

import gc
import re
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Union

import msgspec

try:  # python-isal ("isal" on PyPI): zlib's API, decompresses about 2.5x faster; optional
    from isal import isal_zlib as _gzip_codec
except ImportError:  # pragma: no cover - depends on the installation
    _gzip_codec = zlib

from .model import TraceFormatError, Truncation

DEFAULT_MAX_BYTES = 4 * 1024**3
"""Largest (decompressed) trace text accepted by default: 4 GiB. Callers can raise it."""

GZIP_MAGIC = b"\x1f\x8b"
_READ_CHUNK = 1 << 22
_MAX_SALVAGE_ATTEMPTS = 24
_LEADING_SPACE = re.compile(rb"\s*")


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the analysis uses; every other key is skipped by the decoder."""

    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_2021: int = msgspec.field(default=-1, name="external id")
    correlation: int = -1
    stream: Union[int, str] = -1  # ROCm writes "0x0" on runtime calls
    device: Union[int, str] = -1
    bytes: Union[float, str] = -1.0  # ROCm writes "128" on hipMemcpyAsync
    flops: float = -1.0
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input type")
    concrete_inputs: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Concrete Inputs")  # is_causal (flops.py)
    name: Union[str, None] = None  # M events: process_name / thread_name


class Event(msgspec.Struct, gc=False, tag_field="ph"):
    """One trace event with the fields we use. Subclasses are tagged by phase (``ph``)."""

    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = float("nan")  # absent: NaN, so an event without a timestamp is never placed at 0
    dur: float = 0.0
    args: Args = msgspec.field(default_factory=Args)


class XEvent(Event, tag="X"):
    """Complete event (ts + dur): almost everything in a Kineto trace."""


class BEvent(Event, tag="B"):
    """Begin of a duration event (paired with the next ``E`` on the same thread)."""


class EEvent(Event, tag="E"):
    """End of a duration event."""


class MEvent(Event, tag="M"):
    """Metadata: process_name, thread_name, ... (``args.name``)."""


# Phases we do not use: decoded into empty structs, which skips their fields cheaply.
_SKIPPED_PHASES = "iIsftCbenSTpFPNODRcVv"
_SKIPPED = tuple(msgspec.defstruct(f"Skipped_{ph}", [], gc=False, tag_field="ph", tag=ph)
                 for ph in _SKIPPED_PHASES)
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


_FILE_DECODER = msgspec.json.Decoder(TraceFile)
_EVENTS_DECODER = msgspec.json.Decoder(list[AnyEvent])
_ANY_DECODER = msgspec.json.Decoder()


@dataclass
class Decoded:
    """Result of decoding one file."""

    events: list[Any]  # XEvent, BEvent, EEvent, MEvent or skipped-phase structs (None: no traceEvents)
    meta: TraceFile
    truncation: Truncation | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    """Entries of the events list dropped because they are not events or have fields of wrong types."""


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


def read_trace_bytes(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, bool]:
    """Read a file, gunzipping it when it starts with the gzip magic bytes.

    Returns ``(text, stream_truncated)``. Refuses files whose (decompressed) size exceeds
    ``max_bytes`` before reading them whole, so a gzip bomb cannot exhaust memory.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(2)
            if head != GZIP_MAGIC:
                if size > max_bytes:
                    raise TraceFormatError(
                        f"{path}: file is {size} bytes, over the {max_bytes}-byte limit "
                        "(raise max_bytes to load it)")
                fh.seek(0)
                return fh.read(), False
            fh.seek(0)
            return _gunzip_bounded(fh, path, max_bytes)
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read: {exc}") from exc


def _gunzip_bounded(fh: Any, path: Path, max_bytes: int) -> tuple[bytes, bool]:
    """Decompress all gzip members, stopping with an error past ``max_bytes`` of output.

    A complete, valid stream goes through the fast codec (isal when installed). Anything else (cut
    short, corrupt, over the limit) is decided by zlib, so what is salvaged and what is reported
    never depends on the codec: isal holds back the last byte of a cut stream and notices
    corruption at other points than zlib.
    """
    if _gzip_codec is not zlib:
        try:
            text, truncated = _gunzip_with(_gzip_codec, fh, path, max_bytes)
            if not truncated:
                return text, False
        except TraceFormatError:
            pass
        fh.seek(0)
    return _gunzip_with(zlib, fh, path, max_bytes)


def _gunzip_with(codec: Any, fh: Any, path: Path, max_bytes: int) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    total = 0
    decomp = codec.decompressobj(wbits=31)
    truncated = False
    while True:
        chunk = fh.read(_READ_CHUNK)
        if not chunk:
            truncated = not decomp.eof
            if truncated and total == 0:
                raise TraceFormatError(f"{path}: corrupt or truncated gzip data: nothing decompresses")
            break
        data = chunk
        while data:
            try:
                out = decomp.decompress(data, max(1, max_bytes + 1 - total))
            except codec.error as exc:
                if total:
                    return b"".join(parts), True  # corrupt tail: salvage what decompressed
                raise TraceFormatError(f"{path}: corrupt gzip data: {exc}") from exc
            parts.append(out)
            total += len(out)
            if total > max_bytes:
                raise TraceFormatError(
                    f"{path}: decompresses to more than the {max_bytes}-byte limit "
                    "(a gzip bomb, or a trace too large: raise max_bytes to load it)")
            if decomp.unconsumed_tail:
                data = decomp.unconsumed_tail
            elif decomp.eof:
                data = decomp.unused_data
                if data and data[:2] == GZIP_MAGIC:
                    decomp = codec.decompressobj(wbits=31)
                else:
                    data = b""
            else:
                data = b""
    return b"".join(parts), truncated


def decode_trace(text: bytes, path: Path, stream_truncated: bool = False, *, compressed: bool = False
                 ) -> Decoded:
    """Decode trace text into typed events, repairing or salvaging where possible.

    Raises :class:`TraceFormatError` when the text is not a trace: not JSON, a JSON object without
    a ``traceEvents`` list, or a JSON value that is neither an object nor an array. (A trace whose
    events are all unusable is refused later, by :func:`.build.build_rank`.)
    """
    decoded = _decode_any(text, path, stream_truncated, compressed)
    if decoded.events is None:
        raise TraceFormatError(f"{path}: no traceEvents list: a JSON object, but not a Chrome/Kineto trace")
    return decoded


def _decode_any(text: bytes, path: Path, stream_truncated: bool, compressed: bool) -> Decoded:
    start = _content_start(text)
    if start == len(text):
        raise TraceFormatError(f"{path}: empty file{' (after decompression)' if compressed else ''}")
    if text[start:start + 1] not in (b"{", b"["):
        what = "the decompressed data" if compressed else "the data"
        raise TraceFormatError(f"{path}: not JSON, so not a trace ({what} does not start with '{{' or '[')")
    warnings: list[str] = []
    with gc_paused():
        try:
            return _decode_typed(text, warnings)
        except msgspec.ValidationError as exc:
            return _decode_tolerant(text, path, f"{exc}", warnings)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            first_error = exc
        for repair_name, repair in _REPAIRS:
            repaired = repair(text)
            if repaired == text:
                continue
            text = repaired
            try:
                decoded = _decode_typed(text, warnings)
                decoded.warnings.append(f"repaired: {repair_name}")
                return decoded
            except msgspec.ValidationError as exc:
                return _decode_tolerant(text, path, f"{exc}", warnings)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                first_error = exc
        if isinstance(first_error, RecursionError):
            raise TraceFormatError(f"{path}: JSON nested too deeply") from None
        salvaged = _salvage(text, path, warnings, stream_truncated)
        if salvaged is not None:
            return salvaged
        raise TraceFormatError(f"{path}: not valid JSON: {first_error}") from None


def _content_start(text: bytes) -> int:
    """Offset of the first non-whitespace byte (``len(text)`` if none); no copy, unlike ``lstrip``."""
    return _LEADING_SPACE.match(text).end()


def _decode_typed(text: bytes, warnings: list[str]) -> Decoded:
    start = _content_start(text)
    if text[start:start + 1] == b"[":
        return Decoded(_EVENTS_DECODER.decode(text), TraceFile(), warnings=warnings)
    meta = _FILE_DECODER.decode(text)
    events = meta.traceEvents
    meta.traceEvents = []
    return Decoded(events, meta, warnings=warnings)  # events None: no traceEvents key


def _decode_tolerant(text: bytes, path: Path, reason: str, warnings: list[str]) -> Decoded:
    """Slow path: untyped decode, then convert event by event, skipping those of wrong types."""
    try:
        raw = _ANY_DECODER.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TraceFormatError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(raw, list):
        raw_events, top = raw, {}
    elif isinstance(raw, dict):
        raw_events, top = raw.get("traceEvents"), raw
        if not isinstance(raw_events, list):
            raise TraceFormatError(f"{path}: no traceEvents list: not a Chrome/Kineto trace")
    else:
        raise TraceFormatError(f"{path}: JSON top level is {type(raw).__name__}, not a trace")
    events: list[Event] = []
    skipped = 0
    for item in raw_events:
        event = _convert_event(item)
        if event is None:
            skipped += 1
        else:
            events.append(event)
    meta_fields = {k: v for k, v in top.items() if k != "traceEvents" and k in TraceFile.__struct_fields__}
    try:
        meta = msgspec.convert(meta_fields, TraceFile, strict=False)
    except msgspec.ValidationError:
        meta = TraceFile()
    if skipped:
        warnings.append(f"skipped {skipped} events with fields of the wrong type ({reason})")
    return Decoded(events, meta, warnings=warnings, skipped=skipped)


def _convert_event(item: Any) -> Any:
    """Convert one untyped event; drop only the ``args`` keys that have unusable types."""
    if not isinstance(item, dict):
        return None
    args = item.get("args")
    body = {k: v for k, v in item.items() if k != "args"}
    try:
        event = msgspec.convert(body, AnyEvent, strict=False)
    except (msgspec.ValidationError, TypeError, OverflowError):
        return None
    if not isinstance(event, Event):
        return event
    if args is None:
        return event
    if isinstance(args, dict):
        try:
            event.args = msgspec.convert(args, Args, strict=False)
        except (msgspec.ValidationError, TypeError, OverflowError):
            event.args = _convert_args_fieldwise(args)
    return event


_ARG_KEYS = {f.encode_name: f.name for f in msgspec.structs.fields(Args)}


def _convert_args_fieldwise(args: dict) -> Args:
    out = Args()
    for key, attr in _ARG_KEYS.items():
        if key not in args:
            continue
        try:
            setattr(out, attr, getattr(msgspec.convert({key: args[key]}, Args, strict=False), attr))
        except (msgspec.ValidationError, TypeError, OverflowError):
            pass
    return out


# Repairs for known Kineto/TB quirks (metrics.md §4.3), tried in this order.
_CONTROL_TABLE = bytes(b if b >= 32 else 32 for b in range(256))
_NA = re.compile(rb"(:\s*)N/A\b")
_TRAILING_COMMA = re.compile(rb",(\s*[\]}])")


def _fix_utf8(text: bytes) -> bytes:
    try:
        text.decode("utf-8")
        return text
    except UnicodeDecodeError:
        return text.decode("utf-8", errors="replace").encode("utf-8")


def _fix_control(text: bytes) -> bytes:
    return text.translate(_CONTROL_TABLE)


def _fix_na(text: bytes) -> bytes:
    return _NA.sub(rb'\1"N/A"', text)


def _fix_trailing_commas(text: bytes) -> bytes:
    return _TRAILING_COMMA.sub(rb"\1", text)


_REPAIRS = (
    ("invalid UTF-8 replaced", _fix_utf8),
    ("control characters in strings", _fix_control),
    ("bare N/A quoted", _fix_na),
    ("trailing commas removed", _fix_trailing_commas),
)


def _events_array_start(text: bytes) -> tuple[int, bytes] | None:
    """Position just after the ``[`` that opens the events array, and the closing suffix."""
    offset = _content_start(text)
    if text[offset:offset + 1] == b"[":
        return offset + 1, b"]"
    key = text.find(b'"traceEvents"')
    if key < 0:
        return None
    bracket = text.find(b"[", key)
    if bracket < 0:
        return None
    return bracket + 1, b"]}"


def _salvage(text: bytes, path: Path, warnings: list[str], stream_truncated: bool) -> Decoded | None:
    """Recover every complete event of a file cut short (a killed job's ``.tmp`` file).

    Tries cut points at event boundaries (a ``}`` followed by ``,``/``]``/end), from the end
    backwards, closing the array and object after each; at most a few dozen attempts.
    """
    start = _events_array_start(text)
    if start is None:
        return None
    body_start, suffix = start
    pos = len(text)
    attempts = 0
    while attempts < _MAX_SALVAGE_ATTEMPTS:
        pos = text.rfind(b"}", body_start, pos)
        if pos < 0:
            break
        nxt = text[pos + 1: pos + 64].lstrip()
        if nxt[:1] not in (b",", b"]", b""):
            continue
        attempts += 1
        candidate = text[: pos + 1] + suffix
        try:
            decoded = _decode_typed(candidate, warnings)
        except msgspec.ValidationError:
            try:
                decoded = _decode_tolerant(candidate, path, "salvage", warnings)
            except TraceFormatError:
                continue
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            continue
        decoded.truncation = Truncation(
            bytes_total=len(text), bytes_used=pos + 1, events_kept=len(decoded.events),
            reason="gzip stream cut short" if stream_truncated else "JSON cut short")
        return decoded
    # Nothing complete after the array opened: an empty, truncated trace.
    try:
        decoded = _decode_typed(text[:body_start] + suffix, warnings)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return None
    decoded.truncation = Truncation(len(text), body_start, 0, "cut before the first complete event")
    return decoded
