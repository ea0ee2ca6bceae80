"""The Compare page's wording and its headline = `gpuperf diff`'s (docs/conventions.md, `gpuperf diff`):
eager_small -> compiled_small of tests/data/h200 prints 0.960x profiled, 1.069x without the profiler."""
from __future__ import annotations

import html
import json
from pathlib import Path

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.session.diff import diff_paths

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
PAIR = [H200 / "eager_small.json.gz", H200 / "compiled_small.json.gz"]


def test_compare_page_words_and_headline(qtbot, capsys) -> None:
    from gpuperf_gui.views.trace.compare import OP_COLUMNS, TraceCompare

    d = diff_paths([PAIR[0]], [PAIR[1]])
    page = TraceCompare()
    qtbot.addWidget(page)
    page.show_diff(d)
    head = page.headline.text()
    assert html.escape(d.headline.text) in head and "not conclusive" in head
    assert main(["diff", "--json", *map(str, PAIR)]) == 0  # the same headline as the CLI's
    assert json.loads(capsys.readouterr().out)["headline"]["text"] == d.headline.text
    # HTA's call-count category is called by what it counts
    assert OP_COLUMNS[2] == "Calls"
    cells = {page.ops.item(r, 0).text(): page.ops.item(r, 2).text() for r in range(page.ops.rowCount())}
    assert "unchanged" not in cells.values() and "same calls" in cells.values()
    # the two ProfilerStep rows say which span they are
    steps = [name for name in cells if name.startswith("ProfilerStep*")]
    assert sorted(steps) == ["ProfilerStep* (CPU step span)", "ProfilerStep* (GPU step span)"]
    assert "ops_diff" not in page.changes.toPlainText()
