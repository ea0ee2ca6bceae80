"""Analysis against HTA 0.5.0's figures (tests/data/shared_traces/SOURCES.md) and the H200 runs' meta.json."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from trace_support import loaded, merged_intervals, sources_table

# HTA-compatible idle/overlap agree with HTA to 0.01 percentage point on every file HTA analyses,
# except these two, where we disagree on purpose (documented in analysis.py/_hta_figures):
#  * event_sync_trace: HTA 0.5.0 counts the 5 µs "Stream Sync" (cuda_sync on stream 7) as busy
#    (78.71 %); we never count cuda_sync as GPU work (80.61 %), as HTA PRs #149/#162 argue.
#  * tracelens b200: 87.28 % vs HTA 87.2 % (0.08 points; within 0.2).
HTA_TOLERANCE = {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz": 0.02,
                 "tracelens/b200/eager_trace.json.gz": 0.002}


def test_temporal_idle_and_overlap_match_hta(shared_traces: Path) -> None:
    checked = 0
    for rel, row in sources_table(shared_traces).items():
        if row["hta_idle"] is None:
            continue  # HTA failed on this file; we still load and analyse it (see the load tests)
        _, a = loaded(shared_traces / rel)
        tol = HTA_TOLERANCE.get(rel, 1e-4)
        assert a.hta_temporal_idle_fraction == pytest.approx(row["hta_idle"], abs=tol), rel
        if row["hta_overlap"] is not None:
            assert a.hta_comm_overlap_fraction == pytest.approx(row["hta_overlap"], abs=tol), rel
        checked += 1
    assert checked == 28


def test_where_hta_fails_we_still_give_figures(shared_traces: Path) -> None:
    _, qwen = loaded(shared_traces / "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    assert qwen.gpu_busy_fraction == pytest.approx(0.92, abs=0.01)  # metrics.md §5: "GPU busy 92 %"
    path = shared_traces / "tracelens/mi300/resnet_act_checkpoint.json.gz"
    _, mi300 = loaded(path)
    # metrics.md §5 reads "66 % exposed" over the CPU steps 16-17, whose span (the CPU runs a whole
    # step ahead) also holds the warm-up step's kernels. Over the device work of steps 16-17 the raw
    # events, counted here with plain Python, give the figure the engine must match.
    assert mi300.comm_exposed_fraction == pytest.approx(_exposed_comm_of_steps(path, (16, 17)), abs=0.005)
    assert 0.55 < mi300.comm_exposed_fraction < 0.70


def _exposed_comm_of_steps(path: Path, steps: tuple[int, ...]) -> float:
    """Exposed NCCL time / window over the kernels launched inside the given ProfilerSteps, from the
    raw JSON (an implementation independent of the engine)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("ph") == "X" and any(e.get("name") == f"ProfilerStep#{n}" for n in steps)]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
                and any(a <= e["ts"] < b for a, b in spans)}
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in launched]
    comm = merged_intervals([(k["ts"], k["ts"] + k["dur"]) for k in kernels if "nccl" in k["name"].lower()])
    comp = merged_intervals([(k["ts"], k["ts"] + k["dur"]) for k in kernels if "nccl" not in k["name"].lower()])
    overlap = sum(max(0.0, min(b, d) - max(a, c)) for a, b in comm for c, d in comp)
    window = max(k["ts"] + k["dur"] for k in kernels) - min(k["ts"] for k in kernels)
    return (sum(b - a for a, b in comm) - overlap) / window



def test_idle_split_sums_to_the_idle_time_and_names_host_wait(shared_traces: Path) -> None:
    _, a = loaded(shared_traces / "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    assert sum(a.idle_breakdown.values()) == pytest.approx(1.0)
    assert a.idle_breakdown["host_wait"] > 0.9  # the GPU waits for the data-loading host
    assert a.dataloader_fraction == pytest.approx(0.396, abs=0.01)  # metrics.md §5: DataLoader 39.6 %
    _, fixed = loaded(shared_traces / "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    assert fixed.dataloader_fraction < 0.02  # metrics.md §5: DataLoader 1 %


def test_df_index_resolver_comm_figures(shared_traces: Path) -> None:
    _, a = loaded(shared_traces / "hta/df_index_resolver/df_index_resolver.json.gz")
    assert a.hta_temporal_idle_fraction == pytest.approx(0.4608, abs=1e-4)  # HTA: idle 46.08 %
    assert a.comm_overlap_fraction == pytest.approx(0.0, abs=1e-3)  # HTA: overlap 0.0 %
    assert a.comm_exposed_fraction == pytest.approx(0.21, abs=0.01)  # metrics.md §5: 20.6 % exposed
    assert [s.number for s in a.steps] == [2, 3, 4, 5, 6] and a.steps[0].warmup


def test_step_time_matches_the_run_measured_outside_the_profiler(shared_traces: Path) -> None:
    meta = json.loads((shared_traces / "h200/healthy_gpt_small.meta.json").read_text())
    _, a = loaded(shared_traces / "h200/healthy_gpt_small.json.gz")
    # meta.json: 59.1 ms median of 10 synchronised steps without the profiler; the profiled steps
    # take 61.8 ms (profiler overhead), so 6 %.
    assert a.step_time_median_s == pytest.approx(meta["step_time_median_s"], rel=0.06)
    assert a.kernel_time_share["gemm"] > 0.5  # SOURCES.md: "GEMMs dominate"


def test_launch_statistics_of_the_tiny_model(shared_traces: Path) -> None:
    _, a = loaded(shared_traces / "h200/launch_bound_tiny.json.gz")
    assert a.gpu_busy_fraction == pytest.approx(0.05, abs=0.02)  # SOURCES.md: "GPU busy about 5 %"
    assert a.launch.median_kernel_us < 2.0  # SOURCES.md: "thousands of ~1 µs kernels"
    assert a.launch.kernels_shorter_than_launch_fraction > 0.9
