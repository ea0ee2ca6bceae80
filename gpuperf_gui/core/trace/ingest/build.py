"""Typed events -> :class:`.trace_model.RankTrace` (lanes of numpy columns, steps, flows).

Every per-event step is a list comprehension over one field or a numpy operation; the decoded event
structs are dropped when this returns.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import msgspec
import numpy as np

from ..model.name_masks import member_mask, pattern_mask, step_name_mask
from ..model.nesting import nest
from ..vocabulary import schema
from ..vocabulary.categories import GPU_ACTIVITY_CATEGORIES, LAUNCH_CATEGORIES, SKIPPED_CATEGORIES, STEP_NAME_RE
from .decode import BEvent, EEvent, Event, MEvent, TraceFile, XEvent
from ..vocabulary.flops import IO_OP_RE, SHAPED_OP_RE, estimate_op, largest_input_bytes
from ..vocabulary.precision import code_of, dtype_precision
from ..vocabulary.kernel_classes import class_code, classify_kernel
from ..model.trace_model import Flows, Lane, RankTrace, StepWindow, StringTable, TraceFormatError, Truncation

if TYPE_CHECKING:
    from .scanner.scan import ScannedRun

MAX_EVENT_DURATION_US = 7 * 24 * 3600 * 1e6
"""Durations beyond 7 days are CUPTI overflow (HTA's MAX_EVENT_DURATION_US): set to 0."""

_ROLE_CPU, _ROLE_GPU, _ROLE_ANNOTATION, _ROLE_SYNC, _ROLE_SKIP = 0, 1, 2, 3, 4
_ROLE_KIND = {_ROLE_CPU: "cpu", _ROLE_GPU: "gpu_compute", _ROLE_ANNOTATION: "gpu_annotation",
              _ROLE_SYNC: "gpu_sync"}
MAX_STEP_DIGITS = 18
"""A step number of more digits is not a step: it does not fit an int64."""
MAX_ABS_TS_US = 1e17
"""Timestamps beyond ±1e17 µs (3,000 years) are not times: such events are skipped and counted."""
_RANK_FILE_RE = re.compile(r"(?:rank[-_]?|worker)(\d+)", re.IGNORECASE)
_STREAM_RE = re.compile(r"(\d{1,18})")  # a stream number, not a 5,000-digit string
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_PAIRED_OR_META = frozenset({BEvent, EEvent, MEvent})  # a set: hashing a type beats ``==`` on a tuple


_CATEGORY_ROLE = {"gpu_user_annotation": _ROLE_ANNOTATION, "cuda_sync": _ROLE_SYNC}


def role_of_category(category: str) -> int:
    if category in GPU_ACTIVITY_CATEGORIES:
        return _ROLE_GPU
    return _CATEGORY_ROLE.get(category, _ROLE_SKIP if category in SKIPPED_CATEGORIES else _ROLE_CPU)


def add_events(columns: EventColumns, events: list) -> int:
    """Append decoded events to ``columns``: ``X`` events as columns, ``B``/``E``/``M`` kept (their
    raw args copied out of the text: a ``msgspec.Raw`` is a view of the text it was decoded from);
    returns how many were kept."""
    xs = [e for e in events if type(e) is XEvent]
    columns.add(xs)
    if len(xs) == len(events):
        return 0
    rest = [e for e in events if type(e) in _PAIRED_OR_META]  # other phases are dropped
    for event in rest:
        for attr in _RAW_ARGS:
            raw = getattr(event.args, attr)
            if raw:
                setattr(event.args, attr, msgspec.Raw(bytes(raw)))
    columns.keep_paired_and_meta(rest)
    return len(rest)


def build_rank_columns(columns: EventColumns, meta: TraceFile, path: Path, order_index: int, *,
                       n_entries: int, skipped: int = 0, truncation: Truncation | None = None,
                       warnings: list[str] | None = None) -> RankTrace:
    """Turn the columns of a trace's events (:class:`EventColumns`) into a :class:`RankTrace`; ``n_entries``:
    entries of the event list (skipped ones not counted). Raises :class:`TraceFormatError` when no
    event is a complete (``X``) or paired (``B``/``E``) event with a numeric timestamp (CPU events only
    is fine)."""
    warnings = list(warnings or [])
    names_meta = columns.finish_paired(warnings)
    base_ns = meta.baseTimeNanoseconds if isinstance(meta.baseTimeNanoseconds, (int, float)) else 0
    distributed = meta.distributedInfo if isinstance(meta.distributedInfo, dict) else None
    rank, rank_source = _rank_of(distributed, path, order_index)
    device_props = _device_properties(meta)
    rank_trace = RankTrace(
        rank=rank, file=str(path), origin_us=float(base_ns) / 1e3, span_us=(0.0, 0.0),
        strings=StringTable(), lanes=[], rank_source=rank_source,
        device_name=str(device_props[0].get("name", "")) if device_props else "",
        device_properties=device_props, distributed_info=distributed,
        gpuperf_unprofiled=meta.gpuperf_unprofiled if isinstance(meta.gpuperf_unprofiled, dict) else None,
        metadata=_small_metadata(meta), n_events=n_entries, truncation=truncation,
        warnings=warnings)
    if not columns.n:
        _refuse_unusable(n_entries, skipped, truncation, path)
    ts_finite = bool(np.isfinite(columns.column("ts")).any())
    _fill_lanes(rank_trace, columns, names_meta)
    if rank_trace.truncation is not None:
        rank_trace.truncation = _check_gpu_part(rank_trace)
    if not rank_trace.lanes and not ts_finite:
        _refuse_unusable(n_entries, skipped, truncation, path)
    return rank_trace


_KERNEL_LAUNCH_RE = re.compile(r"launch", re.IGNORECASE)


def _check_gpu_part(rt: RankTrace):  # noqa: ANN202 (Truncation)
    """Flag a truncated trace whose kept part lacks GPU events (Kineto writes them last): it has CPU
    lanes but no GPU lane, or over 10 % of the kernel-launch calls kept have no device event (a
    complete trace matches nearly all of them)."""
    t = rt.truncation
    if not rt.cpu_lanes:
        return t
    if not any(lane.is_gpu for lane in rt.lanes):
        return replace(t, gpu_events_may_be_missing=True)
    launch = member_mask(rt.strings, LAUNCH_CATEGORIES)
    named = pattern_mask(rt.strings, _KERNEL_LAUNCH_RE)
    total = sum(int((launch[lane.category_id] & named[lane.name_id] & (lane.correlation >= 0)).sum())
                for lane in rt.cpu_lanes)
    matched = _distinct_count(rt.flows.src_lane.astype(np.int64) * (1 << 40) + rt.flows.src_index)
    unmatched = max(total - matched, 0)
    if total and unmatched > 0.1 * total:
        return replace(t, gpu_events_may_be_missing=True, launches_without_device_event=unmatched,
                       launches_kept=total)
    return t


def _distinct_count(values: np.ndarray) -> int:
    """How many distinct values (not by ``np.unique``: without flags it imports numpy.ma)."""
    if not values.size:
        return 0
    ordered = np.sort(values)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _refuse_unusable(n_entries: int, skipped: int, cut: Truncation | None, path: Path) -> None:
    n = n_entries + skipped
    if cut is not None and cut.events_kept == 0:
        detail = f"not valid JSON: {cut.reason} ({cut.bytes_total:,} bytes) before its first complete event"
    elif n == 0:
        detail = "the event list is empty"
    else:
        detail = (f"none of the {n} entries of the event list is an X or B/E event with a numeric ts"
                  + (f" ({skipped} are not events or have fields of the wrong type)" if skipped else ""))
    raise TraceFormatError(f"{path}: no events with a phase and timestamp: {detail}")


def _fill_lanes(rt: RankTrace, columns: EventColumns, names_meta: dict[tuple, str]) -> None:
    strings = rt.strings
    # Strings get ids as first seen: categories first, then names, each in order of appearance.
    cat_ids, name_ids = columns.string_ids(strings)
    role_lut = np.array([role_of_category(s) for s in strings], dtype=np.int8)
    ts = columns.take("ts")
    dur = columns.take("dur")
    kept = _kept_events(rt, columns, role_lut, cat_ids, name_ids, ts, dur)
    if kept is None:
        return
    order, lane_sorted, t0, ordered, ts_sample = kept
    kineto_2021 = any(strings.find(c) >= 0 for c in ("Kernel", "Operator", "Runtime"))  # its categories
    external = columns.take("external")
    if kineto_2021 or strings.find("external id") >= 0:
        external = np.maximum(external, columns.take("external_2021"))  # 2021: "external id"
    n = order.size
    # Each event column sorted (held once), named as the Lane field it becomes.
    cols = {"start_us": ts[order] - t0, "duration_us": dur[order], "name_id": name_ids[order],
            "category_id": cat_ids[order], "correlation": columns.take("correlation")[order],
            "external_id": external[order], "kernel_class": np.full(n, -1, dtype=np.int8),
            "bytes": np.full(n, np.nan), "flops": np.full(n, np.nan),
            "shapes_id": np.full(n, -1, dtype=np.int32), "op_precision": np.full(n, -1, dtype=np.int8)}
    del ts, dur, name_ids, cat_ids, external, kept
    start, duration, names_sorted, cats_sorted = (cols[k] for k in ("start_us", "duration_us", "name_id",
                                                                     "category_id"))
    # Each lane holds one role, and the lanes are runs of the sorted rows, CPU lanes first
    # (_lane_sort_key): an event's role is its lane's, and the CPU events are the first cpu_end rows.
    bounds = np.searchsorted(lane_sorted, np.arange(len(ordered) + 1))  # each lane's first row, and the end
    slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    cpu_end = sum(sl.stop - sl.start for sl, key in zip(slices, ordered) if key[0] == _ROLE_CPU)

    gpu_parts = [np.arange(sl.start, sl.stop) for sl, key in zip(slices, ordered) if key[0] == _ROLE_GPU]
    gpu_rows = np.concatenate(gpu_parts) if gpu_parts else np.zeros(0, dtype=np.int64)
    kernel_class = cols["kernel_class"]
    if gpu_rows.size:  # classify each distinct (name, category) pair once
        pair = names_sorted[gpu_rows].astype(np.int64) * len(strings) + cats_sorted[gpu_rows]
        uniq, inverse = _distinct_codes(pair, len(strings) ** 2)
        codes = [class_code(_classify_kernel(strings[p // len(strings)], strings[p % len(strings)]))
                 for p in uniq.tolist()]
        kernel_class[gpu_rows] = np.array(codes, dtype=np.int8)[inverse]
    copy_rows = gpu_rows[kernel_class[gpu_rows] == class_code("copy")]
    cols["bytes"][copy_rows] = columns.device_arg("bytes", order[copy_rows])
    if columns.recorded("flops"):  # ``with_flops=True`` writes a ``flops`` arg on ops
        recorded = columns.take("flops")[order]
        cols["flops"][recorded >= 0] = recorded[recorded >= 0]
    _fill_shaped_ops(rt, columns, order, cpu_end, cols)

    depths = _map_lanes(lambda sl: _depths(start[sl], duration[sl]), slices, [sl.stop - sl.start for sl in slices])
    for lane_id, key in enumerate(ordered):
        sl = slices[lane_id]
        lane = Lane(lane_id=lane_id, kind=_ROLE_KIND[key[0]], label="", pid=key[1], tid=key[2],
                    depth=depths[lane_id], **{k: v[sl] for k, v in cols.items()})
        _describe_lane(lane, key, columns, order[sl.start:sl.start + 1], names_meta)
        rt.lanes.append(lane)
    rt.span_us = (0.0, float((start + duration).max()))
    rt.origin_us += t0
    rt.file_ts_offset_us = t0
    rt.flows = _launch_flows(rt, lane_sorted, bounds, cols["correlation"], cats_sorted, cpu_end)
    rt.steps = _steps(rt, start, duration, bounds)
    if kineto_2021:
        rt.dialect = "kineto-2021"
    elif "baseTimeNanoseconds" in rt.metadata or bool(np.any(ts_sample != np.floor(ts_sample))):
        rt.dialect = "kineto-ns"


def _times_usable(ts: np.ndarray, dur: np.ndarray) -> bool:
    """Whether every event's time is usable and no duration is to be set to 0 (what the masks of
    :func:`_kept_events` would find: four reductions, no mask)."""
    if not ts.size:
        return False
    first, last, shortest, longest = float(ts.min()), float(ts.max()), float(dur.min()), float(dur.max())
    usable = -MAX_ABS_TS_US <= first and last <= MAX_ABS_TS_US       # False for NaN
    in_range = 0.0 <= shortest and longest <= MAX_EVENT_DURATION_US  # False for NaN
    return usable and in_range


def _kept_events(rt: RankTrace, columns: EventColumns, role_lut: np.ndarray, cat_ids: np.ndarray,
                 name_ids: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> tuple | None:
    """The events kept: (their order by lane and time, their lanes in that order, the earliest start,
    the lane keys kept in order, the first 4096 kept starts in file order); None when none is. Where
    every time is usable (:func:`_times_usable`: most traces) no per-event mask is made; elsewhere
    masks find the events dropped (given a category of the skipped role) and warn, and ``dur`` is
    written in place where set to 0."""
    if not _times_usable(ts, dur):
        roles = role_lut[cat_ids]
        keep = (roles != _ROLE_SKIP) & np.isfinite(ts) & np.isfinite(dur) & (np.abs(ts) <= MAX_ABS_TS_US)
        unplaced = np.flatnonzero((roles != _ROLE_SKIP) & ~keep)
        if unplaced.size:
            i = int(unplaced[0])
            name = rt.strings[name_ids[i]][:60]
            rt.warnings.append(f"skipped {unplaced.size:,} events without a usable time (the first: "
                               f"{name!r}, ts={float(ts[i])!r}, dur={float(dur[i])!r}; a time must be finite "
                               "and within ±1e17 µs)")
        bad_dur = np.isfinite(dur) & ((dur < 0) | (dur > MAX_EVENT_DURATION_US))
        if bad_dur.any():
            rt.warnings.append(f"{int(bad_dur.sum())} events with negative or > 7-day durations set to 0")
            dur[bad_dur] = 0.0
        cat_ids = np.where(keep, cat_ids, len(role_lut)).astype(np.int32)
        role_lut = np.append(role_lut, np.int8(_ROLE_SKIP))
    lane_idx, ordered = columns.lane_ids(role_lut, cat_ids)
    if not ordered:
        return None
    order = _lane_time_order(lane_idx, ts, dur)   # lane -1 (not kept) left out
    lane_sorted = lane_idx[order]
    lane_firsts = order[np.searchsorted(lane_sorted, np.arange(len(ordered)))]
    t0 = float(ts[lane_firsts].min())
    if t0 == 0.0:  # 0.0 or -0.0: the sign np.min gives depends on the order it reads: read as there
        t0 = float(ts[lane_idx >= 0].min())
    return order, lane_sorted, t0, ordered, ts[_first_kept(lane_idx, 4096)]


def _first_kept(lane_idx: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` events (file order) of a lane (lane >= 0), reading no more than needed."""
    window = count
    while True:
        found = np.flatnonzero(lane_idx[:window] >= 0)
        if found.size >= count or window >= lane_idx.size:
            return found[:count]
        window *= 2


_RAW_ARGS = tuple(f.attr for f in schema.FIELDS if f.storage == "shaped")
_BATCH_FIELDS = tuple(f for f in schema.FIELDS if f.storage in ("dense", "sparse"))
"""The fields every ``X`` event has a value of, as :meth:`EventColumns.add` reads them."""
_DEVICE = schema.columns("device")


def _as_number(value: float | int | str) -> float:
    """A numeric arg that may be written as a string ("128", "0x0"); NaN if unusable or negative."""
    if isinstance(value, str):
        try:
            value = float(int(value, 0)) if value.lower().startswith("0x") else float(value)
        except ValueError:
            return float("nan")
    return float(value) if value >= 0 else float("nan")


class _Ids(dict):
    """``ids[v]``: the dense id of ``v``, given in order of first appearance (a miss adds it). Read
    through ``map(ids.__getitem__, ...)`` the hits stay in C; only a new value calls Python."""

    def __missing__(self, key: object) -> int:
        i = self[key] = len(self)
        return i


class EventColumns:
    """The complete (``X``) events of a trace as numpy columns, appended a batch at a time in file
    order; ``B``/``E``/``M`` events are kept as structs (rare) and paired at the end, their ``X``
    events after all others. Strings, pids and tids get dense codes as first seen; args are kept only
    where the build reads them: ``bytes``/``device``/``stream`` of non-CPU events (sparse, by event
    index) and the input shapes of GEMM/attention CPU ops."""

    _DTYPES = {**{key: schema.column_dtype(key) for key in schema.columns("dense", "sparse", "device")},
               "device_rows": np.int64}
    """The columns' dtypes (:data:`.schema.FIELDS`), and the event index of each ``device`` row."""

    _DENSE = schema.columns("dense")
    """Columns every event has: written in place into one array each (:meth:`_write_dense`)."""

    def __init__(self, capacity_events: int = 0) -> None:
        """``capacity_events``: room to reserve for the dense columns (a streamed file's size over
        the fewest bytes an event takes; pages never written cost no memory)."""
        self.n = 0
        self._capacity = capacity_events
        self._dense: dict[str, np.ndarray] = {}   # key -> its array, the first ``n`` rows filled
        self._parts: dict[str, list[np.ndarray | int]] = {k: [] for k in self._DTYPES if k not in self._DENSE}
        self._cats, self._names, self._pids, self._tids = _Ids(), _Ids(), _Ids(), _Ids()
        self._cat_role = np.zeros(0, dtype=np.int8)
        self._shaped_name = np.zeros(0, dtype=bool)
        self._shape_keys = _Ids()  # (dims, types, concrete inputs) -> code
        self._shape_rows = [np.zeros(0, dtype=np.int64)]  # event indices of shaped ops with dims, ascending
        self._shape_codes = [np.zeros(0, dtype=np.int32)]  # their shape codes
        self._rest: list[Event] = []

    def add(self, xs: list) -> None:
        """Append the columns of ``xs`` (``X`` events, in file order); ``xs`` can be dropped after."""
        n = len(xs)
        if not n:
            return
        args = list(map(attrgetter("args"), xs))
        codes = self._code_ids()
        values = {}
        for f in _BATCH_FIELDS:
            items, get = (xs if f.within == "event" else args), attrgetter(f.attr)
            if f.column in codes:  # strings, pids and tids: dense codes as first seen
                coded = map(codes[f.column].__getitem__, map(get, items))
                values[f.column] = np.fromiter(coded, dtype=np.int32, count=n)
            elif f.dtype == np.int64:
                values[f.column] = _int_column(items, get)
            else:
                values[f.column] = np.fromiter(map(get, items), dtype=f.dtype, count=n)

        def device_args(rows: np.ndarray) -> list[np.ndarray]:
            sub = [args[i] for i in rows.tolist()]
            return [_numbers(sub, attrgetter(key)) for key in _DEVICE]

        def shape_codes(rows: np.ndarray) -> np.ndarray:
            keys = ((bytes(a.input_dims), bytes(a.input_type), bytes(a.concrete_inputs)) if a.input_dims else None
                    for a in map(args.__getitem__, rows.tolist()))
            return np.fromiter((-1 if key is None else self._shape_keys[key] for key in keys), dtype=np.int32,
                               count=len(rows))

        self._append(values, device_args, shape_codes)

    def add_scanned(self, run: ScannedRun) -> None:
        """Append the ``X`` events of a run the C scanner read (:mod:`.scan`), their codes remapped."""
        if not run.xs:
            return
        col = run.columns
        values = {f.column: col[f.column] for f in _BATCH_FIELDS}
        for key, ids in self._code_ids().items():
            values[key] = _remapped(ids, run.keys[key])[col[key]]

        def device_args(rows: np.ndarray) -> list[np.ndarray]:
            out = [col[key][rows] for key in _DEVICE]
            for column in out:
                column[column < 0] = np.nan  # as _numbers reads them: negative (-1: absent) is none
            return out

        def shape_codes(rows: np.ndarray) -> np.ndarray:
            local = col["shape"][rows]
            used = local[local >= 0]
            if not used.size:
                return local
            # the run's shapes these rows use, coded here in order of first use (as ``add`` codes them)
            uniq, first = np.unique(used, return_index=True)
            lut = np.full(len(run.shapes), -1, dtype=np.int32)
            in_order = uniq[np.argsort(first, kind="stable")]
            lut[in_order] = _remapped(self._shape_keys, [run.shapes[i] for i in in_order.tolist()])
            return np.where(local >= 0, lut[np.maximum(local, 0)], -1).astype(np.int32)

        self._append(values, device_args, shape_codes)

    def _code_ids(self) -> dict[str, _Ids]:
        return {"cat": self._cats, "name": self._names, "pid": self._pids, "tid": self._tids}

    def _append(self, values: dict[str, np.ndarray], device_args: Callable[[np.ndarray], list[np.ndarray]],
                shape_codes: Callable[[np.ndarray], np.ndarray]) -> None:
        """Append one batch: ``values``, the column of each of :data:`_BATCH_FIELDS`; ``device_args(rows)``:
        the :data:`_DEVICE` args of those rows as numbers, ``shape_codes(rows)``: the codes of those
        events' input shapes in ``_shape_keys`` (-1: no dims)."""
        n, base, parts = len(values["ts"]), self.n, self._parts
        self._sync_luts()
        for f in _BATCH_FIELDS:
            column = values[f.column]
            if f.storage == "dense":
                self._write_dense(f.column, column, base)
            else:  # n: a batch of only the default (-1) holds its count
                parts[f.column].append(n if bool((column == f.default).all()) else column)
        roles = self._cat_role[values["cat"]]
        device_rows = np.flatnonzero(roles != _ROLE_CPU)
        if device_rows.size:
            parts["device_rows"].append(device_rows + base)
            for key, column in zip(_DEVICE, device_args(device_rows)):
                parts[key].append(column)
        shaped = np.flatnonzero(self._shaped_name[values["name"]] & (roles == _ROLE_CPU))
        if shaped.size:
            codes = shape_codes(shaped)
            with_dims = codes >= 0
            self._shape_rows.append(shaped[with_dims] + base)
            self._shape_codes.append(codes[with_dims])
        self.n += n

    def _sync_luts(self) -> None:
        """Role of each category and "shaped op" flag of each name seen so far (extended as they come)."""
        if len(self._cat_role) < len(self._cats):
            new = [role_of_category(c) for c in islice(self._cats, len(self._cat_role), None)]
            self._cat_role = np.concatenate([self._cat_role, np.array(new, dtype=np.int8)])
        if len(self._shaped_name) < len(self._names):
            new = [_keeps_shapes(s) for s in islice(self._names, len(self._shaped_name), None)]
            self._shaped_name = np.concatenate([self._shaped_name, np.array(new, dtype=bool)])

    def keep_paired_and_meta(self, events: list[Event]) -> None:
        """Keep ``B``/``E``/``M`` events (in file order) for :meth:`finish_paired`."""
        self._rest.extend(events)

    def finish_paired(self, warnings: list[str]) -> dict[tuple, str]:
        """Pair the ``B``/``E`` events kept into ``X`` events (appended last); the process and
        thread names of the ``M`` events."""
        rest, self._rest = self._rest, []
        if not rest:
            return {}
        self.add(_pair_begin_end(rest, warnings))
        return _metadata_names(rest)

    def _write_dense(self, key: str, values: np.ndarray, base: int) -> None:
        """Write ``values`` as rows ``base...`` of a dense column, in place: joining a streamed load's
        runs at its end would hold every column twice, in fresh pages."""
        room = self._dense.get(key)
        end = base + len(values)
        if room is None or room.size < end:
            grown = np.empty(max(end, self._capacity, 2 * room.size if room is not None else 0),
                             dtype=self._DTYPES[key])
            if room is not None:
                grown[:base] = room[:base]
            room = self._dense[key] = grown
        room[base:end] = values

    def column(self, key: str) -> np.ndarray:
        """One column of every event (its parts joined once)."""
        if key in self._DENSE:
            room = self._dense.get(key)
            return room[:self.n] if room is not None else np.zeros(0, dtype=self._DTYPES[key])
        parts = self._parts[key]
        if len(parts) != 1 or isinstance(parts[0], int):
            dtype = self._DTYPES[key]
            joined = [np.full(p, -1, dtype=dtype) if isinstance(p, int) else p for p in parts]
            parts[:] = [np.concatenate(joined) if joined else np.zeros(0, dtype=dtype)]
        return parts[0]  # type: ignore[return-value]

    def recorded(self, key: str) -> bool:
        """Whether any event has a value of ``key`` (a batch without one holds only its count)."""
        return any(not isinstance(part, int) for part in self._parts[key])

    def take(self, key: str) -> np.ndarray:
        """A column, handed over (the builder no longer holds it)."""
        out = self.column(key)
        if key in self._DENSE:
            self._dense.pop(key, None)
        else:
            self._parts[key] = []
        return out

    def string_ids(self, strings: StringTable) -> tuple[np.ndarray, np.ndarray]:
        """Intern categories (first) then names into ``strings``; their id columns."""
        final = _Ids(self._cats)
        name_lut = np.fromiter(map(final.__getitem__, self._names), dtype=np.int32, count=len(self._names))
        for s in final:
            strings.intern(s)
        return self.take("cat"), name_lut[self.take("name")]

    def lane_ids(self, role_lut: np.ndarray, cat_ids: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
        """Each event's lane (-1: of the skipped role) and the lane keys (role, pid, tid) but the skipped
        role's, in their order (:func:`_lane_sort_key`); an event's role is ``role_lut[cat_ids]``. The
        role and the codes of pid and tid (ints or strings, as in the file) are packed into one int,
        counted in one pass where the C extension is built (:mod:`.nest`), else by :func:`_distinct_codes`."""
        n_pids, n_tids = len(self._pids), len(self._tids)
        bound = (_ROLE_SKIP + 1) * n_pids * n_tids
        found = None
        if bound <= max(4 * cat_ids.size, 1 << 16):  # as _distinct_codes counts
            found = nest.lane_keys(role_lut.astype(np.int64) * (n_pids * n_tids), cat_ids, self.column("pid"),
                                   self.column("tid"), n_tids, bound)
        if found is None:
            role = role_lut[cat_ids].astype(np.int64)
            packed = (role * n_pids + self.take("pid")) * n_tids + self.take("tid")
            keys, code = _distinct_codes(packed, bound)
        else:
            code, present = found
            self.take("pid"), self.take("tid")
            keys = np.flatnonzero(present)
        pids, tids = list(self._pids), list(self._tids)
        role_pid, tid_of = np.divmod(keys, n_tids)
        role_of, pid_of = np.divmod(role_pid, n_pids)
        lanes = [(r, pids[p], tids[t]) for r, p, t in zip(role_of.tolist(), pid_of.tolist(), tid_of.tolist())]
        kept = [i for i, key in enumerate(lanes) if key[0] != _ROLE_SKIP]
        kept.sort(key=lambda i: _lane_sort_key(lanes[i]))
        place = np.full(len(lanes), -1, dtype=np.int32)  # a key's dense id -> its place in the order
        place[kept] = np.arange(len(kept))
        if found is not None:  # the C pass's codes are the packed keys themselves
            dense, place = place, np.full(bound, -1, dtype=np.int32)
            place[keys] = dense
        return place[code], [lanes[i] for i in kept]

    def device_arg(self, key: str, rows: np.ndarray) -> np.ndarray:
        """``bytes``/``device``/``stream`` of non-CPU events ``rows`` as numbers (NaN: none or unusable)."""
        have = self.column("device_rows")
        values = self.column(key)
        out = np.full(len(rows), np.nan)
        if not have.size or not len(rows):
            return out
        pos, hit = _positions(have, rows)
        out[hit] = values[pos[hit]]
        return out

    def shapes(self) -> tuple[np.ndarray, np.ndarray, list[tuple[bytes, bytes, bytes]]]:
        """Shaped CPU ops with input dims: their event indices (ascending), shape codes, and the
        codes' keys (dims, types, concrete inputs)."""
        return np.concatenate(self._shape_rows), np.concatenate(self._shape_codes), list(self._shape_keys)


def _numbers(args: list, getter: attrgetter) -> np.ndarray:
    """A numeric arg of each event as :func:`_as_number` reads it (strings parsed; negative: NaN)."""
    values = list(map(getter, args))
    if str not in set(map(type, values)):
        try:
            out = np.array(values, dtype=np.float64)
            out[out < 0] = np.nan
            return out
        except OverflowError:  # an int beyond float range
            pass
    return np.array([_as_number(v) for v in values], dtype=np.float64)


def _positions(sorted_keys: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each query sits in ``sorted_keys`` (non-empty, ascending) and whether it is there."""
    pos = np.minimum(np.searchsorted(sorted_keys, queries), sorted_keys.size - 1)
    return pos, sorted_keys[pos] == queries


def _remapped(ids: _Ids, keys: list) -> np.ndarray:
    """Lookup table: a run's local code -> the code of the same key in ``ids`` (new keys added)."""
    if not ids:  # the first run (a small file's only one): distinct keys get 0, 1, ... in order
        first = dict(zip(keys, range(len(keys))))
        if len(first) == len(keys):
            ids.update(first)
            return np.arange(len(keys), dtype=np.int32)
    return np.fromiter(map(ids.__getitem__, keys), dtype=np.int32, count=len(keys))


def _distinct_codes(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of non-negative ints below ``bound``: by counting
    in O(n) where ``bound`` is small (lanes: roles x pids x tids), else by sorting."""
    if bound > max(4 * values.size, 1 << 16):
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1)
    uniq = np.flatnonzero(np.bincount(values, minlength=bound))
    code = np.zeros(bound, dtype=np.int64)
    code[uniq] = np.arange(uniq.size)
    return uniq, code[values]


def _lane_time_order(lane: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """``np.lexsort((-dur, ts, lane))``: by lane, start, longest first, then file order, in about
    O(n) on a trace's lanes (each nearly in start order already): a counting sort by lane, then per
    lane a stable sort by start (near-linear on nearly sorted input) and equal starts by -dur."""
    n_lanes = int(lane.max()) + 1 if lane.size else 0
    # a counting sort in two passes (C), where built (None otherwise; [] only without lanes)
    per_lane = nest.rows_by_lane(lane, n_lanes) or _rows_by_lane(lane, n_lanes)
    ordered = _map_lanes(lambda rows: rows[_time_order(ts[rows], dur[rows])], per_lane, [r.size for r in per_lane])
    return np.concatenate(ordered) if ordered else np.zeros(0, dtype=np.int64)


def _rows_by_lane(lane: np.ndarray, n_lanes: int) -> list[np.ndarray]:
    """The rows of each lane ``0 .. n_lanes - 1`` in row order (lane -1: none)."""
    if n_lanes <= 64:  # a pass per lane beats sorting 10M lane ids
        return [np.flatnonzero(lane == k) for k in range(n_lanes)]
    by_lane = np.argsort(lane, kind="stable")
    bounds = np.searchsorted(lane[by_lane], np.arange(n_lanes + 1))
    return [by_lane[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def _time_order(t: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``np.lexsort((-d, t))`` of one lane's starts and durations (nearly in start order)."""
    s = np.argsort(t, kind="stable")
    t = t[s]
    tied = np.flatnonzero(t[1:] == t[:-1])
    if tied.size:  # equal starts (parent and child): longest first, then file order
        member = np.zeros(t.size, dtype=bool)  # np.union1d(tied, tied + 1), without its sort
        member[tied] = True
        member[tied + 1] = True
        members = np.flatnonzero(member)
        new_group = np.r_[True, (np.diff(members) != 1) | (t[members[1:]] != t[members[:-1]])]
        sub = np.lexsort((members, -d[s[members]], np.cumsum(new_group)))
        s[members] = s[members[sub]]
    return s


LANE_THREADS_MIN_EVENTS = 1_000_000
"""Lanes are sorted and nested on two threads from this many events (numpy releases the GIL)."""


def _map_lanes(fn: Callable, items: list, sizes: list[int]) -> list:
    """``[fn(x) for x in items]``, on two threads when the lanes are big (their numpy work runs
    without the GIL), the biggest first."""
    if sum(sizes) < LANE_THREADS_MIN_EVENTS or len(items) < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2, thread_name_prefix="gpuperf-lanes") as pool:
        futures = {i: pool.submit(fn, items[i]) for i in sorted(range(len(items)), key=sizes.__getitem__, reverse=True)}
        return [futures[i].result() for i in range(len(items))]


def _int_column(items: list, getter: attrgetter) -> np.ndarray:
    """An int64 column of one attribute; values beyond int64 (some traces write them) become -1."""
    try:
        return np.fromiter(map(getter, items), dtype=np.int64, count=len(items))
    except OverflowError:
        return np.array([v if _INT64_MIN <= v <= _INT64_MAX else -1 for v in map(getter, items)],
                        dtype=np.int64)


def _lane_sort_key(key: tuple) -> tuple:
    role, pid, tid = key

    def part(v: int | str) -> tuple:
        if isinstance(v, int):
            return (0, v, "")
        m = _STREAM_RE.search(v)
        return (1, int(m.group(1)) if m else 0, v)

    return (role != _ROLE_CPU, part(pid), part(tid), role)


def _depths(start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Nesting depth of events sorted by (start, -duration): the number of open events at each start
    (the tree depth of properly nested events; overlapping ones are stacked)."""
    # timsort: the ends of a lane sorted by start come in runs; the counts below read only values,
    # so the order of equal ends (0.0, -0.0) does not matter
    ends = np.sort(start + duration, kind="stable")
    fast = nest.depths(start, ends)  # one merge of the sorted starts and ends (C), where built
    if fast is not None:
        return fast
    closed = np.searchsorted(ends, start, side="right")
    depth = np.arange(start.size) - closed
    np.clip(depth, 0, 32767, out=depth)
    return depth.astype(np.int16)


def _describe_lane(lane: Lane, key: tuple, columns: EventColumns, first: np.ndarray,
                   names: dict[tuple, str]) -> None:
    """Label a lane; a GPU lane's device and stream come from the args of its first event (``first``:
    its index), else from its pid and tid."""
    role, pid, tid = key
    if role == _ROLE_CPU:
        thread = names.get(("thread", pid, tid))
        process = names.get(("process", pid))
        base = thread.strip() if thread else f"thread {tid}"
        lane.label = f"{base} [{process}]" if process and process not in base else base
        if pid == -1:
            lane.label = "profiler overhead"
        return
    dev, st = (float(columns.device_arg(arg, first)[0]) for arg in ("device", "stream"))  # NaN: none
    device = int(dev) if dev >= 0 else (pid if isinstance(pid, int) else None)
    stream = int(st) if st >= 0 else (tid if isinstance(tid, int) else None)
    if stream is None and isinstance(tid, str):
        m = _STREAM_RE.search(tid)
        stream = int(m.group(1)) if m else None
    lane.device, lane.stream = device, stream
    suffix = {_ROLE_ANNOTATION: " annotations", _ROLE_SYNC: " sync"}.get(role, "")
    lane.label = f"GPU {device if device is not None else pid} stream {stream if stream is not None else tid}{suffix}"
    if role == _ROLE_GPU:
        lane.kind = _gpu_lane_kind(lane)


def _gpu_lane_kind(lane: Lane) -> str:
    if np.all(lane.kernel_class == class_code("copy")):  # (a lane holds at least one event)
        return "gpu_copy"
    comm_us = float(lane.duration_us[lane.kernel_class == class_code("communication")].sum())
    return "gpu_comm" if comm_us > 0.5 * float(lane.duration_us.sum()) else "gpu_compute"


def _pair_begin_end(rest: list[Event], warnings: list[str]) -> list[Event]:
    """Turn ``B``/``E`` pairs (nested per thread) into ``X`` events."""
    stacks: dict[tuple, list[Event]] = {}
    out: list[Event] = []
    unmatched = 0
    for e in rest:
        if type(e) is BEvent:
            stacks.setdefault((e.pid, e.tid), []).append(e)
        elif type(e) is EEvent:
            stack = stacks.get((e.pid, e.tid))
            if not stack:
                unmatched += 1
                continue
            b = stack.pop()
            out.append(XEvent(cat=b.cat or e.cat, name=b.name or e.name, pid=b.pid, tid=b.tid,
                             ts=b.ts, dur=max(0.0, e.ts - b.ts), args=b.args))
    unmatched += sum(len(s) for s in stacks.values())
    if unmatched:
        warnings.append(f"{unmatched} unmatched B/E events skipped")
    return out


def _metadata_names(rest: list[Event]) -> dict[tuple, str]:
    names: dict[tuple, str] = {}
    for e in rest:
        if type(e) is not MEvent or not e.args.name:
            continue
        if e.name == "process_name":
            names[("process", e.pid)] = e.args.name
        elif e.name == "thread_name":
            names[("thread", e.pid, e.tid)] = e.args.name
    return names


def _rank_of(distributed: dict | None, path: Path, order_index: int) -> tuple[int, str]:
    rank = (distributed or {}).get("rank")
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        return rank, "distributedInfo"
    m = _RANK_FILE_RE.search(path.name)
    if m:
        return int(m.group(1)), "filename"
    return order_index, "order"


def _device_properties(meta) -> list[dict]:  # noqa: ANN001
    props = meta.deviceProperties if isinstance(meta.deviceProperties, list) else meta.computeProperties
    props = [props] if isinstance(props, dict) else props  # computeProperties: one dict, or a list
    return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []


def _small_metadata(meta) -> dict:  # noqa: ANN001
    keys = ("schemaVersion", "displayTimeUnit", "baseTimeNanoseconds", "cuda_runtime_version",
            "hip_runtime_version", "roctracer_version", "trace_id")
    return {key: value for key in keys if isinstance(value := getattr(meta, key), (int, float, str))}


def _fill_shaped_ops(rt: RankTrace, columns: EventColumns, order: np.ndarray, cpu_end: int,
                     cols: dict[str, np.ndarray]) -> None:
    """Into the sorted columns ``cols``: the bytes of each op's largest recorded input tensor (sized
    once per distinct (dims, types) key), and the FLOPs and minimal bytes of GEMM/attention ops
    estimated from their recorded input dims, their precision taken from their recorded input types
    (core/trace/vocabulary/precision.py). The CPU events are the first ``cpu_end`` rows."""
    n = order.size
    cols["io_bytes"] = np.full(n, np.nan, dtype=np.float32)
    shape_rows, shape_codes, shape_keys = columns.shapes()
    if not shape_rows.size:
        return
    row_of = np.full(columns.n, -1, dtype=np.int64)  # event index -> its row in ``order`` (-1: dropped)
    row_of[order] = np.arange(n)
    rows = row_of[shape_rows]
    code = np.full(n, -1, dtype=np.int32)  # each row's shape code (-1: none)
    code[rows[rows >= 0]] = shape_codes[rows >= 0]
    has = code >= 0
    per_code = np.array([_largest_input_bytes(dims, types) for dims, types, _ in shape_keys], dtype=np.float32)
    cols["io_bytes"][has] = per_code[code[has]]
    names_sorted = cols["name_id"]
    shaped_names = pattern_mask(rt.strings, SHAPED_OP_RE)  # ^-anchored: search is match
    done_rows = np.flatnonzero(shaped_names[names_sorted[:cpu_end]] & has[:cpu_end])
    if not done_rows.size:
        return
    n_names = len(rt.strings)
    packed = code[done_rows].astype(np.int64) * n_names + names_sorted[done_rows]
    uniq, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")  # keys in order of their first row
    key_of = np.empty_like(by_first)
    key_of[by_first] = np.arange(by_first.size)
    key_of = key_of[inverse.reshape(-1)]
    keys = [(*shape_keys[p // n_names], p % n_names) for p in uniq[by_first].tolist()]
    per_key = [_estimate_op(rt.strings[name_id], dims, types, concrete)  # core/trace/vocabulary/flops.py
               for dims, types, concrete, name_id in keys]
    text_ids = np.array([rt.strings.intern(text) for _, _, text in per_key], dtype=np.int32)
    f = np.array([p[0] for p in per_key], dtype=np.float64)[key_of]
    b = np.array([p[1] for p in per_key], dtype=np.float64)[key_of]
    cols["shapes_id"][done_rows] = text_ids[key_of]
    cols["op_precision"][done_rows] = np.array([code_of(dtype_precision(types)) for _, types, _, _ in keys],
                                               dtype=np.int8)[key_of]
    flops = cols["flops"]
    set_f = (f > 0) & np.isnan(flops[done_rows])
    flops[done_rows[set_f]] = f[set_f]
    cols["bytes"][done_rows[b > 0]] = b[b > 0]


SHAPE_CACHE_KEYS = 1 << 14
"""Distinct recorded (dims, types) keys whose sizes this process remembers: the ranks of one job
record nearly the same shapes, and decoding a key's JSON is a large part of a small rank's build."""
_largest_input_bytes = lru_cache(maxsize=SHAPE_CACHE_KEYS)(largest_input_bytes)  # pure: bytes -> float
_estimate_op = lru_cache(maxsize=SHAPE_CACHE_KEYS)(estimate_op)  # pure: (str, bytes...) -> a NamedTuple
_classify_kernel = lru_cache(maxsize=SHAPE_CACHE_KEYS)(classify_kernel)  # pure: (name, category) -> a class


@lru_cache(maxsize=SHAPE_CACHE_KEYS)  # pure; the ranks of a job share their op names
def _keeps_shapes(name: str) -> bool:
    """Whether the shapes of an op of this name are kept: its FLOPs, its input bytes."""
    return bool(SHAPED_OP_RE.match(name) or IO_OP_RE.match(name))


def _launch_flows(rt: RankTrace, lane_sorted: np.ndarray, bounds: np.ndarray,
                  corr_sorted: np.ndarray, cats_sorted: np.ndarray, cpu_end: int) -> Flows:
    """Launch call -> device event links by correlation id. Launch calls are CPU events (the
    first ``cpu_end`` rows), device activity is not (their categories' roles): each is looked for
    in its part only."""
    launch_cat = member_mask(rt.strings, LAUNCH_CATEGORIES)
    gpu_cat = member_mask(rt.strings, GPU_ACTIVITY_CATEGORIES)
    src = np.flatnonzero(launch_cat[cats_sorted[:cpu_end]] & (corr_sorted[:cpu_end] >= 0))
    dst = cpu_end + np.flatnonzero(gpu_cat[cats_sorted[cpu_end:]] & (corr_sorted[cpu_end:] >= 0))
    if src.size == 0 or dst.size == 0:
        return Flows()
    src_sorted = src[np.argsort(corr_sorted[src], kind="stable")]
    pos, hit = _positions(corr_sorted[src_sorted], corr_sorted[dst])
    dst = dst[hit]
    src_rows = src_sorted[pos[hit]]
    src_lane = lane_sorted[src_rows]
    dst_lane = lane_sorted[dst]
    return Flows(src_lane=src_lane.astype(np.int32), src_index=(src_rows - bounds[src_lane]).astype(np.int64),
                 dst_lane=dst_lane.astype(np.int32), dst_index=(dst - bounds[dst_lane]).astype(np.int64),
                 correlation=corr_sorted[dst])


def _steps(rt: RankTrace, start: np.ndarray, duration: np.ndarray, bounds: np.ndarray) -> list[StepWindow]:
    digits = {i: STEP_NAME_RE.fullmatch(rt.strings[i]).group(1)
              for i in np.flatnonzero(step_name_mask(rt.strings)).tolist()}
    long_numbers = sum(len(d) > MAX_STEP_DIGITS for d in digits.values())
    if long_numbers:
        rt.warnings.append(f"ignored {long_numbers} ProfilerStep names whose step number has more than 18 digits")
    number_of = {i: int(d) for i, d in digits.items() if len(d) <= MAX_STEP_DIGITS}
    if not number_of:
        return []
    step_ids = np.zeros(len(rt.strings), dtype=bool)
    step_ids[list(number_of)] = True
    cpu: dict[int, tuple[float, float]] = {}
    gpu: dict[int, tuple[float, float]] = {}
    for lane in rt.lanes:
        if lane.kind not in ("cpu", "gpu_annotation"):
            continue
        target = cpu if lane.kind == "cpu" else gpu
        for row in np.flatnonzero(step_ids[lane.name_id]).tolist():
            number = number_of[int(lane.name_id[row])]
            s, e = float(lane.start_us[row]), float(lane.start_us[row] + lane.duration_us[row])
            old = target.get(number)
            target[number] = (min(s, old[0]), max(e, old[1])) if old else (s, e)
    if not cpu:
        return []
    numbers = sorted(cpu)
    launched = _launched_kernel_spans(rt.flows, start, duration, bounds, numbers, cpu)
    none = (float("nan"), float("nan"))
    steps = [StepWindow(n, *cpu[n], *(launched.get(n) or gpu.get(n) or none)) for n in numbers]
    by_time = sorted(steps, key=lambda st: (st.cpu_start_us, st.number))
    if by_time != steps:  # steps are windows in time: order them so, and say the numbers were not
        rt.warnings.append("ProfilerStep numbers are not in time order "
                           f"(#{by_time[0].number} starts first); steps are ordered by time")
    return by_time


def _launched_kernel_spans(flows: Flows, start: np.ndarray, duration: np.ndarray, bounds: np.ndarray,
                           numbers: list[int], cpu: dict[int, tuple[float, float]]
                           ) -> dict[int, tuple[float, float]]:
    """GPU span of each step: first start / last end of device work launched inside its CPU span
    (``start``, ``duration``: every lane's rows, lane ``k``'s from ``bounds[k]``)."""
    if len(flows) == 0:
        return {}
    launch_t = start[bounds[flows.src_lane] + flows.src_index]
    kernel_rows = bounds[flows.dst_lane] + flows.dst_index
    k_start = start[kernel_rows]
    k_end = k_start + duration[kernel_rows]
    # Per step, the flows launched in [s, e): a range of the flows sorted by launch time; min and
    # max over each range by reduceat (pairs lo, hi; a sentinel keeps hi a valid index).
    by_launch = np.argsort(launch_t, kind="stable")
    launch_sorted = launch_t[by_launch]
    s, e = np.array([cpu[n] for n in numbers]).T
    lo = np.searchsorted(launch_sorted, s, side="left")
    hi = np.maximum(np.searchsorted(launch_sorted, e, side="left"), lo)
    has = hi > lo
    if not has.any():
        return {}
    bounds = np.column_stack((lo[has], hi[has])).ravel()
    first = np.minimum.reduceat(np.append(k_start[by_launch], np.inf), bounds)[::2]
    last = np.maximum.reduceat(np.append(k_end[by_launch], -np.inf), bounds)[::2]
    steps = [n for n, h in zip(numbers, has.tolist()) if h]
    return {n: (float(a), float(b)) for n, a, b in zip(steps, first.tolist(), last.tolist())}
