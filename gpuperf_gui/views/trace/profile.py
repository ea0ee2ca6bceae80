"""File ▸ Profile a script…: run a Python script under torch.profiler and open its trace.

:class:`ProfileDialog` asks for the script (or ``-m module``), its arguments, the steps to record and
the profiler's options; :class:`ProfileRunner` runs core's
:func:`~gpuperf_gui.core.profile_script.iter_profile` (a child interpreter: one profiler step per
optimizer step, a wall-clock window for scripts without one) in the tab's worker pattern, shows the
progress and the script's own output, stops it on request (the recorded steps are still written),
and emits ``trace_written(path)`` so the Trace tab opens and diagnoses the trace.
"""

from __future__ import annotations

import html
import shlex
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QMainWindow,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core.profile_script import (
    DEVICES,
    ProfileError,
    ProfileOutput,
    ProfileProgress,
    ProfileRequest,
    ProfileResult,
    iter_profile,
)
from gpuperf_gui.views.progress import show_progress
from gpuperf_gui.views.workers import TaskRunner
from gpuperf_gui.views import settings_store

STOP_GRACE_S = 20.0          # after Stop, the script has this long to write its trace before it is killed
MAX_OUTPUT_LINES = 5000


class ProfileDialog(QDialog):
    """What to profile: script or module, arguments, steps, device, shapes/stack, output file."""

    def __init__(self, parent: QWidget | None = None, request: ProfileRequest | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Profile a script")
        self.script_edit = QLineEdit()
        self.script_edit.setPlaceholderText("train.py, or a module name with -m")
        browse = QPushButton("Browse…")
        self.module_check = QCheckBox("-m module")
        self.args_edit = QLineEdit()
        self.args_edit.setPlaceholderText("the script's own arguments, as on a command line")
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, 1000)
        self.steps_spin.setValue(3)
        defaults = ProfileRequest(script="", out="")
        self.skip_spin = QSpinBox()
        self.skip_spin.setRange(0, 1000)
        self.skip_spin.setValue(defaults.skip_first)
        self.skip_spin.setToolTip("Steps neither timed nor traced first (compilation, autotuning, start-up)")
        self.wait_spin = QSpinBox()
        self.wait_spin.setRange(0, 1000)
        self.wait_spin.setValue(defaults.wait)
        self.wait_spin.setToolTip("Steps run with the profiler idle and timed: the step time without the "
                                  "profiler, which Compare uses for the speedup")
        self.warmup_spin = QSpinBox()
        self.warmup_spin.setRange(0, 1000)
        self.warmup_spin.setValue(1)
        self.device_combo = QComboBox()
        self.device_combo.addItems(list(DEVICES))
        self.shapes_check = QCheckBox("record shapes (FLOPs and roofline points)")
        self.shapes_check.setChecked(True)
        self.stack_check = QCheckBox("with stack")
        self.out_edit = QLineEdit()
        out_browse = QPushButton("Save as…")
        self.error = QLabel("")
        self.error.setStyleSheet("color:#8b1a1a")
        self.error.setWordWrap(True)

        script_row = QHBoxLayout()
        script_row.addWidget(self.script_edit, 1)
        script_row.addWidget(self.module_check)
        script_row.addWidget(browse)
        steps_row = QHBoxLayout()
        for label, spin in (("record", self.steps_spin), ("after skipping", self.skip_spin),
                            ("timing unprofiled", self.wait_spin), ("and warming up", self.warmup_spin)):
            steps_row.addWidget(QLabel(label))
            steps_row.addWidget(spin)
        steps_row.addWidget(QLabel("optimizer steps"))
        steps_row.addStretch(1)
        out_row = QHBoxLayout()
        out_row.addWidget(self.out_edit, 1)
        out_row.addWidget(out_browse)
        form = QFormLayout()
        form.addRow("Script", script_row)
        form.addRow("Arguments", self.args_edit)
        form.addRow("Steps", steps_row)
        form.addRow("Device", self.device_combo)
        form.addRow("", self.shapes_check)
        form.addRow("", self.stack_check)
        form.addRow("Trace file", out_row)
        note = QLabel("<span style='color:#666'>One profiler step per optimizer step; the unprofiled steps' "
                      "times go into the trace, so Compare reports the speedup without the profiler's "
                      "overhead; a script without an "
                      "optimizer (inference) gets a 10 s wall-clock window. The script's output appears under "
                      "the Trace tab's toolbar; Stop writes the steps recorded so far.</span>")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Profile")
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        browse.clicked.connect(self._browse_script)
        out_browse.clicked.connect(self._browse_out)
        self.script_edit.editingFinished.connect(self._default_out)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        self.resize(640, 0)
        if request is not None:
            self.set_request(request)

    def set_request(self, req: ProfileRequest) -> None:
        self.script_edit.setText(req.script)
        self.module_check.setChecked(req.module)
        self.args_edit.setText(shlex.join(req.args))
        self.steps_spin.setValue(req.steps)
        self.skip_spin.setValue(req.skip_first)
        self.wait_spin.setValue(req.wait)
        self.warmup_spin.setValue(req.warmup)
        self.device_combo.setCurrentText(req.device)
        self.shapes_check.setChecked(req.record_shapes)
        self.stack_check.setChecked(req.with_stack)
        self.out_edit.setText(req.out)

    def request(self) -> ProfileRequest:
        """The request as typed (``ProfileError`` for arguments that do not parse)."""
        try:
            args = shlex.split(self.args_edit.text())
        except ValueError as exc:
            raise ProfileError(f"the arguments do not parse: {exc}") from exc
        script = self.script_edit.text().strip()
        cwd = "" if self.module_check.isChecked() or not script else str(Path(script).resolve().parent)
        return ProfileRequest(script=script, out=self.out_edit.text().strip(), args=args,
                              module=self.module_check.isChecked(), steps=self.steps_spin.value(),
                              skip_first=self.skip_spin.value(), wait=self.wait_spin.value(), warmup=self.warmup_spin.value(),
                              device=self.device_combo.currentText(), record_shapes=self.shapes_check.isChecked(),
                              with_stack=self.stack_check.isChecked(), cwd=cwd)

    def _accept(self) -> None:
        try:
            req = self.request()
            req.validate()
        except ProfileError as exc:
            self.error.setText(str(exc))
            return
        self.accept()

    def _browse_script(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A Python script", settings_store.last_folder("scripts"),
                                              "Python (*.py);;All files (*)")
        if path:
            settings_store.remember_folder("scripts", Path(path).parent)
        if path:
            self.script_edit.setText(path)
            self.module_check.setChecked(False)
            self._default_out()

    def _browse_out(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Write the trace to", self.out_edit.text(),
                                              "Chrome traces (*.json.gz *.json)")
        if path:
            self.out_edit.setText(path)

    def _default_out(self) -> None:
        """A trace file beside the script (or in the temp folder for a module), unless one is typed."""
        if self.out_edit.text().strip():
            return
        script = self.script_edit.text().strip()
        if not script:
            return
        if self.module_check.isChecked():
            folder, stem = Path(tempfile.gettempdir()), script.replace(".", "_")
        else:
            folder, stem = Path(script).resolve().parent, Path(script).stem
        self.out_edit.setText(str(folder / f"{stem}.pt.trace.json.gz"))


