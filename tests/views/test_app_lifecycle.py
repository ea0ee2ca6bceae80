"""The app's life: `gpuperf-gui --screenshot PNG TRACE` draws the trace, and closing the main window
mid-load or mid-benchmark stops the work (no thread, no helper process left) and keeps what was measured."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PySide6.QtGui import QImage

from gpuperf_gui.core.bench.results import read_run
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

TRACE = Path(__file__).resolve().parents[1] / "data" / "shared_traces" / "h200" / "launch_bound_tiny.json.gz"
# The timeline's lane area of the 1600×1000 window (below the time axis, left of the diagnosis panel)
LANES = (slice(210, 495), slice(215, 1220))


def _run_app(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "gpuperf_gui", *args], env=env, capture_output=True,
                          text=True, timeout=180)


def _rgb(path: Path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGBA8888)
    assert (image.width(), image.height()) == (1600, 1000)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : 4 * image.width()].reshape(image.height(), image.width(), 4)[..., :3].astype(int)


def _coloured_fraction(rgb: np.ndarray) -> float:
    """Share of pixels with a colour (channel spread > 30): lanes are coloured, text and panels grey."""
    return float((rgb.max(axis=-1) - rgb.min(axis=-1) > 30).mean())


def test_screenshot_with_a_trace_draws_its_lanes(qapp, tmp_path: Path) -> None:
    with_trace, empty = tmp_path / "trace.png", tmp_path / "empty.png"
    proc = _run_app(tmp_path, "--tab", "trace", "--screenshot", str(with_trace), str(TRACE))
    assert proc.returncode == 0, proc.stderr
    assert _run_app(tmp_path, "--tab", "trace", "--screenshot", str(empty)).returncode == 0
    lanes, no_lanes = _rgb(with_trace)[LANES], _rgb(empty)[LANES]
    assert _coloured_fraction(no_lanes) < 0.01  # the empty tab: "Drop a torch.profiler trace here"
    assert _coloured_fraction(lanes) > 0.1  # CPU ops, launches and kernels drawn (0.29 measured)
    assert len(np.unique(lanes.reshape(-1, 3), axis=0)) > 200
    # the lanes fill the rows: the top of the area (CPU thread) and its bottom (the GPU stream)
    assert _coloured_fraction(lanes[:60]) > 0.1 and _coloured_fraction(lanes[-30:]) > 0.02


def _child_pids() -> set[int]:
    """Live processes whose parent is this one (the helper interpreters), zombies included; not
    multiprocessing's resource tracker, which its first spawned process starts and which lives as
    long as this process (one per process, not per helper: docs/helper-process.md)."""
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            tracker = b"multiprocessing.resource_tracker" in (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == me and not tracker:
            found.add(int(entry.name))
    return found


def _assert_gone(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"helper process {pid} still exists (running or not reaped)")


def test_closing_the_window_while_a_big_trace_loads(make_main_window, qtbot, tmp_path: Path) -> None:
    big = write_synth_trace("launch_bound", tmp_path / "big.json", steps=300)  # ~50 MB, seconds to load
    window = make_main_window()
    window.show()
    before = _child_pids()
    window.open_traces([big])
    tab = window.trace_tab
    qtbot.waitUntil(lambda: bool(_child_pids() - before), timeout=20_000)  # the loading helper started
    helpers = _child_pids() - before
    thread = tab.task._thread  # noqa: SLF001 - the worker's QThread, to see it end
    assert thread is not None and thread.isRunning() and window.is_busy()
    t0 = time.monotonic()
    window.close()  # closeEvent: every tab's shutdown()
    assert time.monotonic() - t0 < 5.0
    assert thread.isFinished() and not tab.task.is_running()
    _assert_gone(helpers)
    assert tab.loaded is None  # nothing half-loaded was shown
    qtbot.wait(100)  # late queued signals of the stopped task land on a closed window: no error


def test_closing_the_window_mid_benchmark_keeps_the_points_on_disk(make_main_window, qtbot, monkeypatch,
                                                                  tmp_path: Path) -> None:
    """A real CPU run (torch in the helper process) with a small plan, closed after two points."""
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    window = make_main_window(device_id="cpu")
    tab = window.bench_tab
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=10_000)  # the empty results folder is read
    window.show_tab("bench")
    tab.device_combo.setCurrentText("cpu")
    tab.suite_combo.setCurrentText("custom")
    for dtype, box in tab.dtype_boxes.items():
        box.setChecked(dtype == "fp32")
    sizes = [64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512]
    tab.sizes_edit.setText(",".join(map(str, sizes)))
    before = _child_pids()
    assert tab.start()
    qtbot.waitUntil(lambda: len(tab.current_points) >= 2, timeout=120_000)
    helpers = _child_pids() - before
    thread = tab.task._thread  # noqa: SLF001
    assert helpers and thread is not None and thread.isRunning()
    shown = [p.size for p in tab.current_points]
    run_path = tab._run_path  # noqa: SLF001 - the run's JSON-lines file
    t0 = time.monotonic()
    window.close()
    assert time.monotonic() - t0 < 10.0  # the point in progress (<= 5 s grace), then the helper goes
    assert thread.isFinished() and not tab.task.is_running()
    _assert_gone(helpers)
    assert run_path is not None and run_path.parent == tmp_path / "data" / "bench" / "runs"
    saved = [p.size for p in read_run(run_path).points]
    assert saved[: len(shown)] == shown  # everything the window showed is on disk, in order
    assert len(saved) < len(sizes)  # the run did stop early
    assert saved == sizes[: len(saved)] and all(p.kernel == "matmul" for p in read_run(run_path).points)
