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


@pytest.fixture
def tab(qtbot):
    """A shown Trace tab, shut down after the test (the tests of the other tabs define their own)."""
    from gpuperf_gui.views.trace.tab import TraceTab

    widget = TraceTab(None)
    qtbot.addWidget(widget)
    widget.resize(1600, 1000)
    widget.show()
    qtbot.waitExposed(widget)
    yield widget
    widget.shutdown()
