"""`gpuperf diff` and core/trace/session/diff.py on real traces, against the raw events and HTA's TraceDiff."""
from __future__ import annotations

import gzip
import json
import os
import statistics
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.session.diff import CHANGE_CATEGORIES, diff_paths, diff_results

DATA = Path(__file__).resolve().parents[1] / "data"
_DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}


def _resnet(shared: Path, workers: int) -> Path:
    return shared / f"kineto/samples/resnet50_num_workers_{workers}"


def _events(folder: Path) -> list[dict]:
    (path,) = folder.glob("*.json.gz")
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


@pytest.fixture(scope="module")
def resnet_diff():  # noqa: ANN201
    # the shared_traces fixture's folder (tests/conftest.py), read here for a module-scoped fixture
    shared = Path(os.environ.get("GPUPERF_SHARED_TRACES", DATA / "shared_traces"))
    return diff_paths([_resnet(shared, 0)], [_resnet(shared, 4)])


def test_resnet_workers_speedup_is_the_ratio_of_median_profiler_steps(shared_traces: Path, resnet_diff) -> None:
    """DataLoader num_workers 0 -> 4 (kineto tb_plugin samples, V100). From the raw events: the
    ProfilerStep durations, first (warm-up) step left out, median 176.468 ms -> 126.272 ms. Our step
    is the longer of the CPU and device spans, so it may exceed the CPU span by a little."""
    medians = []
    for workers in (0, 4):
        steps = sorted((e for e in _events(_resnet(shared_traces, workers)) if e.get("name", "").startswith("ProfilerStep#")),
                       key=lambda e: e["ts"])
        medians.append(statistics.median(e["dur"] for e in steps[1:]) / 1e6)
    assert medians == [pytest.approx(0.176468), pytest.approx(0.126272)]
    d = resnet_diff
    assert d.before.step_time_s == pytest.approx(medians[0], rel=0.01)
    assert d.after.step_time_s == pytest.approx(medians[1], rel=0.02)
    assert d.speedup == pytest.approx(medians[0] / medians[1], rel=0.02)
    assert d.speedup == d.before.step_time_s / d.after.step_time_s > 1.3


def _raw_kernel_seconds_per_step(events: list[dict]) -> tuple[float, int]:
    """HTA's attribution from the raw JSON: device work whose launch call (same ``correlation``)
    starts inside a steady ProfilerStep (all but the first by time); over the number of steps."""
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")
                    and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["ts"])[1:]
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("ph") == "X" and e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver")
                 and "correlation" in e.get("args", {})}
    total_us = 0.0
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in _DEVICE_CATS:
            t = launch_ts[e["args"]["correlation"]]  # every kernel of these traces has its launch
            if any(s["ts"] <= t < s["ts"] + s["dur"] for s in steps):
                total_us += e["dur"]
    return total_us / 1e6 / len(steps), len(steps)


def test_kernel_class_deltas_sum_to_the_change_in_kernel_time_counted_from_the_raw_events(
        shared_traces: Path, resnet_diff) -> None:
    d = resnet_diff
    per_step = []
    for side, workers in ((d.before, 0), (d.after, 4)):
        seconds, n_steps = _raw_kernel_seconds_per_step(_events(_resnet(shared_traces, workers)))
        assert side.ranks[0].steps == n_steps == 5
        assert side.kernel_time_s == pytest.approx(seconds, rel=1e-9)
        per_step.append(seconds)
    change = per_step[1] - per_step[0]
    assert sum(c.delta_s for c in d.kernel_classes) == pytest.approx(change, rel=1e-9, abs=1e-12)
    for c in d.kernel_classes:
        assert c.delta_s == pytest.approx(c.after_s - c.before_s)
    j = d.to_json()
    assert sum(c["delta_s"] for c in j["kernel_classes"]) == pytest.approx(j["kernel_time_delta_s"], abs=1e-12)
    assert {c["class"] for c in j["kernel_classes"]} == {"gemm", "attention", "elementwise", "communication",
                                                          "copy", "other"}


