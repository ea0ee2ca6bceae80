"""core/units: sizes in bytes as the CLI prints them, lists of whole numbers, positive numbers."""
from __future__ import annotations

import pytest

from gpuperf_gui.core.units import format_bytes, format_ms, format_percent, format_si, parse_positive, parse_whole_list


@pytest.mark.parametrize("value, text", [
    (64 * 1024, "64 KiB"), (131072, "128 KiB"), (1.5 * 1024**2, "1.5 MiB"), (2 * 1024**3, "2 GiB"),
    (512, "512 B"), (3 * 1024**4, "3 TiB"), (None, "n/a"),
])
def test_format_bytes_binary_prefixes(value, text) -> None:
    assert format_bytes(value) == text


def test_rates_take_a_sensible_prefix_never_a_fraction_of_tera() -> None:
    assert format_si(9e9, "FLOP/s") == "9 GFLOP/s"        # not "0.009 TFLOP/s"
    assert format_si(214e9, "FLOP/s") == "214 GFLOP/s"


@pytest.mark.parametrize("text, expected", [
    ("1024,4096", (1024, 4096)), (" 256 ; 512  1024 ", (256, 512, 1024)), ("", ()), ("4k", (4000,)),
])
def test_parse_whole_list(text, expected) -> None:
    assert parse_whole_list(text) == expected


@pytest.mark.parametrize("text", ["64,abc", "0", "-4", "4096.5", "nan"])
def test_parse_whole_list_rejects_with_the_field_name(text) -> None:
    with pytest.raises(ValueError, match=r"^--sizes must be whole numbers like 1024,4096"):
        parse_whole_list(text, "--sizes")


def test_parse_positive() -> None:
    assert parse_positive("1e12") == 1e12 and parse_positive("268_435_456", whole=True) == 268435456
    for bad in ("0", "-1", "inf", "abc"):
        with pytest.raises(ValueError):
            parse_positive(bad)
    with pytest.raises(ValueError):
        parse_positive("4096.7", whole=True)
    with pytest.raises(ValueError):
        parse_positive("1e308", whole=True, maximum=2**40)


def test_format_clock_minutes_and_seconds() -> None:
    from gpuperf_gui.core.units import format_clock

    assert [format_clock(s) for s in (None, -3, 0.4, 59.6, 125, 3600)] == ["0:00", "0:00", "0:00", "1:00",
                                                                          "2:05", "60:00"]


@pytest.mark.parametrize("value, text", [
    (2e9, "2 GB"), (512e6, "512 MB"), (12_600, "12.6 kB"), (16 * 10**9, "16 GB"), (999, "999 bytes"),
    (1.5e12, "1.5 TB"), (None, "n/a"),
])
def test_format_bytes_decimal_prefixes_as_budgets_are_typed(value, text) -> None:
    assert format_bytes(value, decimal=True) == text


@pytest.mark.parametrize("fraction, kwargs, text", [
    (0.1234, {}, "12.3 %"), (1.0, {}, "100.0 %"), (0.125, {"decimals": 0, "space": False}, "12%"),
    (0.0, {"space": False}, "0.0%"), (None, {}, "n/a"), (None, {"missing": "-"}, "-"),
    (float("nan"), {"missing": "-"}, "-"), (-0.05, {}, "-5.0 %"),
])
def test_format_percent(fraction, kwargs, text) -> None:
    assert format_percent(fraction, **kwargs) == text


@pytest.mark.parametrize("seconds, kwargs, text", [
    (0.01234, {}, "12.34 ms"), (1.5, {}, "1500.00 ms"), (0.0801234, {"decimals": 3, "unit": False}, "80.123"),
    (None, {"missing": "-"}, "-"), (float("inf"), {}, "n/a"),
])
def test_format_ms(seconds, kwargs, text) -> None:
    assert format_ms(seconds, **kwargs) == text
