"""A job of many ranks shown from compact per-rank results: File ▸ Open on a Dask cluster…, and any
open of a folder with many rank files (the main window shows either in a job tab).

:class:`ClusterOpenDialog` asks for the folder of rank files and the scheduler address
(``tcp://host:8786`` or ``local[:N]``). :class:`ClusterJobWindow` (a tab of the main window, or
a window of its own) runs
:func:`~gpuperf_gui.core.trace.session.trace.iter_job_overview` in a worker thread, on that Dask
scheduler or (``address`` None) on the local process pool, and shows what comes back: the job's
verdict, the Trace tab's rank × step heatmap (late ranks first) and a table of ranks. No rank's
events are held here; opening a rank (a click on the heatmap, a double click in the table, Open
rank) loads only that rank's file in the Trace tab.
"""

from __future__ import annotations

import html

import threading
from pathlib import Path
from typing import Callable, Iterator, Sequence

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.trace.analysis.rank_analysis import RankAnalysis
from gpuperf_gui.core.trace.engine.api import Progress
from gpuperf_gui.core.trace.engine.cluster import ClusterResult, RankSummary, engine_label, is_local_pool, parse_address
from gpuperf_gui.core.trace.model.trace_model import ClusterError
from gpuperf_gui.core.trace.session.trace import iter_job_overview
from gpuperf_gui.views.trace.heatmap import RankLanePreview, RankStepHeatmap
from gpuperf_gui.views.workers import TaskRunner
from gpuperf_gui.views.trace.panels import verdict_words

DEFAULT_ADDRESS = "local:2"
_SETTINGS_KEY = "cluster/address"
COLUMNS = ("rank", "file", "events", "step ms", "busy", "comm wait", "signature")


class ClusterOpenDialog(QDialog):
    """The folder of rank files and the Dask scheduler's address."""

    def __init__(self, parent: QWidget | None = None, folder: str = "", address: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open on a Dask cluster")
        self.folder_edit = QLineEdit(folder)
        self.folder_edit.setPlaceholderText("folder of rank files, on a filesystem the workers share")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.folder_edit, 1)
        row.addWidget(browse)
        self.address_edit = QLineEdit(address if address is not None
                                      else str(QSettings().value(_SETTINGS_KEY, DEFAULT_ADDRESS)))
        self.address_edit.setToolTip("tcp://host:8786 (a running scheduler) or local[:N] "
                                     "(a LocalCluster of N worker processes on this machine)")
        self.error = QLabel()
        self.error.setStyleSheet("color: #b00020")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Folder", row)
        form.addRow("Scheduler", self.address_edit)
        form.addRow(self.error)
        form.addRow(self.buttons)

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder of per-rank traces", self.folder_edit.text())
        if path:
            self.folder_edit.setText(path)

    def values(self) -> tuple[Path, str]:
        return Path(self.folder_edit.text().strip()), self.address_edit.text().strip()

    def problem(self) -> str | None:
        """Why the inputs cannot be used (None when they can)."""
        folder, address = self.values()
        if not folder.name or not folder.is_dir():
            return f"{folder}: not a folder"
        try:
            parse_address(address)
        except ClusterError as exc:
            return str(exc)
        return None

    def accept(self) -> None:
        problem = self.problem()
        if problem:
            self.error.setText(problem)
            return
        QSettings().setValue(_SETTINGS_KEY, self.values()[1])
        super().accept()


