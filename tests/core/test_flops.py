"""FLOPs and bytes of GEMM and attention ops from recorded shapes: hand counts, torch's flop counter
formulas as the independent check, the ATen schemas for the argument positions, and bad shapes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.vocabulary.flops import _ATTENTION, CAUSAL_NOTE, SHAPED_OP_RE, estimate_op
from gpuperf_gui.core.trace.ingest.load import load_rank
from gpuperf_gui.core.trace.analysis.op_points import op_points
from gpuperf_gui.core.trace.session.loaded_trace import roofline_points
from trace_support import loaded


def _est(name: str, dims: list, types: list | None = None, concrete: list | None = None):  # noqa: ANN202
    return estimate_op(f"aten::{name}", json.dumps(dims).encode(), json.dumps(types or []).encode(),
                       json.dumps(concrete).encode() if concrete is not None else b"")


# GEMMs: 2·m·k·n, bytes A + B + C --------------------------------------------------------------------

@pytest.mark.parametrize("name, dims, flops, elements", [
    ("mm", [[128, 256], [256, 512]], 33_554_432, 128 * 256 + 256 * 512 + 128 * 512),
    ("addmm", [[512], [128, 256], [256, 512], [], []], 33_554_432, 229_376),
    ("bmm", [[4, 64, 32], [4, 32, 16]], 262_144, 4 * (64 * 32 + 32 * 16 + 64 * 16)),
    ("baddbmm", [[4, 64, 16], [4, 64, 32], [4, 32, 16], [], []], 262_144, 4 * (64 * 32 + 32 * 16 + 64 * 16)),
    ("linear", [[8, 10, 256], [512, 256], [512]], 20_971_520, 80 * 256 + 256 * 512 + 80 * 512),
    ("matmul", [[3, 8, 10, 256], [256, 512]], 2 * 240 * 256 * 512, 240 * 256 + 256 * 512 + 240 * 512),
    ("matmul", [[3, 1, 10, 20], [5, 20, 7]], 2 * 15 * 10 * 20 * 7, 3 * 10 * 20 + 5 * 20 * 7 + 15 * 10 * 7),
])
def test_gemm_flops_and_bytes_by_hand(name: str, dims: list, flops: int, elements: int) -> None:
    """Elements: each input as stored, read once (a 2-D weight under a batched matmul too), plus the
    output written once."""
    est = _est(name, dims, ["c10::BFloat16"] * len(dims))
    assert est.flops == flops
    assert est.bytes == 2 * elements
    assert not est.causal and est.shapes == json.dumps(dims)


def test_scaled_mm_is_one_byte_per_element_and_float_is_four() -> None:
    assert _est("_scaled_mm", [[64, 32], [32, 16]], ["c10::Float8_e4m3fn"] * 2).bytes == 64 * 32 + 32 * 16 + 64 * 16
    assert _est("mm", [[64, 32], [32, 16]], ["float", "float"]).bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)


# Attention ------------------------------------------------------------------------------------------

def test_cudnn_attention_of_healthy_gpt_small_by_hand() -> None:
    """The H200 trace's own args: B=16, H=12, T=1024, D=128, is_causal=True (position 10).
    Full: 2·B·H·T·T·D (QKᵀ) + 2·B·H·T·T·D (PV) = 103 079 215 104; causal halves it."""
    q = [16, 12, 1024, 128]
    concrete = ["", "", "", "", "", "", "1024", "1024", "True", "0.", "True", "False", ""]
    est = _est("_cudnn_attention_forward", [q, q, q, [], [], [], [], [], [], [], [], [], []],
               ["c10::BFloat16"] * 3, concrete)
    assert est.flops == 103_079_215_104 / 2
    assert est.causal and est.shapes.endswith(CAUSAL_NOTE)
    assert est.bytes == 2 * 4 * (16 * 12 * 1024 * 128)  # Q, K, V read, O written
    concrete[10] = "False"
    assert _est("_cudnn_attention_forward", [q, q, q], ["c10::BFloat16"], concrete).flops == 103_079_215_104


def test_efficient_attention_kernel_reads_batch_tokens_heads_dim() -> None:
    """launch_bound_tiny's ``_efficient_attention_forward``: [4, 32, 4, 32] is (B, T, H, D) = B 4,
    T 32, H 4, D 32 and custom_mask_type 1 (causal). 4·B·H·T²·D = 2 097 152, halved 1 048 576.
    Read as (B, H, T, D) it was 262 144: T/H = 8 times too low."""
    x = [4, 32, 4, 32]
    concrete = ["", "", "", "", "", "", "", "", "0.", "1", "True", "", "", ""]
    est = _est("_efficient_attention_forward", [x, x, x] + [[]] * 11, ["float"] * 3, concrete)
    assert est.flops == 1_048_576 and est.causal
    assert est.bytes == 4 * 4 * (4 * 32 * 4 * 32)
    concrete[9] = "0"
    assert _est("_efficient_attention_forward", [x, x, x] + [[]] * 11, ["float"], concrete).flops == 2_097_152


def test_flash_forward_and_the_sdpa_op_above_it_agree() -> None:
    """The same call seen twice: SDPA (B, H, T, D) = (2, 16, 512, 64) and its flash kernel
    (B, T, H, D) = (2, 512, 16, 64). 4·2·16·512²·64 = 2 147 483 648 each, non-causal."""
    bhtd, bthd = [2, 16, 512, 64], [2, 512, 16, 64]
    sdpa = _est("_scaled_dot_product_flash_attention", [bhtd] * 3 + [[]] * 4, ["c10::Half"] * 3,
                ["", "", "", "0.", "False", "False", ""])
    kernel = _est("_flash_attention_forward", [bthd] * 3 + [[]] * 14, ["c10::Half"] * 3,
                  ["", "", "", "", "", "512", "512", "0.", "False", "False"] + [""] * 7)
    assert sdpa.flops == kernel.flops == 2_147_483_648
    assert sdpa.bytes == kernel.bytes == 2 * 4 * 2 * 16 * 512 * 64


def test_backward_is_two_and_a_half_forwards() -> None:
    """launch_bound_tiny's ``_efficient_attention_backward`` (B, T, H, D) = (4, 32, 4, 32), mask 1:
    2·B·H·T²·(3·D + 2·D) = 5 242 880, causal 2 621 440; the SDPA-level backward (B, H, T, D) with
    is_causal at position 11 gives the same."""
    x, y = [4, 32, 4, 32], [4, 4, 32, 32]
    kernel = _est("_efficient_attention_backward", [x, x, x, x, [], x, [], [], [], [], [4, 4, 32]] + [[]] * 9,
                  ["float"] * 4, [""] * 8 + ["4", "4", "", "0.", "", "", "1", "False", "", "", "", "False"])
    sdpa = _est("_scaled_dot_product_efficient_attention_backward", [y, y, y, y, [], y, [4, 4, 32]] + [[]] * 6,
                ["float"] * 4, [""] * 9 + ["0.", "[True, True, True, False]", "True", ""])
    assert kernel.flops == sdpa.flops == 2_621_440
    assert kernel.causal and sdpa.causal
    assert kernel.bytes == 4 * 2 * 4 * (4 * 32 * 4 * 32)  # Q, K, V, O, dO read; dQ, dK, dV written


def test_attention_matches_torch_flop_counter_formulas() -> None:
    """torch.utils.flop_counter's sdpa_flop_count / sdpa_backward_flop_count take (B, H, T, D); our
    (B, T, H, D) kernels must give the same once transposed. GQA (fewer K/V heads) included."""
    fc = pytest.importorskip("torch.utils.flop_counter")
    cases = [((2, 8, 128, 64), (2, 2, 128, 64), (2, 2, 128, 32)), ((3, 4, 100, 16), (3, 4, 60, 16), (3, 4, 60, 16))]
    for q, k, v in cases:
        fwd = fc.sdpa_flop_count(q, k, v)
        t = [list((s[0], s[2], s[1], s[3])) for s in (q, k, v)]
        assert _est("_scaled_dot_product_efficient_attention", [list(q), list(k), list(v)], [],
                    [""] * 6 + ["False", ""]).flops == fwd
        assert _est("_flash_attention_forward", t, [], [""] * 8 + ["False"] + [""] * 8).flops == fwd
        go = (q[0], q[1], q[2], v[3])
        bwd = fc.sdpa_backward_flop_count(go, q, k, v)
        assert _est("_scaled_dot_product_flash_attention_backward", [list(go), list(q), list(k), list(v)], [],
                    [""] * 11 + ["False"] + [""] * 3).flops == bwd
        tgo = [go[0], go[2], go[1], go[3]]
        assert _est("_flash_attention_backward", [tgo, *t], [], [""] * 17).flops == bwd


def test_causal_argument_positions_are_the_aten_schemas() -> None:
    """The position we read ``is_causal``/``custom_mask_type`` from is that argument in torch's own
    schema of the op's default overload (and of the other overloads we list, by argument count),
    with query, key, value where we read the shapes."""
    torch = pytest.importorskip("torch")
    for op, spec in _ATTENTION.items():
        packet = getattr(torch.ops.aten, op)
        by_count = {len(getattr(packet, ov)._schema.arguments): getattr(packet, ov)._schema for ov in packet.overloads()}
        wanted = {len(packet.default._schema.arguments): spec.causal_arg, **spec.other_overloads}
        for count, pos in wanted.items():
            args = [a.name for a in by_count[count].arguments]
            assert args[pos] in ("is_causal", "custom_mask_type"), (op, count)
            first = 1 if spec.backward else 0
            assert args[first:first + 3] == ["query", "key", "value"], op
        assert SHAPED_OP_RE.match(f"aten::{op}"), op


def test_h200_attention_flops_per_op_equal_the_hand_counts(test_data: Path) -> None:
    """tests/data/h200/attention: SDPA (B,H,T,D) = (4,16,2048,128) bf16 forward and backward on the
    flash, efficient and cuDNN backends, causal and not (torch 2.11: its flash kernel has 15
    arguments, not 2.13's 17). meta.json's hand counts: forward 137 438 953 472, causal useful
    68 719 476 736, backward 343 597 383 680 (FlopCounterMode gives the same, never halved)."""
    meta = json.loads((test_data / "h200/attention.meta.json").read_text())["expected"]
    fwd, fwd_causal, bwd = (meta["hand_forward_flops_noncausal"], meta["hand_forward_flops_causal_useful"],
                            meta["hand_backward_flops_noncausal"])
    points = op_points(loaded(test_data / "h200/attention.json.gz")[0])
    got = {(p.name.removeprefix("aten::"), p.causal): p.flops / p.calls for p in points}
    for backend in ("flash", "efficient", "cudnn"):
        assert got[(f"_{backend}_attention_forward", False)] == fwd
        assert got[(f"_{backend}_attention_forward", True)] == fwd_causal
        assert got[(f"_{backend}_attention_backward", False)] == bwd
        assert got[(f"_{backend}_attention_backward", True)] == bwd / 2
    assert len(points) == 12


# Bad shapes: no estimate, never an exception ---------------------------------------------------------

@pytest.mark.parametrize("name, dims", [
    ("bmm", [[4, 64, 32]]),                       # fewer than 2 inputs (was IndexError)
    ("bmm", []),
    ("mm", [[1e308, 2], [2, 3]]),                 # was OverflowError
    ("mm", [[10**400, 2], [2, 3]]),
    ("mm", [[-4, 2], [2, 3]]),
    ("mm", [[4, 2], [3, 5]]),                     # inner dims differ
    ("mm", [[4, "2"], [2, 5]]),
    ("mm", [[4, 2.5], [2.5, 5]]),
    ("mm", [[4, True], [True, 5]]),
    ("mm", [[[4, 2]], [2, 5]]),
    ("linear", [[8, 10, 256], [512, 128]]),
    ("matmul", [[3, 10, 20], [5, 20, 7]]),      # batch dims that do not broadcast
    ("_scaled_dot_product_flash_attention", [[2, 16, 512, 64], [2, 16, 512]]),
    ("_flash_attention_forward", [[1000, 16, 64], [1000, 16, 64], [1000, 16, 64]]),  # varlen
    ("_efficient_attention_forward", [[4, 32, 4, 32], [4, 32, 4, 16], [4, 32, 4, 32]]),
    ("_scaled_dot_product_cudnn_attention", [[2, 6, 8, 4], [2, 4, 8, 4], [2, 4, 8, 4]]),  # 6 % 4 heads
    ("_efficient_attention_backward", [[4, 32, 4, 8], [4, 32, 4, 32], [4, 32, 4, 32], [4, 32, 4, 32]]),
    ("mm", [[0, 2], [2, 3]]),
])
def test_bad_shapes_give_no_estimate(name: str, dims: list) -> None:
    est = _est(name, dims, ["float"] * 2)
    assert (est.flops, est.bytes) == (0.0, 0.0)


@pytest.mark.parametrize("raw", [b"", b"not json", b"{\"a\": 1}", b"[[1, 2]", b"[" * 10000 + b"]" * 10000, b"null"])
def test_undecodable_dims_give_no_estimate(raw: bytes) -> None:
    assert estimate_op("aten::bmm", raw, b"[1e400", b"{")[:2] == (0.0, 0.0)


def test_unparseable_concrete_inputs_mean_not_causal() -> None:
    x = [2, 4, 8, 16]
    est = estimate_op("aten::_scaled_dot_product_flash_attention", json.dumps([x, x, x]).encode(), b"", b"[oops")
    assert est.flops == 4 * 2 * 4 * 8 * 8 * 16 and not est.causal


# Roofline points: one source for the view and the JSON ---------------------------------------------

def _h200(shared: Path, name: str) -> Path:
    return shared / f"h200/{name}.json.gz"


@pytest.mark.parametrize("name", ["healthy_gpt_small", "launch_bound_tiny"])
def test_points_flops_per_step_equal_torch_flop_counter(shared_traces: Path, name: str) -> None:
    """meta.json records ``torch.utils.flop_counter.FlopCounterMode``'s FLOPs of one training step,
    measured on the H200 (it does not halve causal attention). Our points over the profiled steps,
    causal attention counted in full, give exactly that per step."""
    meta = json.loads((shared_traces / f"h200/{name}.meta.json").read_text())
    rt, _ = loaded(_h200(shared_traces, name))
    points = op_points(rt)
    assert any(p.causal for p in points) and any("attention_forward" in p.name for p in points)
    full = sum(p.flops * (2 if p.causal else 1) for p in points)
    assert full / meta["profiled_active_steps"] == pytest.approx(meta["flop_counter_flops_per_step"], rel=1e-12)


def test_gemm_point_is_its_shapes_hand_count_and_cudnn_attention_has_points(shared_traces: Path) -> None:
    rt, _ = loaded(_h200(shared_traces, "healthy_gpt_small"))
    by_key = {(p.name, p.shapes): p for p in op_points(rt)}
    lm_head = by_key[("aten::mm", "[[16384, 1536], [1536, 50304]]")]
    assert lm_head.calls == 3
    assert lm_head.flops == 3 * 2 * 16384 * 1536 * 50304 == 7_595_649_662_976
    assert lm_head.bytes == 3 * 2 * (16384 * 1536 + 1536 * 50304 + 16384 * 50304)
    cudnn = [p for p in by_key.values() if p.name.startswith("aten::_cudnn_attention")]
    assert {p.name for p in cudnn} == {"aten::_cudnn_attention_forward", "aten::_cudnn_attention_backward"}
    fwd = next(p for p in cudnn if p.name.endswith("forward"))
    assert fwd.causal and fwd.calls == 18 and fwd.flops == 18 * 103_079_215_104 / 2
    assert fwd.label.endswith(CAUSAL_NOTE + " x18")


def test_diagnose_json_roofline_points_are_the_views_points(shared_traces: Path, capsys: pytest.CaptureFixture
                                                            ) -> None:
    path = _h200(shared_traces, "healthy_gpt_small")
    assert main(["diagnose", "--json", str(path)]) == 0
    (rank,) = json.loads(capsys.readouterr().out)["ranks"]
    rt = loaded(path)[0]
    view = roofline_points([rt], [], [op_points(rt)])  # what "Show on roofline" draws (LoadedTrace)
    got = rank["roofline_points"]
    assert len(got) == len(view) >= 10
    for p, v in zip(got, view):
        assert set(p) >= {"name", "calls", "flops", "bytes", "seconds", "ai_flops_per_byte", "achieved_flops_per_s"}
        assert v.label.startswith(p["name"] + " ") and v.label.endswith(f" x{p['calls']}")
        assert (p["flops"], p["bytes"]) == (v.flops, v.bytes)
        assert p["seconds"] == pytest.approx(v.seconds, rel=1e-12)
        assert p["ai_flops_per_byte"] == pytest.approx(v.ai_flops_per_byte, rel=1e-12)
        assert p["achieved_flops_per_s"] == pytest.approx(v.achieved_flops_per_s, rel=1e-12)
    attention = [p for p in got if "attention" in p["name"]]
    assert attention and all(p["causal"] is True and "causal" not in p["shapes"] for p in attention)


def test_a_trace_with_bad_shapes_loads_and_gives_no_points(tmp_path: Path) -> None:
    """An ``aten::bmm`` with one input shape and an ``aten::mm`` with a 1e308 dim once
    raised IndexError / OverflowError while loading. Now: loaded, no FLOPs, no roofline point."""
    def op(name: str, ts: int, dims: list, corr: int) -> list[dict]:
        return [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 50,
                 "args": {"Input Dims": dims, "Input type": ["float", "float"]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 5,
                 "dur": 5, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": f"gemm{corr}", "pid": 0, "tid": 7, "ts": ts + 20, "dur": 30,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}]
    events = (op("aten::bmm", 0, [[4, 64, 32]], 1) + op("aten::mm", 100, [[1e308, 2], [2, 3]], 2)
              + op("aten::mm", 200, [[64, 32], [32, 16]], 3))
    path = tmp_path / "bad_shapes.json"
    path.write_text(json.dumps({"traceEvents": events}))
    rt = load_rank(path)
    (cpu,) = rt.cpu_lanes
    ops = [i for i in range(len(cpu)) if rt.strings[cpu.name_id[i]].startswith("aten::")]
    assert [float(cpu.flops[i]) for i in ops][:2] == [pytest.approx(float("nan"), nan_ok=True)] * 2
    (point,) = op_points(rt)  # only the sane mm
    assert (point.name, point.flops, point.seconds) == ("aten::mm", 2 * 64 * 32 * 16, pytest.approx(30e-6))
