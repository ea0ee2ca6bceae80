"""How a lane reaches Qt: rectangles as numpy arrays, one drawRects per brush per lane, labels
elided as Qt elides them. Each is held to what Qt's own list API or elision draws (offscreen)."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from gpuperf_gui.core.trace.model.lod import LaneRows
from gpuperf_gui.views.trace import lane_item as trace_lane_item
from gpuperf_gui.views.trace.lane_item import (
    DENSITY_LEVELS,
    TraceLaneItem,
    density_levels,
    draw_lines,
    draw_rects,
    xywh_array,
)
from gpuperf_gui.views.trace.style import make_palette

W, H = 640, 160


def _image() -> QImage:
    image = QImage(W, H, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor(255, 255, 255))
    return image


def _bytes(image: QImage) -> bytes:
    return bytes(image.constBits())


def _random_rects(seed: int, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)   # sub-pixel widths, overlaps, some off the image
    return xywh_array(rng.uniform(-20, W + 20, n), rng.uniform(-5, H, n), rng.exponential(4.0, n),
                      rng.uniform(0.5, 20, n))


@pytest.mark.parametrize("arrays", [True, False])
def test_rect_arrays_fill_what_a_list_of_qrectf_fills(qapp, monkeypatch, arrays):
    monkeypatch.setattr(trace_lane_item, "_RECT_ARRAYS", arrays)   # Qt reading the array; the fallback
    xywh = _random_rects(3)
    ours, theirs = _image(), _image()
    for image, draw in ((ours, lambda p: draw_rects(p, xywh)),
                        (theirs, lambda p: p.drawRects([QRectF(*r) for r in xywh.tolist()]))):
        painter = QPainter(image)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(40, 120, 200, 150))   # translucent: overlaps show the order too
        draw(painter)
        painter.end()
    assert _bytes(ours) == _bytes(theirs)
    assert _bytes(ours) != _bytes(_image())          # it drew something


def test_line_arrays_draw_what_a_list_of_qlinef_draws(qapp):
    rng = np.random.default_rng(5)
    lines = np.column_stack([rng.uniform(0, W, 200), rng.uniform(0, H, 200), rng.uniform(0, W, 200),
                             rng.uniform(0, H, 200)])
    ours, theirs = _image(), _image()
    for image, draw in ((ours, lambda p: draw_lines(p, lines)),
                        (theirs, lambda p: p.drawLines([QLineF(*line) for line in lines.tolist()]))):
        painter = QPainter(image)
        painter.setPen(QColor(90, 110, 150))
        draw(painter)
        painter.end()
    assert _bytes(ours) == _bytes(theirs)


def _lane(names: list[str], start_us: np.ndarray, duration_us: np.ndarray, depth: np.ndarray) -> TraceLaneItem:
    rows = LaneRows.build(start_us, duration_us, depth)
    color_key = (np.arange(start_us.size) * 7 % 30).astype(np.int16)
    return TraceLaneItem(rows, color_key, make_palette(), lambda i: names[i % len(names)], 0.0)


def _reference_paint(item: TraceLaneItem, painter: QPainter, sx: float, dx: float, sy: float, dy: float) -> None:
    """The lane's rectangles as one drawRects per brush per row, in the order a row-by-row walk
    meets the brushes (each row's by colour key): the drawing the lane's batches must repeat."""
    palette, steps = item._palette, DENSITY_LEVELS + 1
    per_brush: dict[int, list[QRectF]] = {}
    for r, f in enumerate(item._folded):
        if not len(f):
            continue
        a = np.clip(f.start_us * sx + dx, -8.0, W + 8.0)
        w = np.maximum(np.clip(f.end_us * sx + dx, -8.0, W + 8.0) - a, 1.0)
        folded = f.count > 1
        w = np.where(~folded & (w >= 4.0), w - 1.0, w)
        keys = item._color_key[item._rows.event_index[r][f.first]].astype(np.int64)
        keys = np.where(folded, palette.family[keys], keys)
        combo = keys * steps + np.where(folded, density_levels(f.density()) + 1, 0)
        top = min((r * item.row_height_px) * sy + dy, ((r + 1) * item.row_height_px) * sy + dy) + 1.0
        h = max(abs(item.row_height_px * sy) - 2.0, 1.0)
        for c in np.unique(combo).tolist():
            m = combo == c
            per_brush.setdefault(c, []).extend(QRectF(x, top, ww, h) for x, ww in zip(a[m].tolist(), w[m].tolist()))
    painter.setPen(Qt.PenStyle.NoPen)
    for c, rects in per_brush.items():
        k, level = c // steps, c % steps - 1
        painter.setBrush(palette.normal[k] if level < 0 else palette.folded[k][level])
        painter.drawRects(rects)


def test_a_lane_paints_its_brushes_in_the_order_of_one_drawrects_per_row(qapp):
    rng = np.random.default_rng(11)   # three rows of tiny and wide events: folded blocks overlap singles
    n = 3000
    start = np.sort(rng.uniform(0, 1e4, n))
    duration = np.where(rng.random(n) < 0.1, rng.uniform(40, 300, n), rng.uniform(0.1, 3, n))
    depth = rng.integers(0, 3, n)
    item = _lane(["x"], start, duration, depth)
    sx, dx, sy = W / 1e4, 0.0, 1.0
    item.set_view(0.0, 1e4, W)
    ours, theirs = _image(), _image()
    painter = QPainter(ours)
    painter.setTransform(QTransform(sx, 0, 0, sy, dx, 0.0))
    item.paint(painter, None)
    painter.end()
    painter = QPainter(theirs)
    _reference_paint(item, painter, sx, dx, sy, 0.0)
    painter.end()
    assert sum(item.rect_counts()) > 100 and len(item._batch.brushes) > 3 and not item._batch.single.all()
    assert _bytes(ours) == _bytes(theirs)


NAMES = ["aten::addmm", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
         "ProfilerStep#12", "iii", "ab", "W", "ŵx", "€uro", "a\u0301bc", "日本語テキスト", "x y"]


def test_labels_are_what_qt_elision_writes(qapp):
    item = _lane(NAMES, np.array([0.0]), np.array([1.0]), None)
    metrics = item._font_metrics
    for name in NAMES:
        for room in np.arange(-3.0, metrics.horizontalAdvance(name) + 4.0, 0.05).tolist():
            qt = metrics.elidedText(name, Qt.TextElideMode.ElideRight, room)
            ours = item._label_text(name, room)
            if qt in ("", "…"):      # nothing worth writing: the lane skips it either way
                assert ours in ("", "…"), (name, room, ours)
            else:
                assert ours == qt, (name, room, ours, qt)
