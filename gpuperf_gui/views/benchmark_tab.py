"""The Benchmarks tab: run the measuring loop in a worker thread and stream its points.

Thin view over ``gpuperf_gui.core.bench`` (STYLE.md §2–§3): its :class:`TaskRunner` iterates
``iter_run_and_save(plan, stop)`` (in a helper process) from a QThread; ``_on_item_produced`` only appends to buffers and the table
and marks the plots dirty; a ~30 Hz timer calls ``setData`` (R7, R8). Each point is re-emitted as
a ``RooflinePoint`` (``point_measured``) and the run's ceilings as ``ceilings_measured``.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.bench.cache_levels import cache_roofs, run_cache_levels, with_residency
from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    list_saved_ceilings,
    load_ceilings,
    merge_ceilings,
)
from gpuperf_gui.core.child_stream import iter_in_child
from gpuperf_gui.core.bench.plans import MATMUL_DTYPES, BenchPlan, build_plan, default_cpu_threads
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import (
    BenchRun,
    default_results_dir,
    export_csv,
    export_json,
    list_runs,
    new_run_path,
    read_run,
)
from gpuperf_gui.core.units import format_bytes, format_clock, format_si, parse_whole_list
from gpuperf_gui.views.plotting import XYBuffer, log_si_axes
from gpuperf_gui.views.rich_text import plain_tooltip
from gpuperf_gui.views.workers import TaskRunner

Produce = Callable[[threading.Event], Iterator[object]]
MeasurementsFactory = Callable[[BenchPlan], Produce]

REDRAW_INTERVAL_MS = 33  # ~30 Hz
MEASURE = "gpuperf_gui.core.bench.sweep:iter_run_and_save"
# After Stop the point in progress may take this long to finish (points are timed for ~0.1 s
# after a 25 ms warm-up); then the helper process is killed. Closing the window waits for it.
STOP_GRACE_S = 5.0
_INVALID_STYLE = "QLineEdit { border: 1px solid #d62728; background: #fdecea; }"
#: Empty plots show these ranges (log10 of the axis values) instead of pyqtgraph's 1..10 default.
_DEFAULT_RANGES = {
    "matmul": ((64, 16384), (1e9, 1e15)),       # n; FLOP/s
    "memory": ((1e4, 1e10), (1e9, 1e13)),       # working set bytes; bytes/s
    "ai": ((0.1, 1000), (1e9, 1e15)),           # FLOP/byte; FLOP/s
}
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def default_measurements_factory(results_dir: Path | None, collectives: bool) -> MeasurementsFactory:
    """The real measuring loop, in a helper interpreter (gpuperf_gui.core.child_stream): importing
    torch and ``torch.compile`` hold the GIL for hundreds of ms, which would freeze the window even
    from a worker thread; an out-of-memory kill or a CUDA fault there leaves the app running. The
    child appends each point to the run's JSON-lines file, so a crash loses at most one point."""
    def factory(plan: BenchPlan) -> Produce:
        def produce(stop: threading.Event) -> Iterator[object]:
            # the collectives' plan is made in the child: choosing NCCL or gloo imports torch
            yield from iter_in_child(MEASURE, (plan,), {"results_dir": results_dir,
                                                          "collectives": "quick" if collectives else None},
                                     stop=stop, grace_s=STOP_GRACE_S, nice=10)
        return produce
    return factory


def format_local_time(epoch_s: float) -> str:
    """A moment in the locale's short date and time format (QLocale: "12/1/26 10:15 PM" in en_US)."""
    from PySide6.QtCore import QDateTime, QLocale

    return QLocale().toString(QDateTime.fromSecsSinceEpoch(int(epoch_s)), QLocale.FormatType.ShortFormat)


