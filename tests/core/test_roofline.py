"""Roofline maths (Williams et al. 2009) and the operation models."""

from __future__ import annotations

import pytest

from gpuperf_gui.core import roofline
from gpuperf_gui.core.hardware import load_database

H100_BF16, H100_BW = 989.4e12, 3.35e12


def test_attainable_below_and_above_ridge():
    ridge = roofline.ridge_flops_per_byte(H100_BF16, H100_BW)
    assert roofline.attainable_flops_per_s(H100_BF16, H100_BW, 10) == pytest.approx(33.5e12)
    assert roofline.attainable_flops_per_s(H100_BF16, H100_BW, 1000) == H100_BF16
    assert roofline.bound(H100_BF16, H100_BW, ridge * 0.99) == "memory"
    assert roofline.bound(H100_BF16, H100_BW, ridge * 1.01) == "compute"


def test_gemm_model():
    p = roofline.gemm_point(4096, 4096, 4096, "bf16")
    assert p.flops == 2 * 4096**3
    assert p.bytes == 2 * 3 * 4096**2
    assert p.ai_flops_per_byte == pytest.approx(4096 / 3)  # AI = N/3 for a square 16-bit GEMM


def test_vector_add_fp16_ai_one_sixth():
    p = roofline.elementwise_point("add", 1_000_000, "fp16")
    assert p.flops == 1_000_000 and p.bytes == 6_000_000
    assert p.ai_flops_per_byte == pytest.approx(1 / 6)


def test_time_floor_is_max_of_compute_and_memory():
    p = roofline.elementwise_point("add", 2**28, "fp16")
    floor = roofline.time_floor_s(p.flops, p.bytes, H100_BF16, H100_BW)
    assert floor == pytest.approx(6 * 2**28 / H100_BW)


@pytest.mark.parametrize("device_id,n", [("h100-sxm", 886), ("h200", 618), ("a100-sxm-80gb", 459)])
def test_square_matmul_balance_dimension(device_id, n):
    ridge = load_database().get(device_id).ridge_flops_per_byte("bf16")
    balance = roofline.square_matmul_balance_dimension(ridge, "bf16")
    assert balance == pytest.approx(n, abs=1)
    at = roofline.gemm_point(round(balance), round(balance), round(balance), "bf16")
    assert at.ai_flops_per_byte == pytest.approx(ridge, rel=0.01)


@pytest.mark.parametrize("fraction,band", [
    (0.95, "essentially optimal"), (0.75, "very strong"), (0.55, "common"),
    (0.35, "acceptable for a non-dominant kernel"), (0.2, "weak"), (0.05, "poor"),
])
def test_efficiency_bands(fraction, band):
    assert roofline.efficiency_band(fraction) == band


def test_analyse_point_fraction_of_roof():
    p = roofline.gemm_point(8192, 8192, 8192, "bf16", seconds=2 * 8192**3 / 700e12)
    a = roofline.analyse_point(p, H100_BF16, H100_BW)
    assert a.bound == "compute"
    assert a.fraction_of_roof == pytest.approx(700 / 989.4)
    assert a.band == "very strong"


def test_movement_horizontal_vs_vertical():
    before = roofline.custom_point("before", 1e9, 1e9, seconds=1e-3)
    fused = roofline.custom_point("fused", 1e9, 0.25e9, seconds=0.25e-3)
    tuned = roofline.custom_point("tuned", 1e9, 1e9, seconds=0.5e-3)
    assert roofline.classify_movement(before, fused).direction == "diagonal"
    assert roofline.classify_movement(before, tuned).direction == "vertical"
    same_rate = roofline.custom_point("less bytes", 1e9, 0.5e9, seconds=1e-3)
    assert roofline.classify_movement(before, same_rate).direction == "horizontal"


@pytest.mark.parametrize("args", [(0, 1, 1), (-5, 4, 4)])
def test_non_positive_inputs_raise_value_error(args):
    with pytest.raises(ValueError, match="positive"):
        roofline.gemm_point(*args, "bf16")


def test_points_csv_has_si_headers():
    p = roofline.gemm_point(1024, 1024, 1024, "fp16", seconds=1e-5)
    a = roofline.analyse_point(p, H100_BF16, H100_BW)
    text = roofline.points_to_csv([("h100-sxm bf16", a)])
    header, row = text.strip().splitlines()
    assert "ai_flops_per_byte" in header and "attainable_flops_per_s" in header
    assert row.startswith("GEMM 1024x1024x1024 fp16,gemm,h100-sxm bf16")


def test_roof_polyline_bends_at_the_ridge_and_only_there() -> None:
    from gpuperf_gui.core.roofline import roof_polyline

    # H100 SXM bf16: 989.4 TFLOP/s dense over 3.35 TB/s -> ridge 295.3 FLOP/byte (hardware.md)
    xs, ys = roof_polyline(989.4e12, 3.35e12, (1e-2, 1e4))
    assert xs[0] == 1e-2 and xs[-1] == 1e4 and xs[1] == pytest.approx(295.34, abs=0.01)
    assert ys == pytest.approx([3.35e10, 989.4e12, 989.4e12])
    xs, ys = roof_polyline(989.4e12, 3.35e12, (1e3, 1e4))   # ridge left of the range: flat
    assert xs == [1e3, 1e4] and ys == pytest.approx([989.4e12, 989.4e12])


def test_short_label_keeps_the_op_its_shapes_and_its_calls() -> None:
    from gpuperf_gui.core.roofline import short_label

    # labels as core/trace/diagnosis/figures.py writes them for the demo H200 trace
    assert short_label("aten::mm [[16384, 1536], [1536, 50304]] x3") == "aten::mm 16384×1536·1536×50304 x3"
    assert short_label("aten::addmm [[6144], [16384, 1536], [1536, 6144], [], []] x18") == \
        "aten::addmm 16384×1536·1536×6144 x18"                      # the bias vector says little
    assert short_label("aten::_efficient_attention_forward [[16, 12, 1024, 128]] (causal: FLOPs halved) x6",
                       60) == "aten::_efficient_attention_forward 16×12×1024×128 x6"
    assert short_label("matmul bf16 4096³") == "matmul bf16 4096³"
    cut = short_label("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32> x3", 24)
    assert len(cut) == 24 and cut.startswith("void cutlass") and cut.endswith("> x3") and "…" in cut


def test_points_belong_to_their_device() -> None:
    from gpuperf_gui.core.roofline import RooflinePoint

    typed = RooflinePoint("model", 1e12, 1e9)
    measured = RooflinePoint("matmul fp32 1024³", 2.1e9, 1.2e7, 0.01, "measured", "cpu", "fp32")
    assert typed.belongs_to("h200") and typed.belongs_to("cpu")
    assert measured.belongs_to("cpu") and not measured.belongs_to("h200")
