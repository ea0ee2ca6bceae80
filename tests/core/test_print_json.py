"""``commands._output.print_json`` prints what ``print(json.dumps(x, indent=2, allow_nan=False))``
prints, byte for byte, while never holding the encoder's pieces in one list."""
from __future__ import annotations

import json
import math

import pytest

from gpuperf_gui.commands import _output


def test_same_bytes_as_dumps_across_many_joins(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    monkeypatch.setattr(_output, "_JOIN_PIECES", 7)  # many joins on a small payload
    payload = {"ranks": [{"rank": i, "file": f"job/rank{i:05d}.json.gz", "µs": [1.5, None, True, "é\n"],
                          "nested": {"a": [], "b": {}}} for i in range(40)], "empty": [], "x": 1e-300}
    _output.print_json(payload)
    assert capsys.readouterr().out == json.dumps(payload, indent=2, allow_nan=False) + "\n"


def test_a_nan_fails_before_anything_is_printed(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    monkeypatch.setattr(_output, "_JOIN_PIECES", 2)
    with pytest.raises(ValueError, match="Out of range float"):
        _output.print_json({"fine": list(range(50)), "bad": math.nan})
    assert capsys.readouterr().out == ""
