"""Precision per kernel and per trace, FLOPs only on the math kernels, % of roof at the kernel's own
precision (docs/precision.md).

Expected values come from the raw trace JSON counted by hand here (2·m·k·n of each GEMM op from its
"Input Dims", the kernels' "dur") and the H200 SXM datasheet (docs/reference/hardware.md: 989.4
TFLOP/s bf16 dense, 66.9 TFLOP/s fp32, 4.8 TB/s), never from the code under test.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from gpuperf_gui.cli import main as cli_main
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.vocabulary.precision import (dtype_precision, is_math_kernel, kernel_precision,
                                                         name_precision, trace_precision)

DATA = Path(__file__).resolve().parents[1] / "data"
H200_BF16 = 989.4e12      # H200 SXM datasheet, dense
H200_FP32 = 66.9e12       # H200 SXM datasheet, CUDA-core fp32
BF16_TRACE = DATA / "h200" / "profile_fed.json.gz"   # meta: 8 x Linear(4096,4096) bf16 autocast
FP32_TRACE = DATA / "h200" / "eager_small.json.gz"   # meta: eager GPT d=512 x 6 layers, fp32


def _raw(path: Path) -> list[dict]:
    return json.load(gzip.open(path))["traceEvents"]


def _gemm_flops(op: dict) -> float:
    """2·m·k·n of an aten::mm / addmm / bmm call from its recorded Input Dims (hand formula)."""
    dims = op["args"]["Input Dims"]
    if op["name"] == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return 2.0 * m * k * n
    if op["name"] == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return 2.0 * m * k * n
    (b, m, k), (_, _, n) = dims[0], dims[1]
    return 2.0 * b * m * k * n


def _hand_gemm_kernels(path: Path) -> dict[str, tuple[float, float]]:
    """Per kernel name: (FLOPs of the GEMM ops that launched it, its µs on those launches); each of
    these ops launches one GEMM kernel (and maybe a Memset), so the kernel gets all of the op's FLOPs."""
    events = _raw(path)
    ops = {e["args"]["External id"]: e for e in events
           if e.get("cat") == "cpu_op" and e["name"] in ("aten::mm", "aten::addmm", "aten::bmm")
           and "External id" in e.get("args", {})}
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in events:
        low = e["name"].lower()
        if e.get("cat") == "kernel" and e["args"].get("External id") in ops and ("gemm" in low or low.startswith("nvjet")):
            acc = out[e["name"]]
            acc[0] += _gemm_flops(ops[e["args"]["External id"]])
            acc[1] += e["dur"]
    return {k: (f, us) for k, (f, us) in out.items()}


@pytest.fixture(scope="module")
def bf16_result():
    return Trace([BF16_TRACE], workers=1).result()


@pytest.fixture(scope="module")
def fp32_result():
    return Trace([FP32_TRACE], workers=1).result()


def test_kernel_names_and_op_types_give_the_precision() -> None:
    # names from the traces under tests/data (eager_small, healthy_gpt_small, the H100 BERT trace)
    assert name_precision("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma") == "fp32"
    assert name_precision("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(x)") == "fp32"
    assert name_precision("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)") == "fp32"
    assert name_precision("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6>") == "bf16"
    assert name_precision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64") == "bf16"
    assert name_precision("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN") is None   # cuBLAS says nothing
    # torch's dtype names as the profiler writes them ("Input type"): the narrowest float wins
    assert dtype_precision(b'["c10::BFloat16", "float", "float"]') == "bf16"    # autocast linear
    assert dtype_precision('["float", "float", "Scalar"]') == "fp32"
    assert dtype_precision(["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float"]) == "fp8"
    assert dtype_precision(["c10::Half", "c10::Half"]) == "fp16"
    assert dtype_precision(["long int", "Scalar"]) is None
    # the op's type for a name that says nothing; fp32 inputs on tensor cores ran as tf32
    assert kernel_precision("nvjet_sm90_tst_128x256", "bf16", tensor_cores=True) == "bf16"
    assert kernel_precision("nvjet_sm90_tst_128x256", "fp32", tensor_cores=True) == "tf32"
    assert kernel_precision("cutlass_80_simt_sgemm_256x128", "fp32", tensor_cores=False) == "fp32"
    # cuDNN's sdpa kernels say f16 for a bf16 op (healthy_gpt_small is bf16 autocast)
    assert kernel_precision("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", "bf16", True) == "bf16"


