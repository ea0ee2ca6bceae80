"""Compare two traces of one workload, before and after a change (``gpuperf diff``, the Compare view).

>>> d = diff_paths(["before.json.gz"], ["after/"])   # files or rank folders, as `diagnose`  # doctest: +SKIP
>>> d.speedup, d.headline.text, d.changes(), d.to_json(top=20)                            # doctest: +SKIP

Definitions
-----------
* Steps compared: each rank's steady steps (every ``ProfilerStep`` but the first when there are at
  least three, as :mod:`.rank_analysis` does), or the step numbers asked for (HTA TraceDiff's
  ``control_iteration``/``test_iteration``). Step time = median duration of those steps (median
  over ranks), speedup = before / after.
* Per step: kernel classes and ops are totals over the compared steps divided by their number, then
  averaged over ranks, so traces with different step counts compare. Host ops count when they start
  in a compared step's CPU span; device work when the call that launched it did (HTA's rule, so
  steps partition the kernels), or, without a launch flow, when it starts in a step's device span
  (:func:`.rank_analysis.step_bounds`). Kernel time = kernels + copies + memsets; the class deltas sum
  to its change.
  A trace without ``ProfilerStep`` annotations is compared per trace (its whole GPU span).
* Ops follow HTA's ``TraceDiff.compare_traces``: per name, call counts and total duration (CPU
  total for host ops, device time for kernels) before and after, and ``ops_diff`` categories by
  count. Counting follows the op table (torch's ``key_averages``: a nested same-name op is one
  call); host ops also carry the device time they launched.
* GPU busy, exposed communication and the idle split are each trace's steady-window figures from
  :mod:`.rank_analysis` (mean over ranks).
* Profiler overhead: the profiler costs the host a few µs per recorded event, so a host-bound step
  (GPU busy under :data:`HOST_BOUND_BUSY_MAX`) is longer profiled than unprofiled and the speedup
  between two traces can differ from the unprofiled one.
* Unprofiled speedup: a trace written by ``gpuperf profile`` carries the wall times of steps run with
  the profiler idle, and of its recorded steps timed the same way (:data:`UNPROFILED_KEY`). A side's
  unprofiled step time is their median (median over ranks); its profiler overhead is the recorded
  steps' median over it (measured, not modelled). When both sides carry them, the speedup is the
  ratio of the unprofiled step times; otherwise the profiled one, and :attr:`TraceDiff.warnings`
  says so (and, for a host-bound side, that the profiler stretches it).
"""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from gpuperf_gui.core.units import format_ms, format_percent, json_safe

from ..analysis.rank_analysis import RankAnalysis, step_bounds
from ..engine.api import Progress, TraceResult
from ..analysis.what_if import diff_check
from ..ingest.decode import DEFAULT_MAX_BYTES
from .trace import Trace
from ..diagnosis.diagnose import Diagnosis
from ..model.trace_model import GPU_ACTIVITY_KINDS, RankTrace
from ..vocabulary.kernel_classes import KERNEL_CLASSES
from ..analysis.optable import op_table, starts_in
from .diff_headline import Headline, headline
from ..vocabulary.glossary import COMM_KERNELS_EXPOSED, COMM_WAIT
from ..analysis.profiler_overhead import ProfilerOverhead, merge, overhead_of

CHANGE_CATEGORIES = ("added", "deleted", "increased", "decreased", "unchanged")
"""HTA ``TraceDiff.ops_diff``'s categories, by call count (the JSON keeps HTA's names)."""
CALLS_WORDS = {"added": "added", "deleted": "deleted", "increased": "more calls", "decreased": "fewer calls",
               "unchanged": "same calls"}
"""How text and the Compare page name them: a category is about call counts only, so an op whose
calls stayed while its time fell reads "same calls", never "unchanged"."""
_SAME = 1e-9
UNPROFILED_KEY = "gpuperf_unprofiled"
"""The top-level trace key `gpuperf profile` writes (:data:`gpuperf_gui.core.profile_script.UNPROFILED_KEY`)."""
SOURCE_UNPROFILED = "unprofiled steps measured by gpuperf profile"
SOURCE_PROFILED = "profiled steps: ProfilerStep spans in the traces"


