"""Benchmarks tab with a fake measuring generator (no torch): streaming, plots, stop, runs on disk."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest
from PySide6.QtCore import QElapsedTimer, QObject, QTimer

from gpuperf_gui.core.bench.ceilings import compute_ceilings
from gpuperf_gui.core.bench.points import BenchMessage, MeasuredPoint
from gpuperf_gui.core.bench.results import ResultsWriter
from gpuperf_gui.core.roofline import RooflinePoint


def fake_point(n: int, seconds: float = 1e-3, kernel: str = "matmul") -> MeasuredPoint:
    if kernel == "matmul":
        flops, nbytes = 2.0 * n**3, 3.0 * n * n * 4
    else:
        flops, nbytes = 0.0, 2.0 * n * 4
    return MeasuredPoint(kernel=kernel, dtype="fp32", size=n, flops=flops, bytes=nbytes, seconds=seconds,
                         method="fake", iqr_low_s=seconds, iqr_high_s=seconds, samples=5,
                         working_set_bytes=int(nbytes), beyond_cache=True)


def fake_factory(sizes: list[int], delay_s: float = 0.0, gate: threading.Event | None = None,
                 busy_python_s: float = 0.0) -> Callable:
    """A measuring generator like iter_measurements, without torch."""
    def factory(plan) -> Callable[[threading.Event], Iterator[object]]:
        def produce(stop: threading.Event) -> Iterator[object]:
            measured = []
            for index, n in enumerate(sizes):
                if stop.is_set():
                    yield BenchMessage("stopped", f"stopped after {len(measured)} of {len(sizes)} points",
                                       len(measured), len(sizes))
                    break
                yield BenchMessage("started", f"measuring {n}", index, len(sizes), f"matmul fp32 {n}³",
                                   eta_s=(len(sizes) - index) * delay_s)
                if gate is not None:
                    gate.wait(5)
                    gate.clear()
                time.sleep(delay_s)
                deadline = time.perf_counter() + busy_python_s  # GIL-holding work, like a compile
                while time.perf_counter() < deadline:
                    sum(range(200))
                point = fake_point(n, 1e-3 * n / 64)
                measured.append(point)
                yield point
            yield compute_ceilings(measured, "cpu", "fake CPU", "cpu", complete=not stop.is_set())
        return produce
    return factory


@pytest.fixture
def make_tab(qtbot, tmp_path):
    from gpuperf_gui.views.benchmark_tab import BenchmarkTab
    from gpuperf_gui.views.context import AppContext

    tabs = []

    def factory(measurements_factory=None, autoload_latest: bool = False):
        tab = BenchmarkTab(AppContext(device_id="cpu"), measurements_factory=measurements_factory,
                           results_dir=tmp_path / "bench", autoload_latest=autoload_latest)
        qtbot.addWidget(tab)
        tabs.append(tab)
        return tab

    yield factory
    for tab in tabs:
        tab.shutdown()


class StallMeter(QObject):
    """Largest gap between ticks of a 5 ms timer: how long the event loop was blocked."""

    def __init__(self, interval_ms: int = 5) -> None:
        super().__init__()
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._on_tick)
        self._last_ms = 0
        self.max_gap_ms = 0

    def start(self) -> None:
        self._clock.start()
        self._last_ms = 0
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _on_tick(self) -> None:
        now = self._clock.elapsed()
        self.max_gap_ms = max(self.max_gap_ms, now - self._last_ms)
        self._last_ms = now


def test_points_stream_into_table_plot_and_roofline_signal(qtbot, make_tab) -> None:
    sizes = [64, 128, 256, 512, 1024]
    tab = make_tab(fake_factory(sizes, delay_s=0.01))
    roofline_points: list[RooflinePoint] = []
    ceilings = []
    tab.point_measured.connect(roofline_points.append)
    tab.ceilings_measured.connect(ceilings.append)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=10000):
        assert tab.start()
        assert tab.is_busy()
    assert not tab.is_busy()
    assert [p.size for p in tab.current_points] == sizes
    assert tab.table_model.rowCount() == len(sizes)
    assert [p.kind for p in roofline_points] == ["measured"] * len(sizes)
    assert roofline_points[0].flops == 2 * 64**3
    assert ceilings and ceilings[0].matmul_flops_per_s["fp32"] > 0
    x, y = tab.series_data("matmul", "matmul fp32")
    assert list(x) == sizes and (y > 0).all()
    assert "fp32" in tab.ceilings_label.text()
    assert tab.progress_bar.value() == tab.progress_bar.maximum()


def test_plot_updates_while_the_run_goes_on(qtbot, make_tab) -> None:
    gate = threading.Event()
    tab = make_tab(fake_factory([64, 128, 256], gate=gate))
    tab.start()
    gate.set()
    qtbot.waitUntil(lambda: len(tab.series_data("matmul", "matmul fp32")[0]) == 1, timeout=5000)
    assert tab.is_busy() and "(2/3)" in tab.status_label.text()  # next point announced
    gate.set()
    qtbot.waitUntil(lambda: len(tab.series_data("matmul", "matmul fp32")[0]) == 2, timeout=5000)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=5000):
        gate.set()
    assert len(tab.series_data("matmul", "matmul fp32")[0]) == 3


def test_redraws_are_throttled_to_the_timer(qtbot, make_tab) -> None:
    from gpuperf_gui.views.benchmark_tab import REDRAW_INTERVAL_MS

    sizes = list(range(1, 401))
    tab = make_tab(fake_factory(sizes))
    started = time.monotonic()
    with qtbot.waitSignal(tab.benchmark_finished, timeout=20000):
        tab.start()
    elapsed_s = time.monotonic() - started
    assert len(tab.current_points) == 400
    # At most one redraw per timer tick (+1 at the end of the run, +1 for a tick already due).
    assert 1 <= tab.redraw_count <= elapsed_s / (REDRAW_INTERVAL_MS / 1000) + 2, (tab.redraw_count, elapsed_s)
    assert len(tab.series_data("matmul", "matmul fp32")[0]) == 400


def test_stop_ends_the_run_after_the_point_in_progress(qtbot, make_tab) -> None:
    tab = make_tab(fake_factory([64] * 200, delay_s=0.02))
    ceilings = []
    tab.ceilings_measured.connect(ceilings.append)
    tab.start()
    qtbot.waitUntil(lambda: len(tab.current_points) >= 2, timeout=5000)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=5000):
        tab.stop()
    done = len(tab.current_points)
    assert done < 200
    assert tab.start_button.isEnabled() and not tab.stop_button.isEnabled()
    # The status and the bar say how far it got, not the point that was in progress / 100 %.
    assert tab.status_label.text() == f"Stopped after {done} of 200 points"
    assert (tab.progress_bar.value(), tab.progress_bar.maximum()) == (done, 200)
    # The ceilings of the points measured so far still reach the Roofline tab.
    assert len(ceilings) == 1 and ceilings[0].matmul_flops_per_s["fp32"] > 0
    assert tab.current_ceilings is not None and not tab.current_ceilings.complete
    assert "stopped early" in tab.ceilings_label.text()


def test_a_failing_generator_reports_and_finishes(qtbot, make_tab) -> None:
    def factory(plan):
        def produce(stop):
            yield fake_point(64)
            raise RuntimeError("driver went away")
        return produce

    tab = make_tab(factory)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=5000):
        tab.start()
    assert "driver went away" in tab.status_label.text()
    assert len(tab.current_points) == 1


def test_bad_sizes_do_not_start_and_mark_the_field(qtbot, make_tab) -> None:
    tab = make_tab(fake_factory([64]))
    tab.sizes_edit.setText("12,abc")
    assert not tab.start()
    assert tab.status_label.text().startswith("sizes must be whole numbers like 1024,4096")
    assert "invalid literal" not in tab.status_label.text()
    assert tab.field_is_marked("sizes")
    qtbot.keyClick(tab.sizes_edit, "x")  # editing clears the mark
    assert not tab.field_is_marked("sizes")
    tab.sizes_edit.setText("-5")
    assert not tab.start() and tab.field_is_marked("sizes")
    tab.sizes_edit.setText(" 64, 128 ")
    assert tab.plan_from_controls().matmul_sizes == (64, 128)


def test_reopen_compare_and_export(qtbot, make_tab, tmp_path: Path) -> None:
    points = [fake_point(n) for n in (64, 128)] + [fake_point(1 << 20, 1e-4, "copy")]
    path = tmp_path / "bench" / "runs" / "20260101-000000-cpu.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cpu"})
        for point in points:
            writer.write_point(point)
        writer.write_ceilings(compute_ceilings(points, "cpu"))
    tab = make_tab(fake_factory([64]), autoload_latest=True)
    emitted = []
    tab.point_measured.connect(emitted.append)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=5000)
    assert len(tab.current_points) == 3  # the latest run was loaded at start
    assert tab.table_model.rowCount() == 3
    assert len(tab.series_data("memory", "copy fp32")[0]) == 1
    tab.open_run(path)  # again, beside it, for comparison
    assert tab.table_model.rowCount() == 6
    assert len(tab.series_data("matmul", "20260101-000000-cpu: matmul fp32")[0]) == 2
    assert len(emitted) == 4  # matmul points only (copy has no FLOPs) – two loads
    tab.export_csv(tmp_path / "out.csv")
    tab.export_json(tmp_path / "out.json")
    assert (tmp_path / "out.csv").read_text().count("\n") == 7
    assert '"ceilings"' in (tmp_path / "out.json").read_text()


def test_event_loop_stays_responsive_during_a_run(qtbot, make_tab) -> None:
    """The largest event-loop stall while a (GIL-holding) fake run streams points."""
    tab = make_tab(fake_factory([64] * 40, delay_s=0.005, busy_python_s=0.02))
    meter = StallMeter()
    meter.start()
    with qtbot.waitSignal(tab.benchmark_finished, timeout=20000):
        tab.start()
    meter.stop()
    assert meter.max_gap_ms < 200, meter.max_gap_ms  # loose here (shared CI cores); see benchmarks/bench_stall.py


def test_constructs_with_the_real_factory_and_shuts_down(qtbot, make_tab, monkeypatch, tmp_path: Path) -> None:
    """Without a factory the tab runs core.bench.sweep:iter_run_and_save in the helper process, with the
    plan, its results folder, the collectives when ticked, the worker's stop event and the grace."""
    from gpuperf_gui.views import benchmark_tab

    calls = []

    def fake_iter_in_child(target, args, kwargs, *, stop, grace_s, nice):
        calls.append((target, args, kwargs, stop, grace_s, nice))
        yield fake_point(64)
    monkeypatch.setattr(benchmark_tab, "iter_in_child", fake_iter_in_child)
    tab = make_tab()
    plan = tab.plan_from_controls()
    assert plan.device == "auto" and plan.results_path is not None
    assert not tab.is_busy()
    tab.device_combo.setCurrentText("cpu")
    tab.collectives_box.setChecked(True)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=5000):
        assert tab.start()
    (target, (run_plan,), kwargs, stop, grace_s, nice), = calls
    assert target == "gpuperf_gui.core.bench.sweep:iter_run_and_save" and grace_s == benchmark_tab.STOP_GRACE_S
    assert run_plan.device == "cpu" and run_plan.cpu_threads == len(os.sched_getaffinity(0))  # as the CLI
    assert run_plan.results_path.parent == tmp_path / "bench" / "runs"
    assert kwargs["results_dir"] == tmp_path / "bench" and kwargs["collectives"] == "quick"  # planned in the child
    assert not stop.is_set() and nice == 10
    assert [p.size for p in tab.current_points] == [64]