class ProfileRunner(QWidget):
    """The progress row of a profiled script: status, progress, its output, Stop."""

    trace_written = Signal(Path)     # the trace of a finished run (GUI thread)
    trace_opened = Signal()          # that trace is shown now (the Trace tab turns to its Timeline)
    profile_failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.task = TaskRunner(self, stop_timeout_ms=int((STOP_GRACE_S + 5) * 1000))
        self.task.item_produced.connect(self._on_item)
        self.task.run_failed.connect(self._on_failed)
        self.task.run_finished.connect(self._on_finished)
        self.last_request: ProfileRequest | None = None
        self.result: ProfileResult | None = None
        self.trace_path: Path | None = None   # the trace this banner belongs to (written, opening)
        self._opening = False                 # trace_opened still to come for it
        self._stop_asked = False              # the user pressed Stop (not: the steps were all recorded)
        self._written_text = ""               # the banner's line about the trace written
        self._window_row: WindowProgress | None = None   # the main window's status-bar progress
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setMaximumWidth(360)
        self.output_button = QToolButton(text="Output ▾")
        self.output_button.setCheckable(True)
        self.output_button.setToolTip("The script's own stdout and stderr")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the script; the steps recorded so far are written and opened")
        self.close_button = QToolButton(text="×")
        self.close_button.setToolTip("Hide")
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(MAX_OUTPUT_LINES)
        self.output.setMaximumHeight(160)
        self.output.hide()
        row = QHBoxLayout()
        row.setContentsMargins(4, 0, 4, 0)
        row.addWidget(QLabel("<b>Profiling</b>"))
        row.addWidget(self.status, 1)
        row.addWidget(self.progress)
        row.addWidget(self.output_button)
        row.addWidget(self.stop_button)
        row.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.output)
        self.output_button.toggled.connect(self.output.setVisible)
        self.stop_button.clicked.connect(self.stop)
        self.close_button.clicked.connect(self.hide)
        self.hide()

    # -- control --------------------------------------------------------------------------------------------
    def ask_and_run(self) -> None:
        """File ▸ Profile a script…: the dialog, then the run."""
        dialog = ProfileDialog(self.window(), self.last_request)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.run(dialog.request())

    def run(self, req: ProfileRequest) -> bool:
        """Start profiling ``req`` (False, with the reason shown, when it cannot run or one runs)."""
        if self.task.is_running():
            self._set_status("a script is already being profiled: stop it first", error=True)
            self.show()
            return False
        try:
            req.validate()
        except ProfileError as exc:
            self._set_status(html.escape(str(exc)), error=True)
            self.show()
            self.profile_failed.emit(str(exc))
            return False
        self.last_request, self.result = req, None
        self.trace_path, self._opening, self._stop_asked = None, False, False
        self.output.clear()
        self.progress.setRange(0, 0)
        self.progress.setFormat("starting")
        self.progress.show()
        self.stop_button.setEnabled(True)
        self.close_button.setEnabled(False)
        name = req.script if req.module else Path(req.script).name
        self._set_status(f"{html.escape(name)} {html.escape(shlex.join(req.args))}")
        self.show()
        self._tell_window(f"Profiling {name}", "starting")

        def produce(stop: threading.Event) -> Iterator[object]:
            return iter_profile(req, stop, grace_s=STOP_GRACE_S)

        return self.task.start(produce)

    def stop(self) -> None:
        if self.task.cancel():
            self._stop_asked = True
            self._tell_window(None, "stopping: writing the steps recorded so far")
            self.progress.setFormat("stopping: writing the steps recorded so far")
            self.stop_button.setEnabled(False)

    def is_busy(self) -> bool:
        return self.task.is_running()

    def shutdown(self) -> None:
        """Stop the script (it writes what it recorded) and wait for the worker (closeEvent)."""
        self.task.shutdown()

    # -- worker items -------------------------------------------------------------------------------------
    def _on_item(self, item: object) -> None:
        if isinstance(item, ProfileOutput):
            self.output.appendPlainText(item.text.rstrip("\n"))
        elif isinstance(item, ProfileProgress):
            self._on_progress(item)
        elif isinstance(item, ProfileResult):
            self._on_result(item)

    def _on_progress(self, p: ProfileProgress) -> None:
        n = p.fields.get("n")
        if p.target:
            text = f"recorded {p.recorded} of {p.target} steps" + (f" (optimizer step {n})" if n else "")
            show_progress(self.progress, p.recorded, p.target, text)
        else:
            text = p.event + (f" (optimizer step {n})" if n else "")
            self.progress.setFormat(text)
        self._tell_window(None, text, p.recorded, p.target)

    def _on_result(self, r: ProfileResult) -> None:
        self.result = r
        trace = Path(r.trace_path) if r.trace_path else None
        if r.ok and trace is not None and trace.exists():
            timing = f"; {html.escape(r.timing_summary())}" if r.timing_summary() else ""
            self._written_text = f"wrote {html.escape(trace.name)}: {html.escape(self.recorded_text(r))}{timing}"
            self._set_status(f"{self._written_text}; opening it")
            self.trace_path, self._opening = trace, True
            self._tell_window(None, f"wrote {trace.name}; opening it", done=True)
            self.trace_written.emit(trace)
            return
        detail = f" — the script raised: {html.escape(r.script_error)}" if r.script_error else ""
        self._tell_window(None, f"failed: {r.message}", done=True)
        self._set_status(f"{html.escape(r.message)}{detail}", error=True)
        self.output_button.setChecked(True)
        self.profile_failed.emit(r.message)

    def recorded_text(self, r: ProfileResult) -> str:
        """What the trace holds, in words: all the steps asked for, or the ones recorded before a Stop
        (never "stopped early" for a run that recorded what it was asked to)."""
        if r.mode != "steps":
            return "a wall-clock window (no optimizer step)"
        n = r.steps_recorded
        text = f"{n} step{'s' if n != 1 else ''}"
        asked = self.last_request.steps if self.last_request is not None else n
        if n >= asked:
            text = f"the {text} asked for" if n != 1 else "the 1 step asked for"
            if r.stopped_early:
                text += " (the script was ended there, as planned)"
        elif self._stop_asked:
            text += f" of {asked} (stopped when you asked)"
        else:
            text += f" of {asked} (the script ended first)"
        if r.partial_last_step:
            text += "; the step in progress then is in the trace, cut short, and left out of the median step time"
        return text

    def trace_shown(self, files: list[str]) -> None:
        """The Trace tab shows ``files``: this banner and output belong to this run's trace only. Its
        own trace turns the tab to the Timeline (once); another trace clears and hides them (a run
        still in progress keeps them)."""
        if self.task.is_running():
            return
        ours = self.trace_path is not None and [Path(f).resolve() for f in files] == [self.trace_path.resolve()]
        if ours:
            if self._opening:
                self._opening = False
                self._set_status(self._written_text)     # opened: no more "opening it"
                self._tell_window(None, f"{self.trace_path.name} opened on the Trace tab", done=True)
                if self._window_row is not None:
                    self._window_row.finish()
                self.trace_opened.emit()
            return
        self.trace_path, self._opening = None, False
        self.output.clear()
        self.output_button.setChecked(False)
        self.hide()

    def _tell_window(self, title: str | None, text: str, done_steps: int = 0, total: int = 0,
                     done: bool = False) -> None:
        """The run's progress in the main window's status bar, where the user is whatever the tab."""
        window = self.window()
        if not isinstance(window, QMainWindow):
            return
        if self._window_row is None:
            self._window_row = WindowProgress(self.stop)
            window.statusBar().addPermanentWidget(self._window_row)
        self._window_row.show_progress(title, text, done_steps, total, done)

    def _on_failed(self, message: str) -> None:
        self._set_status(html.escape(message.split(": ", 1)[-1]), error=True)
        self.profile_failed.emit(message)

    def _on_finished(self) -> None:
        if self._window_row is not None:
            self._window_row.finish()
        self.progress.hide()
        self.stop_button.setEnabled(False)
        self.close_button.setEnabled(True)

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status.setText(f"<span style='color:#8b1a1a'>{text}</span>" if error else text)


