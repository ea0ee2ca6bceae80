"""The Trace tab's queries, Qt-free: partners, details, find, idle gaps, range summary, overview.

Expected values come from the raw JSON of real traces (read here with json/gzip, not the loader) or
from hand-built traces whose figures are counted by hand in the comments.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.roofline import attainable_flops_per_s
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.model.lanes import EventRef
from gpuperf_gui.core.trace.model.queries import op_row_name
from gpuperf_gui.core.trace.analysis.kernel_table import uses_tensor_cores
from gpuperf_gui.core.trace.session.loaded_trace import (LoadedTrace, RooflineUpdate, build_loaded_trace,
                                                         iter_loaded_trace)
from gpuperf_gui.core.trace.synthetic.synth import ALLREDUCE, ELEMENTWISE, GEMM
from trace_builders import hand_trace, straggler_job


def _raw(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def _load(paths: list[Path]) -> LoadedTrace:
    return build_loaded_trace(Trace(paths, workers=1).result(), 10.0)


def _find_ref(loaded: LoadedTrace, name: str, start_us_in_file: float | None = None,
              category: str | None = None) -> EventRef:
    """The event named ``name`` (the first, or the one at that file ``ts``)."""
    for ri, rank in enumerate(loaded.model.ranks):
        nid = rank.strings.find(name)
        for lane in rank.lanes:
            hits = np.flatnonzero(lane.name_id == nid)
            for i in hits.tolist():
                if category is not None and rank.strings[int(lane.category_id[i])] != category:
                    continue
                ts = float(lane.start_us[i]) + rank.file_ts_offset_us
                if start_us_in_file is None or abs(ts - start_us_in_file) < 0.01:
                    return EventRef(ri, lane.lane_id, i)
    raise AssertionError(f"{name} at {start_us_in_file} not found")


@pytest.fixture
def hand(tmp_path) -> LoadedTrace:
    return _load([hand_trace(tmp_path / "hand.json")])


def test_step_breakdown_of_a_hand_built_trace(hand):
    steps = hand.overview.ranks[0].steps
    assert [s.number for s in steps] == [1, 2]
    s1, s2 = steps
    # step 1: the GPU span (first kernel 100 to the next step's first kernel 1200) is longer than the CPU's
    assert (s1.start_us - hand.full_range_us[0], s1.duration_us) == pytest.approx((100.0, 1100.0))
    assert s1.compute_us == pytest.approx(300 + 90 + 100)
    assert s1.comm_exposed_us == pytest.approx(100)        # [500, 600): [450, 500) overlaps gemm A
    assert s1.copy_us == pytest.approx(0.0)
    # gaps: [400, 410) next launched at 70 -> kernel wait; [600, 700) next launched at 650 -> host wait;
    # [800, 1200) next (D) launched at 1100 -> host wait
    assert s1.idle_us == pytest.approx({"host_wait": 500.0, "kernel_wait": 10.0, "other": 0.0})
    # step 2: the CPU span [1000, 2000); [1000, 1200) host wait (D launched at 1100), [1500, 1550) other
    # (E launched at 1120, long before), [1600, 2000) other (nothing follows)
    assert s2.duration_us == pytest.approx(1000.0)
    assert s2.compute_us == pytest.approx(350.0)
    assert s2.idle_us == pytest.approx({"host_wait": 200.0, "kernel_wait": 0.0, "other": 450.0})
    for s in steps:
        assert sum(us for _, us in s.parts()) == pytest.approx(s.duration_us)


def test_range_summary_counts_what_the_range_holds(hand):
    t0 = hand.full_range_us[0]
    summary = hand.summarize_range(t0 + 300, t0 + 750)
    assert summary.kernel_class_us == pytest.approx({"gemm": 100 + 90, "communication": 150, "elementwise": 50})
    assert summary.gpu_busy_us == pytest.approx(100 + 190 + 50)     # [300,400) [410,600) [700,750)
    assert summary.gpu_busy_fraction == pytest.approx(340 / 450)
    assert summary.cpu_category_us == pytest.approx({"user_annotation": 450.0})  # outermost: the step
    assert summary.top_kernels[0] == (GEMM, 2, pytest.approx(190.0))
    assert [k[0] for k in summary.top_kernels] == [GEMM, ALLREDUCE, ELEMENTWISE]


def test_partners_through_flows_and_the_external_id_fallback(hand):
    kernel_d = _find_ref(hand, GEMM, 1200)
    launch = _find_ref(hand, "cudaLaunchKernel", 1100)
    assert hand.partners(kernel_d) == [launch]
    assert hand.partners(launch) == [kernel_d]
    # aten::mm has no flow of its own: its kernel is found by its External id (77)
    op = _find_ref(hand, "aten::mm")
    assert hand.partners(op) == [kernel_d]
    details = hand.details(op)
    assert details.partner_title == "Launched kernel" and len(details.partners) == 1
    assert details.partners[0][0] == f"event:{kernel_d.rank_index}:{kernel_d.lane_id}:{kernel_d.index}"
    assert ("external id", "77") in details.rows
    assert hand.details(kernel_d).partner_title == "Launched by"
    assert hand.details(kernel_d).start_us == pytest.approx(1200.0)   # from the trace's first event (0)


def test_activity_profile_of_the_minimap(hand):
    profile = hand.activity(20)          # the trace spans [0, 2000): bins of 100 µs
    expected = np.zeros(20)
    expected[1:4] = 1.0                  # [100, 400)
    expected[4] = 0.9                    # [410, 500)
    expected[5] = 1.0                    # [500, 600): gemm and all-reduce, counted once
    expected[7] = 1.0                    # [700, 800)
    expected[12:15] = 1.0                # [1200, 1500)
    expected[15] = 0.5                   # [1550, 1600)
    assert profile.busy[0] == pytest.approx(expected)


def test_idle_gaps_at_a_threshold(hand):
    compute = next(s for s in hand.lanes if s.kind == "gpu_compute")
    t0 = hand.full_range_us[0]
    starts, ends = hand.idle_gaps(compute.rank_index, compute.lane_id, 50.0)
    # compute stream: [100,400) [410,500) [700,800) [1200,1500) [1550,1600): gaps >= 50 µs
    assert list(zip(starts - t0, ends - t0)) == [(500.0, 700.0), (800.0, 1200.0), (1500.0, 1550.0)]
    assert len(hand.idle_gaps(compute.rank_index, compute.lane_id, 5.0)[0]) == 4


def test_external_id_fallback_on_a_real_trace(shared_traces):
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    raw = _raw(path)
    kernels_by_ext: dict[int, list[tuple[str, float]]] = {}
    for e in raw:
        if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and "External id" in e.get("args", {}):
            kernels_by_ext.setdefault(e["args"]["External id"], []).append((e["name"], float(e["dur"])))
    op = next(e for e in raw if e.get("cat") == "cpu_op" and e["name"] == "aten::addmm"
              and e["args"].get("External id") in kernels_by_ext)
    loaded = _load([path])
    ref = _find_ref(loaded, "aten::addmm", float(op["ts"]), "cpu_op")
    found = [(loaded.details(p).name, loaded.event_span_us(p)[1] - loaded.event_span_us(p)[0])
             for p in loaded.partners(ref)]
    expected = kernels_by_ext[op["args"]["External id"]]
    assert sorted(n for n, _ in found) == sorted(n for n, _ in expected)
    assert sorted(d for _, d in found) == pytest.approx(sorted(d for _, d in expected), abs=1e-3)


def test_partners_through_correlation_on_a_real_trace(shared_traces):
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    raw = _raw(path)
    kernel = max((e for e in raw if e.get("cat") == "kernel"), key=lambda e: e["dur"])
    launch = next(e for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver")
                  and e.get("args", {}).get("correlation") == kernel["args"]["correlation"])
    loaded = _load([path])
    ref = _find_ref(loaded, kernel["name"], float(kernel["ts"]))
    partners = loaded.partners(ref)
    assert [loaded.details(p).name for p in partners] == [launch["name"]]
    assert loaded.event_span_us(partners[0])[1] - loaded.event_span_us(partners[0])[0] == pytest.approx(launch["dur"])


def test_find_by_name_regex_exact_and_kernel_class(shared_traces):
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    raw = [e for e in _raw(path) if e.get("ph") == "X"]
    loaded = _load([path])
    every_lane = [(ri, lane.lane_id) for ri, r in enumerate(loaded.model.ranks) for lane in r.lanes]
    names = Counter(e["name"] for e in raw)
    assert len(loaded.find("aten::addmm", "exact", every_lane)) == names["aten::addmm"]
    assert len(loaded.find("ADDMM", "name", every_lane)) == sum(c for n, c in names.items() if "addmm" in n.lower())
    assert len(loaded.find(r"^aten::(addmm|mm)$", "regex", every_lane)) == names["aten::addmm"] + names["aten::mm"]
    nvjet = sum(1 for e in raw if e.get("cat") == "kernel" and e["name"].startswith("nvjet"))
    gemm = loaded.find("gemm", "class")
    assert len(gemm) >= nvjet > 0 and all("aten" not in n for n in gemm.names)
    starts = gemm.start_us
    assert np.all(np.diff(starts) >= 0)                      # in time order
    assert sum(int(m.sum()) for m in gemm.masks.values()) == len(gemm)
    with pytest.raises(ValueError):
        loaded.find("not-a-class", "class")
    import re
    with pytest.raises(re.error):
        loaded.find("(unclosed", "regex")
    assert len(loaded.find("no such kernel anywhere", "name")) == 0
    steps = loaded.find("ProfilerStep#", "name")
    assert {op_row_name(n) for n in steps.names} == {"ProfilerStep*"}   # torch's key_averages groups the steps
    rows = {r[0] for table in loaded.op_tables[loaded.model.ranks[0].rank].values() for r in table.rows}
    addmm = loaded.find("addmm", "name")
    assert {op_row_name(n) for n in [*steps.names, *addmm.names]} <= rows   # rows the op table has


def test_tensor_core_names():
    # the TensorBoard plugin's allowlist, and the Hopper families it predates
    for name in ("volta_h884gemm_64x64_ldg8_nn", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
                 "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
                 "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
                 "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8"):
        assert uses_tensor_cores(name), name
    for name in ("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4",
                 "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
                 "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "volta_sgemm_128x64_nn"):
        assert not uses_tensor_cores(name), name


def test_top_kernels_flops_from_their_ops(shared_traces):
    """Achieved FLOP/s of the top GEMM = its ops' FLOPs (Kineto's ``flops`` arg, by External id) over
    the kernels' time, both summed from the raw JSON."""
    path = shared_traces / "h200" / "healthy_gpt_small.json.gz"
    loaded = _load([path])
    top = loaded.overview.ranks[0].top_kernels[0]
    raw = _raw(path)
    kernels = [e for e in raw if e.get("cat") == "kernel" and e["name"] == top.name]
    assert top.calls == len(kernels)
    assert top.seconds == pytest.approx(sum(e["dur"] for e in kernels) / 1e6, rel=1e-6)
    assert top.tensor_cores
    assert top.achieved_flops_per_s is not None and top.achieved_flops_per_s > 100e12  # a busy H200 GEMM
    ai = top.ai_flops_per_byte   # H200 datasheet: 989 TFLOP/s bf16 dense, 4.8 TB/s HBM3e
    roof = attainable_flops_per_s(989e12, 4.8e12, ai) if ai else 989e12
    assert 0 < top.achieved_flops_per_s / roof <= 1.0
    share = loaded.overview.ranks[0].tensor_core_share
    all_k = sum(e["dur"] for e in raw if e.get("cat") == "kernel")
    tc_k = sum(e["dur"] for e in raw if e.get("cat") == "kernel" and e["name"].startswith("nvjet"))
    assert share >= tc_k / all_k - 1e-9 and share < 1.0


