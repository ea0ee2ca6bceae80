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

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPainter, QPalette, QPen
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
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gpuperf_gui.core import mfu
from gpuperf_gui.core.hardware import PRECISIONS
from gpuperf_gui.core.model_presets import ConfigError, ModelConfig, get_preset, preset_names
from gpuperf_gui.core.units import format_si

if TYPE_CHECKING:
    from gpuperf_gui.views.context import AppContext

INVALID_STYLE = "QLineEdit { border: 2px solid #d73027; background: #fdecea; }"
N_GIVEN, CUSTOM_CONFIG = "N given directly", "Custom configuration"
DEFAULT_PRESET = "Llama-3 8B"
SLICE_COLOURS = {
    "mfu": "#2e9d4e",
    "pipeline_bubble": "#8e6cc4",
    "exposed_comm": "#e07b39",
    "data_stall": "#d8b033",
    "memory_bound": "#3a86c8",
    "launch_gaps": "#c8513a",
    "recompute": "#8fb8de",
    "gemm_inefficiency": "#4fb0a3",
    "unexplained": "#bdbdbd",
    mfu.REST_OF_STEP: "#d4d4d4",
}
HATCHED = ("unexplained", mfu.REST_OF_STEP)
GAP_TITLE = "Where the rest of 100 % went (shares of peak × step time)"
TIME_TITLE = "Step time by cause (shares of the step, not of peak: {why})"
NOTE_STYLE = ("QLabel { background: #fff8e1; color: #6d4c00; border: 1px solid #ffe08a; "
              "border-radius: 3px; padding: 4px; }")
TIME_CAUSES = mfu.TIME_CAUSES
RECOMPUTE_FIELDS = ("recompute_dense", "recompute_attention")
TRACE_FRACTIONS = ("exposed_comm", "data_stall", "launch_gaps", "pipeline_bubble", "memory_bound")


class _Invalid(Exception):
    """A field could not be parsed; it is already marked."""


class NumberField(QLineEdit):
    """A line edit for a number (``124M``, ``6e9``); marks itself red with the reason as tooltip."""

    def __init__(self, text: str = "", placeholder: str = "", tooltip: str = "") -> None:
        super().__init__(text)
        self.setPlaceholderText(placeholder)
        self._tooltip = tooltip
        self.setToolTip(tooltip)
        self.error: str | None = None

    def mark(self, error: str | None) -> None:
        self.error = error
        self.setProperty("invalid", bool(error))
        self.setStyleSheet(INVALID_STYLE if error else "")
        self.setToolTip(error or self._tooltip)


