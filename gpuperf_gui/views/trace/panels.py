"""The panels beside the Trace tab's lanes: event details, op table, diagnosis, search results.

Each panel renders numbers that core computed (core/trace/session/loaded_trace.py); none computes a metric.
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QRadioButton,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.trace.vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT
from gpuperf_gui.core.trace.analysis.overview import display_kernel_name
from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.core.trace.session.loaded_trace import DiagnosisView, EventDetails, OpTable
from gpuperf_gui.core.units import format_si
from gpuperf_gui.views.rich_text import plain_tooltip
from gpuperf_gui.views.trace.style import SIGNATURE_COLOURS, format_duration_us, format_percent

SIGNATURE_TEXT = {name: (sig.label, SIGNATURE_COLOURS.get(name, "#333")) for name, sig in REGISTRY.items()}


def verdict_words(signature: str, confidence: float | None, close_call: Sequence[str] = ()) -> str:
    """One wording of a verdict everywhere it is shown (the Trace tab, the job overview):
    "Communication-bound, 100 %", or both causes of a close call ("… ~ …, 29 %")."""
    names = close_call or (signature,)
    title = " ~ ".join(SIGNATURE_TEXT.get(s, (s, ""))[0] for s in names)
    return title if confidence is None else f"{title}, {100 * confidence:.0f} %"

_CSS = """
<style>
body { font-size: 9pt; }
h2 { margin: 2px 0 4px 0; }
h3 { margin: 10px 0 3px 0; font-size: 9.5pt; color: #333; }
table { border-collapse: collapse; }
td, th { padding: 1px 6px 1px 0; }
th { text-align: left; color: #555; font-weight: normal; }
td.num { text-align: right; }
.muted { color: #777; }
.warn { color: #b71c1c; font-weight: bold; }
</style>
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# -- event details ------------------------------------------------------------------------------------
class DetailsPanel(QTextBrowser):
    """Name, category, start, duration, args of the selected event, and links to its partners."""

    partner_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(lambda url: self.partner_clicked.emit(url.toString()))
        self.show_details(None)

    def show_details(self, details: EventDetails | None) -> None:
        if details is None:
            self.setHtml(_CSS + "<p class='muted'>Click an event on the timeline to see its details. "
                         "A CPU launch and the GPU kernel it started are linked by an arrow.</p>")
            return
        rows = [("category", details.category), ("lane", f"rank {details.rank} · {details.lane}"),
                ("start", format_duration_us(details.start_us)),
                ("duration", format_duration_us(details.duration_us)),
                ("depth", str(details.depth))] + details.rows
        body = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
        partners = ""
        if details.partners:
            links = "".join(f"<li><a href='{_esc(h)}'>{_esc(t)}</a></li>" for h, t in details.partners)
            partners = f"<h3>{_esc(details.partner_title)}</h3><ul>{links}</ul>"
        self.setHtml(f"{_CSS}<h3 style='margin-top:0'>{_esc(details.name)}</h3>"
                     f"<table>{body}</table>{partners}")


# -- op table ----------------------------------------------------------------------------------------
class OpTableModel(QAbstractTableModel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = OpTable([], [], [])

    def set_table(self, table: OpTable) -> None:
        self.beginResetModel()
        self.table = table
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.table.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.table.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802, ANN201
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.table.columns[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: ANN201
        if not index.isValid():
            return None
        value = self.table.rows[index.row()][index.column()]
        kind = self.table.kinds[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            if kind == "us":
                return format_duration_us(_num(value) or 0.0) if _num(value) is not None else "–"
            if kind == "percent":
                return format_percent(_num(value))
            if kind == "count":
                return "–" if _num(value) is None else f"{int(value):,}"
            if kind == "flops":
                return "–" if _num(value) is None else format_si(_num(value), "FLOP")
            return str(value)
        if role == Qt.ItemDataRole.UserRole:   # sort key
            if kind == "text":
                return str(value).lower()
            n = _num(value)
            return -1.0 if n is None else n
        if role == Qt.ItemDataRole.ToolTipRole and kind == "text":
            return plain_tooltip(str(value))  # an op name from the trace, never read as markup
        if role == Qt.ItemDataRole.TextAlignmentRole and kind != "text":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def name_at(self, row: int) -> str:
        return str(self.table.rows[row][self.table.name_column])


class _NameSetFilterProxy(QSortFilterProxyModel):
    """The text filter of QSortFilterProxyModel, and optionally a set of names a row must be in."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.names: set[str] | None = None

    def set_names(self, names: set[str] | None) -> None:
        self.beginFilterChange()
        self.names = names
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent: QModelIndex | QPersistentModelIndex) -> bool:  # noqa: N802
        if self.names is not None and self.sourceModel().name_at(row) not in self.names:
            return False
        return super().filterAcceptsRow(row, parent)


class OpTablePanel(QWidget):
    """The op table: kernel view or op view, sortable; selecting a row names its events."""

    name_selected = Signal(str, str)     # view ("kernels"|"ops"), name

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tables: dict[str, OpTable] = {}
        self.rank_note = self.filter_note = ""
        self.kernel_button = QRadioButton("Kernel view")
        self.op_button = QRadioButton("Op view")
        self.op_button.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.op_button)
        group.addButton(self.kernel_button)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("filter names")
        self.filter_edit.setClearButtonEnabled(True)
        self.note = QLabel("")
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # notes carry file and op names
        self.note.setStyleSheet("color: #666")
        top = QHBoxLayout()
        top.addWidget(self.op_button)
        top.addWidget(self.kernel_button)
        top.addWidget(self.filter_edit, 1)
        top.addWidget(self.note)
        self.model = OpTableModel(self)
        self.proxy = _NameSetFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(20)
        self.view.setWordWrap(False)
        self.view.setAlternatingRowColors(True)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.view.horizontalHeader().setStretchLastSection(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.view)
        self.op_button.toggled.connect(self._on_view_toggled)
        self.filter_edit.textChanged.connect(self.proxy.setFilterFixedString)
        self.view.selectionModel().selectionChanged.connect(self._on_selection_changed)

    @property
    def current_view(self) -> str:
        return "ops" if self.op_button.isChecked() else "kernels"

    def set_tables(self, tables: dict[str, OpTable], note: str = "") -> None:
        self.tables = tables
        self.rank_note = note
        self.note.setText(" · ".join(t for t in (note, self.filter_note) if t))
        self._show(self.current_view)

    def _on_view_toggled(self, _checked: bool) -> None:
        self._show(self.current_view)

    def _show(self, view: str) -> None:
        table = self.tables.get(view, OpTable(["(no table)"], ["text"], []))
        self.model.set_table(table)
        self.proxy.setFilterKeyColumn(table.name_column)
        sort_col = next((i for i, c in enumerate(table.columns) if "total" in c.lower() and "device" in c.lower()),
                        next((i for i, k in enumerate(table.kinds) if k == "us"), 0))
        self.view.sortByColumn(sort_col, Qt.SortOrder.DescendingOrder)
        header = self.view.horizontalHeader()
        if table.columns:
            self.view.setColumnWidth(table.name_column, 360)
            for i in range(len(table.columns)):
                if i != table.name_column:
                    header.resizeSection(i, 92)

    def _on_selection_changed(self, *_args) -> None:  # noqa: ANN002
        rows = self.view.selectionModel().selectedRows()
        if not rows:
            return
        source = self.proxy.mapToSource(rows[0])
        self.name_selected.emit(self.current_view, self.model.name_at(source.row()))

    def set_name_filter(self, names: set[str] | None, label: str = "") -> None:
        """Show only the rows named in ``names`` (the search's matches); None shows every row."""
        self.proxy.set_names(names)
        self.filter_note = label if names is not None else ""
        self.note.setText(" · ".join(t for t in (self.rank_note, self.filter_note) if t))

    def select_first_row(self) -> None:
        if self.proxy.rowCount():
            self.view.selectRow(0)


# -- search results ------------------------------------------------------------------------------------
class SearchResults(QListWidget):
    """Matches of a name search, in time order; a click selects the event."""

    match_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.itemClicked.connect(lambda item: self.match_clicked.emit(int(item.data(Qt.ItemDataRole.UserRole))))

    def set_matches(self, texts: Sequence[str], total: int) -> None:
        self.clear()
        for k, text in enumerate(texts):
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, k)
            self.addItem(item)
        if total > len(texts):
            more = QListWidgetItem(f"… {total - len(texts):,} more (use next/previous)")
            more.setData(Qt.ItemDataRole.UserRole, -1)
            more.setForeground(QColor(120, 120, 120))
            more.setFlags(Qt.ItemFlag.NoItemFlags)
            self.addItem(more)


# -- diagnosis ---------------------------------------------------------------------------------------
STEP_TIME_NOTE = (
    "step time: the longer of the step's CPU span (ProfilerStep#N) and its GPU span (its first "
    "kernel to the next step's first kernel). The timeline header shows it, with the CPU span in "
    "brackets when the CPU runs ahead of the GPU. GPU busy: share of the CPU span.")


MAX_STEP_ROWS = 50
"""Steps listed in the diagnosis panel (a tiled 10M-event trace has thousands: a table that long costs
seconds to lay out and nobody reads it; the Overview page charts them all)."""


class DiagnosisPanel(QTextBrowser):
    """Signature, confidence, evidence, the fix to try first, secondary signatures, the figures."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.signature: str | None = None
        self.show_diagnosis(None)

    def show_diagnosis(self, d: DiagnosisView | None) -> None:
        self.signature = None if d is None else d.signature
        if d is None:
            self.setHtml(_CSS + "<h3>Diagnosis</h3><p class='muted'>Open a torch.profiler trace (File ▸ Open, "
                         "drag and drop, or Help ▸ Demo traces). The diagnosis of its largest gap "
                         "appears here.</p>")
            return
        self.setHtml(_CSS + diagnosis_html(d))

    def show_pending(self) -> None:
        """The lanes are shown; the analysis of the trace is still running."""
        self.signature = None
        self.setHtml(_CSS + "<h3>Diagnosis</h3><p class='muted'>Analysing the trace… The lanes can be "
                     "explored meanwhile; the diagnosis, step figures and op table follow.</p>")


def diagnosis_html(d: DiagnosisView) -> str:
    parts = []
    if d.signature:
        _title, color = SIGNATURE_TEXT.get(d.signature, (d.signature, "#333"))
        # the headline names both causes of a close call; the confidence beside it, as everywhere
        title = verdict_words(d.signature, d.confidence, d.close_call or ())
        parts.append(f"<h2 style='color:{color}'>{_esc(title)}</h2>"
                     f"<div class='muted'>signature <code>{_esc(d.signature)}</code> · the % is the confidence</div>")
    else:
        parts.append("<h2>No diagnosis</h2>")
    if d.stragglers:
        late = ", ".join(f"rank {r}" + (f" (collectives {format_duration_us(d.collective_lag_us[r])} late)"
                                        if r in d.collective_lag_us else "") for r in d.stragglers)
        parts.append(f"<p style='background:#fde3d9; padding:3px'><b>Late: {_esc(late)}</b> — highlighted "
                     "in the timeline; the other ranks wait for it at each collective.</p>")
    if d.evidence:
        parts.append("<h3>Evidence</h3><ul style='margin-left:-20px'>" +
                     "".join(f"<li>{_esc(e)}</li>" for e in d.evidence) + "</ul>")
    if d.fix:
        parts.append(f"<h3>Try first</h3><p>{_esc(d.fix)}</p>")
        if d.projection:   # the what-if's bound for this fix, as `gpuperf diagnose` prints it
            parts.append(f"<p><b>{_esc(d.projection)}</b></p>")
    if d.secondary:
        parts.append("<h3>Also seen</h3><p>" + ", ".join(_esc(SIGNATURE_TEXT.get(s, (s, ""))[0]) for s in d.secondary)
                     + "</p>")
    for r in d.per_rank[:1] if len(d.per_rank) == 1 else []:
        parts.append(_rank_figures_html(r))
    if len(d.per_rank) > 1:
        parts.append(_ranks_table_html(d.per_rank, list(d.stragglers), d.collective_lag_us))
    if d.steps:
        rows = "".join(
            f"<tr><td>{n}{' <span class=muted>(warm-up)</span>' if w else ''}</td>"
            f"<td class=num>{format_duration_us(us)}</td><td class=num>{format_percent(b)}</td></tr>"
            for n, us, b, w in d.steps[:MAX_STEP_ROWS])
        more = (f"<p class='muted'>the first {MAX_STEP_ROWS} of {len(d.steps):,} steps; the Overview page "
                "charts every step</p>" if len(d.steps) > MAX_STEP_ROWS else "")
        parts.append("<h3>Steps</h3><table><tr><th>step</th><th>step time</th><th>GPU busy</th></tr>"
                     f"{rows}</table>{more}<p class='muted'>{STEP_TIME_NOTE}</p>")
    for note in d.notes or []:
        parts.append(f"<p class='muted'>{_esc(note)}</p>")
    return "".join(parts)


def _rank_figures_html(r: dict) -> str:
    idle = r.get("idle_breakdown") or {}
    rows = [
        ("GPU busy", format_percent(r.get("gpu_busy_fraction"))),
        ("compute busy", format_percent(r.get("compute_busy_fraction"))),
        ("communication", format_percent(r.get("comm_fraction"))),
        (COMM_WAIT.name, format_percent(_comm_wait(r))),
        (COMM_KERNELS_EXPOSED.name, format_percent(r.get("comm_exposed_fraction"))),
        ("host collectives, GPU idle", format_percent(r.get("cpu_collective_exposed_fraction"))),
        ("comm/compute overlap", format_percent(r.get("comm_overlap_fraction"))),
        ("step time (median)", format_duration_us(r["step_median_us"]) if r.get("step_median_us") else "–"),
    ]
    body = "".join(f"<tr><th>{_esc(k)}</th><td class=num>{_esc(v)}</td></tr>" for k, v in rows)
    idle_rows = "".join(
        f"<tr><th>{_esc(label)}</th><td class=num>{format_percent(idle.get(key))}</td></tr>"
        for key, label in (("host_wait", "host wait"), ("kernel_wait", "kernel wait (< 30 µs)"),
                           ("other", "other")))
    launch = r.get("launch") or {}
    launch_rows = ""
    if launch:
        launch_rows = (
            f"<tr><th>kernels · median</th><td class=num>{launch.get('kernels', 0):,} · "
            f"{format_duration_us(launch.get('median_kernel_us', float('nan')))}</td></tr>"
            f"<tr><th>{_esc(LAUNCH_RATE_LABEL)}</th><td class=num>{launch.get('launches_per_ms', 0):.3g}</td></tr>"
            + launch_rate_note(launch))
    return (f"<h3>Figures <span class='muted'>(steady-state window)</span></h3><table>{body}{launch_rows}"
            f"</table><h3>Idle time split <span class='muted'>(HTA's: share of the idle time)</span></h3>"
            f"<table>{idle_rows}</table>")


LAUNCH_RATE_LABEL = "launch calls per ms (host, in the window)"


def launch_rate_note(launch: dict) -> str:
    """A row saying why the rate is low when the window's kernels were launched before it (the host
    ran ahead of the GPU: a healthy queue), so 0 per ms does not read as "no launches"."""
    calls, kernels = int(launch.get("launches", 0)), int(launch.get("kernels", 0))
    if kernels == 0 or calls >= kernels / 2:
        return ""
    return (f"<tr><td colspan=2 class=muted>{calls:,} launch calls in the window for {kernels:,} kernels: "
            "the host queued them earlier (it runs ahead of the GPU)</td></tr>")


def _comm_wait(r: dict) -> float | None:
    """:data:`~gpuperf_gui.core.trace.vocabulary.glossary.COMM_WAIT` of a rank: the compute idle the diagnosis
    gives to communication, GPU collectives or host-side (gloo) ones, each µs once."""
    causes = r.get("idle_causes") or {}
    return causes.get("communication")


def _ranks_table_html(ranks: list[dict], late: list[int], lag_us: dict[int, float]) -> str:
    """Per-rank figures, the late ranks first and marked, with their collective lag."""
    head = ("<tr><th>rank</th><th>step time</th><th>GPU busy</th><th>comm wait</th>"
            "<th>host wait</th><th>coll. lag</th></tr>")
    order = sorted(ranks, key=lambda r: (late.index(r.get("rank")) if r.get("rank") in late else len(late),
                                         r.get("rank") or 0))
    rows = []
    for r in order:
        idle = r.get("idle_breakdown") or {}
        is_late = r.get("rank") in late
        mark = " <span class='warn'>late</span>" if is_late else ""
        lag = lag_us.get(r.get("rank"))
        style = " style='background:#fde3d9'" if is_late else ""
        rows.append(
            f"<tr{style}><td>{r.get('rank')}{mark}</td>"
            f"<td class=num>{format_duration_us(r['step_median_us']) if r.get('step_median_us') else '–'}</td>"
            f"<td class=num>{format_percent(r.get('gpu_busy_fraction'))}</td>"
            f"<td class=num>{format_percent(_comm_wait(r))}</td>"
            f"<td class=num>{format_percent(idle.get('host_wait'))}</td>"
            f"<td class=num>{format_duration_us(lag) if lag is not None else '–'}</td></tr>")
    return (f"<h3>Ranks</h3><table>{head}{''.join(rows)}</table>"
            "<p class='muted'>comm wait: compute idle waiting on communication, GPU collectives (NCCL) "
            "or host-side ones (gloo), share of the step (the diagnosis's figure) · host wait (HTA's "
            "split): share of the compute stream's idle time spent waiting for "
            "the CPU to launch · coll. lag: how much later than the median rank this rank's "
            "collectives start (median over collectives)</p>")


PANEL_CSS = _CSS


# -- selected range ------------------------------------------------------------------------------------
class SelectionSummaryPanel(QTextBrowser):
    """Perfetto's area selection: what a right-dragged range holds (core's SelectionSummary)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.summary = None
        self.show_summary(None)

    def show_summary(self, summary, offset_us: float = 0.0) -> None:  # noqa: ANN001 (SelectionSummary | None)
        self.summary = summary
        if summary is None:
            self.setHtml(_CSS + "<p class='muted'>Right-drag (or Shift-drag) across the lanes to select a "
                         "time range: its GPU busy time, time by kernel class and CPU category, and the top "
                         "kernels in it appear here.</p>")
            return
        head = (f"<h3 style='margin-top:0'>Range {format_duration_us(summary.t0_us - offset_us)} – "
                f"{format_duration_us(summary.t1_us - offset_us)} "
                f"<span class='muted'>({format_duration_us(summary.duration_us)}, {summary.n_ranks} "
                f"rank{'s' if summary.n_ranks != 1 else ''}, {summary.n_events:,} events)</span></h3>")
        busy = (f"<p>GPU busy <b>{format_percent(summary.gpu_busy_fraction)}</b> of the range "
                f"({format_duration_us(summary.gpu_busy_us)})</p>")

        def table(title: str, items: list[tuple[str, float]]) -> str:
            if not items:
                return ""
            rows = "".join(f"<tr><td>{_esc(k)}</td><td class=num>{format_duration_us(v)}</td></tr>" for k, v in items)
            return f"<td style='vertical-align:top; padding-right:24px'><b>{title}</b><table>{rows}</table></td>"

        classes = sorted(summary.kernel_class_us.items(), key=lambda kv: -kv[1])
        cats = list(summary.cpu_category_us.items())[:8]
        kernels = "".join(f"<tr><td>{_esc(display_kernel_name(n, 80))}</td><td class=num>{c:,}</td>"
                          f"<td class=num>{format_duration_us(us)}</td></tr>" for n, c, us in summary.top_kernels)
        top = (f"<td style='vertical-align:top'><b>Top kernels in the range</b><table><tr><th>kernel</th>"
               f"<th>events</th><th>time</th></tr>{kernels}</table></td>") if kernels else ""
        self.setHtml(_CSS + head + busy + "<table><tr>" + table("Device time by kernel class", classes)
                     + table("CPU time by category (outermost)", cats) + top + "</tr></table>")
