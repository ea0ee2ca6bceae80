"""Baseline images of each tab (STYLE.md R20): grab the tab at a fixed size, compare with
tests/baseline/<tab>.png within a tolerance, write the actual image (and a diff) to tmp_path on failure.

Regenerate after an intended change: ``GPUPERF_UPDATE_BASELINES=1 pytest tests/views/test_baseline_images.py``
and look at the new PNGs before committing them.

Pinned first: the Fusion style, DejaVu Sans 9 pt (the TTFs in tests/data/fonts, so a machine without
fonts draws the same glyphs), 1600×1000 px, no saved settings or measurements (tests/conftest.py).

Tolerance: the mean absolute difference per channel at most MAX_MEAN_ABS_DIFF levels, and at most
MAX_CHANGED_FRACTION of the pixels differing by more than CHANGED_LEVELS in a channel. Two runs here
differ by 0; a panel that disappears (``test_a_missing_panel_fails_the_comparison``) fails both.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QFont, QFontDatabase, QImage
from PySide6.QtWidgets import QApplication, QWidget

from gpuperf_gui.views.context import AppContext

BASELINES = Path(__file__).resolve().parents[1] / "baseline"
DATA = Path(__file__).resolve().parents[1] / "data"
FONTS = DATA / "fonts"
TRACE = DATA / "shared_traces" / "h200" / "launch_bound_tiny.json.gz"
SIZE = (1600, 1000)
UPDATE = os.environ.get("GPUPERF_UPDATE_BASELINES") == "1"

MAX_MEAN_ABS_DIFF = 2.0    # levels of 255, per channel, over the whole image
CHANGED_LEVELS = 64        # a pixel "changed" when a channel differs by more than this
MAX_CHANGED_FRACTION = 0.02


@dataclass(frozen=True)
class Comparison:
    mean_abs_diff: float
    changed_fraction: float

    @property
    def ok(self) -> bool:
        return self.mean_abs_diff <= MAX_MEAN_ABS_DIFF and self.changed_fraction <= MAX_CHANGED_FRACTION

    def __str__(self) -> str:
        return (f"mean |diff| {self.mean_abs_diff:.2f} levels (max {MAX_MEAN_ABS_DIFF}), "
                f"{100 * self.changed_fraction:.2f} % of pixels off by > {CHANGED_LEVELS} "
                f"(max {100 * MAX_CHANGED_FRACTION:.0f} %)")


def to_rgb(image: QImage) -> np.ndarray:
    """An (h, w, 3) uint8 copy of ``image`` (RGBA8888 rows, padding dropped)."""
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : 4 * image.width()].reshape(image.height(), image.width(), 4)[..., :3].copy()


def to_image(rgb: np.ndarray) -> QImage:
    h, w, _ = rgb.shape
    rgba = np.dstack([rgb, np.full((h, w), 255, np.uint8)]).copy()
    return QImage(rgba.data, w, h, 4 * w, QImage.Format.Format_RGBA8888).copy()


def compare(actual: np.ndarray, expected: np.ndarray) -> Comparison:
    if actual.shape != expected.shape:
        return Comparison(255.0, 1.0)
    diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16))
    return Comparison(float(diff.mean()), float((diff.max(axis=-1) > CHANGED_LEVELS).mean()))


@pytest.fixture
def pinned_look(qapp):
    """Fusion style and DejaVu Sans 9 pt for the widgets made in the test; restored afterwards."""
    ids = [QFontDatabase.addApplicationFont(str(p)) for p in sorted(FONTS.glob("*.ttf"))]
    assert all(i >= 0 for i in ids), "tests/data/fonts could not be loaded"
    old_font, old_style, old_flash = QApplication.font(), qapp.style().name(), QApplication.cursorFlashTime()
    QApplication.setStyle("Fusion")
    QApplication.setCursorFlashTime(0)  # a focused field's caret does not blink between grabs
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9.0)
    font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    QApplication.setFont(font)
    yield
    QApplication.setFont(old_font)
    QApplication.setStyle(old_style)
    QApplication.setCursorFlashTime(old_flash)
    for i in ids:
        QFontDatabase.removeApplicationFont(i)


def _show(qtbot, widget: QWidget) -> QWidget:
    qtbot.addWidget(widget)
    widget.resize(*SIZE)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def make_roofline(qtbot, tmp_path: Path) -> QWidget:
    from gpuperf_gui.views.roofline_tab import RooflineTab

    return _show(qtbot, RooflineTab(AppContext(device_id="h200", precision="bf16")))


def make_mfu(qtbot, tmp_path: Path) -> QWidget:
    from gpuperf_gui.views.mfu.tab import MfuTab

    return _show(qtbot, MfuTab(AppContext(device_id="h100-sxm", precision="bf16")))


def make_trace(qtbot, tmp_path: Path) -> QWidget:
    from gpuperf_gui.views.trace.tab import TraceTab

    tab = _show(qtbot, TraceTab(AppContext(device_id="h200", precision="bf16")))
    tab.open_paths([TRACE])
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=60_000)
    assert tab.loaded is not None, tab.message.text()
    tab.timeline.refold()
    return tab


def make_bench(qtbot, tmp_path: Path) -> QWidget:
    from gpuperf_gui.views.benchmark_tab import BenchmarkTab

    return _show(qtbot, BenchmarkTab(AppContext(device_id="cpu", precision="fp32"),
                                     results_dir=tmp_path / "bench", autoload_latest=False))


MAKERS = {"roofline": make_roofline, "mfu": make_mfu, "trace": make_trace, "bench": make_bench}
# A panel of each tab that must show: test_a_missing_panel_fails_the_comparison blanks it.
PANELS = {"roofline": "canvas", "mfu": "gap_bar", "trace": "timeline", "bench": "plots"}


def grab(qtbot, widget: QWidget) -> np.ndarray:
    for _ in range(3):  # layouts settle, the 30 Hz redraw timers fire
        QApplication.processEvents()
        qtbot.wait(60)
    QApplication.processEvents()
    return to_rgb(widget.grab().toImage())


def _shutdown(widget: QWidget) -> None:
    if hasattr(widget, "shutdown"):
        widget.shutdown()


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_tab_matches_its_baseline_image(qtbot, pinned_look, tmp_path: Path, name: str) -> None:
    widget = MAKERS[name](qtbot, tmp_path)
    try:
        actual = grab(qtbot, widget)
    finally:
        _shutdown(widget)
    assert actual.shape == (SIZE[1], SIZE[0], 3)
    path = BASELINES / f"{name}.png"
    if UPDATE:
        BASELINES.mkdir(exist_ok=True)
        assert to_image(actual).save(str(path), "PNG")
        return
    assert path.exists(), f"no baseline {path}: run with GPUPERF_UPDATE_BASELINES=1 and look at it"
    expected = to_rgb(QImage(str(path)))
    result = compare(actual, expected)
    if not result.ok:
        to_image(actual).save(str(tmp_path / f"{name}_actual.png"), "PNG")
        diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16)).astype(np.uint8) \
            if actual.shape == expected.shape else actual
        to_image(255 - diff).save(str(tmp_path / f"{name}_diff.png"), "PNG")
    assert result.ok, f"{name} differs from {path}: {result}; actual and diff in {tmp_path}"


def _panel_rect(widget: QWidget, name: str) -> QRect:
    panel = getattr(widget, name)
    top_left = panel.mapTo(widget, panel.rect().topLeft())
    return QRect(top_left, panel.size())


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_missing_panel_fails_the_comparison(qtbot, pinned_look, tmp_path: Path, name: str) -> None:
    """The tolerance is tight enough: the same tab with one panel blanked to the window colour
    (as if the panel had disappeared) does not pass against the untouched grab."""
    widget = MAKERS[name](qtbot, tmp_path)
    try:
        image = grab(qtbot, widget)
        rect = _panel_rect(widget, PANELS[name])
        window_rgb = widget.palette().window().color().getRgb()[:3]
    finally:
        _shutdown(widget)
    assert compare(image, image.copy()).ok
    blanked = image.copy()
    blanked[rect.top(): rect.bottom() + 1, rect.left(): rect.right() + 1] = window_rgb
    result = compare(blanked, image)
    assert not result.ok, f"{name} with its {PANELS[name]} blanked still passes: {result}"
    # one text line changed (a few hundred pixels) stays within the tolerance
    nudged = image.copy()
    nudged[10:22, 10:300] = 255 - nudged[10:22, 10:300]
    assert compare(nudged, image).ok
