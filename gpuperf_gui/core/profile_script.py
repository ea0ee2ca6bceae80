"""Profile a user's Python script under torch.profiler, in a child interpreter (`gpuperf profile`).

The child runs the script (``runpy``: a path, or ``-m module``) with ``sys.argv`` set as the script
expects and its stdout/stderr untouched. A global optimizer step post-hook
(``torch.optim.optimizer.register_optimizer_step_post_hook``) calls ``prof.step()``, so one profiler
step is one optimizer step (of the first optimizer that steps; a second optimizer in the same loop does
not split steps). The schedule is ``schedule(skip_first=K, wait=W, warmup=U, active=N, repeat=1)``
from the first optimizer step on. Once N steps are recorded the trace is written and the script is
ended cleanly (``--run-to-end`` lets it go on, unprofiled).

Unprofiled step times: the W wait steps run with the profiler idle (not recording), so the child
times them, and the N active steps the same way, with ``time.perf_counter`` between optimizer-step
boundaries (the profiler's own bookkeeping at a boundary excluded), and writes both into the trace
as the top-level key :data:`UNPROFILED_KEY` (``prof.add_metadata_json``): ``step_times_s`` (wait
steps), ``profiled_step_times_s`` (active steps), ``steps_skipped`` (K), ``method``. ``gpuperf
diff`` takes its speedup from them, and profiled / unprofiled is the profiler's measured overhead.
The K skipped steps keep one-off work (torch.compile's recompiles and CUDA-graph recording, cuDNN/
cuBLAS autotuning, allocator growth, DataLoader start-up) out of the unprofiled steps. No device
synchronize bounds the timed steps: where the script synchronises every step (``loss.item()``) or
its launch queue is full, the host interval between boundaries is the step's period; a synchronize
at the window's edge would drain the queue and make the next steps' host intervals short.

Scripts without an optimizer (inference): ``mode="auto"`` records a wall-clock window (``window_s``
seconds from ``window_delay_s`` after the script starts) until the first optimizer step, which discards
it and switches to steps; a script that never steps keeps the window trace. ``mode="window"`` always
records the window and ends the script after it; ``mode="steps"`` never does. The window's end needs
``SIGALRM`` (POSIX); elsewhere the window lasts until the script ends.

The profiler (CUPTI) starts before the script, so set ``CUDA_VISIBLE_DEVICES`` in the environment of
``gpuperf profile`` rather than inside the script.

The profiler is always stopped and the recorded part written when the script ends, raises, calls
``sys.exit``, or is asked to stop (``SIGUSR1``, POSIX; what the GUI's Stop sends). torch is imported
only in the child; this module imports nothing outside the standard library, so the child can run
under any interpreter that has torch (``ProfileRequest.python``).

Progress: the child writes lines ``[gpuperf profile] EVENT key=value ...`` on its stderr
(``parse_progress`` reads them): ``started``, ``window``, ``step`` (``n`` optimizer steps so far,
``recorded`` of ``target``), ``trace`` (written), ``stopping``, ``finished``. Its outcome is a JSON file
read back as ``ProfileResult``.

API for a GUI worker (no Qt here)::

    req = ProfileRequest(script="train.py", args=["--lr", "3e-4"], out="run.json.gz", steps=3)
    for item in iter_profile(req, stop_event):   # stop_event.set() asks the script to stop
        if isinstance(item, ProfileOutput): ...    # a line the script printed (stream "stdout"/"stderr")
        elif isinstance(item, ProfileProgress): ...  # item.recorded / item.target, item.event
        elif isinstance(item, ProfileResult): ...    # last item: item.ok, item.trace_path, item.message

``run_profile(req)`` is the blocking form the CLI uses (the child shares the terminal).
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Iterator, Sequence

PROGRESS_PREFIX = "[gpuperf profile] "
MODES = ("auto", "steps", "window")
DEVICES = ("auto", "cpu", "cuda")
UNPROFILED_KEY = "gpuperf_unprofiled"
"""Top-level trace key holding the step times measured with the profiler idle and recording."""
STOP_AT_STEP_WAIT_S = 5.0
"""After Stop, how long the child waits for the next optimizer step before it stops mid-step."""
_PROGRESS_RE = re.compile(r"^\[gpuperf profile\] (\w+)((?: \w+=\S*)*)\s*$")


class ProfileError(RuntimeError):
    """The request cannot run (bad arguments, missing script); a clear message for the user."""


@dataclass
class ProfileRequest:
    """What to run and how to profile it. ``script`` is a path, or a module name when ``module``."""

    script: str
    out: str
    args: list[str] = field(default_factory=list)
    module: bool = False
    steps: int = 3
    # skip 1, then 5 unprofiled (timed) steps: the first step after the first optimizer step can still
    # hold one-off work (recompiles, CUDA-graph recording, autotuning), and a median of 5 outlasts two
    # slow steps (a GC pause, a late batch; on the H200 machine ~100 ms steps came in runs of 2-5 among
    # ~80 ms ones: benchmarks/h200/check_unprofiled.py)
    skip_first: int = 1
    wait: int = 5
    warmup: int = 1
    device: str = "auto"  # profiler activities: cpu = CPU only, cuda = CPU + CUDA, auto = CUDA if present
    record_shapes: bool = False
    with_stack: bool = False
    mode: str = "auto"
    window_s: float = 10.0
    window_delay_s: float = 0.0
    run_to_end: bool = False
    python: str = ""  # interpreter with torch; default: this one
    cwd: str = ""

    def validate(self) -> None:
        if self.steps < 1:
            raise ProfileError("--steps must be >= 1")
        if self.wait < 0 or self.warmup < 0 or self.skip_first < 0:
            raise ProfileError("--skip-first, --wait and --warmup must be >= 0")
        if self.device not in DEVICES:
            raise ProfileError(f"--device must be one of {', '.join(DEVICES)}")
        if self.mode not in MODES:
            raise ProfileError(f"--mode must be one of {', '.join(MODES)}")
        if self.window_s <= 0 or self.window_delay_s < 0:
            raise ProfileError("--window-s must be > 0 and --window-delay-s >= 0")
        if not self.out.endswith((".json", ".json.gz")):
            raise ProfileError(f"the output must end in .json or .json.gz: {self.out}")
        if not self.module and not Path(self.cwd or ".", self.script).is_file():
            raise ProfileError(f"no such script: {self.script}")
        out_dir = Path(self.cwd or ".", self.out).parent
        if not out_dir.is_dir():
            raise ProfileError(f"the output folder does not exist: {out_dir}")


@dataclass
class ProfileOutput:
    """One line the script wrote (newline kept)."""

    stream: str
    text: str


@dataclass
class ProfileProgress:
    event: str
    fields: dict[str, str]

    @property
    def recorded(self) -> int:
        return int(self.fields.get("recorded", 0))

    @property
    def target(self) -> int:
        return int(self.fields.get("target", 0))


@dataclass
class ProfileResult:
    ok: bool
    message: str
    trace_path: str | None = None
    mode: str | None = None  # "steps" | "window"
    steps_recorded: int = 0
    optimizer_steps: int = 0
    script_exit_code: int | None = None
    script_error: str | None = None
    stopped_early: bool = False
    profiler_left_running: bool = False
    activities: list[str] = field(default_factory=list)
    unprofiled_step_times_s: list[float] = field(default_factory=list)
    """Wall time of the wait steps (profiler idle), as written under :data:`UNPROFILED_KEY`."""
    profiled_step_times_s: list[float] = field(default_factory=list)
    """Wall time of the recorded (active) steps, measured the same way."""
    partial_last_step: bool = False
    """The trace ends in the step in progress when the script stopped (cut short; not in the median)."""

    def timing_summary(self) -> str:
        """One line: median step time with the profiler idle and recording, and their ratio ("" if none)."""
        if not self.unprofiled_step_times_s:
            return ""
        idle = statistics.median(self.unprofiled_step_times_s)
        text = (f"step time without the profiler {1e3 * idle:.2f} ms (median of "
                f"{len(self.unprofiled_step_times_s)} wait steps)")
        if self.profiled_step_times_s and idle > 0:
            rec = statistics.median(self.profiled_step_times_s)
            text += f", recorded {1e3 * rec:.2f} ms: profiler overhead {100 * (rec / idle - 1):+.0f} %"
        return text


def parse_progress(line: str) -> ProfileProgress | None:
    """A progress line of the child (``[gpuperf profile] step n=4 recorded=2 target=3``), else None."""
    m = _PROGRESS_RE.match(line.rstrip("\n"))
    if not m:
        return None
    fields = dict(kv.split("=", 1) for kv in m.group(2).split())
    return ProfileProgress(m.group(1), fields)


# ----------------------------------------------------------------------------- parent side

def _child_script() -> str:
    """This file, run as the child's main script (any interpreter with torch can run it)."""
    here = Path(__file__)
    if here.is_file():
        return str(here)
    import inspect  # frozen app: the source is bundled, not on disk

    tmp = Path(tempfile.mkdtemp(prefix="gpuperf-profile-")) / "profile_script.py"
    tmp.write_text(inspect.getsource(sys.modules[__name__]))
    return str(tmp)


