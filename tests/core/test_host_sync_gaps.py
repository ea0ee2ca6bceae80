"""The GPU-idle gaps that follow a blocking sync, as the Trace lanes colour them (core/trace/model/host_sync.py's
SyncGapClassifier over a compute stream's idle gaps) and as the Ranks heatmap sums them per step."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from gpuperf_gui.core.trace.session.loaded_trace import build_loaded_trace
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.synthetic.synth import write_synth_trace

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _loaded(path: Path):
    return build_loaded_trace(Trace([path]).result())


def _compute_gaps(loaded):
    spec = next(s for s in loaded.lanes if s.kind == "gpu_compute")
    return spec.gaps[0], spec.gaps[1], spec.gap_kind, loaded.model.ranks[spec.rank_index].origin_us


def test_idle_after_each_item_is_host_sync_hand_checked_against_the_sync_spans() -> None:
    """item_per_microbatch: loss.item() after each micro-batch. In the file each aten::_local_scalar_dense
    holds a cudaStreamSynchronize; the host waits in it until the GPU's last kernel ends. So each gap of
    the compute stream longer than 1 ms that starts inside such a sync span (read from the raw events)
    is an idle after a sync, and the classifier must mark exactly those."""
    path = H200 / "item_per_microbatch.json.gz"
    data = json.loads(gzip.decompress(path.read_bytes()))
    events, base_us = data["traceEvents"], data["baseTimeNanoseconds"] / 1000   # the model's origin adds it
    syncs = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "cudaStreamSynchronize"]
    scalars = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "aten::_local_scalar_dense"]
    assert len(syncs) == len(scalars) == 12   # 4 micro-batches x 3 steps in the window
    assert all(any(a <= s0 and s1 <= b for a, b in scalars) for s0, s1 in syncs)  # each sync inside an .item()
    gs, ge, kind, origin = _compute_gaps(_loaded(path))
    long = (ge - gs) > 1000.0
    at = gs + origin - base_us   # the gaps' starts on the file's clock
    inside = np.array([any(s0 - 5.0 <= g <= s1 + 5.0 for s0, s1 in syncs) for g in at])  # 5 µs: rounding
    assert np.array_equal(kind[long] == 1, inside[long])
    # every .item() that waited for the GPU (> 1 ms in the sync) is followed by one such idle gap
    waited = [(s0, s1) for s0, s1 in syncs if s1 - s0 > 1000.0]
    assert all(np.any(long & (kind == 1) & (at >= s0 - 5.0) & (at <= s1 + 5.0)) for s0, s1 in waited)
    assert len(waited) == 10 and int((kind[long] == 1).sum()) >= len(waited)
    assert np.all(ge[long & (kind == 1)] - gs[long & (kind == 1)] > 8000.0)   # the ~10 ms of Python after each


def test_a_loop_without_syncs_has_no_host_sync_gap_and_the_heatmap_sums_them(tmp_path: Path) -> None:
    """host_bound: Python work after the launches, no sync (its idle is plain); host_sync_bound: 4
    .item() per step, each followed by 1.5 ms of Python (synth._step_host_sync_bound)."""
    plain = _loaded(write_synth_trace("host_bound", tmp_path / "a.json", steps=4))
    assert not np.any(_compute_gaps(plain)[2])
    synced = _loaded(write_synth_trace("host_sync_bound", tmp_path / "b.json", steps=4))
    _, steps, values = synced.overview.rank_step_matrix("host-sync idle")
    per_step_us = values[0] * np.array([s.duration_us for s in synced.overview.ranks[0].steps if not s.warmup])
    assert np.allclose(per_step_us, 4 * 1500.0, rtol=0.05)


def test_a_folded_block_of_gaps_takes_the_kind_that_holds_half_its_idle() -> None:
    """Zoomed out, gaps fold into one block: drawn as host-sync idle only when the sync gaps hold at
    least half of the block's idle time (here 2 x 40 µs of 100 µs, then 2 x 10 µs of 100 µs)."""
    from gpuperf_gui.core.trace.model.lod import BlockKinds, RowIndex, fold_row

    starts = np.array([0.0, 100.0, 200.0, 300.0])
    for lengths, kind, want in (([10.0, 40.0, 40.0, 10.0], [0, 1, 1, 0], 1), ([40.0, 10.0, 10.0, 40.0], [0, 1, 1, 0], 0)):
        index = RowIndex(starts, starts + np.array(lengths))
        folded = fold_row(index, None, 0.0, 400.0, 2.0)   # 2 px for 400 µs: one block
        assert len(folded) == 1 and folded.count[0] == 4
        assert BlockKinds(np.array(kind, np.uint8), index).of(folded).tolist() == [want]
    single = fold_row(index, None, 0.0, 400.0, 4000.0)    # zoomed in: each gap its own kind
    assert BlockKinds(np.array([0, 1, 1, 0], np.uint8), index).of(single).tolist() == [0, 1, 1, 0]
