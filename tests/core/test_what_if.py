"""What-if projections and the critical path (core/trace/critical_path.py, what_if.py).

Expected values: hand counts on a trace written here event by event, and, for the real H200 pairs,
the step times measured with the profiler off (meta.json / the traces' ``gpuperf_unprofiled``):
the projection for the cause that was removed must be an upper bound of the measured speedup and
within the factor stated per pair.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.cli import main as cli_main
from gpuperf_gui.core.trace import critical_path as cp
from gpuperf_gui.core.trace import what_if
from gpuperf_gui.core.trace.api import analyse_paths
from gpuperf_gui.core.trace.what_if import cause_for_signature, for_result

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"

# ---------------------------------------------------------------------------------------------
# A trace counted by hand: per step a 1000 µs DataLoader call, three ops that each launch a 300 µs
# kernel (queued back to back on one stream), then cudaDeviceSynchronize until the last kernel ends.

DL_US, KERNEL_US, STEPS = 1000.0, 300.0, 5


def _hand_trace(path: Path) -> Path:
    ev: list[dict] = []
    corr = 1
    s = 0.0
    for k in range(STEPS):
        cpu = []
        cpu.append(("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op", s + 1, DL_US, {}))
        kernel_free = s
        last_end = 0.0
        for j in range(3):
            t = s + 1010 + 20 * j
            cpu.append(("aten::mm", "cpu_op", t, 20.0, {}))
            cpu.append(("cudaLaunchKernel", "cuda_runtime", t + 5, 10.0, {"correlation": corr}))
            k_start = max(t + 10, kernel_free, last_end)
            ev.append({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16", "pid": 0, "tid": 7,
                       "ts": k_start, "dur": KERNEL_US,
                       "args": {"device": 0, "stream": 7, "correlation": corr}})
            ev.append({"ph": "s", "id": corr, "pid": 1, "tid": 1, "ts": t + 5, "cat": "ac2g", "name": "ac2g"})
            ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": k_start, "cat": "ac2g", "name": "ac2g",
                       "bp": "e"})
            last_end = k_start + KERNEL_US
            corr += 1
        cpu.append(("cudaDeviceSynchronize", "cuda_runtime", s + 1080, last_end + 5 - (s + 1080), {}))
        end = last_end + 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
                   "ts": s, "dur": end - s, "args": {}})
        for name, cat, ts, dur, args in cpu:
            ev.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})
        s = end + 5
    trace = {"schemaVersion": 1, "traceEvents": ev, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}]}
    path.write_text(json.dumps(trace))
    return path


# Hand count of one step: the DataLoader ends at +1001, the ops launch at +1015/+1035/+1055, the
# first kernel starts at +1020 and the three end at +1920; the sync returns at +1925, the step ends
# at +1930 and the next starts 5 µs later: 1935 µs per step.
STEP_US = 1935.0
# Without the DataLoader the ops run 1000 µs earlier (the 9 µs of Python before them stays): 935 µs.
NO_DATA_STEP_US = 935.0
# Without the host sync the host runs ahead: its own 1090 µs per step (the GPU's 900 µs overlap).
NO_SYNC_STEP_US = 1090.0


@pytest.fixture
def no_profiler_correction(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hand counts are of the graph alone: no host time taken out per event for the profiler
    (what_if.PROFILER_US_PER_EVENT, checked against the H200 pairs below)."""
    monkeypatch.setattr(what_if, "PROFILER_US_PER_EVENT", 0.0)


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    path = _hand_trace(tmp_path_factory.mktemp("hand") / "hand.json")
    return analyse_paths([path])


def test_replay_gives_the_hand_trace_back(hand) -> None:  # noqa: ANN001
    g = cp.build_graph([r.trace for r in hand.ranks])
    t = cp.replay(g)
    np.testing.assert_allclose(t, g.t_orig, atol=0.01)
    assert cp.step_span_us(g, t) == pytest.approx(STEP_US, abs=0.5)


