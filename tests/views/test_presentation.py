"""Presentation mode: opens from the View menu, the slider moves the point along the roof, the gap
bar fills cause by cause, the five signatures load from synthetic traces and are diagnosed."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from gpuperf_gui.core.hardware import load_database
from gpuperf_gui.views.context import AppContext
from gpuperf_gui.views.presentation import AI_SLIDER_STEPS_PER_DECADE, SIGNATURES_SHOWN, PresentationWindow


@pytest.fixture
def window(qtbot):
    win = PresentationWindow(AppContext(load_database(), device_id="h100-sxm", precision="bf16"))
    qtbot.addWidget(win)
    yield win
    win.shutdown()


def test_the_slider_moves_the_point_along_the_roof(window):
    page = window.roofline_page
    page.slider.setValue(1 * AI_SLIDER_STEPS_PER_DECADE)          # AI 10 FLOP/byte
    ai, rate = page.point_position()
    assert ai == pytest.approx(10) and rate == pytest.approx(10 * 3.35e12)   # H100 SXM: 3.35 TB/s
    assert "memory-bound" in page.readout.text()
    page.slider.setValue(3 * AI_SLIDER_STEPS_PER_DECADE)          # AI 1000, past the ridge (295)
    ai, rate = page.point_position()
    assert ai == pytest.approx(1000) and rate == pytest.approx(989.4e12)     # bf16 dense peak
    assert "compute-bound" in page.readout.text()


def test_the_roof_follows_the_toolbar_device(window):
    window.context.set_device("a100-sxm-80gb")
    window.roofline_page.slider.setValue(3 * AI_SLIDER_STEPS_PER_DECADE)
    assert window.roofline_page.point_position()[1] == pytest.approx(312e12)  # A100 bf16 dense


def test_the_gap_bar_fills_cause_by_cause(window, qtbot):
    window.show_page(1)
    page = window.gap_page
    assert [s.key for s in page.bar.slices] == ["mfu", "unexplained"]   # MFU, then "not yet attributed"
    assert page.bar.slices[0].fraction == pytest.approx(0.38)
    window.show()
    qtbot.keyClick(window, Qt.Key.Key_Right)                            # the next cause, same page
    assert window.pages.currentWidget() is page
    assert page.bar.slices[1].key == "pipeline_bubble"
    assert page.bar.slices[1].fraction == pytest.approx(3 / 19)          # (p−1)/(m+p−1), p=4, m=16
    while page.reveal_next():
        pass
    assert sum(s.fraction for s in page.bar.slices) == pytest.approx(1.0)
    assert page.bar.slices[-1].label == "Unexplained"
    qtbot.keyClick(window, Qt.Key.Key_Right)                            # all shown: next page
    assert window.pages.currentWidget() is window.signatures_page


def test_every_shown_signature_is_loaded_and_diagnosed_as_itself(window, qtbot):
    window.show_page(2)
    qtbot.waitUntil(lambda: len(window.signatures_page.panels) == len(SIGNATURES_SHOWN) and not window.is_busy(), timeout=60_000)
    for scenario, lanes in window.signatures_page.panels.items():
        assert lanes.signature == scenario
        assert any(label == "GPU compute" for label, *_ in lanes.lanes)


def test_view_menu_opens_presentation(make_main_window, qtbot):
    window = make_main_window(device_id="h200")
    action = next(a for m in window.menuBar().actions() if m.text() == "&View"
                  for a in m.menu().actions() if "Presentation" in a.text())
    action.trigger()
    presentation = window.presentation_window
    assert presentation.isVisible() and presentation.roofline_page.roof.device_id == "h200"
    presentation.close()


def test_closing_while_the_signatures_load_stops_and_cleans_up(window, qtbot):
    window.show_page(2)
    folder = Path(window.signatures_page._folder.name)
    assert folder.is_dir()
    window.close()                                    # mid-load: the task stops, the files go
    assert not window.is_busy() and not folder.exists()
    window.show()
    window.show_page(2)                               # shown again: it loads what it lacks
    qtbot.waitUntil(lambda: len(window.signatures_page.panels) == len(SIGNATURES_SHOWN) and not window.is_busy(), timeout=60_000)


@pytest.mark.parametrize("key", [Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Space])
def test_next_page_keys_work_whatever_has_focus(window, qtbot, key):
    # Presenter clickers send PageDown: the slider (which has its own arrow/page keys) or a button
    # may hold the focus, and the key must still turn the page.
    window.show()
    window.activateWindow()
    qtbot.waitActive(window)
    window.roofline_page.slider.setFocus()
    qtbot.keyClick(window.roofline_page.slider, key)
    assert window.pages.currentIndex() == 1
    window.gap_page.next_button.setFocus()
    shown = window.gap_page.shown
    qtbot.keyClick(window.gap_page.next_button, key)  # on the gap page: the next cause first
    assert window.gap_page.shown == shown + 1 and window.pages.currentIndex() == 1
    qtbot.keyClick(window.gap_page.next_button, Qt.Key.Key_PageUp)
    assert window.pages.currentIndex() == 0


def test_next_cause_button_stays_put_as_the_legend_grows(window, qtbot):
    window.resize(700, 800)  # narrow: the legend wraps to more lines as causes are revealed
    window.show()
    window.show_page(1)
    qtbot.waitExposed(window)
    positions = set()
    while not window.gap_page.done:
        qtbot.wait(1)
        positions.add(window.gap_page.next_button.mapTo(window, window.gap_page.next_button.rect().topLeft()).y())
        window.gap_page.reveal_next()
    assert len(positions) == 1, positions


def test_roofline_readout_prints_numbers_for_people(window):
    # 2000 FLOP/byte reads "2,000", not "2e+03" (the slider is log10 FLOP/byte in 1/20 decades)
    window.roofline_page.slider.setValue(int(round(3.30103 * AI_SLIDER_STEPS_PER_DECADE)))
    text = window.roofline_page.readout.text()
    assert "e+0" not in text and "1,995 FLOP/byte" in text, text

