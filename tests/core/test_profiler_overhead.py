"""The profiler's overhead with its spread (docs/conventions.md, Profiler overhead): hand-made step sets, then the H200 traces
of tests/data/h200/unprofiled (gpuperf profile: steps timed with the profiler idle and recording)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.analysis.profiler_overhead import ProfilerOverhead, from_key

UNPROF = Path(__file__).resolve().parents[1] / "data" / "h200" / "unprofiled"


def test_measurable_overhead_has_its_spread() -> None:
    # idle 10, 11, 12 ms; recorded 14, 15, 16 ms: median 15/11 - 1 = +36 %, spread 14/12 - 1 .. 16/10 - 1
    o = ProfilerOverhead((0.010, 0.011, 0.012), (0.014, 0.015, 0.016))
    assert o.measurable and o.fraction == pytest.approx(15 / 11 - 1)
    assert (o.low, o.high) == (pytest.approx(14 / 12 - 1), pytest.approx(16 / 10 - 1))
    assert o.describe().startswith("profiler overhead +36 % (spread +17 % to +60 %")


def test_within_the_noise_is_not_measurable_and_never_negative() -> None:
    # recorded median 10.5 ms inside the idle steps' 9-12 ms: the -4.5 % of the medians is noise
    o = ProfilerOverhead((0.009, 0.011, 0.012), (0.010, 0.0105, 0.013))
    assert o.ratio < 1 and not o.measurable and o.fraction is None and o.low >= 0
    assert "not measurable: within the noise" in o.describe() and "-" not in o.describe().split("(")[0]
    shorter = ProfilerOverhead((0.010, 0.011), (0.005, 0.006))  # recorded below every idle step
    assert shorter.fraction is None and "shorter" in shorter.describe()


def _key(name: str) -> dict:
    return json.loads(gzip.decompress((UNPROF / name).read_bytes()))["gpuperf_unprofiled"]


@pytest.mark.parametrize("name, expected", [
    # hand-read from each trace's gpuperf_unprofiled lists (tests/data/h200/SOURCES.md: the unprofiled H200 runs)
    ("eager_tiny.r0.json.gz", "+77 %"),      # 11.88 / 6.71 ms
    ("loader_fed.r0.json.gz", "+10 %"),      # 50.49 / 45.76 ms, above every idle step (max 46.47)
    ("loader0.r2.json.gz", "not measurable"),  # 92.6 ms recorded within the idle steps' 75.7-104 ms
])
def test_h200_traces(name: str, expected: str) -> None:
    o = from_key(_key(name))
    assert o is not None and expected in o.describe()


def test_diagnose_reports_it_when_the_trace_has_unprofiled_timings(capsys) -> None:
    path = UNPROF / "eager_tiny.r0.json.gz"
    assert main(["diagnose", "--top", "0", str(path)]) == 0
    assert "profiler overhead +77 % (spread +40 % to +149 %" in capsys.readouterr().out
    assert main(["diagnose", "--json", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)["ranks"][0]["profiler_overhead"]
    key = _key("eager_tiny.r0.json.gz")
    assert got["unprofiled_steps"] == len(key["step_times_s"]) and got["measurable"] is True
    assert got["high"] == pytest.approx(max(key["profiled_step_times_s"]) / min(key["step_times_s"]) - 1)
    no_key = Path(__file__).resolve().parents[1] / "data" / "h200" / "profile_launch.json.gz"
    assert main(["diagnose", "--json", str(no_key)]) == 0
    assert "profiler_overhead" not in json.loads(capsys.readouterr().out)["ranks"][0]


def test_mfu_never_reports_a_negative_overhead(capsys) -> None:
    """A typed unprofiled step longer than the trace's profiled one (the GUI showed -57 %) is two
    runs under different conditions: the MFU says so and reports no overhead."""
    trace = UNPROF.parent / "profile_launch.json.gz"
    argv = ["mfu", "--from-trace", str(trace), "--params", "1e6", "--tokens-per-step", "8", "--json"]
    assert main([*argv, "--step-time", "1.0"]) == 0  # far longer than the traced step
    out = json.loads(capsys.readouterr().out)
    assert out["profiler_overhead"] is None
    assert any("not measurable" in w for w in out["warnings"])
