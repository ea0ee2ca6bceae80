"""The Trace tab's Overview page: a loaded trace at a glance (the TensorBoard plugin's overview, better).

Headline figures (GPU utilisation, tensor-core share of kernel time, median step time, exposed
communication), the step-time breakdown of every step as a stacked bar (compute, exposed comm, copy,
idle by cause), the top kernels with their achieved FLOP/s and fraction of the roof, and the diagnosis.
Every number comes from :mod:`gpuperf_gui.core.trace.analysis.overview`; this page only draws.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.hardware import PRECISIONS, Device
from gpuperf_gui.core.trace.analysis.kernel_roof import GemmRoof, kernel_roof_fraction
from gpuperf_gui.core.trace.vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT, HTA_IDLE_SPLIT, hta_idle_label
from gpuperf_gui.core.trace.analysis.kernel_table import KernelRow
from gpuperf_gui.core.trace.analysis.overview import IDLE_CAUSES, RankOverview, display_kernel_name
from gpuperf_gui.core.trace.session.loaded_trace import LoadedTrace
from gpuperf_gui.core.units import format_si
from gpuperf_gui.views.plotting import make_static_plot
from gpuperf_gui.views.trace.panels import PANEL_CSS, diagnosis_html
from gpuperf_gui.views.rich_text import plain_tooltip
from gpuperf_gui.views.trace.style import (
    IDLE_CAUSE_COLORS,
    KERNEL_CLASS_COLORS,
    format_duration_us,
    format_percent,
)
from gpuperf_gui.views.trace.what_if_view import WhatIfTable

PART_COLORS = {
    "compute": KERNEL_CLASS_COLORS["gemm"],
    COMM_KERNELS_EXPOSED.name: KERNEL_CLASS_COLORS["communication"],
    "copy": KERNEL_CLASS_COLORS["copy"],
    **{hta_idle_label(c): IDLE_CAUSE_COLORS[c] for c in IDLE_CAUSES},
}
KERNEL_COLUMNS = ("Kernel", "Class", "Calls", "Device time", "Share", "Tensor cores", "Achieved", "% of roof",
                  "Precision")
AUTO = "auto"

MAX_STEP_TICKS = 60
"""Step labels on the breakdown's axis at most (a tiled trace has thousands of steps)."""


class _SortItem(QTableWidgetItem):
    """A table cell that sorts by a number, shows text."""

    def __init__(self, text: str, key: float | str) -> None:
        super().__init__(text)
        self.key = key

    def __lt__(self, other: QTableWidgetItem) -> bool:
        k = getattr(other, "key", None)
        if isinstance(self.key, str) or isinstance(k, str):
            return str(self.key) < str(k)
        return self.key < k


