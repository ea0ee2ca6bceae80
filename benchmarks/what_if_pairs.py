"""The what-if's projections against the measured speedups of the H200 before/after pairs.

Usage: python benchmarks/what_if_pairs.py [PAIRS_JSON]   (default tests/data/h200/pairs/pairs.json)

For each pair (``held_out`` ones marked): the unprofiled speedup after / before (the metas' medians
of 10 synced steps), the before-trace's projection for the cause that was removed
(``what_if.for_result``), their ratio, whether it is an upper bound, and the cause ranked first.
docs/what-if.md's table is this output.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuperf_gui.core.trace.session.trace import Trace  # noqa: E402
from gpuperf_gui.core.trace.analysis.what_if import for_result  # noqa: E402


def _trace(folder: Path, rel: str) -> Path:
    p = folder / rel
    return p if p.is_dir() else p.with_name(p.name + ".json.gz")


def _meta(p: Path) -> dict:
    return json.loads((p.parent / (p.name.removesuffix(".json.gz") + ".meta.json")).read_text())


def main() -> int:
    listing = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/data/h200/pairs/pairs.json"
    for pair in json.loads(listing.read_text())["pairs"]:
        before, after = _trace(listing.parent, pair["before"]), _trace(listing.parent, pair["after"])
        measured = _meta(before)["unprofiled_step_time_s"] / _meta(after)["unprofiled_step_time_s"]
        wi = for_result(Trace([before]).result())
        p = wi.for_cause(pair["cause"]) if wi else None
        projected = p.speedup_upper_bound if p else float("nan")
        first = wi.projections[0].cause if wi and wi.projections else "-"
        print(f"{'held out ' if pair.get('held_out') else ''}{pair['before']:36s} {pair['cause']:16s} "
              f"measured {measured:7.3f}x  projected {projected:7.3f}x  ratio {projected / measured:5.3f}  "
              f"{'bound' if projected >= measured else 'NOT A BOUND'}  first: {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
