"""One name and one definition per trace figure, for every screen that shows it (docs/conventions.md).

A trace of hta/df_index_resolver (rank 1 of 2, V100, NCCL) once showed "exposed communication" as
21.4 %, 35.8 % and 36 % on three screens: two different figures under one name, the second rounded
differently. They are two figures with two names:

* :data:`COMM_KERNELS_EXPOSED` (21.4 % there): communication kernels running while no compute kernel
  does; HTA's and the TensorBoard plugin's "exposed communication". JSON ``comm_exposed_fraction``.
* :data:`COMM_WAIT` (35.8 % there): the compute-idle time the diagnosis gives to communication, GPU
  collectives or host-side ones (gloo, c10d waits). It is the figure the diagnosis, the MFU gap
  bar and the ranks table use. JSON ``idle_causes.communication``.

HTA's idle split (host wait, kernel wait, other) is HTA's definition, not the diagnosis's causes;
wherever it is shown beside our figures it carries :data:`HTA_IDLE_SPLIT`'s name.

Views take the names and tooltips from here and format every fraction with
:func:`format_fraction` (one decimal), so the same figure reads the same everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from gpuperf_gui.core.units import format_percent


@dataclass(frozen=True)
class Term:
    name: str
    definition: str
    json_key: str

    def tooltip(self) -> str:
        return f"{self.name}: {self.definition} (JSON: {self.json_key})"


COMM_WAIT = Term(
    "communication wait",
    "compute-stream idle time spent waiting on communication, share of the step: in each idle gap, from "
    "the first collective running in it (a GPU kernel or a host-side gloo/c10d call) to the last one's "
    "end, and the rest of the gap when the next kernel was already queued behind it; the figure the "
    "diagnosis, the MFU gap bar and the ranks table use",
    "ranks[].idle_causes.communication")
COMM_KERNELS_EXPOSED = Term(
    "exposed comm kernels",
    "time communication kernels (NCCL, RCCL) run while no compute kernel runs, share of the step: their "
    "time minus their overlap with compute (HTA's and the TensorBoard profiler's 'exposed "
    "communication'); 0 for host-side collectives, which launch no kernel",
    "ranks[].comm_exposed_fraction")
HTA_IDLE_SPLIT = Term(
    "idle split (HTA's)",
    "HTA's split of GPU idle time, share of the idle time: host wait (the GPU waits for the host), kernel "
    "wait (gaps under 30 µs between kernels), other; HTA's definitions, not the diagnosis's causes",
    "ranks[].idle_breakdown")

STEP_EXPOSED_COMM = Term(
    "exposed comm (per step)",
    "per step, the larger of the step's exposed comm kernels and the GPU idle while a host-side "
    "collective (gloo, c10d wait) runs, share of the step (never their sum: a host waiting on an NCCL "
    "collective would count twice); the rank x step heatmap's 'exposed comm' colour. Per step it "
    "leaves out the idle after a collective that communication wait counts, so it can read lower",
    "overview ranks[].steps[].comm_exposed_s, host_collective_gpu_idle_s")

TERMS = (COMM_WAIT, COMM_KERNELS_EXPOSED, HTA_IDLE_SPLIT, STEP_EXPOSED_COMM)


def hta_idle_label(cause: str) -> str:
    """The step chart's and tables' label of one part of HTA's idle split ("idle (HTA's): host wait")."""
    return f"idle (HTA's): {cause.replace('_', ' ')}"


format_fraction = partial(format_percent, missing="–")
"""A fraction as every screen writes it: one decimal, a space before the sign ("35.8 %")."""