@dataclass(frozen=True)
class RankWindow:
    """What was compared in one rank: file, step count, each step's CPU and device span (file ``ts``, µs)."""

    rank: int
    file: str
    steps: int
    host_windows_ts_us: list[tuple[float, float]]
    device_windows_ts_us: list[tuple[float, float]]


@dataclass
class Side:
    """One trace (all its ranks): the figures compared, per step where ``per_step``."""

    label: str
    ranks: list[RankWindow]
    per_step: bool
    step_time_s: float | None
    gpu_busy_fraction: float
    comm_exposed_fraction: float
    idle_breakdown: dict[str, float]
    kernel_class_s: dict[str, float]
    ops: dict[tuple[str, str], tuple[float, float, float]]
    """(name, kind) -> (calls, duration_s, device_s) per step."""
    host_events_per_step: float = 0.0
    """Host events the profiler recorded per step (ops, annotations, runtime calls, Python frames)."""
    unprofiled_step_time_s: float | None = None
    """Median wall time of the steps `gpuperf profile` ran with the profiler idle (None: not recorded)."""
    profiled_wall_step_time_s: float | None = None
    """Median wall time of the recorded steps, timed the same way."""
    unprofiled_steps: int = 0
    """Unprofiled steps timed (summed over ranks)."""
    flops_per_step: float | None = None
    """FLOPs of the GEMM/attention ops (from the recorded shapes) that launched kernels, per step
    (mean over ranks); None when no op has a count (record_shapes off)."""
    overhead: ProfilerOverhead | None = None
    """The profiler's cost measured from both sets of steps, with its spread (all ranks' steps)."""
    comm_wait_fraction: float = 0.0
    """:data:`.glossary.COMM_WAIT` (the diagnosis's communication share of the step), mean over ranks."""

    @property
    def kernel_time_s(self) -> float:
        return sum(self.kernel_class_s.values())

    @property
    def profiler_overhead(self) -> float | None:
        """Recorded over unprofiled step wall time (1.25: the profiler made the step 25 % longer),
        where measurable: None when the recorded median is within the unprofiled steps' own range
        (:mod:`.profiler_overhead`; never below 1)."""
        o = self.overhead
        return None if o is None or o.fraction is None else 1.0 + o.fraction

    def to_json(self) -> dict:
        return {"label": self.label, "per_step": self.per_step, "step_time_s": self.step_time_s,
                "gpu_busy_fraction": self.gpu_busy_fraction, "comm_exposed_fraction": self.comm_exposed_fraction,
                "comm_wait_fraction": self.comm_wait_fraction,
                "idle_breakdown": dict(self.idle_breakdown), "kernel_time_s": self.kernel_time_s,
                "host_events_per_step": self.host_events_per_step,
                "unprofiled_step_time_s": self.unprofiled_step_time_s, "unprofiled_steps": self.unprofiled_steps,
                "profiled_wall_step_time_s": self.profiled_wall_step_time_s,
                "profiler_overhead": self.profiler_overhead,
                "profiler_overhead_measured": self.overhead.to_json() if self.overhead else None,
                "flops_per_step": self.flops_per_step,
                "ranks": [asdict(r) for r in self.ranks]}  # its tuples become lists in TraceDiff.to_json


@dataclass(frozen=True)
class ClassDelta:
    cls: str
    before_s: float
    after_s: float

    @property
    def delta_s(self) -> float:
        return self.after_s - self.before_s

    def to_json(self) -> dict:
        return {"class": self.cls, "before_s": self.before_s, "after_s": self.after_s, "delta_s": self.delta_s}


