"""views/progress.py: a bar that leaves its busy state stops repainting (Fusion's animation)."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QProgressBar

from gpuperf_gui.views.progress import show_progress


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def _paints_in(bar: QProgressBar, qtbot, ms: int) -> int:  # noqa: ANN001
    spy = _Paints()
    bar.installEventFilter(spy)
    qtbot.wait(ms)
    bar.removeEventFilter(spy)
    return spy.count


def test_a_task_at_its_start_does_not_keep_the_busy_animation(qtbot) -> None:  # noqa: ANN001
    QApplication.setStyle("Fusion")   # the style whose animation outlives the busy state
    bar = QProgressBar()
    qtbot.addWidget(bar)
    bar.show()
    show_progress(bar, 0, 0, "opening")           # busy: animates
    assert _paints_in(bar, qtbot, 400) >= 5
    show_progress(bar, 0, 1000, "reading")        # started, nothing done yet
    assert _paints_in(bar, qtbot, 400) <= 2
    assert bar.text() == "reading" and bar.value() < bar.maximum() / 1000
    show_progress(bar, 700, 1000, "preparing the lanes")
    assert bar.value() == 0.7 * bar.maximum()


def test_plain_qt_would_keep_animating(qtbot) -> None:  # noqa: ANN001
    """Why show_progress exists: the same steps with setRange/setValue(0) keep repainting."""
    QApplication.setStyle("Fusion")
    bar = QProgressBar()
    qtbot.addWidget(bar)
    bar.show()
    bar.setRange(0, 0)
    qtbot.wait(300)
    bar.setRange(0, 1000)
    bar.setValue(0)
    assert _paints_in(bar, qtbot, 400) >= 5
