"""Every signature of the registry has a colour in the views and a label the window shows."""
from __future__ import annotations

from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.views.mfu.gap_bar import SLICE_COLOURS
from gpuperf_gui.views.trace.heatmap import METRIC_OF_SIGNATURE
from gpuperf_gui.views.trace.panels import SIGNATURE_COLOURS, SIGNATURE_TEXT


def test_every_signature_has_a_colour_and_its_registry_label() -> None:
    assert set(SIGNATURE_COLOURS) == set(REGISTRY)
    for name, sig in REGISTRY.items():
        assert SIGNATURE_TEXT[name] == (sig.label, SIGNATURE_COLOURS[name])


def test_heatmap_metrics_and_gap_causes_come_from_the_registry() -> None:
    from gpuperf_gui.core.trace.analysis.overview import HEATMAP_METRICS

    for name, sig in REGISTRY.items():
        assert METRIC_OF_SIGNATURE.get(name) == sig.heatmap_metric
        if sig.heatmap_metric:
            assert sig.heatmap_metric in HEATMAP_METRICS
        if sig.gap_cause:   # the MFU tab's bar draws the cause in its own colour
            assert sig.gap_cause in SLICE_COLOURS


def test_a_close_call_headline_names_both_labels() -> None:
    from gpuperf_gui.core.trace.session.loaded_trace import DiagnosisView
    from gpuperf_gui.views.trace.panels import diagnosis_html

    d = DiagnosisView("comm_bound", 0.29, ["close call: ..."], "fix", [], [], [],
                      close_call=["comm_bound", "launch_bound"])
    assert f"{REGISTRY['comm_bound'].label} ~ {REGISTRY['launch_bound'].label}, 29 %</h2>" in diagnosis_html(d)


def test_also_seen_names_the_secondary_signatures_by_their_labels() -> None:
    from gpuperf_gui.core.trace.session.loaded_trace import DiagnosisView
    from gpuperf_gui.views.trace.panels import diagnosis_html

    d = DiagnosisView("straggler", 0.9, ["rank 1 arrives late"], "fix", ["host_bound", "comm_bound"], [], [])
    html = diagnosis_html(d)
    assert f"{REGISTRY['host_bound'].label}, {REGISTRY['comm_bound'].label}</p>" in html
