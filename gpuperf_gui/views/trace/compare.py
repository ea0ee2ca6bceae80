"""The Trace tab's Compare page: two traces of one workload, before and after a change.

Pick the two traces (the trace open in the tab is offered as "before"), Compare runs core's
:func:`~gpuperf_gui.core.trace.session.loaded_trace.diff_job` (``gpuperf diff``'s :mod:`~gpuperf_gui.core.trace.session.diff`)
in a worker with progress and stop, and the page shows the step time and speedup (the unprofiled
one, with its source named, where both traces were recorded by ``gpuperf profile``), the headline
figures before/after/change, kernel time per class as paired bars, the ops that changed most (HTA
TraceDiff's categories), what changed, and the two diagnoses side by side. Every number comes from
core; this page only draws.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.trace.analysis.overview import display_kernel_name
from gpuperf_gui.core.trace.session.loaded_trace import (FigureDelta, Progress, diagnosis_view, diff_figures,
                                                         diff_job)
from gpuperf_gui.views.plotting import make_static_plot
from gpuperf_gui.views.progress import show_progress
from gpuperf_gui.views.trace.panels import PANEL_CSS, diagnosis_html
from gpuperf_gui.views.trace.style import KERNEL_CLASS_COLORS, format_duration_us, format_percent
from gpuperf_gui.views.rich_text import plain_tooltip
from gpuperf_gui.views.workers import TaskRunner
from gpuperf_gui.views import settings_store

from gpuperf_gui.core.trace.session.diff import CALLS_WORDS

if TYPE_CHECKING:
    from gpuperf_gui.core.trace.session.diff import TraceDiff

TOP_OPS = 25
OP_COLUMNS = ("Name", "Kind", "Calls", "Calls before", "Calls after", "Before", "After", "Δ")


class _Cell(QTableWidgetItem):
    def __init__(self, text: str, key: float | str, right: bool = True) -> None:
        super().__init__(text)
        self.key = key
        if right:
            self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        k = getattr(other, "key", "")
        if isinstance(self.key, str) or isinstance(k, str):
            return str(self.key) < str(k)
        return self.key < k


def _signed_ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1e3:+.3g} ms"


def _duration(seconds: float | None) -> str:
    return format_duration_us(seconds * 1e6) if seconds else "–"


def _speedup_html(speedup: float, size: str) -> str:
    color = "#2e7d32" if speedup >= 1 else "#c62828"
    word = "faster" if speedup >= 1 else "slower"
    ratio = speedup if speedup >= 1 else 1 / speedup
    return f"<span style='color:{color}; font-size:{size}'><b>{ratio:.2f}× {word}</b></span>"


def _excess(ratio: float | None) -> float | None:
    """Profiled / unprofiled as the extra share (1.25 -> 0.25), for a percent cell."""
    return None if ratio is None else ratio - 1


def _overhead(ratio: float | None) -> str:
    """Recorded / unprofiled as the extra share; "not measurable" where core gives none."""
    return "not measurable" if ratio is None else f"{100 * (ratio - 1):+.0f} %"


class ClassBars(pg.PlotWidget):
    """Kernel time per class (ms per step), before and after side by side."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        make_static_plot(self, "kernel time (ms)")
        self.legend = self.addLegend(offset=(-10, 8), labelTextColor=QColor(40, 40, 40))
        self.heights: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))

    def set_diff(self, d: TraceDiff | None) -> None:
        self.clear()
        self.legend.clear()
        if d is None:
            return
        classes = [c for c in d.kernel_classes if c.before_s > 0 or c.after_s > 0]
        classes.sort(key=lambda c: -max(c.before_s, c.after_s))
        x = np.arange(len(classes), dtype=float)
        before = np.array([c.before_s for c in classes]) * 1e3
        after = np.array([c.after_s for c in classes]) * 1e3
        self.heights = (before, after)
        colors = [QColor(KERNEL_CLASS_COLORS.get(c.cls, "#777")) for c in classes]
        light = [QColor(c).lighter(160) for c in colors]
        b = pg.BarGraphItem(x=x - 0.18, height=before, width=0.34, brushes=light, pen=pg.mkPen("#888"))
        a = pg.BarGraphItem(x=x + 0.18, height=after, width=0.34, brushes=colors, pen=pg.mkPen("#333"))
        self.addItem(b)
        self.addItem(a)
        self.legend.addItem(b, "before (light)")
        self.legend.addItem(a, "after")
        self.getAxis("bottom").setTicks([[(i, c.cls) for i, c in enumerate(classes)], []])
        top = float(max(before.max(initial=0.0), after.max(initial=0.0)))
        self.setYRange(0.0, top * 1.3 if top > 0 else 1.0, padding=0.0)
        self.setXRange(-0.6, max(len(classes) - 0.4, 0.6), padding=0.0)


