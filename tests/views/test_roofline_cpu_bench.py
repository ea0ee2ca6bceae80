"""After a CPU benchmark the Roofline shows the cpu at once: its measured roofs, its points in the
Points table and on hover, each point only against its own precision's roof, and cache roofs (L2,
L3 bandwidth from the copy points whose working set fits there) for cache-resident points.

The run is tests/data/bench/cpu_cache_run.jsonl: a real `gpuperf bench --device cpu --kernels
matmul,copy --dtypes fp32,bf16 --sizes 128,512 --warmup-ms 5 --rep-ms 20` on this project's 2-core
Xeon VM (L1d 48 KiB, L2 2 MiB per core, L3 480 MiB shared, as lscpu reports). Expected figures are
worked out here from the file's raw records (FLOPs, bytes, seconds, working sets) and those cache
sizes, not by the code under test."""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Iterator

import pytest

from gpuperf_gui.core.bench.results import read_run

RUN = Path(__file__).resolve().parents[1] / "data" / "bench" / "cpu_cache_run.jsonl"
KIB, MIB = 1024, 1024**2
# lscpu on the machine that made the run: 2 cores, L1d 48 KiB and L2 2 MiB per core, L3 480 MiB shared
L1_BYTES, L2_BYTES, L3_BYTES, THREADS = 48 * KIB * 2, 2 * MIB * 2, 480 * MIB, 2


def _records(kind: str) -> list[dict]:
    return [r for r in map(json.loads, RUN.read_text().splitlines()) if r["type"] == kind]


def _level(working_set: int) -> str:
    return next((name for name, size in (("L1", L1_BYTES), ("L2", L2_BYTES), ("L3", L3_BYTES))
                 if working_set <= size), "memory")


def _best_copy(level: str) -> float:
    return max(p["bytes"] / p["seconds"] for p in _records("point")
               if p["kernel"] == "copy" and _level(p["working_set_bytes"]) == level)


def _peak(dtype: str) -> float:
    return max(p["flops"] / p["seconds"] for p in _records("point")
               if p["kernel"] == "matmul" and p["dtype"] == dtype)


