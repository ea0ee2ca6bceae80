"""The Trace tab's pages from the real window (offscreen), for the README.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/trace_pages.py OUT_FOLDER

Writes trace_overview.png (a data-starved H200 run: the step-time breakdown, top kernels and the
diagnosis), trace_compare.png (the same loop with DataLoader workers 0 -> 8, before/after),
trace_straggler.png (the synthetic four-rank job whose rank 2 is late: its lanes highlighted) and
trace_ranks.png (that job's rank x step heatmap, the late rank first), trace_range.png (a range
selected on a real two-step region: its time by category and top kernels). The Timeline page of a
trace is `gpuperf-gui --tab trace --screenshot docs/screenshots/trace.png TRACE`.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gpuperf-shots-"))

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


def _wait(app, busy) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 300
    while busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    for _ in range(30):
        app.processEvents()
        time.sleep(0.01)


def main(out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppContext(device_id="h200"))
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    window.resize(WINDOW_SIZE)
    window.show()
    tab = window.trace_tab
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)

    def shot(name: str) -> None:
        _wait(app, window.is_busy)
        window.grab().save(str(folder / name), "PNG")
        print(folder / name)

    window.open_traces([DATA / "h200" / "data_starved_loader0.json.gz"], remember=False)
    _wait(app, window.is_busy)
    window.precision_combo.setCurrentText("bf16")
    tab.show_page("overview")
    shot("trace_overview.png")

    tab.show_page("compare")
    pair = DATA / "h200" / "unprofiled"  # recorded by gpuperf profile: the speedup without the profiler too
    tab.compare.compare_paths([pair / "loader0.r0.json.gz"], [pair / "loader_fed.r0.json.gz"])
    shot("trace_compare.png")

    with tempfile.TemporaryDirectory() as tmp:
        job = write_synth_trace("straggler", Path(tmp) / "straggler_job.json.gz")
        window.open_traces([job], remember=False)
        _wait(app, window.is_busy)
        tab.show_page("timeline")
        shot("trace_straggler.png")
        tab.show_page("ranks")
        shot("trace_ranks.png")

    window.open_traces([DATA / "shared_traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"],
                       remember=False)
    _wait(app, window.is_busy)
    tab.show_page("timeline")
    a, b = tab.loaded.full_range_us
    t0, t1 = a + 0.30 * (b - a), a + 0.50 * (b - a)
    tab.timeline.view_box.selection.setRegion((t0, t1))
    tab.timeline.view_box.selection.show()
    tab._on_range_selected(t0, t1)   # as a right-drag ends
    shot("trace_range.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
