"""Op table device columns: kernels are credited to ops, never to runtime calls that launch nothing;
kernel rows carry their mean per call and their share of the kernel time."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.analysis.optable import op_table
from gpuperf_gui.core.trace.synthetic.synth import DEVICE, synth_trace
from trace_support import loaded


def test_cuda_stream_wait_event_is_credited_no_device_time(shared_traces: Path) -> None:
    rt, _ = loaded(shared_traces / "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json")
    rows = {(r.name, r.kind): r for r in op_table(rt)}
    assert rows[("cudaStreamWaitEvent", "host")].self_device_s == 0.0  # was 3.41 ms
    # no launch flow starts at a cudaStreamWaitEvent
    sid = rt.strings.find("cudaStreamWaitEvent")
    fl = rt.flows
    assert not any(rt.lanes[int(fl.src_lane[k])].name_id[int(fl.src_index[k])] == sid for k in range(len(fl)))


def test_kernel_rows_carry_mean_and_share_without_annotations(tmp_path: Path) -> None:
    trace = synth_trace("healthy", steps=3)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    t0 = min(e["ts"] for e in kernels)
    t1 = max(e["ts"] + e["dur"] for e in kernels)
    trace["traceEvents"].append({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1",
                                 "pid": DEVICE, "tid": kernels[0]["tid"], "ts": t0, "dur": t1 - t0})
    path = tmp_path / "annotated.json"
    path.write_text(json.dumps(trace))
    rows = op_table(load_rank(path))
    kernel_us = {}
    for e in kernels:
        kernel_us[e["name"]] = kernel_us.get(e["name"], 0.0) + e["dur"]
    total_us = sum(kernel_us.values())
    shared = {r.name: r for r in rows if r.device_share is not None}
    assert set(shared) == set(kernel_us) and all(r.kind == "device" for r in shared.values())
    for name, us in kernel_us.items():
        assert shared[name].device_share == pytest.approx(us / total_us, rel=1e-6)
    assert sum(r.device_share for r in shared.values()) == pytest.approx(1.0)
    (step,) = [r for r in rows if r.kind == "device" and r.name == "ProfilerStep*"]
    assert step.device_share is None and step.mean_device_s == pytest.approx((t1 - t0) / 1e6, rel=1e-6)
    for r in rows:
        assert r.mean_device_s == (pytest.approx(r.device_total_s / r.calls) if r.calls else None)
    assert {"mean_device_s", "device_share"} <= set(rows[0].to_json())
