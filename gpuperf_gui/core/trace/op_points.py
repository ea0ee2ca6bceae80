"""Roofline points of a trace's ops: the one source of "Show on roofline" and of
``gpuperf diagnose --json``'s per-rank ``roofline_points``.

One point per (op name, input shapes) whose FLOPs and bytes :mod:`.flops` could estimate (GEMMs,
attention) and that launched device work itself. FLOPs, bytes and seconds are summed over the
calls; seconds are the device time of the kernels the op launched (self device time, the op
table's rule, so a composite op such as ``aten::linear`` gets no point of its own and its
``aten::addmm`` gets one, never both).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .build import LAUNCH_CATEGORIES
from .flops import CAUSAL_NOTE
from .model import RankTrace
from .optable import (HOST_ROW_CATEGORIES, PYTHON_CATEGORIES, _ids, _kernel_time_by_launch, host_rows_with_device_time,
                      name_groups)

if TYPE_CHECKING:
    from ..roofline import RooflinePoint


@dataclass(frozen=True)
class OpPoint:
    """One op (name and shapes) on the roofline; totals over ``calls``, SI units."""

    name: str
    shapes: str
    calls: int
    flops: float
    bytes: float
    seconds: float

    @property
    def causal(self) -> bool:
        """Causal attention: FLOPs counted for the unmasked half."""
        return self.shapes.endswith(CAUSAL_NOTE)

    @property
    def label(self) -> str:
        return f"{self.name} {self.shapes} x{self.calls}".strip()

    @property
    def ai_flops_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else float("nan")

    @property
    def achieved_flops_per_s(self) -> float:  # NaN (JSON null) when the time rounds to 0 s
        return self.flops / self.seconds if self.seconds > 0 else float("nan")

    def roofline_point(self) -> RooflinePoint:
        from ..roofline import RooflinePoint  # noqa: PLC0415 - the window's; `gpuperf diagnose` needs none

        return RooflinePoint(label=self.label, flops=self.flops, bytes=self.bytes, seconds=self.seconds,
                             kind="trace")

    def to_json(self) -> dict:
        """DESIGN.md's keys, plus ``shapes`` (the recorded "Input Dims") and ``causal``."""
        return {"name": self.name, "calls": self.calls, "flops": self.flops, "bytes": self.bytes,
                "seconds": self.seconds, "ai_flops_per_byte": self.ai_flops_per_byte,
                "achieved_flops_per_s": self.achieved_flops_per_s,
                "shapes": self.shapes.removesuffix(CAUSAL_NOTE), "causal": self.causal}


def op_points(rt: RankTrace, *, min_seconds: float = 0.0) -> list[OpPoint]:
    """Points of one rank, longest device time first."""
    host_cat = rt.strings.ids_matching(lambda s: s in HOST_ROW_CATEGORIES)
    kernel_us = _kernel_time_by_launch(rt)
    launch_ids = _ids(rt, LAUNCH_CATEGORIES)
    group = name_groups(rt)
    python_ids = _ids(rt, PYTHON_CATEGORIES)
    groups: dict[tuple[int, int], list[float]] = {}
    for lane in rt.cpu_lanes:
        if not np.any(~np.isnan(lane.flops)):
            continue
        got = host_rows_with_device_time(lane, host_cat, kernel_us, launch_ids, group, None, python_ids)
        if got is None:
            continue
        rows, dev_op = got.rows, got.self_device_us
        flops, nbytes = lane.flops[rows], lane.bytes[rows]
        ok = ~np.isnan(flops) & ~np.isnan(nbytes) & (flops > 0) & (nbytes > 0) & (dev_op > 0)
        for r in np.flatnonzero(ok).tolist():
            key = (int(lane.name_id[rows[r]]), int(lane.shapes_id[rows[r]]))
            acc = groups.setdefault(key, [0.0, 0.0, 0.0, 0])
            acc[0] += float(flops[r])
            acc[1] += float(nbytes[r])
            acc[2] += float(dev_op[r]) / 1e6
            acc[3] += 1
    points = [OpPoint(rt.strings[name_id], rt.strings[shapes_id] if shapes_id >= 0 else "", int(calls), f, b, sec)
              for (name_id, shapes_id), (f, b, sec, calls) in groups.items() if sec >= min_seconds]
    points.sort(key=lambda p: (-p.seconds, p.name, p.shapes))
    return points