def test_helpers_an_op_launches_are_not_math_kernels() -> None:
    assert not is_math_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(x)", "gemm")
    assert not is_math_kernel("Memset (Device)", "copy")
    assert is_math_kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(x)", "gemm")
    # tests/data/shared_traces/hta/trace_filter (DLRM): FBGEMM's table-batched embedding kernels
    assert not is_math_kernel("void split_embedding_codegen_forward_unweighted_kernel<c10::Half, c10::Half, "
                              "float, false, long, 2ul, 32ul>(x)", "gemm")
    assert not is_math_kernel("void fbgemm_gpu::permute_2D_data_kernel<false, int, int>(int)", "gemm")
    assert not is_math_kernel("void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(x)",
                              "gemm")
    assert is_math_kernel("fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::"
                          "AttentionBackwardKernel<cutlass::arch::Sm80, float>::Params)", "attention")


def test_dominant_or_mixed() -> None:
    assert trace_precision({"bf16": 9.5, "fp32": 0.5}).precision == "bf16"
    mixed = trace_precision({"bf16": 7.8, "fp32": 2.2, None: 1.0})
    assert mixed.precision == "mixed" and mixed.peak_precision == "bf16"
    assert mixed.split == pytest.approx({"bf16": 0.78, "fp32": 0.22})
    assert "mixed: bf16 78 %, fp32 22 %" in mixed.describe()
    assert "precision unknown for 9 % of that time" in mixed.describe()   # 1 of 11 s
    assert trace_precision({None: 1.0}).precision is None


@pytest.mark.parametrize(("path", "expected"), [(BF16_TRACE, "bf16"), (FP32_TRACE, "fp32"),
                                                (DATA / "shared_traces" / "h200" / "healthy_gpt_small.json.gz", "bf16")])
def test_each_trace_knows_its_precision(path: Path, expected: str) -> None:
    """The traces' meta.json say which dtype they ran in."""
    kernels = Trace([path], workers=1).result().ranks[0].analysis.kernels
    assert kernels.precision.precision == expected
    assert kernels.precision.split[expected] == pytest.approx(1.0)


def test_flops_go_to_the_gemm_kernels_not_the_memsets(bf16_result) -> None:
    """profile_fed: each aten::mm/addmm launches an nvjet GEMM and often a Memset; before, the
    Memset got a duration share of the op's FLOPs (806 TFLOP/s on a 0.15 ms Memset)."""
    rows = {r.name: r for r in bf16_result.ranks[0].analysis.kernels.top}
    memset = rows["Memset (Device)"]
    assert memset.flops == 0 and memset.achieved_flops_per_s is None
    recorded = sum(e["args"].get("bytes", 0) for e in _raw(BF16_TRACE) if e.get("cat") == "gpu_memset")
    assert memset.bytes == pytest.approx(recorded)   # bytes only: what the profiler recorded for it
    hand = _hand_gemm_kernels(BF16_TRACE)
    assert len(hand) == 3
    for name, (flops, us) in hand.items():
        assert rows[name].flops == pytest.approx(flops, rel=1e-9)
        assert rows[name].achieved_flops_per_s == pytest.approx(flops / (us * 1e-6), rel=1e-9)


def test_split_k_reduce_gets_no_flops_and_the_flops_are_all_kept(fp32_result) -> None:
    kernels = fp32_result.ranks[0].analysis.kernels
    reduce = [r for r in kernels.math + kernels.top if "splitKreduce" in r.name]
    assert reduce and all(r.flops == 0 for r in reduce)
    hand = _hand_gemm_kernels(FP32_TRACE)
    gemm_flops = sum(r.flops for r in kernels.math if r.kernel_class == "gemm")
    assert gemm_flops == pytest.approx(sum(f for f, _ in hand.values()), rel=1e-9)


