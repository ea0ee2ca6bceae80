"""Figures the MFU tab takes from a trace: the step time and its named losses (the gap attribution)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..analysis.rank_analysis import RankAnalysis
from ..analysis.kernel_roof import TraceKernels
from .signatures import host_sync_bound as host_sync


@dataclass(frozen=True)
class TraceMfuFigures:
    """Step time and named losses, as fractions of the step time (for the MFU tab's stacked bar).

    ``step_time_s`` is the median steady-state step (None without ``ProfilerStep`` annotations). The
    fractions never sum above 1; what they leave is "unexplained" or useful time.
    """

    step_time_s: float | None
    exposed_comm: float
    data_stall: float
    launch_gaps: float
    pipeline_bubble: float
    memory_bound: float
    source: str = ""
    world_size: int | None = None
    """GPUs in the job as a trace's ``distributedInfo.world_size`` records it; None when no trace
    records it (one rank file of an 8-GPU job says nothing about the other seven)."""
    device_name: str | None = None
    """``deviceProperties`` name of the first rank's GPU ("NVIDIA H200"), None when not recorded."""
    ranks_loaded: int = 0
    """Ranks the figures were computed from (files loaded), whatever the job's world size."""
    host_sync: float = 0.0
    """GPU idle after blocking syncs that reading later would give back (taken out of ``data_stall``)."""
    steady_steps: int = 0
    """Steady (non-warm-up) ``ProfilerStep`` steps behind the median step time (fewest of any rank).
    They ran under the profiler, so they are slower than unprofiled steps."""
    kernels: TraceKernels = field(default_factory=TraceKernels)
    """The ranks' math kernels and the trace's precision: the MFU's peak precision and the GEMM
    inefficiency (:meth:`.kernel_roof.TraceKernels.gemm`, the Overview's figure) come from them."""
    what_if: tuple = ()
    """:class:`.what_if_shown.WhatIfRow` per cause, largest gain first (the MFU tab's "What if"),
    when the trace came with them."""

    @property
    def precision(self):  # noqa: ANN201 (precision.TracePrecision)
        return self.kernels.precision

    def with_precision_override(self, precision: str | None) -> TraceMfuFigures:
        """These figures with the trace's precision chosen by the user (None: the detected one)."""
        kernels = replace(self.kernels, precision=self.kernels.precision.with_override(precision))
        return replace(self, kernels=kernels)

    def gemm(self, device):  # noqa: ANN001, ANN201 (hardware.Device | None -> kernel_roof.GemmRoof)
        """The GEMMs against their roofs on ``device``, at the chosen precision if any."""
        return self.kernels.gemm(device, self.kernels.precision.override)


def mfu_figures(analyses: list[RankAnalysis]) -> TraceMfuFigures:
    """Average the per-rank losses; the step time is the median over ranks.

    ``analyses`` in rank order (as :class:`.api.TraceResult` holds them): the first gives the device.
    """
    if not analyses:
        return TraceMfuFigures(None, 0.0, 0.0, 0.0, 0.0, 0.0)
    all_parts = np.array([_rank_parts(a) for a in analyses]).mean(axis=0)
    parts, host_sync = all_parts[:5], float(all_parts[5])
    steps = [a.step_time_median_s for a in analyses if a.step_time_median_s]
    source = analyses[0].file if len(analyses) == 1 else f"{len(analyses)} ranks"
    recorded = [a.world_size for a in analyses if a.world_size]
    steady = min(sum(not s.warmup and not s.partial for s in a.steps) for a in analyses)
    return TraceMfuFigures(float(np.median(steps)) if steps else None, *map(float, parts), source=source,
                           world_size=max(recorded) if recorded else None,
                           device_name=analyses[0].device or None, ranks_loaded=len(analyses),
                           steady_steps=steady, host_sync=host_sync,
                           kernels=TraceKernels.of([a.kernels for a in analyses if a.kernels is not None]))


def _rank_parts(a: RankAnalysis) -> list[float]:
    c = a.idle_causes  # the diagnosis's own attribution of the compute idle (one cause per µs)
    memory = a.gpu_busy_fraction * a.kernel_time_share.get("elementwise", 0.0)
    sync = host_sync.share(c)
    parts = [c.communication, c.data - sync, c.launch, c.pipeline, memory, sync]
    total = sum(parts)
    return [p / total for p in parts] if total > 1.0 else parts

