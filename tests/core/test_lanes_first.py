"""One file's lanes are sent before its analysis (core/trace/session/loaded_trace.py ``iter_built_trace``): the
trace the tab ends with must be the one the one-step build makes of the analysed job (``build_loaded_trace``,
as for several files), figure for figure, in this process and through the helper interpreter's mapped file."""
from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.child_stream import SendMapped
from gpuperf_gui.core.trace.session import loaded_trace as session
from gpuperf_gui.core.trace.session.loaded_trace import AnalysisUpdate, LoadedTrace, RooflineUpdate, iter_loaded_trace
from gpuperf_gui.core.trace.session.trace import Trace


def _items(paths: list[Path], isolate: bool) -> list:
    return list(iter_loaded_trace(paths, 10.0, threading.Event(), isolate=isolate))


def _figures(loaded: LoadedTrace) -> dict:
    """What the analysis put in the trace, as comparable values."""
    return {
        "diagnosis": repr(loaded.diagnosis),
        "op_tables": repr(loaded.op_tables),
        "mfu": repr(loaded.mfu_figures),
        "overview": json.dumps(loaded.overview.to_json(), sort_keys=True) if loaded.overview else None,
        "steps": [spec.step_durations_us for spec in loaded.ranks],
        "titles": [spec.title for spec in loaded.ranks],
        "analysis": [repr([dataclasses.astuple(s) for s in a.steps]) for a in loaded.analysis],
        "points": [(p.label, p.flops, p.bytes) for p in loaded.roofline_points],
        "notes": sorted(loaded.notes),
        "events": loaded.n_events,
    }


@pytest.mark.parametrize("isolate", [False, True])
def test_one_file_lanes_then_analysis_then_roofline_as_the_one_step_path(shared_traces: Path, isolate: bool) -> None:
    path = shared_traces / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
    items = _items([path], isolate)
    kinds = [type(i) for i in items if isinstance(i, (LoadedTrace, AnalysisUpdate, RooflineUpdate))]
    assert kinds == [LoadedTrace, AnalysisUpdate, RooflineUpdate]
    lanes = next(i for i in items if isinstance(i, LoadedTrace))
    assert lanes.analysis_pending and lanes.diagnosis is None   # handed over, never patched after
    loaded = lanes
    for item in items:
        loaded = loaded.then(item)
    assert loaded is not lanes and lanes.analysis_pending and lanes.diagnosis is None and not lanes.roofline_points
    assert not loaded.analysis_pending and loaded.diagnosis is not None and loaded.op_tables
    assert {"engine_s", "build_s", "analysis_s", "roofline_s"} <= set(loaded.timings_s)
    # the one-step build (several files take it): the lanes-first trace of either mode must be the one it makes
    reference = session.build_loaded_trace(Trace([path]).result(), 10.0)
    assert _figures(loaded) == _figures(reference)
    for a, b in zip(loaded.model.ranks, reference.model.ranks, strict=True):
        for la, lb in zip(a.lanes, b.lanes, strict=True):
            np.testing.assert_array_equal(la.start_us, lb.start_us)


def test_the_lanes_come_without_the_analysis(shared_traces: Path) -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "h200" / "eager_small.json.gz"
    first = None
    for item in session.iter_built_trace([str(path)], 10.0):
        if isinstance(item, SendMapped):
            item = item.item
        if isinstance(item, LoadedTrace):
            first = item
            assert item.analysis_pending and item.diagnosis is None and not item.op_tables and not item.analysis
            assert item.lanes and item.activity_cache   # the lanes and the minimap are ready
        if isinstance(item, AnalysisUpdate):
            assert first is not None   # after the lanes
            analysed = first.with_analysis(item)
    assert first is not None and first.analysis_pending and first.diagnosis is None
    assert not analysed.analysis_pending and analysed.diagnosis.signature


def test_folders_and_several_files_keep_the_one_step_path(shared_traces: Path) -> None:
    folder = shared_traces / "param" / "dlrm_kineto"
    items = _items([folder], False)
    assert not any(isinstance(i, AnalysisUpdate) for i in items)
    loaded = next(i for i in items if isinstance(i, LoadedTrace))
    assert not loaded.analysis_pending and len(loaded.model.ranks) == 8