class FieldError(ValueError):
    """Bad input in one control; ``field`` names it so the tab can mark it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_sizes(text: str) -> tuple[int, ...]:
    """The sizes field ("1024, 4096") as positive ints (core.units); FieldError with a plain message."""
    try:
        return parse_whole_list(text, "sizes")
    except ValueError as exc:
        raise FieldError("sizes", str(exc)) from None


def plot_coordinates(point: MeasuredPoint) -> tuple[str, str, float, float] | None:
    """(plot, series, x, y) of a point on the rate-vs-size plots; None when it has no rate."""
    if point.seconds <= 0:
        return None
    if point.kernel == "matmul":
        return "matmul", f"matmul {point.dtype}", float(point.size), point.flops_per_s
    if point.kernel == "fma_chain":
        return "ai", f"fma_chain {point.dtype}", point.ai_flops_per_byte, point.flops_per_s
    if point.busbw_bytes_per_s:
        return "memory", f"{point.kernel} busbw", float(point.bytes), point.busbw_bytes_per_s
    return "memory", f"{point.kernel} {point.dtype}", float(point.working_set_bytes or point.bytes), \
        point.bytes_per_s


class ResultsModel(QAbstractTableModel):
    """Measured points, one row each (appended as they arrive)."""

    COLUMNS = ("run", "kernel", "dtype", "size", "rate", "bandwidth", "time", "±IQR", "n", "AI",
               "method", "threads", "clock MHz", "W", "throttled")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, MeasuredPoint]] = []

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        run, p = self.rows[index.row()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return plain_tooltip(f"{p.label}: {p.method}, {p.samples} samples, L2 flushed: {p.l2_flushed}"
                                 + ("" if p.reliable else "\nunreliable: spread too wide (a busy machine?), "
                                    "not used as a ceiling"))
        size = (f"{p.size}³" if p.kernel == "matmul" else
                f"k={p.fma_per_element}" if p.kernel == "fma_chain" else format_bytes(p.working_set_bytes))
        bandwidth = format_si(p.busbw_bytes_per_s or p.bytes_per_s, "B/s")
        values = (
            run, p.kernel, p.dtype, size,
            format_si(p.flops_per_s, "FLOP/s") if p.flops else "",
            f"{bandwidth} busbw" if p.busbw_bytes_per_s else bandwidth,
            format_si(p.seconds, "s"), f"{p.iqr_fraction / 2:.1%}" + ("" if p.reliable else " unreliable"),
            str(p.samples),
            f"{p.ai_flops_per_byte:.3g}" if p.flops else "0", p.method,
            str(p.threads) if p.threads else "",
            f"{p.sm_clock_hz / 1e6:.0f}" if p.sm_clock_hz else "",
            f"{p.power_w:.0f}" if p.power_w else "",
            {True: "yes", False: "no", None: ""}[p.throttled],
        )
        return values[index.column()]

    def append(self, run: str, point: MeasuredPoint) -> None:
        row = len(self.rows)
        self.beginInsertRows(QModelIndex(), row, row)
        self.rows.append((run, point))
        self.endInsertRows()

    def extend(self, run: str, points: list[MeasuredPoint]) -> None:
        self.beginResetModel()
        self.rows.extend((run, p) for p in points)
        self.endResetModel()

    def clear(self) -> None:
        self.beginResetModel()
        self.rows.clear()
        self.endResetModel()


class BenchmarkTab(QWidget):
    """Choose device, suite, dtypes and sizes; Start/Stop; watch points arrive."""

    point_measured = Signal(object)      # RooflinePoint (kind "measured"), for the Roofline tab
    ceilings_measured = Signal(object)   # MeasuredCeilings
    benchmark_finished = Signal()        # GUI-thread relay of the worker's run_finished (R19)
    cache_roofs_measured = Signal(str, object)  # device id, [CacheRoof]: the current run's cache roofs
    run_measured = Signal(str)           # device id of the run shown: just measured, or the latest opened

    def __init__(self, context: Any, parent: QWidget | None = None, *,
                 measurements_factory: MeasurementsFactory | None = None,
                 results_dir: Path | None = None, autoload_latest: bool = True) -> None:
        super().__init__(parent)
        self.context = context
        self.results_dir = results_dir
        self._factory = measurements_factory
        self.task = TaskRunner(self, stop_timeout_ms=int(STOP_GRACE_S * 1000) + 3000)
        self.task.item_produced.connect(self._on_item_produced)
        self.task.run_failed.connect(self._on_run_failed)
        self.task.run_finished.connect(self._on_run_finished)
        self._stopped: BenchMessage | None = None
        self._run_path: Path | None = None
        self.current_points: list[MeasuredPoint] = []
        self.current_ceilings: MeasuredCeilings | None = None
        self.messages: list[BenchMessage] = []
        self._series: dict[tuple[str, str], tuple[XYBuffer, pg.PlotDataItem]] = {}
        self._dirty_series: set[tuple[str, str]] = set()  # redrawn at the next timer tick
        self._ranging = False
        self.redraw_count = 0          # setData rounds (tests check the 30 Hz throttle)
        self._build_ui()
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setInterval(REDRAW_INTERVAL_MS)
        self._redraw_timer.setTimerType(Qt.TimerType.PreciseTimer)  # never early: at most ~30 redraws/s
        self._redraw_timer.timeout.connect(self._on_redraw_timer)
        self._redraw_timer.start()
        self._pending_autoload = autoload_latest
        if autoload_latest:
            QTimer.singleShot(0, self._autoload_latest)  # after the main window wired our signals

    # layout ---------------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.device_combo = QComboBox()
        self.device_combo.setEditable(True)
        self.device_combo.addItems(["auto", "cpu", "cuda:0"])
        self.device_combo.setToolTip("auto: the first CUDA GPU, else the CPU; cuda:N for another GPU")
        self.suite_combo = QComboBox()
        self.suite_combo.addItems(["quick", "full", "custom"])
        self.dtype_boxes = {dtype: QCheckBox(dtype) for dtype in MATMUL_DTYPES}
        for box in self.dtype_boxes.values():
            box.setToolTip("matmul dtypes (none ticked: the suite's default for the device)")
        self.sizes_edit = QLineEdit()
        self.sizes_edit.setPlaceholderText("matmul n, e.g. 1024,4096 (empty: suite default)")
        self.sizes_edit.textEdited.connect(self._clear_field_error)
        self.collectives_box = QCheckBox("collectives")
        self.collectives_box.setToolTip("then all-reduce/all-gather/reduce-scatter: gloo ×2 on the CPU, "
                                        "NCCL across GPUs")
        self.start_button = QPushButton("Start")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.open_button = QPushButton("Open run…")
        self.csv_button = QPushButton("Export CSV…")
        self.json_button = QPushButton("Export JSON…")
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.open_button.clicked.connect(self._on_open_clicked)
        self.csv_button.clicked.connect(self._on_export_csv_clicked)
        self.json_button.clicked.connect(self._on_export_json_clicked)

        controls = QHBoxLayout()
        for widget in (QLabel("Device"), self.device_combo, QLabel("Suite"), self.suite_combo,
                       *self.dtype_boxes.values(), self.sizes_edit, self.collectives_box,
                       self.start_button, self.stop_button, self.open_button, self.csv_button,
                       self.json_button):
            controls.addWidget(widget)

        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.status_label = QLabel("Ready. Start measures this machine (torch loads in the background).")
        self.ceilings_label = QLabel("")
        self.ceilings_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.ceilings_label.setWordWrap(True)
        progress = QHBoxLayout()
        progress.addWidget(self.progress_bar, 1)
        progress.addWidget(self.status_label, 3)

        self.plots = pg.GraphicsLayoutWidget()
        self.plots.setBackground("w")  # same look as the Roofline tab
        self.legends: dict[str, pg.LegendItem] = {}
        self.plot_items = {
            "matmul": self._make_plot(0, "Matmul: rate vs size", ("n (n×n×n)", ""), ("rate", "FLOP/s")),
            "memory": self._make_plot(1, "Memory: bandwidth vs working set", ("working set", "B"),
                                      ("bandwidth", "B/s")),
            "ai": self._make_plot(2, "FMA chain: rate vs intensity", ("FLOP/byte", ""), ("rate", "FLOP/s")),
        }
        self._reset_ranges()
        self.table_model = ResultsModel(self)
        self.table = QTableView()
        self.table.setModel(self.table_model)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self._table_fitted_rows = 0  # rows whose text the column widths already fit
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.plots)
        splitter.addWidget(self.table)
        splitter.setSizes([600, 300])

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addLayout(progress)
        layout.addWidget(self.ceilings_label)
        layout.addWidget(splitter, 1)

    def _make_plot(self, column: int, title: str, x_axis: tuple[str, str],
                   y_axis: tuple[str, str]) -> pg.PlotItem:
        """A log-log plot; each axis is (label, SI unit of its tick labels)."""
        (x_label, x_unit), (y_label, y_unit) = x_axis, y_axis
        plot = self.plots.addPlot(row=0, col=column, title=title,
                                  axisItems=log_si_axes(x_unit, y_unit))
        plot.setLogMode(x=True, y=True)  # scattered sweep points: no clipToView (R9)
        plot.setLabel("bottom", x_label)
        plot.setLabel("left", y_label)
        plot.getAxis("left").setWidth(86)  # fits "500 GFLOP/s": new tick labels never relayout the row
        plot.showGrid(x=True, y=True, alpha=0.3)
        plot.disableAutoRange()  # _fit_ranges follows the data (at least a decade per axis)
        key = self._plot_key(title)
        plot.vb.sigRangeChangedManually.connect(lambda *_args, key=key: self._on_range_changed_manually(key))
        # The legend sits under the plot, not on it: it never covers a curve.
        legend = pg.LegendItem(colCount=2, labelTextColor="#444")
        self.plots.addItem(legend, row=1, col=column)
        self.legends[key] = legend
        return plot

    @staticmethod
    def _plot_key(title: str) -> str:
        return {"Matmul": "matmul", "Memory": "memory", "FMA chain": "ai"}[title.split(":")[0]]

    def _reset_ranges(self) -> None:
        """Sensible empty axes (no "2 B" ticks); :meth:`_fit_ranges` follows the data once it comes."""
        self._user_ranged: set[str] = set()
        for key, plot in self.plot_items.items():
            (x0, x1), (y0, y1) = _DEFAULT_RANGES[key]
            self._set_range(key, (np.log10(x0), np.log10(x1)), (np.log10(y0), np.log10(y1)))

    def _set_range(self, key: str, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        self._ranging = True  # not the user's zoom
        try:
            self.plot_items[key].setRange(xRange=x_range, yRange=y_range, padding=0)
        finally:
            self._ranging = False

    def _on_range_changed_manually(self, key: str) -> None:
        if not self._ranging:
            self._user_ranged.add(key)  # the user zoomed or panned: stop following the data

    def _fit_ranges(self, keys: set[str]) -> None:
        """Each plot's range around its data, at least one decade per axis: pyqtgraph's autorange
        would zoom into a span with no 1-2-5 tick to label (e.g. 138–164 GFLOP/s)."""
        for key in keys:
            if key in self._user_ranged:
                continue
            xs = [b.x[:b.count] for (plot_key, _), (b, _i) in self._series.items() if plot_key == key]
            if not xs:
                continue
            ys = [b.y[:b.count] for (plot_key, _), (b, _i) in self._series.items() if plot_key == key]
            self._set_range(key, _decade_span(np.concatenate(xs)), _decade_span(np.concatenate(ys)))

    # running --------------------------------------------------------------------------------
    def plan_from_controls(self) -> BenchPlan:
        """The plan the controls describe (raises ValueError, FieldError for a bad field)."""
        device = self.device_combo.currentText().strip() or "auto"
        sizes = parse_sizes(self.sizes_edit.text())
        dtypes = tuple(d for d, box in self.dtype_boxes.items() if box.isChecked())
        suite = self.suite_combo.currentText()
        plan = build_plan(suite, device, dtypes, sizes)
        path = new_run_path(device, self.results_dir)
        # The same thread count as `gpuperf bench` (recorded with each point and the ceilings).
        return replace(plan, results_path=path, cpu_threads=default_cpu_threads())

    def start(self) -> bool:
        """Start a run from the controls; False (with a message) when busy or the input is bad."""
        if self.is_busy():
            return False
        self._clear_field_error()
        try:
            plan = self.plan_from_controls()
        except FieldError as exc:
            self._mark_field_error(exc)
            return False
        except ValueError as exc:
            self.status_label.setText(f"Cannot start: {exc}")
            return False
        factory = self._factory or default_measurements_factory(self.results_dir,
                                                                 self.collectives_box.isChecked())
        self.start_with(factory(plan), plan.results_path)
        return True

    def _mark_field_error(self, error: FieldError) -> None:
        widget = {"sizes": self.sizes_edit}.get(error.field)
        if widget is not None:
            widget.setStyleSheet(_INVALID_STYLE)
            widget.setToolTip(str(error))
            widget.setFocus()
        self.status_label.setText(str(error))

    def _clear_field_error(self) -> None:
        self.sizes_edit.setStyleSheet("")
        self.sizes_edit.setToolTip("")

    def field_is_marked(self, field: str = "sizes") -> bool:
        """Whether a control is marked invalid (tests, screenshots)."""
        return bool({"sizes": self.sizes_edit}[field].styleSheet())

    def start_with(self, produce: Produce, run_path: Path | None = None) -> None:
        """Run ``produce(stop)`` in a worker thread and stream what it yields."""
        self._clear_current()
        self._run_path = run_path
        self._stopped = None
        if not self.task.start(produce):
            return
        self.start_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.progress_bar.setRange(0, 0)  # busy until the first "started" message
        self.status_label.setText("Starting (loading torch)…")

    def stop(self) -> None:
        """Ask the run to stop after the point in progress (sets a flag; never terminate()). The
        generator still yields a "stopped" message and the ceilings of the points measured so far."""
        if self.task.cancel():
            self.status_label.setText("Stopping after the point in progress…")
            self.stop_button.setEnabled(False)

    def is_busy(self) -> bool:
        return self._pending_autoload or self.task.is_running()

    def shutdown(self) -> None:
        self.task.shutdown()
        self._redraw_timer.stop()

    def _clear_current(self) -> None:
        self.current_points = []
        self.current_ceilings = None
        self.messages = []
        if self.table_model.rows:
            self.table_model.clear()
        self._user_ranged.clear()
        if self._series:  # an empty tab is left alone: clearing it still costs a full repaint
            for plot in self.plot_items.values():
                plot.clear()
            for legend in self.legends.values():
                legend.clear()
            self._series.clear()
            self._dirty_series.clear()
            self._reset_ranges()
        self.ceilings_label.setText("")
        self.ceilings_label.setToolTip("")

    # worker signals (GUI thread) ---------------------------------------------------------------
    def _on_item_produced(self, item: object) -> None:
        if isinstance(item, MeasuredPoint):
            self._add_point("this run", item)
            self.current_points.append(item)
            self.progress_bar.setValue(min(self.progress_bar.value() + 1, self.progress_bar.maximum()))
            if item.flops > 0 and item.bytes > 0:
                self.point_measured.emit(item.to_roofline_point())
            elif item.cache_level:  # a streaming point: it measures a cache roof
                self._emit_cache_roofs(self.current_points)
        elif isinstance(item, MeasuredCeilings):
            self.current_ceilings = item
            self._show_ceilings(item, self._run_path.stem if self._run_path else "this run")
        elif isinstance(item, BenchMessage):
            self._on_message(item)

    def _show_ceilings(self, run_ceilings: MeasuredCeilings | None, run_name: str) -> None:
        """The run's own ceilings in the summary line; the saved ones (best so far on this
        machine, merged with the run's) go to the Roofline tab."""
        if run_ceilings is None:
            return
        saved = merge_ceilings(load_ceilings(run_ceilings.device_id, self.results_dir), run_ceilings)
        device = run_ceilings.device_name or run_ceilings.device_id
        partial = "" if run_ceilings.complete else ", stopped early"
        text = f"This run ({device}, {run_name}{partial}): {run_ceilings.summary()}"
        if saved.summary() != run_ceilings.summary():
            text += f"\nSaved ceilings, best so far on this machine (on the Roofline): {saved.summary()}"
        else:
            text += " (the best so far: saved, on the Roofline)"
        self.ceilings_label.setText(text)
        self.ceilings_label.setToolTip("Saved ceilings:\n" + "\n".join(saved.sources(format_local_time)))
        self.ceilings_measured.emit(saved)

    def _on_message(self, message: BenchMessage) -> None:
        if message.kind == "started":
            self.progress_bar.setRange(0, max(1, message.total))
            self.progress_bar.setValue(message.index)
            left = f" — about {format_clock(message.eta_s)} left" if message.eta_s is not None else ""
            self.status_label.setText(f"{message.label} ({message.index + 1}/{message.total}){left}")
            return
        self.messages.append(message)
        if message.kind == "stopped":
            self._stopped = message
            self._show_stopped()
            return
        if message.kind == "finished" and self._stopped is not None:
            return  # keep "stopped after N of M points"
        if message.kind in ("skipped", "warning", "finished", "info"):
            self.status_label.setText(message.text)

    def _show_stopped(self) -> None:
        done = len(self.current_points)
        total = self._stopped.total if self._stopped is not None and self._stopped.total else done
        self.progress_bar.setRange(0, max(1, total))
        self.progress_bar.setValue(min(done, max(1, total)))
        self.status_label.setText(f"Stopped after {done} of {total} points")

    def _on_run_failed(self, text: str) -> None:
        self.messages.append(BenchMessage("error", text))
        self.status_label.setText(f"Benchmark failed: {text}")

    def _on_run_finished(self) -> None:
        self.start_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        if self.task.cancel_requested and self._stopped is None:  # stopped before the loop said so
            self._stopped = BenchMessage("stopped", "stopped", len(self.current_points),
                                         self.progress_bar.maximum())
        if self._stopped is not None:
            self._show_stopped()
        else:
            if self.progress_bar.maximum() == 0:
                self.progress_bar.setRange(0, 1)
            self.progress_bar.setValue(self.progress_bar.maximum())
        self._on_redraw_timer()
        if self.current_points and self.current_points[-1].device_id:
            self.run_measured.emit(self.current_points[-1].device_id)
        self.benchmark_finished.emit()

    def _emit_cache_roofs(self, points: list[MeasuredPoint]) -> None:
        """The cache roofs (L1, L2, L3 bandwidth) the run's streaming points measured."""
        device_id = next((p.device_id for p in points if p.device_id), "")
        if device_id:
            self.cache_roofs_measured.emit(device_id, cache_roofs(points))

    # plots (R7, R8) ----------------------------------------------------------------------------
    def _add_point(self, run: str, point: MeasuredPoint) -> None:
        self.table_model.append(run, point)
        self._buffer_point(run, point)

    def _buffer_point(self, run: str, point: MeasuredPoint) -> None:
        coordinates = plot_coordinates(point)
        if coordinates is None:
            return
        plot_key, name, x, y = coordinates
        if x <= 0 or y <= 0:
            return
        series_name = name if run == "this run" else f"{run}: {name}"
        key = (plot_key, series_name)
        if key not in self._series:
            colour = _COLOURS[len(self._series) % len(_COLOURS)]
            style = Qt.PenStyle.SolidLine if run == "this run" else Qt.PenStyle.DashLine
            item = pg.PlotDataItem(pen=pg.mkPen(colour, width=2, style=style), symbol="o", symbolSize=6,
                                   symbolBrush=colour, name=series_name)
            plot = self.plot_items[plot_key]
            plot.addItem(item)  # once per series, never per point
            self.legends[plot_key].addItem(item, series_name)
            self._series[key] = (XYBuffer(), item)
        self._series[key][0].append(x, y)
        self._dirty_series.add(key)

    def _on_redraw_timer(self) -> None:
        self._fit_columns()
        if not self._dirty_series:
            return
        for key in self._dirty_series:  # only the curves that grew: the others' plots are not repainted
            buffer, item = self._series[key]
            n = buffer.count
            item.setData(buffer.x[:n], buffer.y[:n], skipFiniteCheck=True)
        self._fit_ranges({plot_key for plot_key, _name in self._dirty_series})
        self._dirty_series.clear()
        self.redraw_count += 1

    def _fit_columns(self, max_rows: int = 200) -> None:
        """Widen columns to the text of rows added since the last call (never narrows them: the user
        may have resized). Cheaper than resizeColumnsToContents, which measures every row."""
        rows = self.table_model.rowCount()
        if rows < self._table_fitted_rows:
            self._table_fitted_rows = 0  # the model was cleared
        if rows == self._table_fitted_rows:
            return
        metrics = self.table.fontMetrics()
        padding = 14
        widths = [self.table.columnWidth(c) for c in range(self.table_model.columnCount())]
        model = self.table_model
        for row in range(self._table_fitted_rows, min(rows, self._table_fitted_rows + max_rows)):
            for column in range(len(widths)):
                text = model.data(model.index(row, column)) or ""
                widths[column] = max(widths[column], metrics.horizontalAdvance(text) + padding)
        for column, width in enumerate(widths):
            if width > self.table.columnWidth(column):
                self.table.setColumnWidth(column, width)
        self._table_fitted_rows = rows

    def series_data(self, plot_key: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The data a series' curve was last given (linear units; empty before the first redraw)."""
        entry = self._series.get((plot_key, name))
        x = None if entry is None else entry[1].xData
        if x is None:
            return np.array([]), np.array([])
        return np.asarray(x), np.asarray(entry[1].yData)

    # runs on disk -----------------------------------------------------------------------------
    def _autoload_latest(self) -> None:
        """Show the latest run, and give the Roofline tab every device's saved ceilings (the best
        measured so far on this machine; not the latest run's). A run that cannot be read is
        reported in the status line; the saved ceilings still go out."""
        try:
            try:
                runs = list_runs(self.results_dir)
                if runs and not self.is_running():
                    self.open_run(runs[0], as_current=True)
            except (OSError, ValueError) as exc:  # RunFileError is a ValueError
                self.status_label.setText(f"Could not open the latest run: {exc}")
            shown = self.current_ceilings.device_id if self.current_ceilings else None
            for saved in list_saved_ceilings(self.results_dir):
                if saved.device_id != shown:  # open_run gave that one already
                    self.ceilings_measured.emit(saved)
        finally:
            self._pending_autoload = False

    def is_running(self) -> bool:
        return self.task.is_running()

    def open_run(self, path: Path, as_current: bool = False) -> BenchRun:
        """Show a saved run: as the current one, or beside it (dashed) for comparison."""
        run = read_run(Path(path))
        run.points = with_residency(run.points, run_cache_levels(run.header), run.header.get("threads"))
        label = "this run" if as_current else run.name
        if as_current:
            self._clear_current()
            self.current_points = list(run.points)
            self.current_ceilings = run.ceilings
            self._run_path = run.path
        self.table_model.extend(label, run.points)
        for point in run.points:
            self._buffer_point(label, point)
            if point.flops > 0 and point.bytes > 0:  # older runs name the device only in the header
                self.point_measured.emit(point.to_roofline_point(str(run.header.get("device_id", ""))))
        if as_current:  # a run opened for comparison leaves the ceilings alone
            self._show_ceilings(run.ceilings, run.name)
            self._emit_cache_roofs(self.current_points)
            if run.points and run.points[-1].device_id:  # the latest run's points: drawn at once
                self.run_measured.emit(run.points[-1].device_id)
        if as_current:
            self.progress_bar.setRange(0, 1)
            self.progress_bar.setValue(1)
        torn = f", {run.torn_lines} unreadable line(s) skipped" if run.torn_lines else ""
        self.status_label.setText(f"Opened {run.name}: {len(run.points)} points{torn}")
        self._on_redraw_timer()
        return run

    def current_run(self) -> BenchRun:
        return BenchRun(path=self._run_path, header={}, points=list(self.current_points),
                        messages=list(self.messages), ceilings=self.current_ceilings)

    def export_csv(self, path: Path) -> None:
        export_csv([p for _run, p in self.table_model.rows], Path(path))

    def export_json(self, path: Path) -> None:
        export_json(self.current_run(), Path(path))

    def _runs_folder(self) -> str:
        return str((self.results_dir or default_results_dir()) / "runs")

    def _on_open_clicked(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(self, "Open a benchmark run", self._runs_folder(),
                                                    "Benchmark runs (*.jsonl);;All files (*)")
        if not path:
            return
        try:
            self.open_run(Path(path), as_current=not self.current_points)
        except (OSError, ValueError) as exc:  # RunFileError is a ValueError
            self.status_label.setText(f"Could not open {Path(path).name}: {exc}")

    def _on_export_csv_clicked(self) -> None:
        path, _filter = QFileDialog.getSaveFileName(self, "Export points as CSV", "bench.csv", "CSV (*.csv)")
        if path:
            self._export(self.export_csv, Path(path))

    def _on_export_json_clicked(self) -> None:
        path, _filter = QFileDialog.getSaveFileName(self, "Export run as JSON", "bench.json", "JSON (*.json)")
        if path:
            self._export(self.export_json, Path(path))

    def _export(self, write: Callable[[Path], None], path: Path) -> None:
        """Write an export; a failure (no permission, a folder, disk full) goes to the status line."""
        try:
            write(path)
        except OSError as exc:
            self.status_label.setText(f"Could not write {path}: {exc.strerror or exc}")
            return
        self.status_label.setText(f"Exported to {path}")


def _decade_span(values: np.ndarray, pad_decades: float = 0.08) -> tuple[float, float]:
    """log10 range covering ``values`` (> 0), padded and widened to at least one decade."""
    logs = np.log10(values[values > 0])
    low, high = float(logs.min()) - pad_decades, float(logs.max()) + pad_decades
    if high - low < 1.0:
        middle = (low + high) / 2
        low, high = middle - 0.5, middle + 0.5
    return low, high


__all__ = ["BenchmarkTab", "MeasurementsFactory", "default_measurements_factory"]
