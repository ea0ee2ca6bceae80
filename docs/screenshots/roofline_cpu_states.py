"""The Roofline tab after a CPU benchmark, from the real window (offscreen), for docs/benchmarks-cpu.md.

    GPUPERF_DATA_DIR=<folder with a cpu run> .venv/bin/python docs/screenshots/roofline_cpu_states.py OUT

make.sh runs a small `gpuperf bench --device cpu` first. Writes roofline_cpu_beside_gpu.png (the
window opened on the H200: the latest run's cpu is drawn beside it at once, with its cache roofs)
and roofline_cpu_points.png (the cpu's fp32 roofs, its points in the Points table, the
cache-resident ones marked "in L2" and judged against the L2 roof).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gpuperf-shots-"))


def main(out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppContext(device_id="h200", precision="bf16"))
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    window.show_tab("roofline")
    window.resize(WINDOW_SIZE)
    window.show()
    deadline = time.monotonic() + 60
    while window.is_busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    tab = window.roofline_tab

    def shot(name: str) -> None:
        for _ in range(5):
            app.processEvents()
            time.sleep(0.05)
        if not window.grab().save(str(Path(out) / name), "PNG"):
            raise OSError(f"could not write {Path(out) / name}")

    shot("roofline_cpu_beside_gpu.png")
    window.device_combo.setCurrentIndex(window.device_combo.findData("cpu"))
    window.precision_combo.setCurrentText("fp32")
    tab.set_devices([])
    tab.set_precisions(["fp32"])
    tab.bottom_tabs.setCurrentWidget(tab.points_page)
    shot("roofline_cpu_points.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