def test_projections_match_the_hand_count(hand, no_profiler_correction) -> None:  # noqa: ANN001
    wi = for_result(hand)
    step = hand.ranks[0].analysis.step_time_median_s
    data = wi.for_cause("data_stall")
    assert data.speedup_upper_bound == pytest.approx(STEP_US / NO_DATA_STEP_US, rel=1e-3)
    assert data.step_time_s == pytest.approx(step * NO_DATA_STEP_US / STEP_US, rel=1e-3)
    assert data.new_dominant == "gemm"  # with data ready, the kernels are the path
    sync = wi.for_cause("host_syncs")
    assert sync.speedup_upper_bound == pytest.approx(STEP_US / NO_SYNC_STEP_US, rel=1e-3)
    assert wi.projections[0].cause == "data_stall"  # the largest gain first (combinations after)


def test_critical_path_of_the_hand_trace(hand, no_profiler_correction) -> None:  # noqa: ANN001
    wi = for_result(hand)
    path = wi.critical_path
    # Steps 1-4 are replayed (step 0 is warm-up); the path runs from step 1's start through every
    # DataLoader call and every kernel of those steps.
    kept = STEPS - 1
    assert path.seconds["dataloader"] == pytest.approx(kept * DL_US / 1e6, rel=1e-6)
    assert path.seconds["gemm"] == pytest.approx(kept * 3 * KERNEL_US / 1e6, rel=1e-6)
    assert path.length_us == pytest.approx(kept * STEP_US - 5.0, abs=1.0)
    assert sum(path.share.values()) == pytest.approx(1.0)


def test_diagnose_json_has_what_if_and_critical_path(no_profiler_correction, tmp_path: Path,  # noqa: ANN001
                                                    capsys: pytest.CaptureFixture) -> None:
    trace = _hand_trace(tmp_path / "t.json")
    assert cli_main(["diagnose", str(trace), "--json", "--top", "0", "--params", "1e9",
                     "--tokens-per-step", "1000"]) == 0
    obj = json.loads(capsys.readouterr().out)
    rows = {r["cause"]: r for r in obj["what_if"]}
    assert {"cause", "assumption", "step_time_s", "speedup_upper_bound", "mfu"} <= set(rows["data_stall"])
    # MFU = 6 N T / (step x peak); H200 dense bf16 peak 989.4 TFLOP/s (devices.toml, datasheet).
    step = rows["data_stall"]["step_time_s"]
    assert rows["data_stall"]["mfu"] == pytest.approx(6e9 * 1000 / (step * 989.4e12), rel=1e-6)
    assert obj["critical_path"]["share"]["dataloader"] > 0.4
    assert cli_main(["diagnose", str(trace), "--top", "0"]) == 0
    text = capsys.readouterr().out
    assert "Try first: fix: DataLoader workers — projected <= 2.07x faster" in text


# ---------------------------------------------------------------------------------------------
# Real pairs (H200, before/after with one cause removed, step times measured with the profiler off)


def _meta(name: str) -> dict:
    return json.loads((H200 / f"{name}.meta.json").read_text())


PAIRS_DIR = H200 / "pairs"
# The stated factor per cause: measured <= projected <= factor x measured (aim: 1.25). memory_bound
# is the exception: the fused kernel plus compiled host code beat the shortest eager kernel plus the
# profiled host time between steps, so its projection is 0.95x of the measured speedup (stated, not
# an upper bound: docs/what-if.md).
FACTORS = {"data_stall": (1.0, 1.25), "launch_overhead": (1.0, 1.25), "host_syncs": (1.0, 1.25),
           "late_rank": (1.0, 1.25), "memory_bound": (0.9, 1.25)}


def _pairs() -> list[dict]:
    return json.loads((PAIRS_DIR / "pairs.json").read_text())["pairs"]


def _trace(rel: str) -> Path:
    p = PAIRS_DIR / rel
    return p if p.is_dir() else p.with_name(p.name + ".json.gz")