class GapBar(QWidget):
    """One stacked bar from 0 to 100 % of peak: MFU, named causes, unexplained; ceiling and target marks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slices: list[mfu.GapSlice] = []
        self.marks: list[tuple[float, str]] = []
        self.flag: str | None = None  # said above the bar (in red) instead of the marks
        self.setMinimumHeight(78)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_slices(self, slices: list[mfu.GapSlice], marks: list[tuple[float, str]],
                   flag: str | None = None) -> None:
        """``flag``: a warning drawn above the bar (e.g. the bar shows step-time shares, not peak)."""
        self.slices, self.marks, self.flag = slices, marks, flag
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bar = QRectF(4, 18, self.width() - 8, 40)
        text_colour = self.palette().color(QPalette.ColorRole.WindowText)
        painter.setPen(QPen(text_colour.lighter(150), 1))
        painter.drawRect(bar)
        x = bar.left()
        for piece in self.slices:
            width = piece.fraction * bar.width()
            if width <= 0:
                continue
            rect = QRectF(x, bar.top(), width, bar.height())
            painter.fillRect(rect, QColor(SLICE_COLOURS.get(piece.key, "#999999")))
            if piece.key in HATCHED:
                painter.setBrush(QBrush(QColor(0, 0, 0, 70), Qt.BrushStyle.BDiagPattern))
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawRect(rect)
                painter.setBrush(Qt.BrushStyle.NoBrush)
            x += width
        label_font = painter.font()
        small = painter.font()
        small.setPointSizeF(small.pointSizeF() * 0.85)
        if self.flag:
            painter.setPen(QColor("#c62828"))
            painter.setFont(small)
            painter.drawText(QRectF(bar.left(), 0, bar.width(), 16),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.flag)
        for fraction, text in self.marks:
            mx = bar.left() + min(max(fraction, 0.0), 1.0) * bar.width()
            painter.setPen(QPen(text_colour, 1.5, Qt.PenStyle.DashLine))
            painter.drawLine(int(mx), int(bar.top() - 4), int(mx), int(bar.bottom() + 4))
            painter.setPen(text_colour)
            painter.setFont(small)
            painter.drawText(QRectF(mx - 80, 0, 160, 16), Qt.AlignmentFlag.AlignCenter, text)
        painter.setFont(label_font)
        x = bar.left()
        for piece in self.slices:
            width = piece.fraction * bar.width()
            if width <= 0:
                continue
            rect = QRectF(x, bar.top(), width, bar.height())
            metrics = painter.fontMetrics()
            label = f"{_short(piece.label)} {piece.fraction:.1%}"
            if metrics.horizontalAdvance(label) + 8 > width:
                label = f"{piece.fraction:.0%}"
            if metrics.horizontalAdvance(label) + 4 <= width:
                text_rect = QRectF(metrics.boundingRect(label)).adjusted(-4, -1, 4, 1)
                text_rect.moveCenter(rect.center())
                if piece.key in HATCHED:
                    painter.fillRect(text_rect, QColor(SLICE_COLOURS[piece.key]))
                painter.setPen(QColor("#ffffff") if piece.key not in HATCHED else QColor("#222222"))
                painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
            x += width
        painter.setFont(label_font)
        painter.setPen(text_colour)
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
            tx = bar.left() + fraction * bar.width()
            align = Qt.AlignmentFlag.AlignLeft if fraction == 0 else (
                Qt.AlignmentFlag.AlignRight if fraction == 1 else Qt.AlignmentFlag.AlignHCenter)
            painter.drawText(QRectF(tx - (0 if fraction == 0 else 60 if fraction == 1 else 30),
                                    bar.bottom() + 3, 60, 16), align, f"{fraction:.0%}")
        painter.end()


def _short(label: str) -> str:
    return label.split(" (")[0]


def _implausible(r: mfu.MfuResult) -> bool:
    """MFU above 100 % or far above the practical ceiling: its gap against peak means nothing."""
    return r.mfu > 1.0 or any(w.code in ("mfu_above_100", "mfu_above_ceiling") for w in r.warnings)


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
        self.breakdown: mfu.GapBreakdown | None = None
        self.amdahl_result: mfu.AmdahlResult | None = None
        self.fields: dict[str, NumberField] = {}
        self._filling = False
        self._base_config: ModelConfig = get_preset(DEFAULT_PRESET)
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
        form.addRow("Device (toolbar)", self.device_label)
        self.gpus_spin = QSpinBox()
        self.gpus_spin.setRange(1, 10_000_000)
        self.gpus_spin.setValue(8)
        self.gpus_spin.setToolTip("All GPUs of the job (TP × PP × DP)")
        self.gpus_spin.valueChanged.connect(self._recompute)
        form.addRow("GPUs", self.gpus_spin)
        row = QHBoxLayout()
        self.explicit_peak_check = self._check("Explicit peak", False,
                                               "For a device not in the database, or a measured peak")
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
        return panel

    def _gap_group(self) -> QGroupBox:
        group = QGroupBox(GAP_TITLE)
        self.gap_group = group
        box = QVBoxLayout(group)
        self.gap_bar = GapBar()
        box.addWidget(self.gap_bar)
        grid = QGridLayout()
        self.cause_spins: dict[str, QDoubleSpinBox] = {}
        self.slice_labels: dict[str, QLabel] = {}
        rows = [("mfu", "MFU (useful work)", None)] + [
            (key, label, key) for key, label in mfu.CAUSES] + [("unexplained", "Unexplained", None)]
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
            self.amdahl_part_combo.addItem(mfu.CAUSE_LABELS[key], key)
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
            self._apply_preset(name)

    def _apply_preset(self, name: str) -> None:
        self._filling = True
        try:
            self.preset_combo.setCurrentText(name)
            if name not in (N_GIVEN, CUSTOM_CONFIG):
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
                self.fields["seq_len"].setText(str(config.seq_len))
            self.fields["n_params"].setEnabled(name == N_GIVEN)
            self.fields["n_params"].setPlaceholderText(
                "e.g. 7B, 124M" if name == N_GIVEN else "computed from the configuration below")
            if name == N_GIVEN and not self.fields["n_params"].text():
                self.fields["n_params"].setText(self.n_readout.property("n_text") or "7B")
        finally:
            self._filling = False
        self._recompute()

    def _on_config_edited(self, *_args: object) -> None:
        if not self._filling and self.preset_combo.currentText() not in (N_GIVEN, CUSTOM_CONFIG):
            self._filling = True
            self.preset_combo.setCurrentText(CUSTOM_CONFIG)
            self._filling = False
            self._recompute()

    def _on_device_changed(self, *_args: object) -> None:
        self._recompute()

    def _on_cause_edited(self, *_args: object) -> None:
        self.trace_label.setText("")
        self._recompute()

    def _on_amdahl_part_chosen(self, *_args: object) -> None:
        key = self.amdahl_part_combo.currentData()
        if key is not None and self.breakdown is not None:
            self.amdahl_share_spin.setValue(self._cause_time_fraction(key) * 100)
        self._recompute()

    def apply_trace_figures(self, figures: object) -> None:
        """Fill the step time, the causes and the GPU count from a trace's figures.

        ``figures`` is any object with the attributes of the engine's ``TraceMfuFigures``
        (``step_time_s``, the cause fractions, ``source``; optional ``world_size``, ``device_name``);
        missing ones are ignored. The model and the tokens per step are not in a trace: a banner
        above the Model group asks for them. The shared device is the main window's business.
        """
        world_size = getattr(figures, "world_size", None)
        gpus = int(world_size) if isinstance(world_size, (int, float)) and world_size >= 1 else None
        self._filling = True
        try:
            step = getattr(figures, "step_time_s", None)
            if isinstance(step, (int, float)) and math.isfinite(step) and step > 0:
                self.fields["step_times"].setText(f"{step:.6g}")
                self.warmup_spin.setValue(-1)
            for key in TRACE_FRACTIONS:
                value = getattr(figures, key, None)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    self.cause_spins[key].setValue(min(max(float(value), 0.0), 1.0) * 100)
            if isinstance(getattr(figures, "pipeline_bubble", None), (int, float)):
                self.bubble_from_stages_check.setChecked(False)
            if gpus is not None:
                self.gpus_spin.setValue(gpus)
        finally:
            self._filling = False
        name = _trace_name(figures)
        self.trace_label.setText("causes filled from the loaded trace" +
                                 (f" ({name})" if not name.startswith("the loaded trace") else
                                  name.removeprefix("the loaded trace")))
        self.trace_label.setToolTip(str(getattr(figures, "source", "") or name))
        self._show_trace_banner(name, gpus, getattr(figures, "device_name", None))
        self._recompute()

    def _show_trace_banner(self, name: str, gpus: int | None, device_name: object) -> None:
        device = f", {device_name}" if isinstance(device_name, str) and device_name else ""
        if gpus is not None:
            hardware = f" GPUs set to {gpus} from the trace (its job's world size{device})."
        else:
            hardware = " The GPU count is not in the trace: check GPUs below."
        self.trace_banner.setText(
            f"<b>Step time and gap causes come from {_html(name)}; enter the model and the tokens "
            f"per step of that run</b> (Model and Batch below: a trace records neither).{hardware} "
            "<a href='dismiss'>Dismiss</a>")
        self.trace_banner.show()

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
                field.mark("required")
                raise _Invalid(key)
            return None
        try:
            value = mfu.parse_quantity(text)
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

    def _gather_all(self) -> mfu.MfuInputs:
        """Parse every field (marking each bad one), then build the inputs."""
        parsed: dict[str, float | None] = {}
        bad = False
        optional = {"kv_heads", "head_dim", "ffn_size", "experts", "top_k", "counted_flops",
                    "train_tokens", "price", "n_params", "tokens_per_step", "peak_tflops",
                    "recompute_dense", "recompute_attention"}
        if self.preset_combo.currentText() == N_GIVEN:  # only the attention shape is read
            optional |= {"d_model", "vocab_size"}
            if not self.attention_check.isChecked():
                optional |= {"layers", "heads"}
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
        try:
            times = mfu.parse_float_list(self.fields["step_times"].text())
        except ValueError as exc:
            self.fields["step_times"].mark(str(exc))
            bad = True
        if bad:
            raise _Invalid("fields")
        return self._build_inputs_from(parsed, times)

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

    def _model_inputs(self, p: dict[str, float | None]) -> tuple[float, str, mfu.AttentionShape | None]:
        mode = self.preset_combo.currentText()
        seq = int(p["seq_len"])  # type: ignore[arg-type]
        with_attention = self.attention_check.isChecked()
        if mode == N_GIVEN:
            if p["n_params"] is None:
                raise mfu.MfuInputError("n_params", "required")
            attention = None
            if with_attention:
                head_dim = p["head_dim"] or (p["d_model"] or 0) // int(p["heads"])  # type: ignore[arg-type]
                if not head_dim:
                    raise mfu.MfuInputError("head_dim", "the attention term needs the head dim (or d_model)")
                attention = mfu.AttentionShape(int(p["layers"]), int(p["heads"]), int(head_dim), seq)  # type: ignore[arg-type]
            return float(p["n_params"]), "N given", attention
        config = replace(
            self._base_config,
            name=mode if mode != CUSTOM_CONFIG else "custom model",
            layers=int(p["layers"]), d_model=int(p["d_model"]), heads=int(p["heads"]),  # type: ignore[arg-type]
            kv_heads=p["kv_heads"], head_dim=p["head_dim"], ffn_size=p["ffn_size"],  # type: ignore[arg-type]
            vocab_size=int(p["vocab_size"]), experts=int(p["experts"] or 1),  # type: ignore[arg-type]
            top_k=int(p["top_k"] or 1), gated_mlp=self.gated_check.isChecked(),
            tied_embeddings=self.tied_check.isChecked(), bias=self.bias_check.isChecked(), seq_len=seq,
        )
        config.validate()
        attention = mfu.AttentionShape.from_config(config, seq) if with_attention else None
        return (*mfu.n_params_from_config(
            config, exclude_embeddings=self.exclude_embeddings_check.isChecked()), attention)

    def _tokens(self, p: dict[str, float | None]) -> float:
        if self.direct_tokens_check.isChecked():
            if p["tokens_per_step"] is None:
                raise mfu.MfuInputError("tokens_per_step", "required")
            return float(p["tokens_per_step"])
        return mfu.tokens_per_step(int(p["micro_batch"]), int(p["seq_len"]),  # type: ignore[arg-type]
                                   int(p["grad_accum"]), int(p["data_parallel"]))  # type: ignore[arg-type]

    def _peak(self, p: dict[str, float | None]) -> tuple[mfu.Peak, float | None]:
        device = self.context.database.get(self.context.device_id)
        precision = self.context.precision
        explicit = None
        if self.explicit_peak_check.isChecked():
            if p["peak_tflops"] is None:
                raise mfu.MfuInputError("peak_tflops", "required")
            explicit = float(p["peak_tflops"]) * 1e12
        training = self.training_precision_combo.currentText()
        training = None if training == "same as peak" else training
        return (mfu.resolve_peak(device, precision, explicit),
                mfu.training_precision_peak(device, training))

    def _ceiling(self) -> mfu.CeilingModel:
        return mfu.CeilingModel(**{k: s.value() / 100 for k, s in self.ceiling_spins.items()})

    def _build_inputs_from(self, p: dict[str, float | None], times: list[float]) -> mfu.MfuInputs:
        n, note, attention = self._model_inputs(p)
        tokens = self._tokens(p)
        warmup = self.warmup_spin.value()
        stats = mfu.summarize_step_times(times, None if warmup < 0 else warmup) if len(times) > 1 else None
        peak, training_peak = self._peak(p)
        training = self.training_precision_combo.currentText()
        recompute = mfu.Recompute.of(self.recompute_combo.currentText(),
                                     p.get("recompute_dense"), p.get("recompute_attention"))
        return mfu.MfuInputs(
            n_params=n, tokens_per_step=tokens, step_time_s=stats.median_s if stats else times[0],
            peak=peak, gpus=self.gpus_spin.value(), attention=attention,
            causal=self.causal_check.isChecked(), recompute=recompute, n_params_note=note,
            training_precision=None if training == "same as peak" else training,
            training_precision_peak_flops_per_s=training_peak, step_stats=stats,
            counted_flops_per_step=p["counted_flops"], train_tokens=p["train_tokens"],
            price_per_gpu_hour=p["price"], ceiling=self._ceiling(),
        )

    def _causes(self) -> mfu.GapCauses:
        values = {k: s.value() / 100 for k, s in self.cause_spins.items()}
        if self.bubble_from_stages_check.isChecked():
            values["pipeline_bubble"] = mfu.pipeline_bubble_fraction(
                self.stages_spin.value(), self.microbatches_spin.value(), self.virtual_spin.value())
        return mfu.GapCauses(**values)

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
        self.fields["peak_tflops"].setEnabled(self.explicit_peak_check.isChecked())
        custom = self.recompute_combo.currentText() == "custom"
        for key in RECOMPUTE_FIELDS:
            self.fields[key].setEnabled(custom)
        self._show_device()
        try:
            inputs = self._gather_all()
            result = mfu.compute_mfu(inputs)
        except _Invalid:
            self._show_invalid("Fix the inputs marked in red.")
            return
        except (mfu.MfuInputError, ConfigError) as exc:
            self._mark_error(exc.field, str(exc))
            self._show_invalid(str(exc))
            return
        self.result = result
        self.breakdown = mfu.gap_breakdown(result.mfu, result.hfu, self._causes(),
                                           memory_efficiency=inputs.ceiling.memory_efficiency)
        self._show_result(result)
        self._show_breakdown(self.breakdown, result)
        self._show_amdahl(inputs.step_time_s)
        self.result_changed.emit(result)

    def _mark_error(self, key: str, message: str) -> None:
        aliases = {"step_time_s": "step_times", "warmup_steps": "step_times", "peak": "peak_tflops",
                   "seq": "seq_len", "data_parallel": "data_parallel"}
        key = aliases.get(key, key)
        if key in self.fields:
            self.fields[key].mark(message)
        elif key == "recompute":
            for name in RECOMPUTE_FIELDS:
                self.fields[name].mark(message)
        elif key.startswith("ceiling."):
            for spin in self.ceiling_spins.values():
                spin.setStyleSheet("QDoubleSpinBox { border: 2px solid #d73027; }")
        if key == "peak_tflops" and not self.explicit_peak_check.isChecked():
            self.peak_readout.setText(f"<span style='color:#d73027'>{message}</span>")

    def _show_invalid(self, message: str) -> None:
        self.result = None
        self.breakdown = None
        for label in self.kpi_values.values():
            label.setText("—")
        for label in self.kpi_details.values():
            label.setText("")
        self.status_label.setText(f"<span style='color:#d73027'>{message}</span>")
        self.kpi_values["mfu"].setStyleSheet("")
        self._show_time_bar_or_nothing(message)
        for label in self.slice_labels.values():
            label.setText("—")
        for label in (self.convention_label, self.breakdown_message, self.ceiling_readout,
                      self.amdahl_readout, self.tokens_readout, self.n_readout, self.steps_readout):
            label.setText("")
        self.warnings_label.setText(f"<span style='color:#d73027'>No result: {message}</span>")
        self.result_changed.emit(None)

    def _show_device(self) -> None:
        try:
            device = self.context.database.get(self.context.device_id)
            self.device_label.setText(f"{device.name} ({device.id}), peak precision "
                                      f"{self.context.precision}")
        except KeyError:
            self.device_label.setText(self.context.device_id)

    def _show_result(self, r: mfu.MfuResult) -> None:
        i = r.inputs
        fmt = format_si
        self._set_kpi("achieved", fmt(r.achieved_flops_per_s_per_gpu, "FLOP/s"),
                      f"of {fmt(r.peak_flops_per_s_per_gpu, 'FLOP/s', 4)} {i.peak.precision or ''} peak")
        self._set_kpi("mfu", f"{r.mfu:.1%}", f"practical ceiling {r.mfu_ceiling:.0%} MFU")
        self.kpi_values["mfu"].setStyleSheet("color: #c62828;" if _implausible(r) else "")
        ratio = f"{r.hfu_over_mfu:.3g}×" if r.hfu_over_mfu is not None else "n/a ×"
        self._set_kpi("hfu", f"{r.hfu:.1%}", f"{ratio} model FLOPs ({i.recompute.kind})")
        self._set_kpi("headroom", f"{r.headroom_to_target:.1%}" if r.headroom_to_target else "none",
                      f"needs {r.speedup_to_target:.2f}× faster steps" if r.headroom_to_target
                      else "at or above 50 %")
        self._set_kpi("tokens", mfu.format_count(r.tokens_per_s), f"{mfu.format_count(i.tokens_per_step)} per step")
        self._set_kpi("tokens_gpu", mfu.format_count(r.tokens_per_s_per_gpu), f"{i.gpus} GPU(s)")
        self._set_kpi("time", mfu.format_duration(r.time_to_train_s) if r.time_to_train_s else "—",
                      f"for {mfu.format_count(i.train_tokens)} tokens" if i.train_tokens else "enter tokens")
        self._set_kpi("cost", f"{r.cost_per_million_tokens:.3g}" if r.cost_per_million_tokens is not None
                      else "—", "in the price's currency" if i.price_per_gpu_hour else "enter a price")
        self.convention_label.setText(f"<b>Convention:</b> {r.convention}")
        self.tokens_readout.setText(f"Tokens per step: {mfu.format_count(i.tokens_per_step)}"
                                    f" ({int(i.tokens_per_step):,})")
        self.n_readout.setText(f"N = {mfu.format_count(i.n_params)} — {i.n_params_note}")
        self.n_readout.setProperty("n_text", mfu.format_count(i.n_params))
        self.steps_readout.setText(i.step_stats.describe() if i.step_stats else
                                   f"one value: {mfu.format_duration(i.step_time_s)} (give several "
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

    def _show_breakdown(self, breakdown: mfu.GapBreakdown, r: mfu.MfuResult) -> None:
        if _implausible(r):
            # No gap against peak to attribute: show what was measured (the causes as shares of the
            # step time), so a trace's causes stay visible while the model or batch is fixed.
            self.gap_group.setTitle(TIME_TITLE.format(why="the MFU is not plausible"))
            self.gap_bar.set_slices(
                mfu.step_time_slices(self._causes()), [],
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
        causes = mfu.GapCauses(**{k: s.value() / 100 for k, s in self.cause_spins.items()})
        if not any(getattr(causes, key) > 0 for key in TIME_CAUSES):
            self.gap_group.setTitle(GAP_TITLE)
            self.gap_bar.set_slices([], [])
            return
        self.gap_group.setTitle(TIME_TITLE.format(why="no MFU yet"))
        self.gap_bar.set_slices(mfu.step_time_slices(causes), [],
                                f"No MFU ({message}). The bar shows the causes as shares of the step time.")

    def _show_amdahl(self, step_time_s: float) -> None:
        try:
            self.amdahl_result = mfu.amdahl(self.amdahl_share_spin.value() / 100,
                                            self.amdahl_speedup_spin.value(), step_time_s)
        except mfu.MfuInputError as exc:
            self.amdahl_readout.setText(str(exc))
            return
        a = self.amdahl_result
        self.amdahl_readout.setText(
            f"Overall <b>{a.overall_speedup:.3f}×</b> ({a.overall_speedup - 1:.1%} faster): step "
            f"{mfu.format_duration(step_time_s)} → {mfu.format_duration(a.new_time_s or 0.0)}. "
            f"Bound if the part took no time: "
            f"{'∞' if math.isinf(a.bound_speedup) else f'{a.bound_speedup:.3g}×'}.")

    # ------------------------------------------------------------------ copying
    def result_text(self, fmt: str = "text") -> str:
        """The current result as ``"text"``, ``"markdown"`` or ``"json"`` ("" when inputs are invalid)."""
        if self.result is None:
            return ""
        return mfu.report(self.result, self.breakdown, fmt)

    def copy_result(self, fmt: str) -> None:
        text = self.result_text(fmt)
        if text:
            QGuiApplication.clipboard().setText(text)
            self.status_label.setText(f"Copied as {fmt}.")


__all__ = ["GapBar", "MfuTab", "NumberField"]