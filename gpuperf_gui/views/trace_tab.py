"""The Trace tab: lanes a person can read at a glance, the op table, and the diagnosis beside them.

Public API (used by the main window)::

    tab = TraceTab(context)
    tab.open_paths([Path("trace.json.gz")])   # asynchronous: a worker thread loads and analyses
    tab.is_busy(); tab.cancel(); tab.shutdown()
    tab.mfu_figures_ready  -> Signal(object)        # the engine's TraceMfuFigures
    tab.roofline_points_ready -> Signal(str, object)  # (series name, list[RooflinePoint])
    tab.demo_entries() -> list[(name, materialise)]  # for Help ▸ Demo traces; the synthetic ones
                                                     # are written to a folder the tab removes at shutdown
    demo_entries()     -> the same, written to a folder removed when the process exits
"""

from __future__ import annotations

import importlib.resources
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np
from PySide6.QtCore import Qt, QThread, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.units import format_si
from gpuperf_gui.views.trace_engine import load_job
from gpuperf_gui.views.trace_panels import DetailsPanel, DiagnosisPanel, EventDetails, OpTablePanel, SearchResults
from gpuperf_gui.views.trace_prepare import DEFAULT_IDLE_THRESHOLD_US, LoadProgress, PreparedTrace
from gpuperf_gui.views.trace_style import format_duration_us, legend_entries, make_palette
from gpuperf_gui.views.trace_timeline import EventRef, TraceTimeline
from gpuperf_gui.views.workers import GeneratorWorker, start_in_thread, stop_thread

if TYPE_CHECKING:
    from gpuperf_gui.views.context import AppContext

MAX_LISTED_MATCHES = 500
MAX_PARTNERS = 40