def test_autoload_gives_the_roofline_the_saved_best_and_shows_the_runs_own(qtbot, make_tab,
                                                                           tmp_path: Path) -> None:
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, load_ceilings, save_ceilings

    results = tmp_path / "bench"
    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11, "bf16": 9e11},
                                   bandwidth_bytes_per_s=1.2e10, matmul_runs={"fp32": "big", "bf16": "big"}),
                  results)
    save_ceilings(MeasuredCeilings("h200", matmul_flops_per_s={"bf16": 8e14}), results)
    small = [fake_point(64, 1e-4)]  # 5.2 GFLOP/s fp32: worse than the saved 290
    path = results / "runs" / "20260101-000000-cpu.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cpu"})
        writer.write_point(small[0])
        writer.write_ceilings(compute_ceilings(small, "cpu", run=path.stem))
    tab = make_tab(fake_factory([64]), autoload_latest=True)
    emitted = []
    tab.ceilings_measured.connect(emitted.append)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=5000)
    by_device = {c.device_id: c for c in emitted}
    assert set(by_device) == {"cpu", "h200"} and len(emitted) == 2
    cpu = by_device["cpu"]
    assert cpu.matmul_flops_per_s == {"fp32": 2.9e11, "bf16": 9e11} and cpu.bandwidth_bytes_per_s == 1.2e10
    assert load_ceilings("cpu", results).matmul_flops_per_s["fp32"] == 2.9e11  # the GUI never writes
    label = tab.ceilings_label.text()
    assert label.startswith("This run (cpu, 20260101-000000-cpu): fp32 5.24 GFLOP/s")
    assert "best so far" in label and "fp32 290 GFLOP/s · bf16 900 GFLOP/s · 12 GB/s" in label


