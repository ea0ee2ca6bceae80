"""The rank × step heatmap at 256 ranks: the late rank's row is tall enough to see and click, row
labels never overlap, and an empty heatmap shows no placeholder axes (pytest-qt, offscreen)."""
from __future__ import annotations

import numpy as np
import pytest

from gpuperf_gui.views.trace.heatmap import LATE_ROW_MIN_PX, ROW_LABEL_PX, RankStepHeatmap

N_RANKS, LATE = 256, 173


class JobFigures:
    """The three things the heatmap reads of core's Overview, for a 256-rank job with one late rank."""

    def __init__(self) -> None:
        self.stragglers = [LATE]
        self.ranks = list(range(N_RANKS))

    def rank_step_matrix(self, metric: str):
        order = [LATE] + [r for r in range(N_RANKS) if r != LATE]   # late ranks first, as core orders
        values = np.full((N_RANKS, 3), 0.9)
        values[0] = 0.15
        return order, [3, 4, 5], values


@pytest.fixture
def heatmap(qtbot):
    widget = RankStepHeatmap()
    qtbot.addWidget(widget)
    widget.resize(900, 520)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _tick_ys_px(heatmap) -> list[float]:
    ticks = heatmap.plot.getAxis("left")._tickLevels[0]
    scale = heatmap.view_box.height() / len(heatmap.display_rows)
    return sorted(y * scale for y, _ in ticks)


def test_late_rank_row_is_tall_enough_and_clicks_open_it(heatmap, qtbot):
    heatmap.set_overview(JobFigures(), "straggler")
    qtbot.wait(10)
    rows_px = heatmap.view_box.height() / len(heatmap.display_rows)
    late_rows = int(np.sum(heatmap.display_rows == 0))
    assert N_RANKS * rows_px < N_RANKS * 3          # a plain row is a pixel or two here
    assert late_rows * rows_px >= LATE_ROW_MIN_PX
    with qtbot.waitSignal(heatmap.rank_opened) as opened:
        heatmap._on_row_clicked(late_rows - 1)      # the last image row of the late block
    assert opened.args == [LATE]
    with qtbot.waitSignal(heatmap.rank_opened) as opened:
        heatmap._on_row_clicked(late_rows)          # the first row after it: rank 0
    assert opened.args == [0]
    ys = _tick_ys_px(heatmap)
    assert min(np.diff(ys)) >= ROW_LABEL_PX - 1e-6  # labels do not overlap
    labels = [text for _, text in heatmap.plot.getAxis("left")._tickLevels[0]]
    assert f"{LATE} late" in labels


def test_empty_heatmap_shows_no_placeholder_axes(heatmap):
    heatmap.set_overview(None)
    assert heatmap.plot.getAxis("bottom").style["showValues"] is False
    assert heatmap.plot.getAxis("left").style["showValues"] is False
    heatmap.set_overview(JobFigures(), "straggler")
    assert heatmap.plot.getAxis("bottom").style["showValues"] is True
