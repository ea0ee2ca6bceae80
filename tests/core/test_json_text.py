"""``core/json_text.py``: a payload holding values encoded beforehand (with holes filled later)
prints exactly what ``json.dumps(plain, indent=2, allow_nan=False)`` prints for the same values
written in place (the standard library is the oracle), at any depth and indentation."""
from __future__ import annotations

import json
import math
import random

import pytest

from gpuperf_gui.commands import _output
from gpuperf_gui.core.json_text import EncodedJSON, encode, encode_around, iter_json_text

LEAVES = [0, 1, -7, 2.5, -1e-7, 1e300, "", "a\nb\"c\\", "µs é", "\u202e", None, True, False]


def _value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice(LEAVES)
    if roll < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}\n{depth}": _value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def _encoded(rng: random.Random, value: object) -> EncodedJSON:
    """``value`` encoded for a random indentation, a dict with up to two of its values as holes."""
    indent = rng.choice(["", "  ", "    ", "      "])
    if isinstance(value, dict) and value:
        keys = [k for k in value if rng.random() < 0.5][:2] or [next(iter(value))]
        enc = encode_around(lambda tokens: {k: tokens[keys.index(k)] if k in keys else v for k, v in value.items()},
                            len(keys), indent)
        return enc.filled([value[k] for k in keys])
    return encode(value, indent)


def _mixed(rng: random.Random, value: object) -> object:
    """``value`` with some of its parts replaced by their encodings."""
    if rng.random() < 0.3:
        return _encoded(rng, value)
    if isinstance(value, list):
        return [_mixed(rng, v) for v in value]
    if isinstance(value, dict):
        return {k: _mixed(rng, v) for k, v in value.items()}
    return value


def test_encoded_parts_print_as_the_values_in_place() -> None:
    rng = random.Random(24)
    for _ in range(2000):
        plain = _value(rng)
        assert "".join(iter_json_text(_mixed(rng, plain))) == json.dumps(plain, indent=2, allow_nan=False)


def test_print_json_writes_encoded_parts_as_dumps_would(capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_output, "_KEEP_PIECE_CHARS", 40)  # the parts are kept whole, not joined
    ranks = [{"rank": i, "file": f"job/rank{i}.json", "figures": [0.5 * i, None], "diagnosis": {"signature": "x"}}
             for i in range(6)]
    encoded = [encode_around(lambda t, r=r: {**r, "diagnosis": t[0]}, 1, "    ").filled([r["diagnosis"]])
               for r in ranks]
    _output.print_json({"diagnosis": {"headline": "h"}, "ranks": encoded, "load_notes": []})
    want = json.dumps({"diagnosis": {"headline": "h"}, "ranks": ranks, "load_notes": []}, indent=2, allow_nan=False)
    assert capsys.readouterr().out == want + "\n"


def test_holes_must_be_written_in_order_and_nan_is_refused() -> None:
    with pytest.raises(ValueError, match="not in order"):
        encode_around(lambda t: {"a": t[1], "b": t[0]}, 2)
    with pytest.raises(ValueError, match="Out of range float"):
        encode({"x": math.nan})
    with pytest.raises(ValueError, match="Out of range float"):
        "".join(iter_json_text([encode_around(lambda t: {"a": t[0]}, 1).filled([math.inf])]))
