"""The op table of ``prof.key_averages().table(sort_by="cuda_time_total")``, rebuilt from a trace.

Rows: host events (``cpu_op``/``Operator``, ``user_annotation``, runtime/driver calls) grouped by
name, and device rows (kernels, copies, and ``gpu_user_annotation`` spans, which torch lists with
their span as "self CUDA" time) grouped by name. ``ProfilerStep#N`` is grouped as ``ProfilerStep*``
as torch does.

* self CPU = duration minus the durations of host children (nesting on the same thread);
  total CPU = duration.
* self device = device work launched by the op itself: each kernel goes to the innermost op that
  encloses its launch call (joined through the correlation id); total device = self + children's.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np

from .build import GPU_ACTIVITY_CATEGORIES, LAUNCH_CATEGORIES, _depths
from .model import RankTrace

HOST_ROW_CATEGORIES = frozenset({"cpu_op", "Operator", "user_annotation"}) | LAUNCH_CATEGORIES
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*\d+$")


@dataclass
class OpRow:
    """One row; times in seconds. ``kind`` is "host" or "device"."""

    name: str
    kind: str
    calls: int
    self_cpu_s: float
    cpu_total_s: float
    self_device_s: float
    device_total_s: float
    flops: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _group_name(name: str) -> str:
    return "ProfilerStep*" if _STEP_RE.match(name) else name


def op_table(rt: RankTrace) -> list[OpRow]:
    """All rows, sorted by total device time then total CPU time, descending."""
    host_cat = rt.strings.ids_matching(lambda s: s in HOST_ROW_CATEGORIES)
    n_strings = len(rt.strings)
    self_cpu = np.zeros(n_strings)
    total_cpu = np.zeros(n_strings)
    self_dev = np.zeros(n_strings)
    total_dev = np.zeros(n_strings)
    calls = np.zeros(n_strings, dtype=np.int64)
    flops = np.zeros(n_strings)
    host_rows = np.zeros(n_strings, dtype=bool)
    device_rows = np.zeros(n_strings, dtype=bool)

    kernel_us = _kernel_time_by_launch(rt)
    launch_ids = _ids(rt, LAUNCH_CATEGORIES)
    for lane in rt.cpu_lanes:
        got = host_rows_with_device_time(lane, host_cat, kernel_us, launch_ids)
        if got is None:
            continue
        rows, depth, parent, dur, dev_op = got
        dev_total = dev_op.copy()
        child_cpu = np.zeros(rows.size)
        for d in range(int(depth.max()), 0, -1):
            at = np.flatnonzero((depth == d) & (parent >= 0))
            np.add.at(dev_total, parent[at], dev_total[at])
            np.add.at(child_cpu, parent[at], dur[at])
        names = lane.name_id[rows]
        np.add.at(self_cpu, names, dur - child_cpu)
        np.add.at(total_cpu, names, dur)
        np.add.at(self_dev, names, dev_op)
        np.add.at(total_dev, names, dev_total)
        np.add.at(calls, names, 1)
        f = lane.flops[rows]
        ok = ~np.isnan(f)
        np.add.at(flops, names[ok], f[ok])
        host_rows[names] = True
    out = _merge_rows(rt, host_rows, "host", calls, self_cpu, total_cpu, self_dev, total_dev, flops)

    d_calls = np.zeros(n_strings, dtype=np.int64)
    d_time = np.zeros(n_strings)
    for lane in rt.lanes_of_kind("gpu_compute", "gpu_comm", "gpu_copy", "gpu_annotation"):
        np.add.at(d_calls, lane.name_id, 1)
        np.add.at(d_time, lane.name_id, lane.duration_us)
        device_rows[lane.name_id] = True
    zeros = np.zeros(n_strings)
    out += _merge_rows(rt, device_rows, "device", d_calls, zeros, zeros, d_time, d_time, zeros)
    out.sort(key=lambda r: (-r.device_total_s, -r.cpu_total_s, r.name))
    return out


def host_rows_with_device_time(lane, host_cat: np.ndarray, kernel_us: dict[int, np.ndarray],  # noqa: ANN001
                               launch_ids: np.ndarray):  # noqa: ANN201
    """Host rows of a CPU lane with nesting and the device µs each op launched itself.

    Returns ``(rows, depth, parent, duration_us, self_device_us)`` or None when the lane has no
    host rows. Kernels launched by a runtime call are credited to the innermost enclosing op.
    """
    rows = np.flatnonzero(host_cat[lane.category_id])
    if rows.size == 0:
        return None
    start, dur = lane.start_us[rows], lane.duration_us[rows]
    depth = _depths(start, dur).astype(np.int64)
    parent = _parents(depth)
    own_dev = kernel_us.get(lane.lane_id)
    dev_op = own_dev[rows].copy() if own_dev is not None else np.zeros(rows.size)
    is_launch = np.isin(lane.category_id[rows], launch_ids)
    moved = is_launch & (parent >= 0) & (dev_op > 0)
    np.add.at(dev_op, parent[moved], dev_op[moved])
    dev_op[moved] = 0.0
    return rows, depth, parent, dur, dev_op


def _ids(rt: RankTrace, names: frozenset[str]) -> np.ndarray:
    return np.array([rt.strings.find(n) for n in names if rt.strings.find(n) >= 0], dtype=np.int32)


def _merge_rows(rt: RankTrace, mask: np.ndarray, kind: str, calls: np.ndarray, self_cpu: np.ndarray,
                total_cpu: np.ndarray, self_dev: np.ndarray, total_dev: np.ndarray, flops: np.ndarray
                ) -> list[OpRow]:
    merged: dict[str, OpRow] = {}
    for i in np.flatnonzero(mask).tolist():
        name = _group_name(rt.strings[i])
        row = merged.get(name)
        if row is None:
            row = merged[name] = OpRow(name, kind, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
        row.calls += int(calls[i])
        row.self_cpu_s += float(self_cpu[i]) / 1e6
        row.cpu_total_s += float(total_cpu[i]) / 1e6
        row.self_device_s += float(self_dev[i]) / 1e6
        row.device_total_s += float(total_dev[i]) / 1e6
        row.flops = (row.flops or 0.0) + float(flops[i])
    for row in merged.values():
        row.flops = row.flops or None
    return list(merged.values())


def _parents(depth: np.ndarray) -> np.ndarray:
    """Parent index of each event of a (start-sorted) nested sequence; -1 for roots."""
    parent = np.full(depth.size, -1, dtype=np.int64)
    positions = np.arange(depth.size)
    for d in range(1, int(depth.max()) + 1 if depth.size else 0):
        child = positions[depth == d]
        cand = positions[depth == d - 1]
        if child.size == 0 or cand.size == 0:
            continue
        k = np.searchsorted(cand, child, side="right") - 1
        ok = k >= 0
        parent[child[ok]] = cand[k[ok]]
    return parent


def _kernel_time_by_launch(rt: RankTrace) -> dict[int, np.ndarray]:
    """Per CPU lane: device µs launched by each of its events (through the launch flows)."""
    out: dict[int, np.ndarray] = {}
    flows = rt.flows
    if not len(flows):
        return out
    dur = np.empty(len(flows))
    gpu_cat = rt.strings.ids_matching(lambda s: s in GPU_ACTIVITY_CATEGORIES)
    for lane_id in np.unique(flows.dst_lane).tolist():
        m = flows.dst_lane == lane_id
        lane = rt.lanes[lane_id]
        idx = flows.dst_index[m]
        dur[m] = np.where(gpu_cat[lane.category_id[idx]], lane.duration_us[idx], 0.0)
    for lane_id in np.unique(flows.src_lane).tolist():
        m = flows.src_lane == lane_id
        acc = np.zeros(len(rt.lanes[lane_id]))
        np.add.at(acc, flows.src_index[m], dur[m])
        out[lane_id] = acc
    return out
