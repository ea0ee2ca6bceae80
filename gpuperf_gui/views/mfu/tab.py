"""The MFU tab: the calculator, the gap from 100 % attributed to named causes, and the checks.

Thin view (STYLE.md R2): every number comes from :mod:`gpuperf_gui.core.mfu`; this module parses
text, marks invalid inputs in place, and draws. Every edit recomputes at once (the arithmetic takes
microseconds). :meth:`MfuTab.apply_trace_figures` fills the step time and the causes from a trace.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import PurePath
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core import mfu, mfu_gap
from gpuperf_gui.core.hardware import PRECISIONS
from gpuperf_gui.core.mfu_inputs import MfuForm, TraceRun, evaluate, example_check, example_form
from gpuperf_gui.core.mfu_report import report
from gpuperf_gui.core.model_presets import (
    EXAMPLE_RUNS,
    ConfigError,
    ModelConfig,
    get_preset,
    preset_names,
)
from gpuperf_gui.core.trace.figures import TraceMfuFigures
from gpuperf_gui.core.units import (
    format_count,
    format_duration_s,
    format_si,
    parse_quantity,
    parse_quantity_list,
)
from gpuperf_gui.views.mfu.gap_bar import SLICE_COLOURS, GapBar
from gpuperf_gui.views.trace.what_if_view import WhatIfSelector

if TYPE_CHECKING:
    from gpuperf_gui.views.context import AppContext

INVALID_STYLE = "QLineEdit { border: 2px solid #d73027; background: #fdecea; }"
NEEDED_STYLE = "QLineEdit { border: 2px solid #e0a000; background: #fff8e1; }"
FROM_TRACE_STYLE = "background: #e3f2fd;"  # every figure that came from a trace
EARLIER_TRACE_STYLE = "background: #fff3cd;"  # typed for an earlier trace: to check
N_GIVEN, CUSTOM_CONFIG = "N given directly", "Custom configuration"
NO_MODEL = "Choose the traced run's model…"
DEFAULT_PRESET = "Llama-3 8B"
GAP_TITLE = "Where the rest of 100 % went (shares of peak × step time)"
TIME_TITLE = "Step time by cause (shares of the step, not of peak: {why})"
NOTE_STYLE = ("QLabel { background: #fff8e1; color: #6d4c00; border: 1px solid #ffe08a; "
              "border-radius: 3px; padding: 4px; }")
EXAMPLE_STYLE = ("QLabel { background: #eef5ee; color: #1b4d1b; border: 1px solid #b7d7b7; "
                 "border-radius: 3px; padding: 4px; }")
TIME_CAUSES = mfu_gap.TIME_CAUSES
RECOMPUTE_FIELDS = ("recompute_dense", "recompute_attention")
TRACE_FRACTIONS = ("exposed_comm", "data_stall", "host_sync", "launch_gaps", "pipeline_bubble", "memory_bound")
RUN_FIELDS = ("micro_batch", "seq_len", "grad_accum", "data_parallel", "tokens_per_step", "step_times")


class _Invalid(Exception):
    """A field could not be parsed; it is already marked."""


class NumberField(QLineEdit):
    """A line edit for a number (``124M``, ``6e9``); marks itself red with the reason as tooltip."""

    def __init__(self, text: str = "", placeholder: str = "", tooltip: str = "") -> None:
        super().__init__(text)
        self.setPlaceholderText(placeholder)
        self._tooltip = self._plain_tooltip = tooltip
        self._base_style = ""
        self.setToolTip(tooltip)
        self.error: str | None = None
        self.setProperty("from_trace", False)

    def mark(self, error: str | None, *, needed: bool = False) -> None:
        """Red with the reason as tooltip; ``needed``: amber, an input still to give (not a mistake)."""
        self.error = error
        self.setProperty("invalid", bool(error))
        self.setProperty("needed", bool(error) and needed)
        self.setStyleSheet((NEEDED_STYLE if needed else INVALID_STYLE) if error else self._base_style)
        self.setToolTip(error or self._tooltip)

    def set_origin(self, tooltip: str | None) -> None:
        """Mark the field as filled from a trace (tinted, tooltip naming the trace), or clear it."""
        self._base_style = f"QLineEdit {{ {FROM_TRACE_STYLE} }}" if tooltip else ""
        self._tooltip = tooltip or self._plain_tooltip
        self.setProperty("from_trace", bool(tooltip))
        if not self.error:
            self.setStyleSheet(self._base_style)
            self.setToolTip(self._tooltip)


def _implausible(r: mfu.MfuResult) -> bool:
    """MFU above 100 % or far above the practical ceiling: its gap against peak means nothing."""
    return r.mfu > 1.0 or any(w.code in ("mfu_above_100", "mfu_above_ceiling") for w in r.warnings)


def _brief(message: str) -> str:
    """A few words for the bar's flag; the Checks box has the whole message."""
    if "impossible" in message:
        return "an input error, see Checks"
    if "missing" in message or message.startswith("choose"):
        return "inputs still missing, marked in amber"
    return message if len(message) < 60 else "see Checks"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _trace_name(figures: object) -> str:
    """A short name for the trace the figures come from (file name, or "N ranks")."""
    name = getattr(figures, "trace_name", None)
    if isinstance(name, str) and name:
        return name
    source = getattr(figures, "source", None)
    if not isinstance(source, str) or not source:
        return "the loaded trace"
    if "/" in source or "\\" in source or source.endswith((".json", ".gz")):
        return PurePath(source).name
    return f"the loaded trace ({source})"


def _kpi(title: str) -> tuple[QFrame, QLabel, QLabel]:
    frame = QFrame()
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(10, 6, 10, 6)
    caption = QLabel(title)
    value = QLabel("—")
    font = value.font()
    font.setPointSizeF(font.pointSizeF() * 1.9)
    font.setBold(True)
    value.setFont(font)
    detail = QLabel("")
    detail.setStyleSheet("color: palette(mid);")
    detail.setWordWrap(True)
    for widget in (caption, value, detail):
        layout.addWidget(widget)
    return frame, value, detail


def _gemm_tip(origin: str, gemm) -> str:  # noqa: ANN001 (kernel_roof.GemmRoof)
    """Where the GEMM-inefficiency share comes from (the Overview's "GEMMs" card)."""
    if gemm.fraction is None:
        return (f"{origin}: no GEMM/attention kernel with FLOPs and a roof (shapes not recorded, or the "
                "GPU or precision unknown), so GEMMs below their roof stay in Unexplained")
    return (f"{origin}: GEMM/attention kernels at {gemm.fraction:.1%} of their roof (the Overview's GEMMs "
            f"card) × their {gemm.time_fraction_of_step:.1%} share of the step")


def _spin(value: float, maximum: float = 100.0, decimals: int = 1, suffix: str = " %") -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(0.0, maximum)
    spin.setDecimals(decimals)
    spin.setValue(value)
    spin.setSuffix(suffix)
    spin.setKeyboardTracking(True)
    return spin