def test_percent_of_roof_uses_each_kernels_own_peak(capsys) -> None:
    """diagnose --json: the Overview's figures; a bf16 GEMM against 989.4 TFLOP/s, an fp32 one
    against 66.9 (right of their ridges, 206 and 13.9 FLOP/B: the roof is the peak)."""
    for path, peak, precision in ((BF16_TRACE, H200_BF16, "bf16"), (FP32_TRACE, H200_FP32, "fp32")):
        capsys.readouterr()
        assert cli_main(["diagnose", str(path), "--json"]) == 0
        rank = json.loads(capsys.readouterr().out)["ranks"][0]
        k = rank["kernels"]
        assert k["roof_device"] == "h200" and k["precision"]["precision"] == precision
        assert 0 < k["tensor_core_share"] <= 1
        hand = _hand_gemm_kernels(path)
        checked = 0
        for row in k["top_kernels"]:
            if row["name"] in hand and row["fraction_of_roof"] is not None:
                flops, us = hand[row["name"]]
                if row["ai_flops_per_byte"] > 2 * peak / 4.8e12:   # twice the ridge: the roof is the peak
                    assert row["precision"] == precision
                    assert row["fraction_of_roof"] == pytest.approx(flops / (us * 1e-6) / peak, rel=1e-9)
                    checked += 1
            assert row["fraction_of_roof"] is None or row["fraction_of_roof"] <= 1.0
        assert checked >= 3
        assert 0 < k["gemm"]["fraction_of_roof"] <= 1.0


def test_mfu_from_trace_uses_the_traces_precision(capsys) -> None:
    """eager_small is fp32: its MFU is against the fp32 peak unless --precision says otherwise."""
    argv = ["mfu", "--from-trace", str(FP32_TRACE), "--params", "19M", "--tokens-per-step", "2048", "--json"]
    capsys.readouterr()
    assert cli_main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["precision"] == "fp32" and got["precision_source"] == "trace"
    assert got["peak_flops_per_s_per_gpu"] == pytest.approx(H200_FP32)
    assert got["mfu"] == pytest.approx(6 * 19e6 * 2048 / got["step_time_s"] / H200_FP32, rel=1e-9)
    assert got["trace"]["precision"]["split"] == {"fp32": 1.0}
    assert cli_main([*argv, "--precision", "bf16"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["precision_source"] == "option" and forced["peak_flops_per_s_per_gpu"] == pytest.approx(H200_BF16)
    assert cli_main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "Peak precision fp32" in text and "detected" in text


def test_gemm_inefficiency_is_the_gemms_share_times_their_distance_to_the_roof(capsys, bf16_result) -> None:
    """The gap bar's GEMM cause: GPU busy × GEMM share of kernel time × (1 − GEMMs' % of roof)."""
    argv = ["mfu", "--from-trace", str(BF16_TRACE), "--params", "134217728", "--tokens-per-step", "8192", "--json"]
    capsys.readouterr()
    assert cli_main(argv) == 0
    gemm = json.loads(capsys.readouterr().out)["trace"]["gemm"]
    a = bf16_result.ranks[0].analysis
    hand = _hand_gemm_kernels(BF16_TRACE)
    flops = sum(f for f, _ in hand.values())
    seconds = sum(us for _, us in hand.values()) * 1e-6
    assert gemm["fraction_of_roof"] == pytest.approx(flops / seconds / H200_BF16, rel=1e-9)
    all_gemm_us = sum(e["dur"] for e in _raw(BF16_TRACE) if e.get("cat") == "kernel" and e["name"].startswith("nvjet"))
    kernel_us = sum(e["dur"] for e in _raw(BF16_TRACE) if e.get("cat") == "kernel")
    share = a.gpu_busy_fraction * all_gemm_us / kernel_us
    assert gemm["time_fraction_of_step"] == pytest.approx(share, rel=1e-6)
    judged = seconds / (all_gemm_us * 1e-6)
    assert gemm["gemm_inefficiency"] == pytest.approx(share * judged * (1 - gemm["fraction_of_roof"]), rel=1e-6)
    assert 0.05 < gemm["gemm_inefficiency"] < 0.3