@dataclass(frozen=True)
class OpDelta:
    """One op or kernel name: calls and seconds per step before and after (HTA's compare_traces)."""

    name: str
    kind: str
    """"host" (CPU op, annotation, runtime call) or "device" (kernel, copy, GPU annotation)."""
    calls_before: float
    calls_after: float
    before_s: float
    after_s: float
    device_before_s: float
    device_after_s: float

    @property
    def delta_s(self) -> float:
        return self.after_s - self.before_s

    @property
    def label(self) -> str:
        """The name to show: the two ``ProfilerStep*`` rows say which span they are (the CPU's
        step annotation; the GPU's, from the first to the last kernel the step launched)."""
        if self.name == "ProfilerStep*":
            return "ProfilerStep* (CPU step span)" if self.kind == "host" else "ProfilerStep* (GPU step span)"
        return self.name

    @property
    def device_delta_s(self) -> float:
        return self.device_after_s - self.device_before_s

    @property
    def change(self) -> str:
        """One of :data:`CHANGE_CATEGORIES` (HTA's rule on the call counts)."""
        before, after = self.calls_before, self.calls_after
        if before <= 0:
            return "added"
        if after <= 0:
            return "deleted"
        diff = after - before
        if abs(diff) <= _SAME * max(before, after):
            return "unchanged"
        return "increased" if diff > 0 else "decreased"

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "calls_before": self.calls_before,
                "calls_after": self.calls_after, "before_s": self.before_s, "after_s": self.after_s,
                "delta_s": self.delta_s, "device_before_s": self.device_before_s,
                "device_after_s": self.device_after_s, "device_delta_s": self.device_delta_s,
                "change": self.change}


