"""The signature registry: what each diagnosis outcome is, one module per signature.

A signature module (``launch_bound.py``, ``comm_bound.py``, ...) holds everything the program knows
about that signature: its thresholds with the reason for each value, the rule that finds it in one
rank's analysis (``finding``), its evidence lines and fix, the label and teaching hint the window
shows, the heatmap metric that tells it and the MFU gap cause it feeds (the synthetic scenario of its
name shows it). Each module ends with ``SIGNATURE = Signature(...)``; :data:`REGISTRY` lists them in the
order the diagnosis reports them. Views read label, hint and metric from here (colours stay in the
views, and a view test checks every signature has one). Adding a signature is one module here, its
name in :data:`_MODULES`, and its scenario in :mod:`..synth`. See docs/signatures.md.
"""
from __future__ import annotations

from importlib import import_module

from ._base import Signature, Threshold

_MODULES = ("healthy", "comm_bound", "data_starved", "host_sync_bound", "host_bound", "launch_bound", "memory_bound",
            "pipeline_bubble", "straggler", "inconclusive")
"""The order rules are tried in (a tie in loss keeps it) and outcomes listed in."""

REGISTRY: dict[str, Signature] = {}
for _name in _MODULES:
    _sig: Signature = import_module(f"{__name__}.{_name}").SIGNATURE
    REGISTRY[_sig.name] = _sig

SIGNATURES: tuple[str, ...] = tuple(REGISTRY)
"""Every diagnosis outcome, in the registry's order. ``straggler`` is a job-level verdict (several
ranks); ``inconclusive``: no GPU activity, too little evidence, or a GPU idle with no dominant cause."""


def thresholds() -> dict[str, float]:
    """Every signature's thresholds (and the shared ones), name -> value."""
    from . import _rules

    out = {k: t.value for k, t in _rules.THRESHOLDS.items()}
    for sig in REGISTRY.values():
        out.update({k: t.value for k, t in sig.thresholds.items()})
    return out


def label(signature: str) -> str:
    """The signature's name as a person reads it ("Launch-bound"); unknown names as given."""
    sig = REGISTRY.get(signature)
    return sig.label if sig else signature


__all__ = ["REGISTRY", "SIGNATURES", "Signature", "Threshold", "label", "thresholds"]