def test_empty_plots_legends_and_table_columns(qtbot, make_tab) -> None:
    tab = make_tab(fake_factory([64, 128]))
    tab.resize(1400, 900)
    tab.show()
    memory = tab.plot_items["memory"]
    (x0, x1), (y0, y1) = memory.viewRange()
    assert x1 - x0 >= 3 and y1 - y0 >= 3  # decades, not pyqtgraph's 1..10 ("2 B", "5 B/s")
    assert 8.5 <= y0 and y1 <= 13.5
    with qtbot.waitSignal(tab.benchmark_finished, timeout=5000):
        tab.start()
    legend = tab.legends["matmul"]
    assert [label.text for _sample, label in legend.items] == ["matmul fp32"]
    assert legend.parentItem() is not tab.plot_items["matmul"].vb  # under the plot, not on it
    plot_rect = tab.plot_items["matmul"].sceneBoundingRect
    qtbot.waitUntil(lambda: legend.sceneBoundingRect().top() >= plot_rect().bottom(), timeout=3000)
    (mx0, mx1), (my0, my1) = tab.plot_items["matmul"].viewRange()
    assert mx0 < np.log10(64) and np.log10(128) < mx1 < 3  # follows the data (64..128), not the default
    assert mx1 - mx0 >= 0.99 and my1 - my0 >= 0.99  # a decade at least: a 1-2-5 tick to label
    method = tab.table_model.COLUMNS.index("method")
    fm = tab.table.fontMetrics()
    assert tab.table.columnWidth(method) >= fm.horizontalAdvance("fake")
    assert tab.table.columnWidth(method) >= fm.horizontalAdvance("method")


