"""What-if widgets: the projections per cause (Overview page) and the cause selector of the MFU
tab's gap bar. Thin: they draw :class:`~gpuperf_gui.core.trace.session.what_if_shown.WhatIfShown`, which
the loading worker made (the critical path's masks too: the Trace tab hands them to the timeline)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from gpuperf_gui.core.trace.session.what_if_shown import WhatIfRow, WhatIfShown

COLUMNS = ("cause", "fix", "speedup ≤", "step", "then dominant", "assumes")


class WhatIfTable(QWidget):
    """The causes by projected gain, for the Overview page."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table)
        self.show_what_if(None)

    def show_what_if(self, wi: WhatIfShown | None) -> None:
        rows = wi.rows if wi is not None else ()
        if wi is None:
            self.title.setText("<b>What if</b> <span style='color:#666'>no steps to walk</span>")
        else:
            path = ", ".join(f"{k} {100 * v:.0f} %" for k, v in wi.path_share[:4])
            self.title.setText(f"<b>What if</b> <span style='color:#666'>each cause removed on the step's "
                               f"dependency graph (upper bounds); critical path: {path}</span>")
        self.table.setRowCount(len(rows))
        for i, p in enumerate(rows):
            cells = (p.cause, p.fix, f"{p.speedup_upper_bound:.2f}x",
                     f"{p.step_time_s * 1e3:.3g} ms", p.new_dominant or "-", p.assumption)
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(p.assumption)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()


class WhatIfSelector(QWidget):
    """The MFU tab's "What if": remove one cause, read the MFU it would give and what dominates then."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setToolTip("Remove one cause (projected on the trace's dependency graph)")
        self.readout = QLabel()
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setWordWrap(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("What if:"))
        row.addWidget(self.combo)
        row.addWidget(self.readout, 1)
        self.projections: list[WhatIfRow] = []
        self.mfu: float | None = None
        self.combo.currentIndexChanged.connect(lambda _i: self._show())
        self.set_projections(())

    def set_projections(self, projections) -> None:  # noqa: ANN001 (a sequence of WhatIfRow)
        self.projections = list(projections)
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("as measured", None)
        for p in self.projections:
            self.combo.addItem(f"without {p.cause} (≤ {p.speedup_upper_bound:.2f}x)", p.cause)
        self.combo.blockSignals(False)
        self.setVisible(bool(self.projections))
        self._show()

    def set_mfu(self, mfu: float | None) -> None:
        self.mfu = mfu
        self._show()

    def selected(self) -> WhatIfRow | None:
        cause = self.combo.currentData()
        return next((p for p in self.projections if p.cause == cause), None)

    def _show(self) -> None:
        p = self.selected()
        if p is None:
            self.readout.setText("" if self.mfu is None else f"MFU {100 * self.mfu:.1f} %")
            return
        after = p.mfu_after(self.mfu)
        mfu = "" if after is None else f"MFU {100 * self.mfu:.1f} % → {100 * after:.1f} %; "
        self.readout.setText(f"{mfu}step ≤ {p.speedup_upper_bound:.2f}x faster; then dominant: "
                             f"{p.new_dominant or '-'} ({p.assumption})")