class MfuTab(QWidget):
    """MFU calculator tab. ``result`` and ``breakdown`` hold the latest core objects (None if invalid)."""

    result_changed = Signal(object)  # MfuResult | None

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.result: mfu.MfuResult | None = None
        self.breakdown: mfu_gap.GapBreakdown | None = None
        self.amdahl_result: mfu_gap.AmdahlResult | None = None
        self.fields: dict[str, NumberField] = {}
        self._filling = False
        self._base_config: ModelConfig = get_preset(DEFAULT_PRESET)
        self.run_source = "example"  # "example" (a preset's published run) | "user" | "trace"
        self.example: str | None = None  # the preset whose example run fills the run fields
        self.trace_run: TraceRun | None = None
        self._earlier_trace: str | None = None  # the trace the model fields were entered for
        self._waiting_for: str | None = None  # what the last evaluation said was missing
        self._model_confirmed = False  # the user picked or typed the model (not just the default)
        self._exact: dict[str, tuple[str, float]] = {}  # field → (text shown, exact value)
        self._banner_args: tuple[str, TraceRun, bool] | None = None
        layout = QHBoxLayout(self)
        layout.addWidget(self._build_inputs(), 0)
        layout.addWidget(self._build_results(), 1)
        context.device_changed.connect(self._on_device_changed)
        if hasattr(context, "precision_changed"):
            context.precision_changed.connect(self._on_device_changed)
        self._apply_preset(DEFAULT_PRESET)

    # ------------------------------------------------------------------ building the inputs
    def _field(self, key: str, text: str = "", placeholder: str = "", tooltip: str = "") -> NumberField:
        field = NumberField(text, placeholder, tooltip)
        field.textChanged.connect(self._recompute)
        if key in (*RUN_FIELDS, "peak_tflops"):
            field.textEdited.connect(lambda _text, k=key: self._on_run_edited(k))
        self.fields[key] = field
        return field

    def _check(self, text: str, checked: bool, tooltip: str = "") -> QCheckBox:
        box = QCheckBox(text)
        box.setChecked(checked)
        box.setToolTip(tooltip)
        box.toggled.connect(self._recompute)
        return box

    def _build_inputs(self) -> QWidget:
        column = QWidget()
        box = QVBoxLayout(column)
        box.setContentsMargins(0, 0, 6, 0)
        box.setSpacing(4)
        self.trace_banner = QLabel()
        self.trace_banner.setWordWrap(True)
        self.trace_banner.setStyleSheet(NOTE_STYLE)
        self.trace_banner.setTextFormat(Qt.TextFormat.RichText)
        self.trace_banner.linkActivated.connect(lambda _href: self.trace_banner.hide())
        self.trace_banner.hide()
        box.addWidget(self.trace_banner)
        self.example_label = QLabel()
        self.example_label.setWordWrap(True)
        self.example_label.setStyleSheet(EXAMPLE_STYLE)
        self.example_label.setTextFormat(Qt.TextFormat.RichText)
        box.addWidget(self.example_label)
        for group in (self._model_group(), self._batch_group(), self._time_group(),
                      self._hardware_group(), self._recompute_group(), self._run_group()):
            group.layout().setContentsMargins(8, 4, 8, 4)
            group.layout().setSpacing(3)
            box.addWidget(group)
        box.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(column)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(560)
        scroll.setMaximumWidth(620)
        return scroll

    def _model_group(self) -> QGroupBox:
        group = QGroupBox("Model")
        form = QFormLayout(group)
        self.preset_combo = QComboBox()
        self.preset_combo.addItems([N_GIVEN, CUSTOM_CONFIG, *preset_names()])
        self.preset_combo.setToolTip("Presets are published configurations; N is computed from them.")
        self.preset_combo.currentTextChanged.connect(self._on_preset_chosen)
        form.addRow("Preset", self.preset_combo)
        form.addRow("Parameters N", self._field("n_params", "", "e.g. 7B, 124M",
                                                "Parameters used for FLOPs (N given directly)"))
        self.fields["n_params"].textEdited.connect(self._on_n_edited)
        self.n_readout = QLabel()
        self.n_readout.setWordWrap(True)
        form.addRow("", self.n_readout)
        grid = QGridLayout()
        specs = (
            ("layers", "Layers L", ""), ("d_model", "d_model", ""), ("heads", "Heads H", ""),
            ("kv_heads", "KV heads", "= H"), ("head_dim", "Head dim Q", "= d/H"),
            ("ffn_size", "FFN size", "= 4·d"), ("vocab_size", "Vocabulary", ""),
            ("experts", "Experts", "1"), ("top_k", "Top-k", "1"),
        )
        for index, (key, label, placeholder) in enumerate(specs):
            field = self._field(key, "", placeholder)
            field.textEdited.connect(self._on_config_edited)
            grid.addWidget(QLabel(label), index // 3, 2 * (index % 3))
            grid.addWidget(field, index // 3, 2 * (index % 3) + 1)
        form.addRow(grid)
        flags = QHBoxLayout()
        self.gated_check = self._check("Gated MLP (SwiGLU)", False)
        self.tied_check = self._check("Tied embeddings", False)
        self.bias_check = self._check("Biases", False)
        for check in (self.gated_check, self.tied_check, self.bias_check):
            check.clicked.connect(self._on_config_edited)
            flags.addWidget(check)
        form.addRow(flags)
        conv = QHBoxLayout()
        self.attention_check = self._check(
            "Attention term 12·L·H·Q·T", True, "PaLM App. B, nanoGPT, torchtitan: + 12·L·H·Q·T per token")
        self.causal_check = self._check(
            "Causal ½", False, "Halve the attention term for the causal mask (Megatron-LM ≥ 2025-03)")
        self.exclude_embeddings_check = self._check(
            "Exclude embedding lookups", True,
            "torchtitan/nanoGPT/Megatron: lookup tables do no GEMM (a tied table stays: it is the LM head)."
            " PaLM and Kaplan count every parameter.")
        for check in (self.attention_check, self.causal_check, self.exclude_embeddings_check):
            conv.addWidget(check)
        form.addRow(conv)
        return group

    def _batch_group(self) -> QGroupBox:
        group = QGroupBox("Batch")
        grid = QGridLayout(group)
        specs = (("micro_batch", "Micro-batch", "1"), ("seq_len", "Sequence T", "8192"),
                 ("grad_accum", "Grad. accumulation", "4"), ("data_parallel", "DP replicas", "8"))
        for index, (key, label, text) in enumerate(specs):
            grid.addWidget(QLabel(label), index // 2, 2 * (index % 2))
            grid.addWidget(self._field(key, text), index // 2, 2 * (index % 2) + 1)
        self.direct_tokens_check = self._check("Tokens per step given directly", False)
        grid.addWidget(self.direct_tokens_check, 2, 0, 1, 2)
        grid.addWidget(self._field("tokens_per_step", "", "e.g. 4M"), 2, 2, 1, 2)
        self.tokens_readout = QLabel()
        grid.addWidget(self.tokens_readout, 3, 0, 1, 4)
        return group

    def _time_group(self) -> QGroupBox:
        group = QGroupBox("Time")
        form = QFormLayout(group)
        form.addRow("Step time(s), s", self._field(
            "step_times", "5.9, 4.81, 4.78, 4.80, 4.79", "one value, or several: 0.21, 0.2, …",
            "Seconds per optimizer step (all micro-batches and the optimizer). Several values: "
            "warm-up dropped, median taken."))
        self.warmup_spin = QSpinBox()
        self.warmup_spin.setRange(-1, 1000)
        self.warmup_spin.setSpecialValueText("auto")
        self.warmup_spin.setValue(-1)
        self.warmup_spin.setToolTip("Leading steps to drop; auto drops 1 when 3 or more are given")
        self.warmup_spin.valueChanged.connect(self._recompute)
        form.addRow("Warm-up steps to drop", self.warmup_spin)
        self.steps_readout = QLabel()
        self.steps_readout.setWordWrap(True)
        form.addRow("", self.steps_readout)
        return group

    def _hardware_group(self) -> QGroupBox:
        group = QGroupBox("Hardware")
        form = QFormLayout(group)
        self.device_label = QLabel()
        self.device_label.setWordWrap(True)
        self.device_row_label = QLabel("Device (toolbar)")
        form.addRow(self.device_row_label, self.device_label)
        self.gpus_spin = QSpinBox()
        self.gpus_spin.setRange(1, 10_000_000)
        self.gpus_spin.setValue(8)
        self.gpus_spin.setToolTip("All GPUs of the job (TP × PP × DP)")
        self.gpus_spin.valueChanged.connect(lambda _v: self._on_run_edited("gpus"))
        self.gpus_spin.valueChanged.connect(self._recompute)
        form.addRow("GPUs", self.gpus_spin)
        row = QHBoxLayout()
        self.explicit_peak_check = self._check("Explicit peak", False,
                                               "For a device not in the database, or a measured peak")
        self.explicit_peak_check.clicked.connect(lambda _c: self._on_run_edited("peak"))
        row.addWidget(self.explicit_peak_check)
        row.addWidget(self._field("peak_tflops", "", "TFLOP/s per GPU (dense)"))
        form.addRow("Peak", row)
        self.training_precision_combo = QComboBox()
        self.training_precision_combo.addItems(["same as peak", *PRECISIONS])
        self.training_precision_combo.setToolTip("Precision the GEMMs run in (fp8 vs a bf16 peak …)")
        self.training_precision_combo.currentIndexChanged.connect(self._recompute)
        form.addRow("Training precision", self.training_precision_combo)
        self.peak_readout = QLabel()
        self.peak_readout.setWordWrap(True)
        form.addRow("Denominator", self.peak_readout)
        return group

    def _recompute_group(self) -> QGroupBox:
        group = QGroupBox("Recompute (HFU)")
        grid = QGridLayout(group)
        self.recompute_combo = QComboBox()
        self.recompute_combo.addItems(list(mfu.RECOMPUTE_KINDS))
        self.recompute_combo.setCurrentText("selective")
        self.recompute_combo.setToolTip(
            "none; selective: attention core recomputed; full: one extra forward (8·N); custom fractions")
        self.recompute_combo.currentTextChanged.connect(self._recompute)
        grid.addWidget(QLabel("Activation recompute"), 0, 0)
        grid.addWidget(self.recompute_combo, 0, 1)
        self.recompute_convention_combo = QComboBox()
        self.recompute_convention_combo.addItems(list(mfu.SELECTIVE_CONVENTIONS))
        self.recompute_convention_combo.setToolTip("How HFU counts selective recompute:\n" + "\n".join(
            f"{k}: {v}" for k, v in mfu.SELECTIVE_CONVENTIONS.items()))
        self.recompute_convention_combo.currentTextChanged.connect(self._recompute)
        grid.addWidget(QLabel("convention"), 0, 2)
        grid.addWidget(self.recompute_convention_combo, 0, 3)
        grid.addWidget(QLabel("custom: GEMM fwd %"), 1, 0)
        grid.addWidget(self._field("recompute_dense", "", "e.g. 75",
                                   "custom: % of the GEMM (dense) forward recomputed (PaLM 540B: 75)"), 1, 1)
        grid.addWidget(QLabel("attention fwd %"), 1, 2)
        grid.addWidget(self._field("recompute_attention", "", "e.g. 100",
                                   "custom: % of the attention forward recomputed (PaLM 540B: 100)"), 1, 3)
        grid.addWidget(QLabel("Counted FLOPs/step"), 2, 0)
        grid.addWidget(self._field("counted_flops", "", "optional, e.g. from FlopCounterMode",
                                   "Checked against the model FLOPs: a counter sees recompute too"), 2, 1, 1, 3)
        return group

    def _run_group(self) -> QGroupBox:
        group = QGroupBox("Training run and cost")
        grid = QGridLayout(group)
        grid.addWidget(QLabel("Tokens to train"), 0, 0)
        grid.addWidget(self._field("train_tokens", "10B", "e.g. 15T"), 0, 1)
        grid.addWidget(QLabel("Price per GPU-hour"), 0, 2)
        grid.addWidget(self._field("price", "", "e.g. 2.50"), 0, 3)
        return group

    # ------------------------------------------------------------------ building the results
    def _build_results(self) -> QWidget:
        panel = QWidget()
        box = QVBoxLayout(panel)
        box.setContentsMargins(6, 0, 0, 0)
        kpis = QGridLayout()
        self.kpi_values: dict[str, QLabel] = {}
        self.kpi_details: dict[str, QLabel] = {}
        titles = (("achieved", "Achieved per GPU"), ("mfu", "MFU"), ("hfu", "HFU"),
                  ("headroom", "Headroom to 50 % MFU"), ("tokens", "Tokens/s"),
                  ("tokens_gpu", "Tokens/s per GPU"), ("time", "Time to train"), ("cost", "Cost per M tokens"))
        for index, (key, title) in enumerate(titles):
            frame, value, detail = _kpi(title)
            self.kpi_values[key], self.kpi_details[key] = value, detail
            kpis.addWidget(frame, index // 4, index % 4)
        box.addLayout(kpis)
        self.convention_label = QLabel()
        self.convention_label.setWordWrap(True)
        self.convention_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.addWidget(self.convention_label)
        box.addWidget(self._gap_group())
        lower = QHBoxLayout()
        lower.addWidget(self._ceiling_group(), 1)
        lower.addWidget(self._amdahl_group(), 1)
        box.addLayout(lower)
        box.addWidget(self._warnings_group())
        copy = QHBoxLayout()
        copy.addWidget(QLabel("Copy the result as"))
        for fmt, text in (("text", "Text"), ("markdown", "Markdown"), ("json", "JSON")):
            button = QPushButton(text)
            button.clicked.connect(lambda _=False, f=fmt: self.copy_result(f))
            copy.addWidget(button)
        copy.addStretch(1)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)  # long messages must not widen the window
        copy.addWidget(self.status_label)
        box.addLayout(copy)
        box.addStretch(1)
        scroll = QScrollArea()  # nothing is cut when the window is short or a check is long
        scroll.setWidget(panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        return scroll

    def _gap_group(self) -> QGroupBox:
        group = QGroupBox(GAP_TITLE)
        self.gap_group = group
        box = QVBoxLayout(group)
        self.gap_bar = GapBar()
        box.addWidget(self.gap_bar)
        self.what_if = WhatIfSelector()  # a trace's projections: remove a cause (views/trace/what_if_view.py)
        box.addWidget(self.what_if)
        grid = QGridLayout()
        self.cause_spins: dict[str, QDoubleSpinBox] = {}
        self.slice_labels: dict[str, QLabel] = {}
        rows = [("mfu", "MFU (useful work)", None)] + [
            (key, label, key) for key, label in mfu_gap.CAUSES] + [("unexplained", "Unexplained", None)]
        for col in (0, 4):
            for offset, text in ((2, "% of step time"), (3, "of peak")):
                header = QLabel(text)
                header.setStyleSheet("color: palette(mid);")
                grid.addWidget(header, 0, col + offset)
        for index, (key, label, _) in enumerate(rows):
            row, col = index % 5 + 1, (index // 5) * 4
            swatch = QLabel()
            swatch.setFixedSize(14, 14)
            swatch.setStyleSheet(f"background: {SLICE_COLOURS[key]}; border: 1px solid #777;")
            grid.addWidget(swatch, row, col)
            grid.addWidget(QLabel(label), row, col + 1)
            if key in TIME_CAUSES or key == "gemm_inefficiency":
                spin = _spin(0.0)
                spin.setMaximumWidth(110)
                spin.setToolTip("% of peak lost to GEMMs running below peak (entered as share of peak)"
                                if key == "gemm_inefficiency" else
                                "% of step time; memory-bound kernels still run at the ceiling model's "
                                "memory efficiency, so they lose time × (1 − that efficiency)")
                spin.valueChanged.connect(self._on_cause_edited)
                self.cause_spins[key] = spin
                grid.addWidget(spin, row, col + 2)
            share = QLabel("—")
            share.setMinimumWidth(56)
            self.slice_labels[key] = share
            grid.addWidget(share, row, col + 3)
        box.addLayout(grid)
        pipe = QHBoxLayout()
        self.bubble_from_stages_check = self._check("Bubble from stages:", False,
                                                    "(p−1)/(v·m + p − 1), Narayanan et al. 2021")
        pipe.addWidget(self.bubble_from_stages_check)
        self.stages_spin, self.microbatches_spin, self.virtual_spin = QSpinBox(), QSpinBox(), QSpinBox()
        for label, spin, value in (("p", self.stages_spin, 4), ("m", self.microbatches_spin, 16),
                                   ("v", self.virtual_spin, 1)):
            spin.setRange(1, 100_000)
            spin.setValue(value)
            spin.valueChanged.connect(self._recompute)
            pipe.addWidget(QLabel(label))
            pipe.addWidget(spin)
        pipe.addStretch(1)
        self.trace_label = QLabel()
        pipe.addWidget(self.trace_label)
        box.addLayout(pipe)
        self.breakdown_message = QLabel()
        self.breakdown_message.setWordWrap(True)
        self.breakdown_message.setStyleSheet("color: #b35900;")
        box.addWidget(self.breakdown_message)
        return group

    def _ceiling_group(self) -> QGroupBox:
        group = QGroupBox("Ceiling model (what a well-tuned step can reach)")
        grid = QGridLayout(group)
        grid.addWidget(QLabel("time share"), 0, 1)
        grid.addWidget(QLabel("at fraction of peak"), 0, 2)
        defaults = mfu.CeilingModel()
        self.ceiling_spins: dict[str, QDoubleSpinBox] = {}
        rows = (("Big GEMMs", "gemm"), ("Memory-bound ops", "memory"), ("Comm / gaps exposed", "idle"))
        for index, (label, key) in enumerate(rows, start=1):
            grid.addWidget(QLabel(label), index, 0)
            for col, suffix in ((1, "time_fraction"), (2, "efficiency")):
                name = f"{key}_{suffix}"
                spin = _spin(getattr(defaults, name) * 100)
                spin.valueChanged.connect(self._recompute)
                self.ceiling_spins[name] = spin
                grid.addWidget(spin, index, col)
        self.ceiling_readout = QLabel()
        self.ceiling_readout.setWordWrap(True)
        grid.addWidget(self.ceiling_readout, 4, 0, 1, 3)
        return group

    def _amdahl_group(self) -> QGroupBox:
        group = QGroupBox("Amdahl what-if")
        form = QFormLayout(group)
        self.amdahl_part_combo = QComboBox()
        self.amdahl_part_combo.addItem("custom share", None)
        for key in TIME_CAUSES:
            self.amdahl_part_combo.addItem(mfu_gap.CAUSE_LABELS[key], key)
        self.amdahl_part_combo.currentIndexChanged.connect(self._on_amdahl_part_chosen)
        form.addRow("Part", self.amdahl_part_combo)
        self.amdahl_share_spin = _spin(10.0)
        self.amdahl_speedup_spin = _spin(2.0, maximum=1e6, decimals=2, suffix=" ×")
        self.amdahl_speedup_spin.setMinimum(0.01)
        for spin in (self.amdahl_share_spin, self.amdahl_speedup_spin):
            spin.valueChanged.connect(self._recompute)
        form.addRow("Its share of step time", self.amdahl_share_spin)
        form.addRow("Made faster by", self.amdahl_speedup_spin)
        self.amdahl_readout = QLabel()
        self.amdahl_readout.setWordWrap(True)
        form.addRow(self.amdahl_readout)
        return group

    def _warnings_group(self) -> QGroupBox:
        group = QGroupBox("Checks")
        box = QVBoxLayout(group)
        self.warnings_label = QLabel()
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setTextFormat(Qt.TextFormat.RichText)
        box.addWidget(self.warnings_label)
        return group

    # ------------------------------------------------------------------ presets and signals
    def _on_preset_chosen(self, name: str) -> None:
        if not self._filling:
            self._model_confirmed = name != NO_MODEL
            self._apply_preset(name)

    def _apply_preset(self, name: str) -> None:
        """Fill the model from the preset and, unless the run is the user's or a trace's, the
        preset's published example run (batch, sequence, GPUs, step time, hardware)."""
        self._filling = True
        try:
            self.preset_combo.setCurrentText(name)
            if name not in (N_GIVEN, CUSTOM_CONFIG, NO_MODEL):
                config = get_preset(name)
                self._base_config = config
                values = {
                    "layers": config.layers, "d_model": config.d_model, "heads": config.heads,
                    "kv_heads": config.kv_heads, "head_dim": config.head_dim, "ffn_size": config.ffn_size,
                    "vocab_size": config.vocab_size, "experts": config.experts, "top_k": config.top_k,
                }
                for key, value in values.items():
                    self.fields[key].setText("" if value is None else str(value))
                self.gated_check.setChecked(config.gated_mlp)
                self.tied_check.setChecked(config.tied_embeddings)
                self.bias_check.setChecked(config.bias)
                if self.run_source == "example":
                    self._fill_example(name)
            self.fields["n_params"].setEnabled(name in (N_GIVEN, NO_MODEL))
            self.fields["n_params"].setPlaceholderText(
                {N_GIVEN: "e.g. 7B, 124M", NO_MODEL: "N of the traced run, or choose a preset"}.get(
                    name, "computed from the configuration below"))
            if name != NO_MODEL and self.preset_combo.findText(NO_MODEL) >= 0:
                self.preset_combo.removeItem(self.preset_combo.findText(NO_MODEL))
            if name == N_GIVEN and not self.fields["n_params"].text():
                self.fields["n_params"].setText(self.n_readout.property("n_text") or "7B")
        finally:
            self._filling = False
        self._show_example()
        self._recompute()

    def _fill_example(self, name: str) -> None:
        """The example run of preset ``name`` into the run fields (called while filling)."""
        run, form = EXAMPLE_RUNS[name], example_form(name)
        self.example = name
        values = {"micro_batch": run.micro_batch, "seq_len": run.seq_len, "grad_accum": run.grad_accum,
                  "data_parallel": run.data_parallel}
        for key, value in values.items():
            self.fields[key].setText(str(value))
        self.direct_tokens_check.setChecked(False)
        self.fields["tokens_per_step"].setText("")
        self._set_exact("step_times", form.step_times_s[0])
        self.warmup_spin.setValue(-1)
        self.gpus_spin.setValue(run.gpus)
        self.recompute_combo.setCurrentText(run.recompute)
        dense, attention = run.recompute_fractions or (None, None)
        self.fields["recompute_dense"].setText("" if dense is None else f"{dense * 100:g}")
        self.fields["recompute_attention"].setText("" if attention is None else f"{attention * 100:g}")

    def load_example(self) -> None:
        """Replace the run fields by the current preset's example run (the "Example run" link)."""
        name = self.preset_combo.currentText()
        if name not in EXAMPLE_RUNS:
            return
        self.run_source = "example"
        self._clear_trace_marks()
        self._apply_preset(name)

    def _show_example(self) -> None:
        name = self.example if self.run_source == "example" else None
        run = EXAMPLE_RUNS.get(name or "")
        if run is None:
            preset = self.preset_combo.currentText()
            link = (f" <a href='example'>Load {_html(preset)}'s published example run</a>."
                    if preset in EXAMPLE_RUNS else "")
            self.example_label.setText(f"Your run's figures.{link}")
            self.example_label.setVisible(bool(link))
            return
        step = format_duration_s(example_form(name).step_times_s[0])  # type: ignore[arg-type]
        try:
            check = example_check(name, self.context.database).describe()  # type: ignore[arg-type]
        except (ValueError, KeyError):
            check = ""
        self.example_label.setText(
            f"<b>Example run of {_html(name)}</b> ({run.step_time_basis}): {run.hardware}, "
            f"{format_count(run.tokens_per_step)} tokens per step, step {step}, "
            f"{run.recompute} recompute. <i>{_html(run.source)}.</i> "
            + (f"<br><b>Against the source:</b> {_html(check)}<br>" if check else "")
            + "Type your own run's figures to replace it (the peak then follows the toolbar's device).")
        self.example_label.setToolTip(run.source)
        self.example_label.show()

    def _on_run_edited(self, key: str) -> None:
        """The user typed a run figure: the run is theirs now (no example), the field no longer a trace's."""
        if self._filling:
            return
        if self.run_source == "example":
            self.run_source, self.example = "user", None
            self._show_example()
            self._recompute()  # the peak now follows the toolbar's device
        self._clear_earlier_mark(key)
        if key == "gpus":
            self.gpus_spin.setStyleSheet("")
            self.gpus_spin.setToolTip("All GPUs of the job (TP × PP × DP)")
        elif key in self.fields:
            self.fields[key].set_origin(None)

    def _on_config_edited(self, *_args: object) -> None:
        if not self._filling:
            self._model_confirmed = True
        if not self._filling and self.preset_combo.currentText() not in (N_GIVEN, CUSTOM_CONFIG):
            self._filling = True
            self.preset_combo.setCurrentText(CUSTOM_CONFIG)
            self._filling = False
            if self.run_source == "example":
                self.run_source, self.example = "user", None
                self._show_example()
            self._recompute()

    def _on_n_edited(self, _text: str) -> None:
        self._model_confirmed = True
        self._clear_earlier_mark("n_params")
        if self.preset_combo.currentText() == NO_MODEL:
            self._filling = True
            self.preset_combo.setCurrentText(N_GIVEN)
            self._filling = False
            self._recompute()

    def _on_device_changed(self, *_args: object) -> None:
        self._recompute()

    def _on_cause_edited(self, *_args: object) -> None:
        if not self._filling:
            self.trace_label.setText("")
            for spin in self.cause_spins.values():
                spin.setStyleSheet("")
        self._recompute()

    def _on_amdahl_part_chosen(self, *_args: object) -> None:
        key = self.amdahl_part_combo.currentData()
        if key is not None and self.breakdown is not None:
            self.amdahl_share_spin.setValue(self._cause_time_fraction(key) * 100)
        self._recompute()

    # ------------------------------------------------------------------ a trace's figures
    def apply_trace_figures(self, figures: TraceMfuFigures) -> None:
        """Send to MFU: the step time, the GPU count and the causes from a trace, each marked.

        GPUs follow the trace's world size (else the ranks loaded). The model and the tokens per
        step are not in a trace: the ones the user typed are kept; an example run's are not (they
        describe another run), so the tab asks for them in place and shows no MFU until given.
        """
        run = TraceRun.from_figures(figures)
        self.what_if.set_projections(getattr(figures, "what_if", ()))
        name = _trace_name(figures)
        origin = f"from the trace {name}"
        keep_tokens = self.run_source == "user"
        previous = _trace_name(self.trace_run.figures) if self.trace_run is not None else None
        if self.run_source == "trace" and previous is not None and previous != name:
            keep_tokens = True   # typed for the previous trace: kept, and marked as that trace's
            self._earlier_trace = self._earlier_trace or previous
        self._clear_trace_marks()
        self._filling = True
        try:
            if run.step_time_s is not None and math.isfinite(run.step_time_s) and run.step_time_s > 0:
                self._set_exact("step_times", run.step_time_s)
                self.fields["step_times"].set_origin(
                    f"{origin}: median of the steady profiled steps (profiled steps run slower)")
                self.warmup_spin.setValue(-1)
            elif self.run_source == "trace":   # an earlier trace's step time says nothing of this one
                self.fields["step_times"].setText("")
                self.fields["step_times"].setPlaceholderText("this trace has no ProfilerStep: enter its step time")
            for key in TRACE_FRACTIONS:
                value = getattr(figures, key)
                self.cause_spins[key].setValue(min(max(float(value), 0.0), 1.0) * 100)
                self.cause_spins[key].setStyleSheet(f"QDoubleSpinBox {{ {FROM_TRACE_STYLE} }}")
                self.cause_spins[key].setToolTip(f"{origin} (share of the step time)")
            gemm = figures.gemm(self._trace_device(figures))
            self.cause_spins["gemm_inefficiency"].setValue(gemm.inefficiency * 100)
            self.cause_spins["gemm_inefficiency"].setStyleSheet(f"QDoubleSpinBox {{ {FROM_TRACE_STYLE} }}")
            self.cause_spins["gemm_inefficiency"].setToolTip(_gemm_tip(origin, gemm))
            self.bubble_from_stages_check.setChecked(False)
            self.gpus_spin.setValue(run.gpus)
            self.gpus_spin.setStyleSheet(f"QSpinBox {{ {FROM_TRACE_STYLE} }}")
            self.gpus_spin.setToolTip(f"{origin}: " + ("the recorded world size" if run.world_size else
                                      "the ranks loaded (the trace records no world size)"))
            if not keep_tokens:  # the example's sequence, tokens and recompute describe another run
                self.fields["seq_len"].setText("")
                self.recompute_combo.setCurrentText("none")
                self.direct_tokens_check.setChecked(True)
                self.fields["tokens_per_step"].setText("")
                self.fields["tokens_per_step"].setPlaceholderText("tokens per step of the traced run")
            if not self._model_confirmed:
                if self.preset_combo.findText(NO_MODEL) < 0:
                    self.preset_combo.insertItem(0, NO_MODEL)
                self.preset_combo.setCurrentText(NO_MODEL)
                for key in ("layers", "d_model", "heads", "kv_heads", "head_dim", "ffn_size",
                            "vocab_size", "experts", "top_k"):
                    self.fields[key].setText("")
                self.fields["n_params"].setText("")
                self.fields["n_params"].setEnabled(True)
                self.fields["n_params"].setPlaceholderText("N of the traced run, or choose a preset")
        finally:
            self._filling = False
        self.run_source, self.example, self.trace_run = "trace", None, run
        self._mark_earlier_model()
        self.trace_label.setText(f"causes filled from the loaded trace ({name})")
        self.trace_label.setToolTip(str(figures.source or name))
        self._banner_args = (name, run, keep_tokens)
        self._show_trace_banner(name, run, keep_tokens)
        self._show_example()
        self._recompute()

    def _trace_device(self, figures: TraceMfuFigures | None = None):  # noqa: ANN202 (Device | None)
        """The trace's GPU when the database knows it, else None (the toolbar's device is used)."""
        from gpuperf_gui.core.trace.kernel_roof import trace_device  # noqa: PLC0415

        figures = figures or (self.trace_run.figures if self.trace_run is not None else None)
        return trace_device(figures.device_name, self.context.database) if figures is not None else None

    def _mark_earlier_model(self) -> None:
        """Model and tokens typed for an earlier trace are kept but marked until the user edits them."""
        if self._earlier_trace is None:
            return
        tip = (f"entered for the earlier trace {self._earlier_trace}, not for this one: check it "
               "describes this trace's run (edit it to confirm)")
        for key in ("n_params", "tokens_per_step", "micro_batch", "seq_len", "grad_accum", "data_parallel"):
            if self.fields[key].text().strip() and self.fields[key].isEnabled():
                self.fields[key].setStyleSheet(f"QLineEdit {{ {EARLIER_TRACE_STYLE} }}")
                self.fields[key].setToolTip(tip)
                self.fields[key].setProperty("earlier_trace", True)

    def _clear_earlier_mark(self, key: str) -> None:
        field = self.fields.get(key)
        if field is not None and field.property("earlier_trace"):
            field.setProperty("earlier_trace", False)
            field.setStyleSheet("")
            field.setToolTip("")
        if not any(f.property("earlier_trace") for f in self.fields.values()):
            self._earlier_trace = None

    def _clear_trace_marks(self) -> None:
        for field in self.fields.values():
            field.set_origin(None)
            if field.property("earlier_trace"):
                field.setProperty("earlier_trace", False)
                field.setStyleSheet("")
        for spin in self.cause_spins.values():
            spin.setStyleSheet("")
        self.gpus_spin.setStyleSheet("")

    def _show_trace_banner(self, name: str, run: TraceRun, kept: bool) -> None:
        steps = run.figures.steady_steps or "the"
        device = f" ({run.device_name})" if run.device_name else ""
        if run.world_size:
            gpus = f"GPUs {run.gpus}: the job's world size{device}"
        else:
            gpus = (f"GPUs {run.gpus}: the ranks loaded{device}; the trace records no world size, so "
                    "if the job had more GPUs, enter them")
        given = self._model_and_tokens_given()
        if self._earlier_trace is not None:
            asked = (f"<b>The model and tokens per step were entered for the earlier trace "
                     f"{_html(self._earlier_trace)}</b> (marked in amber): check that they describe this one.")
        elif kept:
            asked = ("The model and tokens per step you entered are kept: check that they describe the "
                     "traced run.")
        elif given:
            asked = "Model and tokens per step entered: check that they describe the traced run."
        else:
            asked = ("<b>Enter the model (a preset or N) and the tokens per step of the traced run</b>, "
                     "marked below: a trace records neither.")
        if self.result is None and given:   # never "entered" beside KPIs that show "—"
            asked += f" <b>No MFU yet:</b> {_html(_brief(self._waiting_for or 'fix the inputs marked below'))}"
        precision = run.figures.precision
        prec = (f" Peak precision {_html(precision.effective)}: {_html(precision.describe())}."
                if precision.effective else " The trace's precision is unknown: the toolbar's is used.")
        self.trace_banner.setText(
            f"From {_html(name)}, marked in blue: step time (median of {steps} steady <i>profiled</i> "
            f"steps, slower than unprofiled ones), {_html(gpus)}, and the gap causes.{prec} {asked} "
            "<a href='dismiss'>Dismiss</a>")
        self.trace_banner.show()

    def _model_and_tokens_given(self) -> bool:
        model = self.preset_combo.currentText() != NO_MODEL and (
            self.preset_combo.currentText() != N_GIVEN or bool(self.fields["n_params"].text().strip()))
        tokens = (not self.direct_tokens_check.isChecked()) or bool(self.fields["tokens_per_step"].text().strip())
        return model and tokens

    def is_busy(self) -> bool:
        return False

    def shutdown(self) -> None:
        """Nothing runs in the background here."""

    # ------------------------------------------------------------------ reading the inputs
    def _number(self, key: str, *, required: bool = True, integer: bool = False,
                minimum: float | None = None) -> float | None:
        field = self.fields[key]
        text = field.text().strip()
        if key in RECOMPUTE_FIELDS:
            text = text.rstrip("%").strip()
        if not text:
            if required:
                field.mark("required", needed=True)
                raise _Invalid(key)
            return None
        try:
            value = parse_quantity(text)
        except ValueError as exc:
            field.mark(str(exc))
            raise _Invalid(key) from None
        if integer and value != int(value):
            field.mark("must be a whole number")
            raise _Invalid(key)
        if minimum is not None and value < minimum:
            field.mark(f"must be at least {minimum:g}")
            raise _Invalid(key)
        return int(value) if integer else value

    def _parse_fields(self) -> dict[str, float | None]:
        """Every field as a number (None: empty), each bad one marked in place."""
        parsed: dict[str, float | None] = {}
        bad = False
        optional = {"kv_heads", "head_dim", "ffn_size", "experts", "top_k", "counted_flops",
                    "train_tokens", "price", "n_params", "tokens_per_step", "peak_tflops",
                    "recompute_dense", "recompute_attention"}
        mode = self.preset_combo.currentText()
        if mode in (N_GIVEN, NO_MODEL):  # only the attention shape is read
            optional |= {"d_model", "vocab_size"}
            if not self.attention_check.isChecked():
                optional |= {"layers", "heads"}
        if self.direct_tokens_check.isChecked():
            optional |= {"micro_batch", "grad_accum", "data_parallel"}
            if not self.attention_check.isChecked():
                optional.add("seq_len")   # nothing uses it: no attention term, tokens given
        integers = {"layers", "d_model", "heads", "kv_heads", "head_dim", "ffn_size", "vocab_size",
                    "experts", "top_k", "micro_batch", "seq_len", "grad_accum", "data_parallel"}
        custom = self.recompute_combo.currentText() == "custom"
        for key in self.fields:
            if key == "step_times" or (key in RECOMPUTE_FIELDS and not custom):
                continue
            try:
                parsed[key] = self._number(key, required=key not in optional, integer=key in integers,
                                           minimum=0 if key in ("price", "train_tokens", *RECOMPUTE_FIELDS)
                                           else (1 if key in integers else None))
            except _Invalid:
                bad = True
        try:
            parsed.update(self._recompute_fractions(parsed))
        except _Invalid:
            bad = True
        for key, needed in (("tokens_per_step", self.direct_tokens_check.isChecked()),
                            ("n_params", mode in (N_GIVEN, NO_MODEL))):
            if needed and key in parsed and parsed[key] is None:
                self.fields[key].mark(f"required: {'the tokens per step' if key != 'n_params' else 'N'}"
                                      " of the run", needed=True)
                bad = True
        if bad:
            raise _Invalid("fields")
        return parsed

    def _set_exact(self, key: str, value: float) -> None:
        """Show ``value`` rounded to 6 digits but compute with it exactly while the text is unchanged."""
        text = f"{value:.6g}"
        self.fields[key].setText(text)
        self._exact[key] = (text, value)

    def _exact_times(self) -> tuple[float, ...]:
        text = self.fields["step_times"].text()
        exact = self._exact.get("step_times")
        if exact is not None and exact[0] == text.strip():
            return (exact[1],)
        return tuple(parse_quantity_list(text))

    def _recompute_fractions(self, p: dict[str, float | None]) -> dict[str, float | None]:
        """Custom recompute needs both percentages (0..100); marks a missing or bad one in place."""
        if self.recompute_combo.currentText() != "custom":
            return {}
        bad = False
        for key in RECOMPUTE_FIELDS:
            if key not in p:
                continue  # did not parse: already marked
            if p[key] is None:
                self.fields[key].mark("required for custom recompute (% of that forward recomputed)")
                bad = True
            elif p[key] > 100:  # type: ignore[operator]
                self.fields[key].mark("a percentage: 0 to 100")
                bad = True
        if bad or any(key not in p for key in RECOMPUTE_FIELDS):
            raise _Invalid("recompute")
        return {key: p[key] / 100 for key in RECOMPUTE_FIELDS}  # type: ignore[operator]

    def form(self) -> MfuForm:
        """The tab's inputs as the core input model (the one ``gpuperf mfu`` builds from its options).

        Raises ``_Invalid`` when a field does not parse (it is marked), ``MfuInputError`` /
        ``ConfigError`` when the inputs are inconsistent."""
        p = self._parse_fields()
        try:
            times = self._exact_times()
        except ValueError as exc:
            self.fields["step_times"].mark(str(exc))
            raise _Invalid("step_times") from None
        mode = self.preset_combo.currentText()
        model: dict[str, object] = {}
        if mode == NO_MODEL:
            raise mfu.MfuInputError("model", "choose the model of the traced run (a preset, or N given "
                                    "directly with its attention shape): a trace does not record it")
        if mode == N_GIVEN:
            model = dict(n_params=p["n_params"], layers=p["layers"], heads=p["heads"],
                         head_dim=p["head_dim"], d_model=p["d_model"])
            if p["n_params"] is None:
                raise mfu.MfuInputError("n_params", "the model size is missing: give N")
        elif mode in EXAMPLE_RUNS and not self._config_edited(p):
            model = dict(preset=mode)
        else:
            model = dict(config=self._custom_config(p, mode))
        if self.direct_tokens_check.isChecked():
            if p["tokens_per_step"] is None:
                raise mfu.MfuInputError("tokens_per_step", "the tokens per step are missing")
            batch = dict(tokens_per_step=p["tokens_per_step"])
        else:
            batch = dict(micro_batch=p["micro_batch"], grad_accum=p["grad_accum"],
                         data_parallel=p["data_parallel"])
        warmup = self.warmup_spin.value()
        training = self.training_precision_combo.currentText()
        source = {"example": "example", "trace": "trace"}.get(self.run_source, "given")
        if source == "trace" and "step_times" in self.fields and not self.fields["step_times"].property(
                "from_trace"):
            source = "given"
        return MfuForm(
            **model, include_embeddings=not self.exclude_embeddings_check.isChecked(),  # type: ignore[arg-type]
            attention=self.attention_check.isChecked(),
            seq_len=None if p["seq_len"] is None else int(p["seq_len"]),  # type: ignore[arg-type]
            causal=self.causal_check.isChecked(), **batch,  # type: ignore[arg-type]
            step_times_s=times, warmup_steps=None if warmup < 0 else warmup, step_time_source=source,
            gpus=self.gpus_spin.value(), **self._peak_fields(p),  # type: ignore[arg-type]
            training_precision=None if training == "same as peak" else training,
            recompute=self.recompute_combo.currentText(), recompute_dense=p.get("recompute_dense"),
            recompute_attention=p.get("recompute_attention"),
            recompute_convention=self.recompute_convention_combo.currentText(),
            timed_steps=(self.trace_run.figures.steady_steps or None) if source == "trace" and self.trace_run else None,
            counted_flops_per_step=p["counted_flops"], train_tokens=p["train_tokens"],
            price_per_gpu_hour=p["price"], ceiling=self._ceiling(),
        )

    def _config_edited(self, p: dict[str, float | None]) -> bool:
        c = self._base_config
        return any(p[k] != v for k, v in (("layers", c.layers), ("d_model", c.d_model), ("heads", c.heads),
                                          ("kv_heads", c.kv_heads), ("head_dim", c.head_dim),
                                          ("ffn_size", c.ffn_size), ("vocab_size", c.vocab_size)))

    def _custom_config(self, p: dict[str, float | None], mode: str) -> ModelConfig:
        return replace(
            self._base_config,
            name=mode if mode != CUSTOM_CONFIG else "custom model",
            layers=int(p["layers"]), d_model=int(p["d_model"]), heads=int(p["heads"]),  # type: ignore[arg-type]
            kv_heads=p["kv_heads"], head_dim=p["head_dim"], ffn_size=p["ffn_size"],  # type: ignore[arg-type]
            vocab_size=int(p["vocab_size"]), experts=int(p["experts"] or 1),  # type: ignore[arg-type]
            top_k=int(p["top_k"] or 1), gated_mlp=self.gated_check.isChecked(),
            tied_embeddings=self.tied_check.isChecked(), bias=self.bias_check.isChecked(),
            seq_len=int(p["seq_len"]) if p["seq_len"] is not None else self._base_config.seq_len,  # type: ignore[arg-type]
        )

    def _peak_fields(self, p: dict[str, float | None]) -> dict[str, object]:
        """An example run's own hardware; else the explicit peak, or the toolbar's device."""
        if self.run_source == "example" and self.example:
            example = example_form(self.example)
            return dict(device_id=example.device_id, precision=example.precision,
                        peak_flops_per_s=example.peak_flops_per_s, peak_note=example.peak_note)
        explicit = None
        if self.explicit_peak_check.isChecked():
            if p["peak_tflops"] is None:
                raise mfu.MfuInputError("peak_tflops", "required")
            explicit = float(p["peak_tflops"]) * 1e12
        if self.run_source == "trace" and self.trace_run is not None:
            # the trace's GPU and precision (its GEMMs'), not whatever the toolbar says
            device = self._trace_device()
            return dict(device_id=device.id if device is not None else self.context.device_id,
                        precision=self.trace_run.precision or self.context.precision, peak_flops_per_s=explicit)
        return dict(device_id=self.context.device_id, precision=self.context.precision,
                    peak_flops_per_s=explicit)

    def _ceiling(self) -> mfu.CeilingModel:
        return mfu.CeilingModel(**{k: s.value() / 100 for k, s in self.ceiling_spins.items()})

    def _causes(self) -> mfu_gap.GapCauses:
        values = {k: s.value() / 100 for k, s in self.cause_spins.items()}
        if self.bubble_from_stages_check.isChecked():
            values["pipeline_bubble"] = mfu_gap.pipeline_bubble_fraction(
                self.stages_spin.value(), self.microbatches_spin.value(), self.virtual_spin.value())
        return mfu_gap.GapCauses(**values)

    def _cause_time_fraction(self, key: str) -> float:
        return getattr(self._causes(), key)

    # ------------------------------------------------------------------ computing and showing
    def _recompute(self, *_args: object) -> None:
        if self._filling:
            return
        for field in self.fields.values():
            field.mark(None)
        for spin in self.ceiling_spins.values():
            spin.setStyleSheet("")
        self.cause_spins["pipeline_bubble"].setEnabled(not self.bubble_from_stages_check.isChecked())
        self.fields["tokens_per_step"].setEnabled(self.direct_tokens_check.isChecked())
        for key in ("micro_batch", "grad_accum", "data_parallel"):  # not used with tokens given directly
            self.fields[key].setEnabled(not self.direct_tokens_check.isChecked())
        self.fields["peak_tflops"].setEnabled(self.explicit_peak_check.isChecked())
        custom = self.recompute_combo.currentText() == "custom"
        for key in RECOMPUTE_FIELDS:
            self.fields[key].setEnabled(custom)
        self._show_device()
        self.peak_readout.setText("")
        try:
            result = evaluate(self.form(), self.context.database)
        except _Invalid:
            needed = [f for f in self.fields.values() if f.property("needed")]
            self._show_invalid("some inputs are missing: give the ones marked in amber" if needed and all(
                f.property("needed") for f in self.fields.values() if f.error) else
                "Fix the inputs marked in red.")
            return
        except (mfu.MfuInputError, ConfigError) as exc:
            self._mark_error(exc.field, str(exc), needed="missing" in str(exc) or exc.field == "model")
            self._show_invalid(str(exc), implausible=isinstance(exc, mfu.ImplausibleMfuError))
            return
        inputs = result.inputs
        self.result = result
        self.breakdown = mfu_gap.gap_breakdown(result.mfu, result.hfu, self._causes(),
                                           memory_efficiency=inputs.ceiling.memory_efficiency)
        self._show_result(result)
        self._show_breakdown(self.breakdown, result)
        self.what_if.set_mfu(result.mfu)
        self._show_amdahl(inputs.step_time_s)
        self._waiting_for = None
        self._refresh_banner()
        self.result_changed.emit(result)

    def _refresh_banner(self) -> None:
        """The trace banner says what holds now (a result, or what is still missing)."""
        if self._banner_args is not None and not self.trace_banner.isHidden():
            self._show_trace_banner(*self._banner_args)

    def _mark_error(self, key: str, message: str, *, needed: bool = False) -> None:
        """Mark the field behind ``key`` (red; amber when it is an input still to give)."""
        aliases = {"step_time_s": "step_times", "warmup_steps": "step_times", "peak": "peak_tflops",
                   "seq": "seq_len", "model": "n_params"}
        key = aliases.get(key, key)
        if key == "tokens_per_step" and not self.direct_tokens_check.isChecked():
            key = "micro_batch"
        if key in self.fields:
            self.fields[key].mark(message, needed=needed)
        elif key == "recompute":
            for name in RECOMPUTE_FIELDS:
                self.fields[name].mark(message)
        elif key.startswith("ceiling."):
            for spin in self.ceiling_spins.values():
                spin.setStyleSheet("QDoubleSpinBox { border: 2px solid #d73027; }")
        if key == "peak_tflops" and not self.explicit_peak_check.isChecked():
            self.peak_readout.setText(f"<span style='color:#d73027'>{message}</span>")

    def _show_invalid(self, message: str, *, implausible: bool = False) -> None:
        """No result: every KPI "—", and one line saying what is missing or wrong."""
        self.result = None
        self.breakdown = None
        for label in self.kpi_values.values():
            label.setText("—")
        for label in self.kpi_details.values():
            label.setText("")
        waiting = "missing" in message or message.startswith("choose")
        colour = "#b35900" if waiting else "#d73027"
        if implausible:
            self.kpi_details["mfu"].setText("input error: see Checks")
        self.status_label.setText("")  # the Checks box says it
        self.kpi_values["mfu"].setStyleSheet("")
        self._show_time_bar_or_nothing(message)
        for label in self.slice_labels.values():
            label.setText("—")
        for label in (self.convention_label, self.breakdown_message, self.ceiling_readout,
                      self.amdahl_readout, self.tokens_readout, self.n_readout, self.steps_readout):
            label.setText("")
        if not self.peak_readout.text():
            self.peak_readout.setText(self._peak_text())
        title = ("Not a result, an input error" if implausible else
                 "Waiting for inputs" if waiting else "No result")
        self.warnings_label.setText(f"<span style='color:{colour}'><b>{title}:</b> {_html(message)}</span>")
        self._waiting_for = message
        self._refresh_banner()
        self.result_changed.emit(None)

    def _peak_text(self) -> str:
        """The denominator without a result (a result says it with the GPU count)."""
        try:
            peak = mfu.resolve_peak(self.context.database.get(self.context.device_id), self.context.precision)
        except (KeyError, ValueError):
            return ""
        return f"{format_si(peak.flops_per_s_per_gpu, 'FLOP/s', 4)} per GPU ({peak.source})"

    def _show_device(self) -> None:
        if self.run_source == "example" and self.example:
            run = EXAMPLE_RUNS[self.example]
            self.device_label.setText(f"{run.hardware}, {run.precision}: the example run's hardware "
                                      f"(the toolbar's {self.context.device_id} applies to your own run)")
            return
        trace = self.run_source == "trace" and self.trace_run is not None
        self.device_row_label.setText("Device (trace)" if trace else "Device (toolbar)")
        if trace:
            self.device_label.setText(self._trace_device_text())
            return
        try:
            device = self.context.database.get(self.context.device_id)
            self.device_label.setText(f"{device.name} ({device.id}), peak precision "
                                      f"{self.context.precision}")
        except KeyError:
            self.device_label.setText(self.context.device_id)

    def _trace_device_text(self) -> str:
        run = self.trace_run
        device = self._trace_device()
        where = (f"{device.name} ({device.id}): the trace's GPU" if device is not None else
                 f"{self.context.device_id}: the toolbar's device (the trace's GPU "
                 f"{'(' + run.device_name + ') is not in the database' if run.device_name else 'is not recorded'})")
        precision = run.figures.precision
        if precision.effective:
            how = "chosen in the Trace tab" if precision.override else "detected from its GEMM/attention kernels"
            return f"{where}; peak precision {precision.effective}, the trace's ({how})"
        return f"{where}; peak precision {self.context.precision} (the toolbar's: the trace's is unknown)"

    def _show_result(self, r: mfu.MfuResult) -> None:
        i = r.inputs
        fmt = format_si
        self._set_kpi("achieved", fmt(r.achieved_flops_per_s_per_gpu, "FLOP/s"),
                      f"of {fmt(r.peak_flops_per_s_per_gpu, 'FLOP/s', 4)} {i.peak.precision or ''} peak")
        self._set_kpi("mfu", f"{r.mfu:.1%}", f"practical ceiling {r.mfu_ceiling:.0%} MFU")
        self.kpi_values["mfu"].setStyleSheet("color: #c62828;" if _implausible(r) else "")
        ratio = f"{r.hfu_over_mfu:.3g}×" if r.hfu_over_mfu is not None else "n/a ×"
        self._set_kpi("hfu", f"{r.hfu:.1%}", f"{ratio} model FLOPs ({i.recompute.hfu_label()})")
        self._set_kpi("headroom", f"{r.headroom_to_target:.1%}" if r.headroom_to_target else "none",
                      f"needs {r.speedup_to_target:.2f}× faster steps" if r.headroom_to_target
                      else "at or above 50 %")
        self._set_kpi("tokens", format_count(r.tokens_per_s), f"{format_count(i.tokens_per_step)} per step")
        self._set_kpi("tokens_gpu", format_count(r.tokens_per_s_per_gpu), f"{i.gpus} GPU(s)")
        self._set_kpi("time", format_duration_s(r.time_to_train_s) if r.time_to_train_s else "—",
                      f"for {format_count(i.train_tokens)} tokens" if i.train_tokens else "enter tokens")
        self._set_kpi("cost", f"{r.cost_per_million_tokens:.3g}" if r.cost_per_million_tokens is not None
                      else "—", "in the price's currency" if i.price_per_gpu_hour else "enter a price")
        self.convention_label.setText(f"<b>Convention:</b> {r.convention}")
        self.tokens_readout.setText(f"Tokens per step: {format_count(i.tokens_per_step)}"
                                    f" ({int(i.tokens_per_step):,})")
        self.n_readout.setText(f"N = {format_count(i.n_params)} — {i.n_params_note}")
        self.n_readout.setProperty("n_text", format_count(i.n_params))
        self.steps_readout.setText(i.step_stats.describe() if i.step_stats else
                                   f"one value: {format_duration_s(i.step_time_s)} (give several "
                                   "steps to see the spread)")
        self.peak_readout.setText(
            f"{fmt(r.peak_flops_per_s_per_gpu, 'FLOP/s', 4)} per GPU ({i.peak.source}) × {i.gpus}"
            f" = {fmt(r.peak_flops_per_s_total, 'FLOP/s', 4)}")
        ceiling = i.ceiling
        self.ceiling_readout.setText(
            f"Practical ceiling: <b>{ceiling.ceiling:.1%}</b> of peak (hardware FLOPs) = "
            f"<b>{r.mfu_ceiling:.1%}</b> MFU with {i.recompute.kind} recompute. "
            + (f"You are at {r.fraction_of_ceiling:.0%} of it." if r.fraction_of_ceiling is not None
               else "A ceiling of 0 leaves nothing to compare with."))
        self._show_warnings(r.warnings)
        self.status_label.setText("")

    def _set_kpi(self, key: str, value: str, detail: str) -> None:
        self.kpi_values[key].setText(value)
        self.kpi_details[key].setText(detail)

    def _show_warnings(self, warnings: tuple[mfu.MfuWarning, ...]) -> None:
        if not warnings:
            self.warnings_label.setText(
                "<span style='color:#2e7d32'>✔ No check fired: sparse peak, precision, recompute, "
                "warm-up and micro-batch checks passed.</span>")
            return
        items = "".join(
            f"<li><span style='color:{'#c62828' if w.severity == 'error' else '#b35900'}'>"
            f"<b>{'Error' if w.severity == 'error' else 'Check'}:</b></span> {w.message}</li>"
            for w in warnings)
        self.warnings_label.setText(f"<ul style='margin-left:-20px'>{items}</ul>")

    def _show_breakdown(self, breakdown: mfu_gap.GapBreakdown, r: mfu.MfuResult) -> None:
        if _implausible(r):
            # No gap against peak to attribute: show what was measured (the causes as shares of the
            # step time), so a trace's causes stay visible while the model or batch is fixed.
            self.gap_group.setTitle(TIME_TITLE.format(why="the MFU is not plausible"))
            self.gap_bar.set_slices(
                mfu_gap.step_time_slices(self._causes()), [],
                f"MFU {r.mfu:.0%} is not plausible: check the model, tokens per step and GPUs. "
                "The bar shows the causes as shares of the step time.")
        else:
            marks = [(r.mfu_ceiling, f"ceiling {r.mfu_ceiling:.0%}"), (mfu.TARGET_MFU, "50 % target")]
            if abs(r.mfu_ceiling - mfu.TARGET_MFU) < 0.08:
                marks = [(r.mfu_ceiling, f"ceiling {r.mfu_ceiling:.0%} · 50 % target")]
            self.gap_group.setTitle(GAP_TITLE)
            self.gap_bar.set_slices(breakdown.display_slices(), marks)
        shares = {s.key: s.fraction for s in breakdown.causes}
        shares.update(mfu=breakdown.mfu, unexplained=breakdown.unexplained)
        for key, label in self.slice_labels.items():
            label.setText(f"{shares.get(key, 0.0):.1%}")
        if self.bubble_from_stages_check.isChecked():
            self.cause_spins["pipeline_bubble"].blockSignals(True)
            self.cause_spins["pipeline_bubble"].setValue(self._causes().pipeline_bubble * 100)
            self.cause_spins["pipeline_bubble"].blockSignals(False)
        self.breakdown_message.setText(breakdown.message or "")

    def _show_time_bar_or_nothing(self, message: str) -> None:
        """Without a result: the entered (or trace) causes as shares of the step time, if any."""
        causes = mfu_gap.GapCauses(**{k: s.value() / 100 for k, s in self.cause_spins.items()})
        if not any(getattr(causes, key) > 0 for key in TIME_CAUSES):
            self.gap_group.setTitle(GAP_TITLE)
            self.gap_bar.set_slices([], [])
            return
        self.gap_group.setTitle(TIME_TITLE.format(why="no MFU yet"))
        self.gap_bar.set_slices(mfu_gap.step_time_slices(causes), [],
                                f"No MFU ({_brief(message)}): the bar shows the causes as shares of the step time.")

    def _show_amdahl(self, step_time_s: float) -> None:
        try:
            self.amdahl_result = mfu_gap.amdahl(self.amdahl_share_spin.value() / 100,
                                            self.amdahl_speedup_spin.value(), step_time_s)
        except mfu.MfuInputError as exc:
            self.amdahl_readout.setText(str(exc))
            return
        a = self.amdahl_result
        self.amdahl_readout.setText(
            f"Overall <b>{a.overall_speedup:.3f}×</b> ({a.overall_speedup - 1:.1%} faster): step "
            f"{format_duration_s(step_time_s)} → {format_duration_s(a.new_time_s or 0.0)}. "
            f"Bound if the part took no time: "
            f"{'∞' if math.isinf(a.bound_speedup) else f'{a.bound_speedup:.3g}×'}.")

    # ------------------------------------------------------------------ copying
    def result_text(self, fmt: str = "text") -> str:
        """The current result as ``"text"``, ``"markdown"`` or ``"json"`` ("" when inputs are invalid)."""
        if self.result is None:
            return ""
        return report(self.result, self.breakdown, fmt)

    def copy_result(self, fmt: str) -> None:
        text = self.result_text(fmt)
        if text:
            QGuiApplication.clipboard().setText(text)
            self.status_label.setText(f"Copied as {fmt}.")


__all__ = ["GapBar", "MfuTab", "NumberField"]