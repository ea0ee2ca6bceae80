"""The measuring loop on the CPU: points, ceilings, cancel, OOM skip, a killed run, the CLI."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuperf_gui.core.bench import device, measure, sweep
from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, load_ceilings
from gpuperf_gui.core.bench.collectives import CollectivePlan
from gpuperf_gui.core.bench.measure import iter_measurements
from gpuperf_gui.core.bench.plans import BenchPlan, PlannedPoint, TimingPolicy
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import read_run

ROOT = Path(__file__).resolve().parents[2]
@pytest.fixture(autouse=True)
def _noise_rule_off(monkeypatch):
    """These tests time tiny CPU points (3 samples) on a shared machine, where their spread is often
    wide; what they check is the loop, the files and the merge. The rule that leaves wide points out
    of the ceilings has its own tests (test_bench_noise.py)."""
    from gpuperf_gui.core.bench import points
    monkeypatch.setattr(points, "UNRELIABLE_IQR_FRACTION", float("inf"))


FAST = TimingPolicy(warmup_s=0.002, rep_s=0.01, min_samples=3)
#: Test-sized stand-in for the quick suite: matmul in two dtypes, three memory kernels, and one
#: working set beyond a (pretend) cache. The real quick suite is timed by benchmarks/, not here.
SMALL_POINTS = (
    PlannedPoint("matmul", "fp32", 64), PlannedPoint("matmul", "fp32", 128),
    PlannedPoint("matmul", "bf16", 64), PlannedPoint("copy", "fp32", 1 << 14),
    PlannedPoint("add", "fp32", 1 << 16), PlannedPoint("triad", "fp32", 1 << 16),
)


def _plan(tmp_path: Path, points=SMALL_POINTS, timing: TimingPolicy = FAST) -> BenchPlan:
    return BenchPlan(device="cpu", suite="custom", points=tuple(points), timing=timing,
                     results_path=tmp_path / "runs" / "run.jsonl", cpu_threads=1)


def test_small_cpu_plan_yields_points_ceilings_and_a_run_file(tmp_path: Path) -> None:
    items = list(sweep.save_ceilings_on_the_way(iter_measurements(_plan(tmp_path), threading.Event()),
                                                tmp_path))
    points = [i for i in items if isinstance(i, MeasuredPoint)]
    assert {p.kernel for p in points} == {"matmul", "copy", "add", "triad"}
    for point in points:
        assert point.seconds > 0 and point.samples >= 3
        assert point.iqr_low_s <= point.seconds <= point.iqr_high_s
        assert point.method.startswith("cpu-perf_counter") and point.threads == 1
    matmul = [p for p in points if p.kernel == "matmul"]
    assert all(p.counted_flops == 2 * p.size**3 == p.flops for p in matmul)
    ceilings = items[-1]
    assert isinstance(ceilings, MeasuredCeilings) and ceilings.complete
    assert set(ceilings.matmul_flops_per_s) == {"fp32", "bf16"}
    assert ceilings.bandwidth_bytes_per_s and ceilings.device_id == "cpu"
    assert load_ceilings("cpu", tmp_path) == ceilings
    run = read_run(tmp_path / "runs" / "run.jsonl")
    assert run.points == points and run.ceilings == ceilings and run.header["device"] == "cpu"
    _check_cache_levels(points, run.header)
    started = [i for i in items if isinstance(i, BenchMessage) and i.kind == "started"]
    assert [m.index for m in started] == list(range(len(SMALL_POINTS)))
    assert all(m.eta_s is not None and m.eta_s >= 0 for m in started)


def test_cancel_stops_within_one_point(tmp_path: Path) -> None:
    stop = threading.Event()
    points = [PlannedPoint("matmul", "fp32", 64)] * 20
    seen = []
    for item in sweep.save_ceilings_on_the_way(iter_measurements(_plan(tmp_path, points), stop), tmp_path):
        if isinstance(item, MeasuredPoint):
            seen.append(item)
            if len(seen) == 2:
                stop.set()
    assert 2 <= len(seen) <= 3
    run_ceilings = read_run(tmp_path / "runs" / "run.jsonl").ceilings
    assert run_ceilings.complete is False and run_ceilings.matmul_flops_per_s["fp32"] > 0
    saved = load_ceilings("cpu", tmp_path)  # the points measured so far count, merged
    assert saved.matmul_flops_per_s == run_ceilings.matmul_flops_per_s
    assert saved.matmul_runs == {"fp32": "run"}


def test_stop_while_timing_abandons_the_point(tmp_path: Path) -> None:
    stop = threading.Event()
    slow = TimingPolicy(warmup_s=0.0, rep_s=30.0, min_samples=3, max_samples=10**9)
    timer = threading.Timer(0.5, stop.set)
    timer.start()
    started = time.monotonic()
    items = list(iter_measurements(_plan(tmp_path, [PlannedPoint("matmul", "fp32", 32)] * 3, slow), stop))
    timer.cancel()
    assert time.monotonic() - started < 10
    assert not [i for i in items if isinstance(i, MeasuredPoint)]
    assert any(isinstance(i, BenchMessage) and i.kind == "stopped" for i in items)


def test_simulated_oom_skips_the_point_and_the_run_continues(tmp_path: Path, monkeypatch) -> None:
    import torch

    real_build = measure.build_kernel

    def build(point, info):
        if point.size == 128:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_build(point, info)

    monkeypatch.setattr(measure, "build_kernel", build)
    items = list(iter_measurements(_plan(tmp_path), threading.Event()))
    skipped = [i for i in items if isinstance(i, BenchMessage) and i.kind == "skipped"]
    assert len(skipped) == 1 and "out of memory" in skipped[0].text and "128" in skipped[0].label
    points = [i for i in items if isinstance(i, MeasuredPoint)]
    assert len(points) == len(SMALL_POINTS) - 1
    assert read_run(tmp_path / "runs" / "run.jsonl").messages[0].kind == "skipped"


def test_unsupported_dtype_and_missing_cuda_are_skipped(tmp_path: Path) -> None:
    items = list(iter_measurements(_plan(tmp_path, [PlannedPoint("matmul", "fp8", 64),
                                                    PlannedPoint("matmul", "fp32", 64)]), threading.Event()))
    assert any(isinstance(i, BenchMessage) and i.kind == "skipped" and "fp8" in i.text for i in items)
    assert len([i for i in items if isinstance(i, MeasuredPoint)]) == 1
    import torch

    if not torch.cuda.is_available():
        items = list(iter_measurements(BenchPlan(device="cuda"), threading.Event()))
        assert len(items) == 1 and items[0].kind == "skipped" and "CUDA" in items[0].text


_KILLED_RUN = """
import sys, threading
from pathlib import Path
from gpuperf_gui.core.bench.measure import iter_measurements
from gpuperf_gui.core.bench.plans import BenchPlan, PlannedPoint, TimingPolicy
plan = BenchPlan(device="cpu", suite="custom", points=(PlannedPoint("matmul", "fp32", 64),) * 200,
                 timing=TimingPolicy(warmup_s=0.0, rep_s=0.05, min_samples=3),
                 results_path=Path(sys.argv[1]), cpu_threads=1)
