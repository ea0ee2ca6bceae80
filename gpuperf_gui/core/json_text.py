"""JSON text with parts encoded elsewhere: ``json.dumps(payload, indent=2, allow_nan=False)``'s bytes,
where ``payload`` may hold :class:`EncodedJSON` values encoded beforehand (by a Dask worker, next
to the rank it describes), each with holes for values filled in later (the rank's diagnosis, which
the job's verdict may change).

Why: a 1,024-rank ``gpuperf diagnose --json`` is ~25 MB of text from ~1.5 M small values; building
that tree and encoding it in Python (``indent`` turns json's C encoder off) was most of the client's
CPU after the ranks came back, and the tree most of its peak memory.

The splice is exact because ``json`` never writes a raw newline inside a string: a value encoded
at one depth becomes the same value at another once the indentation after each of its newlines
is changed by the difference (see :func:`iter_json_text`).
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Iterator, Sequence

INDENT = 2


class EncodedJSON:
    """A JSON value encoded as ``json.dumps(value, indent=2, allow_nan=False)`` would write it on a
    line indented by ``indent``: ``parts`` around ``holes``, the values written between them."""

    __slots__ = ("parts", "holes", "indent")

    def __init__(self, parts: Sequence[str], holes: Sequence[Any] = (), indent: str = "") -> None:
        if len(parts) != len(holes) + 1:
            raise ValueError("an encoded value has one part more than holes")
        self.parts, self.holes, self.indent = tuple(parts), tuple(holes), indent

    def __repr__(self) -> str:
        return f"EncodedJSON({sum(map(len, self.parts))} chars, {len(self.holes)} holes)"

    def filled(self, holes: Sequence[Any]) -> EncodedJSON:
        """The same text with these values in its holes."""
        return EncodedJSON(self.parts, holes, self.indent)


def encode(value: Any, indent: str = "") -> EncodedJSON:  # noqa: ANN401 (any JSON value)
    """``value`` encoded as on a line indented by ``indent`` (no holes)."""
    return encode_around(lambda _tokens: value, 0, indent)


def encode_around(make: Any, n_holes: int, indent: str = "") -> EncodedJSON:  # noqa: ANN401
    """``make(tokens)`` (a JSON value holding each of ``n_holes`` token strings once, in the order
    they are written) encoded as on a line indented by ``indent``, each token's place a hole (fill
    them with :meth:`EncodedJSON.filled`)."""
    tokens = [f"\x00gpuperf-hole-{uuid.uuid4().hex}\x00" for _ in range(n_holes)]
    text = json.dumps(make(tokens), indent=INDENT, allow_nan=False)
    if indent:
        text = text.replace("\n", "\n" + indent)
    parts = []
    for token in tokens:
        head, sep, text = text.partition(json.dumps(token))
        if not sep:
            raise ValueError("a hole's token is not in the encoded value, or not in order")
        parts.append(head)
    parts.append(text)
    return EncodedJSON(parts, [None] * n_holes, indent)


class _Encoder(json.JSONEncoder):
    """Writes each :class:`EncodedJSON` as a token string (a piece of its own) for the splice."""

    def __init__(self) -> None:
        super().__init__(indent=INDENT, allow_nan=False)
        self.token = f"\x00gpuperf-encoded-{uuid.uuid4().hex}\x00"
        self.quoted = json.dumps(self.token)
        self.pending: list[EncodedJSON] = []

    def default(self, o: Any) -> Any:  # noqa: ANN401 (json's hook)
        if isinstance(o, EncodedJSON):
            self.pending.append(o)
            return self.token
        return super().default(o)


def _reindented(text: str, have: str, want: str) -> str:
    """``text`` written for a line indented by ``have``, for one indented by ``want``."""
    if have == want:
        return text
    if have:
        text = text.replace("\n" + have, "\n")
    return text.replace("\n", "\n" + want) if want else text


def iter_json_text(payload: Any) -> Iterator[str]:  # noqa: ANN401 (any JSON value)
    """The pieces of ``json.dumps(payload, indent=2, allow_nan=False)``, each :class:`EncodedJSON`
    in it written as its parts and holes, indented to where it stands.

    json's encoder hands an unknown value to ``default`` and writes what comes back as one piece,
    after the piece that ends with the newline and indentation of its line (a list's separator, or
    a dict's key and ``": "`` on the line the last newline began): that indentation is where the
    value stands. A part written for that indentation is yielded as it is (no copy)."""
    encoder = _Encoder()
    quoted = encoder.quoted
    p1 = p2 = p3 = ""   # the last three pieces: the newline before a value is at most three back
    for piece in encoder.iterencode(payload):
        if piece == quoted:
            yield from _encoded_pieces(encoder.pending.pop(0), _line_indent((p3, p2, p1)))
            continue
        p3, p2, p1 = p2, p1, piece
        yield piece


def _line_indent(last: tuple[str, ...]) -> str:
    """The indentation of the line the last pieces end on: what follows the last newline in them
    (a list's separator ``",\n    "``, or a dict's ``",\n    "``, key and ``": "``); none at the top."""
    text = "".join(last)
    line = text[text.rfind("\n") + 1:] if "\n" in text else ""
    return line[:len(line) - len(line.lstrip(" "))]


def _encoded_pieces(value: EncodedJSON, indent: str) -> Iterator[str]:
    """An encoded value's parts and its holes' values for a line indented by ``indent``."""
    for i, part in enumerate(value.parts):
        part = _reindented(part, value.indent, indent)
        yield part
        if i < len(value.holes):
            line = part[part.rfind("\n") + 1:] if "\n" in part else indent  # e.g. '    "key": '
            yield _reindented("".join(iter_json_text(value.holes[i])), "", line[:len(line) - len(line.lstrip(" "))])
