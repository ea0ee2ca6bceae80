"""Result files, measured points and ceilings (no torch)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    compute_ceilings,
    list_saved_ceilings,
    load_ceiling_entries,
    load_ceilings,
    merge_ceilings,
    reset_saved_ceilings,
    save_ceilings,
    timer_family,
    update_saved_ceilings,
)
from gpuperf_gui.core.bench.points import DESIGN_KEYS, BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import (
    ResultsWriter,
    default_results_dir,
    export_csv,
    list_runs,
    RUN_NAME,
    new_run_path,
    read_run,
)


def _point(kernel: str = "matmul", dtype: str = "bf16", size: int = 8192, seconds: float = 1.6e-3,
           **extra) -> MeasuredPoint:
    flops = 2.0 * size**3 if kernel == "matmul" else 0.0
    nbytes = 3.0 * size * size * 2 if kernel == "matmul" else 2.0 * size * 4
    return MeasuredPoint(kernel=kernel, dtype=dtype, size=size, flops=flops, bytes=nbytes, seconds=seconds,
                         method="cuda-events+flush", iqr_low_s=seconds * 0.99, iqr_high_s=seconds * 1.01,
                         samples=50, working_set_bytes=int(nbytes), **extra)


def test_point_json_has_the_design_keys_first_and_round_trips() -> None:
    point = _point(sm_clock_hz=1.5e9, throttled=True)
    data = point.to_json_dict()
    assert tuple(data)[: len(DESIGN_KEYS)] == DESIGN_KEYS
    assert data["flops_per_s"] == pytest.approx(2 * 8192**3 / 1.6e-3)
    assert data["ai_flops_per_byte"] == pytest.approx(8192 / 3)
    assert {"method", "samples", "iqr_s", "throttled", "sm_clock_hz"} <= set(data)
    assert MeasuredPoint.from_json_dict(json.loads(json.dumps(data))) == point


def test_point_converts_to_a_measured_roofline_point() -> None:
    roof = _point().to_roofline_point()
    assert roof.kind == "measured"
    assert roof.flops == 2 * 8192**3 and roof.seconds == 1.6e-3
    assert roof.achieved_flops_per_s == pytest.approx(_point().flops_per_s)


def test_jsonl_round_trip_and_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "run.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cuda:0", "suite": "quick"})
        writer.write_point(_point())
        writer.write_message(BenchMessage("skipped", "skipped matmul fp8 16384³: out of memory"))
        writer.write_point(_point("copy", "fp32", 1 << 28, 5e-4, beyond_cache=True))
    with path.open("a") as handle:
        handle.write('{"type": "point", "kernel": "matm')  # killed mid-write
    run = read_run(path)
    assert run.header["device"] == "cuda:0"
    assert [p.kernel for p in run.points] == ["matmul", "copy"]
    assert run.messages[0].kind == "skipped"
    assert run.torn_lines == 1
    assert run.to_json_dict()["points"][0]["kernel"] == "matmul"


def test_ceilings_pick_the_best_and_prefer_beyond_cache_bandwidth() -> None:
    points = [
        _point(size=4096, seconds=1.9e-4), _point(size=8192, seconds=1.6e-3),
        _point("copy", "fp32", 1 << 20, 1e-6, beyond_cache=False),  # in L2: fast, not HBM
        _point("copy", "fp32", 1 << 28, 5.1e-4, beyond_cache=True),
    ]
    ceilings = compute_ceilings(points, "h200", "NVIDIA H200", "cuda:0")
    assert ceilings.matmul_flops_per_s["bf16"] == pytest.approx(2 * 4096**3 / 1.9e-4)
    assert ceilings.bandwidth_bytes_per_s == pytest.approx(2 * (1 << 28) * 4 / 5.1e-4)
    assert ceilings.bandwidth_beyond_cache
    assert ceilings.flops_fraction_of_datasheet["bf16"] == pytest.approx(
        ceilings.matmul_flops_per_s["bf16"] / 989.4e12, rel=0.02)
    assert 0.8 < ceilings.bandwidth_fraction_of_datasheet < 0.95
    assert "bf16" in ceilings.summary()


def test_ceilings_save_load_and_become_a_roofline_device(tmp_path: Path) -> None:
    from gpuperf_gui.core.hardware import load_database

    ceilings = compute_ceilings([_point(), _point("copy", "fp32", 1 << 26, 2e-3, beyond_cache=True)], "cpu")
    save_ceilings(ceilings, tmp_path)
    loaded = load_ceilings("cpu", tmp_path)
    assert loaded == ceilings
    assert load_ceilings("h200", tmp_path) is None
    device = loaded.to_device(load_database())
    assert device.peak_flops_per_s("bf16") == pytest.approx(ceilings.matmul_flops_per_s["bf16"])
    assert device.memory_bandwidth_bytes_per_s == pytest.approx(ceilings.bandwidth_bytes_per_s)
    assert MeasuredCeilings.from_json_dict(json.loads(json.dumps(ceilings.to_json_dict()))) == ceilings


def test_results_dir_override_and_run_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    assert default_results_dir() == tmp_path / "data" / "bench"
    first = new_run_path("cuda:0")
    ResultsWriter(first).close()
    assert list_runs() == [first]
    assert "-cuda0-" in first.name and RUN_NAME.fullmatch(first.name)


def test_export_csv(tmp_path: Path) -> None:
    path = tmp_path / "points.csv"
    export_csv([_point(), _point("copy", "fp32", 1 << 20, 1e-5)], path)
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["kernel"] == "matmul" and float(rows[0]["flops"]) == 2 * 8192**3
    assert set(DESIGN_KEYS) <= set(rows[0])


def test_merge_keeps_the_best_entry_by_entry_with_its_origin(tmp_path: Path) -> None:
    quick = compute_ceilings([
        _point(dtype="fp32", size=1024, seconds=7.4e-3, timestamp=100.0),      # 290 GFLOP/s
        _point(dtype="bf16", size=1024, seconds=2.2e-3, timestamp=101.0),
        _point("copy", "fp32", 1 << 26, 4e-2, beyond_cache=True, timestamp=102.0),
    ], "cpu", run="quick-run")
    small = compute_ceilings([_point(dtype="fp32", size=64, seconds=6.2e-6, timestamp=200.0)],  # 84 GFLOP/s
                             "cpu", run="small-run")
    assert update_saved_ceilings(quick, tmp_path) == load_ceilings("cpu", tmp_path)
    merged = update_saved_ceilings(small, tmp_path)
    assert merged == load_ceilings("cpu", tmp_path)
    assert merged.matmul_flops_per_s == quick.matmul_flops_per_s  # fp32 not lowered, bf16 not dropped
    assert merged.bandwidth_bytes_per_s == quick.bandwidth_bytes_per_s
    assert merged.matmul_runs == {"fp32": "quick-run", "bf16": "quick-run"}
    assert merged.matmul_measured_at == {"fp32": 100.0, "bf16": 101.0}
    assert (merged.bandwidth_run, merged.bandwidth_measured_at) == ("quick-run", 102.0)
    faster = compute_ceilings([_point(dtype="fp32", size=2048, seconds=4e-2, timestamp=300.0)], "cpu",
                              run="big-run")
    merged = update_saved_ceilings(faster, tmp_path)
    assert merged.matmul_flops_per_s["fp32"] == faster.matmul_flops_per_s["fp32"]
    assert merged.matmul_runs == {"fp32": "big-run", "bf16": "quick-run"}
    assert merged.matmul_labels["fp32"] == "matmul fp32 2048³"
    assert any("big-run" in line for line in merged.sources())
    assert reset_saved_ceilings("cpu", tmp_path) and load_ceilings("cpu", tmp_path) is None
    assert not reset_saved_ceilings("cpu", tmp_path)


def test_merge_prefers_bandwidth_beyond_the_cache_and_ignores_empty_runs(tmp_path: Path) -> None:
    dram = compute_ceilings([_point("copy", "fp32", 1 << 26, 4e-2, beyond_cache=True)], "cpu", run="a")
    in_cache = compute_ceilings([_point("copy", "fp32", 1 << 12, 1e-7, beyond_cache=False)], "cpu", run="b")
    assert in_cache.bandwidth_bytes_per_s > dram.bandwidth_bytes_per_s
    assert merge_ceilings(dram, in_cache).bandwidth_run == "a"
    assert merge_ceilings(in_cache, dram).bandwidth_run == "a"
    assert merge_ceilings(None, in_cache) is in_cache
    update_saved_ceilings(dram, tmp_path)
    empty = compute_ceilings([], "cpu", run="stopped-at-once")
    assert update_saved_ceilings(empty, tmp_path) == load_ceilings("cpu", tmp_path)
    assert load_ceilings("cpu", tmp_path).bandwidth_run == "a"
    save_ceilings(MeasuredCeilings("h200", matmul_flops_per_s={"bf16": 8e14}), tmp_path)
    assert [c.device_id for c in list_saved_ceilings(tmp_path)] == ["cpu", "h200"]


def test_old_ceilings_files_without_provenance_still_load_as_their_own_entry(tmp_path: Path) -> None:
    path = tmp_path / "ceilings" / "cpu.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"device_id": "cpu", "matmul_flops_per_s": {"fp32": 2.9e11},
                                "bandwidth_bytes_per_s": 1e10, "unknown_future_key": 1}))
    old = load_ceilings("cpu", tmp_path)
    assert old.matmul_runs == {} and old.matmul_flops_per_s == {"fp32": 2.9e11}
    assert old.key == (None, "")  # how it was measured is not known: never merged with a run that says
    new = compute_ceilings([_point(dtype="bf16")], "cpu", run="new")
    assert merge_ceilings(old, new) == new  # 2.7 TFLOP/s bf16 beats 290 GFLOP/s: the whole entry, not a mix
    update_saved_ceilings(new, tmp_path)
    entries = load_ceiling_entries("cpu", tmp_path)
    assert [e.key for e in entries] == [(None, ""), (None, "cuda-events")]
    assert entries[0].matmul_flops_per_s == {"fp32": 2.9e11}
    path.write_text("[1, 2]")
    assert load_ceilings("cpu", tmp_path) is None


def test_ceilings_are_saved_per_thread_count_and_method(tmp_path: Path) -> None:
    """The QA case: the CPU measured with 15 threads (GUI) and with 16 (CLI) gave 109 and 214
    GFLOP/s; both were saved as "the" CPU ceiling. Now each is an entry of its own, merged only
    with runs measured the same way, and the one shown says how it was measured."""
    def cpu_run(threads: int, gflops: float, run: str) -> MeasuredCeilings:
        n = 1024
        point = MeasuredPoint(kernel="matmul", dtype="fp32", size=n, flops=2.0 * n**3, bytes=3.0 * n * n * 4,
                              seconds=2.0 * n**3 / (gflops * 1e9), method=f"cpu-perf_counter threads={threads}",
                              iqr_low_s=1e-3, iqr_high_s=1e-3, samples=5, threads=threads)
        return compute_ceilings([point], "cpu", run=run)

    gui, cli = cpu_run(15, 109.0, "gui"), cpu_run(16, 214.0, "cli")
    assert gui.key == (15, "cpu-perf_counter") and cli.key == (16, "cpu-perf_counter")
    update_saved_ceilings(gui, tmp_path)
    update_saved_ceilings(cli, tmp_path)
    update_saved_ceilings(cpu_run(15, 100.0, "gui-again"), tmp_path)  # slower: the 15-thread entry stays 109
    by_key = {e.key: e for e in load_ceiling_entries("cpu", tmp_path)}
    assert by_key[(15, "cpu-perf_counter")].matmul_flops_per_s["fp32"] == pytest.approx(109e9)
    assert by_key[(15, "cpu-perf_counter")].matmul_runs == {"fp32": "gui"}
    assert by_key[(16, "cpu-perf_counter")].matmul_flops_per_s["fp32"] == pytest.approx(214e9)
    shown = load_ceilings("cpu", tmp_path)
    assert shown.matmul_runs == {"fp32": "cli"} and shown.measured_with() == "16 CPU threads, cpu-perf_counter"
    assert shown.summary() == "fp32 214 GFLOP/s (16 CPU threads, cpu-perf_counter)"
    assert load_ceilings("cpu", tmp_path, key=(15, "cpu-perf_counter")).matmul_runs == {"fp32": "gui"}
    saved = json.loads((tmp_path / "ceilings" / "cpu.json").read_text())
    assert [(e["threads"], e["method"]) for e in saved["entries"]] == [(15, "cpu-perf_counter"),
                                                                        (16, "cpu-perf_counter")]


@pytest.mark.parametrize("method, family", [
    ("cuda-events+flush", "cuda-events"), ("cuda-graph x40", "cuda-events"), ("cuda-events", "cuda-events"),
    ("cpu-perf_counter threads=8", "cpu-perf_counter"), ("gloo-perf_counter x20", "gloo-perf_counter"),
])
def test_timer_family_of_a_points_method(method: str, family: str) -> None:
    assert timer_family(method) == family


def test_read_run_never_fails_on_a_line_and_names_an_unreadable_file(tmp_path: Path) -> None:
    import gzip

    from gpuperf_gui.core.bench.results import RunFileError

    path = tmp_path / "run.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cpu"})
        writer.write_point(_point())
    with path.open("ab") as handle:
        handle.write(b"\xff\xfe\x00 not utf-8\n5\n[1, 2]\n")
    run = read_run(path)
    assert len(run.points) == 1 and run.torn_lines == 3
    gz = tmp_path / "run.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(RunFileError, match="not a benchmark run"):
        read_run(gz)
    with pytest.raises(RunFileError, match="cannot read"):
        read_run(tmp_path)  # a folder
    with pytest.raises(RunFileError, match="cannot read"):
        read_run(tmp_path / "missing.jsonl")


def test_format_clock() -> None:
    from gpuperf_gui.core.units import format_clock

    assert [format_clock(s) for s in (None, -3, 0.4, 59.6, 125)] == ["0:00", "0:00", "0:00", "1:00", "2:05"]