for item in iter_measurements(plan, threading.Event()):
    print(type(item).__name__, flush=True)
"""


def test_results_survive_a_killed_run(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(path)], env=env,
                               stdout=subprocess.PIPE, text=True)
    try:
        measured = 0
        for line in process.stdout:
            measured += line.startswith("MeasuredPoint")
            if measured >= 3:
                break
        process.send_signal(signal.SIGKILL)  # no cleanup, no finally blocks
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
    run = read_run(path)
    assert len(run.points) >= 3 and run.ceilings is None
    assert run.torn_lines <= 1
    assert run.header["planned_points"] == 200


def test_cli_bench_json(tmp_path: Path, capsys) -> None:
    from gpuperf_gui.cli import main

    out = tmp_path / "bench.json"
    code = main(["bench", "--device", "cpu", "--kernels", "matmul,copy", "--dtypes", "fp32",
                 "--sizes", "64", "--warmup-ms", "1", "--rep-ms", "5", "--results-dir", str(tmp_path),
                 "--json", str(out), "--quiet"])
    assert code == 0
    payload = json.loads(out.read_text())
    kernels = {p["kernel"] for p in payload["points"]}
    assert kernels == {"matmul", "copy"}
    for key in ("kernel", "dtype", "size", "flops", "bytes", "seconds", "flops_per_s", "bytes_per_s",
                "ai_flops_per_byte"):
        assert key in payload["points"][0]
    assert payload["ceilings"]["matmul_flops_per_s"]["fp32"] > 0
    assert Path(payload["results_file"]).exists()
    assert "fp32" in capsys.readouterr().out


def test_cli_bench_refuses_cuda_without_cuda(capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from gpuperf_gui.cli import main

    assert main(["bench", "--device", "cuda", "--no-save", "--quiet"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


def _cli(tmp_path: Path, *extra: str) -> int:
    from gpuperf_gui.cli import main

    return main(["bench", "--device", "cpu", "--warmup-ms", "1", "--rep-ms", "5", "--results-dir",
                 str(tmp_path), "--quiet", *extra])


def test_cli_small_run_merges_into_the_saved_ceilings(tmp_path: Path, capsys) -> None:
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, save_ceilings

    big = MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 1e15, "bf16": 2e15}, bandwidth_bytes_per_s=1e15,
                           matmul_runs={"fp32": "earlier", "bf16": "earlier"}, bandwidth_run="earlier")
    save_ceilings(big, tmp_path)
    out = tmp_path / "small.json"
    assert _cli(tmp_path, "--kernels", "matmul", "--sizes", "64", "--dtypes", "fp32", "--json", str(out)) == 0
    saved = load_ceilings("cpu", tmp_path)
    assert saved.matmul_flops_per_s == {"fp32": 1e15, "bf16": 2e15}  # not lowered, not dropped
    assert saved.bandwidth_bytes_per_s == 1e15 and saved.bandwidth_run == "earlier"
    payload = json.loads(out.read_text())
    assert payload["ceilings"]["matmul_flops_per_s"]["fp32"] < 1e15  # the run's own
    assert payload["saved_ceilings"]["matmul_flops_per_s"]["bf16"] == 2e15
    assert "saved ceilings (best so far" in capsys.readouterr().out
    # a run that adds a dtype and a bandwidth keeps the rest
    assert _cli(tmp_path, "--kernels", "copy", "--reset-ceilings") == 0
    saved = load_ceilings("cpu", tmp_path)
    assert saved.matmul_flops_per_s == {} and 0 < saved.bandwidth_bytes_per_s < 1e15
    run_name = saved.bandwidth_run
    assert run_name and (tmp_path / "runs" / f"{run_name}.jsonl").exists()
    assert saved.bandwidth_measured_at > 0


@pytest.mark.parametrize("extra, message", [
    (("--json", "/nonexistent/x.json"), "folder /nonexistent does not exist"),
    (("--rep-ms", "-1"), "--rep-ms must be a positive number"),
    (("--warmup-ms", "0"), "--warmup-ms must be a positive number"),
    (("--sizes", "64,abc"), "--sizes must be whole numbers like 1024,4096"),
    (("--reset-ceilings", "--no-save"), "contradict"),
])
def test_cli_bad_arguments_fail_fast_with_one_line(tmp_path: Path, capsys, monkeypatch, extra, message) -> None:
    def no_measuring(*args, **kwargs):
        raise AssertionError("measured before checking the arguments")

    monkeypatch.setattr(measure, "iter_measurements", no_measuring)
    assert _cli(tmp_path, "--kernels", "matmul", "--sizes", "64", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_cli_json_to_a_folder_or_a_read_only_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    assert _cli(tmp_path, "--json", str(tmp_path)) == 2
    assert "is a folder" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    # as root chmod would not stop the write: the folder is reported unwritable by os.access instead
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode))
    assert _cli(tmp_path, "--json", str(locked / "x.json")) == 2
    assert "not writable" in capsys.readouterr().err


def test_an_unknown_gpu_is_measured_and_saved_as_itself_not_as_the_cpu(tmp_path: Path, monkeypatch) -> None:
    import types

    import torch

    from gpuperf_gui.core.bench.ceilings import compute_ceilings, update_saved_ceilings

    assert device.gpu_device_id("NVIDIA H200") == "h200"
    assert device.gpu_device_id("Acme Tensor X9 (rev 2)") == "gpu-acme-tensor-x9-rev-2"
    props = types.SimpleNamespace(name="Acme Tensor X9 (rev 2)", major=9, minor=0, L2_cache_size=50 << 20,
                                  total_memory=80 << 30, uuid=None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    info = device.resolve_device("cuda:0")
    assert info.device_id == "gpu-acme-tensor-x9-rev-2" and info.kind == "cuda"
    point = MeasuredPoint(kernel="matmul", dtype="bf16", size=8192, flops=2.0 * 8192**3, bytes=3.0 * 8192**2 * 2,
                          seconds=2e-3, method="cuda-events", iqr_low_s=2e-3, iqr_high_s=2e-3, samples=5)
    update_saved_ceilings(compute_ceilings([point], info.device_id), tmp_path)
    assert load_ceilings("cpu", tmp_path) is None  # the cpu never gets a GPU's peaks
    assert load_ceilings(info.device_id, tmp_path).matmul_flops_per_s["bf16"] == pytest.approx(point.flops_per_s)


def _collective_point(busbw_bytes_per_s: float = 2e9) -> MeasuredPoint:
    return MeasuredPoint(kernel="all_reduce", dtype="fp32", size=1 << 20, flops=0.0, bytes=4.0 * (1 << 20),
                         seconds=1e-3, method="gloo-perf_counter", iqr_low_s=1e-3, iqr_high_s=1e-3, samples=5,
                         device="cpu", world_size=2, busbw_bytes_per_s=busbw_bytes_per_s)


def _fake_collectives(monkeypatch, points: list[MeasuredPoint]) -> None:
    from gpuperf_gui.core.bench import collectives

    def fake(plan, stop):
        assert plan == collectives.CollectivePlan("gloo")  # the plan given to the run, passed on
        yield BenchMessage("info", "gloo: 2 ranks")
        yield from points
    monkeypatch.setattr(collectives, "iter_collective_measurements", fake)


def test_iter_run_says_finished_only_after_the_collectives(tmp_path: Path, monkeypatch) -> None:
    from gpuperf_gui.core.bench.ceilings import compute_ceilings

    matmul = MeasuredPoint(kernel="matmul", dtype="fp32", size=64, flops=2.0 * 64**3, bytes=3.0 * 64**2 * 4,
                           seconds=1e-4, method="cpu-perf_counter", iqr_low_s=1e-4, iqr_high_s=1e-4, samples=5)

    def fake_sweep(plan, stop, **_kwargs):
        yield matmul
        yield BenchMessage("finished", "1 points in 0.1 s", 1, 1, eta_s=0.0)
        yield compute_ceilings([matmul], "cpu")
    monkeypatch.setattr(measure, "iter_measurements", fake_sweep)
    _fake_collectives(monkeypatch, [_collective_point()])
    items = list(sweep.iter_run(_plan(tmp_path), threading.Event(), collectives=CollectivePlan("gloo")))
    finished = [k for k, i in enumerate(items) if isinstance(i, BenchMessage) and i.kind == "finished"]
    collective = next(k for k, i in enumerate(items) if isinstance(i, MeasuredPoint) and i.kernel == "all_reduce")
    assert len(finished) == 1 and finished[0] > collective
    assert items[finished[0]].text.startswith("2 points in ")
    ceilings = items[-1]
    assert isinstance(ceilings, MeasuredCeilings)
    assert ceilings.matmul_flops_per_s["fp32"] > 0 and ceilings.collective_busbw_bytes_per_s == {"all_reduce": 2e9}


def test_iter_run_saves_collective_ceilings_when_the_sweep_measured_nothing(tmp_path: Path, monkeypatch) -> None:
    def fake_sweep(plan, stop, **_kwargs):
        yield BenchMessage("skipped", "skipped the whole run: CUDA is not available")
    monkeypatch.setattr(measure, "iter_measurements", fake_sweep)
    _fake_collectives(monkeypatch, [_collective_point(3e9)])
    items = list(sweep.iter_run_and_save(_plan(tmp_path), threading.Event(), results_dir=tmp_path,
                                         collectives=CollectivePlan("gloo")))
    assert isinstance(items[-1], MeasuredCeilings) and items[-1].device_id == "cpu"
    assert [i.kind for i in items if isinstance(i, BenchMessage)][-1] == "finished"
    assert load_ceilings("cpu", tmp_path).collective_busbw_bytes_per_s == {"all_reduce": 3e9}
    assert read_run(tmp_path / "runs" / "run.jsonl").ceilings == items[-1]


def test_the_loop_saves_no_ceilings_the_caller_does(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [PlannedPoint("matmul", "fp32", 32)])
    items = list(iter_measurements(plan, threading.Event()))
    assert isinstance(items[-1], MeasuredCeilings) and load_ceilings("cpu", tmp_path) is None
    list(sweep.save_ceilings_on_the_way(iter(items), tmp_path))
    assert load_ceilings("cpu", tmp_path).matmul_flops_per_s == items[-1].matmul_flops_per_s


def test_cpu_runs_default_to_every_cpu_of_the_process_in_gui_and_cli(tmp_path: Path) -> None:
    from gpuperf_gui.core.bench.plans import default_cpu_threads

    expected = len(os.sched_getaffinity(0))   # the CPUs this process may run on (Linux)
    assert default_cpu_threads() == expected
    plan = BenchPlan(device="cpu", suite="custom", points=(PlannedPoint("matmul", "fp32", 32),), timing=FAST)
    point = next(i for i in iter_measurements(plan, threading.Event()) if isinstance(i, MeasuredPoint))
    assert point.threads == expected


def test_cli_threads_option_is_recorded_with_each_point(tmp_path: Path) -> None:
    out = tmp_path / "one-thread.json"
    assert _cli(tmp_path, "--kernels", "matmul", "--sizes", "64", "--dtypes", "fp32", "--threads", "1",
                "--no-save", "--json", str(out)) == 0
    points = json.loads(out.read_text())["points"]
    assert points and all(p["threads"] == 1 for p in points)


def test_iter_run_and_save_plans_the_collectives_from_a_suite_name(tmp_path: Path, monkeypatch) -> None:
    from gpuperf_gui.core.bench import collectives

    seen = []

    def fake(plan, stop):
        seen.append(plan)
        yield _collective_point(2.5e9)
    monkeypatch.setattr(collectives, "iter_collective_measurements", fake)
    monkeypatch.setattr(measure, "iter_measurements", lambda plan, stop: iter(()))
    list(sweep.iter_run_and_save(_plan(tmp_path), threading.Event(), results_dir=tmp_path, collectives="quick"))
    assert seen == [collectives.default_collective_plan("quick")]
    assert load_ceilings("cpu", tmp_path).collective_busbw_bytes_per_s == {"all_reduce": 2.5e9}



def _check_cache_levels(points: list[MeasuredPoint], header: dict) -> None:
    """Each CPU point says which cache holds its working set: with one thread, one core's caches as
    sysfs lists them (read here line by line, as `lscpu -C` prints them)."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    sizes = {}
    for index in sorted(base.glob("index*")):
        if (index / "type").read_text().strip() != "Instruction":
            text = (index / "size").read_text().strip()
            sizes[int((index / "level").read_text())] = int(text.rstrip("KM")) * (1024 if text[-1] == "K" else 1024**2)
    for point in points:
        expected = next((f"L{level}" for level, size in sorted(sizes.items()) if point.working_set_bytes <= size),
                        "memory") if sizes else None
        assert point.cache_level == expected, (point.label, point.working_set_bytes, sizes)
    assert [(d["name"], d["size_bytes"]) for d in header["cache_levels"]] == [
        (f"L{level}", size) for level, size in sorted(sizes.items())]
