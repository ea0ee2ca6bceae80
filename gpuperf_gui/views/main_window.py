"""The main window: the shared device picker, the four instruments as tabs, menus, settings."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import QSize, QTimer, Signal, qVersion
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabBar,
    QTabWidget,
    QToolBar,
    QWidget,
)

from gpuperf_gui import __version__
from gpuperf_gui.core import state_files
from gpuperf_gui.core.hardware import PRECISIONS, Device, match_device_name
from gpuperf_gui.core.trace.ingest.budget import MemoryBudget
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.units import format_si, parse_bytes
from gpuperf_gui.views import settings_store
from gpuperf_gui.views.context import AppContext

if TYPE_CHECKING:  # the tabs' modules (and the trace engine under them) load when a tab is built
    from gpuperf_gui.views.benchmark_tab import BenchmarkTab
    from gpuperf_gui.views.cluster_dialog import ClusterJobWindow
    from gpuperf_gui.views.mfu.tab import MfuTab
    from gpuperf_gui.views.roofline_tab import RooflineTab
    from gpuperf_gui.views.trace.tab import TraceTab

WINDOW_SIZE = QSize(1600, 1000)
# tab key -> ("module:class" under gpuperf_gui.views, title)
TABS = (
    ("roofline", "roofline_tab:RooflineTab", "Roofline"),
    ("mfu", "mfu.tab:MfuTab", "MFU"),
    ("trace", "trace.tab:TraceTab", "Trace"),
    ("bench", "benchmark_tab:BenchmarkTab", "Benchmarks"),
)
DEFERRED_BUILD_MS = 150
"""The tabs not shown are built this long after the window is (one per turn of the event loop), so
the first paint does not wait for them: the Trace tab alone and its modules were ~0.4 s of a 1.3 s
start-up on a 2-core machine (benchmarks/startup.py)."""
_CLUSTER_DIALOG = "gpuperf_gui.views.cluster_dialog"
TRACE_FILE_ACTIONS = ("&Compare two traces (before/after)…", "&Profile a script…")
"""The File menu's entries of the Trace tab (``TraceTab.file_actions``), there before the tab is built."""


def _cluster_dialog():  # noqa: ANN202 (the module)
    """views.cluster_dialog, imported on first use (it imports the trace engine)."""
    return importlib.import_module(_CLUSTER_DIALOG)


def _is_job_window(widget: QWidget | None) -> bool:
    """A job overview's tab (none exists before views.cluster_dialog is imported)."""
    module = sys.modules.get(_CLUSTER_DIALOG)
    return module is not None and isinstance(widget, module.ClusterJobWindow)


class _Tabs(Mapping):
    """``MainWindow.tab_by_key``: a tab is built when it is first asked for."""

    def __init__(self, window: MainWindow) -> None:
        self._window = window

    def __getitem__(self, key: str) -> QWidget:
        if key not in self._window._titles:
            raise KeyError(key)
        return self._window._tab(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._window._titles)

    def __len__(self) -> int:
        return len(self._window._titles)