class ClusterJobWindow(QWidget):
    """One job's overview from compact results; ``rank_file_opened(path)`` when a rank is opened.

    ``paths``: the folder(s) or files of the job's ranks; ``address``: a Dask scheduler, or None for
    the local process pool."""

    rank_file_opened = Signal(object)   # Path of the rank's file
    result_ready = Signal(object)       # ClusterResult

    def __init__(self, paths: Path | Sequence[Path], address: str | None = None, parent: QWidget | None = None,
                 *, memory_budget: int | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
        self.folder, self.address, self.memory_budget = self.paths[0], address, memory_budget
        self.engine = engine_label(address)
        self.result: ClusterResult | None = None
        name = self.folder.name if len(self.paths) == 1 else f"{self.folder.name} and {len(self.paths) - 1} more"
        self.setWindowTitle(f"{name} — job overview ({self.engine})")
        self.resize(1100, 760)
        self.status = QLabel(f"connecting to {address}…" if not is_local_pool(address) else "starting…")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        top.addWidget(self.cancel_button)
        self.engine_note = QLabel(
            f"<span style='color:#555'>Engine: {self.engine}{'' if is_local_pool(address) else ' (Dask)'}; "
            "each rank is analysed apart and only its figures come back. A rank's lanes load on demand: "
            "double-click its row, click it on the heatmap, or select it and Open rank.</span>")
        self.engine_note.setWordWrap(True)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.heatmap = RankStepHeatmap()
        self.heatmap.rank_opened.connect(self.open_rank)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.cellDoubleClicked.connect(lambda row, _col: self.open_rank(self._rank_of_row(row)))
        self.open_button = QPushButton("Open rank")
        self.open_button.setToolTip("Load the selected rank's lanes in the Trace tab (that file only)")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(lambda: self.open_rank(self._rank_of_row(self.table.currentRow())))
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.lane_preview = RankLanePreview()
        table_page = QWidget()
        table_layout = QVBoxLayout(table_page)
        table_layout.setContentsMargins(0, 0, 0, 0)
        table_layout.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.open_button)
        table_layout.addLayout(buttons)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(table_page)
        bottom.addWidget(self.lane_preview)
        bottom.setSizes([650, 450])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.heatmap)
        split.addWidget(bottom)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.engine_note)
        layout.addWidget(self.verdict)
        layout.addWidget(split, 1)
        self.task = TaskRunner(self)
        self.task.item_produced.connect(self._on_item)
        self.task.run_failed.connect(self._on_failed)
        self.task.run_finished.connect(self._on_finished)

    def start(self, produce: Callable[[threading.Event], Iterator[object]] | None = None) -> bool:
        """Run the analysis (``produce`` replaces it in tests)."""
        paths, address, budget = list(self.paths), self.address, self.memory_budget
        return self.task.start(produce or (
            lambda stop: iter_job_overview(paths, stop, address=address, memory_budget=budget)))

    def is_busy(self) -> bool:
        return self.task.is_running()

    def cancel(self) -> None:
        self.task.cancel()

    def _on_item(self, item: object) -> None:
        if isinstance(item, Progress):
            self.status.setText(item.message)
            self.progress.setValue(int(round(1000 * item.fraction)))
        elif isinstance(item, ClusterResult):
            self.show_result(item)

    def _on_failed(self, message: str) -> None:
        self.status.setText(f"<span style='color:#b00020'>{message}</span>")

    def _on_finished(self) -> None:
        self.cancel_button.setEnabled(False)
        if self.task.cancel_requested and self.result is None:
            self.status.setText("cancelled")

    def show_result(self, result: ClusterResult) -> None:
        self.result = result
        self.progress.setValue(1000)
        n = len(result.ranks)
        self.status.setText(f"{n} rank{'s' if n != 1 else ''}, {result.n_events:,} events analysed on "
                            f"{self.engine}; open a rank to load its lanes")
        d = result.diagnosis
        late = f" — late rank{'s' if len(d.ranks) > 1 else ''}: {', '.join(map(str, d.ranks))}" \
            if d.signature == "straggler" else ""
        evidence = "".join(f"<li>{e}</li>" for e in d.evidence[:4])
        notes = "".join(f"<li style='color:#666'>{n}</li>" for n in result.notes[:5])
        words = verdict_words(d.signature, d.confidence, getattr(d, "close_call", None) or ())
        self.verdict.setText(f"<b>Diagnosis: {html.escape(words)}</b> <span style='color:#666'>(signature "
                             f"<code>{d.signature}</code> · the % is the confidence)</span>{late}"
                             f"<ul>{evidence}{notes}</ul>Fix to try first: {d.fix}")
        self.heatmap.set_overview(result.overview(), d.signature)
        self._fill_table(result)
        self.table.selectRow(0)   # the first late rank's lanes in brief
        self.result_ready.emit(result)

    def _fill_table(self, result: ClusterResult) -> None:
        late = set(result.multi_rank.stragglers)
        order = sorted(result.ranks, key=lambda r: (r.rank not in late, r.rank))  # late ranks first
        self.table.setRowCount(len(order))
        for i, r in enumerate(order):
            a = r.analysis
            step = "-" if a.step_time_median_s is None else f"{1e3 * a.step_time_median_s:.2f}"
            cells = (str(r.rank), Path(r.file).name, f"{r.n_events:,}", step,
                     f"{100 * a.gpu_busy_fraction:.1f} %", f"{100 * exposed_comm(a):.1f} %",
                     r.diagnosis.signature + ("  ⚠ late" if r.rank in late else ""))
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j == 0:
                    item.setData(Qt.ItemDataRole.UserRole, r.rank)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()

    def _on_selection(self) -> None:
        rank = self._rank_of_row(self.table.currentRow())
        self.open_button.setEnabled(rank is not None)
        self.lane_preview.show_rank(rank, self.rank_summary(rank))

    def rank_summary(self, rank: int | None) -> RankSummary | None:
        """The compact result of ``rank`` (None before the result, or for an unknown rank)."""
        if self.result is None or rank is None:
            return None
        return next((r for r in self.result.ranks if r.rank == rank), None)

    def _rank_of_row(self, row: int) -> int | None:
        item = self.table.item(row, 0)
        return None if item is None else int(item.data(Qt.ItemDataRole.UserRole))

    def rank_file(self, rank: int | None) -> Path | None:
        summary = self.rank_summary(rank)
        return None if summary is None else Path(summary.file)

    def open_rank(self, rank: int | None) -> None:
        """Load only this rank's lanes (in the Trace tab)."""
        path = self.rank_file(rank)
        if path is not None:
            self.rank_file_opened.emit(path)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.task.shutdown()
        super().closeEvent(event)


def exposed_comm(a: RankAnalysis) -> float:
    """The communication wait of a rank as the Trace tab's ranks table shows it
    (:data:`~gpuperf_gui.core.trace.vocabulary.glossary.COMM_WAIT`)."""
    return a.idle_causes.communication


def ask_cluster_job(parent: QWidget | None) -> tuple[Path, str] | None:
    """File ▸ Open on a Dask cluster…'s question: (folder, scheduler address), None when cancelled."""
    dialog = ClusterOpenDialog(parent)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return dialog.values()


def open_on_cluster(parent: QWidget, open_traces: Callable[[list[Path]], None]) -> ClusterJobWindow | None:
    """Ask, then run the job in its own window (the main window puts it in a tab instead)."""
    asked = ask_cluster_job(parent)
    if asked is None:
        return None
    window = ClusterJobWindow(asked[0], asked[1], parent)
    window.rank_file_opened.connect(lambda path: open_traces([path]))
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.show()
    window.start()
    return window


__all__ = ["ClusterJobWindow", "ClusterOpenDialog", "ask_cluster_job", "open_on_cluster"]
