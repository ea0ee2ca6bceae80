"""What the kernels themselves tell when the trace has no shapes for them: skinny GEMMs by name,
CUDA-graph replays and kernels without a launch record in the window.

A batch-1 decode replayed as one CUDA graph runs GEMMs whose output has one token: cuBLAS picks
GEMV kernels or tiles with a dimension of 8 or 16 (``nvjet_sm90_tst_64x8_...``, ``..._128x8_..._splitK``;
Triton's ``..._16x128x256`` blocks), each streaming its weight matrix once: memory-bound. Graph-replayed
kernels carry no input shapes (no CPU op launches them), so their FLOPs are unknown; the kernel name's
tile shape is the evidence that is left. Kernels with no launch call in the window (launched during
warm-up, before the profiler's window opened) have no op either: they are missing from the op table's
device totals and from the launch statistics.

**Bytes.** Where a skinny GEMM kernel's call was launched by an op with shapes (``aten::mm``,
``addmm``, ``linear``: :mod:`.flops` gives the bytes a GEMM of that shape must move, ``(M·K + K·N +
M·N) × bytes per element``), that call's bytes are known. A graph-replayed call of the same kernel
name takes the mean bytes per call of that name's calls with shapes in the same trace (the graph
replays the GEMMs the eager calls ran). Their bytes over their time is the rate they move bytes at,
which the memory-bound rule sets against the device's HBM bandwidth. With no call of the name with
shapes (a graph captured before the profiler started), only the names tell.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .kernel_table import (duration_weights, external_ids, join_ops, math_kernel_names,
                           op_counts_by_external_id)
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..model.trace_model import RankTrace
from ..model.name_masks import predicate_mask

SKINNY_TILE_MAX = 16
"""A GEMM tile with a side of at most this many rows/columns is a skinny GEMM's (decode: 1-16 tokens)."""
_TILE_RE = re.compile(r"(?<!\d)(\d+)x(\d+)")
_GEMM = KERNEL_CLASSES.index("gemm")


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
    skinny_seconds: float = 0.0
    """Skinny GEMM kernel time in the window."""
    skinny_shaped_seconds: float = 0.0
    """Of it, the calls whose bytes are known: their own op's shapes, or (graph replays) the mean of
    their kernel name's calls with shapes in the trace."""
    skinny_borrowed_seconds: float = 0.0
    """Of ``skinny_shaped_seconds``, the calls that took their bytes from other calls of their name."""
    skinny_bytes: float = 0.0
    """The bytes the shaped skinny calls must move (``(M·K + K·N + M·N) ×`` bytes per element each)."""

    @property
    def skinny_bytes_per_s(self) -> float | None:
        """The rate the shaped skinny calls move their bytes at while they run (None: no shapes)."""
        return self.skinny_bytes / self.skinny_shaped_seconds if self.skinny_shaped_seconds > 0 and \
            self.skinny_bytes > 0 else None

    @property
    def skinny_names_only(self) -> bool:
        """Shapes are known for less than half the skinny GEMM time: the names are the evidence."""
        return self.skinny_shaped_seconds < 0.5 * self.skinny_seconds

    @property
    def no_shapes_share(self) -> float:
        """Kernel time no CPU op launched, so no input shapes are known for it."""
        return min(1.0, self.graph_replay_share + self.unlaunched_share)

    def to_json(self) -> dict:
        return {"skinny_gemm_share": self.skinny_gemm_share, "graph_replay_share": self.graph_replay_share,
                "unlaunched_share": self.unlaunched_share, "unlaunched_kernels": self.unlaunched_kernels,
                "graph_launches": self.graph_launches,
                "no_shapes_share": self.no_shapes_share, "skinny_examples": list(self.skinny_examples),
                "skinny_seconds": self.skinny_seconds, "skinny_shaped_seconds": self.skinny_shaped_seconds,
                "skinny_borrowed_seconds": self.skinny_borrowed_seconds, "skinny_bytes": self.skinny_bytes,
                "skinny_bytes_per_s": self.skinny_bytes_per_s}


