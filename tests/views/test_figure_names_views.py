"""The Trace tab's screens name and show the two communication figures as core does (docs/conventions.md, Two communication figures):
hta/df_index_resolver, communication wait 35.8 %, exposed comm kernels 21.4 %."""
from __future__ import annotations

from pathlib import Path

from gpuperf_gui.core.trace.vocabulary import glossary
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.analysis.overview import build_overview


def test_overview_cards_and_figures_table(qtbot, shared_traces: Path) -> None:
    from gpuperf_gui.views.trace.overview import TraceOverview
    from gpuperf_gui.views.trace.panels import _rank_figures_html

    result = Trace([shared_traces / "hta/df_index_resolver/df_index_resolver.json.gz"]).result()
    a = result.ranks[0].analysis
    wait, kernels = (glossary.format_fraction(x) for x in (a.idle_causes.communication, a.comm_exposed_fraction))
    assert (wait, kernels) == ("35.8 %", "21.4 %")
    page = TraceOverview()
    qtbot.addWidget(page)
    cards = page._cards_html(build_overview(result).ranks[0])  # noqa: SLF001
    assert "Communication wait" in cards and wait in cards and kernels not in cards
    assert glossary.COMM_WAIT.definition in page.cards.toolTip()
    figures = _rank_figures_html({**a.to_json(), "step_median_us": 1.0})
    assert f"<th>{glossary.COMM_WAIT.name}</th><td class=num>{wait}</td>" in figures
    assert f"<th>{glossary.COMM_KERNELS_EXPOSED.name}</th><td class=num>{kernels}</td>" in figures
    assert "Idle time split <span class='muted'>(HTA's" in figures
