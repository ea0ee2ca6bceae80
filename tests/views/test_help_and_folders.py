"""Help ▸ Keyboard shortcuts (on ``?``) and How to read a trace; file dialogs open in the folder
used last (pytest-qt, offscreen)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from gpuperf_gui.views import help_pages, settings_store


def _menu_texts(window, title: str) -> list[str]:
    menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == title)
    return [a.text().replace("&", "") for a in menu.actions()]


def test_help_has_a_shortcut_sheet_and_a_reading_guide(make_main_window, qtbot):
    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    assert {"Keyboard shortcuts", "How to read a trace"} <= set(_menu_texts(window, "Help"))
    from PySide6.QtGui import QAction, QKeySequence

    # offscreen Qt has no active window to route a key press to a shortcut: trigger the action bound to "?"
    action = next(a for a in window.findChildren(QAction) if a.shortcut() == QKeySequence("?"))
    action.trigger()
    qtbot.waitUntil(lambda: getattr(window, "help_dialog", None) is not None and window.help_dialog.isVisible())
    text = window.help_dialog.findChild(help_pages.QTextBrowser).toPlainText()
    for keys in ("W / S", "A / D", "F5", "PgDown", "Shift+wheel"):
        assert keys in text, keys
    window.help_dialog.close()
    window.show_how_to_read()
    text = window.help_dialog.findChild(help_pages.QTextBrowser).toPlainText()
    from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY   # the page's labels and hints are the registry's
    for name in help_pages.GAP_SIGNATURES + ("memory_bound",):
        assert REGISTRY[name].label in text and REGISTRY[name].hint in text, name


def test_the_sheet_lists_every_key_the_timeline_and_presentation_handle():
    import inspect

    from gpuperf_gui.views import presentation
    from gpuperf_gui.views.trace import tab as trace_tab, timeline as trace_timeline

    sheet = " ".join(keys for _, keys, _ in help_pages.SHORTCUTS)
    handled = {"W": trace_timeline, "S": trace_timeline, "A": trace_timeline, "D": trace_timeline,
               "F": trace_tab, "PageDown": presentation, "PageUp": presentation, "Space": presentation}
    for key, module in handled.items():
        assert f"Key_{key}" in inspect.getsource(module), key   # the code still handles it
        shown = {"PageDown": "PgDown", "PageUp": "PgUp"}.get(key, key)
        assert shown in sheet, key


def test_the_open_dialog_starts_in_the_folder_used_last(make_main_window, monkeypatch, tmp_path):
    window = make_main_window()
    folder = tmp_path / "traces here"
    folder.mkdir()
    trace = folder / "t.json"
    trace.write_text('{"traceEvents": []}')
    seen: list[str] = []

    def fake_dialog(parent, caption, directory, filters):  # noqa: ANN001 - QFileDialog's signature
        seen.append(directory)
        return [str(trace)], filters

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", staticmethod(fake_dialog))
    monkeypatch.setattr(window, "open_traces", lambda paths, **kw: None)
    window._on_open_file()
    window._on_open_file()
    assert seen == ["", str(folder)]
    assert settings_store.last_folder("traces") == str(folder)
    folder_gone = tmp_path / "gone"
    settings_store.remember_folder("traces", folder_gone)    # a folder since removed: the default
    assert settings_store.last_folder("traces") == ""
    assert isinstance(Path(str(folder)), Path)
