"""File ▸ Profile a script… started from the Roofline tab, from the real window (offscreen), for
docs/profile-a-script.md.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/profile_states.py OUT_FOLDER

Profiles tests/data/scripts/train_tiny.py on the CPU (3 steps after 2 timed without the profiler)
and writes profile_progress.png (the Roofline tab, the script's progress and Stop in the status
bar) and profile_opened.png (its trace opened on the Trace tab's Timeline, the banner saying what
was recorded).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gpuperf-shots-"))
os.environ.setdefault("GPUPERF_DATA_DIR", tempfile.mkdtemp(prefix="gpuperf-shots-data-"))
SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "data" / "scripts" / "train_tiny.py"


def main(out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.core.profile_script import ProfileProgress, ProfileRequest
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppContext(device_id="h200"))
    window.resize(WINDOW_SIZE)
    window.show()
    window.show_tab("roofline")
    runner = window.trace_tab.profiler
    folder = Path(tempfile.mkdtemp(prefix="gpuperf-profile-shot-"))
    progress: list[int] = []
    runner.task.item_produced.connect(
        lambda item: progress.append(item.recorded) if isinstance(item, ProfileProgress) else None)
    # a slow step (--forever sleeps 20 ms a step) so the progress can be seen; 3 steps are asked for
    runner.run(ProfileRequest(script=str(SCRIPT), out=str(folder / "train_tiny.pt.trace.json.gz"),
                              args=["--forever"], steps=3, wait=2, warmup=1, device="cpu"))

    def wait(until, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while not until() and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.01)

    def shot(name: str) -> None:
        for _ in range(3):
            app.processEvents()
            time.sleep(0.03)
        if not window.grab().save(str(Path(out) / name), "PNG"):
            raise OSError(f"could not write {Path(out) / name}")

    wait(lambda: any(progress))
    shot("profile_progress.png")
    wait(lambda: runner.result is not None and not window.is_busy())
    shot("profile_opened.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
