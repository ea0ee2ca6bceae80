"""Helpers shared by the trace tests: cached loading and the reference figures of SOURCES.md."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from gpuperf_gui.core.trace.analysis.rank_analysis import RankAnalysis, analyse_rank
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.model.trace_model import RankTrace


@lru_cache(maxsize=64)
def loaded(path: Path) -> tuple[RankTrace, RankAnalysis]:
    rt = load_rank(path)
    return rt, analyse_rank(rt)


def sources_table(shared: Path) -> dict[str, dict]:
    """Rows of the shared traces' SOURCES.md file table (tests/data/shared_traces): events, rank and HTA 0.5.0 figures."""
    rows = {}
    for line in (shared / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 10 or not cells[0].endswith((".json", ".gz")):
            continue
        hta = re.match(r"idle ([\d.]+)%, overlap ([\d.]+|nan)%", cells[9])
        rank = cells[4].split("/")[0].strip()
        rows[cells[0]] = {
            "events": int(cells[3]),
            "rank": None if rank == "-" else int(rank),
            "hta_idle": float(hta.group(1)) / 100 if hta else None,
            "hta_overlap": (None if not hta or hta.group(2) == "nan" else float(hta.group(2)) / 100),
        }
    return rows


def merged_intervals(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of ``(start, end)`` intervals, sorted: a plain-Python oracle for the raw-JSON counts
    (independent of core/trace/analysis/intervals.py, which it checks)."""
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]
