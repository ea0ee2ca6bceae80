"""Hostile inputs in the window (docs/robustness.md): a settings file that is a FIFO, names from a trace that
look like HTML, a run file whose points claim 1e-300 s. Each gives a note or is shown as plain
text; nothing raises in the event loop (pytest-qt fails a test on any exception there)."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import Qt, QTextDocument
from PySide6.QtWidgets import QLabel

from gpuperf_gui.core import state_files
from gpuperf_gui.core.bench.results import ResultsWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_benchmark_tab import fake_factory, fake_point, make_tab  # noqa: E402,F401 (the fixture)

HOSTILE = "<img src=file:///etc/hostname> <b>bold</b>"


def _shown(tooltip: str) -> str:
    """The text a tooltip shows: Qt reads it as rich text when it looks like it, else as is."""
    if not Qt.mightBeRichText(tooltip):
        return tooltip
    doc = QTextDocument()
    doc.setHtml(tooltip)
    return doc.toPlainText()


def test_plain_tooltip_shows_markup_as_text() -> None:
    from gpuperf_gui.views.rich_text import plain_tooltip

    for text in (HOSTILE, "<b>x</b>\nline two", "aten::mm", "a < b > c", ""):
        assert _shown(plain_tooltip(text)) == text
    assert "<img" not in plain_tooltip(HOSTILE)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_the_settings_file_is_set_aside_and_the_window_starts(make_main_window) -> None:
    """It hung the window at start (Qt opens the settings file blocking)."""
    from gpuperf_gui.views.settings_store import _settings_file

    path = _settings_file()
    assert path == Path(QSettings().fileName())  # found without opening it
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    make_main_window()  # reads its geometry from the settings: it blocked here
    assert stat.S_ISFIFO(os.stat(path.with_name(path.name + ".bad")).st_mode)  # set aside, not deleted
    assert not os.path.exists(path) or path.is_file()  # the FIFO is gone (a fresh file may be written)
    from gpuperf_gui.views.settings_store import _settings

    path.unlink(missing_ok=True)
    os.mkfifo(path)
    reports: list = []
    previous = state_files.set_reporter(reports.append)
    try:
        _settings()
    finally:
        state_files.set_reporter(previous)
    assert "a named pipe (FIFO), not a regular file; set aside as" in reports[0].message()


def _hostile_trace(tmp_path: Path) -> Path:
    from gpuperf_gui.cli import main
    from gpuperf_gui.core.trace.synthetic.synth import GEMM

    out = tmp_path / "healthy.json"
    assert main(["synth", "healthy", "--steps", "2", "-o", str(out)]) == 0
    text = out.read_text().replace(json.dumps(GEMM)[1:-1], HOSTILE.replace('"', '\\"'))
    out.write_text(text)
    return out


def test_kernel_names_that_look_like_html_show_as_text(qtbot, tab, tmp_path: Path) -> None:
    with qtbot.waitSignal(tab.trace_loaded, timeout=60_000):
        tab.open_paths([_hostile_trace(tmp_path)])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=60_000)
    tab.show_page("overview")
    table = tab.overview.kernels
    shown = [_shown(table.item(r, 0).toolTip()) for r in range(table.rowCount())]
    assert HOSTILE in shown
    assert all("<img" not in table.item(r, 0).toolTip() for r in range(table.rowCount()))


def test_the_cli_neutralises_bidi_controls_in_names(tmp_path: Path, capsys) -> None:
    from gpuperf_gui.cli import main
    from gpuperf_gui.core.trace.synthetic.synth import GEMM

    out = tmp_path / "healthy.json"
    assert main(["synth", "healthy", "--steps", "2", "-o", str(out)]) == 0
    evil = "gemm\u202eevil\u2066x\u2069"
    out.write_text(out.read_text().replace(json.dumps(GEMM)[1:-1], "gemm\\u202eevil\\u2066x\\u2069"))
    capsys.readouterr()
    assert main(["diagnose", str(out)]) == 0
    text = capsys.readouterr().out
    assert not any(ch in text for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert main(["diagnose", str(out), "--json"]) == 0
    assert evil in json.dumps(json.loads(capsys.readouterr().out), ensure_ascii=False)  # JSON keeps the name


def test_a_run_file_with_seconds_1e_300_does_not_break_the_plots(qtbot, make_tab, tmp_path: Path) -> None:
    """Rates of 1e300+ FLOP/s (or inf) raised "Cannot set range" in the plots and showed -inf%."""
    path = tmp_path / "bench" / "runs" / "20260101-000000-cpu.jsonl"
    good = [fake_point(128), fake_point(1 << 20, 1e-3, "copy")]
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cpu"})
        for point in [fake_point(8192, 1e-300), *good, fake_point(1 << 20, 1e-300, "copy")]:
            writer.write_point(point)
        writer.write("ceilings", {"device_id": "cpu", "device_name": "cpu", "method": "fake", "threads": 1,
                                  "matmul_flops_per_s": {"fp32": 1e305}, "bandwidth_bytes_per_s": 1e-300})
    tab = make_tab(fake_factory([64]), autoload_latest=True)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=5000)
    tab.resize(1600, 1000)
    tab.show()
    qtbot.waitExposed(tab)
    assert tab.table_model.rowCount() == len(good)  # the two impossible points skipped, with a note
    model = tab.table_model
    cells = [str(model.data(model.index(r, c))) for r in range(model.rowCount()) for c in range(model.columnCount())]
    labels = [label.text() for label in tab.findChildren(QLabel)]
    assert not [t for t in cells + labels if "inf" in t.lower() or "nan" in t.lower()]
    assert "3 unreadable line(s) skipped" in tab.status_label.text()  # and the impossible ceilings
    assert "EFLOP/s" not in " ".join(labels)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_the_newest_run_file_does_not_hang_the_tab(qtbot, make_tab, tmp_path: Path) -> None:
    """The tab reads the newest run at start: a FIFO there hung the window."""
    runs = tmp_path / "bench" / "runs"
    runs.mkdir(parents=True)
    os.mkfifo(runs / "20260101-000000-cpu.jsonl")
    tab = make_tab(fake_factory([64]), autoload_latest=True)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=5000)
    text = tab.status_label.text()
    assert "Could not open the latest run" in text and "a named pipe (FIFO), not a regular file" in text
