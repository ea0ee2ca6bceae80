"""The window's first paint waits for neither the trace engine nor the tabs it does not show: the
shown tab is built with the window, the others one per turn of the event loop after it; a tab asked
for sooner (a menu, ``show_tab``, ``tab_by_key``) is built then."""
from __future__ import annotations

import subprocess
import sys

import pytest

ENGINE = ("cluster", "api", "analysis", "build", "load", "optable", "stream_decode", "decode")

PROBE = f"""
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.main_window import MainWindow
window = MainWindow(AppContext())
engine = [m for m in {ENGINE!r} if "gpuperf_gui.core.trace." + m in sys.modules]
print("built", sorted(window._built), "engine", engine, "trace_tab", "gpuperf_gui.views.trace.tab" in sys.modules)
window.show()
QTimer.singleShot(2000, app.quit)
app.exec()
print("later", sorted(window._built), "engine", "gpuperf_gui.core.trace.engine.api" in sys.modules)
window.close()
"""


@pytest.mark.slow
def test_first_paint_imports_no_engine_and_builds_the_rest_after(tmp_path) -> None:  # noqa: ANN001
    env = {"QT_QPA_PLATFORM": "offscreen", "GPUPERF_DATA_DIR": str(tmp_path), "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    first, later = [line for line in out.stdout.splitlines() if line.startswith(("built", "later"))]
    assert first == "built ['roofline'] engine [] trace_tab False"
    assert later == "later ['bench', 'mfu', 'roofline', 'trace'] engine True"


def test_a_tab_asked_for_is_built_in_its_place(make_main_window) -> None:  # noqa: ANN001
    window = make_main_window()
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    bench = window.tab_by_key["bench"]          # before any deferred build: built now
    assert window.tabs.indexOf(bench) == titles.index("Benchmarks") and window.current_tab_key() == "roofline"
    window.tabs.setCurrentIndex(titles.index("MFU"))   # a click on a tab not built yet
    assert window.current_tab_key() == "mfu" and window.tabs.currentWidget() is window.mfu_tab
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == titles