@dataclass
class TraceDiff:
    """Before vs after. Every time is per step (see the module docstring), SI units."""

    before: Side
    after: Side
    kernel_classes: list[ClassDelta]
    ops: list[OpDelta]
    diagnosis_before: Diagnosis
    diagnosis_after: Diagnosis
    warnings: list[str] = field(default_factory=list)
    tokens_per_step: tuple[float | None, float | None] = (None, None)
    """Tokens per step of each side where the user gave them (a trace does not record them)."""

    what_if_check: dict | None = None
    """The before-trace's projection for its cause against the measured speedup (:func:`.what_if.diff_check`)."""

    @property
    def headline(self) -> Headline:
        """What the comparison leads with (:mod:`.diff_headline`)."""
        return headline(self)

    @property
    def speedup_profiled(self) -> float | None:
        """Trace step time before / after (ProfilerStep medians, profiler on)."""
        b, a = self.before.step_time_s, self.after.step_time_s
        return b / a if b and a else None

    @property
    def speedup_unprofiled(self) -> float | None:
        """Unprofiled step time before / after, where both traces carry it (else None)."""
        b, a = self.before.unprofiled_step_time_s, self.after.unprofiled_step_time_s
        return b / a if b and a else None

    @property
    def speedup(self) -> float | None:
        """Before / after (> 1: the change made the step faster): unprofiled where both sides were
        measured so, else profiled (:attr:`speedup_source`)."""
        unprofiled = self.speedup_unprofiled
        return unprofiled if unprofiled is not None else self.speedup_profiled

    @property
    def speedup_source(self) -> str | None:
        """:data:`SOURCE_UNPROFILED` or :data:`SOURCE_PROFILED` (None: no speedup)."""
        if self.speedup_unprofiled is not None:
            return SOURCE_UNPROFILED
        return SOURCE_PROFILED if self.speedup_profiled is not None else None

    def ops_diff(self) -> dict[str, list[str]]:
        """HTA's ``ops_diff``: op names by category (host ops, then device rows, each by name)."""
        out: dict[str, list[str]] = {c: [] for c in CHANGE_CATEGORIES}
        for op in sorted(self.ops, key=lambda o: (o.kind != "host", o.name)):
            out[op.change].append(op.name)
        return out

    def changes(self) -> list[str]:
        """What changed, most important first, one line each."""
        b, a = self.before, self.after
        unit = "per step" if b.per_step and a.per_step else "per trace"
        out = [self.headline.text]
        if self.speedup_unprofiled is not None and self.speedup_profiled is not None:
            overhead = "; ".join(f"{tag}: {side.overhead.describe() if side.overhead else '-'}"
                                 for tag, side in (("before", b), ("after", a)))
            out.append(f"profiled step time {_ms(b.step_time_s)} -> {_ms(a.step_time_s)}: "
                       f"{_faster(self.speedup_profiled)} ({overhead})")
        sb, sa = self.diagnosis_before, self.diagnosis_after
        if sb.signature != sa.signature:
            out.append(f"diagnosis {sb.signature} -> {sa.signature}")
        else:
            out.append(f"diagnosis unchanged: {sa.signature}")
        out.append(f"GPU busy {_pct(b.gpu_busy_fraction)} -> {_pct(a.gpu_busy_fraction)} "
                   f"({100 * (a.gpu_busy_fraction - b.gpu_busy_fraction):+.1f} points)")
        if max(b.comm_wait_fraction, a.comm_wait_fraction) > 0:
            out.append(f"{COMM_WAIT.name} {_pct(b.comm_wait_fraction)} -> {_pct(a.comm_wait_fraction)}")
        if max(b.comm_exposed_fraction, a.comm_exposed_fraction) > 0:
            out.append(f"{COMM_KERNELS_EXPOSED.name} {_pct(b.comm_exposed_fraction)} -> "
                       f"{_pct(a.comm_exposed_fraction)}")
        out.append(f"kernel time {unit} {_ms(b.kernel_time_s)} -> {_ms(a.kernel_time_s)} "
                   f"({1e3 * (a.kernel_time_s - b.kernel_time_s):+.2f} ms)")
        for c in self.kernel_classes[:2]:
            if abs(c.delta_s) > 0:
                out.append(f"  {c.cls}: {_ms(c.before_s)} -> {_ms(c.after_s)} ({1e3 * c.delta_s:+.2f} ms)")
        if self.ops:
            top = self.ops[0]
            delta = top.delta_s if abs(top.delta_s) >= abs(top.device_delta_s) else top.device_delta_s
            out.append(f"largest op change: {top.label} ({top.kind}) {1e3 * delta:+.2f} ms {unit}")
        cats = self.ops_diff()
        if cats["added"] or cats["deleted"]:
            out.append(f"ops added {len(cats['added'])}, deleted {len(cats['deleted'])} (named in the ops table)")
        return out

    def to_json(self, top: int | None = None) -> dict:
        """The ``gpuperf diff --json`` object; ``top`` limits ``ops`` (None: all)."""
        ops = self.ops if top is None else self.ops[:top]
        return json_safe({
            "step_time_before_s": self.before.step_time_s, "step_time_after_s": self.after.step_time_s,
            "speedup": self.speedup, "speedup_source": self.speedup_source,
            "headline": self.headline.to_json(), "same_workload": self.headline.same_workload,
            "flops_per_step_before": self.before.flops_per_step, "flops_per_step_after": self.after.flops_per_step,
            "speedup_unprofiled": self.speedup_unprofiled, "speedup_profiled": self.speedup_profiled,
            "unprofiled_step_time_before_s": self.before.unprofiled_step_time_s,
            "unprofiled_step_time_after_s": self.after.unprofiled_step_time_s,
            "profiler_overhead_before": self.before.profiler_overhead,
            "profiler_overhead_after": self.after.profiler_overhead,
            "kernel_time_before_s": self.before.kernel_time_s, "kernel_time_after_s": self.after.kernel_time_s,
            "kernel_time_delta_s": self.after.kernel_time_s - self.before.kernel_time_s,
            "kernel_classes": [c.to_json() for c in self.kernel_classes],
            "ops": [o.to_json() for o in ops],
            "ops_diff": self.ops_diff(),
            "diagnosis_before": self.diagnosis_before.to_json(),
            "diagnosis_after": self.diagnosis_after.to_json(),
            "changes": self.changes(),
            "before": self.before.to_json(), "after": self.after.to_json(),
            "warnings": list(self.warnings),
            "what_if_check": self.what_if_check,
        })