def test_a_late_rank_is_marked_and_listed_first(tmp_path):
    loaded = _load([straggler_job(tmp_path / "job")])
    assert loaded.diagnosis.stragglers == [1]
    assert loaded.diagnosis.collective_lag_us[1] == pytest.approx(2000.0, rel=0.05)  # vs the other rank
    assert [r.straggler for r in loaded.ranks] == [False, True]
    assert loaded.straggler_rank_indices() == [1]
    ranks, steps, values = loaded.overview.rank_step_matrix("step time")
    assert ranks == [1, 0] and len(steps) == 5 and values.shape == (2, 5)   # 6 steps, the first warm-up
    busy = loaded.overview.rank_step_matrix("busy")[2]
    assert np.all((busy > 0) & (busy <= 1))
    assert loaded.activity(100).busy.shape == (2, 100)


def test_iter_loaded_trace_in_process_and_stop(tmp_path):
    path = hand_trace(tmp_path / "hand.json")
    items = list(iter_loaded_trace([path], 10.0, threading.Event(), isolate=False))
    loaded = [i for i in items if isinstance(i, LoadedTrace)]
    assert len(loaded) == 1 and loaded[0].title() == "hand.json"
    assert isinstance(items[-1], RooflineUpdate)   # found after the lanes: a snapshot to fold in
    assert loaded[0].analysis_pending and not loaded[0].roofline_points and loaded[0].diagnosis is None
    final = _shown([path], isolate=False)  # the snapshots folded, as the tab does
    assert final.roofline_points == list(items[-1].points) and final.diagnosis is not None
    stop = threading.Event()
    stop.set()
    assert not any(isinstance(i, LoadedTrace) for i in iter_loaded_trace([path], 10.0, stop, isolate=False))