@pytest.fixture
def window(make_main_window, monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    return make_main_window(device_id="h100-sxm", precision="bf16")


def _replay(run_path: Path):
    """The run's records as the measuring loop yields them (the live path, without torch)."""
    run = read_run(run_path)

    def produce(stop: threading.Event) -> Iterator[object]:
        yield from run.points
        yield run.ceilings
    return produce


def _rows(tab) -> dict[str, list[str]]:
    table = tab.points_table
    return {table.item(r, 0).text(): [table.item(r, c).text() for c in range(table.columnCount())]
            for r in range(table.rowCount())}


def test_a_live_cpu_run_draws_the_cpu_roofs_points_and_cache_roofs_at_once(qtbot, window):
    bench, roofline = window.bench_tab, window.roofline_tab
    qtbot.waitUntil(lambda: not bench.is_busy(), timeout=5000)          # the (empty) autoload
    assert window.context.device_id == "h100-sxm"                       # the toolbar stays on the GPU
    with qtbot.waitSignal(bench.benchmark_finished, timeout=10_000):
        bench.start_with(_replay(RUN))
    # offered at once: the cpu joins the comparison with its measured roofs (bf16: the toolbar's)
    assert "cpu" in roofline.selected_device_ids()
    labels = [r.label for r in roofline.roofs()]
    assert labels[:2] == ["h100-sxm bf16", "cpu bf16 measured"]
    assert "cpu bf16 L2 measured" in labels and "cpu bf16 L3 measured" in labels
    assert "cpu drawn beside h100-sxm" in roofline.status_label.text()
    roofs = {r.label: r for r in roofline.canvas._roofs}
    assert roofs["cpu bf16 measured"].peak_flops_per_s == pytest.approx(_peak("bf16"))
    assert roofs["cpu bf16 L2 measured"].bandwidth_bytes_per_s == pytest.approx(_best_copy("L2"))
    assert roofs["cpu bf16 L3 measured"].bandwidth_bytes_per_s == pytest.approx(_best_copy("L3"))
    assert roofs["cpu bf16 measured"].bandwidth_bytes_per_s == pytest.approx(_best_copy("memory"))
    # the bf16 points are in the Points table; the fp32 ones are not drawn on a bf16 roof
    qtbot.waitUntil(lambda: any("matmul bf16 512³" in name for name in _rows(roofline)), timeout=2000)
    rows = _rows(roofline)
    assert not any("fp32" in name for name in rows)
    assert "not drawn: 2 cpu fp32 points" in roofline.status_label.text()
    # matmul bf16 512³: 1.5 MiB working set, in L2 (4 MiB for two cores): judged against the L2 roof
    point = next(p for p in _records("point") if p["kernel"] == "matmul" and p["dtype"] == "bf16"
                 and p["size"] == 512)
    assert _level(point["working_set_bytes"]) == "L2"
    achieved = point["flops"] / point["seconds"]
    attainable = min(_peak("bf16"), _best_copy("L2") * point["flops"] / point["bytes"])
    cells = rows["matmul bf16 512³ · in L2"]
    assert cells[4] == f"{100 * achieved / attainable:.1f} %"
    tip = roofline.points_table.item(list(rows).index("matmul bf16 512³ · in L2"), 0).toolTip()
    assert "cache-resident" in tip and "L2 roof" in tip
    # on hover: each drawn point says what it is
    qtbot.waitUntil(lambda: len(roofline.canvas.measured_tips("benchmark points (cpu)")) == 2, timeout=2000)
    tips = roofline.canvas.measured_tips("benchmark points (cpu)")
    assert len(tips) == 2 and any(t.startswith("matmul bf16 512³ on cpu") for t in tips)


def test_points_are_drawn_only_against_their_own_precisions_roof(qtbot, window):
    bench, roofline = window.bench_tab, window.roofline_tab
    qtbot.waitUntil(lambda: not bench.is_busy(), timeout=5000)
    with qtbot.waitSignal(bench.benchmark_finished, timeout=10_000):
        bench.start_with(_replay(RUN))
    window.device_combo.setCurrentIndex(window.device_combo.findData("cpu"))
    roofline.set_devices([])
    roofline.set_precisions(["fp32"])
    qtbot.waitUntil(lambda: roofline.canvas.measured_series() == {"benchmark points (cpu)": 2}, timeout=2000)
    assert {r.precision for r in roofline.canvas._roofs} == {"fp32"}
    assert roofline.canvas.measured_series() == {"benchmark points (cpu)": 2}
    fp32 = sorted((p["flops"] / p["bytes"], p["flops"] / p["seconds"]) for p in _records("point")
                  if p["kernel"] == "matmul" and p["dtype"] == "fp32")
    item = roofline.canvas._measured["benchmark points (cpu)"][1]
    drawn = sorted(zip(10 ** item.data["x"], 10 ** item.data["y"]))
    assert len(drawn) == len(fp32) == 2
    for (ai, rate), (x, y) in zip(fp32, drawn):
        assert x == pytest.approx(ai) and y == pytest.approx(rate)
    assert "2 cpu bf16 points" in roofline.status_label.text()


def test_the_latest_cli_run_is_on_the_roofline_when_the_app_opens(qtbot, make_main_window, monkeypatch, tmp_path):
    """`gpuperf bench --device cpu` wrote a run; the window opens on a GPU: the cpu is drawn beside it."""
    runs = tmp_path / "data" / "bench" / "runs"
    runs.mkdir(parents=True)
    shutil.copy(RUN, runs / "20261201-230121-cpu.jsonl")
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    window = make_main_window(device_id="h200", precision="bf16")
    qtbot.waitUntil(lambda: not window.bench_tab.is_busy(), timeout=5000)
    roofline = window.roofline_tab
    assert roofline.selected_device_ids() == ["h200", "cpu"]
    assert window.device_combo.findData("cpu") >= 0                 # and in the toolbar's picker
    labels = [r.label for r in roofline.canvas._roofs]
    assert "cpu bf16 measured" in labels and "cpu bf16 L2 measured" in labels
    sources = roofline.cache_roof_sources("cpu")
    assert sources == ["copy fp32 64 KiB: 128 KiB working set, in L2", "copy fp32 4 MiB: 8 MiB working set, in L3"]


def test_a_measured_only_device_draws_its_measured_precisions(qtbot, window):
    """The toolbar says fp8; the cpu measured fp32 and bf16: those are drawn, and the note says why
    (not "the cpu is known only after a benchmark run")."""
    bench, roofline = window.bench_tab, window.roofline_tab
    qtbot.waitUntil(lambda: not bench.is_busy(), timeout=5000)
    with qtbot.waitSignal(bench.benchmark_finished, timeout=10_000):
        bench.start_with(_replay(RUN))
    window.device_combo.setCurrentIndex(window.device_combo.findData("cpu"))
    window.precision_combo.setCurrentText("fp8")
    roofline.set_devices([])
    memory = [r.label for r in roofline.canvas._roofs if not r.level]
    assert memory == ["cpu fp32 measured", "cpu bf16 measured"]
    text = roofline.status_label.text()
    assert "no fp8 measured" in text and "known only after" not in text


def test_before_any_cpu_run_the_note_says_how_to_get_its_roofs(qtbot):
    from gpuperf_gui.core.hardware import load_database
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.roofline_tab import RooflineTab

    tab = RooflineTab(AppContext(database=load_database(), device_id="cpu", precision="fp32"))
    qtbot.addWidget(tab)
    assert tab.roofs() == []
    assert "once a benchmark measured it: Benchmarks, device cpu" in tab.status_label.text()
