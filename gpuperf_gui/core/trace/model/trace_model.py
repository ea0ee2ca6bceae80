"""Columnar trace model: what a loaded torch.profiler (Kineto) trace becomes.

One :class:`TraceModel` holds one :class:`RankTrace` per rank (one per file). A rank holds
:class:`Lane` objects, one per timeline row of the original trace (a CPU thread, a GPU stream, ...),
and each lane holds its events as parallel numpy arrays sorted by start time. There are no per-event
Python objects: strings (event names, categories) are interned in :attr:`RankTrace.strings`, and
events refer to them by integer id.

Times are microseconds (``_us``), as in the file, relative to :attr:`RankTrace.origin_us` (an
absolute time on the profiler's clock). In a :class:`TraceModel` all ranks share one origin, so
times of different ranks are directly comparable.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np


LaneKind = Literal["cpu", "gpu_compute", "gpu_comm", "gpu_copy", "gpu_annotation", "gpu_sync"]
"""Kinds of lanes.

``cpu``            a host thread (ops, annotations, runtime/driver calls, python functions).
``gpu_compute``    a GPU stream whose kernel time is mostly not communication.
``gpu_comm``       a GPU stream whose kernel time is mostly NCCL/RCCL kernels.
``gpu_copy``       a GPU stream carrying only memcpy/memset.
``gpu_annotation`` ``gpu_user_annotation`` spans (e.g. ``ProfilerStep#3`` projected on a stream);
                   not kernels, never counted as busy time.
``gpu_sync``       ``cuda_sync`` events (Stream/Event/Context Sync); not kernels either.
"""

GPU_ACTIVITY_KINDS: tuple[str, ...] = ("gpu_compute", "gpu_comm", "gpu_copy")
"""Lane kinds whose events are real device work (kernels, copies, memsets)."""


class TraceFormatError(ValueError):
    """The file is not a trace we can read. The message names the file and the reason."""


class ClusterError(RuntimeError):
    """Dask is not installed, the address is not valid, or the scheduler cannot be reached
    (:mod:`.cluster` raises it; here so a caller catches it without importing the engine)."""


class NotATraceError(TraceFormatError):
    """The file is valid JSON but not a trace (a config, a ``meta.json`` beside the rank traces)."""


class StringTable:
    """Interned strings: ``table[i]`` is a string, ``table.intern(s)`` its id (dense, from 0, in order
    of first appearance)."""

    __slots__ = ("_strings", "_ids")

    def __init__(self, strings: list[str] | None = None) -> None:
        self._strings: list[str] = []
        self._ids: dict[str, int] = {}
        for s in strings or ():
            self.intern(s)

    def intern(self, s: str) -> int:
        """Return the id of ``s``, adding it if new."""
        i = self._ids.setdefault(s, len(self._strings))
        if i == len(self._strings):
            self._strings.append(s)
        return i

    def find(self, s: str) -> int:
        """Return the id of ``s`` or -1 if absent (does not add it)."""
        return self._ids.get(s, -1)

    def __getitem__(self, i: int) -> str:
        return self._strings[int(i)]

    def __len__(self) -> int:
        return len(self._strings)

    def __iter__(self) -> Iterator[str]:
        return iter(self._strings)

    def ids_matching(self, predicate) -> np.ndarray:  # noqa: ANN001 (callable[[str], bool])
        """Boolean mask over ids: ``mask[i]`` is ``predicate(table[i])``."""
        return np.fromiter((bool(predicate(s)) for s in self._strings), dtype=bool,
                           count=len(self._strings))


def _column(dtype: type) -> np.ndarray:
    """A dataclass field holding an empty array of ``dtype`` by default."""
    return field(default_factory=lambda: np.zeros(0, dtype=dtype))


@dataclass(eq=False)
class Lane:
    """One timeline row: events as parallel arrays of equal length, sorted by ``start_us``; ties in
    ``start_us`` are ordered longest first, so a parent precedes its children."""

    lane_id: int               # index of this lane in RankTrace.lanes
    kind: str                  # a LaneKind
    label: str                 # display name ("thread 785244 (python3.8)", "GPU 1 stream 7", ...)
    pid: int | str             # the trace's process and thread ids of this row (int or str, as in the file)
    tid: int | str
    device: int | None = None  # GPU index of a GPU lane
    stream: int | None = None  # CUDA/HIP stream id of a GPU lane
    start_us: np.ndarray = _column(np.float64)     # relative to the rank's origin
    duration_us: np.ndarray = _column(np.float64)
    name_id: np.ndarray = _column(np.int32)        # ids into RankTrace.strings
    category_id: np.ndarray = _column(np.int32)
    depth: np.ndarray = _column(np.int16)
    """Nesting depth (0 = outermost); overlapping (not nested) events get stacked depths."""
    correlation: np.ndarray = _column(np.int64)    # CUDA correlation id (runtime call <-> kernel), -1: none
    external_id: np.ndarray = _column(np.int64)    # Kineto "External id" (op <-> launch <-> kernel), -1: none
    kernel_class: np.ndarray = _column(np.int8)    # index into KERNEL_CLASSES for device work, -1 otherwise
    bytes: np.ndarray = _column(np.float64)        # bytes moved (memcpy/memset ``bytes`` arg), NaN: none
    flops: np.ndarray = _column(np.float64)
    """FLOPs the profiler recorded (``with_flops``) or estimated from GEMM-like ops' shapes, NaN: unknown."""
    shapes_id: np.ndarray = _column(np.int32)
    """Id into RankTrace.strings of the op's "Input Dims" text (GEMM/conv/attention-like CPU ops), else -1."""
    op_precision: np.ndarray = _column(np.int8)
    """PRECISION_CODES code of the narrowest float type in a GEMM/attention op's "Input type", else -1."""
    io_bytes: np.ndarray = _column(np.float32)
    """Bytes of an ATen op's largest recorded input tensor (``record_shapes``), NaN: none recorded (the
    what-if's floor for a fused elementwise chain)."""

    def __len__(self) -> int:
        return int(self.start_us.shape[0])

    @property
    def end_us(self) -> np.ndarray:
        """End times (start + duration), a new array."""
        return self.start_us + self.duration_us

    @property
    def is_gpu(self) -> bool:
        """True for any GPU row (activity, annotation or sync)."""
        return self.kind != "cpu"

    def window(self, t0_us: float, t1_us: float) -> slice:
        """Slice of events that *start* in ``[t0_us, t1_us)``: widen ``t0_us`` by the lane's longest
        duration for those that start before it and reach into the window."""
        lo = int(np.searchsorted(self.start_us, t0_us, side="left"))
        hi = int(np.searchsorted(self.start_us, t1_us, side="left"))
        return slice(lo, hi)


@dataclass(frozen=True)
class StepWindow:
    """One ``ProfilerStep#N``: the CPU annotation span and, if known, its GPU span.

    ``gpu_start_us``/``gpu_end_us`` are the first start and last end of the device work launched
    from inside the CPU span (failing that, the ``gpu_user_annotation`` of the same name, which
    Kineto often draws shorter than the step); NaN if the step launched no device work.
    """

    number: int
    cpu_start_us: float
    cpu_end_us: float
    gpu_start_us: float = float("nan")
    gpu_end_us: float = float("nan")


@dataclass(eq=False)
class Flows:
    """Launch flows: CPU runtime/driver call -> device activity it launched (by correlation id).

    Parallel int arrays; ``src_*`` index a CPU lane and an event in it, ``dst_*`` a GPU lane and an
    event in it (indices into the sorted lane arrays). A CUDA-graph launch has one source and many
    destinations.
    """

    src_lane: np.ndarray = _column(np.int32)
    src_index: np.ndarray = _column(np.int64)
    dst_lane: np.ndarray = _column(np.int32)
    dst_index: np.ndarray = _column(np.int64)
    correlation: np.ndarray = _column(np.int64)

    def __len__(self) -> int:
        return int(self.src_lane.shape[0])


@dataclass(frozen=True)
class Truncation:
    """What is known about a file that was cut short (a killed job, Kineto's partial ``.tmp``).

    ``bytes_total`` is the (decompressed) size of the text that is present, ``bytes_used`` the
    prefix that parsed, ``events_kept`` the complete events salvaged. ``bytes_cut`` is only the
    partial event at the end of what is present: the rest of the original file is missing and its
    size cannot be known (neither the JSON nor a cut gzip stream records it).
    ``gpu_events_may_be_missing`` is set when the kept part has CPU events but no GPU events:
    Kineto writes the GPU events after the CPU ones, so they were probably in the lost part.
    """

    bytes_total: int
    bytes_used: int
    events_kept: int
    reason: str
    gpu_events_may_be_missing: bool = False
    launches_without_device_event: int = 0
    """Kernel-launch calls in the kept part whose kernel is not there (set with the flag above)."""
    launches_kept: int = 0

    @property
    def bytes_cut(self) -> int:
        return self.bytes_total - self.bytes_used

    def describe(self) -> str:
        text = (f"truncated ({self.reason}): the file ends in the middle of the trace, so everything "
                f"after its first {self.bytes_used:,} bytes is lost (how much is unknown); kept "
                f"{self.events_kept:,} complete events")
        if self.bytes_cut:
            text += f", dropped a partial event ({self.bytes_cut:,} bytes) at the cut"
        if self.gpu_events_may_be_missing:
            detail = (f"{self.launches_without_device_event:,} of the {self.launches_kept:,} kernel "
                      "launches kept have no kernel" if self.launches_kept else
                      "the kept part has CPU events only")
            text += (f". GPU events may be missing: {detail}, and Kineto writes GPU events after "
                     "the CPU ones")
        return text


@dataclass(eq=False)
class RankTrace:
    """One rank (one file): lanes, steps, flows and file metadata."""

    rank: int                  # distributedInfo.rank, else from the file name, else its order
    file: str                  # the file path as given
    origin_us: float           # absolute time (profiler clock, µs) that lane times are relative to
    span_us: tuple[float, float]
    """(first start, last end) over all events except the "Record Window End" marker."""
    strings: StringTable       # interned names and categories
    lanes: list[Lane]          # CPU lanes first, then GPU lanes by (device, stream)
    steps: list[StepWindow] = field(default_factory=list)  # ProfilerStep#N windows in time order
    flows: Flows = field(default_factory=Flows)
    rank_source: str = "order"  # "distributedInfo", "filename" or "order"
    device_name: str = ""      # the first GPU's name in deviceProperties
    device_properties: list[dict] = field(default_factory=list)  # the raw deviceProperties entries
    distributed_info: dict | None = None   # the raw distributedInfo
    gpuperf_unprofiled: dict | None = None  # the raw gpuperf_unprofiled (step times `gpuperf profile` took)
    metadata: dict = field(default_factory=dict)  # other small top-level keys (schemaVersion, versions, ...)
    dialect: str = "kineto"    # "kineto-2021", "kineto" (int µs), "kineto-ns" (float ts, baseTimeNanoseconds)
    n_events: int = 0          # events read from the file (all phases)
    truncation: Truncation | None = None   # set when the file was cut short and salvaged
    warnings: list[str] = field(default_factory=list)  # non-fatal problems found while loading
    file_ts_offset_us: float = 0.0
    """Add to a lane time to get the ``ts`` written in the file (HTA-style rounding needs it)."""

    def lanes_of_kind(self, *kinds: str) -> list[Lane]:
        return [lane for lane in self.lanes if lane.kind in kinds]

    @property
    def cpu_lanes(self) -> list[Lane]:
        return self.lanes_of_kind("cpu")

    def cpu_spans(self, matches: np.ndarray, column: str = "name_id") -> tuple[np.ndarray, np.ndarray]:
        """(start_us, end_us) of the CPU events whose string id in ``column`` ("name_id" or
        "category_id") is True in ``matches`` (a mask over the string table), unsorted."""
        starts, ends = [np.zeros(0)], [np.zeros(0)]
        for lane in self.cpu_lanes:
            m = matches[getattr(lane, column)]
            starts.append(lane.start_us[m])
            ends.append(lane.start_us[m] + lane.duration_us[m])
        return np.concatenate(starts), np.concatenate(ends)

    @property
    def gpu_lanes(self) -> list[Lane]:
        """Device-work lanes (compute, comm, copy)."""
        return self.lanes_of_kind(*GPU_ACTIVITY_KINDS)

    def shift(self, delta_us: float) -> None:
        """Move the origin earlier by ``delta_us`` (all lane times grow by it); used to align ranks."""
        if delta_us == 0:
            return
        for lane in self.lanes:
            lane.start_us += delta_us
        self.steps = [StepWindow(s.number, s.cpu_start_us + delta_us, s.cpu_end_us + delta_us,
                                 s.gpu_start_us + delta_us, s.gpu_end_us + delta_us)
                      for s in self.steps]
        self.span_us = (self.span_us[0] + delta_us, self.span_us[1] + delta_us)
        self.origin_us -= delta_us
        self.file_ts_offset_us -= delta_us


@dataclass(eq=False)
class TraceModel:
    """All ranks of one job, aligned on a common clock (same ``origin_us``), sorted by rank.

    ``notes`` says which files of a run folder were skipped (not traces) or could not be loaded
    (a broken rank file: the other ranks are here, that one is named with the reason).
    """

    ranks: list[RankTrace]
    notes: list[str] = field(default_factory=list)

    @property
    def span_us(self) -> tuple[float, float]:
        if not self.ranks:
            return (0.0, 0.0)
        return (min(r.span_us[0] for r in self.ranks), max(r.span_us[1] for r in self.ranks))

    @classmethod
    def aligned(cls, ranks: list[RankTrace]) -> TraceModel:
        """Sort ranks and shift them onto the earliest origin (profiler clocks are shared)."""
        ranks = sorted(ranks, key=lambda r: r.rank)
        if ranks:
            origin = min(r.origin_us for r in ranks)
            for r in ranks:
                r.shift(r.origin_us - origin)
        return cls(ranks)