def iter_diff(before: Sequence[Path | str], after: Sequence[Path | str], stop: threading.Event | None = None, *,
              before_steps: Sequence[int] | None = None, after_steps: Sequence[int] | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES, workers: int | None = None,
              tokens_per_step: tuple[float | None, float | None] = (None, None)) -> Iterator[Progress | TraceDiff]:
    """Progress items, then :func:`diff_results` of both traces (files or rank folders; nothing once
    ``stop`` is set). Raises :class:`.trace_model.TraceFormatError` for a file that is not a trace
    and ``ValueError`` for step numbers a trace does not have."""
    stop = stop or threading.Event()
    results = []
    for k, (paths, label) in enumerate(((before, "before"), (after, "after"))):
        for item in Trace(list(paths), max_bytes=max_bytes, workers=workers).iter_result(stop):
            if isinstance(item, Progress):
                yield Progress(0.5 * k + 0.45 * item.fraction, f"{label}: {item.message}")
            else:
                results.append(item)
        if stop.is_set():
            return
    yield Progress(0.95, "comparing")
    yield diff_results(*results, before_steps=before_steps, after_steps=after_steps,
                       labels=(", ".join(map(str, before)), ", ".join(map(str, after))),
                       tokens_per_step=tokens_per_step)


def diff_paths(before: Sequence[Path | str], after: Sequence[Path | str], **options: Any) -> TraceDiff:
    """:func:`iter_diff` to its end (its keyword options)."""
    *_, d = iter_diff(before, after, **options)
    return d


def diff_results(before: TraceResult, after: TraceResult, *, before_steps: Sequence[int] | None = None,
                 after_steps: Sequence[int] | None = None, labels: tuple[str, str] = ("before", "after"),
                 tokens_per_step: tuple[float | None, float | None] = (None, None)) -> TraceDiff:
    """Compare two analysed traces (see the module docstring for every definition)."""
    b = _side(before, before_steps, labels[0])
    a = _side(after, after_steps, labels[1])
    classes = [ClassDelta(c, b.kernel_class_s[c], a.kernel_class_s[c]) for c in KERNEL_CLASSES]
    classes.sort(key=lambda c: -abs(c.delta_s))
    ops = []
    none = (0.0, 0.0, 0.0)
    for name, kind in set(b.ops) | set(a.ops):
        (cb, tb, db), (ca, ta, da) = b.ops.get((name, kind), none), a.ops.get((name, kind), none)
        ops.append(OpDelta(name, kind, cb, ca, tb, ta, db, da))
    ops.sort(key=lambda o: (-max(abs(o.delta_s), abs(o.device_delta_s)), o.kind, o.name))
    warnings = _speedup_warnings(b, a)
    if b.per_step != a.per_step:
        which = labels[0] if not b.per_step else labels[1]
        warnings.append(f"{which} has no ProfilerStep annotations: its figures are per trace, not per step")
    d = TraceDiff(b, a, classes, ops, before.diagnosis, after.diagnosis, warnings, tuple(tokens_per_step))
    d.what_if_check = diff_check(before.what_if(), before.diagnosis.signature, d.speedup)
    return d


HOST_BOUND_BUSY_MAX = 0.7
"""Below this GPU busy fraction a step's time is mostly host time, which the profiler inflates."""


def _overhead_warning(side: Side) -> str:
    return (f"{side.label}: GPU busy {100 * side.gpu_busy_fraction:.0f} %, so its step time is mostly host time, "
            f"which the profiler stretches ({side.host_events_per_step:.0f} host events recorded per step, "
            "each costing the host a few µs): its step time and the speedup can differ from a run without "
            "the profiler; time both unprofiled to confirm (traces recorded with gpuperf profile carry "
            "unprofiled step times, and the speedup then uses them)")


