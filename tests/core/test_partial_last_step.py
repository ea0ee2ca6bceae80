"""A trace `gpuperf profile` stopped mid-step ends in a step cut short: the trace says so
(``gpuperf_unprofiled.last_step_partial``) and that step stays out of the median step time.

The trace is tests/data/h200/profile_launch.json.gz (a real H200 run, 5 ProfilerSteps); the key is
written by hand, as the profiler child writes it. Expected: the median of the other steady steps,
taken from the same file analysed without the key (the only difference is the key)."""
from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from gpuperf_gui.core.trace.session.trace import Trace

BASE = Path(__file__).resolve().parents[1] / "data" / "h200" / "profile_launch.json.gz"


def _with_key(tmp_path: Path, key: dict) -> Path:
    data = json.loads(gzip.decompress(BASE.read_bytes()))
    data["gpuperf_unprofiled"] = key
    out = tmp_path / "stopped.json.gz"
    out.write_bytes(gzip.compress(json.dumps(data).encode()))
    return out


def test_the_step_cut_short_is_not_in_the_median(tmp_path):
    whole = Trace([BASE]).result().ranks[0].analysis
    cut = Trace([_with_key(tmp_path, {"step_times_s": [], "last_step_partial": True})]).result().ranks[0].analysis
    assert len(cut.steps) == len(whole.steps) >= 3
    assert cut.steps[-1].partial and not any(s.partial for s in cut.steps[:-1] + whole.steps)
    steady = [s.duration_s for s in whole.steps if not s.warmup]
    assert whole.step_time_median_s == statistics.median(steady)
    assert cut.step_time_median_s == statistics.median(steady[:-1])
    assert cut.to_json()["steps"][-1]["partial"] is True


def test_a_complete_recording_keeps_every_step(tmp_path):
    whole = Trace([BASE]).result().ranks[0].analysis
    kept = Trace([_with_key(tmp_path, {"step_times_s": [], "last_step_partial": False})]).result().ranks[0].analysis
    assert kept.step_time_median_s == whole.step_time_median_s
