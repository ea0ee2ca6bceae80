"""One memory budget for loading traces: what a load may use, checked before and while it reads.

The reader (:mod:`.source`) counts the decompressed bytes and the events they hold as it streams
them, and asks :meth:`MemoryBudget.check` whether decoding that much would fit. The cost model is
the decoder's own (:func:`.decode.estimated_load_bytes`), so a faster or leaner decoder changes
only that function. A load that would not fit is refused early, with a message that names the
budget and how to raise it; peak memory of a load stays under the budget plus a fixed overhead
(the interpreter, numpy and the decoder's modules).

>>> MemoryBudget(2_000_000_000).describe()
'2 GB'
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from .model import TraceFormatError

DEFAULT_MEMORY_BUDGET_BYTES = 2_000_000_000
"""Default memory budget of one load (a file, or a folder of ranks): 2 GB."""
MIN_MEMORY_BUDGET_BYTES = 16_000_000
"""Smallest budget accepted (16 MB): below it not even a small trace loads."""
MAX_MEMORY_BUDGET_BYTES = 10**15
"""Largest budget accepted (1 PB): anything above is a typo, not a machine."""
HOW_TO_RAISE = ("raise it with the --memory-budget option (e.g. --memory-budget 8GB), or in the window "
                "with File ▸ Trace memory budget…")


class MemoryBudgetError(TraceFormatError):
    """Loading would need more memory than the budget allows (the message says how much)."""


def format_bytes(n: float) -> str:
    """Bytes in decimal units, 3 significant digits: ``2 GB``, ``512 MB``, ``12.6 kB``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


@dataclass(frozen=True)
class MemoryBudget:
    """The most memory one load may use, in bytes (validated on creation)."""

    limit_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES

    def __post_init__(self) -> None:
        if isinstance(self.limit_bytes, bool) or not isinstance(self.limit_bytes, int):
            raise ValueError(f"memory budget must be a whole number of bytes, not {self.limit_bytes!r}")
        if not MIN_MEMORY_BUDGET_BYTES <= self.limit_bytes <= MAX_MEMORY_BUDGET_BYTES:
            raise ValueError(f"memory budget {format_bytes(self.limit_bytes)} is outside "
                             f"{format_bytes(MIN_MEMORY_BUDGET_BYTES)}..{format_bytes(MAX_MEMORY_BUDGET_BYTES)}")

    @classmethod
    def of(cls, value: MemoryBudget | int | None) -> MemoryBudget:
        """A budget from a budget, a byte count, or None (the default)."""
        if isinstance(value, MemoryBudget):
            return value
        return cls(DEFAULT_MEMORY_BUDGET_BYTES if value is None else value)

    def describe(self) -> str:
        return format_bytes(self.limit_bytes)

    def share(self, parts: int) -> MemoryBudget:
        """The budget of one of ``parts`` loads running at once (never below the minimum)."""
        return MemoryBudget(max(MIN_MEMORY_BUDGET_BYTES, self.limit_bytes // max(1, parts)))

    def check(self, path: Path | str, need_bytes: float, what: str) -> None:
        """Refuse (:class:`MemoryBudgetError`) when ``need_bytes`` is over the budget."""
        if need_bytes > self.limit_bytes:
            self.refuse(path, need_bytes, what)

    def refuse(self, path: Path | str, need_bytes: float, what: str) -> NoReturn:
        raise MemoryBudgetError(
            f"{path}: {what} would need about {format_bytes(need_bytes)} of memory, over the "
            f"{self.describe()} memory budget; {HOW_TO_RAISE}")
