"""Files made to break the C scanner or the streamed decoder (docs/robustness.md, Traces): each is read exactly as the
msgspec path reads it, or refused with one clear line and exit 2; never a SystemError, a
RecursionError or a quadratic interning.

Oracles: msgspec's typed decode of the same text (the scanner must agree with it or hand the run
back), the whole-file path's own message for deep nesting, and probe counts the scanner reports
(``_scan.stats()``), not wall time.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.ingest.scanner import _scan, scan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_scan import _decoded, _same  # noqa: E402

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
EVENT = b'{"ph":"X","cat":"kernel","name":"%s","pid":1,"tid":1,"ts":%d,"dur":2}'
MAX_PROBES = 128  # _scan.c MAX_PROBES


def _run(names: list[bytes]) -> bytes:
    return b"[" + b",".join(EVENT % (name, i) for i, name in enumerate(names)) + b"]"


def test_invalid_utf8_in_two_kept_strings_is_handed_to_msgspec(monkeypatch) -> None:
    """It raised SystemError: the second key list was built with the first one's error pending."""
    text = b'[{"ph":"X","cat":"k\xff","name":"n\xfe","pid":"p\xfd","tid":1,"ts":1,"dur":2}]'
    assert _scan.scan(text, len(text)) is None
    assert not _same(text, monkeypatch)


@pytest.mark.parametrize("use_scanner", [True, False])
def test_a_trace_with_invalid_utf8_names_diagnoses_as_without_the_scanner(capsys, monkeypatch, use_scanner) -> None:
    monkeypatch.setattr(scan, "ENABLED", use_scanner)
    code = main(["diagnose", str(HOSTILE / "invalid_utf8_two_kept_strings.json"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    monkeypatch.setattr(scan, "ENABLED", not use_scanner)
    assert main(["diagnose", str(HOSTILE / "invalid_utf8_two_kept_strings.json"), "--json"]) == 0
    assert capsys.readouterr().out == out


@pytest.mark.parametrize("name", ["args_nested_1000_deep.json", "metadata_nested_1000_deep.json"])
@pytest.mark.parametrize("use_scanner", [True, False])
def test_a_value_nested_1000_deep_is_one_line_and_exit_2(capsys, monkeypatch, name, use_scanner) -> None:
    """The streamed decoder raised RecursionError (rc 1) where the whole-file path says this."""
    monkeypatch.setattr(scan, "ENABLED", use_scanner)
    assert main(["diagnose", str(HOSTILE / name)]) == 2
    err = capsys.readouterr().err
    assert err == f"gpuperf: error: {HOSTILE / name}: JSON nested too deeply to be a trace\n"


def _colliding_names(n: int, bits: int) -> list[bytes]:
    """``n`` names whose keyed hashes (this process's key) agree in their low ``bits``: they all
    land on one slot of any table of up to 2**bits slots."""
    mask, names, i = (1 << bits) - 1, [], 0
    target = _scan._hash(b"n0") & mask
    while len(names) < n:
        name = b"n%d" % i
        if _scan._hash(name) & mask == target:
            names.append(name)
        i += 1
    return names


def test_names_crafted_to_collide_hand_the_run_to_msgspec(monkeypatch) -> None:
    """Before the probe cap, these made every insert walk the whole cluster (quadratic: 40k crafted
    names 2.65 s against 0.05 s random); now the lookup that passes the cap gives the run back."""
    names = _colliding_names(2 * MAX_PROBES, bits=10)   # 256 names + "kernel" fit a 1024-slot table
    text = _run(names)
    _scan._reset_stats()
    assert _scan.scan(text, len(text)) is None
    fallbacks, longest = _scan.stats()
    assert fallbacks == 1 and longest <= MAX_PROBES
    entries, _, state = _decoded(text, True, monkeypatch)  # msgspec reads it: nothing lost
    assert entries == len(names) and all(name.decode() in state for name in names)


def test_fewer_collisions_than_the_cap_are_still_scanned(monkeypatch) -> None:
    text = _run(_colliding_names(MAX_PROBES // 2, bits=10))
    _scan._reset_stats()
    assert _same(text, monkeypatch)
    assert _scan.stats()[0] == 0


def test_random_names_probe_a_few_slots() -> None:
    text = _run([b"aten::op_%d" % i for i in range(20_000)])
    _scan._reset_stats()
    assert _scan.scan(text, len(text)) is not None
    fallbacks, longest = _scan.stats()
    assert fallbacks == 0 and longest < 48  # linear probing at load <= 1/2: runs of 48 ~ 1e-4 per table


def test_the_hash_key_differs_between_processes() -> None:
    """Names crafted against one process's hash do not collide in the next one's."""
    code = "from gpuperf_gui.core.trace.ingest.scanner import _scan; print(_scan._hash(b'aten::mm'))"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
            for _ in range(3)}
    assert len(seen) == 3
