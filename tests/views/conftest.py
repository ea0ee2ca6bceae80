"""View fixtures: a main-window factory that owns creation and cleanup (STYLE.md R18)."""

from __future__ import annotations

import pytest


@pytest.fixture
def make_main_window(qtbot):
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import MainWindow

    windows = []

    def factory(**context_kwargs):
        window = MainWindow(AppContext(**context_kwargs))
        qtbot.addWidget(window)
        windows.append(window)
        return window

    yield factory
    for window in windows:
        window.close()
