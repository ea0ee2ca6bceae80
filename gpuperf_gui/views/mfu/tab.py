"""The MFU tab: the calculator, the gap from 100 % attributed to named causes, and the checks.

Thin view (STYLE.md R2): the widgets are read into a :class:`~gpuperf_gui.core.mfu_state.MfuInputs`,
and :class:`~gpuperf_gui.core.mfu_state.MfuState` (no Qt) parses them, applies the input rules and
computes; this module marks the inputs it names in place and draws the outcome. Every edit
recomputes at once (the arithmetic takes microseconds). :meth:`MfuTab.apply_trace_figures` fills the
step time and the causes from a trace, as the state's :class:`~gpuperf_gui.core.mfu_state.TraceFill` says.
"""
from __future__ import annotations

import math
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
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core import mfu, mfu_gap
from gpuperf_gui.core.hardware import PRECISIONS
from gpuperf_gui.core.mfu_inputs import MfuForm, TraceRun, example_check, example_form
from gpuperf_gui.core.mfu_report import report
from gpuperf_gui.core.mfu_state import (
    CONFIG_FIELDS,
    CUSTOM_CONFIG,
    DEFAULT_PRESET,
    EARLIER_TRACE_FIELDS,
    N_GIVEN,
    NO_MODEL,
    RECOMPUTE_FIELDS,
    RUN_FIELDS,
    FieldError,
    MfuInputs,
    MfuOutcome,
    MfuState,
    TraceFill,
    brief,
    implausible,
)
from gpuperf_gui.core.model_presets import EXAMPLE_RUNS, preset_names
from gpuperf_gui.core.trace.diagnosis.figures import TraceMfuFigures
from gpuperf_gui.core.units import format_count, format_duration_s, format_si
from gpuperf_gui.views.mfu.fields import FROM_TRACE_STYLE, NumberField, kpi_card, percent_spin
from gpuperf_gui.views.mfu.gap_bar import SLICE_COLOURS, GapBar
from gpuperf_gui.views.trace.what_if_view import WhatIfSelector

if TYPE_CHECKING:
    from gpuperf_gui.views.context import AppContext

EARLIER_TRACE_STYLE = "background: #fff3cd;"  # typed for an earlier trace: to check
GAP_TITLE = "Where the rest of 100 % went (shares of peak × step time)"
TIME_TITLE = "Step time by cause (shares of the step, not of peak: {why})"
NOTE_STYLE = ("QLabel { background: #fff8e1; color: #6d4c00; border: 1px solid #ffe08a; "
              "border-radius: 3px; padding: 4px; }")
EXAMPLE_STYLE = ("QLabel { background: #eef5ee; color: #1b4d1b; border: 1px solid #b7d7b7; "
                 "border-radius: 3px; padding: 4px; }")
TIME_CAUSES = mfu_gap.TIME_CAUSES


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _gemm_tip(origin: str, gemm) -> str:  # noqa: ANN001 (kernel_roof.GemmRoof)
    """Where the GEMM-inefficiency share comes from (the Overview's "GEMMs" card)."""
    if gemm.fraction is None:
        return (f"{origin}: no GEMM/attention kernel with FLOPs and a roof (shapes not recorded, or the "
                "GPU or precision unknown), so GEMMs below their roof stay in Unexplained")
    return (f"{origin}: GEMM/attention kernels at {gemm.fraction:.1%} of their roof (the Overview's GEMMs "
            f"card) × their {gemm.time_fraction_of_step:.1%} share of the step")


