"""The signature registry: one module per signature, each complete, the diagnosis built from them."""
from __future__ import annotations

from importlib import import_module

from gpuperf_gui.core.mfu_gap import CAUSE_LABELS
from gpuperf_gui.core.trace.diagnosis import diagnose
from gpuperf_gui.core.trace.diagnosis.signatures import _MODULES, REGISTRY, _rules
from gpuperf_gui.core.trace.synthetic.synth import SCENARIO_SIGNATURE


def test_each_module_declares_one_complete_signature() -> None:
    for name in _MODULES:
        sig = import_module(f"gpuperf_gui.core.trace.diagnosis.signatures.{name}").SIGNATURE
        assert sig.name == name and REGISTRY[name] is sig
        assert sig.label and sig.hint and sig.fix.endswith(".")
        assert SCENARIO_SIGNATURE[name] == name   # the synthetic scenario of its name shows it
        assert sig.gap_cause is None or sig.gap_cause in CAUSE_LABELS
        for key, threshold in sig.thresholds.items():
            assert len(threshold.reason) > 10, key


def test_thresholds_are_defined_once_and_all_reach_the_diagnosis() -> None:
    keys = list(_rules.THRESHOLDS) + [k for sig in REGISTRY.values() for k in sig.thresholds]
    assert len(keys) == len(set(keys))
    assert set(diagnose.THRESHOLDS) == set(keys)
    assert diagnose.FIXES == {name: sig.fix for name, sig in REGISTRY.items()}
    assert set(REGISTRY) == set(SCENARIO_SIGNATURE.values())
