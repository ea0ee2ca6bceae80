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

from ..vocabulary.flops import CAUSAL_NOTE
from ..model.trace_model import Lane, RankTrace
from .optable import HostRows, OpRow, has_flops, host_context, op_table, point_rows

if TYPE_CHECKING:
    from ...roofline import RooflinePoint


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
        from ...roofline import RooflinePoint  # noqa: PLC0415 - the window's; `gpuperf diagnose` needs none

        return RooflinePoint(label=self.label, flops=self.flops, bytes=self.bytes, seconds=self.seconds,
                             kind="trace")

    def to_json(self) -> dict:
        """docs/cli.md's keys, plus ``shapes`` (the recorded "Input Dims") and ``causal``."""
        return {"name": self.name, "calls": self.calls, "flops": self.flops, "bytes": self.bytes,
                "seconds": self.seconds, "ai_flops_per_byte": self.ai_flops_per_byte,
                "achieved_flops_per_s": self.achieved_flops_per_s,
                "shapes": self.shapes.removesuffix(CAUSAL_NOTE), "causal": self.causal}


def op_points(rt: RankTrace, *, min_seconds: float = 0.0) -> list[OpPoint]:
    """Points of one rank, longest device time first."""
    ctx = host_context(rt)
    sums = PointSums(rt)
    for lane in rt.cpu_lanes:
        if has_flops(lane):
            sums.add(lane, point_rows(lane, ctx))
    return sums.points(min_seconds)


def op_table_and_points(rt: RankTrace) -> tuple[list[OpRow], list[OpPoint]]:
    """:func:`.optable.op_table` and :func:`op_points` of one rank, the points from the table's host
    rows (finding the nesting again took as long as the table)."""
    sums = PointSums(rt)
    ops = op_table(rt, on_point_rows=sums.add)
    return ops, sums.points()


class PointSums:
    """The points' totals, lane by lane: per (name, shapes), FLOPs, bytes, seconds and calls summed
    in lane and row order (the floats of a sum over the rows one by one)."""

    def __init__(self, rt: RankTrace) -> None:
        self.rt = rt
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, lane: Lane, got: HostRows | None) -> None:
        """Take the rows of ``lane`` that get a point: FLOPs and bytes known and positive, and
        device time launched by the op itself."""
        if got is None:
            return
        launched = np.flatnonzero(got.self_device_us > 0)  # the few rows with device time first
        rows, dev_op = got.rows[launched], got.self_device_us[launched]
        flops, nbytes = lane.flops[rows], lane.bytes[rows]
        ok = ~np.isnan(flops) & ~np.isnan(nbytes) & (flops > 0) & (nbytes > 0)
        picked = rows[ok]
        self.parts.append((lane.name_id[picked].astype(np.int64), lane.shapes_id[picked].astype(np.int64),
                           flops[ok], nbytes[ok], dev_op[ok] / 1e6))

    def points(self, min_seconds: float = 0.0) -> list[OpPoint]:
        """The points, longest device time first."""
        if not self.parts:
            return []
        name, shapes, flops, nbytes, seconds = (np.concatenate([p[k] for p in self.parts]) for k in range(5))
        if not name.size:
            return []
        key = name * (int(shapes.max()) + 2) + (shapes + 1)  # shapes_id -1: none recorded
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        n = first.size
        f, b, sec = (np.bincount(inverse, weights=w, minlength=n) for w in (flops, nbytes, seconds))
        calls = np.bincount(inverse, minlength=n)
        strings = self.rt.strings
        points = []
        for g in np.argsort(first, kind="stable").tolist():  # first-seen order, as a dict's
            if sec[g] >= min_seconds:
                i = int(first[g])
                shapes_id = int(shapes[i])
                points.append(OpPoint(strings[int(name[i])], strings[shapes_id] if shapes_id >= 0 else "",
                                      int(calls[g]), float(f[g]), float(b[g]), float(sec[g])))
        points.sort(key=lambda p: (-p.seconds, p.name, p.shapes))
        return points
