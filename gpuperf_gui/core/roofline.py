"""Roofline maths: attainable rate, ridge point, bound, efficiency bands, operation models.

attainable(AI) = min(peak, bandwidth x AI), ridge = peak / bandwidth (Williams, Waterman & Patterson,
CACM 2009). Units are SI: FLOP/s, bytes/s, FLOP/byte, seconds.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from typing import Iterable, Literal

Bound = Literal["memory", "compute"]

BYTES_PER_ELEMENT = {
    "fp64": 8,
    "fp64_tensor": 8,
    "fp32": 4,
    "tf32": 4,  # stored as fp32
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
}

# Lower edges of the efficiency bands (fraction of the roof at the point's AI).
EFFICIENCY_BANDS: tuple[tuple[float, str], ...] = (
    (0.90, "essentially optimal"),
    (0.70, "very strong"),
    (0.50, "common"),
    (0.30, "acceptable for a non-dominant kernel"),
    (0.10, "weak"),
    (0.0, "poor"),
)


def ridge_flops_per_byte(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    return peak_flops_per_s / bandwidth_bytes_per_s


def attainable_flops_per_s(
    peak_flops_per_s: float, bandwidth_bytes_per_s: float, ai_flops_per_byte: float
) -> float:
    return min(peak_flops_per_s, bandwidth_bytes_per_s * ai_flops_per_byte)


def bound(peak_flops_per_s: float, bandwidth_bytes_per_s: float, ai_flops_per_byte: float) -> Bound:
    """Memory-bound below the ridge, compute-bound at or above it."""
    ridge = ridge_flops_per_byte(peak_flops_per_s, bandwidth_bytes_per_s)
    return "memory" if ai_flops_per_byte < ridge else "compute"


ABOVE_ROOF_TOLERANCE = 1.05  # timer noise; beyond this the inputs (time, FLOPs, bytes) are wrong
ABOVE_ROOF = "above the roof: impossible, check the time, FLOPs and bytes"


def efficiency_band(fraction_of_roof: float) -> str:
    if fraction_of_roof > ABOVE_ROOF_TOLERANCE:
        return ABOVE_ROOF
    for lower, label in EFFICIENCY_BANDS:
        if fraction_of_roof > lower or lower == 0.0:
            return label
    return EFFICIENCY_BANDS[-1][1]  # pragma: no cover


def band_threshold(fraction_of_roof: float) -> float:
    """The lower edge of the band ``fraction_of_roof`` falls in (0.9, 0.7, 0.5, 0.3, 0.1 or 0)."""
    for lower, _ in EFFICIENCY_BANDS:
        if fraction_of_roof > lower:
            return lower
    return 0.0


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel or operation: FLOPs and bytes moved, optionally its measured time."""

    label: str
    flops: float
    bytes: float
    seconds: float | None = None
    kind: str = "custom"  # "gemm" | "elementwise" | "custom" | "measured" | "trace"
    device_id: str = ""   # the device it ran on ("" for a point typed in: it belongs under any roof)
    precision: str = ""   # the precision it ran in ("" when unknown or mixed)
    cache_level: str = ""  # a benchmark point whose working set fits in "L1"/"L2"/"L3" (else "")

    def belongs_to(self, device_id: str) -> bool:
        """Whether the point may be judged against ``device_id``'s roof: it ran there, or it is a
        model (typed in, no device)."""
        return not self.device_id or self.device_id == device_id

    @property
    def ai_flops_per_byte(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved_flops_per_s(self) -> float | None:
        return None if not self.seconds else self.flops / self.seconds


def roof_polyline(peak_flops_per_s: float, bandwidth_bytes_per_s: float,
                  ai_range: tuple[float, float]) -> tuple[list[float], list[float]]:
    """The roof as a polyline over ``ai_range`` (FLOP/byte): x and y of its ends and its ridge,
    which is where the line bends (dropped when it lies outside the range)."""
    low, high = ai_range
    ridge = ridge_flops_per_byte(peak_flops_per_s, bandwidth_bytes_per_s)
    xs = [low, *([ridge] if low < ridge < high else []), high]
    return xs, [attainable_flops_per_s(peak_flops_per_s, bandwidth_bytes_per_s, x) for x in xs]


_SHAPES = re.compile(r"\s*\[\[.*\]\]|\s*\[\]")   # a trace op's "Input Dims" list
_NOTE = re.compile(r"\s*\([^()]*\)")                  # "(causal: FLOPs halved)"
_CALLS = re.compile(r"\s(x\d+)$")
_TENSOR = re.compile(r"\[([\d,\s]+)\]")


def _compact_shapes(text: str, tensors: int = 2) -> str:
    """ "[[16384, 1536], [1536, 50304]]" -> "16384×1536·1536×50304" (the first ``tensors`` of
    two or more dimensions: a bias vector or a scalar says little)."""
    dims = [m.group(1).replace(" ", "").split(",") for m in _TENSOR.finditer(text)]
    shown = ["×".join(d) for d in dims if len(d) >= 2][:tensors]
    return "·".join(shown)


def short_label(label: str, max_chars: int = 40) -> str:
    """A point's name for a narrow column: a trace kernel "aten::mm [[16384, 1536], [1536, 50304]] x3"
    becomes "aten::mm 16384×1536·1536×50304 x3" (shapes compacted, notes dropped, the call count
    kept), then cut to ``max_chars`` with an ellipsis in the middle."""
    calls = _CALLS.search(label)
    body = label[: calls.start()] if calls else label
    shapes = _SHAPES.search(body)
    compact = _compact_shapes(shapes.group(0)) if shapes else ""
    name = _NOTE.sub("", _SHAPES.sub("", body)).strip() or body.strip()
    short = " ".join(part for part in (name, compact, calls.group(1) if calls else "") if part)
    if len(short) > max_chars:
        keep = max_chars - 1
        short = short[: (keep + 1) // 2] + "…" + short[len(short) - keep // 2:]
    return short


@dataclass(frozen=True)
class PointAnalysis:
    """A point placed under one roof."""

    point: RooflinePoint
    ai_flops_per_byte: float
    attainable_flops_per_s: float
    bound: Bound
    time_floor_s: float
    achieved_flops_per_s: float | None
    fraction_of_roof: float | None
    band: str | None


def analyse_point(
    point: RooflinePoint, peak_flops_per_s: float, bandwidth_bytes_per_s: float
) -> PointAnalysis:
    ai = point.ai_flops_per_byte
    attainable = attainable_flops_per_s(peak_flops_per_s, bandwidth_bytes_per_s, ai)
    achieved = point.achieved_flops_per_s
    fraction = None if achieved is None else achieved / attainable
    return PointAnalysis(
        point=point,
        ai_flops_per_byte=ai,
        attainable_flops_per_s=attainable,
        bound=bound(peak_flops_per_s, bandwidth_bytes_per_s, ai),
        time_floor_s=time_floor_s(point.flops, point.bytes, peak_flops_per_s, bandwidth_bytes_per_s),
        achieved_flops_per_s=achieved,
        fraction_of_roof=fraction,
        band=None if fraction is None else efficiency_band(fraction),
    )


def time_floor_s(
    flops: float, bytes_moved: float, peak_flops_per_s: float, bandwidth_bytes_per_s: float
) -> float:
    """The fastest the operation can run: max(compute time at peak, memory time at bandwidth)."""
    return max(flops / peak_flops_per_s, bytes_moved / bandwidth_bytes_per_s)


# ---------------------------------------------------------------------------------------------
# Operation models


MAX_DIMENSION = 2**40  # larger sizes overflow the FLOP count's float range in products


def _require_positive(**values: float) -> None:
    for name, value in values.items():
        try:
            ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        except OverflowError:  # an int beyond the float range
            ok = False
        if not ok:
            raise ValueError(f"{name} must be a positive number, got {value!r}")


def _require_dimensions(**values: int) -> None:
    _require_positive(**values)
    for name, value in values.items():
        if value != int(value) or value > MAX_DIMENSION:
            raise ValueError(f"{name} must be a whole number up to {MAX_DIMENSION:.3g}, got {value!r}")


def gemm_point(m: int, k: int, n: int, dtype: str, seconds: float | None = None) -> RooflinePoint:
    """C[m,n] = A[m,k] @ B[k,n]: 2mkn FLOPs; reads A and B and writes C once."""
    _require_dimensions(M=m, K=k, N=n)
    element = BYTES_PER_ELEMENT[dtype]
    return RooflinePoint(
        label=f"GEMM {m}x{k}x{n} {dtype}",
        flops=2.0 * m * k * n,
        bytes=float(element * (m * k + k * n + m * n)),
        seconds=seconds,
        kind="gemm",
    )


ELEMENTWISE_OPS = {
    # name: (FLOPs per element, tensors read, tensors written)
    "add": (1, 2, 1),
    "mul": (1, 2, 1),
    "triad (a + s*b)": (2, 2, 1),
    "relu": (1, 1, 1),
    "copy": (0, 1, 1),
}


def elementwise_point(
    op: str, n: int, dtype: str, seconds: float | None = None
) -> RooflinePoint:
    """Elementwise op over ``n`` elements: vector add in fp16 is N FLOPs and 6N bytes (AI 1/6)."""
    _require_dimensions(N=n)
    flops_per_element, reads, writes = ELEMENTWISE_OPS[op]
    element = BYTES_PER_ELEMENT[dtype]
    return RooflinePoint(
        label=f"{op} n={n} {dtype}",
        flops=float(flops_per_element * n),
        bytes=float(element * (reads + writes) * n),
        seconds=seconds,
        kind="elementwise",
    )


def custom_point(label: str, flops: float, bytes_moved: float, seconds: float | None = None) -> RooflinePoint:
    _require_positive(FLOPs=flops, bytes=bytes_moved)
    if seconds is not None:
        _require_positive(time=seconds)
    return RooflinePoint(label=label or "custom", flops=float(flops), bytes=float(bytes_moved),
                         seconds=seconds, kind="custom")


def square_matmul_balance_dimension(ridge: float, dtype: str) -> float:
    """The n at which an n x n x n GEMM sits on the ridge.

    AI(n) = 2n^3 / (3 n^2 e) = 2n / (3e) for e bytes per element; in elements (e counted as one
    "word") this is the textbook AI = n/3 per byte at 2-byte types. Solve 2n / (3e) = ridge.
    """
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(BYTES_PER_ELEMENT)}")
    return 1.5 * BYTES_PER_ELEMENT[dtype] * ridge


@dataclass(frozen=True)
class Movement:
    """How a point moved between a before and an after measurement."""

    ai_ratio: float
    rate_ratio: float | None
    direction: str  # "horizontal", "vertical", "diagonal", "none"
    explanation: str


def classify_movement(before: RooflinePoint, after: RooflinePoint, tolerance: float = 0.05) -> Movement:
    """Horizontal: arithmetic intensity changed (fusion, reuse, a smaller dtype). Vertical: same AI,
    a different rate (less overhead, better occupancy)."""
    ai_ratio = after.ai_flops_per_byte / before.ai_flops_per_byte
    rate_before, rate_after = before.achieved_flops_per_s, after.achieved_flops_per_s
    rate_ratio = None if rate_before is None or rate_after is None else rate_after / rate_before
    ai_moved = abs(math.log(ai_ratio)) > math.log1p(tolerance)
    rate_moved = rate_ratio is not None and abs(math.log(rate_ratio)) > math.log1p(tolerance)
    if ai_moved and rate_moved:
        direction, text = "diagonal", "arithmetic intensity and rate both changed"
    elif ai_moved:
        direction, text = "horizontal", "arithmetic intensity changed (data movement per FLOP)"
    elif rate_moved:
        direction, text = "vertical", "same arithmetic intensity, different rate (overhead/efficiency)"
    else:
        direction, text = "none", "no significant movement"
    return Movement(ai_ratio, rate_ratio, direction, text)


def points_to_csv(analyses: Iterable[tuple[str, PointAnalysis]]) -> str:
    """CSV of placed points: one row per (roof label, analysis). SI units in the headers."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([
        "label", "kind", "roof", "flops", "bytes", "seconds", "ai_flops_per_byte",
        "attainable_flops_per_s", "achieved_flops_per_s", "fraction_of_roof", "band", "bound",
        "time_floor_s",
    ])
    for roof, a in analyses:
        p = a.point
        writer.writerow([
            p.label, p.kind, roof, p.flops, p.bytes, "" if p.seconds is None else p.seconds,
            a.ai_flops_per_byte, a.attainable_flops_per_s,
            "" if a.achieved_flops_per_s is None else a.achieved_flops_per_s,
            "" if a.fraction_of_roof is None else a.fraction_of_roof,
            a.band or "", a.bound, a.time_floor_s,
        ])
    return out.getvalue()
