"""core/trace/session/trace.Trace: one object per job, HTA-shaped (ranks, analysis, diagnosis, op table, find,
partners, JSON), each answer computed once on demand; the CLI prints what it answers."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.model.lanes import EventRef
from gpuperf_gui.core.trace.session.trace import Trace

DATA = Path(__file__).resolve().parents[1] / "data"


def test_op_table_has_torchs_kernel_rows(test_data: Path) -> None:
    """Every kernel row of torch's own ``key_averages()`` saved with the trace (calls, self device
    time within 1 %) is in the Trace's op table."""
    trace = Trace([test_data / "h200" / "attention.json.gz"])
    reference = json.loads((test_data / "h200" / "attention.key_averages.json").read_text())
    kernels = [r for r in reference if r["self_cpu_time_total_us"] == 0 and r["self_device_time_total_us"] > 0]
    assert kernels and trace.ranks == [0]
    rows = trace.op_table(0)
    for ref in kernels:
        assert any(r.name == ref["name"] and r.calls == ref["count"]
                   and r.self_device_s == pytest.approx(ref["self_device_time_total_us"] * 1e-6, rel=0.01)
                   for r in rows), ref["name"]


def test_one_file_loads_first_then_analyses_the_same_events(test_data: Path) -> None:
    trace = Trace([test_data / "h200" / "eager_tiny.json.gz"])
    model = trace.model()
    assert trace._result is None          # noqa: SLF001 - loaded, not analysed: the tab's lanes first
    result = trace.result()
    assert result.model is model and result.ranks[0].trace is model.ranks[0]
    assert trace.result() is result and trace.diagnosis() is result.diagnosis   # cached
    assert trace.analysis(0) is result.ranks[0].analysis
    with pytest.raises(KeyError):
        trace.analysis(7)


def test_find_and_partners_over_the_events(shared_traces: Path) -> None:
    """The file's ProfilerStep#2..5 annotations (SOURCES.md: four steps profiled) on the CPU, and a
    GPU kernel's partner through its correlation id: the runtime call that launched it."""
    trace = Trace([shared_traces / "h200" / "memory_bound_visible.json.gz"])
    steps = trace.find("ProfilerStep", "name")
    cpu = {int(ri) for ri in steps.rank_index}
    assert len(steps) in (4, 8) and cpu == {0}
    kernels = trace.find("elementwise", "class")
    launched = [kernels.ref(k) for k in range(len(kernels)) if trace.partners(kernels.ref(k))]
    assert len(launched) > len(kernels) / 2   # a few were launched before the profiled window
    launch = trace.partners(launched[0])
    rank = trace.model().ranks[0]
    name = rank.strings[int(rank.lanes[launch[0].lane_id].name_id[launch[0].index])]
    assert name.startswith(("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunch")), name
    assert launched[0] in trace.partners(launch[0])
    assert isinstance(launch[0], EventRef)


def test_the_cli_prints_the_trace_s_json(test_data: Path) -> None:
    from gpuperf_gui.cli import main

    path = test_data / "h200" / "nested_sum.json.gz"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["diagnose", "--json", "--top", "3", str(path)]) == 0
    assert json.loads(out.getvalue()) == json.loads(json.dumps(Trace([path], top=3).to_json()))


def test_a_compact_trace_keeps_no_events(test_data: Path) -> None:
    path = test_data / "h200" / "nested_sum.json.gz"
    compact = Trace([path], compact=True, workers=1)
    full = Trace([path]).to_json(top=5)
    full.pop("what_if"), full.pop("critical_path")   # the what-if walks the events: a compact run has none
    assert compact.to_json(top=5) == full              # the same figures as the full run
    assert compact.ranks == [0] and compact.roofline_points(0) == Trace([path]).roofline_points(0)
    with pytest.raises(ValueError, match="keeps no events"):
        compact.find("gemm")
