"""The builder's short path (core/trace/ingest/build.py) gives the rank its masks give.

Where every time is usable (most traces) the events kept are found by lane, with no per-event mask
(:func:`build._kept_events`); elsewhere by the masks that also write the warnings, the path every
trace took before. The lanes' depths come from one
merge in C where the extension is built (``nest.depths``), else from binary searches, and the
lane keys from one C pass (``nest.lane_keys``), else numpy's. Each real trace and a few hand-made
ones must build to the same rank, bit for bit, all three ways.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuperf_gui.core.trace.ingest import build
from gpuperf_gui.core.trace.model.nesting import nest
from gpuperf_gui.core.trace.ingest.load import load_rank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stream_decode import fingerprint  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = ["h200/eager_small.json.gz", "h200/compiled_tiny_cudagraphs.json.gz", "h200/data_starved_python.json.gz",
        "shared_traces/h200/healthy_gpt_small.json.gz", "h200/ddp_straggler_gloo/rank0.json.gz"]


def _with_numpy(monkeypatch: pytest.MonkeyPatch, path: Path, masks: bool = False) -> dict:
    """The rank without the C extension, by the short path or (``masks``) the masks."""
    with monkeypatch.context() as m:
        if masks:
            m.setattr(build, "_times_usable", lambda ts, dur: False)
        m.setattr(nest, "_nest", None)
        return fingerprint(load_rank(path))


def _with_masks_and_numpy(monkeypatch: pytest.MonkeyPatch, path: Path) -> dict:
    return _with_numpy(monkeypatch, path, masks=True)


@pytest.mark.parametrize("name", REAL)
def test_a_real_trace_builds_to_the_rank_its_masks_give(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / name
    short = fingerprint(load_rank(path))
    assert short["lanes"] and short == _with_masks_and_numpy(monkeypatch, path)
    assert short == _with_numpy(monkeypatch, path)


def _events(*rows: tuple) -> list[dict]:
    return [{"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
             "args": {"correlation": 7} if cat in ("cuda_runtime", "kernel") else {}}
            for cat, name, tid, ts, dur in rows]


HAND_MADE = {
    # Kineto's own span (cat "Trace": skipped) starts first; then an op with a launch and its kernel
    "skipped span first": _events(("Trace", "PyTorch Profiler (0)", 1, 5.0, 100.0), ("cpu_op", "aten::mm", 1, 10.0, 9.0),
                                  ("cuda_runtime", "cudaLaunchKernel", 1, 11.0, 2.0), ("kernel", "gemm", 7, 12.0, 4.0)),
    # the earliest kept start is -0.0 and 0.0 (which np.min gives depends on the order it reads)
    "zero starts of both signs": _events(("cpu_op", "a", 1, -0.0, 3.0), ("cpu_op", "b", 2, 0.0, 1.0),
                                         ("Trace", "PyTorch Profiler (0)", 1, -5.0, 100.0), ("cpu_op", "c", 2, -0.0, 0.5)),
    "only skipped events": _events(("Trace", "PyTorch Profiler (0)", 1, 5.0, 100.0)),
    # a skipped span more than 4096 events before the rest: the dialect's sample is of kept events
    "many events": _events(*[("cpu_op", f"op{i % 7}", 1 + i % 3, float(i) + 0.5 * (i % 2), 0.25) for i in range(9000)],
                           ("Trace", "PyTorch Profiler (0)", 1, 0.0, 1e4)),
}


@pytest.mark.parametrize("case", sorted(HAND_MADE))
def test_a_hand_made_trace_builds_to_the_rank_its_masks_give(case: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    events = HAND_MADE[case]
    if case == "many events":
        events = events[-1:] + events[:-1]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))

    def outcome(load):  # noqa: ANN001, ANN202
        try:
            return load()
        except Exception as exc:  # noqa: BLE001 - the refusal must be the same too
            return f"{type(exc).__name__}: {exc}"

    short = outcome(lambda: fingerprint(load_rank(path)))
    assert short == outcome(lambda: _with_masks_and_numpy(monkeypatch, path))
    assert short == outcome(lambda: _with_numpy(monkeypatch, path))
    if case == "zero starts of both signs":
        assert repr(short["offset"]) and short["lanes"]
