"""What the kernels themselves tell when the trace has no shapes for them: skinny GEMMs by name,
CUDA-graph replays and kernels without a launch record in the window.

A batch-1 decode replayed as one CUDA graph runs GEMMs whose output has one token: cuBLAS picks
GEMV kernels or tiles with a dimension of 8 or 16 (``nvjet_sm90_tst_64x8_...``, ``..._128x8_..._splitK``;
Triton's ``..._16x128x256`` blocks), each streaming its weight matrix once: memory-bound. Graph-replayed
kernels carry no input shapes (no CPU op launches them), so their FLOPs are unknown; the kernel name's
tile shape is the evidence that is left. Kernels with no launch call in the window (launched during
warm-up, before the profiler's window opened) have no op either: they are missing from the op table's
device totals and from the launch statistics.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .model import KERNEL_CLASSES, RankTrace
from .name_masks import predicate_mask

SKINNY_TILE_MAX = 16
"""A GEMM tile with a side of at most this many rows/columns is a skinny GEMM's (decode: 1-16 tokens)."""
_TILE_RE = re.compile(r"(?<!\d)(\d+)x(\d+)")
_GEMM = KERNEL_CLASSES.index("gemm")
_COPY = KERNEL_CLASSES.index("copy")


def is_skinny_gemm(name: str) -> bool:
    """GEMV, or a GEMM whose first tile shape in the name has a side <= SKINNY_TILE_MAX."""
    low = name.lower()
    if "gemv" in low:
        return True
    m = _TILE_RE.search(name)
    return bool(m) and min(int(m.group(1)), int(m.group(2))) <= SKINNY_TILE_MAX


@dataclass
class KernelEvidence:
    """Shares of kernel time (copies left out) in the window, and the kernels without a launch."""

    skinny_gemm_share: float = 0.0
    graph_replay_share: float = 0.0
    """Kernel time launched by a CUDA/HIP graph launch."""
    unlaunched_share: float = 0.0
    """Kernel time with no launch call in the trace (the trace has launch calls otherwise)."""
    unlaunched_kernels: int = 0
    graph_launches: int = 0
    """Graph launch calls that launched device work in the window (a call before the window counts:
    one replay of a whole decode starts before its first kernel)."""
    skinny_examples: tuple[str, ...] = ()

    @property
    def no_shapes_share(self) -> float:
        """Kernel time no CPU op launched, so no input shapes are known for it."""
        return min(1.0, self.graph_replay_share + self.unlaunched_share)

    def to_json(self) -> dict:
        return {"skinny_gemm_share": self.skinny_gemm_share, "graph_replay_share": self.graph_replay_share,
                "unlaunched_share": self.unlaunched_share, "unlaunched_kernels": self.unlaunched_kernels,
                "graph_launches": self.graph_launches,
                "no_shapes_share": self.no_shapes_share, "skinny_examples": list(self.skinny_examples)}


def kernel_evidence(rt: RankTrace, dev, in_window: np.ndarray, t0: float, t1: float) -> KernelEvidence:  # noqa: ANN001
    """:class:`KernelEvidence` of the device events ``dev`` (:func:`.analysis.device_events`)."""
    m = in_window & (dev.kernel_class != _COPY)
    out = KernelEvidence()
    if not m.any():
        return out
    dur = np.maximum(np.minimum(dev.end_us, t1) - np.maximum(dev.start_us, t0), 0.0)
    total = float(dur[m].sum())
    if total <= 0:
        return out
    skinny_names = predicate_mask(rt.strings, "skinny_gemm", is_skinny_gemm)
    skinny = m & (dev.kernel_class == _GEMM) & skinny_names[dev.name_id]
    out.skinny_gemm_share = float(dur[skinny].sum()) / total
    if skinny.any():
        per = np.bincount(dev.name_id[skinny], weights=dur[skinny])  # np.unique would import numpy.ma
        top = [int(i) for i in np.argsort(-per)[:3] if per[i] > 0]
        out.skinny_examples = tuple(rt.strings[i][:80] for i in top)
    graph, sources = _graph_launched(rt, dev.start_us.size)
    out.graph_replay_share = float(dur[m & graph].sum()) / total
    out.graph_launches = len({sources[i] for i in np.flatnonzero(m & graph).tolist()})
    if len(rt.flows.src_lane):  # a trace with launch calls: the kernels without one were launched before it
        unlaunched = m & np.isnan(dev.launch_start_us)
        out.unlaunched_share = float(dur[unlaunched].sum()) / total
        out.unlaunched_kernels = int(unlaunched.sum())
    return out


def _graph_launched(rt: RankTrace, n: int) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """Which device events a graph launch call (``cudaGraphLaunch``, ``hipGraphLaunch``) launched, and
    for each of those the call (CPU lane, index)."""
    out = np.zeros(n, dtype=bool)
    flows = rt.flows
    if not len(flows.src_lane):
        return out, {}
    graph_names = predicate_mask(rt.strings, "graphlaunch", lambda s: "graphlaunch" in s.lower())
    offsets, total = {}, 0
    for lane in rt.gpu_lanes:
        offsets[lane.lane_id] = total
        total += len(lane)
    base = np.array([offsets.get(i, -1) for i in range(len(rt.lanes))], dtype=np.int64)
    ok = base[flows.dst_lane] >= 0
    src_lane, src_index = flows.src_lane[ok], flows.src_index[ok]
    src_name = np.zeros(src_lane.size, dtype=np.int64)
    for lane_id in np.flatnonzero(np.bincount(src_lane)).tolist() if src_lane.size else []:
        sel = src_lane == lane_id
        src_name[sel] = rt.lanes[lane_id].name_id[src_index[sel]]
    hit = graph_names[src_name]
    pos = base[flows.dst_lane[ok]] + flows.dst_index[ok]
    out[pos[hit]] = True
    sources = dict(zip(pos[hit].tolist(), zip(src_lane[hit].tolist(), src_index[hit].tolist())))
    return out, sources