class WindowProgress(QWidget):
    """A profiled script's progress in the main window's status bar: its name, what it does, a small
    bar and Stop; it stays while the script runs and says the outcome for a while after."""

    LINGER_MS = 10_000

    def __init__(self, stop: Callable[[], None]) -> None:
        super().__init__()
        self.label = QLabel("")
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(160)
        self.bar.setMaximumHeight(16)
        self.bar.setTextVisible(False)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the script; the steps recorded so far are written and opened")
        self.stop_button.clicked.connect(stop)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.bar)
        row.addWidget(self.stop_button)
        self._title = "Profiling"
        self._hide_timer = QTimer(self)
        self._hide_timer.setSingleShot(True)
        self._hide_timer.timeout.connect(self.hide)

    def show_progress(self, title: str | None, text: str, done_steps: int, total: int, done: bool) -> None:
        self._hide_timer.stop()
        if title:
            self._title = title
        self.label.setText(f"{self._title}: {text}")
        self.bar.setVisible(not done)
        self.stop_button.setVisible(not done)
        if not done:
            show_progress(self.bar, done_steps, total, text)
        self.show()

    def finish(self) -> None:
        """The run ended: the bar and Stop go; the outcome stays for a while."""
        self.bar.hide()
        self.stop_button.hide()
        self._hide_timer.start(self.LINGER_MS)
