"""Small helpers shared by the subcommands: JSON out, errors out, SI formatting."""

from __future__ import annotations

import json
import sys
from typing import Any

from gpuperf_gui.core.units import format_si


def print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, allow_nan=False))


def fail(message: str) -> int:
    """One line on stderr and exit status 2."""
    print(f"gpuperf: error: {message}", file=sys.stderr)
    return 2


si = format_si
