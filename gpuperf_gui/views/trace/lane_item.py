"""One graphics item per timeline lane (STYLE.md R12): folded rectangles, one drawRects per brush.

The item holds a lane's depth rows (:class:`~gpuperf_gui.core.trace.lod.LaneRows`), folds them for
the visible window when the timeline tells it the view changed (rate limited by the timeline), and
paints the result in device pixels: per brush one ``QPainter.drawRects`` call, folded blocks in their
own brush, names written into rectangles wide enough to hold them, idle gaps in red underneath (those after
a blocking sync in the host-sync colour),
search matches and the selection on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import numpy.ma  # noqa: F401 - np.unique (numpy 2.x) imports it on first use: at start-up, not in a paint
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen

from gpuperf_gui.core.trace.lod import MIN_BLOCK_PX, FoldedRow, LaneRows, RowIndex, block_kind, fold_row
from gpuperf_gui.core.units import format_duration_us
from gpuperf_gui.views.rich_text import plain_tooltip

ROW_HEIGHT_PX = 18.0
LABEL_MIN_PX = 46.0        # write an event's name into rectangles at least this wide
IDLE_COLOR = QColor(226, 60, 60, 150)
IDLE_STRIP_PX = 7.0        # compute lanes: a strip under the kernels, red where the stream idles
DENSITY_LEVELS = 5         # folded blocks are shaded by how busy they are (5 steps of opacity)


def density_levels(density: np.ndarray) -> np.ndarray:
    """Quantise busy fractions into DENSITY_LEVELS opacity steps."""
    return np.minimum((density * DENSITY_LEVELS).astype(np.int64), DENSITY_LEVELS - 1)


def _alpha_for_level(level: int, max_alpha: int = 245) -> int:
    return int(max_alpha * (0.16 + 0.84 * (level + 0.5) / DENSITY_LEVELS))
MATCH_COLOR = QColor(255, 214, 0)
SELECT_PEN_COLOR = QColor(20, 20, 20)


@dataclass(frozen=True)
class Palette:
    """Brushes indexed by an event's colour key.

    ``folded[k][level]`` is the brush of a folded block of key ``k`` whose busy fraction falls in
    opacity step ``level``: a darker shade of the category, as opaque as the block is busy.
    ``family[k]`` maps a key to the key whose folded brushes a block starting with it uses (shade
    variants of one category share them). ``idle[level]`` shades folded idle gaps the same way.
    """

    normal: tuple[QBrush, ...]
    folded: tuple[tuple[QBrush, ...], ...]
    text: tuple[QColor, ...]
    family: np.ndarray
    idle: tuple[QBrush, ...]
    idle_kinds: tuple[tuple[QBrush, ...], ...] = ()
    """``idle_kinds[kind - 1][level]``: the brushes of idle gaps of kind >= 1 (core's
    ``host_sync.GAP_KINDS``: idle after a blocking sync), shaded like ``idle``."""

    @classmethod
    def from_colors(cls, colors: Sequence[QColor], family: Sequence[int],
                    idle_kind_colors: Sequence[QColor] = ()) -> Palette:
        normal, folded, text = [], [], []
        for c in colors:
            normal.append(QBrush(c))
            levels = []
            for level in range(DENSITY_LEVELS):
                f = QColor(c).darker(135)
                f.setAlpha(_alpha_for_level(level))
                levels.append(QBrush(f))
            folded.append(tuple(levels))
            text.append(QColor(20, 20, 20) if c.lightnessF() > 0.6 else QColor(255, 255, 255))
        idle, kinds = _idle_brushes(IDLE_COLOR), tuple(_idle_brushes(c) for c in idle_kind_colors)
        return cls(tuple(normal), tuple(folded), tuple(text), np.asarray(family, dtype=np.int64), idle, kinds)


def _idle_brushes(color: QColor) -> tuple[QBrush, ...]:
    out = []
    for level in range(DENSITY_LEVELS):
        r = QColor(color)
        r.setAlpha(_alpha_for_level(level, IDLE_COLOR.alpha()))
        out.append(QBrush(r))
    return tuple(out)


def _rects(x0: np.ndarray, y0: np.ndarray, w: np.ndarray, h: float) -> list[QRectF]:
    return [QRectF(a, b, c, h) for a, b, c in zip(x0.tolist(), y0.tolist(), w.tolist())]


def sticky_label_span(x_px: float, width_px: float, left_px: float) -> tuple[float, float]:
    """The part of a slice a label may use: a slice that starts left of the view's edge keeps its
    name at the edge (Perfetto), over what is left of it on screen."""
    if x_px >= left_px:
        return x_px, width_px
    return left_px, max(0.0, x_px + width_px - left_px)


class TraceLaneItem(pg.GraphicsObject):
    """All rows of one lane (a CPU thread with its depth rows, a GPU stream...).

    Parameters
    ----------
    rows
        The lane's depth rows, indexed for folding.
    color_key
        Per lane event, an index into ``palette``.
    palette
        Brushes for events and folded blocks.
    name_of
        ``name_of(event_index) -> str``: the label written into wide rectangles.
    y0_px, row_height_px
        Where the lane starts on the timeline's y axis (pixel units) and each row's height.
    gaps
        Optional (start_us, end_us) idle gaps drawn in red under row 0, or their RowIndex.
    gap_kind
        Per gap, its kind (core's ``host_sync.GAP_KINDS``; default: ``gaps.kind`` when it has one,
        else all plain idle): gaps of kind k >= 1 are drawn with ``palette.idle_kinds[k - 1]``.
    """

    def __init__(self, rows: LaneRows, color_key: np.ndarray, palette: Palette,
                 name_of: Callable[[int], str], y0_px: float,
                 row_height_px: float = ROW_HEIGHT_PX,
                 gaps: tuple[np.ndarray, np.ndarray] | RowIndex | None = None,
                 gap_kind: np.ndarray | None = None) -> None:
        super().__init__()
        self._rows = rows
        self._color_key = np.asarray(color_key)   # any integer type (core's is int16): no copy
        self._palette = palette
        self._name_of = name_of
        self.y0_px = float(y0_px)
        self.row_height_px = float(row_height_px)
        self._gaps: RowIndex | None = None
        self._gap_kind: np.ndarray | None = None
        self._has_gap_strip = gaps is not None
        self._view: tuple[float, float, float] | None = None
        self.set_gaps(gaps, gap_kind)
        self._highlight: list[RowIndex | None] = [None] * rows.n_rows
        self._highlight_index: list[np.ndarray | None] = [None] * rows.n_rows
        self._selected: int | None = None
        self._folded: list[FoldedRow] = [FoldedRow.empty()] * rows.n_rows
        self._folded_gaps = FoldedRow.empty()
        self._folded_gap_kind = np.zeros(0, np.uint8)
        self._folded_highlight: list[FoldedRow] = [FoldedRow.empty()] * rows.n_rows
        starts = [r.starts[0] for r in rows.rows if len(r)]
        ends = [r.running_max_end[-1] for r in rows.rows if len(r)]
        self._x_range = (min(starts), max(ends)) if starts else (0.0, 1.0)
        self._font = QFont()
        self._font.setPointSizeF(8.0)
        self._font_metrics = QFontMetricsF(self._font)
        self.setAcceptHoverEvents(True)
        self.paint_count = 0

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return self._rows.n_rows

    @property
    def height_px(self) -> float:
        return self.n_rows * self.row_height_px + (IDLE_STRIP_PX if self._has_gap_strip else 0.0)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        x0, x1 = self._x_range
        return QRectF(x0, self.y0_px, max(x1 - x0, 1e-9), self.height_px)

    def row_of(self, y_px: float) -> int | None:
        row = int(np.floor((y_px - self.y0_px) / self.row_height_px))
        return row if 0 <= row < self.n_rows else None

    # -- state set by the timeline ----------------------------------------------------------------
    def set_gaps(self, gaps: tuple[np.ndarray, np.ndarray] | RowIndex | None,
                 gap_kind: np.ndarray | None = None) -> None:
        """Idle gaps as (start_us, end_us), or already indexed (built off the GUI thread), with
        their kinds (``gap_kind``, else ``gaps.kind``)."""
        kind = gap_kind if gap_kind is not None else getattr(gaps, "kind", None)
        self._gap_kind = kind if kind is not None and np.any(kind) else None
        if isinstance(gaps, RowIndex):
            self._gaps = gaps if len(gaps) else None
        else:
            self._gaps = RowIndex(gaps[0], gaps[1]) if gaps is not None and len(gaps[0]) else None
        self._folded_gaps = FoldedRow.empty()
        self._folded_gap_kind = np.zeros(0, np.uint8)
        self._refold()

    def set_highlight(self, mask: np.ndarray | None) -> None:
        """Highlight the lane events where ``mask`` is True (None clears)."""
        if mask is None and all(h is None for h in self._highlight):
            return   # nothing highlighted: no refold
        for r, idx in enumerate(self._rows.event_index):
            if mask is None:
                self._highlight[r] = self._highlight_index[r] = None
                continue
            sel = np.flatnonzero(mask[idx])
            if sel.size == 0:
                self._highlight[r] = self._highlight_index[r] = None
                continue
            row = self._rows.rows[r]
            self._highlight[r] = RowIndex(row.starts[sel], row.ends[sel])
            self._highlight_index[r] = idx[sel]
        self._refold()

    def set_selected(self, event_index: int | None) -> None:
        self._selected = event_index
        self.update()

    def set_view(self, view_start_us: float, view_end_us: float, width_px: float) -> None:
        """Fold for a new visible window (the timeline calls this, rate limited)."""
        view = (float(view_start_us), float(view_end_us), float(width_px))
        if view == self._view:
            return
        self._view = view
        self._refold()

    def _refold(self) -> None:
        if self._view is None:
            return
        vs, ve, w = self._view
        self._folded = [fold_row(r, None, vs, ve, w) for r in self._rows.rows]
        self._folded_gaps = fold_row(self._gaps, None, vs, ve, w) if self._gaps else FoldedRow.empty()
        self._folded_gap_kind = block_kind(self._gap_kind, self._gaps, self._folded_gaps) \
            if self._gap_kind is not None and self._gaps else np.zeros(len(self._folded_gaps), np.uint8)
        self._folded_highlight = [fold_row(h, None, vs, ve, w) if h is not None else FoldedRow.empty()
                                  for h in self._highlight]
        self.update()

    def rect_counts(self) -> list[int]:
        """Rectangles per row at the last fold (for tests and benchmarks)."""
        return [len(f) for f in self._folded]

    # -- queries ------------------------------------------------------------------------------------
    def event_at(self, x_us: float, y_px: float, tolerance_us: float) -> int | None:
        """Lane event index under (x, y), or the nearest within ``tolerance_us`` in that row."""
        row = self.row_of(y_px)
        if row is None:
            return None
        r = self._rows.rows[row]
        if len(r) == 0:
            return None
        i = int(np.searchsorted(r.starts, x_us, side="right")) - 1
        best, best_dist = None, tolerance_us
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(r):
                dist = max(r.starts[j] - x_us, x_us - r.ends[j], 0.0)
                if dist <= best_dist:
                    best, best_dist = j, dist
        return None if best is None else int(self._rows.event_index[row][best])

    def event_rect(self, event_index: int) -> QRectF | None:
        """Item-coordinate rectangle of a lane event (start, row, duration)."""
        for r, idx in enumerate(self._rows.event_index):
            pos = np.flatnonzero(idx == event_index)
            if pos.size:
                row = self._rows.rows[r]
                j = int(pos[0])
                return QRectF(row.starts[j], self.y0_px + r * self.row_height_px,
                              row.ends[j] - row.starts[j], self.row_height_px)
        return None

    def _describe_at(self, x_us: float, y_px: float) -> str:
        row = self.row_of(y_px)
        if row is None or self._view is None:
            return ""
        f = self._folded[row]
        k = int(np.searchsorted(f.start_us, x_us, side="right")) - 1
        if 0 <= k < len(f) and f.end_us[k] >= x_us:
            if f.count[k] > 1:
                r = self._rows.rows[row]
                a, n = int(f.first[k]), int(f.count[k])
                span = r.ends[a + n - 1] - r.starts[a]
                busy = float((r.ends[a:a + n] - r.starts[a:a + n]).sum())
                return (f"{n} events folded ({format_duration_us(span)} span, {format_duration_us(busy)} busy)\n"
                        "zoom in to see them")
            event = int(self._rows.event_index[row][f.first[k]])
            r = self._rows.rows[row]
            j = int(f.first[k])
            return f"{self._name_of(event)}\n{format_duration_us(r.ends[j] - r.starts[j])}"
        return ""

    def hoverMoveEvent(self, ev) -> None:  # noqa: N802 (Qt override)
        pos = ev.pos()
        self.setToolTip(plain_tooltip(self._describe_at(pos.x(), pos.y())))  # names from the trace

    # -- painting -------------------------------------------------------------------------------
    def _visible_left_px(self, sx: float, dx: float) -> float:
        """The view's left edge in device pixels (labels stick to it), 0 outside a view box."""
        view = self.getViewBox()
        if view is None:
            return 0.0
        (x0_us, _), _ = view.viewRange()
        return max(0.0, x0_us * sx + dx)

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        self.paint_count += 1
        t = painter.transform()
        sx, dx, sy, dy = t.m11(), t.dx(), t.m22(), t.dy()
        if sx == 0 or sy == 0:
            return
        device = painter.device()
        width_px = float(device.width()) if device is not None else 4000.0
        painter.save()
        painter.resetTransform()
        painter.setPen(Qt.PenStyle.NoPen)
        row_h = abs(self.row_height_px * sy)
        inner_h = max(row_h - 2.0, 1.0)

        def to_px(x0_us: np.ndarray, x1_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            a = np.clip(x0_us * sx + dx, -8.0, width_px + 8.0)
            b = np.clip(x1_us * sx + dx, -8.0, width_px + 8.0)
            return a, np.maximum(b - a, 1.0)

        def row_top(row: int) -> float:
            y_a = (self.y0_px + row * self.row_height_px) * sy + dy
            y_b = (self.y0_px + (row + 1) * self.row_height_px) * sy + dy
            return min(y_a, y_b) + 1.0

        # idle gaps, under row 0 and spanning the whole lane height
        # idle gaps: every gap (folded ones shaded by how idle they are) in the strip under the
        # kernels; gaps wide enough to be seen alone also fill the kernel rows, where nothing ran
        fg = self._folded_gaps
        if len(fg):
            a, w = to_px(fg.start_us, fg.end_us)
            rows_top = row_top(0) - 1.0
            strip_top = (self.y0_px + self.n_rows * self.row_height_px) * sy + dy
            strip_h = IDLE_STRIP_PX * abs(sy)
            if sy < 0:
                strip_top -= strip_h
            levels = density_levels(fg.density())
            single = fg.count == 1
            levels[single] = DENSITY_LEVELS - 1
            kinds = self._folded_gap_kind
            for kind in np.unique(kinds).tolist():   # plain idle, then each kind in its own brushes
                brushes = self._palette.idle if kind == 0 or kind > len(self._palette.idle_kinds) \
                    else self._palette.idle_kinds[kind - 1]
                of_kind = kinds == kind
                for level in np.unique(levels[of_kind]).tolist():
                    m = of_kind & (levels == level)
                    painter.setBrush(brushes[level])
                    painter.drawRects(_rects(a[m], np.full(int(m.sum()), strip_top), w[m], strip_h))
                alone = single & of_kind
                if alone.any():
                    painter.setBrush(brushes[0])
                    painter.drawRects(_rects(a[alone], np.full(int(alone.sum()), rows_top), w[alone],
                                             abs(self.n_rows * self.row_height_px * sy)))

        per_brush: dict[tuple[int, int], list[np.ndarray]] = {}
        labels: list[tuple[float, float, float, int, int]] = []
        for r, f in enumerate(self._folded):
            if not len(f):
                continue
            a, w = to_px(f.start_us, f.end_us)
            keys = self._color_key[self._rows.event_index[r][f.first]]
            folded = f.count > 1
            # a one-pixel seam between single events wide enough to spare it (folded blocks cut
            # by the grid stay seamless: together they read as a density strip)
            w = np.where(~folded & (w >= 4.0), w - 1.0, w)
            keys = np.where(folded, self._palette.family[keys], keys)
            # brush id: -1 for single events, else the folded block's opacity step
            level = np.where(folded, density_levels(f.density()), -1)
            y = row_top(r)
            combo = keys * (DENSITY_LEVELS + 1) + (level + 1)
            for c in np.unique(combo).tolist():
                m = combo == c
                per_brush.setdefault((c // (DENSITY_LEVELS + 1), c % (DENSITY_LEVELS + 1) - 1), []).append(
                    np.stack((a[m], np.full(int(m.sum()), y), w[m])))
            wide = np.flatnonzero(~folded & (w >= LABEL_MIN_PX))
            for k in wide.tolist():
                labels.append((float(a[k]), y, float(w[k]), int(f.first[k]), r))
        for (k, level), chunks in per_brush.items():
            arr = np.concatenate(chunks, axis=1)
            painter.setBrush(self._palette.normal[k] if level < 0 else self._palette.folded[k][level])
            painter.drawRects(_rects(arr[0], arr[1], arr[2], inner_h))

        if labels and inner_h >= 9.0:
            painter.setFont(self._font)
            left_px = self._visible_left_px(sx, dx)
            for x, y, w, j, r in labels:
                x, w = sticky_label_span(x, w, left_px)  # a slice begun off-screen: its name at the edge
                event = int(self._rows.event_index[r][j])
                text = self._font_metrics.elidedText(self._name_of(event), Qt.TextElideMode.ElideRight,
                                                     w - 6.0)
                if not text or text == "…":
                    continue
                painter.setPen(self._palette.text[int(self._color_key[event])])
                painter.drawText(QRectF(x + 3.0, y, w - 6.0, inner_h),
                                 Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
            painter.setPen(Qt.PenStyle.NoPen)

        # search / op-table matches on top
        match_pen = QPen(QColor(120, 90, 0))
        match_pen.setCosmetic(True)
        for r, f in enumerate(self._folded_highlight):
            if not len(f):
                continue
            a, w = to_px(f.start_us, f.end_us)
            w = np.maximum(w, MIN_BLOCK_PX)
            painter.setPen(match_pen)
            painter.setBrush(QBrush(MATCH_COLOR))
            painter.drawRects(_rects(a, np.full(a.size, row_top(r)), w, inner_h))
        if self._selected is not None:
            rect = self.event_rect(self._selected)
            if rect is not None:
                x0 = rect.left() * sx + dx
                x1 = rect.right() * sx + dx
                x0, x1 = max(min(x0, x1), -8.0), min(max(x0, x1), width_px + 8.0)
                y = (rect.top()) * sy + dy
                y2 = (rect.bottom()) * sy + dy
                pen = QPen(SELECT_PEN_COLOR, 2.0)
                painter.setPen(pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRect(QRectF(QPointF(x0 - 1.0, min(y, y2)),
                                        QPointF(max(x1, x0 + MIN_BLOCK_PX) + 1.0, max(y, y2))))
        painter.restore()
