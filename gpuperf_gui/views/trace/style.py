"""Colours and number formats of the Trace tab (presentation only, no metrics)."""

from __future__ import annotations

import math

from PySide6.QtGui import QColor

from gpuperf_gui.core.trace.model.host_sync import GAP_KIND_SIGNATURE, GAP_KINDS
from gpuperf_gui.core.trace.model.lanes import CPU_COLOR_BASES, SHADES
from gpuperf_gui.core.trace.vocabulary.kernel_classes import KERNEL_CLASSES
from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.core.units import format_duration_us  # noqa: F401 - the views import it from here
from gpuperf_gui.views.trace.lane_item import IDLE_COLOR, Palette

SIGNATURE_COLOURS = {
    "healthy": "#2e7d32",
    "launch_bound": "#c62828",
    "comm_bound": "#ad1457",
    "data_starved": "#e65100",
    "host_sync_bound": "#8d6e63",
    "host_bound": "#00838f",
    "memory_bound": "#b8860b",
    "pipeline_bubble": "#6a1b9a",
    "straggler": "#d84315",
    "inconclusive": "#546e7a",
}
"""The colour per signature, wherever one is drawn: the verdict, the lanes' gaps of that kind, the
heatmap metric that tells it (labels and hints come from the registry; a test checks every
signature has a colour)."""
GAP_KIND_COLORS = {kind: SIGNATURE_COLOURS[GAP_KIND_SIGNATURE[kind]] for kind in GAP_KINDS[1:]}
"""Idle gaps of a kind other than plain idle, in their signature's colour (core/trace/model/host_sync.py)."""
IDLE_HEX = IDLE_COLOR.name()   # the lanes' plain idle, without its alpha

# base colours: CPU categories, then GPU kernel classes, in core's colour-base order
# (core/trace/model/lanes.py: CPU_COLOR_BASES, then KERNEL_CLASSES)
CPU_BASES: tuple[tuple[str, str], ...] = (
    ("cpu_op", "#4e79a7"),            # ATen ops (2021 dialect: Operator)
    ("user_annotation", "#8e6cc9"),   # record_function ranges, ProfilerStep#N
    ("runtime", "#f28e2b"),           # cuda_runtime / cuda_driver / hip* calls
    ("python", "#86a873"),            # python_function
    ("other", "#9aa3ad"),
)
GPU_BASES: tuple[tuple[str, str], ...] = (
    ("gemm", "#2e8b57"),
    ("attention", "#17a2a2"),
    ("elementwise", "#e0a100"),
    ("communication", "#c2185b"),
    ("copy", "#8c6d31"),
    ("other", "#6b7fa8"),
)
assert tuple(k for k, _ in CPU_BASES) == CPU_COLOR_BASES and tuple(k for k, _ in GPU_BASES) == KERNEL_CLASSES
KERNEL_CLASS_COLORS = dict(GPU_BASES)
IDLE_CAUSE_COLORS = {"host_wait": IDLE_HEX, "kernel_wait": "#f08c8c", "other": "#c9c9c9"}


def make_palette() -> Palette:
    """Palette whose key is ``base * SHADES + shade`` over CPU_BASES + GPU_BASES."""
    colors: list[QColor] = []
    family: list[int] = []
    for b, (_, hex_color) in enumerate(CPU_BASES + GPU_BASES):
        base = QColor(hex_color)
        for shade in range(SHADES):
            colors.append(base.lighter(118) if shade == 0 else base if shade == 1 else base.darker(118))
            family.append(b * SHADES + 1)
    return Palette.from_colors(colors, family, [QColor(GAP_KIND_COLORS[k]) for k in GAP_KINDS[1:]])


def legend_entries() -> list[tuple[str, str]]:
    """(label, hex colour) pairs for a legend."""
    labels = {"cpu_op": "CPU op", "user_annotation": "annotation", "runtime": "launch / runtime",
              "python": "python", "other": "other (CPU)", "gemm": "GEMM / conv",
              "attention": "attention", "elementwise": "elementwise / norm",
              "communication": "communication", "copy": "copy / memset", "other_gpu": "other kernel"}
    out = [(labels[k], c) for k, c in CPU_BASES[:4]]
    out += [(labels[k] if k != "other" else labels["other_gpu"], c) for k, c in GPU_BASES]
    out += [(gap_kind_label(k), GAP_KIND_COLORS[k]) for k in GAP_KINDS[1:]]
    return out


def legend_html() -> str:
    """The Trace tab's legend: the colours of :func:`legend_entries`, then the idle, folded and late-rank
    marks (the late rank's colour and label: the straggler signature's)."""
    items = "".join(f"<span style='color:{c}'>■</span>&nbsp;{name}&nbsp;&nbsp; " for name, c in legend_entries())
    return (f"{items}<span style='color:{IDLE_HEX}'>■</span>&nbsp;GPU idle ≥ threshold&nbsp;&nbsp; "
            f"<span style='color:#5a5f6a'>■</span>&nbsp;folded: darker, opacity = busy fraction&nbsp;&nbsp; "
            f"<span style='color:{SIGNATURE_COLOURS['straggler']}'>▌</span>&nbsp;{REGISTRY['straggler'].label}")


def gap_kind_label(kind: str) -> str:
    """The legend's words for idle gaps of ``kind`` ("Host-sync-bound idle": the GPU idle after a
    blocking sync), named by its signature's registry label."""
    return f"{REGISTRY[GAP_KIND_SIGNATURE[kind]].label} idle"


def gap_kind_hint(kind: str) -> str:
    """What idle gaps of ``kind`` look like in the lanes: the registry's hint of its signature."""
    return REGISTRY[GAP_KIND_SIGNATURE[kind]].hint


def format_percent(fraction: float | None) -> str:
    if fraction is None or not math.isfinite(fraction):
        return "–"
    return f"{100.0 * fraction:.1f} %"


def time_unit_for(span_us: float) -> tuple[str, float]:
    """(unit, µs per unit) for an axis whose ticks are ``span_us`` apart."""
    a = abs(span_us)
    if a >= 1e5:
        return "s", 1e6
    if a >= 100.0:
        return "ms", 1e3
    if a >= 0.1:
        return "µs", 1.0
    return "ns", 1e-3
