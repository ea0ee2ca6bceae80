"""Reading a trace file: regular files only, gzip by magic bytes, in bounded chunks (its readers
check the memory budget after each: a gzip bomb is refused while it is read). One pass, one codec:
python-isal when installed, else zlib.

>>> chunks = list(TraceStream(Path("rank0.json.gz")))  # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ...regular_files import UnusableStateFile, open_regular
from ..model.trace_model import TraceFormatError

try:  # python-isal ("isal" on PyPI): zlib's API, decompresses about 2.5x faster; optional
    from isal import isal_zlib as _gzip_codec
except ImportError:  # pragma: no cover - depends on the installation
    _gzip_codec = zlib

GZIP_MAGIC = b"\x1f\x8b"
READ_CHUNK_BYTES = 1 << 20
"""Compressed (or plain) bytes read per step."""
OUT_CHUNK_BYTES = 8 << 20
"""Most decompressed bytes produced per step: a 1 MB chunk of a bomb never expands at once."""
_FIRST_NON_SPACE = re.compile(rb"[^ \t\r\n]")


def open_regular_file(path: Path) -> BinaryIO:
    """Open ``path`` for reading if it is a regular file (:func:`...regular_files.open_regular`: a
    named pipe cannot block the open); refuse anything else at once."""
    try:
        return open_regular(path, max_bytes=None)
    except UnusableStateFile as exc:
        raise TraceFormatError(f"{path}: {exc.strerror}: only trace files are read") from None
    except OSError as exc:
        if os.path.islink(path) and not os.path.exists(path):
            raise TraceFormatError(f"{path}: a link to {os.readlink(path)}, which does not exist") from None
        raise TraceFormatError(f"{path}: cannot open: {exc.strerror or exc}") from None


class EventCounter:
    """Counts the events in JSON text fed in chunks, before any of it is decoded.

    An event is an object with a ``"ph"`` key; half the ``{`` count bounds events written without
    that spelling (every event is an object, and Kineto gives each an ``args`` object too).
    """

    def __init__(self) -> None:
        self.ph_keys = 0
        self.braces = 0
        self._tail = b""

    def feed(self, data: bytes | bytearray) -> None:
        self.ph_keys += data.count(b'"ph"') + (self._tail + data[:3]).count(b'"ph"')
        self.braces += data.count(b"{")
        self._tail = (self._tail + bytes(data[-3:]))[-3:]  # a key may span several tiny chunks

    @property
    def events(self) -> int:
        return max(self.ph_keys, self.braces // 2)


class TraceStream:
    """The decompressed text of one regular file, in chunks of at most :data:`OUT_CHUNK_BYTES`.

    A plain file's chunks are new bytearrays, the caller's to keep and change (the streamed decode
    takes a small file's one chunk as its buffer, without a copy). Data that does not start like JSON
    is refused at its first byte, and text over ``max_bytes`` (decompressed) as soon as it is read.
    After iteration: ``compressed`` (gzip by magic) and ``stream_error``: why a gzip stream ended early
    or broke ("" when it did not; what came before the damage was yielded).
    """

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.text_bytes = 0  # the (decompressed) text read so far
        self._fh = open_regular_file(path)
        self.file_bytes = os.fstat(self._fh.fileno()).st_size
        self.compressed = self._fh.read(2) == GZIP_MAGIC
        self._fh.seek(0)
        self.stream_error = ""

    def __enter__(self) -> TraceStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def __iter__(self) -> Iterator[bytes]:
        if not self.compressed:
            self._check_max(self.file_bytes)
        started = False
        try:
            chunks = (self._gunzip() if self.compressed
                      else iter(lambda: self._read_owned(self.read_size()), b""))
            for chunk in chunks:
                started = started or self._check_json_start(chunk)
                self._count(len(chunk))
                yield chunk
        except OSError as exc:
            raise TraceFormatError(f"{self.path}: cannot read: {exc.strerror or exc}") from None

    def _check_json_start(self, chunk: bytes) -> bool:
        """True once the first non-whitespace byte is seen (and it opens a JSON object or array)."""
        m = _FIRST_NON_SPACE.search(chunk)  # (lstrip would copy the whole chunk)
        if m is None:
            return False
        if m.group() not in (b"{", b"["):
            what = "the decompressed data" if self.compressed else "the data"
            raise TraceFormatError(f"{self.path}: not JSON, so not a trace ({what} does not start with "
                                   "'{' or '[')")
        return True

    def _count(self, n: int) -> None:
        self.text_bytes += n
        self._check_max(self.text_bytes)

    def _check_max(self, size: int) -> None:
        if self.max_bytes is None or size <= self.max_bytes:
            return
        if self.compressed:
            raise TraceFormatError(f"{self.path}: decompresses to more than the {self.max_bytes}-byte limit "
                                   "(a gzip bomb, or a trace too large: raise max_bytes to load it)")
        raise TraceFormatError(f"{self.path}: file is {size} bytes, over the {self.max_bytes}-byte limit "
                               "(raise max_bytes to load it)")

    def read_size(self) -> int:
        """Bytes to read next from a plain file: :data:`OUT_CHUNK_BYTES`, or what is left of it and one
        more, to see its end, when that is less (1: read to the size it had when opened): a small rank
        file is not given (and made to zero) a chunk-sized buffer."""
        try:
            left = self.file_bytes - self._fh.tell()
        except OSError:
            return OUT_CHUNK_BYTES
        return max(1, min(OUT_CHUNK_BYTES, left + 1))

    def _read_owned(self, size: int) -> bytearray:
        """Up to ``size`` bytes of a plain file, in a new bytearray (empty at the end)."""
        buf = bytearray(size)
        n = self._fh.readinto(buf) or 0
        del buf[n:]
        return buf

    def readinto(self, view: memoryview) -> int:
        """Read the next bytes of a plain (not compressed) file into ``view``; 0 at its end. Reads
        go on where iteration stopped, so a reader may take over between two chunks."""
        try:
            n = self._fh.readinto(view)
        except OSError as exc:
            raise TraceFormatError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        self._count(n)
        return n

    def _gunzip(self) -> Iterator[bytes]:
        decomp: Any = _gzip_codec.decompressobj(wbits=31)
        while chunk := self._fh.read(READ_CHUNK_BYTES):
            data = chunk
            while data:
                try:
                    out = decomp.decompress(data, OUT_CHUNK_BYTES)
                except _gzip_codec.error as exc:
                    if not self.text_bytes:  # (counted by __iter__ as each chunk goes out)
                        raise TraceFormatError(f"{self.path}: corrupt gzip data: {exc}") from None
                    self.stream_error = f"corrupt gzip data: {exc}"
                    return  # keep what decompressed before the damage
                if out:
                    yield out
                if decomp.unconsumed_tail:
                    data = decomp.unconsumed_tail
                elif decomp.eof:
                    data = decomp.unused_data
                    if data[:2] == GZIP_MAGIC:  # another gzip member follows
                        decomp = _gzip_codec.decompressobj(wbits=31)
                    else:
                        data = b""  # trailing bytes after the last member are ignored, as gzip does
                else:
                    data = b""
        if not decomp.eof:
            if not self.text_bytes:
                raise TraceFormatError(f"{self.path}: corrupt or truncated gzip data: nothing decompresses")
            self.stream_error = "gzip stream cut short"


def text_size_hint(path: Path) -> int:
    """Bytes of JSON text a file probably holds (a gzip member records its size modulo 4 GiB; a
    recorded size below the compressed one is taken as 10x the compressed size)."""
    try:
        with open_regular(path, max_bytes=None) as fh:  # a pipe is refused when it is opened, later
            size = os.fstat(fh.fileno()).st_size
            if fh.read(2) != GZIP_MAGIC or size < 18:
                return size
            fh.seek(-4, os.SEEK_END)
            recorded = int.from_bytes(fh.read(4), "little")
    except OSError:
        return 0
    return recorded if recorded >= size else 10 * size
