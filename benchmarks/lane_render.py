"""Repaint and fold figures of the Trace tab's lanes on a synthetic 1M-event trace.

Prints the median repaint time of the timeline (1600x1000, offscreen) at several zoom levels and
the time to fold one 1M-event row; budgets: repaint median < 16 ms, fold < 30 ms.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/lane_render.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

from gpuperf_gui.core.trace.model.lod import RowIndex, fold_row  # noqa: E402
from gpuperf_gui.core.trace.model.trace_model import Flows, Lane, RankTrace, StepWindow, StringTable, TraceModel  # noqa: E402

REPAINT_BUDGET_MS = 16.0
FOLD_BUDGET_MS = 30.0


def synthetic_model(n_events: int = 1_000_000, seed: int = 0) -> TraceModel:
    """One rank: a CPU thread (op + launch per kernel, two depth rows) and a GPU stream.

    A third of the events are kernels: mostly 2-40 µs, a few long GEMMs, heavy-tailed gaps (so that
    every zoom level has structure to draw), a data stall between steps; the other two thirds are
    the CPU ops and the launches that issued them.
    """
    rng = np.random.default_rng(seed)
    n_k = n_events // 3
    strings = StringTable(["cpu_op", "cuda_runtime", "kernel", "cudaLaunchKernel"])
    kernel_names = [f"kernel_{i}" for i in range(40)]
    op_names = [f"aten::op_{i}" for i in range(40)]
    name_ids_k = np.array([strings.intern(s) for s in kernel_names], dtype=np.int32)
    name_ids_o = np.array([strings.intern(s) for s in op_names], dtype=np.int32)
    which = rng.integers(0, 40, n_k)
    dur = np.where(rng.random(n_k) < 0.97, rng.uniform(2, 40, n_k), rng.uniform(200, 3000, n_k))
    gap = rng.lognormal(0.5, 2.0, n_k)
    idx = np.arange(n_k)
    gap += np.where(idx % 10 == 0, 5.0, 0.0) + np.where(idx % 100 == 0, 60.0, 0.0)
    gap += np.where(idx % 1000 == 0, 700.0, 0.0) + np.where(idx % 10000 == 0, 9000.0, 0.0)
    steps = 20
    step_of = np.arange(n_k) * steps // n_k
    gap[np.flatnonzero(np.diff(step_of)) + 1] += 30_000.0      # a data stall between steps
    k_start = np.cumsum(gap + np.concatenate(([0.0], dur[:-1])))
    cpu_start = k_start - 50.0 - rng.uniform(0, 20, n_k)
    cpu_start = np.maximum.accumulate(cpu_start)
    op_dur = np.minimum(rng.uniform(3, 8, n_k), np.diff(np.concatenate((cpu_start, [cpu_start[-1] + 9]))) * 0.9)
    launch_start = cpu_start + op_dur * 0.3
    launch_dur = op_dur * 0.5
    cpu_s = np.empty(2 * n_k)
    cpu_d = np.empty(2 * n_k)
    cpu_s[0::2], cpu_s[1::2] = cpu_start, launch_start
    cpu_d[0::2], cpu_d[1::2] = op_dur, launch_dur
    depth = np.tile(np.array([0, 1], dtype=np.int16), n_k)
    cat = np.tile(np.array([0, 1], dtype=np.int32), n_k)
    names = np.empty(2 * n_k, dtype=np.int32)
    names[0::2], names[1::2] = name_ids_o[which], 3
    t0 = float(cpu_s[0])
    cpu_s -= t0
    k_start = k_start - t0
    n_cpu = 2 * n_k

    def lane(lane_id, kind, label, s, d, nm, ct, dp, kc):  # noqa: ANN001, ANN202
        n = s.size
        return Lane(lane_id, kind, label, 1, lane_id, device=0 if kind != "cpu" else None,
                    stream=7 if kind != "cpu" else None, start_us=s, duration_us=d, name_id=nm,
                    category_id=ct, depth=dp, correlation=np.full(n, -1, np.int64),
                    external_id=np.full(n, -1, np.int64), kernel_class=kc,
                    bytes=np.full(n, np.nan), flops=np.full(n, np.nan), shapes_id=np.full(n, -1, np.int32))

    cpu = lane(0, "cpu", "thread 1 (python)", cpu_s, cpu_d, names, cat, depth, np.full(n_cpu, -1, np.int8))
    gpu = lane(1, "gpu_compute", "GPU 0 stream 7", k_start, dur, name_ids_k[which], np.full(n_k, 2, np.int32),
               np.zeros(n_k, np.int16), (which % 6).astype(np.int8))
    bounds = np.searchsorted(step_of, np.arange(steps + 1))
    step_windows = [StepWindow(i, float(cpu_s[2 * bounds[i]]), float(cpu_s[2 * bounds[i + 1] - 2]),
                               float(k_start[bounds[i]]), float(k_start[bounds[i + 1] - 1]))
                    for i in range(steps)]
    end = float(max(cpu_s[-1] + cpu_d[-1], k_start[-1] + dur[-1]))
    rank = RankTrace(0, "synthetic", 0.0, (0.0, end), strings, [cpu, gpu], step_windows, Flows(),
                     device_name="synthetic", n_events=n_events)
    return TraceModel([rank])


def fold_figures(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(1)
    dur = np.where(rng.random(n) < 0.97, rng.uniform(2, 40, n), rng.uniform(200, 3000, n))
    starts = np.cumsum(rng.lognormal(0.5, 2.0, n) + np.concatenate(([0.0], dur[:-1])))
    ends = starts + dur
    t = time.perf_counter()
    index = RowIndex(starts, ends)
    build_ms = (time.perf_counter() - t) * 1e3
    total = ends[-1] - starts[0]
    print(f"fold of one {n:,}-event row, 1600 px (index built once in the loader: {build_ms:.0f} ms)")
    worst = 0.0
    for zoom in (1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5):
        vs = starts[0] + 0.5 * total * (1 - zoom)
        ve = vs + zoom * total
        for label, call in (("indexed", lambda: fold_row(index, None, vs, ve, 1600)),
                            ("unindexed", lambda: fold_row(starts, ends, vs, ve, 1600))):
            times = []
            for _ in range(7):
                t = time.perf_counter()
                row = call()
                times.append((time.perf_counter() - t) * 1e3)
            med = statistics.median(times)
            if label == "indexed":
                worst = max(worst, med)
            print(f"  zoom {zoom:>7g}  {label:9s} {med:6.2f} ms  rects {len(row):5d} "
                  f"(folded {int((row.count > 1).sum())})")
    print(f"fold worst median (indexed): {worst:.2f} ms  budget {FOLD_BUDGET_MS:.0f} ms  "
          f"{'OK' if worst < FOLD_BUDGET_MS else 'OVER'}")


def repaint_figures(model: TraceModel | None = None, title: str = "synthetic") -> None:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.core.trace.model.lanes import full_range, prepare_lanes
    from gpuperf_gui.views.trace.style import make_palette
    from gpuperf_gui.views.trace.timeline import TraceTimeline

    app = QApplication.instance() or QApplication(sys.argv)
    model = synthetic_model() if model is None else model
    t = time.perf_counter()
    ranks, lanes = prepare_lanes(model)
    prep_s = time.perf_counter() - t
    n = sum(len(ln) for r in model.ranks for ln in r.lanes)
    timeline = TraceTimeline()
    timeline.resize(1600, 1000)
    timeline.show()
    timeline.set_lanes(ranks, lanes, make_palette(), full_range(model))
    app.processEvents()
    print(f"repaint of the timeline, {title}, {n:,} events, 1600x1000 offscreen "
          f"(lane preparation in the loader: {prep_s:.2f} s)")
    a, b = full_range(model)
    worst = 0.0
    for zoom in (1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5):
        vs = a + 0.43 * (b - a) * (1 - zoom)
        timeline.view_box.setXRange(vs, vs + zoom * (b - a), padding=0.0)
        t = time.perf_counter()
        timeline.refold()
        fold_ms = (time.perf_counter() - t) * 1e3
        app.processEvents()
        painted = timeline.lanes[0].paint_count
        times = []
        for _ in range(15):
            t = time.perf_counter()
            timeline.viewport().repaint()
            times.append((time.perf_counter() - t) * 1e3)
        assert timeline.lanes[0].paint_count >= painted + 15, "repaint did not paint the lanes"
        med = statistics.median(times)
        worst = max(worst, med)
        rects = [sum(item.rect_counts()) for item in timeline.lanes]
        print(f"  zoom {zoom:>7g}  repaint median {med:6.2f} ms  (max {max(times):6.2f})  "
              f"refold all lanes {fold_ms:6.2f} ms  rects per lane {rects}")
    print(f"repaint worst median: {worst:.2f} ms  budget {REPAINT_BUDGET_MS:.0f} ms  "
          f"{'OK' if worst < REPAINT_BUDGET_MS else 'OVER'}")
    timeline.close()


if __name__ == "__main__":
    fold_figures()
    repaint_figures()
    real = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "shared_traces", "hta",
                        "df_index_resolver", "df_index_resolver.json.gz")
    if os.path.exists(real):
        from gpuperf_gui.core.trace.session.trace import Trace

        repaint_figures(Trace([real], workers=1).model(), "hta/df_index_resolver")
