"""`gpuperf roofline` number arguments bounded to what is physically meaningful (docs/cli.md): a clear
one-line error and exit 2, never a traceback or a figure from a typo; JSON never fails on inf/NaN."""
from __future__ import annotations

import json

import pytest

from gpuperf_gui.cli import main

ROOF = ["roofline", "--gpu", "h200", "--precision", "bf16"]


@pytest.fixture(autouse=True)
def _data(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("extra, said", [
    (["--ai", "1e-9"], "--ai 1e-09 is outside 1e-06..1e+09 FLOP/byte"),
    (["--ai", "1e12"], "--ai 1e+12 is outside"),
    (["--flops", "1e40", "--bytes", "1e20"], "--flops 1e+40 is outside 1..1e+30 FLOPs"),
    (["--flops", "1e9", "--bytes", "1e25"], "--bytes 1e+25 is outside 1..1e+21 bytes"),
    (["--flops", "1e9", "--bytes", "0.5"], "--bytes 0.5 is outside"),
    (["--flops", "1e20", "--bytes", "1"], "--flops/--bytes = 1e+20 FLOP/byte is outside"),
    (["--flops", "1e9", "--bytes", "1e6", "--seconds", "1e-320"], "--seconds 9.99989e-321 is outside 1e-12..1e+07 s"),
    (["--flops", "1e9", "--bytes", "1e6", "--seconds", "1e9"], "--seconds 1e+09 is outside"),
])
def test_out_of_range_arguments_fail_with_one_line(capsys, extra, said) -> None:
    assert main([*ROOF, *extra, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gpuperf: error: ") and said in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("extra", [["--ai", "1e-6"], ["--ai", "1e9"], ["--flops", "1", "--bytes", "1"],
                                   ["--flops", "1e30", "--bytes", "1e21", "--seconds", "1e7"]])
def test_the_edges_of_the_ranges_are_accepted_and_the_json_is_strict(capsys, extra) -> None:
    assert main([*ROOF, *extra, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert payload["attainable_flops_per_s"] > 0


def test_gpus_json_is_strict_json(capsys) -> None:
    assert main(["gpus", "--json"]) == 0
    json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