class StepBreakdownPlot(pg.PlotWidget):
    """Stacked bars: one per step, segments in µs drawn as ms. The bars and the legend are made
    once; a new trace only changes their data."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        make_static_plot(self, "step time (ms)")
        self.setLabel("bottom", "step")
        self.legend = self.addLegend(offset=(-10, 8), labelTextColor=QColor(40, 40, 40))
        self.legend.setColumnCount(3)
        self.bars: dict[str, pg.BarGraphItem] = {}
        for name, color in PART_COLORS.items():
            bar = pg.BarGraphItem(x=[], y0=[], height=[], width=0.7, brush=QColor(color),
                                  pen=pg.mkPen(QColor(255, 255, 255), width=0.5))
            self.addItem(bar)
            self.legend.addItem(bar, name)
            self.bars[name] = bar
        self.totals_ms: np.ndarray = np.zeros(0)

    def set_steps(self, rank: RankOverview | None) -> None:
        steps = [] if rank is None else rank.steps
        x = np.arange(len(steps), dtype=float)
        bottom = np.zeros(len(steps))
        for k, name in enumerate(PART_COLORS):
            heights = np.array([s.parts()[k][1] for s in steps]) / 1e3 if steps else np.zeros(0)
            self.bars[name].setOpts(x=x, y0=bottom.copy(), height=heights, width=0.7)
            bottom += heights
        self.totals_ms = bottom
        if not steps:
            self.setTitle("no ProfilerStep annotations: no per-step breakdown", color="#777", size="9pt")
            return
        self.setTitle("")
        every = max(1, -(-len(steps) // MAX_STEP_TICKS))   # thousands of steps: label every k-th
        ticks = [(i, f"{s.number}{' (warm-up)' if s.warmup else ''}") for i, s in enumerate(steps) if i % every == 0]
        self.getAxis("bottom").setTicks([ticks, []])
        self.setXRange(-0.6, len(steps) - 0.4, padding=0.0)
        self.setYRange(0.0, float(bottom.max()) * 1.3 if bottom.size else 1.0, padding=0.0)


class TraceOverview(QWidget):
    """The Overview page of the Trace tab; ``kernel_activated(name)`` when a top kernel is double-clicked."""

    kernel_activated = Signal(str)
    precision_override_changed = Signal(object)   # str | None (None: each kernel's own)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loaded: LoadedTrace | None = None
        self.device: Device | None = None
        self.roof_label = ""
        self.rank_combo = QComboBox()
        self.rank_combo.setToolTip("Which rank's figures to show")
        self.precision_combo = QComboBox()
        self.precision_combo.addItem(AUTO, None)
        for p in PRECISIONS:
            self.precision_combo.addItem(p, p)
        self.precision_combo.setToolTip("The precision the kernels' % of roof and the trace's MFU are measured "
                                        "at: auto = each kernel's own (from its name and its op's input types), "
                                        "the trace's the dominant one by GEMM time")
        self.precision_label = QLabel()
        self.precision_label.setTextFormat(Qt.TextFormat.RichText)
        self.precision_combo.activated.connect(lambda _i: self._on_precision_chosen())
        self.cards = QLabel()
        self.cards.setTextFormat(Qt.TextFormat.RichText)
        self.cards.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cards.setToolTip(COMM_WAIT.tooltip())
        top = QHBoxLayout()
        top.addWidget(self.cards, 1)
        top.addWidget(self.rank_combo, 0, Qt.AlignmentFlag.AlignTop)
        prec = QHBoxLayout()
        prec.addWidget(QLabel("Precision"))
        prec.addWidget(self.precision_combo)
        prec.addWidget(self.precision_label, 1)
        self.step_plot = StepBreakdownPlot()
        self.step_plot.setMinimumHeight(220)
        self.step_plot.setToolTip(f"{COMM_KERNELS_EXPOSED.tooltip()}\n{HTA_IDLE_SPLIT.tooltip()}")
        self.kernel_title = QLabel()
        self.kernels = QTableWidget(0, len(KERNEL_COLUMNS))
        self.kernels.setHorizontalHeaderLabels(list(KERNEL_COLUMNS))
        self.kernels.verticalHeader().setVisible(False)
        self.kernels.verticalHeader().setDefaultSectionSize(20)
        self.kernels.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.kernels.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.kernels.setAlternatingRowColors(True)
        self.kernels.setSortingEnabled(True)
        header = self.kernels.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for i in range(1, len(KERNEL_COLUMNS)):
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        self.diagnosis = QTextBrowser()
        self.diagnosis.setOpenLinks(False)
        self.diagnosis.setMinimumWidth(320)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(QLabel("<b>Step-time breakdown</b> <span style='color:#666'>each step split into "
                            f"compute, {COMM_KERNELS_EXPOSED.name}, copies and GPU idle in {HTA_IDLE_SPLIT.name}; the bar's "
                            "height is the step time</span>"))
        lv.addWidget(self.step_plot, 2)
        lv.addWidget(self.kernel_title)
        lv.addLayout(prec)
        lv.addWidget(self.kernels, 2)
        self.what_if = WhatIfTable()  # the causes by projected gain (views/trace/what_if_view.py)
        lv.addWidget(self.what_if, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(self.diagnosis)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([1150, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self.rank_combo.activated.connect(lambda _i: self._show_rank())
        self.kernels.itemDoubleClicked.connect(lambda item: self.kernel_activated.emit(
            self.kernels.item(item.row(), 0).toolTip()))
        self.kernels.setToolTip("Double-click a kernel to find its launches in the timeline")
        self._dirty = True
        self.set_trace(None)

    # -- inputs ----------------------------------------------------------------------------------------
    def set_roof(self, device: Device | None, label: str) -> None:
        """The device whose roofs the "% of roof" column uses (the trace's GPU, else the toolbar's),
        each kernel at its own precision unless one is chosen."""
        self.device, self.roof_label = device, label
        if not self._dirty:
            self._show_rank()

    @property
    def precision_override(self) -> str | None:
        return self.precision_combo.currentData()

    def set_precision_override(self, precision: str | None) -> None:
        index = self.precision_combo.findData(precision) if precision else 0
        self.precision_combo.setCurrentIndex(max(index, 0))
        self._on_precision_chosen()

    def _on_precision_chosen(self) -> None:
        if not self._dirty:
            self._show_rank()
        self.precision_override_changed.emit(self.precision_override)

    def gemm_roof(self) -> GemmRoof | None:
        """The shown rank's GEMMs against their roofs (core's figure, the MFU tab's GEMM inefficiency)."""
        rank = self.rank
        kernels = rank.kernels if rank is not None else None
        return kernels.gemm(self.device, self.precision_override) if kernels is not None else None

    def set_trace(self, loaded: LoadedTrace | None) -> None:
        """Show ``loaded``; drawn now if the page is visible, else when it is first shown. A new
        trace starts at "auto": a precision chosen for the last one says nothing about this one."""
        self.loaded = loaded
        self.precision_combo.setCurrentIndex(0)
        self._dirty = True
        if self.isVisible():
            self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802, ANN001 (Qt override)
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        """Draw the current trace (the tab calls it lazily: the page costs nothing while hidden)."""
        self._dirty = False
        loaded = self.loaded
        self.what_if.show_what_if(loaded.what_if if loaded is not None else None)  # made by the worker
        self.rank_combo.clear()
        ranks = loaded.overview.ranks if loaded is not None and loaded.overview is not None else []
        late = set(loaded.overview.stragglers) if ranks else set()
        for i, r in enumerate(ranks):
            self.rank_combo.addItem(f"rank {r.rank}" + (" (late)" if r.rank in late else ""), i)
        self.rank_combo.setVisible(len(ranks) > 1)
        first_late = next((i for i, r in enumerate(ranks) if r.rank in late), 0)
        self.rank_combo.setCurrentIndex(first_late if ranks else -1)   # a late rank is the one to read first
        self.diagnosis.setHtml(PANEL_CSS + (diagnosis_html(loaded.diagnosis) if loaded and loaded.diagnosis else
                                       "<p class='muted'>Open a trace to see its overview.</p>"))
        self._show_rank()

    @property
    def rank(self) -> RankOverview | None:
        if self.loaded is None or self.loaded.overview is None or not self.loaded.overview.ranks:
            return None
        i = self.rank_combo.currentData()
        return self.loaded.overview.ranks[i if i is not None else 0]

    # -- drawing -----------------------------------------------------------------------------------------
    def _show_rank(self) -> None:
        rank = self.rank
        self.cards.setText(self._cards_html(rank))
        self.step_plot.set_steps(rank)
        self._fill_kernels(rank.top_kernels if rank else [])
        self.precision_label.setText(self._precision_html(rank))

    def _cards_html(self, r: RankOverview | None) -> str:
        if r is None:
            return "<span style='color:#777'>No trace loaded.</span>"
        tc = "–" if r.tensor_core_share is None else format_percent(r.tensor_core_share)
        step = "–" if r.step_time_median_s is None else format_duration_us(r.step_time_median_s * 1e6)
        cards = [("GPU utilisation", format_percent(r.gpu_busy_fraction), "busy share of the steady-state steps"),
                 ("Tensor cores", tc, "share of kernel time in tensor-core kernels"),
                 ("Step time", step, "median of the steady-state steps"),
                 (COMM_WAIT.name.capitalize(), format_percent(r.comm_wait_fraction),
                  "compute idle waiting on communication"),
                 ("GEMMs", self._gemm_text(), "of roof, time-weighted (GEMM/attention kernels)"),
                 ("Kernel time", format_duration_us(r.kernel_seconds * 1e6), "all kernels, whole trace")]
        cells = "".join(
            f"<td style='padding:4px 18px 4px 8px; border-left:3px solid #4e79a7'>"
            f"<div style='color:#555; font-size:8.5pt'>{html.escape(t)}</div>"
            f"<div style='font-size:15pt; font-weight:bold'>{html.escape(v)}</div>"
            f"<div style='color:#888; font-size:8pt'>{html.escape(n)}</div></td>" for t, v, n in cards)
        device = html.escape((r.device or "device unknown").replace("NVIDIA ", ""))
        return f"<table><tr><td style='padding-right:14px'><b>rank {r.rank}</b><br>{device}</td>{cells}</tr></table>"

    def _gemm_text(self) -> str:
        gemm = self.gemm_roof()
        return "–" if gemm is None or gemm.fraction is None else format_percent(gemm.fraction)

    def _precision_html(self, r: RankOverview | None) -> str:
        kernels = r.kernels if r is not None else None
        if kernels is None:
            return ""
        tp = kernels.precision.with_override(self.precision_override)
        text = html.escape(tp.describe())
        if self.precision_override:
            return f"<span style='color:#b35900'>every GEMM/attention kernel judged at {text}</span>"
        return f"<span style='color:#555'>trace: {text}; each kernel at its own precision's peak</span>"

    def _fill_kernels(self, rows: list[KernelRow]) -> None:
        roof = f"{self.roof_label}" if self.device is not None else "no roof: the trace names no known GPU"
        self.kernel_title.setText(f"<b>Top kernels by device time</b> <span style='color:#666'>whole trace · "
                                  f"achieved FLOP/s of the GEMM/attention kernels (their op's FLOPs) · % of "
                                  f"roof: {html.escape(roof)}, at each kernel's precision</span>")
        self.kernels.setSortingEnabled(False)
        self.kernels.setRowCount(len(rows))
        for i, k in enumerate(rows):
            achieved = k.achieved_flops_per_s
            frac = kernel_roof_fraction(k, self.device, self.precision_override)
            shown_precision = (self.precision_override if self.precision_override and k.math else k.precision)
            cells = [
                _SortItem(display_kernel_name(k.name), k.name.lower()),
                _SortItem(k.kernel_class, k.kernel_class),
                _SortItem(f"{k.calls:,}", k.calls),
                _SortItem(format_duration_us(k.seconds * 1e6), k.seconds),
                _SortItem(format_percent(k.share), k.share),
                _SortItem("yes" if k.tensor_cores else "no", int(k.tensor_cores)),
                _SortItem(format_si(achieved, "FLOP/s") if achieved else "–", achieved or -1.0),
                _SortItem(format_percent(frac) if frac is not None else "–", frac if frac is not None else -1.0),
                _SortItem(shown_precision or "–", shown_precision or ""),
            ]
            cells[0].setToolTip(plain_tooltip(k.name))
            for c in range(2, len(cells)):
                cells[c].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            cells[1].setForeground(QColor(KERNEL_CLASS_COLORS.get(k.kernel_class, "#333")))
            for c, item in enumerate(cells):
                self.kernels.setItem(i, c, item)
        self.kernels.setSortingEnabled(True)
        self.kernels.sortByColumn(3, Qt.SortOrder.DescendingOrder)
