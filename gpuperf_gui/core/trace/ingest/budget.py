"""One memory budget for loading traces: what a load may use, checked before and while it reads.

Each decoder asks :meth:`MemoryBudget.check`, after every chunk it reads, whether its own cost model
(:func:`.decode.estimated_load_bytes`, :func:`.stream_decode.streamed_load_bytes`) fits. A load that
would not fit is refused early, with a message that names the budget and how to raise it; peak
memory of a load stays under the budget plus a fixed overhead (the interpreter, numpy, the modules).

>>> MemoryBudget(2_000_000_000).describe()
'2 GB'
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ...units import format_bytes
from ..model.trace_model import TraceFormatError

DEFAULT_MEMORY_BUDGET_BYTES = 2_000_000_000
"""Default memory budget of one load (a file, or a folder of ranks): 2 GB."""
MIN_MEMORY_BUDGET_BYTES = 16_000_000
"""Smallest budget accepted (16 MB): below it not even a small trace loads."""
MAX_MEMORY_BUDGET_BYTES = 10**15
"""Largest budget accepted (1 PB): anything above is a typo, not a machine."""
WINDOW_EVENT_BYTES = 60.0
"""Memory per event that the window's process and the transfer file (``/dev/shm``) hold while the
helper interpreter loads for the window (:meth:`MemoryBudget.for_window`), unseen by the helper's
own cost model: the tree's peak grows 200 B an event, the helper's 140 B (benchmarks/trace_tab_scale.py)."""
HOW_TO_RAISE = ("raise it with the --memory-budget option (e.g. --memory-budget 8GB), or in the window "
                "with File ▸ Trace memory budget…")


class MemoryBudgetError(TraceFormatError):
    """Loading would need more memory than the budget allows (the message says how much)."""


@dataclass(frozen=True)
class MemoryBudget:
    """The most memory one load may use, in bytes (validated on creation)."""

    limit_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    event_bytes_elsewhere: float = 0.0
    """Memory per event loaded that other processes of the tree hold (the window, for a load in its
    helper): counted with the loading process's own in :meth:`check` (``events``)."""

    def __post_init__(self) -> None:
        if isinstance(self.limit_bytes, bool) or not isinstance(self.limit_bytes, int):
            raise ValueError(f"memory budget must be a whole number of bytes, not {self.limit_bytes!r}")
        if not MIN_MEMORY_BUDGET_BYTES <= self.limit_bytes <= MAX_MEMORY_BUDGET_BYTES:
            low, high = (format_bytes(b, decimal=True) for b in (MIN_MEMORY_BUDGET_BYTES, MAX_MEMORY_BUDGET_BYTES))
            raise ValueError(f"memory budget {format_bytes(self.limit_bytes, decimal=True)} is outside {low}..{high}")

    @classmethod
    def of(cls, value: MemoryBudget | int | None) -> MemoryBudget:
        """A budget from a budget, a byte count, or None (the default)."""
        if isinstance(value, MemoryBudget):
            return value
        return cls(DEFAULT_MEMORY_BUDGET_BYTES if value is None else value)

    def describe(self) -> str:
        return format_bytes(self.limit_bytes, decimal=True)

    def share(self, parts: int) -> MemoryBudget:
        """The budget of one of ``parts`` loads running at once (never below the minimum)."""
        return replace(self, limit_bytes=max(MIN_MEMORY_BUDGET_BYTES, self.limit_bytes // max(1, parts)))

    def for_window(self) -> MemoryBudget:
        """This budget for a load in the window's helper interpreter: the window's share of each
        event (:data:`WINDOW_EVENT_BYTES`) counts too, so the budget holds for the process tree."""
        return replace(self, event_bytes_elsewhere=WINDOW_EVENT_BYTES)

    def tree_bytes(self, need_bytes: float, events: int = 0) -> float:
        """What the process tree needs: the loading process's ``need_bytes`` plus the other
        processes' share of ``events`` events."""
        return need_bytes + self.event_bytes_elsewhere * events

    def check(self, path: Path | str, need_bytes: float, what: str, events: int = 0) -> None:
        """Refuse (:class:`MemoryBudgetError`) when the tree's need (:meth:`tree_bytes`) is over the budget."""
        total = self.tree_bytes(need_bytes, events)
        if total > self.limit_bytes:
            raise MemoryBudgetError(
                f"{path}: {what} would need about {format_bytes(total, decimal=True)} of memory, over the "
                f"{self.describe()} memory budget; {HOW_TO_RAISE}")