def _speedup_warnings(b: Side, a: Side) -> list[str]:
    """Why the speedup is the profiled one, where it is (none when both sides were timed unprofiled)."""
    if b.unprofiled_step_time_s and a.unprofiled_step_time_s:
        return []
    out = [_overhead_warning(side) for side in (b, a)
           if side.step_time_s is not None and side.gpu_busy_fraction < HOST_BOUND_BUSY_MAX]
    timed = [side.label for side in (b, a) if side.unprofiled_step_time_s]
    if timed:
        other = a.label if timed[0] == b.label else b.label
        out.append(f"only {timed[0]} carries step times measured without the profiler (gpuperf profile), so "
                   f"the speedup is the profiled one; record {other} with gpuperf profile too")
    return out


def _unprofiled(traces: Sequence[RankTrace]) -> tuple[float | None, float | None, int]:
    """(median unprofiled step s, median recorded step s, unprofiled steps) from the ranks' key."""
    idle, rec, n = [], [], 0
    for rt in traces:
        meta = rt.gpuperf_unprofiled or {}
        times = _positive(meta.get("step_times_s"))
        recorded = _positive(meta.get("profiled_step_times_s"))
        if times:
            idle.append(float(np.median(times)))
            n += len(times)
        if recorded:
            rec.append(float(np.median(recorded)))
    return (float(np.median(idle)) if idle else None, float(np.median(rec)) if rec else None, n)


def _positive(values: object) -> list[float]:
    if not isinstance(values, list):
        return []
    return [float(v) for v in values if isinstance(v, (int, float)) and np.isfinite(v) and v > 0]


def _side(result: TraceResult, steps: Sequence[int] | None, label: str) -> Side:
    windows, step_times = [], []
    classes = np.zeros(len(KERNEL_CLASSES))
    ops: dict[tuple[str, str], np.ndarray] = {}
    per_step = True
    host_events = 0.0
    flops = 0.0
    for r in result.ranks:
        host_w, dev_w, numbers = _windows(r.trace, r.analysis, steps)
        keep = device_selection(r.trace, host_w, dev_w)
        n = max(len(numbers), 1)
        per_step &= bool(numbers)
        classes += _class_time_s(r.trace, keep) / n
        for row in op_table(r.trace, host_w, keep):
            dur = row.cpu_total_s if row.kind == "host" else row.device_total_s
            acc = ops.setdefault((row.name, row.kind), np.zeros(3))
            acc += np.array([row.calls, dur, row.device_total_s]) / n
            if row.kind == "host":
                host_events += row.calls / n
                if row.flops and row.self_device_s > 0:  # the op that launched the math (not aten::linear over addmm)
                    flops += row.flops / n
        durations = [s.duration_s for s in r.analysis.steps if s.number in numbers]
        if durations:
            step_times.append(float(np.median(durations)))
        off = r.trace.file_ts_offset_us
        windows.append(RankWindow(r.trace.rank, r.trace.file, len(numbers),
                                  [(t0 + off, t1 + off) for t0, t1 in host_w],
                                  [(t0 + off, t1 + off) for t0, t1 in dev_w]))
    k = max(len(result.ranks), 1)
    analyses = [r.analysis for r in result.ranks]
    unprofiled_s, profiled_wall_s, unprofiled_steps = _unprofiled([r.trace for r in result.ranks])
    return Side(
        label=label, ranks=windows, per_step=per_step,
        step_time_s=float(np.median(step_times)) if step_times else None,
        gpu_busy_fraction=_mean(analyses, lambda a: a.gpu_busy_fraction),
        comm_exposed_fraction=_mean(analyses, lambda a: a.comm_exposed_fraction),
        comm_wait_fraction=_mean(analyses, lambda a: a.idle_causes.communication),
        idle_breakdown={key: _mean(analyses, lambda a, key=key: a.idle_breakdown.get(key, 0.0))
                        for key in ("host_wait", "kernel_wait", "other")},
        kernel_class_s={c: float(classes[i]) / k for i, c in enumerate(KERNEL_CLASSES)},
        ops={key: tuple(float(x) / k for x in v) for key, v in ops.items()},
        host_events_per_step=host_events / k, unprofiled_step_time_s=unprofiled_s,
        profiled_wall_step_time_s=profiled_wall_s, unprofiled_steps=unprofiled_steps,
        flops_per_step=flops / k if flops > 0 else None, overhead=merge([overhead_of(r.trace) for r in result.ranks]))