class MainWindow(QMainWindow):
    """Four instruments over one shared device and precision."""

    state_file_set_aside = Signal(object)   # core.state_files.SetAside (queued from any thread)

    def __init__(self, context: AppContext | None = None) -> None:
        super().__init__()
        self.setWindowTitle("gpuperf — why is my GPU workload slow?")
        self.context = context or AppContext()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.setCentralWidget(self.tabs)
        self._titles = {key: title for key, _where, title in TABS}
        self._built: dict[str, QWidget] = {}           # the tabs built so far
        self._placeholders: dict[str, QWidget] = {}     # where the others will go
        self._replacing = False
        self._trace_memory_budget: int | None = None    # given to the Trace tab when it is built
        self.tab_by_key: Mapping[str, QWidget] = _Tabs(self)
        for key, _where, title in TABS:
            self._placeholders[key] = QWidget()
            self.tabs.addTab(self._placeholders[key], title)
        self.tabs.currentChanged.connect(self._on_current_changed)
        self._deferred = QTimer(self)
        self._deferred.setSingleShot(True)
        self._deferred.timeout.connect(self._build_next_deferred)
        self._build_toolbar()
        self.presentation_window = None  # View ▸ Presentation, made on first use
        self._build_menus()
        self.context.ceilings_changed.connect(self._on_ceilings_changed)
        self.tabs.setTabsClosable(True)   # job overviews close; the four instruments do not
        for index in range(self.tabs.count()):
            self._unclosable(index)
        self.tabs.tabCloseRequested.connect(self.close_job_tab)
        self.setAcceptDrops(True)
        self._pending_recent: list[Path] = []
        self.set_aside_notices: list[str] = []   # state files set aside, said once in the status bar
        self.state_file_set_aside.connect(self._on_state_file_set_aside)
        self._reporter = self.state_file_set_aside.emit
        state_files.set_reporter(self._reporter)
        self.statusBar().showMessage(self._database_status())
        self._restore_settings()
        self._tab(self.current_tab_key())   # the tab the first paint shows; the others after it
        for item in state_files.take_pending():  # set aside before the window existed (the catalog)
            self._on_state_file_set_aside(item)

    def showEvent(self, event) -> None:  # noqa: N802, ANN001
        super().showEvent(event)
        if self._placeholders and not self._deferred.isActive():
            self._deferred.start(DEFERRED_BUILD_MS)

    def _build_next_deferred(self) -> None:
        """Build one tab not built yet; the next one on the next turn of the event loop."""
        if self._placeholders:
            self._tab(next(iter(self._placeholders)))
        if self._placeholders:
            self._deferred.start(0)

    def _unclosable(self, index: int) -> None:
        for side in (QTabBar.ButtonPosition.RightSide, QTabBar.ButtonPosition.LeftSide):
            self.tabs.tabBar().setTabButton(index, side, None)

    def _tab(self, key: str) -> QWidget:
        """The tab of ``key``, built (its module imported) and wired in its place on first use."""
        tab = self._built.get(key)
        if tab is not None:
            return tab
        where = dict((k, w) for k, w, _t in TABS)[key]
        module, name = where.split(":")
        cls = getattr(importlib.import_module(f"gpuperf_gui.views.{module}"), name)
        tab = self._built[key] = cls(self.context, self)
        placeholder = self._placeholders.pop(key)
        index = self.tabs.indexOf(placeholder)
        current = self.tabs.currentIndex() == index
        self._replacing = True
        try:
            self.tabs.removeTab(index)
            self.tabs.insertTab(index, tab, self._titles[key])
            self._unclosable(index)
            if current:
                self.tabs.setCurrentIndex(index)
        finally:
            self._replacing = False
        placeholder.deleteLater()
        self._wire(key, tab)
        return tab

    def _on_current_changed(self, index: int) -> None:
        """A placeholder brought to the front (a click before it was built): build it now."""
        if self._replacing:
            return
        widget = self.tabs.widget(index)
        key = next((k for k, w in self._placeholders.items() if w is widget), None)
        if key is not None:
            self._tab(key)

    # tabs -------------------------------------------------------------------------------
    @property
    def roofline_tab(self) -> RooflineTab:
        return self.tab_by_key["roofline"]  # type: ignore[return-value]

    @property
    def mfu_tab(self) -> MfuTab:
        return self.tab_by_key["mfu"]  # type: ignore[return-value]

    @property
    def trace_tab(self) -> TraceTab:
        return self.tab_by_key["trace"]  # type: ignore[return-value]

    @property
    def bench_tab(self) -> BenchmarkTab:
        return self.tab_by_key["bench"]  # type: ignore[return-value]

    def _wire(self, key: str, tab: QWidget) -> None:
        """Connect a tab just built to the window and, through it, to the others."""
        if key == "trace":
            tab.mfu_figures_ready.connect(self._on_mfu_figures_ready)
            tab.roofline_points_ready.connect(self._on_roofline_points_ready)
            tab.trace_loaded.connect(self._on_trace_loaded)
            tab.open_elsewhere = lambda paths: self.open_job_overview(paths)   # the tab's own drops too
            tab.memory_budget_bytes = self._trace_memory_budget
            has = {a.text() for a in self._trace_tab_actions()}   # an entry the tab lacks goes away
            for action in getattr(self, "_trace_file_actions", []):
                action.setVisible(action.text() in has)
        elif key == "bench":
            tab.point_measured.connect(lambda point: self.roofline_tab.append_measured_point(point))
            # one path: the catalog takes them, then the context tells every tab (ceilings_changed)
            tab.ceilings_measured.connect(self.context.add_measured_ceilings)
            tab.cache_roofs_measured.connect(lambda *roofs: self.roofline_tab.set_cache_roofs(*roofs))
            # a run just made: its device's roofs at once
            tab.run_measured.connect(lambda *run: self.roofline_tab.offer_device(*run))

    def _on_mfu_figures_ready(self, figures: object) -> None:
        self.mfu_tab.apply_trace_figures(figures)
        self.show_tab("mfu")

    def _on_roofline_points_ready(self, name: str, points: object) -> None:
        # the kernels belong to the trace's GPU and precision, whatever the toolbar shows now
        self.roofline_tab.set_point_series(name, list(points), device_id=self._trace_device_id(),
                                           precision=self._trace_precision())
        self.show_tab("roofline")

    def _trace_device_id(self) -> str | None:
        """The database id of the loaded trace's GPU, None when unknown."""
        prepared = self.trace_tab.prepared
        ranks = prepared.model.ranks if prepared is not None else []
        name = next((r.device_name for r in ranks if r.device_name), "")
        return match_device_name(name, self.context.database) if name else None

    def _trace_precision(self) -> str | None:
        """The loaded trace's precision (the Overview's choice, else the one detected), None when unknown."""
        prepared = self.trace_tab.prepared
        figures = prepared.mfu_figures if prepared is not None else None
        chosen = self.trace_tab.overview.precision_override
        return chosen or (figures.precision.effective if figures is not None else None)

    def _on_trace_loaded(self) -> None:
        """Remember the files, and point the shared device at the trace's GPU when it is known."""
        self.roofline_tab.clear_point_series()  # the previous trace's kernels: another run, maybe another GPU
        self.statusBar().clearMessage()
        for path in self._pending_recent:
            settings_store.add_recent_file(str(path))
        self._pending_recent = []
        self._fill_recent_menu()
        prepared = self.trace_tab.prepared
        ranks = prepared.model.ranks if prepared is not None else []
        name = next((r.device_name for r in ranks if r.device_name), "")
        device_id = self._trace_device_id()
        precision = self._trace_precision()
        said = []
        if device_id and device_id != self.context.device_id:
            self.device_combo.setCurrentIndex(self.device_combo.findData(device_id))
            said.append(f"device {device_id}")
        have, before = self.context.device.precisions(), self.context.precision
        if precision and precision in have:
            # the toolbar follows the trace's GEMMs: no figure is judged against another precision
            if precision != before:
                self.precision_combo.setCurrentText(precision)
                said.append(f"precision {precision} (its GEMM/attention kernels)")
        elif said and before not in have:  # e.g. bf16 on a V100: take its tensor precision
            fallback = next((p for p in ("bf16", "fp16", "fp32") if p in have), None)
            if fallback:
                self.precision_combo.setCurrentText(fallback)
                said.append(f"precision {fallback} (it has no {before} peak)")
        if said:
            self.statusBar().showMessage(f"{', '.join(said)} from the trace ({name or 'no GPU named'})", 10_000)

    def _on_ceilings_changed(self, device_id: str, _added: bool) -> None:
        """A device known only by measurement (the cpu, a GPU missing from the database) joins the
        device picker under its measured name; the peak label follows."""
        device = self.context.database.get(device_id)
        index = self.device_combo.findData(device_id)
        if index < 0 and device.origin == "measured":
            self.device_combo.addItem(self._combo_text(device), device_id)
        elif index >= 0:
            self.device_combo.setItemText(index, self._combo_text(device))
        self._update_peak_label()

    @staticmethod
    def _combo_text(device: Device) -> str:
        return f"{device.name}  [{device.id}]"

    def show_tab(self, key: str) -> None:
        if key in self._titles:
            self.tabs.setCurrentWidget(self._tab(key))

    def current_tab_key(self) -> str:
        current = self.tabs.currentWidget()
        if _is_job_window(current):
            return "trace"   # a job overview is not kept between sessions: reopen on the Trace tab
        shown = {**self._placeholders, **self._built}
        return next((k for k, w in shown.items() if w is current), "roofline")

    def is_busy(self) -> bool:
        """True while any tab still loads or measures (``--screenshot`` waits for False); a tab
        not built yet is not busy."""
        return (any(tab.is_busy() for tab in self._built.values())
                or any(w.is_busy() for w in self.job_windows))

    def open_traces(self, paths: list[Path], remember: bool = True) -> None:
        """Open traces in the Trace tab; they join File ▸ Open recent once they have loaded. More than
        ``cluster.MANY_RANKS`` rank files open as a job overview instead (:meth:`open_job_overview`)."""
        if self.open_job_overview(paths, remember):
            return
        self._pending_recent = list(paths) if remember else []
        self.show_tab("trace")
        self.trace_tab.open_paths(paths)

    def open_job_overview(self, paths: list[Path], remember: bool = True) -> bool:
        """When ``paths`` hold more than ``cluster.MANY_RANKS`` rank files, or rank files whose lanes
        would not fit the memory budget (core's ``overview_reason``), show the job's overview from
        compact results (local process pool) in a job tab and return True; else False (the Trace
        tab loads them; a path that cannot be read is its error to report)."""
        from gpuperf_gui.core.trace.engine.cluster import overview_reason  # noqa: PLC0415 - the engine, on first use
        from gpuperf_gui.core.trace.ingest.load import discover_files  # noqa: PLC0415
        try:
            files = discover_files(paths)
        except (TraceFormatError, OSError):
            return False
        reason = overview_reason(files, MemoryBudget.of(self.trace_tab.memory_budget_bytes).limit_bytes)
        if reason is None:
            return False
        window = self.add_job_tab([Path(p) for p in paths], None)
        if remember:
            window.result_ready.connect(lambda _result, ps=list(paths): self._remember(ps))
        self.statusBar().showMessage(f"{reason}: opened as a job overview on {window.engine} "
                                     "(a rank's lanes load when it is opened)", 15_000)
        return True

    @property
    def job_windows(self) -> list[ClusterJobWindow]:
        """The job overviews open, as tabs after the four instruments."""
        widgets = (self.tabs.widget(i) for i in range(self.tabs.count()))
        return [w for w in widgets if _is_job_window(w)]  # type: ignore[misc]

    def add_job_tab(self, paths: list[Path], address: str | None) -> ClusterJobWindow:
        """A job overview of ``paths`` (``address`` None: the local process pool, else a Dask
        scheduler) in a new tab, started; an opened rank loads in the Trace tab."""
        window = _cluster_dialog().ClusterJobWindow(paths, address, memory_budget=self.trace_tab.memory_budget_bytes)
        window.rank_file_opened.connect(lambda path: self.open_traces([path], remember=False))
        index = self.tabs.addTab(window, f"Job: {window.folder.name}")
        self.tabs.setTabToolTip(index, window.windowTitle())
        self.tabs.setCurrentIndex(index)
        window.start()
        return window

    def close_job_tab(self, index: int) -> None:
        """Close a job overview's tab (its run stops); the instruments' tabs stay."""
        window = self.tabs.widget(index)
        if _is_job_window(window):
            window.close()          # closeEvent stops and joins its worker
            self.tabs.removeTab(index)
            window.deleteLater()

    def _open_on_cluster(self) -> None:
        """File ▸ Open on a Dask cluster…: ask for the folder and the scheduler, then a job tab."""
        asked = _cluster_dialog().ask_cluster_job(self)
        if asked is not None:
            self.add_job_tab([asked[0]], asked[1])

    def _remember(self, paths: list[Path]) -> None:
        for path in paths:
            settings_store.add_recent_file(str(path))
        self._fill_recent_menu()

    # toolbar ----------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        bar = QToolBar("Device")
        bar.setObjectName("device_toolbar")
        bar.setMovable(False)
        bar.addWidget(QLabel(" Device: "))
        self.device_combo = QComboBox()
        for device in self.context.database.devices():
            self.device_combo.addItem(self._combo_text(device), device.id)
        self.device_combo.setCurrentIndex(self.device_combo.findData(self.context.device_id))
        self.device_combo.currentIndexChanged.connect(
            lambda _i: self.context.set_device(self.device_combo.currentData()))
        bar.addWidget(self.device_combo)
        bar.addWidget(QLabel("  Precision: "))
        self.precision_combo = QComboBox()
        self.precision_combo.addItems(list(PRECISIONS))
        self.precision_combo.setCurrentText(self.context.precision)
        self.precision_combo.currentTextChanged.connect(self.context.set_precision)
        bar.addWidget(self.precision_combo)
        self.peak_label = QLabel()
        bar.addWidget(self.peak_label)
        self.context.device_changed.connect(lambda _d: self._update_peak_label())
        self.context.precision_changed.connect(lambda _p: self._update_peak_label())
        self._update_peak_label()
        self.addToolBar(bar)

    def _update_peak_label(self) -> None:
        device = self.context.device
        peak = device.dense_flops_per_s.get(self.context.precision)
        bw = device.memory_bandwidth_bytes_per_s
        kind = "measured" if device.origin == "measured" else "dense"
        text = (f"   {kind} {self.context.precision} peak {format_si(peak, 'FLOP/s')}"
                if peak else f"   no known {self.context.precision} peak")
        if device.measured_with:
            text += f" ({device.measured_with})"
        text += f" · memory {format_si(bw, 'B/s')}" if bw else " · bandwidth: measure it (Benchmarks)"
        self.peak_label.setText(text)

    # menus ------------------------------------------------------------------------------
    def _action(self, text: str, slot: Callable, shortcut: QKeySequence | str | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(slot)
        return action

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self._action("&Open trace…", self._on_open_file, QKeySequence.StandardKey.Open))
        file_menu.addAction(self._action("Open trace &folder (one file per rank)…", self._on_open_folder))
        file_menu.addAction(self._action("Open on a &Dask cluster…", self._open_on_cluster))  # cluster_dialog.py
        self.recent_menu = file_menu.addMenu("Open &recent")
        self._fill_recent_menu()
        self._trace_file_actions = [self._action(text, lambda _=False, t=text: self._run_trace_file_action(t))
                                    for text in TRACE_FILE_ACTIONS]
        file_menu.addActions(self._trace_file_actions)
        file_menu.addAction(self._action("Trace &memory budget…", self._on_memory_budget))
        file_menu.addSeparator()
        file_menu.addAction(self._action("Export roofline as &PNG…", lambda: self.roofline_tab._on_export_png()))
        file_menu.addAction(self._action("Export roofline as &SVG…", lambda: self.roofline_tab._on_export_svg()))
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Quit", self.close, QKeySequence.StandardKey.Quit))

        view_menu = self.menuBar().addMenu("&View")
        for index, (key, _where, title) in enumerate(TABS):
            view_menu.addAction(self._action(title, lambda _=False, k=key: self.show_tab(k),
                                             f"Ctrl+{index + 1}"))
        view_menu.addSeparator()
        view_menu.addAction(self._action("&Presentation", self.open_presentation, "F5"))

        help_menu = self.menuBar().addMenu("&Help")
        self.demo_menu = help_menu.addMenu("&Demo traces")
        self.demo_menu.aboutToShow.connect(self._fill_demo_menu)
        help_menu.addAction(self._action("&Keyboard shortcuts", self.show_shortcuts, "?"))
        help_menu.addAction(self._action("&How to read a trace", self.show_how_to_read))
        help_menu.addAction(self._action("&About gpuperf", self._on_about))

    def show_shortcuts(self) -> None:
        """Help ▸ Keyboard shortcuts (``?``): the sheet made from help_pages.SHORTCUTS."""
        from gpuperf_gui.views import help_pages

        self.help_dialog = help_pages.show_page(self, "Keyboard shortcuts", help_pages.shortcuts_html())

    def show_how_to_read(self) -> None:
        from gpuperf_gui.views import help_pages

        self.help_dialog = help_pages.show_page(self, "How to read a trace", help_pages.HOW_TO_READ_A_TRACE)

    def _run_trace_file_action(self, text: str) -> None:
        """A Trace tab entry of the File menu: the tab's own action (the tab is built first)."""
        for action in self._trace_tab_actions():
            if action.text() == text:
                action.trigger()

    def _trace_tab_actions(self) -> list[QAction]:
        if getattr(self, "_tab_file_actions", None) is None:
            self._tab_file_actions = self.trace_tab.file_actions(self)
        return self._tab_file_actions

    def _fill_demo_menu(self) -> None:
        """Help ▸ Demo traces, filled when it first opens (the Trace tab owns their temp files)."""
        if self.demo_menu.actions():
            return
        for name, materialise in self.trace_tab.demo_entries():  # its temp files go at shutdown
            self.demo_menu.addAction(self._action(
                name, lambda _=False, m=materialise: self.open_traces(m(), remember=False)))

    def open_presentation(self) -> None:
        """View ▸ Presentation: large-print pages for teaching (views/presentation.py)."""
        from gpuperf_gui.views.presentation import PresentationWindow

        if self.presentation_window is None:
            self.presentation_window = PresentationWindow(self.context, self)
        self.presentation_window.resize(self.size())
        self.presentation_window.show()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = settings_store.recent_files()
        for path in files:
            self.recent_menu.addAction(self._action(path, lambda _=False, p=path: self.open_traces([Path(p)])))
        self.recent_menu.setEnabled(bool(files))

    def _on_open_file(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open torch.profiler trace", settings_store.last_folder("traces"),
            "Chrome traces (*.json *.json.gz *.gz);;All files (*)")
        if paths:
            settings_store.remember_folder("traces", Path(paths[0]).parent)
            self.open_traces([Path(p) for p in paths])

    def _on_open_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a folder of per-rank traces",
                                                settings_store.last_folder("traces"))
        if path:
            settings_store.remember_folder("traces", Path(path).parent)
            self.open_traces([Path(path)])

    def about_text(self) -> str:
        torch_version = "not imported yet (loaded only for benchmarks)"
        if "torch" in sys.modules:
            torch_version = sys.modules["torch"].__version__
        else:
            try:
                from importlib.metadata import version

                torch_version = f"{version('torch')} (installed; imported only for benchmarks)"
            except Exception:  # noqa: BLE001 - metadata lookups fail in odd installs
                torch_version = "not installed"
        import pyqtgraph

        return (f"<b>gpuperf {__version__}</b><br>Roofline, MFU, trace diagnosis and measured "
                f"ceilings.<br><br>Qt {qVersion()}<br>PySide6 {pyside_version}<br>"
                f"pyqtgraph {pyqtgraph.__version__}<br>torch {torch_version}<br>"
                f"Python {sys.version.split()[0]}")

    def _on_about(self) -> None:
        QMessageBox.about(self, "About gpuperf", self.about_text())

    def _database_status(self) -> str:
        # the user file's problems are state-file notices (_on_state_file_set_aside), said once
        return f"{len(self.context.database.ids())} devices in the database · peaks are dense"

    def _on_state_file_set_aside(self, item: state_files.SetAside) -> None:
        """A settings, devices or ceilings file that could not be used: said once, in the status
        bar (no dialog), with what was set aside and where."""
        self.set_aside_notices.append(item.message())
        self.statusBar().showMessage("Set aside: " + " | ".join(self.set_aside_notices))

    # drag and drop ----------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            self.open_traces(paths)
            event.acceptProposedAction()

    # settings ---------------------------------------------------------------------------
    def _restore_settings(self) -> None:
        geometry, state = settings_store.load_window()
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(WINDOW_SIZE)
        if state is not None:
            self.restoreState(state)
        device_id, precision, tab = settings_store.load_selection()
        if device_id and device_id in self.context.database:
            self.device_combo.setCurrentIndex(self.device_combo.findData(device_id))
        if precision in PRECISIONS:
            self.precision_combo.setCurrentText(precision)
        self._trace_memory_budget = settings_store.trace_memory_budget_bytes()
        if "trace" in self._built:
            self.trace_tab.memory_budget_bytes = self._trace_memory_budget
        if tab:
            self.show_tab(tab)

    def _on_memory_budget(self) -> None:
        """Ask for the most memory one trace load may use (core/trace/ingest/budget.py), and keep it."""
        current = MemoryBudget.of(self.trace_tab.memory_budget_bytes).describe()
        text, ok = QInputDialog.getText(
            self, "Trace memory budget",
            "Most memory one trace load may use (e.g. 2GB, 8GB, 16GiB; empty for the default 2 GB).\n"
            "A trace that would need more is refused before it is read, with a message.", text=current)
        if ok:
            self.set_trace_memory_budget(text)

    def set_trace_memory_budget(self, text: str) -> bool:
        """Set the budget from ``text`` ("8GB"; empty: the default); a bad value is reported, not kept."""
        try:
            limit = None if not text.strip() else MemoryBudget(parse_bytes(text)).limit_bytes
        except ValueError as exc:
            self.statusBar().showMessage(f"Trace memory budget not changed: {exc}", 10000)
            return False
        self._trace_memory_budget = limit
        self.trace_tab.memory_budget_bytes = limit
        settings_store.save_trace_memory_budget(limit)
        self.statusBar().showMessage(f"Trace memory budget: {MemoryBudget.of(limit).describe()}", 10000)
        return True

    def closeEvent(self, event: QCloseEvent) -> None:
        current = state_files.set_reporter(None)
        if current is not self._reporter:  # another window took over meanwhile: it keeps reporting
            state_files.set_reporter(current)
        self._deferred.stop()
        for tab in self._built.values():
            tab.shutdown()
        for window in self.job_windows:
            window.close()
        if self.presentation_window is not None:
            self.presentation_window.shutdown()
        settings_store.save_window(self.saveGeometry(), self.saveState())
        settings_store.save_selection(self.context.device_id, self.context.precision,
                                      self.current_tab_key())
        super().closeEvent(event)

