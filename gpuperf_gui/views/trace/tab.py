"""The Trace tab: lanes a person can read at a glance, an overview page, the op table, the diagnosis.

Everything it shows is a :class:`~gpuperf_gui.core.trace.session.loaded_trace.LoadedTrace` built in a worker
(core's :func:`~gpuperf_gui.core.trace.session.loaded_trace.iter_loaded_trace` run by the views'
:class:`TaskRunner`); the tab's state (the load's phase, the trace shown, the range, the search, its rules) is
:class:`~gpuperf_gui.core.trace.session.tab_state.TraceTabState`, without Qt. The tab draws what it holds
and turns clicks into calls on it and on the loaded trace's queries (partners, details, range summary).

Public API (used by the main window)::

    tab = TraceTab(context)
    tab.open_paths([Path("trace.json.gz")])   # asynchronous: a worker thread loads and analyses
    tab.is_busy(); tab.cancel(); tab.shutdown()
    tab.loaded                                # the LoadedTrace shown (None before the first)
    tab.mfu_figures_ready  -> Signal(object)        # the engine's TraceMfuFigures
    tab.roofline_points_ready -> Signal(str, object)  # (series name, list[RooflinePoint])
    tab.demo_entries() -> list[(name, materialise)]  # for Help ▸ Demo traces (core/trace/session/demos.py); the
                                                     # synthetic ones go to a folder removed at shutdown
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.trace.session.demos import demo_entries
from gpuperf_gui.core.trace.model.lanes import DEFAULT_IDLE_THRESHOLD_US, EventRef
from gpuperf_gui.core.trace.vocabulary.kernel_classes import KERNEL_CLASSES
from gpuperf_gui.core.child_stream import discard_spare_helper
from gpuperf_gui.core.trace.session.load_state import Ending, Failure, tag_items
from gpuperf_gui.core.trace.session.loaded_trace import (AnalysisUpdate, LoadedTrace, Progress, RooflineUpdate,
                                                         iter_loaded_trace, warm_helper)
from gpuperf_gui.core.trace.session.tab_state import (TraceTabState, ending_text, failure_text, notes_text,
                                                      ranks_shown_after, reveal_range, roof_device)
from gpuperf_gui.core.units import format_count
from gpuperf_gui.views import gc_pauses
from gpuperf_gui.views.progress import show_progress
from gpuperf_gui.views.trace.heatmap import RankStepHeatmap
from gpuperf_gui.views.trace.minimap import TraceMinimap
from gpuperf_gui.views.trace.overview import TraceOverview
from gpuperf_gui.views.trace.panels import (
    DetailsPanel,
    DiagnosisPanel,
    OpTablePanel,
    SearchResults,
    SelectionSummaryPanel,
)
from gpuperf_gui.views.trace.style import format_duration_us, legend_html, make_palette
from gpuperf_gui.views.trace.timeline import TraceTimeline
from gpuperf_gui.views.workers import TaskRunner

if TYPE_CHECKING:
    from gpuperf_gui.views.context import AppContext

ROOFLINE_TIP = "Place the trace's kernels with known FLOPs and bytes on the roofline"
SEARCH_MODE_LABELS = (("name", "name contains"), ("exact", "exact name"), ("regex", "regex"),
                      ("class", "kernel class"))


class TraceTab(QWidget):
    """Open a torch.profiler trace (file or folder of ranks) and read it."""

    mfu_figures_ready = Signal(object)
    roofline_points_ready = Signal(str, object)
    trace_loaded = Signal()          # emitted on the GUI thread when a trace is shown, analysis and all
    lanes_shown = Signal()           # its lanes are on screen (one big file's analysis may still run)
    load_failed = Signal(str)

    def __init__(self, context: AppContext | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.state = TraceTabState()   # the open's phase, the trace shown, its selection (core/trace/session/tab_state.py)
        self.memory_budget_bytes: int | None = None   # None: core's default (core/trace/ingest/budget.py)
        self.open_elsewhere: Callable[[list[Path]], bool] | None = None  # main window: many ranks -> job overview
        self.task = TaskRunner(self)
        self.task.item_produced.connect(self._on_item_produced)
        self.task.run_failed.connect(self._on_run_failed)
        self.task.run_finished.connect(self._on_run_finished)
        self._warm_helpers = True
        QTimer.singleShot(0, self._warm_helper)   # the first trace opened finds its helper started
        self._demo_dir: tempfile.TemporaryDirectory | None = None   # synthetic demo traces
        self._palette = make_palette()
        self._setup_steps: list[Callable[[], None]] = []   # what is left of showing a trace
        self._setup_timer = QTimer(self)
        self._setup_timer.setSingleShot(True)
        self._setup_timer.setInterval(0)
        self._setup_timer.timeout.connect(self._run_setup_step)
        self.setAcceptDrops(True)
        self._build()
        if context is not None:
            context.device_changed.connect(lambda _d: self._update_roof())
            context.precision_changed.connect(lambda _p: self._update_roof())
        self._update_roof()

    @property
    def loaded(self) -> LoadedTrace | None:
        """The trace shown (None before the first): the state's latest snapshot, replaced, never patched."""
        return self.state.trace

    @property
    def prepared(self) -> LoadedTrace | None:
        """The loaded trace (the main window's name for it)."""
        return self.loaded

    @property
    def matches(self):  # noqa: ANN201 (queries.Matches)
        """The current search's matches (the state's)."""
        return self.state.matches

    @property
    def path_shown(self) -> bool:
        """The critical path is highlighted (the Lanes menu's check mark)."""
        return self.state.path_shown

    # -- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.title = QLabel("<b>No trace</b>")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the window
        self.title.setMinimumWidth(300)
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Search (Enter)")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.setFixedWidth(160)
        self.search_mode = QComboBox()
        for mode, label in SEARCH_MODE_LABELS:
            self.search_mode.addItem(label, mode)
        self.search_mode.setToolTip("Match names by substring, exactly, by regular expression, or find "
                                    "the kernels of a class (" + ", ".join(KERNEL_CLASSES) + ")")
        self._class_completer = QCompleter(list(KERNEL_CLASSES), self)
        self._class_completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter_ops_check = QCheckBox("filter ops")
        self.filter_ops_check.setToolTip("Show only the op-table rows whose names match the search")
        self.prev_button = QToolButton(text="◀")
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        self.next_button = QToolButton(text="▶")
        self.next_button.setToolTip("Next match (Enter)")
        self.match_label = QLabel("")
        self.match_label.setMaximumWidth(150)
        self.step_combo = QComboBox()
        self.step_combo.setToolTip("Zoom to a step")
        self.step_combo.setMinimumWidth(130)
        self.zoom_sel_button = QPushButton("Zoom to selection")
        self.zoom_sel_button.setToolTip("Zoom to the selected event or the right-dragged range (F)")
        self.reset_button = QPushButton("Reset view")
        self.ranks_button = QToolButton(text="Lanes ▾")
        self.ranks_button.setToolTip("Collapse, pin or hide ranks and thread groups")
        self.ranks_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.ranks_menu = QMenu(self)
        self.ranks_menu.aboutToShow.connect(self._build_ranks_menu)   # built when opened, from the state
        self.ranks_button.setMenu(self.ranks_menu)
        self.idle_spin = QDoubleSpinBox()
        self.idle_spin.setRange(0.0, 1e6)
        self.idle_spin.setDecimals(0)
        self.idle_spin.setSuffix(" µs")
        self.idle_spin.setPrefix("idle ≥ ")
        self.idle_spin.setValue(DEFAULT_IDLE_THRESHOLD_US)
        self.idle_spin.setToolTip("Idle gaps on compute streams at least this long are drawn red")
        self.mfu_button = QPushButton("Send to MFU")
        self.mfu_button.setToolTip("Fill the MFU tab's gap causes and step time from this trace")
        self.roofline_button = QPushButton("Show on roofline")
        self.roofline_button.setToolTip(ROOFLINE_TIP)

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.title, 1)
        for w in (self.search_edit, self.search_mode, self.filter_ops_check, self.prev_button,
                  self.next_button, self.match_label):
            bar.addWidget(w)
        bar.addSpacing(8)
        for w in (self.step_combo, self.zoom_sel_button, self.reset_button, self.ranks_button):
            bar.addWidget(w)
        bar.addSpacing(8)
        bar.addWidget(self.idle_spin)
        bar.addSpacing(8)
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
        self.minimap = TraceMinimap()
        self.placeholder = QLabel(
            "<div style='font-size:13pt; color:#555'>Drop a torch.profiler trace here</div>"
            "<div style='color:#777'>a <code>.json</code> / <code>.json.gz</code> file, or a folder with "
            "one file per rank<br>or use File ▸ Open, File ▸ Profile a script…, or Help ▸ Demo traces</div>"
            "<div style='color:#999; margin-top:12px'>wheel or W/S zoom · drag or A/D pan · "
            "right-drag selects a range · click an event · click a rank header to collapse it</div>")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lanes_box = QWidget()
        lb = QVBoxLayout(lanes_box)
        lb.setContentsMargins(0, 0, 0, 0)
        lb.setSpacing(0)
        lb.addWidget(self.minimap)
        lb.addWidget(self.timeline, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(lanes_box)

        self.legend = QLabel(self._legend_html())
        self.legend.setStyleSheet("color: #444")
        self.legend.setWordWrap(True)
        hint = ("Wheel or W/S: zoom · drag or A/D: pan · Shift+wheel: scroll lanes · right-drag: select "
                "a range (its summary: the Range tab below), then F (or Zoom to selection) · click: select "
                "an event and its partner · click a rank header: collapse/expand it · double-click a CPU thread: "
                "fold it to its outermost row · Esc: clear")
        self.timeline.setToolTip(hint)
        self.legend.setToolTip(hint)
        legend_row = QHBoxLayout()
        legend_row.setContentsMargins(4, 0, 4, 0)
        legend_row.addWidget(self.legend, 1)

        self.details = DetailsPanel()
        self.range_panel = SelectionSummaryPanel()
        self.op_panel = OpTablePanel()
        self.rank_combo = QComboBox()
        self.op_panel.layout().itemAt(0).layout().insertWidget(0, self.rank_combo)
        self.rank_combo.hide()
        self.search_results = SearchResults()
        self.bottom_tabs = QTabWidget()
        self.bottom_tabs.setDocumentMode(True)
        self.bottom_tabs.addTab(self.details, "Selection")
        self.bottom_tabs.addTab(self.range_panel, "Range")
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
        self.left_split.setSizes([680, 210])
        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(self.left_split)
        self.main_split.addWidget(self.diagnosis)
        self.main_split.setStretchFactor(0, 4)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setSizes([1220, 360])

        self.overview = TraceOverview()
        self.heatmap = RankStepHeatmap()
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        self.pages.addTab(self.main_split, "Timeline")
        self.pages.addTab(self.overview, "Overview")
        self.pages.addTab(self.heatmap, "Ranks")
        self.compare = self._make_compare_page()
        if self.compare is not None:
            self.pages.addTab(self.compare, "Compare")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.message)
        layout.addWidget(self.pages, 1)
        self.profiler = self._make_profiler()

        self.search_edit.returnPressed.connect(self._on_search_entered)
        self.search_mode.activated.connect(lambda _i: self._on_search_mode_changed())
        self.filter_ops_check.toggled.connect(lambda _c: self._apply_op_filter())
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
        self.timeline.rank_header_clicked.connect(self._on_rank_header_clicked)
        self.timeline.lane_double_clicked.connect(self._on_lane_double_clicked)
        self.timeline.view_box.sigXRangeChanged.connect(self._on_timeline_range_changed)
        self.minimap.range_requested.connect(self._on_minimap_range)
        self.details.partner_clicked.connect(self._on_partner_link)
        self.op_panel.name_selected.connect(self._on_op_name_selected)
        self.rank_combo.activated.connect(lambda _i: self._fill_op_table())
        self.search_results.match_clicked.connect(self._go_to_match)
        self.heatmap.rank_opened.connect(self.open_rank)
        self.overview.kernel_activated.connect(self.find_kernel)
        self._update_enabled()

    def _make_compare_page(self) -> QWidget | None:
        """The Compare page when core has the diff API (core/trace/session/diff.py)."""
        try:
            from gpuperf_gui.views.trace.compare import TraceCompare
        except ImportError:
            return None
        page = TraceCompare(self)
        return page

    # -- pages and File menu entries ---------------------------------------------------------------------
    PAGES = ("timeline", "overview", "ranks", "compare")

    def show_page(self, page: str) -> None:
        """Show a page ("timeline", "overview", "ranks" or "compare") and bring this tab forward."""
        widget = {"timeline": self.main_split, "overview": self.overview, "ranks": self.heatmap,
                  "compare": self.compare}.get(page)
        if widget is None:
            raise ValueError(f"unknown page {page!r}; choose one of {', '.join(self.PAGES)}")
        self.pages.setCurrentWidget(widget)
        parent = self.parentWidget()
        while parent is not None:             # the main window's tab widget, when there is one
            if isinstance(parent, QTabWidget) and parent.indexOf(self) >= 0:
                parent.setCurrentWidget(self)
                break
            parent = parent.parentWidget()

    def file_actions(self, parent: QWidget) -> list[QAction]:
        """The File menu's entries for this tab: Compare two traces…, Profile a script…"""
        actions = []
        if self.compare is not None:
            compare = QAction("&Compare two traces (before/after)…", parent)
            compare.triggered.connect(lambda: self.show_page("compare"))
            actions.append(compare)
        if self.profiler is not None:
            profile = QAction("&Profile a script…", parent)
            profile.triggered.connect(self.profiler.ask_and_run)
            actions.append(profile)
        return actions

    def _make_profiler(self) -> QWidget | None:
        """File ▸ Profile a script… when core has the profiler runner (core/profile_script.py)."""
        try:
            from gpuperf_gui.views.trace.profile import ProfileRunner
        except ImportError:
            return None
        runner = ProfileRunner(self)
        runner.trace_written.connect(lambda path: self.open_paths([path]))
        runner.trace_opened.connect(lambda: self.show_page("timeline"))   # where the user was, the trace
        self.trace_loaded.connect(lambda: runner.trace_shown(list(self.loaded.files) if self.loaded else []))
        layout = self.layout()
        if layout is not None:
            layout.insertWidget(2, runner)    # its progress row, under the tab's own
        return runner

    @staticmethod
    def _legend_html() -> str:
        return legend_html()

    def _lane_controls(self) -> tuple[QWidget, ...]:
        """The controls the lanes alone answer (search and zoom), before the analysis too."""
        return (self.search_edit, self.search_mode, self.prev_button, self.next_button, self.zoom_sel_button,
                self.reset_button)

    def _update_enabled(self) -> None:
        controls = self.state.controls()
        for w in (*self._lane_controls(), self.filter_ops_check, self.step_combo, self.ranks_button):
            w.setEnabled(controls.lanes)
        self.mfu_button.setEnabled(controls.send_to_mfu)
        self.roofline_button.setEnabled(controls.roofline)
        self.roofline_button.setToolTip("Finding the FLOPs and bytes of the trace's kernels…"
                                        if controls.roofline_pending else ROOFLINE_TIP)
        self.pages.setTabEnabled(self.pages.indexOf(self.heatmap), controls.ranks_page)

    def _update_roof(self) -> None:
        """The overview's "% of roof": the trace's GPU when the database knows it, else the toolbar's
        device (said so); each kernel at its own precision (core/trace/analysis/kernel_roof.py)."""
        context = self.context
        device, label = roof_device(self.loaded, context.database if context is not None else None,
                                    context.device if context is not None else None)
        self.overview.set_roof(device, label)

    # -- opening ------------------------------------------------------------------------------------
    def open_paths(self, paths: list[Path]) -> None:
        """Load and analyse ``paths`` (files and/or folders of ranks) in a worker thread; a load still
        running is cancelled first (the newest request wins)."""
        paths = [Path(p) for p in paths]
        if not paths or (self.open_elsewhere is not None and self.open_elsewhere(paths)):
            return
        self._show_message("")
        gc_pauses.release()   # the shown trace's objects are collectable again (views/gc_pauses.py)
        run = self.state.open()
        threshold_us, budget = float(self.idle_spin.value()), self.memory_budget_bytes
        self.task.restart(tag_items(lambda stop: iter_loaded_trace(paths, threshold_us, stop, memory_budget=budget),
                                    run))
        self.progress.setRange(0, 0)
        self.progress.setFormat(f"opening {', '.join(p.name for p in paths)}")
        self.progress_row.show()
        self.cancel_button.setEnabled(True)

    def is_busy(self) -> bool:
        """True while a trace loads, compares or a script is profiled (``--screenshot`` waits for False)."""
        return (self.task.is_running() or bool(self._setup_steps)
                or (self.compare is not None and self.compare.is_busy())
                or (self.profiler is not None and self.profiler.is_busy()))

    def cancel(self) -> None:
        """Stop loading after the current file or stage; the trace shown before stays."""
        if self.task.cancel():
            self.state.cancel()
            self.progress.setFormat("cancelling…")
            self.cancel_button.setEnabled(False)

    def _warm_helper(self) -> None:
        if self._warm_helpers:
            warm_helper()

    def shutdown(self) -> None:
        """Stop the worker and wait for its thread (the main window's closeEvent), end the helper
        started ahead; remove the synthetic demo traces this tab wrote."""
        self._setup_timer.stop()
        self._setup_steps = []
        self._warm_helpers = False
        gc_pauses.release()   # the tab goes: what it held is the collector's again
        self.task.shutdown()
        discard_spare_helper()
        if self.compare is not None:
            self.compare.shutdown()
        if self.profiler is not None:
            self.profiler.shutdown()
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

    def _on_item_produced(self, tagged: object) -> None:
        """The worker's items, folded by the state (core/trace/session/load_state.py): draw what it says.
        Those of a replaced open (still queued when the next one started) are dropped."""
        item = self.state.current(tagged)
        if isinstance(item, Progress):
            show_progress(self.progress, round(1000 * item.fraction), 1000, item.message)
        elif isinstance(item, LoadedTrace):
            with_analysis = self.state.lanes_ready(item)
            if with_analysis is not None:
                self._show_loaded(with_analysis)
        elif isinstance(item, AnalysisUpdate):
            if self.state.analysis_ready(item):
                self._queue_setup(self._analysis_steps())
        elif isinstance(item, RooflineUpdate):
            if self.state.roofline_ready(item) and not self._setup_steps:
                self._update_enabled()

    def _on_run_failed(self, message: str) -> None:
        text = failure_text(message)   # core's words when they are for the user, else a bug to report
        if self.state.failed() is Failure.ANALYSIS_FAILED:
            self._show_message(f"The lanes are shown, but the analysis failed: {text}", error=True)
            self.diagnosis.show_diagnosis(None)
            self._update_enabled()
        else:
            self._show_message(f"Could not open the trace: {text}", error=True)
        self.load_failed.emit(message)

    def _on_run_finished(self) -> None:
        if self.task.is_running():        # a newer request is queued and starts now
            return
        self._warm_helper()               # and the next one
        pending = self.state.roofline_pending
        ending = self.state.finished(self.task.cancel_requested)
        if pending:
            self._update_enabled()
        self.progress_row.hide()
        said = ending_text(ending, self.loaded is not None)
        if said is not None:
            self._show_message(said[0], note=said[1])
        if ending is Ending.CANCELLED_BEFORE_ANALYSIS:
            self.diagnosis.show_diagnosis(None)

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
    # A trace is shown in slices, one per turn of the event loop, so that no single slice keeps the
    # window from responding for long (the timeline first: it is what a person looks at).
    def _show_loaded(self, with_analysis: bool) -> None:
        """Draw the state's new trace: its lanes, and its analysis when it came with them (else an
        AnalysisUpdate follows)."""
        self._setup_steps = [self._show_timeline, self._show_minimap, self._reveal_timeline, self._clear_panels]
        if with_analysis:
            self._setup_steps += self._analysis_steps()
        self._setup_timer.start()   # not now: the worker has just held the GIL to unpickle the trace

    def _analysis_steps(self) -> list[Callable[[], None]]:
        return [self._show_steps, self._show_diagnosis, self._show_pages, self._fill_op_table, self._finish_show]

    def _queue_setup(self, steps: list[Callable[[], None]]) -> None:
        self._setup_steps += steps
        if not self._setup_timer.isActive():
            self._setup_timer.start()

    def _run_setup_step(self) -> None:
        if self._setup_steps:
            self._setup_steps.pop(0)()
        if self._setup_steps:
            self._setup_timer.start()

    def _show_timeline(self) -> None:
        loaded = self.loaded
        self._clear_search()                  # the old trace's matches index the old lanes
        self.search_edit.clear()              # nor its query, its selected range or their panels
        self.state.selected_range = None
        self.timeline.view_box.selection.hide()
        self._clear_panels()
        self.timeline.set_lanes(loaded.ranks, loaded.lanes, self._palette, loaded.full_range_us,
                                loaded.full_range_us[0])

    def _show_minimap(self) -> None:
        loaded = self.loaded
        self.minimap.set_profile(loaded.activity(), loaded.straggler_rank_indices())
        span = format_duration_us(loaded.full_range_us[1] - loaded.full_range_us[0])
        self.title.setText(f"<b>{loaded.title()}</b> <span style='color:#666'>· {format_count(loaded.n_events)} "
                           f"events · {span}</span>")
        self.title.setToolTip("\n".join(loaded.files + [f"{loaded.n_events:,} events over {span}"]))

    def _reveal_timeline(self) -> None:
        """The first paint of the lanes, in its own slice. The progress row goes now, in the same
        layout pass (hiding it later would resize and repaint everything again), unless the
        analysis is still running (one big file: it follows); the roofline points that may still be
        on their way enable their button when they come."""
        self.stack.setCurrentIndex(1)
        if self.loaded.analysis_pending:   # the progress row says so until the analysis comes
            self.diagnosis.show_pending()
            for w in self._lane_controls():   # the lanes answer these already
                w.setEnabled(True)
        else:
            self.progress_row.hide()
        self.lanes_shown.emit()

    def _show_steps(self) -> None:
        self.timeline.set_rank_specs(self.loaded.ranks)   # the analysed headers: step times, late ranks
        self.step_combo.clear()
        self.step_combo.addItem("Zoom to step…", None)
        for n in self.loaded.step_numbers():
            self.step_combo.addItem(f"step {n}", n)

    def _show_diagnosis(self) -> None:
        self.progress_row.hide()
        self.diagnosis.show_diagnosis(self.loaded.diagnosis)

    def _clear_panels(self) -> None:
        self.details.show_details(None)
        self.range_panel.show_summary(None)

    def _show_pages(self) -> None:
        loaded = self.loaded
        self.overview.set_trace(loaded)
        self._update_roof()
        if self.compare is not None:
            self.compare.follow_open_trace()     # the open trace is the natural "before"
        self.heatmap.set_overview(loaded.overview if len(loaded.model.ranks) > 1 else None,
                                  loaded.diagnosis.signature if loaded.diagnosis else None)
        self.rank_combo.clear()
        for r in loaded.model.ranks:
            self.rank_combo.addItem(f"rank {r.rank}", r.rank)
        self.rank_combo.setVisible(len(loaded.model.ranks) > 1)

    def _finish_show(self) -> None:
        loaded = self.loaded
        self._show_message(notes_text(loaded.notes), note=True)
        self._update_enabled()
        # A threshold typed while the trace loaded was not applied (busy): draw with the spin's value.
        if self.state.threshold_differs(float(self.idle_spin.value())):
            self._apply_idle_threshold(float(self.idle_spin.value()))
        self.timeline.setFocus()
        gc_pauses.hold()   # no full collection walks them in a frame (views/gc_pauses.py)
        if self.state.analysis_shown():
            self.trace_loaded.emit()

    def _fill_op_table(self) -> None:
        if self.loaded is None:
            return
        tables = self.loaded.op_tables
        rank = self.rank_combo.currentData()
        if rank is None and tables:
            rank = next(iter(tables))
        note = "" if len(self.loaded.model.ranks) == 1 else f"rank {rank}"
        self.op_panel.set_tables(tables.get(rank, {}), note)

    def _on_idle_threshold_changed(self) -> None:
        if self.loaded is None or self.task.is_running():
            return  # a trace still loading gets the spin's value in _show_loaded
        if self.state.threshold_differs(float(self.idle_spin.value())):
            self._apply_idle_threshold(float(self.idle_spin.value()))

    def _apply_idle_threshold(self, threshold: float) -> None:
        """Redraw the idle gaps of the compute lanes at ``threshold`` µs."""
        for spec in self.state.apply_idle_threshold(threshold):
            item = self.timeline.lane_item(spec.rank_index, spec.lane_id)
            if item is not None:
                item.set_gaps(spec.gaps)

    # -- lanes: collapse, pin, filter -------------------------------------------------------------------
    def _build_ranks_menu(self) -> None:
        """The Lanes menu, made each time it opens so that its check marks show the timeline's state."""
        menu = self.ranks_menu
        menu.clear()
        loaded, timeline = self.loaded, self.timeline
        if loaded is None:
            return

        def toggle(parent: QMenu, text: str, checked: bool, slot: Callable[[bool], None]) -> None:
            action = QAction(text, parent, checkable=True)
            action.setChecked(checked)
            action.toggled.connect(slot)
            parent.addAction(action)

        n = len(loaded.model.ranks)
        cpu_lanes = {(spec.rank_index, spec.lane_id) for spec in loaded.lanes if spec.kind == "cpu"}
        toggle(menu, "Fold every CPU thread to its outermost row (double-click one to fold it)",
               bool(cpu_lanes) and cpu_lanes <= timeline.collapsed_lanes, lambda on: self._fold_threads(cpu_lanes, on))
        toggle(menu, "Highlight the critical path (the step's longest chain of dependencies)", self.path_shown,
               self.show_critical_path)
        for group, text in (("CPU", "Collapse every rank's CPU threads"), ("GPU", "Collapse every rank's GPU streams")):
            toggle(menu, text, all((i, group) in timeline.collapsed_groups for i in range(n)),
                   lambda on, g=group: timeline.set_group_collapsed(None, g, on))
        if n > 1:
            menu.addSeparator()
            menu.addAction("Show all ranks", lambda: self.filter_ranks(None))
            late = loaded.straggler_rank_indices()
            if late:
                menu.addAction("Show only the late ranks", lambda: self.filter_ranks(set(late)))
            menu.addAction("Expand all ranks", self._expand_all)
            menu.addAction("Collapse all ranks", self._collapse_all)
        menu.addSeparator()
        for ri in range(n):
            sub = menu.addMenu(loaded.ranks[ri].title)
            toggle(sub, "Shown", timeline.shown_ranks is None or ri in timeline.shown_ranks,
                   lambda on, i=ri: self._show_rank(i, on))
            toggle(sub, "Pinned to the top", ri in timeline.pinned_ranks, lambda on, i=ri: timeline.set_pinned(i, on))
            toggle(sub, "Collapsed", ri in timeline.collapsed_ranks, lambda on, i=ri: timeline.set_rank_collapsed(i, on))
            toggle(sub, "CPU threads collapsed", (ri, "CPU") in timeline.collapsed_groups,
                   lambda on, i=ri: timeline.set_group_collapsed(i, "CPU", on))
            if n > 1:
                sub.addAction("Show only this rank", lambda i=ri: self.filter_ranks({i}))

    def _show_rank(self, rank_index: int, shown: bool) -> None:
        self.filter_ranks(ranks_shown_after(self.timeline.shown_ranks, len(self.timeline.rank_specs),
                                            rank_index, shown))

    def filter_ranks(self, rank_indices: set[int] | None) -> None:
        """Draw only these ranks (indices into the model's ranks); None draws all."""
        self.timeline.set_rank_filter(rank_indices)
        self._rerun_search()

    def _expand_all(self) -> None:
        self.timeline.set_collapsed(ranks=set())

    def _collapse_all(self) -> None:
        self.timeline.set_collapsed(ranks=set(range(len(self.timeline.rank_specs))))

    def _on_rank_header_clicked(self, rank_index: int) -> None:
        self.timeline.set_rank_collapsed(rank_index, rank_index not in self.timeline.collapsed_ranks)

    def _fold_threads(self, lanes: set[tuple[int, int]], fold: bool) -> None:
        self.timeline.set_collapsed(lanes=lanes if fold else set())

    def _on_lane_double_clicked(self, rank_index: int, lane_id: int) -> None:
        key = (rank_index, lane_id)
        self.timeline.set_lane_collapsed(rank_index, lane_id, key not in self.timeline.collapsed_lanes)

    def open_rank(self, rank: int) -> None:
        """Show a rank's lanes (from the Ranks page): pinned on top, expanded, the timeline page."""
        ri = self.state.rank_index(rank)
        if ri is None:
            return
        self.timeline.bring_rank_first(ri)
        self.show_page("timeline")

    # -- navigation ---------------------------------------------------------------------------------
    def _on_step_chosen(self, index: int) -> None:
        number = self.step_combo.itemData(index)
        span = None if number is None or self.loaded is None else self.loaded.step_span_us(number)
        if span:
            self.timeline.zoom_to(*span)

    def _on_timeline_range_changed(self, *_args) -> None:  # noqa: ANN002
        (x0, x1), _ = self.timeline.view_box.viewRange()
        self.minimap.set_view_range(x0, x1)

    def _on_minimap_range(self, x0: float, x1: float) -> None:
        self.timeline.zoom_to(x0, x1, pad_fraction=0.0)

    def _on_range_selected(self, t0: float, t1: float) -> None:
        if not self.state.select_range(t0, t1):
            return
        self.match_label.setText(f"range {format_duration_us(t1 - t0)}")
        summary = self.loaded.summarize_range(t0, t1, self.timeline.rank_order())
        self.range_panel.show_summary(summary, self.loaded.full_range_us[0])
        self.bottom_tabs.setCurrentWidget(self.range_panel)

    def zoom_to_selection(self) -> None:
        """Zoom to the right-dragged range, else to the selected event and its partners."""
        selected = self.state.take_range()
        if selected is not None:
            self.timeline.zoom_to(*selected, pad_fraction=0.0)
            self.timeline.view_box.selection.hide()
            return
        ref = self.timeline.selected
        if ref is None or self.loaded is None:
            return
        self.timeline.zoom_to(*self.state.selection_span_us(ref), pad_fraction=0.5)

    def keyPressEvent(self, event) -> None:  # noqa: N802, ANN001
        if event.key() == Qt.Key.Key_F:
            self.zoom_to_selection()
        elif event.key() == Qt.Key.Key_Escape:
            self.select_event(None)
            self.state.selected_range = None
            self.timeline.view_box.selection.hide()
        else:
            super().keyPressEvent(event)

    # -- selection ------------------------------------------------------------------------------------
    def select_event(self, ref: EventRef | None) -> None:
        """Select an event: details panel, outline, and the arrow to its correlated partner(s)."""
        if ref is None or self.loaded is None:
            self.timeline.set_selected(None)
            self.details.show_details(None)
            return
        partners = self.state.partners(ref)
        self.timeline.set_selected(ref, partners)
        self.details.show_details(self.loaded.details(ref, partners))
        self.bottom_tabs.setCurrentWidget(self.details)

    @property
    def selected_event(self) -> EventRef | None:
        return self.timeline.selected

    def selected_partners(self) -> list[EventRef]:
        return self.state.partners(self.timeline.selected)

    def _on_partner_link(self, href: str) -> None:
        parts = href.split(":")
        if len(parts) == 4 and parts[0] == "event":
            ref = EventRef(int(parts[1]), int(parts[2]), int(parts[3]))
            self.select_event(ref)
            self._reveal(ref)

    def _reveal(self, ref: EventRef) -> None:
        """Bring an event into view (keep the zoom if it fits, else zoom around it)."""
        (x0, x1), _ = self.timeline.view_box.viewRange()
        move = reveal_range(self.loaded.event_span_us(ref), (x0, x1))
        if move is not None and move[0] == "zoom":
            self.timeline.zoom_to(move[1], move[2], pad_fraction=0.2)
        elif move is not None:
            self.timeline.view_box.setXRange(move[1], move[2], padding=0.0)
        y = self.timeline.lane_y(ref.rank_index, ref.lane_id)
        if y is not None:
            self.timeline.scroll_to_y(y)

    # -- search / op table highlight ---------------------------------------------------------------
    @property
    def _matches(self) -> list[EventRef]:
        """The matches as event references (tests and small searches)."""
        return [self.matches.ref(k) for k in range(len(self.matches))]

    def _clear_search(self) -> None:
        self.state.clear_search()
        self.match_label.setText("")
        self.search_results.set_matches([], 0)
        self.timeline.set_highlight(None)
        self._apply_op_filter()

    def _on_search_mode_changed(self) -> None:
        mode = self.search_mode.currentData()
        self.search_edit.setCompleter(self._class_completer if mode == "class" else None)
        self.search_edit.setPlaceholderText(
            "kernel class: " + ", ".join(KERNEL_CLASSES) if mode == "class" else "Search (Enter)")
        if self.search_edit.text().strip():
            self.search(self.search_edit.text().strip(), mode)

    def _on_search_entered(self) -> None:
        text, mode = self.search_edit.text().strip(), self.search_mode.currentData()
        action = self.state.enter(text, mode)
        if action == "clear":
            self._clear_search()
        elif action == "next":
            self.step_match(+1)
        else:
            self.search(text, mode)
            self.state.last_query = (mode, text)

    def search(self, text: str, mode: str = "name") -> int:
        """Highlight and list the drawn events matching ``text`` (core's ``find``); returns the count."""
        if self.loaded is None:
            self.state.last_query = None
            return 0
        found = self.state.search(text, mode, [(s.rank_index, s.lane_id) for s in self.timeline.lane_specs])
        self.timeline.set_highlight(found.matches.masks or None)
        self.search_results.set_matches(list(found.texts), len(found.matches))
        self.match_label.setText(found.label)
        self._apply_op_filter()
        return len(found.matches)

    def _rerun_search(self) -> None:
        args = self.state.rerun_search()
        if args is not None:
            self.search(*args)

    def _apply_op_filter(self) -> None:
        """"filter op table": only the rows named like the search's matches."""
        names = self.state.op_filter(self.filter_ops_check.isChecked())
        self.op_panel.set_name_filter(names, f"{len(names)} matching names" if names is not None else "")

    def find_kernel(self, name: str) -> None:
        """Highlight a kernel's events on the Timeline page and go to the first (the Overview's table)."""
        self.search_mode.setCurrentIndex(self.search_mode.findData("exact"))
        self.search_edit.setText(name)
        self.show_page("timeline")
        if self.search(name, "exact"):
            self.state.last_query = ("exact", name)
            self.step_match(+1)

    def step_match(self, direction: int) -> None:
        """Select the next (+1) or previous (-1) search match and bring it into view."""
        k = self.state.step_match(direction)
        if k is not None:
            self._go_to_match(k)

    def _go_to_match(self, k: int) -> None:
        ref = self.state.go_to_match(k)
        if ref is None:
            return
        self.select_event(ref)
        self._reveal(ref)
        self.match_label.setText(f"{k + 1:,} / {len(self.matches):,}")
        if k < self.search_results.count():
            self.search_results.setCurrentRow(k)

    def _on_op_name_selected(self, view: str, name: str) -> None:
        if self.filter_ops_check.isChecked():
            return   # the table shows the search's rows: keep the search
        if name.endswith("*"):        # a grouped row ("ProfilerStep*"): its names start with it
            count = self.search("^" + re.escape(name[:-1]), "regex")
        else:
            count = self.search(name, "exact")
        self.match_label.setText(f"{count:,} × {name[:30]}")

    # -- cross-tab buttons ----------------------------------------------------------------------------
    def send_to_mfu(self) -> None:
        """The trace's MFU figures, at the precision the Overview shows (detected, or the one chosen)."""
        figures = self.loaded.mfu_figures if self.loaded else None
        if figures is not None:
            wi = self.loaded.what_if   # the worker's (core/trace/session/what_if_shown.py)
            figures = figures.with_precision_override(self.overview.precision_override)
            self.mfu_figures_ready.emit(replace(figures, what_if=wi.rows) if wi else figures)

    def show_critical_path(self, on: bool) -> None:
        """Highlight (or clear) the critical path on the lanes."""
        self.state.path_shown = on
        wi = self.loaded.what_if if on and self.loaded else None
        self.timeline.set_highlight(wi.path_masks or None if wi else None)

    def show_on_roofline(self) -> None:
        points = self.loaded.roofline_points if self.loaded else None
        if points:
            self.roofline_points_ready.emit(self.series_name(), list(points))

    def series_name(self) -> str:
        """The Roofline series name: ``trace: <file or folder> (<device>)``."""
        return "trace" if self.loaded is None else self.loaded.series_name()

    # -- drag and drop --------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_paths(paths)
