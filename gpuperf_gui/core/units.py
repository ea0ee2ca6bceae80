"""Formatting SI quantities for people (JSON keeps raw SI numbers)."""

from __future__ import annotations

import math
import re

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


def format_clock(seconds: float | None) -> str:
    """A time left as minutes:seconds ("2:05"), for progress lines (None or negative: "0:00")."""
    whole = max(0, int(round(seconds or 0)))
    return f"{whole // 60}:{whole % 60:02d}"


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


# --------------------------------------------------------------------------------------------------
# Numbers people type ("124M", "6.3e9", "1,024") and counts/durations written back for them.
# One parser and one formatter per kind of quantity: the MFU tab and `gpuperf mfu` both use these.

_COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12, "p": 1e15}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([kmgbtp]?)\s*$", re.I)


def parse_quantity(text: str) -> float:
    """Parse ``"124M"``, ``"1.5B"``, ``"6e9"``, ``"16_384"``, ``"1,024"`` into a finite float.

    Suffixes k, M, G or B (billion), T, P are decimal. Raises ``ValueError`` on anything else
    (``nan``, ``inf`` and numbers that overflow to inf included).
    """
    cleaned = text.replace("_", "").replace(",", "").replace(" ", "")
    match = _QUANTITY.match(cleaned)
    if not match:
        raise ValueError(f"not a number: {text!r}")
    value = float(match.group(1)) * _COUNT_SUFFIXES[match.group(2).lower()]
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def parse_quantity_list(text: str) -> list[float]:
    """Numbers separated by commas, semicolons, spaces or newlines (``"0.21, 0.2 0.2"``)."""
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("no numbers given")
    return [parse_quantity(p) for p in parts]


def format_number(value: float | None) -> str:
    """A plain number for people: ``2,000`` (not 2e+03), ``12.3``, ``0.125``; no exponent below 1e15.

    From 100 up: whole, with thousands separators; below: three significant digits."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(value) >= 1e15:
        return f"{value:.3g}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    text = f"{value:.3g}"
    return text if "e" not in text else f"{value:.6f}".rstrip("0").rstrip(".")


def format_count(value: float) -> str:
    """A count of parameters or tokens the ML way: ``124.4M``, ``8.03B``, ``1.2T`` (no unit, no
    space, four digits): the form :func:`parse_quantity` reads back."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{suffix}"
    return f"{value:.4g}"


def format_duration_s(seconds: float | None) -> str:
    """A duration in seconds at a glance: ``"52.3 ms"``, ``"4.8 s"``, ``"4.1 h"``, ``"12.5 days"``.

    Below two minutes it is :func:`format_si` (µs, ms, s); above, minutes, hours, days, years."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    if seconds < 120:
        return format_si(seconds, "s")
    for limit, scale, unit in ((7200, 60, "min"), (3 * 86400, 3600, "h"), (365 * 86400, 86400, "days")):
        if seconds < limit:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / (365.25 * 86400):.3g} years"


# --------------------------------------------------------------------------------------------------
# Sizes in bytes (binary prefixes, as `gpuperf bench` prints them), percentages, milliseconds,
# and lists of whole numbers.

_BINARY = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_DECIMAL = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))


def format_bytes(value: float | None, *, decimal: bool = False) -> str:
    """A size in bytes with a binary prefix: ``"256 KiB"``, ``"1.5 MiB"``, ``"2 GiB"``, ``"512 B"``
    (whole numbers without decimals, else one decimal; three significant digits at most).
    ``decimal``: SI prefixes and three significant digits, as memory budgets are typed
    (``--memory-budget 16GB``, :func:`parse_bytes`): ``"2 GB"``, ``"512 MB"``, ``"12.6 kB"``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if decimal:
        for unit, scale in _DECIMAL:
            if abs(value) >= scale:
                return f"{value / scale:.3g} {unit}"
        return f"{int(value)} bytes"
    for unit, scale in _BINARY:
        if abs(value) >= scale:
            number = value / scale
            if number == int(number):
                return f"{number:.0f} {unit}"
            return f"{number:.1f} {unit}" if abs(number) < 100 else f"{number:.0f} {unit}"
    return f"{value:.0f} B"


def format_percent(fraction: float | None, decimals: int = 1, *, missing: str = "n/a", space: bool = True) -> str:
    """A fraction as a percentage with fixed decimals: 0.1234 -> ``"12.3 %"`` (``space`` False:
    ``"12.3%"``, for table columns and compact labels); None or not finite: ``missing``."""
    if fraction is None or not math.isfinite(fraction):
        return missing
    return f"{100 * fraction:.{decimals}f}{' ' if space else ''}%"


def format_ms(seconds: float | None, decimals: int = 2, *, missing: str = "n/a", unit: bool = True) -> str:
    """A duration in milliseconds with fixed decimals: 0.01234 -> ``"12.34 ms"`` (``unit`` False:
    ``"12.34"``, under a column headed ms). For figures read side by side (before and after, a
    column of step times), where one unit compares better than :func:`format_duration_s`'s
    scaling; None or not finite: ``missing``."""
    if seconds is None or not math.isfinite(seconds):
        return missing
    return f"{1e3 * seconds:.{decimals}f}" + (" ms" if unit else "")


def parse_whole_list(text: str, what: str = "sizes") -> tuple[int, ...]:
    """``"1024, 4096"`` (commas, semicolons or spaces) -> (1024, 4096); empty text -> ().

    Each part must be a positive whole number (``"4k"`` is 4000, as :func:`parse_quantity` reads
    it); otherwise ``ValueError("<what> must be whole numbers like 1024,4096 (not 'x')")``."""
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    values = []
    for part in parts:
        try:
            value = parse_quantity(part)
        except ValueError:
            value = math.nan
        if not (value > 0 and value == int(value)):
            raise ValueError(f"{what} must be whole numbers like 1024,4096 (not {part!r})")
        values.append(int(value))
    return tuple(values)


def parse_positive(text: str, whole: bool = False, maximum: float | None = None) -> float:
    """A positive finite number people typed (``"1e12"``, ``"268_435_456"``, ``"4k"``); ``whole``:
    also a whole number. ``ValueError`` with a plain message otherwise."""
    value = parse_quantity(text)
    if not value > 0:
        raise ValueError(f"must be positive, got {text!r}")
    if whole and value != int(value):
        raise ValueError(f"must be a whole number, got {text!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"must be at most {maximum:.3g}, got {text!r}")
    return value


def parse_bytes(text: str) -> int:
    """``"2GB"``, ``"1.5 GiB"``, ``"512M"``, ``"4e9"`` -> bytes. Raises ValueError with the reason."""
    s = text.strip().replace("_", "")
    units = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
             "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    i = len(s)
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    number, unit = s[:i].strip(), s[i:].lower()
    if not number or unit not in units:
        if not number:
            raise ValueError(f"{text!r} is not a size (examples: 2GB, 512MB, 4e9)")
        raise ValueError(f"{text!r}: unknown unit {s[i:]!r} (use bytes, MB, GB, GiB, ...)")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a size (examples: 2GB, 512MB, 4e9)") from None
    if not value == value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r} is not a finite size")
    return int(value)
