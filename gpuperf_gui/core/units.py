"""Formatting SI quantities for people (JSON keeps raw SI numbers)."""

from __future__ import annotations

import math

_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SMALL = ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def format_si(value: float | None, unit: str, digits: int = 3) -> str:
    """1.234e15, "FLOP/s" -> "1.23 PFLOP/s"; 2.5e-5, "s" -> "25 µs"; 999.7e12 -> "1 PFLOP/s"."""
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(float(f"{value:.{digits}g}"))  # rounded first, so 999.7 T reads as 1 P
    for factor, prefix in _PREFIXES:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    if unit == "s" and 0 < magnitude < 1:
        for factor, prefix in _SMALL:
            if magnitude >= factor:
                return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def format_duration_us(duration_us: float | None) -> str:
    """A trace duration for people: 0.85 µs, 12.3 µs, 4.56 ms, 1.23 s."""
    if duration_us is None or not math.isfinite(duration_us):
        return "n/a"
    return format_si(duration_us * 1e-6, "s") if duration_us else "0 s"


def json_safe(obj: object) -> object:
    """A copy with NaN and ±inf floats replaced by None: JSON has no such numbers, and the CLI
    prints with ``allow_nan=False``. Walks dicts, lists and tuples (tuples become lists)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: json_safe(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(value) for value in obj]
    return obj
