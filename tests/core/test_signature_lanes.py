"""The presentation's signature panels, built in core (core/trace/session/signature_lanes.py), no Qt."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

from gpuperf_gui.core.trace.session.signature_lanes import (ZOOM_KERNELS, compute_idle, iter_signature_lanes,
                                                            view_span_us)


def _lane(starts: list[float], durations: list[float]) -> SimpleNamespace:
    return SimpleNamespace(start_us=np.array(starts), duration_us=np.array(durations))


def test_idle_is_the_time_no_compute_stream_runs_edges_included():
    # hand count, span 0..10 µs: stream A runs 1-2 and 2-5 (touching: no gap between), stream B 4-7;
    # idle: 0-1, 7-10
    start, duration = compute_idle([_lane([1.0, 2.0], [1.0, 3.0]), _lane([4.0], [3.0])], (0.0, 10.0))
    assert start.tolist() == [0.0, 7.0] and duration.tolist() == [1.0, 3.0]


def test_a_trace_without_compute_is_idle_throughout():
    start, duration = compute_idle([], (2.0, 9.0))
    assert start.tolist() == [2.0] and duration.tolist() == [7.0]


def test_the_launch_bound_panel_zooms_to_show_its_tiny_kernels(tmp_path):
    # Over two whole steps hundreds of few-µs kernels and the gaps between them fill every pixel (a
    # solid bar); the panel shows its first kernels instead. The packed panels keep the whole span.
    panels = {lanes.scenario: lanes for lanes in iter_signature_lanes(
        tmp_path, threading.Event(), ("launch_bound", "comm_bound"))}
    launch = panels["launch_bound"]
    assert launch.signature == "launch_bound" and panels["comm_bound"].signature == "comm_bound"
    t0, t1 = view_span_us(launch, 300.0)
    full0, full1 = launch.span_us
    assert t1 - t0 < 0.5 * (full1 - full0)
    compute = next(lane for lane in launch.lanes if lane[0] == "GPU compute")
    assert int(((compute[1] >= t0) & (compute[1] < t1)).sum()) == ZOOM_KERNELS
    assert view_span_us(panels["comm_bound"], 300.0) == panels["comm_bound"].span_us


def test_the_cpu_row_holds_disjoint_outermost_ops_not_the_steps(tmp_path):
    (panel,) = iter_signature_lanes(tmp_path, threading.Event(), ("data_starved",))
    labels = [label for label, *_ in panel.lanes]
    assert labels[0] == "CPU" and "GPU compute" in labels
    _, start, duration, _ = panel.lanes[0]
    order = np.argsort(start)
    ends = (start + duration)[order]
    assert len(start) and (start[order][1:] >= ends[:-1] - 1e-6).all()   # one depth: they never nest
    assert duration.max() < panel.span_us[1] - panel.span_us[0]           # a ProfilerStep would span a step


def test_a_stop_ends_the_generator_before_the_next_trace(tmp_path):
    stop = threading.Event()
    lanes = iter_signature_lanes(tmp_path, stop, ("healthy", "launch_bound"))
    next(lanes)
    stop.set()
    assert list(lanes) == [] and not (tmp_path / "launch_bound.json").exists()