def test_stop_with_the_real_helper_process_keeps_and_saves_partial_ceilings(qtbot, make_tab,
                                                                            tmp_path: Path) -> None:
    """The QA case: Stop during a real CPU run (torch in the helper process)."""
    from gpuperf_gui.core.bench.ceilings import load_ceilings

    tab = make_tab()
    tab.device_combo.setCurrentText("cpu")
    tab.suite_combo.setCurrentText("custom")
    tab.dtype_boxes["fp32"].setChecked(True)
    tab.sizes_edit.setText("64,96,128,160,192,224,256")
    ceilings = []
    tab.ceilings_measured.connect(ceilings.append)
    assert tab.start()
    qtbot.waitUntil(lambda: len(tab.current_points) >= 2, timeout=60000)
    with qtbot.waitSignal(tab.benchmark_finished, timeout=60000):
        tab.stop()
    done = len(tab.current_points)
    total = tab.progress_bar.maximum()
    assert total > done >= 2
    assert tab.status_label.text() == f"Stopped after {done} of {total} points"
    assert tab.progress_bar.value() == done
    assert len(ceilings) == 1 and not tab.current_ceilings.complete
    # the best reliable point becomes the ceiling (a point whose calls spread wide on a busy machine
    # never does: core/bench/noise.py); with none reliable there is no fp32 ceiling to save
    reliable = [p.flops_per_s for p in tab.current_points if p.reliable]
    if not reliable:
        assert "fp32" not in ceilings[0].matmul_flops_per_s
        return
    assert ceilings[0].matmul_flops_per_s["fp32"] == pytest.approx(max(reliable))
    saved = load_ceilings("cpu", tmp_path / "bench")
    assert saved is not None and saved.matmul_flops_per_s["fp32"] == pytest.approx(max(reliable))