class MfuTab(QWidget):
    """MFU calculator tab. ``result`` and ``breakdown`` hold the latest core objects (None if invalid)."""

    result_changed = Signal(object)  # MfuResult | None

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.state = MfuState()   # where the run comes from, what is marked (core/mfu_state.py)
        self.result: mfu.MfuResult | None = None
        self.breakdown: mfu_gap.GapBreakdown | None = None
        self.amdahl_result: mfu_gap.AmdahlResult | None = None
        self.fields: dict[str, NumberField] = {}
        self._filling = False
        self._banner_args: tuple[str, TraceRun, bool] | None = None
        layout = QHBoxLayout(self)
        layout.addWidget(self._build_inputs(), 0)
        layout.addWidget(self._build_results(), 1)
        context.device_changed.connect(self._on_device_changed)
        if hasattr(context, "precision_changed"):
            context.precision_changed.connect(self._on_device_changed)
        self._apply_preset(DEFAULT_PRESET)

    @property
    def run_source(self) -> str:
        """Where the run's figures come from: "example" (a preset's published run), "user", "trace"."""
        return self.state.run_source

    @property
    def example(self) -> str | None:
        """The preset whose example run fills the run fields."""
        return self.state.example

    @property
    def trace_run(self) -> TraceRun | None:
        return self.state.trace_run

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
            frame, value, detail = kpi_card(title)
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
                spin = percent_spin(0.0)
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
                spin = percent_spin(getattr(defaults, name) * 100)
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
        self.amdahl_share_spin = percent_spin(10.0)
        self.amdahl_speedup_spin = percent_spin(2.0, maximum=1e6, decimals=2, suffix=" ×")
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
            self.state.model_confirmed = name != NO_MODEL
            self._apply_preset(name)

    def _apply_preset(self, name: str) -> None:
        """Fill the model from the preset and, unless the run is the user's or a trace's, the
        preset's published example run (batch, sequence, GPUs, step time, hardware)."""
        self._filling = True
        try:
            self.preset_combo.setCurrentText(name)
            config = self.state.choose_preset(name)
            if config is not None:
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
        fill = self.state.example_run(name)
        for key, text in fill.texts.items():
            self.fields[key].setText(text)
        self.direct_tokens_check.setChecked(False)
        self._set_exact("step_times", fill.step_time_s)
        self.warmup_spin.setValue(-1)
        self.gpus_spin.setValue(fill.gpus)
        self.recompute_combo.setCurrentText(fill.recompute)

    def load_example(self) -> None:
        """Replace the run fields by the current preset's example run (the "Example run" link)."""
        name = self.preset_combo.currentText()
        if name not in EXAMPLE_RUNS:
            return
        self.state.use_example()
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
        if self.state.leave_example():
            self._show_example()
            self._recompute()  # the peak now follows the toolbar's device
        self._clear_earlier_mark(key)
        self.state.run_edited(key)
        if key == "gpus":
            self.gpus_spin.setStyleSheet("")
            self.gpus_spin.setToolTip("All GPUs of the job (TP × PP × DP)")
        elif key in self.fields:
            self.fields[key].set_origin(None)

    def _on_config_edited(self, *_args: object) -> None:
        if not self._filling:
            self.state.model_confirmed = True
        if not self._filling and self.preset_combo.currentText() not in (N_GIVEN, CUSTOM_CONFIG):
            self._filling = True
            self.preset_combo.setCurrentText(CUSTOM_CONFIG)
            self._filling = False
            if self.state.leave_example():
                self._show_example()
            self._recompute()

    def _on_n_edited(self, _text: str) -> None:
        self.state.model_confirmed = True
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
            self.amdahl_share_spin.setValue(getattr(self._inputs().gap_causes(), key) * 100)
        self._recompute()

    # ------------------------------------------------------------------ a trace's figures
    def apply_trace_figures(self, figures: TraceMfuFigures) -> None:
        """Send to MFU: the step time, the GPU count and the causes from a trace, each marked.

        GPUs follow the trace's world size (else the ranks loaded). The model and the tokens per
        step are not in a trace: the ones the user typed are kept; an example run's are not (they
        describe another run), so the tab asks for them in place and shows no MFU until given
        (the rules: :meth:`MfuState.take_trace`).
        """
        self.what_if.set_projections(getattr(figures, "what_if", ()))
        fill = self.state.take_trace(figures, self.context.database)
        self._clear_trace_marks()
        self._filling = True
        try:
            self._fill_from_trace(fill)
        finally:
            self._filling = False
        self._mark_earlier_model()
        self.trace_label.setText(f"causes filled from the loaded trace ({fill.name})")
        self.trace_label.setToolTip(str(figures.source or fill.name))
        self._banner_args = (fill.name, fill.run, fill.kept)
        self._show_trace_banner(fill.name, fill.run, fill.kept)
        self._show_example()
        self._recompute()

    def _fill_from_trace(self, fill: TraceFill) -> None:
        """Write a trace's figures into the widgets, each tinted with where it came from."""
        origin, run = fill.origin, fill.run
        if fill.step_time_s is not None:
            self._set_exact("step_times", fill.step_time_s)
            self.fields["step_times"].set_origin(
                f"{origin}: median of the steady profiled steps (profiled steps run slower)")
            self.warmup_spin.setValue(-1)
        elif fill.clear_step_time:   # an earlier trace's step time says nothing of this one
            self.fields["step_times"].setText("")
            self.fields["step_times"].setPlaceholderText("this trace has no ProfilerStep: enter its step time")
        for key, fraction in fill.fractions.items():
            self.cause_spins[key].setValue(fraction * 100)
            self.cause_spins[key].setStyleSheet(f"QDoubleSpinBox {{ {FROM_TRACE_STYLE} }}")
            self.cause_spins[key].setToolTip(f"{origin} (share of the step time)")
        self.cause_spins["gemm_inefficiency"].setValue(fill.gemm.inefficiency * 100)
        self.cause_spins["gemm_inefficiency"].setStyleSheet(f"QDoubleSpinBox {{ {FROM_TRACE_STYLE} }}")
        self.cause_spins["gemm_inefficiency"].setToolTip(_gemm_tip(origin, fill.gemm))
        self.bubble_from_stages_check.setChecked(False)
        self.gpus_spin.setValue(run.gpus)
        self.gpus_spin.setStyleSheet(f"QSpinBox {{ {FROM_TRACE_STYLE} }}")
        self.gpus_spin.setToolTip(f"{origin}: " + ("the recorded world size" if run.world_size else
                                  "the ranks loaded (the trace records no world size)"))
        if fill.reset_run:  # the example's sequence, tokens and recompute describe another run
            self.fields["seq_len"].setText("")
            self.recompute_combo.setCurrentText("none")
            self.direct_tokens_check.setChecked(True)
            self.fields["tokens_per_step"].setText("")
            self.fields["tokens_per_step"].setPlaceholderText("tokens per step of the traced run")
        if fill.ask_model:
            if self.preset_combo.findText(NO_MODEL) < 0:
                self.preset_combo.insertItem(0, NO_MODEL)
            self.preset_combo.setCurrentText(NO_MODEL)
            for key in CONFIG_FIELDS:
                self.fields[key].setText("")
            self.fields["n_params"].setText("")
            self.fields["n_params"].setEnabled(True)
            self.fields["n_params"].setPlaceholderText("N of the traced run, or choose a preset")

    def _trace_device(self, figures: TraceMfuFigures | None = None):  # noqa: ANN202 (Device | None)
        """The trace's GPU when the database knows it, else None (the toolbar's device is used)."""
        return self.state.trace_device(self.context.database, figures)

    def _mark_earlier_model(self) -> None:
        """Model and tokens typed for an earlier trace are kept but marked until the user edits them."""
        filled = [key for key in EARLIER_TRACE_FIELDS
                  if self.fields[key].text().strip() and self.fields[key].isEnabled()]
        marked = self.state.mark_earlier(filled)
        if not marked:
            return
        tip = (f"entered for the earlier trace {self.state.earlier_trace}, not for this one: check it "
               "describes this trace's run (edit it to confirm)")
        for key in marked:
            self.fields[key].setStyleSheet(f"QLineEdit {{ {EARLIER_TRACE_STYLE} }}")
            self.fields[key].setToolTip(tip)
            self.fields[key].setProperty("earlier_trace", True)

    def _clear_earlier_mark(self, key: str) -> None:
        if self.state.clear_earlier(key):
            field = self.fields[key]
            field.setProperty("earlier_trace", False)
            field.setStyleSheet("")
            field.setToolTip("")

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
        given = self.state.model_and_tokens_given(self._inputs())
        if self.state.earlier_trace is not None:
            asked = (f"<b>The model and tokens per step were entered for the earlier trace "
                     f"{_html(self.state.earlier_trace)}</b> (marked in amber): check that they describe this one.")
        elif kept:
            asked = ("The model and tokens per step you entered are kept: check that they describe the "
                     "traced run.")
        elif given:
            asked = "Model and tokens per step entered: check that they describe the traced run."
        else:
            asked = ("<b>Enter the model (a preset or N) and the tokens per step of the traced run</b>, "
                     "marked below: a trace records neither.")
        if self.result is None and given:   # never "entered" beside KPIs that show "—"
            asked += f" <b>No MFU yet:</b> {_html(brief(self.state.waiting_for or 'fix the inputs marked below'))}"
        precision = run.figures.precision
        prec = (f" Peak precision {_html(precision.effective)}: {_html(precision.describe())}."
                if precision.effective else " The trace's precision is unknown: the toolbar's is used.")
        self.trace_banner.setText(
            f"From {_html(name)}, marked in blue: step time (median of {steps} steady <i>profiled</i> "
            f"steps, slower than unprofiled ones), {_html(gpus)}, and the gap causes.{prec} {asked} "
            "<a href='dismiss'>Dismiss</a>")
        self.trace_banner.show()

    def is_busy(self) -> bool:
        return False

    def shutdown(self) -> None:
        """Nothing runs in the background here."""

    # ------------------------------------------------------------------ reading the inputs
    def _inputs(self) -> MfuInputs:
        """The widgets' values, unparsed (the state parses them and says what is wrong)."""
        stages = ((self.stages_spin.value(), self.microbatches_spin.value(), self.virtual_spin.value())
                  if self.bubble_from_stages_check.isChecked() else None)
        return MfuInputs(
            texts={key: field.text() for key, field in self.fields.items()},
            mode=self.preset_combo.currentText(), device_id=self.context.device_id,
            precision=self.context.precision, attention=self.attention_check.isChecked(),
            causal=self.causal_check.isChecked(), exclude_embeddings=self.exclude_embeddings_check.isChecked(),
            gated_mlp=self.gated_check.isChecked(), tied_embeddings=self.tied_check.isChecked(),
            bias=self.bias_check.isChecked(), direct_tokens=self.direct_tokens_check.isChecked(),
            explicit_peak=self.explicit_peak_check.isChecked(), warmup_steps=self.warmup_spin.value(),
            gpus=self.gpus_spin.value(), training_precision=self.training_precision_combo.currentText(),
            recompute=self.recompute_combo.currentText(),
            recompute_convention=self.recompute_convention_combo.currentText(),
            ceiling={k: s.value() / 100 for k, s in self.ceiling_spins.items()},
            causes={k: s.value() / 100 for k, s in self.cause_spins.items()}, stages=stages,
            amdahl_share=self.amdahl_share_spin.value() / 100, amdahl_speedup=self.amdahl_speedup_spin.value())

    def form(self) -> MfuForm:
        """The tab's inputs as the core input model (the one ``gpuperf mfu`` builds from its options).

        Raises :class:`~gpuperf_gui.core.mfu_state.InvalidInputs` when a field does not parse,
        ``MfuInputError`` / ``ConfigError`` when the inputs are inconsistent."""
        return self.state.form(self._inputs(), self.context.database)

    def _set_exact(self, key: str, value: float) -> None:
        """Show ``value`` rounded to 6 digits but compute with it exactly while the text is unchanged."""
        self.fields[key].setText(self.state.exact_text(key, value))

    # ------------------------------------------------------------------ computing and showing
    def _recompute(self, *_args: object) -> None:
        if self._filling:
            return
        for field in self.fields.values():
            field.mark(None)
        for spin in self.ceiling_spins.values():
            spin.setStyleSheet("")
        inputs = self._inputs()
        for key, used in inputs.used_inputs().items():   # the choices decide which inputs count
            (self.cause_spins[key] if key in self.cause_spins else self.fields[key]).setEnabled(used)
        self._show_device()
        self.peak_readout.setText("")
        outcome = self.state.evaluate(inputs, self.context.database)
        if outcome.result is None:
            for key, error in outcome.errors.items():
                self._mark_error(key, error)
            self._show_invalid(outcome.message, implausible=outcome.implausible)
            return
        result = outcome.result
        self.result = result
        self.breakdown = outcome.breakdown
        self._show_result(result)
        self._show_breakdown(outcome.breakdown, result, inputs)
        self.what_if.set_mfu(result.mfu)
        self._show_amdahl(outcome, result.inputs.step_time_s)
        self._refresh_banner()
        self.result_changed.emit(result)

    def _refresh_banner(self) -> None:
        """The trace banner says what holds now (a result, or what is still missing)."""
        if self._banner_args is not None and not self.trace_banner.isHidden():
            self._show_trace_banner(*self._banner_args)

    def _mark_error(self, key: str, error: FieldError) -> None:
        """Mark the input ``key`` the state named (red; amber when it is an input still to give)."""
        if key in self.fields:
            self.fields[key].mark(error.message, needed=error.needed)
        elif key == "recompute":
            for name in RECOMPUTE_FIELDS:
                self.fields[name].mark(error.message)
        elif key.startswith("ceiling."):
            for spin in self.ceiling_spins.values():
                spin.setStyleSheet("QDoubleSpinBox { border: 2px solid #d73027; }")
        if key == "peak_tflops" and not self.explicit_peak_check.isChecked():
            self.peak_readout.setText(f"<span style='color:#d73027'>{error.message}</span>")

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
        self.kpi_values["mfu"].setStyleSheet("color: #c62828;" if implausible(r) else "")
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

    def _show_breakdown(self, breakdown: mfu_gap.GapBreakdown, r: mfu.MfuResult, inputs: MfuInputs) -> None:
        if implausible(r):
            # No gap against peak to attribute: show what was measured (the causes as shares of the
            # step time), so a trace's causes stay visible while the model or batch is fixed.
            self.gap_group.setTitle(TIME_TITLE.format(why="the MFU is not plausible"))
            self.gap_bar.set_slices(
                mfu_gap.step_time_slices(inputs.gap_causes()), [],
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
            self.cause_spins["pipeline_bubble"].setValue(inputs.gap_causes().pipeline_bubble * 100)
            self.cause_spins["pipeline_bubble"].blockSignals(False)
        self.breakdown_message.setText(breakdown.message or "")

    def _show_time_bar_or_nothing(self, message: str) -> None:
        """Without a result: the entered (or trace) causes as shares of the step time, if any."""
        causes = self._inputs().entered_causes()
        if not any(getattr(causes, key) > 0 for key in TIME_CAUSES):
            self.gap_group.setTitle(GAP_TITLE)
            self.gap_bar.set_slices([], [])
            return
        self.gap_group.setTitle(TIME_TITLE.format(why="no MFU yet"))
        self.gap_bar.set_slices(mfu_gap.step_time_slices(causes), [],
                                f"No MFU ({brief(message)}): the bar shows the causes as shares of the step time.")

    def _show_amdahl(self, outcome: MfuOutcome, step_time_s: float) -> None:
        if outcome.amdahl is None:
            self.amdahl_readout.setText(outcome.amdahl_error or "")
            return
        self.amdahl_result = outcome.amdahl
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