"""Python's full garbage collections kept out of the frames while a trace is on screen.

A full collection walks every container object the process holds: ~80 k of them once the window
is up, ~30 ms of CPU on the 2-core development machine, in whatever frame the allocation count
happens to trigger it (more than the 16 ms a frame may take). Once a trace is shown the objects
then alive (the window, the trace's panels and lanes) are moved out of the collector's reach
(:func:`gc.freeze`), so a later full collection walks only what was made since; opening the next
trace hands them back (:func:`gc.unfreeze`), so what the old trace leaves in reference cycles is
collected as before, during the load. Both calls are O(1).
"""
from __future__ import annotations

import gc


def hold() -> None:
    """A trace is shown: what is alive now is left out of later collections."""
    gc.freeze()


def release() -> None:
    """A new trace loads: every object is the collector's again."""
    gc.unfreeze()
