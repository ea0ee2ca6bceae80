"""One graphics item per timeline lane (STYLE.md R12): folded rectangles, one drawRects per brush.

The item holds a lane's depth rows (:class:`~gpuperf_gui.core.trace.model.lod.LaneRows`), folds them for
the visible window when the timeline tells it the view changed (rate limited by the timeline), and
paints the result in device pixels: per brush one ``QPainter.drawRects`` call over all its rows, folded
blocks in their own brush, names written into rectangles wide enough to hold them, idle gaps in red
underneath (those after a blocking sync in the host-sync colour), search matches and the selection on top.

A frame's cost is Python's, not the raster engine's (a few thousand rectangles fill in ~1 ms), so the
work per frame is a few numpy calls over the whole lane: a fold is sorted into brush groups once
(:class:`_Batch`), the rectangles go to Qt as one numpy array per brush (:func:`draw_rects`, no
``QRectF`` object per rectangle), the pixel geometry of one view is kept for the repaints that follow
it, a label's text width is measured once per name and an elided label made once per name and room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import numpy.ma  # noqa: F401 - np.unique (numpy 2.x) imports it on first use: at start-up, not in a paint
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen

from gpuperf_gui.core.trace.model.lod import MIN_BLOCK_PX, FoldedRow, LaneRows, RowIndex, BlockKinds, refold_row
from gpuperf_gui.core.units import format_duration_us
from gpuperf_gui.views.rich_text import plain_tooltip

ROW_HEIGHT_PX = 18.0
LABEL_MIN_PX = 46.0        # write an event's name into rectangles at least this wide
IDLE_COLOR = QColor(226, 60, 60, 150)
IDLE_STRIP_PX = 7.0        # compute lanes: a strip under the kernels, red where the stream idles
DENSITY_LEVELS = 5         # folded blocks are shaded by how busy they are (5 steps of opacity)
ELIDED_CACHE_SIZE = 4096   # elided labels kept per lane, by (name, room in px)


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


def _qt_reads_rect_arrays() -> bool:
    """Whether Qt reads a float64 (n, 4) array as its ``QRectF`` (and ``QLineF``) array: each is
    four qreals (x, y, width, height; x1, y1, x2, y2), double wherever PySide6 ships, and PySide6
    >= 6.4.3 (pyproject asks 6.6) takes ``drawRects(const QRectF *, int)``. Checked once on a known
    array, not assumed."""
    rects = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    lines = rects.copy()   # its own memory: shiboken hands back the wrapper it holds for an address
    try:
        r = _wrap(rects[1:], QRectF)
        line = _wrap(lines[1:], QLineF)
        return (r is not None and line is not None
                and (r.x(), r.y(), r.width(), r.height()) == (5.0, 6.0, 7.0, 8.0)
                and (line.x1(), line.y1(), line.x2(), line.y2()) == (5.0, 6.0, 7.0, 8.0))
    except (TypeError, ValueError, OverflowError, AttributeError):
        return False


def _wrap(array: np.ndarray, kind: type) -> object | None:
    """``array``'s first row as a ``kind`` (QRectF, QLineF) that lives in the array's memory;
    None if shiboken answers with a wrapper of another type that it still holds for the address."""
    # the address from the array interface: ``array.ctypes`` runs an import statement, which
    # PySide's import hook makes cost ~10 µs a call
    first = shiboken6.wrapInstance(array.__array_interface__["data"][0], kind)
    return first if type(first) is kind else None


_RECT_ARRAYS = _qt_reads_rect_arrays()


def draw_rects(painter: QPainter, xywh: np.ndarray) -> None:
    """Fill the rectangles of an (n, 4) array of x, y, width, height (device pixels) with the
    painter's brush and pen, in one ``QPainter.drawRects``. Qt reads the array's memory as its
    ``QRectF`` array: a list of QRectF cost ~0.6 µs of Python per rectangle, the fill itself less."""
    _draw_array(xywh, QRectF, painter.drawRects)


def draw_lines(painter: QPainter, lines: np.ndarray) -> None:
    """Draw an (n, 4) array of x1, y1, x2, y2 lines (device pixels) with the painter's pen in one
    ``QPainter.drawLines`` (a ``QLineF`` is four qreals too: see :func:`draw_rects`)."""
    _draw_array(lines, QLineF, painter.drawLines)


def _draw_array(rows: np.ndarray, item_type: type, draw: Callable) -> None:
    """``draw`` (drawRects or drawLines) over an (n, 4) array read in place as ``item_type``s,
    or over a list of them where the array cannot be wrapped."""
    n = int(rows.shape[0])
    if n == 0:
        return
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    first = _wrap(rows, item_type) if _RECT_ARRAYS else None
    if first is not None:
        draw(first, n)   # rows outlives the call
    else:
        draw([item_type(*r) for r in rows.tolist()])


def xywh_array(x: np.ndarray, y: np.ndarray | float, w: np.ndarray, h: np.ndarray | float) -> np.ndarray:
    """The (n, 4) rectangle array of :func:`draw_rects` from its columns (scalars broadcast)."""
    out = np.empty((x.size, 4), dtype=np.float64)
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = x, y, w, h
    return out


@dataclass(frozen=True)
class _Batch:
    """The rectangles of one fold of a lane's rows, sorted into brush groups in drawing order.

    Group ``g`` is ``[bounds[g], bounds[g + 1])`` of the arrays, drawn with ``brushes[g]``. The
    groups come in the order in which a row-by-row walk meets them (each row's brushes by colour
    key), and within a group rectangles keep their row and start order: the order in which one
    drawRects per brush per row would paint them, so overlaps (widened folded blocks) look the same.
    """

    start_us: np.ndarray
    end_us: np.ndarray
    row: np.ndarray          # depth row of each rectangle
    single: np.ndarray       # True for one event (not a folded block)
    event: np.ndarray        # the lane event of a single rectangle (its label, its text colour)
    bounds: tuple[int, ...]
    brushes: tuple[QBrush, ...]

    @classmethod
    def empty(cls) -> _Batch:
        e = np.empty(0)
        return cls(e, e, e.astype(np.int64), e.astype(bool), e.astype(np.int64), (0,), ())


@dataclass(frozen=True)
class _Frame:
    """What one view of the lane draws, in device pixels (kept while the view and fold stay)."""

    groups: tuple[tuple[QBrush, np.ndarray], ...]                   # (brush, xywh)
    labels: tuple[tuple[QRectF, str, QColor], ...]
    highlight: np.ndarray                                           # xywh


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
        self._gap_kinds: BlockKinds | None = None
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
        self._batch = _Batch.empty()
        self._frame: tuple[tuple[float, ...], _Frame] | None = None   # (transform key, what it draws)
        self._selected_rect: QRectF | None = None
        self._label_widths: dict[str, tuple[float, float]] = {}       # name: (its width, first char + "…")
        self._elided: dict[tuple[str, float], str] = {}                # (name, room): Qt's elided text
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
        if isinstance(gaps, RowIndex):
            self._gaps = gaps if len(gaps) else None
        else:
            self._gaps = RowIndex(gaps[0], gaps[1]) if gaps is not None and len(gaps[0]) else None
        marked = kind is not None and self._gaps is not None and bool(np.any(kind))
        self._gap_kinds = BlockKinds(np.asarray(kind), self._gaps) if marked else None
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
        self._folded_highlight = [FoldedRow.empty()] * self._rows.n_rows   # folds of the old matches
        self._refold()

    def set_selected(self, event_index: int | None) -> None:
        self._selected = event_index
        # found once here: event_rect searches every row's events
        self._selected_rect = None if event_index is None else self.event_rect(event_index)
        self.update()

    def set_view(self, view_start_us: float, view_end_us: float, width_px: float) -> None:
        """Fold for a new visible window (the timeline calls this, rate limited)."""
        view = (float(view_start_us), float(view_end_us), float(width_px))
        if view == self._view:
            return
        self._view = view
        self._refold()

    def _refold(self) -> None:
        """Fold every row for the view; a row whose fold cannot change keeps it (refold_row)."""
        if self._view is None:
            return
        vs, ve, w = self._view
        folded = [refold_row(r, f, vs, ve, w) for r, f in zip(self._rows.rows, self._folded)]
        gaps = self._gaps
        folded_gaps = refold_row(gaps, self._folded_gaps, vs, ve, w) if gaps else FoldedRow.empty()
        if folded_gaps is not self._folded_gaps:   # the gaps' kinds follow their fold
            self._folded_gaps = folded_gaps
            self._folded_gap_kind = self._gap_kinds.of(folded_gaps) if self._gap_kinds is not None \
                else np.zeros(len(folded_gaps), np.uint8)
        self._folded_highlight = [refold_row(h, f, vs, ve, w) if h is not None else FoldedRow.empty()
                                  for h, f in zip(self._highlight, self._folded_highlight)]
        if any(a is not b for a, b in zip(folded, self._folded)):
            self._folded = folded
            self._batch = self._make_batch()
        self._frame = None
        self.update()

    def _make_batch(self) -> _Batch:
        """Sort the fold's rectangles of every row into brush groups (:class:`_Batch`): the rows
        joined first, so that each step is one numpy call over the lane, not one per row."""
        rows = [(r, f) for r, f in enumerate(self._folded) if len(f)]
        if not rows:
            return _Batch.empty()
        start, end, count, busy, last_end = (np.concatenate([getattr(f, name) for _, f in rows]) for name in
                                             ("start_us", "end_us", "count", "busy_us", "last_end_us"))
        event = np.concatenate([self._rows.event_index[r][f.first] for r, f in rows]).astype(np.int64)
        row = np.repeat(np.array([r for r, _ in rows]), [len(f) for _, f in rows])
        folded = count > 1
        keys = self._color_key[event].astype(np.int64)
        keys = np.where(folded, self._palette.family[keys], keys)
        # brush id: -1 for single events, else the folded block's opacity step
        density = FoldedRow(start, end, count, event, busy, last_end).density()
        steps = DENSITY_LEVELS + 1
        combo = keys * steps + np.where(folded, density_levels(density) + 1, 0)
        # groups in the order a row-by-row walk meets them: by the first row holding one, then key
        n_combos = int(combo.max()) + 1
        first_at = np.full(n_combos, combo.size)
        # repeated indices keep the last value written: written backwards, each brush's first rect
        first_at[combo[::-1]] = np.arange(combo.size - 1, -1, -1)
        present = np.flatnonzero(first_at < combo.size)
        present = present[np.argsort(row[first_at[present]] * n_combos + present, kind="stable")]
        rank = np.empty(n_combos, dtype=np.int64)
        rank[present] = np.arange(present.size)
        group = rank[combo]
        order = np.argsort(group, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=present.size)))).tolist()
        brushes = []
        for c in present.tolist():
            k, level = c // steps, c % steps - 1
            brushes.append(self._palette.normal[k] if level < 0 else self._palette.folded[k][level])
        return _Batch(start[order], end[order], row[order], ~folded[order], event[order],
                      tuple(bounds), tuple(brushes))

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
        key = (sx, dx, sy, dy, width_px, self._visible_left_px(sx, dx))
        if self._frame is None or self._frame[0] != key:
            self._frame = (key, self._make_frame(*key))
        frame = self._frame[1]
        painter.save()
        painter.resetTransform()
        painter.setPen(Qt.PenStyle.NoPen)
        for brush, xywh in frame.groups:
            painter.setBrush(brush)
            draw_rects(painter, xywh)
        if frame.labels:
            painter.setFont(self._font)
            pen = None
            for rect, text, color in frame.labels:
                if color is not pen:
                    painter.setPen(color)
                    pen = color
                painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
            painter.setPen(Qt.PenStyle.NoPen)
        if frame.highlight.size:   # search / op-table matches on top
            match_pen = QPen(QColor(120, 90, 0))
            match_pen.setCosmetic(True)
            painter.setPen(match_pen)
            painter.setBrush(QBrush(MATCH_COLOR))
            draw_rects(painter, frame.highlight)
        rect = self._selected_rect if self._selected is not None else None
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

    def _make_frame(self, sx: float, dx: float, sy: float, dy: float, width_px: float,
                    left_px: float) -> _Frame:
        """The fold in device pixels for one view: brush groups, labels, matches."""
        row_h = abs(self.row_height_px * sy)
        inner_h = max(row_h - 2.0, 1.0)

        def to_px(x0_us: np.ndarray, x1_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            a = np.clip(x0_us * sx + dx, -8.0, width_px + 8.0)
            b = np.clip(x1_us * sx + dx, -8.0, width_px + 8.0)
            return a, np.maximum(b - a, 1.0)

        rows = np.arange(self.n_rows, dtype=np.float64)
        y_a = (self.y0_px + rows * self.row_height_px) * sy + dy
        y_b = (self.y0_px + (rows + 1) * self.row_height_px) * sy + dy
        row_top = np.minimum(y_a, y_b) + 1.0
        groups = self._gap_groups(to_px, float(row_top[0]) - 1.0 if rows.size else 0.0, sy, dy)

        b = self._batch
        a, w = to_px(b.start_us, b.end_us)
        # a one-pixel seam between single events wide enough to spare it (folded blocks cut
        # by the grid stay seamless: together they read as a density strip)
        w = np.where(b.single & (w >= 4.0), w - 1.0, w)
        y = row_top[b.row]
        xywh = xywh_array(a, y, w, inner_h)
        groups += [(brush, xywh[b0:b1]) for brush, b0, b1 in zip(b.brushes, b.bounds, b.bounds[1:])]

        labels = []
        wide = np.flatnonzero(b.single & (w >= LABEL_MIN_PX))
        if wide.size and inner_h >= 9.0:
            wide = wide[np.lexsort((a[wide], b.row[wide]))]   # row by row, left to right
            for k, x, width, top in zip(wide.tolist(), a[wide].tolist(), w[wide].tolist(), y[wide].tolist()):
                x, width = sticky_label_span(x, width, left_px)  # a slice begun off-screen: its name at the edge
                event = int(b.event[k])
                text = self._label_text(self._name_of(event), width - 6.0)
                if not text or text == "…":
                    continue
                labels.append((QRectF(x + 3.0, top, width - 6.0, inner_h), text,
                               self._palette.text[int(self._color_key[event])]))

        matches = []
        for r, f in enumerate(self._folded_highlight):
            if len(f):
                a, w = to_px(f.start_us, f.end_us)
                matches.append(xywh_array(a, row_top[r], np.maximum(w, MIN_BLOCK_PX), inner_h))
        highlight = np.concatenate(matches) if matches else np.empty((0, 4))
        return _Frame(tuple(groups), tuple(labels), highlight)

    def _gap_groups(self, to_px: Callable, rows_top: float, sy: float,
                    dy: float) -> list[tuple[QBrush, np.ndarray]]:
        """Idle gaps: every gap (folded ones shaded by how idle they are) in the strip under the
        kernels; gaps wide enough to be seen alone also fill the kernel rows, where nothing ran."""
        fg = self._folded_gaps
        if not len(fg):
            return []
        a, w = to_px(fg.start_us, fg.end_us)
        strip_top = (self.y0_px + self.n_rows * self.row_height_px) * sy + dy
        strip_h = IDLE_STRIP_PX * abs(sy)
        if sy < 0:
            strip_top -= strip_h
        levels = density_levels(fg.density())
        single = fg.count == 1
        levels[single] = DENSITY_LEVELS - 1
        kinds = self._folded_gap_kind   # folded with the gaps (_refold)
        full_h = abs(self.n_rows * self.row_height_px * sy)
        groups = []
        for kind in np.flatnonzero(np.bincount(kinds, minlength=1)).tolist():   # plain idle, then each kind
            brushes = self._palette.idle if kind == 0 or kind > len(self._palette.idle_kinds) \
                else self._palette.idle_kinds[kind - 1]
            of_kind = kinds == kind
            for level in np.flatnonzero(np.bincount(levels[of_kind], minlength=DENSITY_LEVELS)).tolist():
                m = of_kind & (levels == level)
                groups.append((brushes[level], xywh_array(a[m], strip_top, w[m], strip_h)))
            alone = single & of_kind
            if alone.any():
                groups.append((brushes[0], xywh_array(a[alone], rows_top, w[alone], full_h)))
        return groups

    def _label_text(self, name: str, room_px: float) -> str:
        """``name`` as it fits ``room_px``: whole, elided, or "" when not even its first letter and
        "…" would. The widths are measured once per name: most labels fit or are far too narrow,
        and only the ones between go through Qt's elision (whose rounding decides there)."""
        widths = self._label_widths.get(name)
        if widths is None:
            widths = (self._font_metrics.horizontalAdvance(name),
                      self._font_metrics.horizontalAdvance(name[:1] + "…"))
            self._label_widths[name] = widths
        if len(name) > 1:   # Qt never elides a single character
            if widths[0] <= room_px:
                return name
            if room_px < widths[1] - 0.5:
                return ""
        text = self._elided.get((name, room_px))   # a pan keeps a label's room: ~30 µs an elision
        if text is None:
            if len(self._elided) >= ELIDED_CACHE_SIZE:
                self._elided.clear()
            text = self._elided[(name, room_px)] = self._font_metrics.elidedText(
                name, Qt.TextElideMode.ElideRight, room_px)
        return text