class TraceTab(QWidget):
    """Open a torch.profiler trace (file or folder of ranks) and read it."""

    mfu_figures_ready = Signal(object)
    roofline_points_ready = Signal(str, object)
    trace_loaded = Signal()          # emitted on the GUI thread when a trace is shown
    load_failed = Signal(str)

    def __init__(self, context: AppContext | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.prepared: PreparedTrace | None = None
        self._worker: GeneratorWorker | None = None
        self._thread: QThread | None = None
        self._pending: list[Path] | None = None
        self._cancelled = False
        self._failed: str | None = None
        self._matches: list[EventRef] = []
        self._match_pos = -1
        self._last_query: str | None = None   # the last substring search (Enter again: next match)
        self._demo_dir: tempfile.TemporaryDirectory | None = None   # synthetic demo traces
        self._palette = make_palette()
        self.setAcceptDrops(True)
        self._build()

    # -- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.title = QLabel("<b>No trace</b>")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Search names (Enter)")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.setFixedWidth(220)
        self.prev_button = QToolButton(text="◀")
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        self.next_button = QToolButton(text="▶")
        self.next_button.setToolTip("Next match (Enter)")
        self.match_label = QLabel("")
        self.step_combo = QComboBox()
        self.step_combo.setToolTip("Zoom to a step")
        self.step_combo.setMinimumWidth(110)
        self.zoom_sel_button = QPushButton("Zoom to selection")
        self.zoom_sel_button.setToolTip("Zoom to the selected event or the right-dragged range (F)")
        self.reset_button = QPushButton("Reset view")
        self.idle_spin = QDoubleSpinBox()
        self.idle_spin.setRange(0.0, 1e6)
        self.idle_spin.setDecimals(0)
        self.idle_spin.setSuffix(" µs")
        self.idle_spin.setValue(DEFAULT_IDLE_THRESHOLD_US)
        self.idle_spin.setToolTip("Idle gaps on compute streams at least this long are drawn red")
        self.mfu_button = QPushButton("Send to MFU")
        self.mfu_button.setToolTip("Fill the MFU tab's gap causes and step time from this trace")
        self.roofline_button = QPushButton("Show on roofline")
        self.roofline_button.setToolTip("Place the trace's kernels with known FLOPs and bytes on the roofline")

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.title, 1)
        bar.addWidget(self.search_edit)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addWidget(self.match_label)
        bar.addSpacing(10)
        bar.addWidget(self.step_combo)
        bar.addWidget(self.zoom_sel_button)
        bar.addWidget(self.reset_button)
        bar.addSpacing(10)
        bar.addWidget(QLabel("Idle ≥"))
        bar.addWidget(self.idle_spin)
        bar.addSpacing(10)
        bar.addWidget(self.mfu_button)
        bar.addWidget(self.roofline_button)

        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        self.progress_row = QWidget()
        prow = QHBoxLayout(self.progress_row)
        prow.setContentsMargins(4, 0, 4, 0)
        prow.addWidget(self.progress, 1)
        prow.addWidget(self.cancel_button)
        self.progress_row.hide()

        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()

        self.timeline = TraceTimeline()
        self.placeholder = QLabel(
            "<div style='font-size:13pt; color:#555'>Drop a torch.profiler trace here</div>"
            "<div style='color:#777'>a <code>.json</code> / <code>.json.gz</code> file, or a folder with "
            "one file per rank<br>or use File ▸ Open, or Help ▸ Demo traces</div>"
            "<div style='color:#999; margin-top:12px'>wheel or W/S zoom · drag or A/D pan · "
            "right-drag selects a range · click an event</div>")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.timeline)

        self.legend = QLabel(self._legend_html())
        self.legend.setStyleSheet("color: #444")
        self.legend.setWordWrap(True)
        hint = ("Wheel or W/S: zoom · drag or A/D: pan · Shift+wheel: scroll lanes · right-drag: select "
                "a range, then F (or Zoom to selection) · click: select an event and its partner · Esc: clear")
        self.timeline.setToolTip(hint)
        self.legend.setToolTip(hint)
        legend_row = QHBoxLayout()
        legend_row.setContentsMargins(4, 0, 4, 0)
        legend_row.addWidget(self.legend, 1)

        self.details = DetailsPanel()
        self.op_panel = OpTablePanel()
        self.rank_combo = QComboBox()
        self.op_panel.layout().itemAt(0).layout().insertWidget(0, self.rank_combo)
        self.rank_combo.hide()
        self.search_results = SearchResults()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.setDocumentMode(True)
        self.bottom_tabs.addTab(self.details, "Selection")
        self.bottom_tabs.addTab(self.op_panel, "Op table")
        self.bottom_tabs.addTab(self.search_results, "Search")

        self.diagnosis = DiagnosisPanel()
        self.diagnosis.setMinimumWidth(300)

        timeline_box = QWidget()
        tl = QVBoxLayout(timeline_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(2)
        tl.addWidget(self.stack, 1)
        tl.addLayout(legend_row)
        self.left_split = QSplitter(Qt.Orientation.Vertical)
        self.left_split.addWidget(timeline_box)
        self.left_split.addWidget(self.bottom_tabs)
        self.left_split.setStretchFactor(0, 3)
        self.left_split.setStretchFactor(1, 1)
        self.left_split.setSizes([700, 190])
        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(self.left_split)
        self.main_split.addWidget(self.diagnosis)
        self.main_split.setStretchFactor(0, 4)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setSizes([1220, 360])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.message)
        layout.addWidget(self.main_split, 1)

        self.search_edit.returnPressed.connect(self._on_search_entered)
        self.next_button.clicked.connect(lambda: self.step_match(+1))
        self.prev_button.clicked.connect(lambda: self.step_match(-1))
        self.step_combo.activated.connect(self._on_step_chosen)
        self.zoom_sel_button.clicked.connect(self.zoom_to_selection)
        self.reset_button.clicked.connect(self.timeline.reset_view)
        self.idle_spin.editingFinished.connect(self._on_idle_threshold_changed)
        self.mfu_button.clicked.connect(self.send_to_mfu)
        self.roofline_button.clicked.connect(self.show_on_roofline)
        self.cancel_button.clicked.connect(self.cancel)
        self.timeline.event_clicked.connect(self.select_event)
        self.timeline.range_selected.connect(self._on_range_selected)
        self.details.partner_clicked.connect(self._on_partner_link)
        self.op_panel.name_selected.connect(self._on_op_name_selected)
        self.rank_combo.activated.connect(lambda _i: self._fill_op_table())
        self.search_results.match_clicked.connect(self._go_to_match)
        self._selected_range: tuple[float, float] | None = None
        self._update_enabled()

    @staticmethod
    def _legend_html() -> str:
        items = "".join(f"<span style='color:{c}'>■</span>&nbsp;{name}&nbsp;&nbsp; " for name, c in legend_entries())
        return (f"{items}<span style='color:#e23c3c'>■</span>&nbsp;GPU idle ≥ threshold&nbsp;&nbsp; "
                f"<span style='color:#5a5f6a'>■</span>&nbsp;folded: darker, opacity = busy fraction")

    def _update_enabled(self) -> None:
        prepared = self.prepared
        for w in (self.search_edit, self.prev_button, self.next_button, self.step_combo,
                  self.zoom_sel_button, self.reset_button):
            w.setEnabled(prepared is not None)
        self.mfu_button.setEnabled(prepared is not None and prepared.mfu_figures is not None)
        self.roofline_button.setEnabled(prepared is not None and bool(prepared.roofline_points))

    # -- opening ------------------------------------------------------------------------------------
    def open_paths(self, paths: list[Path]) -> None:
        """Load and analyse ``paths`` (files and/or folders of ranks) in a worker thread."""
        paths = [Path(p) for p in paths]
        if not paths:
            return
        if self._thread is not None:
            self._pending = paths
            self.cancel()
            return
        self._start(paths)

    def _start(self, paths: list[Path]) -> None:
        self._cancelled = False
        self._failed = None
        self._show_message("")
        worker = GeneratorWorker(load_job(paths, float(self.idle_spin.value())))
        worker.item_produced.connect(self._on_item_produced)
        worker.run_failed.connect(self._on_run_failed)
        worker.run_finished.connect(self._on_run_finished)
        self._worker = worker
        self.progress.setRange(0, 0)
        self.progress.setFormat(f"opening {', '.join(p.name for p in paths)}")
        self.progress_row.show()
        self.cancel_button.setEnabled(True)
        self._thread = start_in_thread(worker, self)

    def is_busy(self) -> bool:
        """True while a trace loads (the ``--screenshot`` mode waits for False)."""
        return self._thread is not None

    def cancel(self) -> None:
        """Stop loading after the current file or stage; the trace shown before stays."""
        if self._worker is not None:
            self._cancelled = True
            self._worker.request_stop()
            self.progress.setFormat("cancelling…")
            self.cancel_button.setEnabled(False)

    def shutdown(self) -> None:
        """Stop the worker and wait for its thread (the main window's closeEvent); remove the
        synthetic demo traces this tab wrote."""
        self._pending = None
        worker, thread = self._worker, self._thread
        self._worker = self._thread = None
        stop_thread(worker, thread)
        if self._demo_dir is not None:
            self._demo_dir.cleanup()
            self._demo_dir = None

    def demo_entries(self) -> list[tuple[str, Callable[[], list[Path]]]]:
        """:func:`demo_entries`, with the synthetic traces written to a folder this tab owns."""
        return demo_entries(self._demo_folder)

    def _demo_folder(self) -> Path:
        if self._demo_dir is None:
            self._demo_dir = tempfile.TemporaryDirectory(prefix="gpuperf-demo-")
        return Path(self._demo_dir.name)

    def closeEvent(self, event) -> None:  # noqa: N802, ANN001
        self.shutdown()
        super().closeEvent(event)

    def _on_item_produced(self, item: object) -> None:
        if isinstance(item, LoadProgress):
            self.progress.setRange(0, item.total)
            self.progress.setValue(item.done)
            self.progress.setFormat(item.text)
        elif isinstance(item, PreparedTrace) and not self._cancelled:
            self._show_prepared(item)

    def _on_run_failed(self, message: str) -> None:
        self._failed = message
        text = message.split(": ", 1)[1] if message.startswith("TraceFormatError: ") else message
        self._show_message(f"Could not open the trace: {text}", error=True)
        self.load_failed.emit(message)

    def _on_run_finished(self) -> None:
        worker, thread = self._worker, self._thread
        self._worker = self._thread = None
        stop_thread(worker, thread)
        self.progress_row.hide()
        if self._cancelled and self._pending is None:
            self._show_message("Loading cancelled." + (" The trace shown before is still open."
                                                      if self.prepared is not None else ""))
        pending, self._pending = self._pending, None
        if pending:
            self._start(pending)

    def _show_message(self, text: str, error: bool = False, note: bool = False) -> None:
        if not text:
            self.message.hide()
            return
        if error:
            style = "background:#fdecea; color:#8b1a1a; border:1px solid #f5c2c0;"
        elif note:
            style = "background:#fff8e1; color:#6d4c00; border:1px solid #ffe08a;"
        else:
            style = "background:#eef3fb; color:#1d3557; border:1px solid #c9d8f0;"
        self.message.setStyleSheet(style + " padding:4px; border-radius:3px;")
        self.message.setText(text)
        self.message.show()

    # -- showing a trace --------------------------------------------------------------------------
    def _show_prepared(self, prepared: PreparedTrace) -> None:
        self.prepared = prepared
        model = prepared.model
        # A threshold typed while the trace loaded was not applied (busy): draw with the spin's value.
        threshold_changed = abs(self.idle_spin.value() - prepared.idle_threshold_us) > 1e-9
        offset = prepared.full_range_us[0]
        self.timeline.set_lanes(prepared.ranks, prepared.lanes, self._palette, prepared.full_range_us, offset)
        self.stack.setCurrentWidget(self.timeline)
        files = prepared.files
        name = Path(files[0]).name if len(files) == 1 else f"{Path(files[0]).parent.name}/ ({len(files)} ranks)"
        events = sum(len(lane) for r in model.ranks for lane in r.lanes)
        self.title.setText(f"<b>{name}</b> <span style='color:#666'>· {events:,} events · "
                           f"{format_duration_us(prepared.full_range_us[1] - prepared.full_range_us[0])}</span>")
        self.title.setToolTip("\n".join(files))
        self.step_combo.clear()
        self.step_combo.addItem("Zoom to step…", None)
        numbers = sorted({s.number for r in model.ranks for s in r.steps})
        for n in numbers:
            self.step_combo.addItem(f"step {n}", n)
        self.diagnosis.show_diagnosis(prepared.diagnosis)
        self.details.show_details(None)
        self.rank_combo.clear()
        for r in model.ranks:
            self.rank_combo.addItem(f"rank {r.rank}", r.rank)
        self.rank_combo.setVisible(len(model.ranks) > 1)
        self._fill_op_table()
        self._clear_search()
        notes = [n for n in prepared.notes if "truncated" in n]
        others = [n for n in prepared.notes if "truncated" not in n]
        if notes:
            self._show_message("Truncated trace: " + "; ".join(notes), note=True)
        elif others:
            self._show_message("; ".join(others[:3]), note=True)
        else:
            self._show_message("")
        self._update_enabled()
        if threshold_changed:
            self._apply_idle_threshold(float(self.idle_spin.value()))
        self.timeline.setFocus()
        self.trace_loaded.emit()

    def _fill_op_table(self) -> None:
        if self.prepared is None:
            return
        tables = self.prepared.op_tables
        rank = self.rank_combo.currentData()
        if rank is None and tables:
            rank = next(iter(tables))
        note = "" if len(self.prepared.model.ranks) == 1 else f"rank {rank}"
        self.op_panel.set_tables(tables.get(rank, {}), note)

    def _on_idle_threshold_changed(self) -> None:
        if self.prepared is None or self.is_busy():
            return  # a trace still loading gets the spin's value in _show_prepared
        if abs(self.idle_spin.value() - self.prepared.idle_threshold_us) < 1e-9:
            return
        self._apply_idle_threshold(float(self.idle_spin.value()))

    def _apply_idle_threshold(self, threshold: float) -> None:
        """Redraw the idle gaps of the compute lanes at ``threshold`` µs."""
        from gpuperf_gui.core.trace.lod import idle_gaps

        self.prepared.idle_threshold_us = threshold
        for spec, item in zip(self.timeline.lane_specs, self.timeline.lanes):
            if spec.kind == "gpu_compute":
                lane = self.prepared.model.ranks[spec.rank_index].lanes[spec.lane_id]
                item.set_gaps(idle_gaps(lane.start_us, lane.start_us + lane.duration_us, threshold))

    # -- navigation ---------------------------------------------------------------------------------
    def _on_step_chosen(self, index: int) -> None:
        number = self.step_combo.itemData(index)
        if number is None or self.prepared is None:
            return
        spans = []
        for r in self.prepared.model.ranks:
            for s in r.steps:
                if s.number == number:
                    spans += [s.cpu_start_us, s.cpu_end_us]
                    if np.isfinite(s.gpu_end_us):
                        spans += [s.gpu_start_us, s.gpu_end_us]
        if spans:
            self.timeline.zoom_to(min(spans), max(spans))

    def _on_range_selected(self, t0: float, t1: float) -> None:
        self._selected_range = (t0, t1) if t1 > t0 else None
        if self._selected_range:
            self.match_label.setText(f"range {format_duration_us(t1 - t0)}")

    def zoom_to_selection(self) -> None:
        """Zoom to the right-dragged range, else to the selected event and its partners."""
        if self._selected_range is not None:
            self.timeline.zoom_to(*self._selected_range, pad_fraction=0.0)
            self._selected_range = None
            self.timeline.view_box.selection.hide()
            return
        ref = self.timeline.selected
        if ref is None or self.prepared is None:
            return
        refs = [ref] + self._partners(ref)
        starts, ends = [], []
        for r in refs:
            lane = self.prepared.model.ranks[r.rank_index].lanes[r.lane_id]
            starts.append(lane.start_us[r.index])
            ends.append(lane.start_us[r.index] + lane.duration_us[r.index])
        self.timeline.zoom_to(min(starts), max(ends), pad_fraction=0.5)

    def keyPressEvent(self, event) -> None:  # noqa: N802, ANN001
        if event.key() == Qt.Key.Key_F:
            self.zoom_to_selection()
        elif event.key() == Qt.Key.Key_Escape:
            self.select_event(None)
            self._selected_range = None
            self.timeline.view_box.selection.hide()
        else:
            super().keyPressEvent(event)

    # -- selection ------------------------------------------------------------------------------------
    def select_event(self, ref: EventRef | None) -> None:
        """Select an event: details panel, outline, and the arrow to its correlated partner(s)."""
        if ref is None or self.prepared is None:
            self.timeline.set_selected(None)
            self.details.show_details(None)
            return
        partners = self._partners(ref)
        self.timeline.set_selected(ref, partners)
        self.details.show_details(self._details(ref, partners))
        self.bottom_tabs.setCurrentWidget(self.details)

    @property
    def selected_event(self) -> EventRef | None:
        return self.timeline.selected

    def selected_partners(self) -> list[EventRef]:
        ref = self.timeline.selected
        return [] if ref is None else self._partners(ref)

    def _partners(self, ref: EventRef) -> list[EventRef]:
        """The launch <-> kernel partners through the correlation flows (else the op's kernels)."""
        rank = self.prepared.model.ranks[ref.rank_index]
        flows = rank.flows
        out: list[EventRef] = []
        if len(flows):
            m = (flows.src_lane == ref.lane_id) & (flows.src_index == ref.index)
            for lane_id, idx in zip(flows.dst_lane[m][:MAX_PARTNERS].tolist(), flows.dst_index[m][:MAX_PARTNERS].tolist()):
                out.append(EventRef(ref.rank_index, int(lane_id), int(idx)))
            m = (flows.dst_lane == ref.lane_id) & (flows.dst_index == ref.index)
            for lane_id, idx in zip(flows.src_lane[m][:MAX_PARTNERS].tolist(), flows.src_index[m][:MAX_PARTNERS].tolist()):
                out.append(EventRef(ref.rank_index, int(lane_id), int(idx)))
        if out:
            return out
        lane = rank.lanes[ref.lane_id]
        ext = int(lane.external_id[ref.index]) if len(lane.external_id) else -1
        if lane.kind == "cpu" and ext >= 0:
            for other in rank.gpu_lanes:
                hits = np.flatnonzero(other.external_id == ext)[:MAX_PARTNERS]
                out += [EventRef(ref.rank_index, other.lane_id, int(i)) for i in hits.tolist()]
        return out[:MAX_PARTNERS]

    def _details(self, ref: EventRef, partners: list[EventRef]) -> EventDetails:
        rank = self.prepared.model.ranks[ref.rank_index]
        lane = rank.lanes[ref.lane_id]
        i = ref.index
        rows: list[tuple[str, str]] = []
        corr = int(lane.correlation[i]) if len(lane.correlation) else -1
        ext = int(lane.external_id[i]) if len(lane.external_id) else -1
        if corr >= 0:
            rows.append(("correlation id", str(corr)))
        if ext >= 0:
            rows.append(("external id", str(ext)))
        kc = int(lane.kernel_class[i]) if len(lane.kernel_class) else -1
        if kc >= 0:
            from gpuperf_gui.core.trace.model import KERNEL_CLASSES

            rows.append(("kernel class", KERNEL_CLASSES[kc]))
        flops = float(lane.flops[i]) if len(lane.flops) else float("nan")
        if np.isfinite(flops):
            rows.append(("FLOPs", format_si(flops, "FLOP")))
        nbytes = float(lane.bytes[i]) if len(lane.bytes) else float("nan")
        if np.isfinite(nbytes):
            rows.append(("bytes", format_si(nbytes, "B")))
        shapes = int(lane.shapes_id[i]) if len(lane.shapes_id) else -1
        if shapes >= 0:
            rows.append(("input shapes", rank.strings[shapes]))
        offset = self.prepared.full_range_us[0]
        links = []
        for p in partners:
            plane = rank.lanes[p.lane_id]
            links.append((f"event:{p.rank_index}:{p.lane_id}:{p.index}",
                          f"{rank.strings[int(plane.name_id[p.index])]} — {plane.label}, "
                          f"{format_duration_us(float(plane.duration_us[p.index]))}"))
        title = ("Launched kernel" + ("s" if len(links) > 1 else "")) if lane.kind == "cpu" else "Launched by"
        return EventDetails(name=rank.strings[int(lane.name_id[i])], category=rank.strings[int(lane.category_id[i])],
                            lane=lane.label, rank=rank.rank, start_us=float(lane.start_us[i]) - offset,
                            duration_us=float(lane.duration_us[i]), depth=int(lane.depth[i]) if len(lane.depth) else 0,
                            rows=rows, partners=links, partner_title=title)

    def _on_partner_link(self, href: str) -> None:
        parts = href.split(":")
        if len(parts) == 4 and parts[0] == "event":
            ref = EventRef(int(parts[1]), int(parts[2]), int(parts[3]))
            self.select_event(ref)
            self._reveal(ref)

    def _reveal(self, ref: EventRef) -> None:
        """Bring an event into view (keep the zoom if it fits, else zoom around it)."""
        lane = self.prepared.model.ranks[ref.rank_index].lanes[ref.lane_id]
        s = float(lane.start_us[ref.index])
        e = s + float(lane.duration_us[ref.index])
        (x0, x1), _ = self.timeline.view_box.viewRange()
        width = x1 - x0
        if e - s > width:
            self.timeline.zoom_to(s, e, pad_fraction=0.2)
        elif not (x0 <= s and e <= x1):
            c = (s + e) / 2
            self.timeline.view_box.setXRange(c - width / 2, c + width / 2, padding=0.0)
        y = self.timeline.lane_y(ref.rank_index, ref.lane_id)
        if y is not None:
            self.timeline.scroll_to_y(y)

    # -- search / op table highlight ---------------------------------------------------------------
    def _clear_search(self) -> None:
        self._matches, self._match_pos = [], -1
        self.match_label.setText("")
        self.search_results.set_matches([], 0)
        self.timeline.set_highlight(None)

    def _on_search_entered(self) -> None:
        text = self.search_edit.text().strip()
        if not text:
            self._clear_search()
            return
        if self._matches and self._last_query == text:
            self.step_match(+1)
            return
        self.search(text)

    def search(self, text: str, exact: bool = False) -> int:
        """Highlight and list the events whose name contains ``text`` (or equals it); returns the count."""
        self._last_query = text if not exact else None
        if self.prepared is None:
            return 0
        needle = text.lower()
        masks: dict[tuple[int, int], np.ndarray] = {}
        found_start, found_rank, found_lane, found_index = [], [], [], []
        shown = {(s.rank_index, s.lane_id) for s in self.timeline.lane_specs}
        for ri, rank in enumerate(self.prepared.model.ranks):
            if exact:
                ids = np.zeros(len(rank.strings), dtype=bool)
                k = rank.strings.find(text)
                if k >= 0:
                    ids[k] = True
            else:
                ids = rank.strings.ids_matching(lambda s: needle in s.lower())
            if not ids.any():
                continue
            for lane in rank.lanes:
                if (ri, lane.lane_id) not in shown or not len(lane):
                    continue
                mask = ids[lane.name_id]
                if mask.any():
                    masks[(ri, lane.lane_id)] = mask
                    idx = np.flatnonzero(mask)
                    found_start.append(lane.start_us[idx])
                    found_index.append(idx)
                    found_rank.append(np.full(idx.size, ri))
                    found_lane.append(np.full(idx.size, lane.lane_id))
        self.timeline.set_highlight(masks or None)
        if not found_start:
            self._matches, self._match_pos = [], -1
            self.match_label.setText("no match")
            self.search_results.set_matches([], 0)
            return 0
        start = np.concatenate(found_start)
        order = np.argsort(start, kind="stable")
        rk, ln, ix = (np.concatenate(a)[order] for a in (found_rank, found_lane, found_index))
        self._matches = [EventRef(int(a), int(b), int(c)) for a, b, c in zip(rk.tolist(), ln.tolist(), ix.tolist())]
        self._match_pos = -1
        texts = []
        offset = self.prepared.full_range_us[0]
        for ref in self._matches[:MAX_LISTED_MATCHES]:
            rank = self.prepared.model.ranks[ref.rank_index]
            lane = rank.lanes[ref.lane_id]
            texts.append(f"{format_duration_us(float(lane.start_us[ref.index]) - offset):>10}   "
                         f"{rank.strings[int(lane.name_id[ref.index])]}   "
                         f"({format_duration_us(float(lane.duration_us[ref.index]))}, rank {rank.rank}, {lane.label})")
        self.search_results.set_matches(texts, len(self._matches))
        self.match_label.setText(f"{len(self._matches):,} matches")
        return len(self._matches)

    def step_match(self, direction: int) -> None:
        """Select the next (+1) or previous (-1) search match and bring it into view."""
        if not self._matches:
            return
        self._go_to_match((self._match_pos + direction) % len(self._matches))

    def _go_to_match(self, k: int) -> None:
        if not (0 <= k < len(self._matches)):
            return
        self._match_pos = k
        ref = self._matches[k]
        self.select_event(ref)
        self._reveal(ref)
        self.match_label.setText(f"{k + 1:,} / {len(self._matches):,}")
        if k < self.search_results.count():
            self.search_results.setCurrentRow(k)

    def _on_op_name_selected(self, view: str, name: str) -> None:
        if name.endswith("*"):        # a grouped row ("ProfilerStep*"): its names start with it
            count = self.search(name[:-1])
        else:
            count = self.search(name, exact=True)
        self.match_label.setText(f"{count:,} × {name[:30]}")

    # -- cross-tab buttons ----------------------------------------------------------------------------
    def send_to_mfu(self) -> None:
        figures = self.prepared.mfu_figures if self.prepared else None
        if figures is not None:
            self.mfu_figures_ready.emit(figures)

    def show_on_roofline(self) -> None:
        points = self.prepared.roofline_points if self.prepared else None
        if points:
            self.roofline_points_ready.emit(self.series_name(), list(points))

    def series_name(self) -> str:
        """The Roofline series name: ``trace: <file or folder> (<device>)``."""
        if self.prepared is None:
            return "trace"
        files = self.prepared.files
        if not files:
            name = "trace"
        elif len(files) == 1:
            name = Path(files[0]).name.removesuffix(".gz").removesuffix(".json")
        else:
            name = f"{Path(files[0]).parent.name} ({len(files)} ranks)"
        devices = sorted({(r.device_name or "").replace("NVIDIA ", "").strip()
                          for r in self.prepared.model.ranks} - {""})
        device = ", ".join(devices) if devices else "device unknown"
        return f"trace: {name} ({device})"

    # -- drag and drop --------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_paths(paths)