def _command(req: ProfileRequest, spec_path: Path) -> list[str]:
    return [req.python or sys.executable, _child_script(), "--gpuperf-profile-child", str(spec_path)]


def _write_spec(req: ProfileRequest, workdir: Path) -> tuple[Path, Path]:
    cwd = Path(req.cwd or os.getcwd()).resolve()
    spec = asdict(req)
    spec["cwd"] = str(cwd)
    spec["out"] = str((cwd / req.out).resolve())
    if not req.module:
        spec["script"] = str((cwd / req.script).resolve())
    result_path = workdir / "result.json"
    spec["result_path"] = str(result_path)
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    return spec_path, result_path


def _read_result(result_path: Path, returncode: int | None) -> ProfileResult:
    try:
        data = json.loads(result_path.read_text())
    except (OSError, ValueError):
        return ProfileResult(ok=False, script_exit_code=returncode,
                             message=f"the profiling process ended without a result (exit code {returncode}); "
                                     "is torch installed for this interpreter?")
    return ProfileResult(**data)


def run_profile(req: ProfileRequest) -> ProfileResult:
    """Run the script to its end (or N steps) with the terminal shared; blocking (the CLI)."""
    req.validate()
    with tempfile.TemporaryDirectory(prefix="gpuperf-profile-") as tmp:
        spec_path, result_path = _write_spec(req, Path(tmp))
        proc = subprocess.Popen(_command(req, spec_path), cwd=req.cwd or None)  # noqa: S603
        try:
            code = proc.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the child too: let it write what it has
            code = _wait_or_kill(proc, 30.0)
        return _read_result(result_path, code)


