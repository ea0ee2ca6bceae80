"""A machine without a C compiler gets the same results: the C scanner (``_scan.c``), the op
table's one-pass nesting (``_nest.c``) and the what-if's replay (``_replay.c``) are optional.

Where the extensions are not built, ``scan._scan`` is None and msgspec decodes every run, and
``nest._nest`` is None and the op table nests with numpy. Here that
machine is made two ways: in this process (``scan._scan`` set None, the switch left on, as a test
that forces the scanner on would leave it), and in a fresh interpreter in which the extension's import
fails, as it does when ``setup.py`` found no compiler. ``gpuperf diagnose --json`` must print the
same bytes there as here, with the scanner (the oracle is the scanner-built path, which
tests/core/test_scan.py checks against msgspec itself).
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf_gui import cli
from gpuperf_gui.core.trace.ingest.scanner import scan
from gpuperf_gui.core.trace.ingest.load import load_rank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stream_decode import fingerprint  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "h200" / "eager_small.json.gz"

# A fresh interpreter in which `import gpuperf_gui.core.trace.ingest.scanner._scan`, `._nest` and `._replay` fail (None in
# sys.modules makes the import raise ImportError), then the CLI.
_WITHOUT_EXTENSION = """
import sys
sys.modules["gpuperf_gui.core.trace.ingest.scanner._scan"] = None
sys.modules["gpuperf_gui.core.trace.model.nesting._nest"] = None
sys.modules["gpuperf_gui.core.trace.analysis._replay"] = None
from gpuperf_gui.core.trace.analysis import critical_path
assert critical_path._replay is None, "the replay extension was imported"
from gpuperf_gui.core.trace.model.nesting import nest
from gpuperf_gui.core.trace.ingest.scanner import scan
assert scan._scan is None and not scan.ENABLED, "the extension was imported"
assert nest._nest is None, "the nesting extension was imported"
from gpuperf_gui import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def _diagnose_here(path: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["diagnose", "--json", str(path)]) == 0
    return out.getvalue()


def test_a_load_with_the_extension_missing_is_the_load_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with_it = load_rank(TRACE)
    monkeypatch.setattr(scan, "_scan", None)  # ENABLED stays True: scan_run must hand every run back
    assert scan.scan_run(bytearray(b"[]"), 2) is None
    without = load_rank(TRACE)
    assert without.n_events == with_it.n_events > 0
    assert fingerprint(without) == fingerprint(with_it)  # every lane's every column, strings, flows


def test_diagnose_prints_the_same_bytes_in_an_interpreter_without_the_extension() -> None:
    expected = _diagnose_here(TRACE)
    done = subprocess.run([sys.executable, "-c", _WITHOUT_EXTENSION, "diagnose", "--json", str(TRACE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)  # a diagnosis, not an error message
    assert done.stdout == expected