# -- demos ----------------------------------------------------------------------------------------------
SHIPPED_DEMOS = (
    ("Real: GPT on H200, healthy (h200)", "healthy_gpt_small.json.gz"),
    ("Real: LayerNorm/GELU stack, memory-bound (h200)", "memory_bound_visible.json.gz"),
    ("Real: small BERT inference, launch-bound (H100, TraceLens)", "bert_small_h100.json.gz"),
    ("Real: two ranks of a sampled production job (HTA)", "two_ranks"),
)


def _shipped(name: str) -> list[Path]:
    root = importlib.resources.files("gpuperf_gui.resources") / "demo"
    return [Path(str(root / name))]


_SESSION_DEMO_DIR: tempfile.TemporaryDirectory | None = None


def _session_demo_folder() -> Path:
    """One folder for the synthetic demos of :func:`demo_entries` called without a folder; the
    TemporaryDirectory's finalizer removes it when the process exits."""
    global _SESSION_DEMO_DIR
    if _SESSION_DEMO_DIR is None:
        _SESSION_DEMO_DIR = tempfile.TemporaryDirectory(prefix="gpuperf-demo-")
    return Path(_SESSION_DEMO_DIR.name)


def _synthetic(scenario: str, folder: Callable[[], Path]) -> list[Path]:
    from gpuperf_gui.core.trace import synth

    out = folder() / f"{scenario}.json.gz"
    synth.write_synth_trace(scenario, out)
    return [out]


def _synth_scenarios() -> list[str]:
    try:
        from gpuperf_gui.core.trace import synth
    except ImportError:
        return []
    return list(synth.SCENARIOS)


def demo_entries(folder: Callable[[], Path] = _session_demo_folder) -> list[tuple[str, Callable[[], list[Path]]]]:
    """Demo traces for Help ▸ Demo traces: (menu text, function returning the paths to open).

    Synthetic traces are written to ``folder()`` (made on first use): :meth:`TraceTab.demo_entries`
    passes a folder the tab removes at shutdown."""
    entries: list[tuple[str, Callable[[], list[Path]]]] = []
    for scenario in _synth_scenarios():
        title = f"Synthetic: {scenario.replace('_', ' ')}"
        if scenario == "inconclusive":
            title += " (a CPU-only profile)"
        entries.append((title, partial(_synthetic, scenario, folder=folder)))
    root = importlib.resources.files("gpuperf_gui.resources") / "demo"
    for title, name in SHIPPED_DEMOS:
        if (root / name).is_file() or (root / name).is_dir():
            entries.append((title, partial(_shipped, name)))
    return entries
