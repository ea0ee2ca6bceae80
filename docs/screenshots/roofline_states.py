"""The Roofline tab's states with a trace's kernels, from the real window (offscreen), for the README.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/roofline_states.py OUT_FOLDER

Opens the shipped demo trace (an H200 run), clicks "Show on roofline" and writes:
roofline_trace_points.png (its kernels on the h200 roof), roofline_trace_hidden.png (the toolbar moved
to the A100: the kernels leave the plot and the status says so), roofline_trace_measured_on.png (on
request, drawn hollow as "measured on h200" and judged against the A100 roof) and
roofline_export_failed.png (an export to a folder that does not exist, reported under the buttons).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gpuperf-shots-"))
os.environ.setdefault("GPUPERF_DATA_DIR", tempfile.mkdtemp(prefix="gpuperf-shots-data-"))


def main(out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppContext(device_id="h200"))
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    window.resize(WINDOW_SIZE)
    window.show()
    demo = Path(str(resources.files("gpuperf_gui.resources") / "demo" / "healthy_gpt_small.json.gz"))
    window.open_traces([demo], remember=False)
    deadline = time.monotonic() + 120
    while window.is_busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    window.trace_tab.roofline_button.click()
    tab = window.roofline_tab

    def shot(name: str) -> None:
        for _ in range(5):
            app.processEvents()
            time.sleep(0.05)
        if not window.grab().save(str(Path(out) / name), "PNG"):
            raise OSError(f"could not write {Path(out) / name}")

    shot("roofline_trace_points.png")
    window.device_combo.setCurrentIndex(window.device_combo.findData("a100-sxm-80gb"))
    shot("roofline_trace_hidden.png")
    tab.foreign_box.setChecked(True)
    shot("roofline_trace_measured_on.png")
    tab.foreign_box.setChecked(False)
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    tab.export_to("png", Path("/nonexistent-folder/roofline.png"))
    shot("roofline_export_failed.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