def test_overview_json_is_in_seconds(hand):
    obj = hand.overview.to_json()
    json.dumps(obj)                                 # plain JSON (no NaN objects, no numpy types)
    step = obj["ranks"][0]["steps"][0]
    assert step["step_time_s"] == pytest.approx(1100e-6)
    assert step["idle_s"] == pytest.approx({"host_wait": 500e-6, "kernel_wait": 10e-6, "other": 0.0})
    assert step["compute_s"] + step["comm_exposed_s"] + step["copy_s"] + sum(step["idle_s"].values()) == \
        pytest.approx(step["step_time_s"])
    top = obj["ranks"][0]["top_kernels"][0]
    assert top["name"] == GEMM and top["seconds"] == pytest.approx(690e-6) and top["calls"] == 3


def _shown(paths: list[Path], isolate: bool) -> LoadedTrace:
    """The trace the tab ends up holding: the worker's snapshots folded into its LoadedTrace."""
    items = iter(iter_loaded_trace(paths, 10.0, threading.Event(), isolate=isolate))
    loaded = next(i for i in items if isinstance(i, LoadedTrace))
    for item in items:
        loaded = loaded.then(item)
    return loaded


def test_a_trace_built_in_the_helper_equals_one_built_here(shared_traces):
    """The helper interpreter builds the lanes too and sends them through a mapped file: every
    column, lane row and query answer must be what an in-process build gives."""
    from gpuperf_gui.core.child_stream import CAN_SPILL

    path = shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"  # lanes > 1 MB
    here, there = _shown([path], isolate=False), _shown([path], isolate=True)
    if CAN_SPILL:
        assert there.timings_s["spilled_bytes"] > 0 and there.timings_s["transfer_s"] > 0
    assert {"engine_s", "build_s", "roofline_s"} <= set(there.timings_s)
    for a, b in zip(here.model.ranks, there.model.ranks, strict=True):
        assert list(a.strings) == list(b.strings)
        for la, lb in zip(a.lanes, b.lanes, strict=True):
            for column in ("start_us", "duration_us", "name_id", "category_id", "depth", "correlation",
                           "external_id", "kernel_class", "bytes", "flops", "shapes_id"):
                np.testing.assert_array_equal(getattr(la, column), getattr(lb, column), err_msg=column)
    for sa, sb in zip(here.lanes, there.lanes, strict=True):
        assert (sa.rank_index, sa.lane_id, sa.label) == (sb.rank_index, sb.lane_id, sb.label)
        np.testing.assert_array_equal(sa.color_key, sb.color_key)
        for ra, rb in zip(sa.rows.rows, sb.rows.rows, strict=True):
            for name in ("key_max_tree", "top_keys", "top_index", "cum_duration"):
                np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name), err_msg=name)
            assert ra.top_floor == rb.top_floor
        assert [sa.name_of(i) for i in range(0, len(sa.color_key), 97)] == \
            [sb.name_of(i) for i in range(0, len(sb.color_key), 97)]
    assert [(p.label, p.flops) for p in here.roofline_points] == [(p.label, p.flops) for p in there.roofline_points]
    assert here.n_events == there.n_events
    assert len(here.find("gemm", "class")) == len(there.find("gemm", "class")) > 0


