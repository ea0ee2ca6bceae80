"""The demo traces of Help ▸ Demo traces (no Qt): the synthetic scenarios and the real traces shipped.

A synthetic trace is written when it is first opened, to a folder the caller owns (the Trace tab's
is removed at its shutdown) or, by default, to one removed when the process exits.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from functools import cache, partial
from pathlib import Path
from typing import Callable

SHIPPED_DEMOS = (
    ("Real: GPT on H200, healthy (h200)", "healthy_gpt_small.json.gz"),
    ("Real: LayerNorm/GELU stack, memory-bound (h200)", "memory_bound_visible.json.gz"),
    ("Real: small BERT inference, launch-bound (H100, TraceLens)", "bert_small_h100.json.gz"),
    ("Real: two ranks of a sampled production job (HTA)", "two_ranks"),
)
"""(menu text, file or folder under the package's ``resources/demo``)."""


@cache
def _session_demo_dir() -> tempfile.TemporaryDirectory:
    """The synthetic demos' default folder (its TemporaryDirectory's finalizer removes it at exit)."""
    return tempfile.TemporaryDirectory(prefix="gpuperf-demo-")


def _synthetic(scenario: str, folder: Callable[[], Path]) -> list[Path]:
    from ..synthetic import synth

    # a multi-rank scenario (straggler) is written as a folder of ranks: open what was written
    return [synth.write_synth_trace(scenario, folder() / f"{scenario}.json.gz")]


def demo_title(scenario: str) -> str:
    """The menu text of a synthetic scenario."""
    from ..synthetic import synth

    title = f"Synthetic: {scenario.replace('_', ' ')}"
    if scenario == "inconclusive":
        return title + " (a CPU-only profile)"
    ranks = synth.MULTI_RANK_SCENARIOS.get(scenario)
    return title + f" ({ranks} ranks)" if ranks else title


def demo_entries(folder: Callable[[], Path] = lambda: Path(_session_demo_dir().name)
                 ) -> list[tuple[str, Callable[[], list[Path]]]]:
    """(menu text, function returning the paths to open) of each demo; synthetic traces are written
    to ``folder()`` (made on first use)."""
    from ..synthetic import synth

    entries: list[tuple[str, Callable[[], list[Path]]]] = [
        (demo_title(scenario), partial(_synthetic, scenario, folder=folder)) for scenario in synth.SCENARIOS]
    root = importlib.resources.files("gpuperf_gui.resources") / "demo"
    for title, name in SHIPPED_DEMOS:
        if (root / name).is_file() or (root / name).is_dir():
            entries.append((title, lambda path=root / name: [Path(str(path))]))
    return entries
