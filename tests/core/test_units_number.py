"""format_number: plain numbers for people (hand-written expectations)."""
import math

import pytest

from gpuperf_gui.core.units import format_number


@pytest.mark.parametrize("value,text", [
    (2000.0, "2,000"), (1995.26, "1,995"), (295.3, "295"), (12.345, "12.3"), (0.125, "0.125"),
    (1.0, "1"), (0.0, "0"), (1234567.0, "1,234,567"), (-2500.0, "-2,500"), (0.00012, "0.00012"),
    (float("nan"), "n/a"), (None, "n/a"), (math.inf, "n/a"),
])
def test_format_number(value, text):
    assert format_number(value) == text