@pytest.mark.slow
@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: p["cause"])
def test_projection_bounds_the_measured_speedup(pair: dict) -> None:
    """The pairs recorded on the H200 (pairs.json: unprofiled medians of 10 synced steps)."""
    before, after = _trace(pair["before"]), _trace(pair["after"])
    meta = lambda p: json.loads((p.parent / (p.name.removesuffix(".json.gz") + ".meta.json")).read_text())  # noqa: E731
    measured = meta(before)["unprofiled_step_time_s"] / meta(after)["unprofiled_step_time_s"]
    assert measured == pytest.approx(pair["unprofiled_speedup"], rel=1e-3)
    wi = for_result(analyse_paths([before]))
    projected = wi.for_cause(pair["cause"]).speedup_upper_bound
    lo, hi = FACTORS[pair["cause"]]
    assert lo * measured <= projected <= hi * measured, (measured, projected)


def test_eager_tiny_to_cuda_graphs_is_bounded() -> None:
    """eager_tiny -> compiled_tiny_cudagraphs (a pair recorded on the H200, tests/data/h200/SOURCES.md): 6.54 -> 2.92 ms unprofiled."""
    measured = _meta("eager_tiny")["unprofiled_step_time_s"] / _meta("compiled_tiny_cudagraphs")["unprofiled_step_time_s"]
    projected = for_result(analyse_paths([H200 / "eager_tiny.json.gz"])).for_cause("launch_overhead")
    assert measured <= projected.speedup_upper_bound <= 3.0 * measured


def _unprofiled_median(path: Path) -> float:
    with gzip.open(path) as f:
        return float(np.median(json.load(f)["gpuperf_unprofiled"]["step_times_s"]))


@pytest.mark.slow
@pytest.mark.parametrize("repeat", [0, 1, 2])
def test_data_stall_bounds_each_unprofiled_repeat(repeat: int) -> None:
    """loader0 -> loader_fed, each repeat's own profiler-idle step times (the same run as its trace)."""
    before = H200 / "unprofiled" / f"loader0.r{repeat}.json.gz"
    after = H200 / "unprofiled" / f"loader_fed.r{repeat}.json.gz"
    measured = _unprofiled_median(before) / _unprofiled_median(after)
    projected = for_result(analyse_paths([before])).for_cause("data_stall").speedup_upper_bound
    assert measured <= projected <= 1.25 * measured, (measured, projected)


@pytest.mark.slow
def test_multi_rank_what_if_and_late_rank() -> None:
    """DDP over gloo, rank 1 sleeping 40 ms before each forward (meta: late_ms=40): removing the late
    rank's stall saves those 40 ms (within 10 %) of every rank's step."""
    result = analyse_paths([H200 / "ddp_straggler_gloo"])
    assert result.multi_rank.stragglers == [1]
    wi = for_result(result)
    late = wi.for_cause("late_rank")
    meta = _meta("ddp_straggler_gloo")
    saved_s = wi.step_time_s - late.step_time_s
    assert saved_s == pytest.approx(meta["expected"]["late_ms"] / 1e3, rel=0.1)
    # The late rank's sleep is its host's own code, so data_stall (which removes long stretches of
    # it on every rank) gains as much; the straggler verdict's fix is late_rank.
    assert late.cause in {p.cause for p in wi.projections[:2]}
    assert wi.replay_error < 0.05
    assert cause_for_signature(wi, result.diagnosis.signature) is late
    obj = result.to_json(top=0)
    assert "late_rank" in {r["cause"] for r in obj["what_if"]} and obj["critical_path"]["share"]


@pytest.mark.slow
def test_diff_checks_the_projection_against_the_measured_speedup(capsys: pytest.CaptureFixture) -> None:
    """`gpuperf diff`: the before-trace's data_stall projection against the speedup the after-trace
    measured (profiled steps here: these two traces carry no unprofiled times)."""
    before, after = H200 / "data_starved_loader0.json.gz", H200 / "loader_fed.json.gz"
    assert cli_main(["diff", str(before), str(after), "--json"]) == 0
    check = json.loads(capsys.readouterr().out)["what_if_check"]
    projected = for_result(analyse_paths([before])).for_cause("data_stall").speedup_upper_bound
    assert check["cause"] == "data_stall"
    assert check["projected_speedup_upper_bound"] == pytest.approx(projected)
    assert check["within_bound"] is (check["measured_speedup"] <= projected)
    assert check["ratio"] == pytest.approx(projected / check["measured_speedup"])
