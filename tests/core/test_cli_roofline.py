"""`gpuperf gpus` and `gpuperf roofline` JSON contracts (docs/cli.md)."""

from __future__ import annotations

import json

import pytest

from gpuperf_gui.cli import main


@pytest.fixture(autouse=True)
def _no_saved_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_gpus_json_lists_dense_peaks(capsys):
    payload = run_json(capsys, "gpus", "--json")
    by_id = {d["id"]: d for d in payload["devices"]}
    assert by_id["h200"]["peak_flops_per_s"]["bf16"] == pytest.approx(989.4e12)
    assert by_id["h200"]["memory_bandwidth_bytes_per_s"] == pytest.approx(4.8e12)
    assert by_id["h100-sxm"]["ridge_flops_per_byte"]["bf16"] == pytest.approx(295.3, abs=0.1)
    assert by_id["cpu"]["peak_flops_per_s"] == {}


def test_roofline_json_contract(capsys):
    out = run_json(capsys, "roofline", "--gpu", "h200", "--precision", "bf16", "--ai", "50", "--json")
    assert set(out) >= {"gpu", "precision", "peak_flops_per_s", "bandwidth_bytes_per_s",
                        "ridge_flops_per_byte", "ai_flops_per_byte", "attainable_flops_per_s", "bound"}
    assert out["ridge_flops_per_byte"] == pytest.approx(206.125)
    assert out["attainable_flops_per_s"] == pytest.approx(50 * 4.8e12)
    assert out["bound"] == "memory"


def test_roofline_flops_bytes(capsys):
    out = run_json(capsys, "roofline", "--gpu", "h100-sxm", "--precision", "bf16",
                   "--flops", "1.0995e12", "--bytes", "1e8", "--json")
    assert out["ai_flops_per_byte"] == pytest.approx(10995)
    assert out["bound"] == "compute"
    assert out["attainable_flops_per_s"] == pytest.approx(989.4e12)


def test_roofline_without_ai_has_only_roof_keys(capsys):
    out = run_json(capsys, "roofline", "--gpu", "t4", "--precision", "fp16", "--json")
    assert out["ridge_flops_per_byte"] == pytest.approx(203.125)
    assert "bound" not in out


def test_unknown_gpu_error_lists_close_matches(capsys):
    assert main(["roofline", "--gpu", "h1000-sxm", "--precision", "bf16", "--json"]) == 2
    err = capsys.readouterr().err
    assert "h100-sxm" in err and "unknown device" in err


@pytest.mark.parametrize("argv", [["--ai", "0"], ["--ai", "-3"], ["--flops", "10"],
                                  ["--flops", "-1", "--bytes", "5"]])
def test_bad_intensity_inputs_fail_cleanly(capsys, argv):
    assert main(["roofline", "--gpu", "h200", "--precision", "bf16", *argv]) == 2
    assert "gpuperf: error:" in capsys.readouterr().err


@pytest.mark.parametrize("ai", ["inf", "nan", "1e400"])
def test_non_finite_intensity_fails_cleanly(capsys, ai):
    assert main(["roofline", "--gpu", "h200", "--precision", "bf16", "--ai", ai, "--json"]) == 2
    assert "gpuperf: error:" in capsys.readouterr().err


def test_point_above_the_roof_is_flagged(capsys):
    out = run_json(capsys, "roofline", "--gpu", "h200", "--precision", "bf16", "--flops", "1e9",
                   "--bytes", "1e6", "--seconds", "1e-9", "--json")
    assert out["fraction_of_roof"] > 1 and out["band"].startswith("above the roof")


def test_cpu_roofline_from_saved_measurement(capsys):
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, save_ceilings

    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}, bandwidth_bytes_per_s=1e10))
    out = run_json(capsys, "roofline", "--gpu", "cpu", "--precision", "fp32", "--ai", "1", "--json")
    assert out["ridge_flops_per_byte"] == pytest.approx(29.0)
    assert out["attainable_flops_per_s"] == pytest.approx(1e10)
    assert out["peak_convention"].startswith("measured on this machine")


@pytest.mark.parametrize("precision", ["fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"])
def test_every_precision_of_the_h100(capsys, precision):
    out = run_json(capsys, "roofline", "--gpu", "h100-sxm", "--precision", precision, "--ai", "10", "--json")
    assert out["ridge_flops_per_byte"] > 0 and out["balance_square_matmul_n"] > 0
