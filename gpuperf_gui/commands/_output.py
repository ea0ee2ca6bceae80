"""Small helpers shared by the subcommands: JSON out, errors out, SI formatting."""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, TextIO

from gpuperf_gui.core.json_text import iter_json_text
from gpuperf_gui.core.units import format_si

BIDI_CONTROLS = {cp: f"<U+{cp:04X}>" for cp in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
"""Bidirectional embedding, override and isolate controls (U+202A..U+202E, U+2066..U+2069): a
kernel name holding U+202E prints the rest of the line reversed in a terminal ("Trojan Source")."""


def neutralise_bidi(text: str) -> str:
    """``text`` with every bidi control written out as ``<U+202E>`` (JSON output escapes them)."""
    return text.translate(BIDI_CONTROLS)


class _BidiSafe:
    """A text stream that writes through :func:`neutralise_bidi`; everything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text.translate(BIDI_CONTROLS))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def bidi_safe_output() -> Iterator[None]:
    """Names printed by a command (from traces) cannot reorder the terminal's text."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _BidiSafe(out), _BidiSafe(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


_JOIN_PIECES = 8192
"""Encoder pieces joined into one string at a time (a few hundred kB of text)."""
_KEEP_PIECE_CHARS = 4096
"""A piece this long (a rank's part encoded by its Dask worker) is written as it is, not joined."""


def print_json(payload: Any) -> None:
    """``print(json.dumps(payload, indent=2, allow_nan=False))``, the same bytes, with less memory:
    with ``indent`` json encodes in Python, and ``dumps`` held every piece of the text (a few bytes
    each) in one list before joining them (a 1,024-rank ``diagnose --json``, 11 MB of text: +45 MB
    at the peak). The pieces are joined as they come; nothing is written before the whole text is
    encoded (a value JSON cannot hold still fails with nothing printed). Parts already encoded
    (:class:`.json_text.EncodedJSON`, a Dask worker's rank) are spliced in as they are."""
    parts: list[str] = []
    pieces: list[str] = []
    for piece in iter_json_text(payload):
        if len(piece) >= _KEEP_PIECE_CHARS:  # a part encoded beforehand: kept, not copied
            parts += ["".join(pieces), piece]
            pieces.clear()
            continue
        pieces.append(piece)
        if len(pieces) >= _JOIN_PIECES:
            parts.append("".join(pieces))
            pieces.clear()
    parts.append("".join(pieces))
    parts.append("\n")
    for part in parts:
        sys.stdout.write(part)


def fail(message: str) -> int:
    """One line on stderr and exit status 2."""
    print(f"gpuperf: error: {message}", file=sys.stderr)
    return 2


si = format_si