def _wait_or_kill(proc: subprocess.Popen, grace_s: float) -> int | None:
    try:
        return proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return proc.wait()


def _kill(proc: subprocess.Popen) -> None:
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # DataLoader workers too
        except (ProcessLookupError, PermissionError):
            pass
    elif proc.poll() is None:
        proc.kill()


def _pump(stream: IO[str], name: str, out: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        out.put((name, line))
    out.put((name, None))


def iter_profile(req: ProfileRequest, stop: threading.Event | None = None,
                 grace_s: float = 30.0) -> Iterator[ProfileOutput | ProfileProgress | ProfileResult]:
    """Run the script in a child, yielding its output lines and progress; the last item is the result.

    Setting ``stop`` asks the child to stop (SIGUSR1 on POSIX: the recorded steps are written and the
    script ends); after ``grace_s`` more, or at once where there is no SIGUSR1, the child is killed.
    """
    req.validate()
    stop = stop or threading.Event()
    with tempfile.TemporaryDirectory(prefix="gpuperf-profile-") as tmp:
        spec_path, result_path = _write_spec(req, Path(tmp))
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(_command(req, spec_path), cwd=req.cwd or None, env=env,  # noqa: S603
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", bufsize=1, start_new_session=os.name == "posix")
        lines: queue.Queue = queue.Queue()
        pumps = [threading.Thread(target=_pump, args=(stream, name, lines), daemon=True)
                 for stream, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr"))]
        for pump in pumps:
            pump.start()
        open_streams, stop_sent_at = 2, None
        try:
            while open_streams:
                if stop.is_set() and stop_sent_at is None:
                    stop_sent_at = time.monotonic()
                    if hasattr(signal, "SIGUSR1") and proc.poll() is None:
                        proc.send_signal(signal.SIGUSR1)
                    else:
                        _kill(proc)
                if stop_sent_at is not None and time.monotonic() - stop_sent_at > grace_s:
                    _kill(proc)
                try:
                    name, line = lines.get(timeout=0.1)
                except queue.Empty:
                    continue
                if line is None:
                    open_streams -= 1
                    continue
                progress = parse_progress(line) if name == "stderr" else None
                yield progress if progress else ProfileOutput(name, line)
            code = _wait_or_kill(proc, grace_s)
        finally:
            if proc.poll() is None:
                _kill(proc)
                proc.wait()
            for pump in pumps:
                pump.join(5.0)
            for stream in (proc.stdout, proc.stderr):
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
        yield _read_result(result_path, code)


# ----------------------------------------------------------------------------- child side

class _StopScript(BaseException):
    """Ends the user's script from a hook or signal handler (not caught by ``except Exception``)."""


class _Session:
    """The child's profiler state: window profiler, step profiler, hooks, the outcome."""

    def __init__(self, spec: dict) -> None:
        import warnings

        import torch
        from torch.profiler import ProfilerActivity

        # torch >= 2.10 warns on every scheduled profile that only the current cycle is kept: we want that
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", category=UserWarning)

        self.spec = spec
        self.torch = torch
        # NVML's count, so CUDA itself is not initialised before the script runs
        nvml = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        try:
            cuda_ok = torch.cuda.is_available()
        finally:
            if nvml is None:
                del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
            else:
                os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = nvml
        if spec["device"] == "cuda" and not cuda_ok:
            raise ProfileError("--device cuda: torch sees no CUDA device here")
        self.cuda = spec["device"] == "cuda" or (spec["device"] == "auto" and cuda_ok)
        self.activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        self.out = Path(spec["out"])
        self.window_prof = None
        self.step_prof = None
        self.optimizer_id: int | None = None
        self.optimizer_steps = 0
        self.recorded = 0
        self.mode: str | None = None
        self.trace_written = False
        self.stopped_early = False
        self.hook = None
        self.in_hook = False
        self.stop_pending = False
        self.stop_at_step_end = False   # Stop asked while steps are recorded: end at the next step
        self.partial_step = False
        self.wrapped = False
        self.step_pending = False
        self.step_started_at: float | None = None   # perf_counter when the current profiler step began
        self.unprofiled_s: list[float] = []          # wait steps (profiler idle)
        self.profiled_s: list[float] = []            # active steps (recording)

    # -- progress
    @staticmethod
    def say(event: str, **fields: object) -> None:
        text = " ".join(f"{k}={str(v).replace(' ', '_')}" for k, v in fields.items())
        sys.stderr.write(f"{PROGRESS_PREFIX}{event}{' ' + text if text else ''}\n")
        sys.stderr.flush()

    def _profile(self, schedule=None, on_trace_ready=None):
        from torch.profiler import profile

        return profile(activities=self.activities, schedule=schedule, on_trace_ready=on_trace_ready,
                       record_shapes=self.spec["record_shapes"], with_stack=self.spec["with_stack"])

    @staticmethod
    def _label(prof, mode: str) -> None:
        """Top-level trace keys saying how the trace was made (read while recording)."""
        prof.add_metadata("gpuperf_profile_mode", mode)

    def _sync(self) -> None:
        if self.cuda:
            try:
                self.torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - a failed device must not stop the trace from being written
                pass

    def _export(self, prof, mode: str) -> None:
        write_trace(prof, self.out)
        self.trace_written, self.mode = True, mode
        self.say("trace", path=self.out, mode=mode, steps=self.recorded if mode == "steps" else 0)

    # -- start
    def start(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        spec = self.spec
        self.say("started", mode=spec["mode"], skip_first=spec["skip_first"], wait=spec["wait"], warmup=spec["warmup"], target=spec["steps"],
                 activities=",".join(a.name for a in self.activities))
        if spec["mode"] != "window":
            self.hook = register_optimizer_step_post_hook(self._on_optimizer_step)
        if spec["mode"] != "steps":
            if spec["window_delay_s"] > 0 and hasattr(signal, "SIGALRM"):
                signal.signal(signal.SIGALRM, self._on_alarm)
                signal.setitimer(signal.ITIMER_REAL, spec["window_delay_s"])
            else:
                self._start_window()
        if hasattr(signal, "SIGUSR1"):
            signal.signal(signal.SIGUSR1, self._on_stop_request)

    def _start_window(self) -> None:
        self.window_prof = self._profile()
        self.window_prof.start()
        self._label(self.window_prof, "window")
        self.say("window", state="recording", seconds=self.spec["window_s"])
        if hasattr(signal, "SIGALRM"):
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.spec["window_s"])

    def _on_alarm(self, _signum, _frame) -> None:
        if self.stop_at_step_end and not self.in_hook:  # no step boundary came in time: stop here
            self._stop_now()
        if self.in_hook or self.step_prof is not None or self.trace_written:
            return
        if self.window_prof is None:
            self._start_window()
            return
        self._end_window()
        if self.spec["mode"] == "window" and not self.spec["run_to_end"]:
            self.stopped_early = True
            self.say("stopping", reason="window_done")
            raise _StopScript

    def _end_window(self) -> None:
        prof, self.window_prof = self.window_prof, None
        self._sync()
        prof.stop()
        self._export(prof, "window")

    def _cancel_window(self) -> None:
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.window_prof is not None:
            prof, self.window_prof = self.window_prof, None
            prof.stop()  # discarded: steps take over
            self.say("window", state="discarded", reason="optimizer_step")

    # -- steps
    def _on_optimizer_step(self, optimizer, _args, _kwargs) -> None:
        """Global post-hook: runs inside ``Optimizer.step``'s own profiler span."""
        if self.optimizer_id is None:
            self.optimizer_id = id(optimizer)
            self._guarded(self._first_step, optimizer)
            return
        if id(optimizer) != self.optimizer_id or self.step_prof is None:
            return
        if self.wrapped:
            self.step_pending = True  # the wrapper ends the step once the optimizer's span has closed
        else:
            self._guarded(self._end_step)

    def _first_step(self, optimizer) -> None:
        """The first optimizer step opens step 0; later steps end after ``optimizer.step`` returns, so a
        ProfilerStep never cuts an ``Optimizer.step`` span in two."""
        self._cancel_window()
        self._start_steps()
        orig = optimizer.step

        def step(*args, **kwargs):
            out = orig(*args, **kwargs)
            if self.step_pending:
                self.step_pending = False
                self._guarded(self._end_step)
            return out

        try:
            optimizer.step = step
            self.wrapped = True
        except (AttributeError, TypeError):  # no instance attributes: end steps inside the hook
            self.wrapped = False

    def _guarded(self, fn, *args) -> None:
        """Run profiler bookkeeping with stop requests held until it is done."""
        self.in_hook = True
        try:
            fn(*args)
        finally:
            self.in_hook = False
        if self.stop_pending:
            self._on_stop_request(None, None)

    def _end_step(self) -> None:
        self._time_step(self.optimizer_steps)  # the step that ends here, before any bookkeeping
        self.optimizer_steps += 1
        spec = self.spec
        before_active = spec["skip_first"] + spec["wait"] + spec["warmup"]
        # steps 0 .. optimizer_steps-1 are complete once prof.step() returns
        self.recorded = max(0, min(spec["steps"], self.optimizer_steps - before_active))
        if self.recorded >= spec["steps"]:
            self._write_step_times()  # still recording: the key lands in the trace written next
        # no device sync here: it would stretch the last step by the GPU's tail; Kineto's stop
        # still collects the kernels that finish after it
        self.step_prof.step()  # after the last active step: on_trace_ready writes the trace
        if self.optimizer_steps >= spec["skip_first"] + spec["wait"] and self.recorded < spec["steps"]:
            self._label(self.step_prof, "steps")  # kept only while Kineto traces (warmup, active)
        self.say("step", n=self.optimizer_steps, recorded=self.recorded, target=spec["steps"])
        self.step_started_at = time.perf_counter()
        if self.stop_at_step_end:
            self._stop_now()  # finish() writes the steps recorded so far
        if self.recorded >= spec["steps"]:
            self._finish_steps()
            if not spec["run_to_end"]:
                self.stopped_early = True
                self.say("stopping", reason="steps_recorded")
                raise _StopScript

    def _start_steps(self) -> None:
        from torch.profiler import schedule

        spec = self.spec
        self.step_prof = self._profile(
            schedule=schedule(skip_first=spec["skip_first"], wait=spec["wait"], warmup=spec["warmup"],
                              active=spec["steps"], repeat=1),
            on_trace_ready=lambda prof: self._export(prof, "steps"))
        self.step_prof.start()
        if spec["skip_first"] + spec["wait"] == 0:
            self._label(self.step_prof, "steps")
        self.step_started_at = time.perf_counter()

    def _time_step(self, index: int) -> None:
        """File the wall time of profiler step ``index`` (0-based) under its schedule phase."""
        if self.step_started_at is None:
            return
        elapsed_s = time.perf_counter() - self.step_started_at
        self.step_started_at = None
        spec = self.spec
        first_wait = spec["skip_first"]
        first_active = first_wait + spec["wait"] + spec["warmup"]
        if first_wait <= index < first_wait + spec["wait"]:
            self.unprofiled_s.append(elapsed_s)
        elif first_active <= index < first_active + spec["steps"]:
            self.profiled_s.append(elapsed_s)

    def step_times_json(self) -> dict:
        """The :data:`UNPROFILED_KEY` object."""
        spec = self.spec
        return {"step_times_s": list(self.unprofiled_s), "profiled_step_times_s": list(self.profiled_s),
                "last_step_partial": self.partial_step,  # the trace's last ProfilerStep was cut short
                "steps_skipped": spec["skip_first"],
                "schedule": {"skip_first": spec["skip_first"], "wait": spec["wait"], "warmup": spec["warmup"],
                             "active": spec["steps"]},
                "clock": "time.perf_counter", "device_synchronized": False,
                "method": "gpuperf profile: wall time between optimizer-step boundaries (the profiler's "
                          "bookkeeping at each boundary excluded); step_times_s are the schedule's wait "
                          "steps (profiler idle), profiled_step_times_s its active steps (recording)"}

    def _write_step_times(self) -> None:
        """Put the step times into the trace (only a recording profiler keeps metadata)."""
        if self.step_prof is not None and self.optimizer_steps >= self.spec["skip_first"] + self.spec["wait"]:
            self.step_prof.add_metadata_json(UNPROFILED_KEY, json.dumps(self.step_times_json()))

    def _finish_steps(self) -> None:
        if self.hook is not None:
            self.hook.remove()
            self.hook = None
        prof, self.step_prof = self.step_prof, None
        if prof is not None:
            prof.stop()  # after the last active step: nothing more to write

    def _on_stop_request(self, _signum, _frame) -> None:
        if self.in_hook:  # never interrupt the profiler half way: stop when the hook returns
            self.stop_pending = True
            return
        self.stop_pending = False
        if self.step_prof is not None and not self.stop_at_step_end and hasattr(signal, "SIGALRM"):
            # Steps are being recorded: end at the next optimizer step, where the recorded steps are
            # whole and no torch code is interrupted half way (an exception raised inside backward
            # can crash the interpreter); a step that does not come within STOP_AT_STEP_WAIT_S is
            # not waited for (a second Stop also ends it at once).
            self.stop_at_step_end = True
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, STOP_AT_STEP_WAIT_S)
            self.say("stopping", reason="at_next_step")
            return
        self._stop_now()

    def _stop_now(self) -> None:
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        self.stopped_early = True
        self.say("stopping", reason="stop_requested")
        raise _StopScript

    # -- end
    def finish(self) -> None:
        """Stop whatever runs and write what was recorded (steps first, else the window)."""
        for name in ("SIGALRM", "SIGUSR1"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.step_prof is not None:
            spec = self.spec
            self.partial_step = spec["skip_first"] + spec["wait"] + spec["warmup"] <= self.optimizer_steps
            self._write_step_times()
            self._sync()
            self._finish_steps()  # mid-record: on_trace_ready writes the recorded steps
        if self.hook is not None:
            self.hook.remove()
            self.hook = None
        if self.window_prof is not None:
            self._end_window()

    def profiler_running(self) -> bool:
        try:
            return bool(self.torch._C._autograd._profiler_enabled())
        except Exception:  # noqa: BLE001 - private API moved: report not running
            return False


def write_trace(prof, path: Path) -> None:
    """export_chrome_trace, gzipped when the name ends in .gz."""
    import gzip
    import shutil

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix != ".gz":
        prof.export_chrome_trace(str(path))
        return
    raw = path.with_name(path.name[:-3] + ".tmp")
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()


def _run_target(spec: dict) -> None:
    import runpy

    sys.argv = [spec["script"], *spec["args"]]
    if spec["module"]:
        runpy.run_module(spec["script"], run_name="__main__", alter_sys=True)  # sets argv[0] to its file
    else:
        runpy.run_path(spec["script"], run_name="__main__")


def _print_script_traceback(exc: BaseException) -> None:
    """The traceback as `python script.py` prints it: this file's and runpy's frames left out."""
    import traceback

    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename == __file__
                              or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message")
    return 1


def _outcome(session: _Session | None, code: int, error: str | None) -> dict:
    res = {"ok": False, "message": "", "trace_path": None, "mode": None, "steps_recorded": 0,
           "optimizer_steps": 0, "script_exit_code": code, "script_error": error, "stopped_early": False,
           "profiler_left_running": False, "activities": [], "unprofiled_step_times_s": [],
           "profiled_step_times_s": [], "partial_last_step": False}
    if session is None:
        res["message"] = error or "the profiler could not start"
        return res
    res.update(mode=session.mode, steps_recorded=session.recorded if session.mode == "steps" else 0,
               optimizer_steps=session.optimizer_steps + (1 if session.optimizer_id is not None else 0),
               stopped_early=session.stopped_early, profiler_left_running=session.profiler_running(),
               activities=[a.name for a in session.activities],
               unprofiled_step_times_s=list(session.unprofiled_s), profiled_step_times_s=list(session.profiled_s),
               trace_path=str(session.out) if session.trace_written else None,
               partial_last_step=session.mode == "steps" and session.partial_step)
    if session.trace_written:
        what = (f"{res['steps_recorded']} complete step(s)" if session.mode == "steps"
                else "a wall-clock window (no optimizer step)")
        if session.mode == "steps" and session.partial_step:
            what += " and the step in progress when the script ended (cut short)"
        res["message"] = f"trace written to {session.out}: {what}"
    else:
        sp = session.spec
        need = sp["skip_first"] + sp["wait"] + sp["warmup"] + 1
        res["message"] = (f"no trace: the script made {res['optimizer_steps']} optimizer step(s); the first "
                          f"recorded step needs {need} after the first (skip {sp['skip_first']} + wait "
                          f"{sp['wait']} + warmup {sp['warmup']} + 1)" if session.optimizer_id is not None
                          else "no trace: nothing was recorded before the script ended")
    if error or code:
        res["message"] = f"the script {'raised ' + error if error else f'exited with status {code}'}; " + res["message"]
    res["ok"] = session.trace_written and not error and code == 0
    return res


def child_main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    os.chdir(spec["cwd"])
    # sys.path[0] is this file's folder (gpuperf_gui/core): the script's own folder replaces it
    # before torch is imported, as `python script.py` / `python -m module` would have it.
    sys.path[0] = spec["cwd"] if spec["module"] else str(Path(spec["script"]).parent)
    session: _Session | None = None
    code, error = 0, None
    try:
        session = _Session(spec)
        session.start()
        _run_target(spec)
    except _StopScript:
        pass
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except ProfileError as exc:
        error, code = str(exc), 2
    except BaseException as exc:  # noqa: BLE001 - the script's failure is reported, the trace still written
        _print_script_traceback(exc)
        error, code = f"{type(exc).__name__}: {exc}", 1
    finally:
        if session is not None:
            try:
                session.finish()
            except BaseException as exc:  # noqa: BLE001
                error = error or f"writing the trace failed: {type(exc).__name__}: {exc}"
    res = _outcome(session, code, error)
    if session is not None:
        session.say("finished", ok=res["ok"], steps=res["steps_recorded"], mode=res["mode"])
    Path(spec["result_path"]).write_text(json.dumps(res))
    sys.stdout.flush()
    return 0 if res["ok"] else 1


def _main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--gpuperf-profile-child":
        return child_main(argv[1])
    print("this module is the child of `gpuperf profile`; run that instead", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
