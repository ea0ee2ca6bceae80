"""The real entry point: `python -m gpuperf_gui --screenshot` writes a non-blank 1600x1000 PNG."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PySide6.QtGui import QImage


def _run_app(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "gpuperf_gui", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _pixels(path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGBA8888)
    assert (image.width(), image.height()) == (1600, 1000)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine()).copy()


@pytest.mark.parametrize("tab", ["roofline", "mfu"])
def test_screenshot_of_tab_is_not_blank(qapp, tmp_path, tab):
    png = tmp_path / f"{tab}.png"
    proc = _run_app(tmp_path, "--tab", tab, "--device", "h200", "--screenshot", str(png))
    assert proc.returncode == 0, proc.stderr
    pixels = _pixels(png)
    assert pixels.std() > 20
    assert len(np.unique(pixels[::8, ::8].reshape(-1, 4), axis=0)) > 50  # lines, text, colours


def test_unknown_device_is_a_clear_error(tmp_path):
    proc = _run_app(tmp_path, "--device", "h1000", "--screenshot", str(tmp_path / "x.png"))
    assert proc.returncode == 2
    assert "did you mean" in proc.stderr
