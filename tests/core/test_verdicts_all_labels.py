"""benchmarks/verdicts_all.py reads the recorders' labels, never gpuperf's: a SOURCES.md row names a
signature in its own words, not as a counterpart or a guess; every meta with an expected signature is run."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("verdicts_all", ROOT / "benchmarks" / "verdicts_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_row_labels_its_trace_only_in_its_own_words() -> None:
    v = _script()
    assert v.label_of_text("DataLoader num_workers=0: DATA-STARVED case (TB plugin recommends num_workers)") \
        == "data_starved"
    assert v.label_of_text("`ncclDevKernel_AllReduce_*` kernels ... idle above them: communication-bound") == "comm_bound"
    assert v.label_of_text("Same model with num_workers=4: the \"fixed\" counterpart of the data-starved case") is None
    assert v.label_of_text("H100 inference of a 0.5B LLM: many tiny kernels (likely launch-bound case)") is None
    assert v.label_of_text("skinny GEMV kernels, launch gaps; GPU busy about 12 %") is None


def test_every_meta_with_an_expected_signature_is_a_job() -> None:
    v = _script()
    jobs = {name: expected for name, _, expected in v.meta_jobs()}
    metas = sorted((ROOT / "tests" / "data" / "h200").rglob("*.meta.json"))
    labelled = [m for m in metas if json.loads(m.read_text()).get("expected_signature")]
    for meta in labelled:
        name = str(meta.relative_to(ROOT / "tests" / "data")).removesuffix(".meta.json")
        assert any(n == name or n.startswith(name + ".r") for n in jobs), name
    assert jobs["h200/item_per_microbatch"] == "host_sync_bound" and jobs["h200/pairs/item_none"] is None