def kernel_evidence(rt: RankTrace, dev, m: np.ndarray, dur: np.ndarray) -> KernelEvidence:  # noqa: ANN001
    """:class:`KernelEvidence` of the device events ``dev`` (:func:`.rank_analysis.device_events`):
    ``m`` the kernels (copies left out) in the window, ``dur`` each event's µs in the window."""
    out = KernelEvidence()
    total = float(dur[m].sum())
    if total <= 0:
        return out
    skinny_names = predicate_mask(rt.strings, "skinny_gemm", is_skinny_gemm)
    skinny = m & (dev.kernel_class == _GEMM) & skinny_names[dev.name_id]
    out.skinny_gemm_share = float(dur[skinny].sum()) / total
    graph, sources = _graph_launched(rt, dev.start_us.size)
    if skinny.any():
        per = np.bincount(dev.name_id[skinny], weights=dur[skinny])  # np.unique would import numpy.ma
        top = [int(i) for i in np.argsort(-per)[:3] if per[i] > 0]
        out.skinny_examples = tuple(rt.strings[i][:80] for i in top)
        _skinny_bytes(rt, dev, skinny, skinny_names, dur, graph, out)
    out.graph_replay_share = float(dur[m & graph].sum()) / total
    out.graph_launches = len({sources[i] for i in np.flatnonzero(m & graph).tolist()})
    if len(rt.flows.src_lane):  # a trace with launch calls: the kernels without one were launched before it
        unlaunched = m & np.isnan(dev.launch_start_us)
        out.unlaunched_share = float(dur[unlaunched].sum()) / total
        out.unlaunched_kernels = int(unlaunched.sum())
    return out


def launch_flows(rt: RankTrace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The launch flows into device work: (position of the device event among the gpu lanes' events
    concatenated, as :func:`.rank_analysis.device_events` lays them out; CPU lane; index in it)."""
    flows = rt.flows
    offsets = np.cumsum([0] + [len(lane) for lane in rt.gpu_lanes])
    base = np.full(len(rt.lanes), -1, dtype=np.int64)
    base[[lane.lane_id for lane in rt.gpu_lanes]] = offsets[:-1]
    ok = base[flows.dst_lane] >= 0
    return base[flows.dst_lane[ok]] + flows.dst_index[ok], flows.src_lane[ok], flows.src_index[ok]


def _graph_launched(rt: RankTrace, n: int) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """Which device events a graph launch call (``cudaGraphLaunch``, ``hipGraphLaunch``) launched, and
    for each of those the call (CPU lane, index)."""
    out = np.zeros(n, dtype=bool)
    if not len(rt.flows.src_lane):
        return out, {}
    graph_names = predicate_mask(rt.strings, "graphlaunch", lambda s: "graphlaunch" in s.lower())
    pos, src_lane, src_index = launch_flows(rt)
    src_name = np.zeros(src_lane.size, dtype=np.int64)
    for lane_id in np.flatnonzero(np.bincount(src_lane)).tolist():
        sel = src_lane == lane_id
        src_name[sel] = rt.lanes[lane_id].name_id[src_index[sel]]
    hit = graph_names[src_name]
    out[pos[hit]] = True
    sources = dict(zip(pos[hit].tolist(), zip(src_lane[hit].tolist(), src_index[hit].tolist())))
    return out, sources


def _skinny_bytes(rt: RankTrace, dev, skinny: np.ndarray, skinny_names: np.ndarray, dur: np.ndarray,  # noqa: ANN001
                  graph: np.ndarray, out: KernelEvidence) -> None:
    """Fill ``out``'s skinny byte figures (see the module docstring) for the window's skinny calls
    ``skinny`` (``dur``: their time in the window): each call's bytes from its op (split over the op's
    math kernels by duration, as :func:`.kernel_table.kernel_rows` does), else, for a graph-replayed
    call, its name's mean bytes per call with shapes anywhere in the trace (a warm-up before the
    window counts)."""
    out.skinny_seconds = float(dur[skinny].sum()) / 1e6
    ext = external_ids(rt.gpu_lanes)
    op_ext, _, op_bytes, _ = op_counts_by_external_id(rt)
    if not op_ext.size or ext.size != dev.start_us.size:
        return
    math_names = math_kernel_names(rt)
    math = (dev.kernel_class == _GEMM) & math_names[dev.name_id]
    pos, joined = join_ops(op_ext, ext)
    joined &= math & (op_bytes[pos] > 0)
    own = np.zeros(dev.start_us.size)
    if joined.any():   # an op's bytes split over its math kernels by (whole) duration
        own[joined] = op_bytes[pos[joined]] * duration_weights(ext[joined], dev.duration_us[joined])
    shaped = skinny & joined
    anywhere = joined & skinny_names[dev.name_id]   # joined: math kernels, class gemm
    n = len(rt.strings)
    calls = np.bincount(dev.name_id[anywhere], minlength=n)
    per_call = np.bincount(dev.name_id[anywhere], weights=own[anywhere], minlength=n) / np.maximum(calls, 1)
    borrowed = skinny & graph & ~joined & (calls[dev.name_id] > 0)
    out.skinny_shaped_seconds = float(dur[shaped | borrowed].sum()) / 1e6
    out.skinny_borrowed_seconds = float(dur[borrowed].sum()) / 1e6
    # a call clipped by the window moves the part of its bytes that lies in it
    frac = np.where(dev.end_us > dev.start_us, dur / np.maximum(dev.duration_us, 1e-30), 0.0)
    out.skinny_bytes = float((own[shaped] * frac[shaped]).sum() + (per_call[dev.name_id[borrowed]] * frac[borrowed]).sum())