def test_lanes_indexed_on_threads_are_the_ones_indexed_on_one(shared_traces):
    from gpuperf_gui.core.trace.model.lanes import prepare_lanes

    model = Trace([shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"],
                          workers=1).result().model
    ranks_one, one = prepare_lanes(model, 10.0, workers=1)
    ranks_many, many = prepare_lanes(model, 10.0, workers=4)
    assert [r.title for r in ranks_one] == [r.title for r in ranks_many]
    assert len(one) == len(many) >= 2
    for a, b in zip(one, many):
        assert (a.rank_index, a.lane_id, a.kind) == (b.rank_index, b.lane_id, b.kind)
        np.testing.assert_array_equal(a.color_key, b.color_key)
        assert [len(r) for r in a.rows.rows] == [len(r) for r in b.rows.rows]
        for ra, rb in zip(a.rows.rows, b.rows.rows):
            np.testing.assert_array_equal(ra.key_max_tree, rb.key_max_tree)
            np.testing.assert_array_equal(ra.top_index, rb.top_index)
        assert (a.gap_index is None) == (b.gap_index is None)
        if a.gap_index is not None:
            np.testing.assert_array_equal(a.gap_index.starts, a.gaps[0])
    stop = threading.Event()
    stop.set()
    assert prepare_lanes(model, 10.0, stop, workers=4)[1] == []


def test_colour_keys_by_hand():
    """key = base * 3 + name_id % 3; CPU bases: cpu_op 0, user_annotation 1, runtime 2, python 3,
    anything else 4; GPU bases follow at 5 in KERNEL_CLASSES order (gemm 5, communication 8,
    other 10, also for events that are not kernels)."""
    from gpuperf_gui.core.trace.model.lanes import color_keys
    from gpuperf_gui.core.trace.model.trace_model import Lane, RankTrace, StringTable

    strings = StringTable(["cpu_op", "cuda_runtime", "python_function", "something else", "k"])
    rank = RankTrace(0, "f.json", 0.0, (0.0, 1.0), strings, [])
    cpu = Lane(0, "cpu", "t", 1, 1, start_us=np.arange(4.0), duration_us=np.ones(4),
               name_id=np.array([4, 5, 6, 7], np.int32), category_id=np.array([0, 1, 2, 3], np.int32))
    # name ids 4..7 give shades 1, 2, 0, 1
    assert color_keys(rank, cpu).tolist() == [0 * 3 + 1, 2 * 3 + 2, 3 * 3 + 0, 4 * 3 + 1]
    gpu = Lane(1, "gpu_compute", "s", 1, 7, start_us=np.arange(3.0), duration_us=np.ones(3),
               name_id=np.array([3, 3, 3], np.int32), category_id=np.zeros(3, np.int32),
               kernel_class=np.array([0, 3, -1], np.int8))
    assert color_keys(rank, gpu).tolist() == [5 * 3, 8 * 3, 10 * 3]