class TraceCompare(QWidget):
    """Before/after comparison of two traces (files or rank folders)."""

    compared = Signal()        # a comparison is shown (GUI thread)
    compare_failed = Signal(str)

    def __init__(self, tab: QWidget | None = None) -> None:
        super().__init__(tab)
        self.tab = tab
        self.diff: TraceDiff | None = None
        self.task = TaskRunner(self)
        self.task.item_produced.connect(self._on_item)
        self.task.run_failed.connect(self._on_failed)
        self.task.run_finished.connect(self._on_finished)
        self.before_edit, self.after_edit = QLineEdit(), QLineEdit()
        for edit, which in ((self.before_edit, "before"), (self.after_edit, "after")):
            edit.setPlaceholderText(f"trace {which} the change: a .json(.gz) file or a folder of ranks")
        self.use_open_button = QPushButton("Use the open trace")
        self.use_open_button.setToolTip("The trace shown in the Timeline page becomes 'before'")
        browse_before = QPushButton("File…")
        browse_after = QPushButton("File…")
        folder_before = QPushButton("Folder…")
        folder_after = QPushButton("Folder…")
        self.compare_button = QPushButton("Compare")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.hide()
        grid = QGridLayout()
        grid.addWidget(QLabel("Before:"), 0, 0)
        grid.addWidget(self.before_edit, 0, 1)
        grid.addWidget(browse_before, 0, 2)
        grid.addWidget(folder_before, 0, 3)
        grid.addWidget(self.use_open_button, 0, 4)
        grid.addWidget(QLabel("After:"), 1, 0)
        grid.addWidget(self.after_edit, 1, 1)
        grid.addWidget(browse_after, 1, 2)
        grid.addWidget(folder_after, 1, 3)
        grid.addWidget(self.compare_button, 1, 4)
        grid.addWidget(self.stop_button, 1, 5)
        grid.setColumnStretch(1, 1)

        self.headline = QLabel("<span style='color:#777'>Pick two traces of the same workload, before and "
                               "after a change, and Compare (the same as <code>gpuperf diff BEFORE AFTER</code>)."
                               "</span>")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.figures = QTableWidget(0, 4)
        self.figures.setHorizontalHeaderLabels(["Figure", "Before", "After", "Change"])
        self.class_bars = ClassBars()
        self.ops = QTableWidget(0, len(OP_COLUMNS))
        self.ops.setHorizontalHeaderLabels(list(OP_COLUMNS))
        for table in (self.figures, self.ops):
            table.verticalHeader().setVisible(False)
            table.verticalHeader().setDefaultSectionSize(20)
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setAlternatingRowColors(True)
            header = table.horizontalHeader()
            header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
            for i in range(1, table.columnCount()):
                header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        self.ops.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # core's order: largest change first
        self.ops.setSortingEnabled(True)
        for c, tip in ((5, "per step: CPU total for host ops, device time for kernels"), (6, "per step, as Before"),
                       (7, "after - before, per step")):
            self.ops.horizontalHeaderItem(c).setToolTip(tip)
        self.changes = QTextBrowser()
        self.diag_before, self.diag_after = QTextBrowser(), QTextBrowser()

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.figures)
        top.addWidget(self.class_bars)
        top.addWidget(self.changes)
        top.setSizes([480, 560, 500])
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.ops)
        bottom.addWidget(self.diag_before)
        bottom.addWidget(self.diag_after)
        bottom.setSizes([800, 370, 370])
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(top)
        body.addWidget(bottom)
        body.setSizes([330, 450])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(grid)
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        layout.addLayout(row)
        layout.addWidget(self.headline)
        layout.addWidget(body, 1)

        browse_before.clicked.connect(lambda: self._browse(self.before_edit, folder=False))
        browse_after.clicked.connect(lambda: self._browse(self.after_edit, folder=False))
        folder_before.clicked.connect(lambda: self._browse(self.before_edit, folder=True))
        folder_after.clicked.connect(lambda: self._browse(self.after_edit, folder=True))
        self.use_open_button.clicked.connect(self.use_open_trace)
        self.compare_button.clicked.connect(lambda: self.compare_paths(self._paths(self.before_edit),
                                                                       self._paths(self.after_edit)))
        self.stop_button.clicked.connect(self.task.cancel)
        self.show_diff(None)

    # -- inputs ------------------------------------------------------------------------------------------
    @staticmethod
    def _paths(edit: QLineEdit) -> list[Path]:
        return [Path(p.strip()) for p in edit.text().split(";") if p.strip()]

    def _browse(self, edit: QLineEdit, folder: bool) -> None:
        if folder:
            path = QFileDialog.getExistingDirectory(self, "A folder of per-rank traces",
                                                    settings_store.last_folder("traces"))
            paths = [path] if path else []
        else:
            paths, _ = QFileDialog.getOpenFileNames(self, "A torch.profiler trace", settings_store.last_folder("traces"),
                                                    "Chrome traces (*.json *.json.gz *.gz);;All files (*)")
        if paths:
            settings_store.remember_folder("traces", Path(paths[0]).parent)
            edit.setText("; ".join(paths))

    def use_open_trace(self) -> None:
        loaded = getattr(self.tab, "loaded", None)
        if loaded is None:
            self.headline.setText("<span style='color:#8b1a1a'>No trace is open in the Timeline page.</span>")
            return
        files = loaded.files
        self.before_edit.setText(str(Path(files[0]).parent) if len(files) > 1 else files[0])
        self.before_from_open_trace = self.before_edit.text()

    def follow_open_trace(self) -> None:
        """A trace opened in the tab: "Before" becomes it, unless the user chose another "Before"
        (typed, browsed or compared): an earlier trace's path never stays there unasked."""
        typed = self.before_edit.text().strip()
        if not typed or typed == getattr(self, "before_from_open_trace", None):
            self.use_open_trace()

    def compare_paths(self, before: list[Path], after: list[Path]) -> None:
        """Load both traces in a worker and show their comparison (a running one is replaced)."""
        missing = [str(p) for p in before + after if not p.exists()]
        if not before or not after or missing:
            text = ("Pick both traces first." if not before or not after
                    else "Not found: " + ", ".join(missing))
            self.headline.setText(f"<span style='color:#8b1a1a'>{html.escape(text)}</span>")
            return
        self.before_edit.setText("; ".join(map(str, before)))
        self.after_edit.setText("; ".join(map(str, after)))
        self.task.restart(diff_job(before, after))
        self.progress.setRange(0, 0)
        self.progress.setFormat("loading both traces")
        self.progress.show()
        self.stop_button.setEnabled(True)
        self.compare_button.setEnabled(False)

    def is_busy(self) -> bool:
        return self.task.is_running()

    def shutdown(self) -> None:
        self.task.shutdown()

    # -- worker ------------------------------------------------------------------------------------------
    def _on_item(self, item: object) -> None:
        if isinstance(item, Progress):
            show_progress(self.progress, round(1000 * item.fraction), 1000, item.message)
        elif not self.task.cancel_requested:
            self.show_diff(item)  # type: ignore[arg-type]
            self.compared.emit()

    def _on_failed(self, message: str) -> None:
        text = message.split(": ", 1)[1] if message.startswith(("TraceFormatError: ", "ValueError: ")) else message
        self.headline.setText(f"<span style='color:#8b1a1a'>Could not compare: {html.escape(text)}</span>")
        self.compare_failed.emit(message)

    def _on_finished(self) -> None:
        if self.task.is_running():
            return
        self.progress.hide()
        self.stop_button.setEnabled(False)
        self.compare_button.setEnabled(True)
        if self.task.cancel_requested:
            self.headline.setText("<span style='color:#777'>Comparison stopped.</span>")

    # -- drawing -----------------------------------------------------------------------------------------
    def show_diff(self, d: TraceDiff | None) -> None:
        self.diff = d
        self.class_bars.set_diff(d)
        if d is None:
            for table in (self.figures, self.ops):
                table.setRowCount(0)
            self.changes.setHtml(PANEL_CSS + "<p class='muted'>What changed appears here.</p>")
            self.diag_before.setHtml(PANEL_CSS + "<h3>Diagnosis before</h3>")
            self.diag_after.setHtml(PANEL_CSS + "<h3>Diagnosis after</h3>")
            return
        self.headline.setText(self._headline(d))
        self._fill_figures(d)
        self._fill_ops(d)
        lines = "".join(f"<li>{html.escape(t)}</li>" for t in d.changes())
        warn = "".join(f"<p class='warn'>{html.escape(w)}</p>" for w in d.warnings)
        self.changes.setHtml(PANEL_CSS + f"<h3 style='margin-top:0'>What changed</h3><ul>{lines}</ul>{warn}")
        for browser, which, diagnosis in ((self.diag_before, "Before", d.diagnosis_before),
                                          (self.diag_after, "After", d.diagnosis_after)):
            browser.setHtml(PANEL_CSS + f"<div class='muted'>{which}</div>" + diagnosis_html(diagnosis_view(diagnosis)))

    @staticmethod
    def _headline(d: TraceDiff) -> str:
        """Core's headline (:mod:`~gpuperf_gui.core.trace.session.diff_headline`), the ratio coloured, then
        where the speedup comes from."""
        h = d.headline
        big = ""
        if h.ratio is not None and h.unit == "s":
            big = f" · {_speedup_html(h.ratio, '14pt')}" + ("" if h.conclusive else " <b>(not conclusive)</b>")
        source = f"<br><span style='color:#666'>speedup from {html.escape(d.speedup_source or '–')}"
        if d.speedup_unprofiled is not None and d.speedup_profiled is not None:
            source += (f"; profiled trace {_duration(d.before.step_time_s)} → {_duration(d.after.step_time_s)} "
                       f"({d.speedup_profiled:.2f}×), profiler overhead {_overhead(d.before.profiler_overhead)} "
                       f"before, {_overhead(d.after.profiler_overhead)} after")
        elif d.speedup_unprofiled is None:
            source += ("; record both runs with <code>gpuperf profile</code> (File ▸ Profile a script…) for the "
                       "speedup without the profiler's overhead")
        names = (f"<br><span style='color:#666'>before: {html.escape(d.before.label)} · after: "
                 f"{html.escape(d.after.label)}</span>")
        return (f"<span style='font-size:12pt'>{html.escape(h.quantity)}{big}</span><br>"
                f"<span style='color:#444'>{html.escape(h.text)}</span>{source}</span>{names}")

    def _fill_figures(self, d: TraceDiff) -> None:
        rows = diff_figures(d)
        b, a = d.before, d.after
        if b.unprofiled_step_time_s is not None or a.unprofiled_step_time_s is not None:
            extra = [FigureDelta("step time without profiler (gpuperf profile)", "s", b.unprofiled_step_time_s,
                                 a.unprofiled_step_time_s),
                     FigureDelta("profiler overhead (profiled / unprofiled − 1)", "fraction",
                                 _excess(b.profiler_overhead), _excess(a.profiler_overhead))]
            rows[1:1] = extra
        self.figures.setRowCount(len(rows))
        for i, r in enumerate(rows):
            if r.kind == "s":
                fmt = (lambda v: "–" if v is None else format_duration_us(v * 1e6))
                delta = _signed_ms(r.delta)
            else:
                fmt = format_percent
                delta = "–" if r.delta is None else f"{100 * r.delta:+.1f} pts"
            for c, (text, key) in enumerate(((r.label, r.label), (fmt(r.before), r.before or 0.0),
                                             (fmt(r.after), r.after or 0.0), (delta, r.delta or 0.0))):
                self.figures.setItem(i, c, _Cell(text, key, right=c > 0))

    def _fill_ops(self, d: TraceDiff) -> None:
        ops = d.ops[:TOP_OPS]
        self.ops.setSortingEnabled(False)
        self.ops.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.ops.setRowCount(len(ops))
        for i, o in enumerate(ops):
            device = o.kind == "device"
            before, after, delta = ((o.device_before_s, o.device_after_s, o.device_delta_s) if device
                                    else (o.before_s, o.after_s, o.delta_s))
            calls = CALLS_WORDS[o.change]
            cells = [_Cell(display_kernel_name(o.label), o.name.lower(), right=False),
                     _Cell(o.kind, o.kind, right=False), _Cell(calls, calls, right=False),
                     _Cell(f"{o.calls_before:.4g}", o.calls_before), _Cell(f"{o.calls_after:.4g}", o.calls_after),
                     _Cell(format_duration_us(before * 1e6), before), _Cell(format_duration_us(after * 1e6), after),
                     _Cell(_signed_ms(delta), delta)]
            cells[0].setToolTip(plain_tooltip(o.name))
            color = QColor("#c62828") if delta > 0 else QColor("#2e7d32")
            cells[-1].setForeground(color)
            for c, cell in enumerate(cells):
                self.ops.setItem(i, c, cell)
        self.ops.setSortingEnabled(True)