def test_resnet_ops_show_the_dataloader_change(resnet_diff) -> None:
    d = resnet_diff
    by = {(o.name, o.kind): o for o in d.ops}
    single = by[("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "host")]
    multi = by[("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "host")]
    assert (single.change, multi.change) == ("deleted", "added")
    assert single.calls_before == 1 and single.before_s > 0.05  # ~69 ms of every step went into __next__
    assert d.ops[0] is single  # the largest change first
    conv = by[("aten::cudnn_convolution", "host")]
    assert conv.change == "unchanged" and conv.calls_before == conv.calls_after == 53  # per step
    cats = d.ops_diff()
    assert sorted(n for v in cats.values() for n in v) == sorted(o.name for o in d.ops)


def test_step_counts_are_normalised(shared_traces: Path) -> None:
    """The same trace, its 5 steady steps (6-10) against each step alone: per-step calls agree
    exactly, and the single steps' kernel times average to the 5-step figure (steps partition the
    kernels by launch, so nothing is counted twice or lost)."""
    result = Trace([_resnet(shared_traces, 0)]).result()
    singles = [diff_results(result, result, after_steps=[n]) for n in range(6, 11)]
    assert all((d.before.ranks[0].steps, d.after.ranks[0].steps) == (5, 1) for d in singles)
    for d in singles:
        conv = next(o for o in d.ops if o.name == "aten::cudnn_convolution")
        assert conv.calls_before == conv.calls_after == 53
    mean = sum(d.after.kernel_time_s for d in singles) / 5
    assert mean == pytest.approx(singles[0].before.kernel_time_s, rel=1e-9)
    for cls in ("gemm", "elementwise"):
        got = [next(c for c in d.kernel_classes if c.cls == cls) for d in singles]
        assert sum(c.after_s for c in got) / 5 == pytest.approx(got[0].before_s, rel=1e-9)


def test_a_trace_against_itself_changes_nothing(shared_traces: Path) -> None:
    result = Trace([shared_traces / "h200/memory_bound_visible.json.gz"]).result()
    d = diff_results(result, result)
    assert d.speedup == 1.0
    assert all(c.delta_s == 0 for c in d.kernel_classes)
    assert all(o.change == "unchanged" and o.delta_s == 0 for o in d.ops)
    assert d.diagnosis_before == d.diagnosis_after
    assert "diagnosis unchanged" in " ".join(d.changes())


def test_ops_diff_matches_hta_trace_diff_test() -> None:
    """HTA's tests/test_trace_diff.py on its trace_compare pair, iteration 1010 of each, CPU ops:
    added AddmmBackward0, All2All_Pooled_Req, CatBackward0; deleted nccl:all_reduce; unchanged
    ProfilerStep#1010, aten::as_strided, aten::empty, cudaEventQuery, cudaLaunchKernel; and its
    get_ops_summary durations for the base trace (µs): ProfilerStep 122149, nccl:all_reduce 67,
    cudaEventQuery 4, cudaLaunchKernel 4, aten::as_strided 0, aten::empty 0."""
    d = diff_paths([DATA / "hta_trace_compare/base.json.gz"], [DATA / "hta_trace_compare/test.json.gz"],
                   before_steps=[1010], after_steps=[1010])
    host = {o.name: o for o in d.ops if o.kind == "host"}
    expected = {"added": ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"], "deleted": ["nccl:all_reduce"],
                "increased": [], "decreased": [],
                "unchanged": ["ProfilerStep*", "aten::as_strided", "aten::empty", "cudaEventQuery", "cudaLaunchKernel"]}
    assert {c: sorted(n for n, o in host.items() if o.change == c) for c in CHANGE_CATEGORIES} == expected
    durations_us = {n: round(o.before_s * 1e6) for n, o in host.items() if o.calls_before}
    assert durations_us == {"ProfilerStep*": 122149, "nccl:all_reduce": 67, "cudaEventQuery": 4,
                            "cudaLaunchKernel": 4, "aten::as_strided": 0, "aten::empty": 0}
    assert all(o.calls_before in (0, 1) and o.calls_after in (0, 1) for o in host.values())


def test_cli_json_contract_and_text(shared_traces: Path, capsys: pytest.CaptureFixture) -> None:
    before, after = _resnet(shared_traces, 0), _resnet(shared_traces, 4)
    assert main(["diff", str(before), str(after), "--json", "--top", "5"]) == 0
    j = json.loads(capsys.readouterr().out)
    for key in ("step_time_before_s", "step_time_after_s", "speedup", "kernel_classes", "ops",
                "diagnosis_before", "diagnosis_after"):
        assert key in j, key
    assert len(j["ops"]) == 5
    assert set(j["ops"][0]) >= {"name", "before_s", "after_s", "delta_s"}
    assert j["diagnosis_before"] == Trace([before]).result().diagnosis.to_json()
    assert j["diagnosis_after"] == Trace([after]).result().diagnosis.to_json()
    assert main(["diff", str(before), str(after)]) == 0
    text = capsys.readouterr().out
    assert f"before: {j['diagnosis_before']['signature']}" in text
    assert f"after: {j['diagnosis_after']['signature']}" in text
    assert "What changed" in text and f"{j['speedup']:.3f}x" in text


@pytest.mark.parametrize("args, message", [
    (["missing.json", "{shared}/h200/memory_bound_visible.json.gz"], "missing.json"),
    (["{shared}/h200/memory_bound_visible.json.gz", "{shared}/h200/memory_bound_visible.json.gz",
      "--after-step", "999"], "no step 999"),
    (["{data}/hta_trace_compare/base.json.gz", "{data}/hta_trace_compare/test.json.gz", "--top", "-1"], "--top"),
])
def test_cli_errors_exit_2_without_traceback(shared_traces: Path, capsys: pytest.CaptureFixture, args: list,
                                             message: str) -> None:
    argv = ["diff"] + [a.format(shared=shared_traces, data=DATA) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# The H200 before/after pairs of tests/data/h200 (SOURCES.md there; unprofiled step times in meta.json)
H200 = DATA / "h200"


def _unprofiled_s(name: str) -> float:
    return json.loads((H200 / f"{name}.meta.json").read_text())["unprofiled_step_time_s"]


@pytest.mark.parametrize("before, after", [("data_starved_loader0", "loader_fed"), ("eager_tiny", "compiled_tiny"),
                                           ("data_starved_python", "loader_fed")])
def test_h200_pairs_kernel_class_deltas_sum_to_the_raw_kernel_time_change(before: str, after: str) -> None:
    d = diff_paths([H200 / f"{before}.json.gz"], [H200 / f"{after}.json.gz"])
    raw = []
    for side, name in ((d.before, before), (d.after, after)):
        events = json.loads(gzip.decompress((H200 / f"{name}.json.gz").read_bytes()))["traceEvents"]
        seconds, n_steps = _raw_kernel_seconds_per_step(events)
        assert side.ranks[0].steps == n_steps
        assert side.kernel_time_s == pytest.approx(seconds, rel=1e-9)
        raw.append(seconds)
    assert sum(c.delta_s for c in d.kernel_classes) == pytest.approx(raw[1] - raw[0], rel=1e-9, abs=1e-12)


def test_h200_speedup_within_10_percent_of_unprofiled_where_the_profiler_does_not_stretch_the_step() -> None:
    """Plain-Python preprocessing on the host (not recorded, so not stretched by the profiler) ->
    DataLoader with 8 workers, same GPT: unprofiled 82.36 ms -> 47.12 ms, 1.748x."""
    d = diff_paths([H200 / "data_starved_python.json.gz"], [H200 / "loader_fed.json.gz"])
    unprofiled = _unprofiled_s("data_starved_python") / _unprofiled_s("loader_fed")
    assert unprofiled == pytest.approx(1.748, abs=0.001)
    assert d.speedup == pytest.approx(unprofiled, rel=0.10)
    assert d.diagnosis_before.signature != d.diagnosis_after.signature


@pytest.mark.parametrize("before, after, flagged", [
    ("data_starved_loader0", "loader_fed", ["data_starved_loader0"]),
    ("eager_tiny", "compiled_tiny", ["eager_tiny", "compiled_tiny"]),
])
def test_h200_host_bound_sides_warn_that_the_profiled_speedup_can_differ(before: str, after: str,
                                                                         flagged: list[str]) -> None:
    """Where the profiler stretches host-bound steps the profiled speedup is off (loader0 -> fed:
    2.57x profiled, 2.14x unprofiled; eager -> compiled tiny: 1.14x vs 0.90x): the diff says which
    side is host-bound and how many host events per step it recorded."""
    d = diff_paths([H200 / f"{before}.json.gz"], [H200 / f"{after}.json.gz"])
    unprofiled = _unprofiled_s(before) / _unprofiled_s(after)
    assert abs(d.speedup / unprofiled - 1) > 0.10  # why the warning exists
    warned = [w for w in d.warnings if "profiler" in w]
    assert [next(n for n in (before, after) if f"{n}.json.gz" in w) for w in warned] == flagged
    for w, name in zip(warned, flagged):
        side = d.before if name == before else d.after
        assert f"{side.host_events_per_step:.0f} host events" in w and side.gpu_busy_fraction < 0.7