def _mean(analyses: list[RankAnalysis], get) -> float:  # noqa: ANN001 (callable)
    return float(np.mean([get(a) for a in analyses])) if analyses else 0.0


Spans = list[tuple[float, float]]


def _windows(rt: RankTrace, analysis: RankAnalysis, wanted: Sequence[int] | None) -> tuple[Spans, Spans, list[int]]:
    """(CPU spans, device spans, numbers) of the compared steps, one span each, in lane time."""
    if not rt.steps:
        if wanted:
            raise ValueError(f"{rt.file}: no ProfilerStep annotations, so no step {', '.join(map(str, wanted))}")
        span = _device_span(rt) or rt.span_us
        return [span], [span], []
    if wanted:
        numbers = [s.number for s in rt.steps if s.number in set(wanted)]
        missing = sorted(set(wanted) - set(numbers))
        if missing:
            have = f"{rt.steps[0].number}-{rt.steps[-1].number}"
            raise ValueError(f"{rt.file}: no step {', '.join(map(str, missing))} (steps {have})")
    else:
        warm = {s.number for s in analysis.steps if s.warmup}
        numbers = [s.number for s in rt.steps if s.number not in warm]
    bounds = step_bounds(rt.steps)
    sel = [i for i, s in enumerate(rt.steps) if s.number in set(numbers)]
    return ([(rt.steps[i].cpu_start_us, rt.steps[i].cpu_end_us) for i in sel], [bounds[i] for i in sel],
            numbers)


def device_selection(rt: RankTrace, host_spans: Spans, device_spans: Spans) -> dict[int, np.ndarray]:
    """Per GPU lane, the events that belong to the steps (the module docstring's rule: launched in
    a step's CPU span, else starting in its device span)."""
    launch_us = {lane.lane_id: np.full(len(lane), np.nan) for lane in rt.lanes if lane.is_gpu}
    flows = rt.flows
    for src in np.unique(flows.src_lane).tolist() if len(flows) else []:
        m = flows.src_lane == src
        t = rt.lanes[src].start_us[flows.src_index[m]]
        for dst in np.unique(flows.dst_lane[m]).tolist():
            mm = flows.dst_lane[m] == dst
            launch_us[dst][flows.dst_index[m][mm]] = t[mm]
    out = {}
    for lane_id, t in launch_us.items():
        launched = ~np.isnan(t)
        out[lane_id] = np.where(launched, starts_in(np.where(launched, t, 0.0), host_spans),
                                starts_in(rt.lanes[lane_id].start_us, device_spans))
    return out


def _device_span(rt: RankTrace) -> tuple[float, float] | None:
    lanes = [lane for lane in rt.gpu_lanes if len(lane)]
    if not lanes:
        return None
    return (min(float(lane.start_us.min()) for lane in lanes),
            max(float(lane.end_us.max()) for lane in lanes) + 1e-3)  # end inclusive of the last start


def _class_time_s(rt: RankTrace, keep: dict[int, np.ndarray]) -> np.ndarray:
    """Seconds of device work per kernel class among the selected events (as the op table)."""
    out = np.zeros(len(KERNEL_CLASSES))
    for lane in rt.lanes_of_kind(*GPU_ACTIVITY_KINDS):
        m = keep[lane.lane_id] & (lane.kernel_class >= 0)
        out += np.bincount(lane.kernel_class[m].astype(np.int64), weights=lane.duration_us[m],
                           minlength=len(KERNEL_CLASSES))[: len(KERNEL_CLASSES)] / 1e6
    return out


# What changed ---------------------------------------------------------------------------------------

_pct = format_percent                      # "12.3 %"
_ms = partial(format_ms, missing="-")      # "12.34 ms": before and after in one unit


def _faster(speedup: float) -> str:
    return f"{speedup:.2f}x faster" if speedup >= 1 else f"{1 / speedup:.2f}x slower"