def test_unreadable_runs_and_failed_exports_go_to_the_status_line(qtbot, make_tab, monkeypatch,
                                                                 tmp_path: Path) -> None:
    import gzip

    from gpuperf_gui.views import benchmark_tab

    binary = tmp_path / "run.jsonl.gz"
    binary.write_bytes(gzip.compress(b'{"type": "run", "device": "cpu"}\n' * 50))
    tab = make_tab(fake_factory([64]))
    monkeypatch.setattr(benchmark_tab.QFileDialog, "getOpenFileName", lambda *a, **k: (str(binary), ""))
    tab.open_button.click()  # a slot that raised would fail the test (pytest-qt)
    assert tab.status_label.text().startswith("Could not open run.jsonl.gz: ")
    assert tab.table_model.rowCount() == 0
    monkeypatch.setattr(benchmark_tab.QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path), ""))
    tab.csv_button.click()  # a folder, not a file
    assert tab.status_label.text().startswith(f"Could not write {tmp_path}")
    tab.json_button.click()
    assert tab.status_label.text().startswith(f"Could not write {tmp_path}")
    monkeypatch.setattr(benchmark_tab.QFileDialog, "getSaveFileName",
                        lambda *a, **k: (str(tmp_path / "out.csv"), ""))
    tab.csv_button.click()
    assert tab.status_label.text() == f"Exported to {tmp_path / 'out.csv'}"


def test_autoload_with_a_corrupt_newest_run_still_starts(qtbot, make_tab, tmp_path: Path) -> None:
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, save_ceilings

    results = tmp_path / "bench"
    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}), results)
    corrupt = results / "runs" / "20260101-000000-cpu.jsonl"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes(bytes(range(256)) * 8)
    tab = make_tab(fake_factory([64]), autoload_latest=True)
    emitted = []
    tab.ceilings_measured.connect(emitted.append)
    qtbot.waitUntil(lambda: not tab.is_busy(), timeout=5000)
    assert tab.status_label.text().startswith("Could not open the latest run: ")
    assert [c.device_id for c in emitted] == ["cpu"]  # the saved ceilings still reach the Roofline
    assert tab.start_button.isEnabled()


def test_table_reads_sizes_like_the_cli_and_rates_with_a_sensible_prefix(qtbot) -> None:
    from gpuperf_gui.views.benchmark_tab import ResultsModel

    model = ResultsModel()
    copy = MeasuredPoint(kernel="copy", dtype="fp32", size=8192, flops=0.0, bytes=65536.0, seconds=4e-6,
                         method="cpu-perf_counter", iqr_low_s=4e-6, iqr_high_s=4e-6, samples=5,
                         working_set_bytes=65536, threads=16)
    small = MeasuredPoint(kernel="matmul", dtype="fp32", size=64, flops=2.0 * 64**3, bytes=3.0 * 64**2 * 4,
                          seconds=2.0 * 64**3 / 9e9, method="cpu-perf_counter", iqr_low_s=1e-5,
                          iqr_high_s=1e-5, samples=5, threads=16)
    model.append("this run", copy)
    model.append("this run", small)
    cell = {name: i for i, name in enumerate(ResultsModel.COLUMNS)}
    assert model.data(model.index(0, cell["size"])) == "64 KiB"          # `gpuperf bench` prints 64 KiB
    assert model.data(model.index(0, cell["bandwidth"])) == "16.4 GB/s"  # 65536 B in 4 µs
    assert model.data(model.index(1, cell["rate"])) == "9 GFLOP/s"       # not "0.009 TFLOP/s"
    assert model.data(model.index(1, cell["threads"])) == "16"


def test_saved_ceiling_dates_are_in_the_locale_format(qtbot):
    import time

    from PySide6.QtCore import QLocale

    from gpuperf_gui.views.benchmark_tab import format_local_time

    stamp = 1764627300.0
    t = time.localtime(stamp)
    before = QLocale()
    try:
        QLocale.setDefault(QLocale(QLocale.Language.German, QLocale.Country.Germany))
        assert format_local_time(stamp) == f"{t.tm_mday:02d}.{t.tm_mon:02d}.{t.tm_year % 100:02d} {t.tm_hour:02d}:{t.tm_min:02d}"
        QLocale.setDefault(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates))
        assert format_local_time(stamp).startswith(f"{t.tm_mon}/{t.tm_mday}/{t.tm_year % 100:02d}")
    finally:
        QLocale.setDefault(before)
