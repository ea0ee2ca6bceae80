"""Corrupted state files (saved ceilings, the user's devices.toml, run files): every command still
runs, says once on stderr what it set aside (path, line or key, what is wrong), and the file is
renamed ``.bad``, never deleted (docs/robustness.md, State files)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core import state_files
from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    load_ceiling_entries,
    load_ceilings,
    save_ceilings,
)
from gpuperf_gui.core.bench.results import ResultsWriter, RunFileError, read_run
from gpuperf_gui.core.catalog import DeviceCatalog
from gpuperf_gui.core.hardware import load_database

WRONG_TYPES = json.dumps({"device_id": "cpu", "matmul_flops_per_s": "abc"})
GARBAGE = "\x00\x01 this is not JSON {{{"
TFLOPS_ARRAY = '[my-gpu]\nname = "Lab card"\nmemory_bandwidth_tbs = 1.0\ntflops = [1, 2]\n'
DEEP_ARRAY = "[deep]\nnotes = " + "[" * 5000 + "]" * 5000 + "\n"


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUPERF_DEVICES_FILE", str(tmp_path / "config" / "devices.toml"))
    state_files.take_pending()  # reports left by other tests
    yield
    state_files.take_pending()


def _ceilings_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "bench" / "ceilings" / "cpu.json"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "healthy.json"
    assert main(["synth", "healthy", "--steps", "3", "-o", str(out)]) == 0
    return out


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gpuperf: warning:")]


# --------------------------------------------------------------------------------------------
# Saved ceilings


def test_ceilings_with_a_wrong_type_are_set_aside_and_named_with_the_key(tmp_path: Path, capsys) -> None:
    path = _write(_ceilings_file(tmp_path), WRONG_TYPES)
    assert main(["roofline", "--gpu", "h200", "--precision", "bf16", "--json"]) == 0
    err = capsys.readouterr().err
    (line,) = _warnings(err)
    assert str(path) in line and "key matmul_flops_per_s" in line and "'abc'" in line
    assert "set aside as cpu.json.bad" in line and "Traceback" not in err
    assert not path.exists() and path.with_name("cpu.json.bad").read_text() == WRONG_TYPES  # kept, not deleted
    assert main(["roofline", "--gpu", "h200", "--precision", "bf16", "--json"]) == 0
    assert _warnings(capsys.readouterr().err) == []  # said once


def test_a_garbage_ceilings_file_is_no_longer_ignored_silently(tmp_path: Path, capsys) -> None:
    path = _write(_ceilings_file(tmp_path), GARBAGE)
    assert main(["gpus", "--json"]) == 0
    out, err = capsys.readouterr()
    (line,) = _warnings(err)
    assert str(path) in line and "invalid JSON" in line and "line 1" in line
    cpu = next(d for d in json.loads(out)["devices"] if d["id"] == "cpu")
    assert cpu["peak_flops_per_s"] == {}  # defaults: the cpu as if never measured


@pytest.mark.parametrize("entry, key", [
    ({"device_id": "cpu", "bandwidth_bytes_per_s": -5.0}, "bandwidth_bytes_per_s"),
    ({"device_id": "cpu", "matmul_flops_per_s": {"fp32": float("nan")}}, "matmul_flops_per_s.fp32"),
    ({"device_id": "cpu", "threads": "all"}, "threads"),
    ({"device_id": "cpu", "complete": "yes"}, "complete"),
    ({"device_id": "../../etc"}, "device_id"),
    ({"device_id": "h200"}, "device_id"),  # another device's entry in the cpu's file
])
def test_each_field_is_checked(tmp_path: Path, entry: dict, key: str) -> None:
    _write(_ceilings_file(tmp_path), json.dumps({"format": 2, "device_id": "cpu", "entries": [entry]}))
    assert load_ceiling_entries("cpu") == []
    (item,) = state_files.take_pending()
    assert item.where == f"key entries[0].{key}" or item.where == f"key {key}"
    assert item.moved_to == _ceilings_file(tmp_path).with_name("cpu.json.bad")


def test_ceilings_are_written_atomically(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "data" / "bench" / "ceilings"
    first = MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}, threads=8, method="cpu-perf_counter")
    save_ceilings(first)
    before = (folder / "cpu.json").read_bytes()

    def power_cut(src, dst):  # the replace never happens: the old file must be whole
        raise OSError(5, "Input/output error")
    second = MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 3.5e11}, threads=8, method="cpu-perf_counter")
    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(os, "replace", power_cut)
        save_ceilings(second)
    assert (folder / "cpu.json").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["cpu.json"]  # no temporary file left behind
    assert load_ceilings("cpu").matmul_flops_per_s == {"fp32": 2.9e11}


def test_fsync_before_replace(tmp_path: Path, monkeypatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 1e11}))
    assert calls[:2] == ["fsync", "replace"]


# --------------------------------------------------------------------------------------------
# The user's devices.toml


@pytest.mark.parametrize("text, said", [
    (TFLOPS_ARRAY, ["line 1", "tflops must be a table"]),
    (DEEP_ARRAY, ["nested too deeply"]),
    ("[a]\nname = 'x'\nmemory_bandwidth_tbs = 1e308\n", ["line 1", "memory_bandwidth_tbs", "(0, 10000]"]),
    ("[a]\nname = 7\n", ["line 1", "name must be a string"]),
])
def test_a_bad_devices_file_is_set_aside_and_the_shipped_devices_load(tmp_path: Path, capsys, text, said) -> None:
    path = _write(tmp_path / "config" / "devices.toml", text)
    assert main(["gpus"]) == 0
    out, err = capsys.readouterr()
    (line,) = _warnings(err)
    assert str(path) in line and "set aside as devices.toml.bad" in line
    assert all(word in line for word in said), line
    assert "h200" in out and "Traceback" not in err
    assert path.with_name("devices.toml.bad").read_text() == text and not path.exists()
    assert main(["gpus"]) == 0 and _warnings(capsys.readouterr().err) == []


def test_the_database_reports_it_once_without_a_cli(tmp_path: Path) -> None:
    _write(tmp_path / "config" / "devices.toml", TFLOPS_ARRAY)
    database = load_database()
    assert len(database.errors) == 1 and "tflops" in database.errors[0]
    (item,) = state_files.take_pending()
    assert item.where == "line 1" and item.moved_to.name == "devices.toml.bad"
    assert load_database().errors == [] and state_files.take_pending() == []


# --------------------------------------------------------------------------------------------
# Every command, with each corrupted file in place

COMMANDS = {
    "gpus": ["gpus"],
    "gpus --json": ["gpus", "--json"],
    "roofline cpu": ["roofline", "--gpu", "cpu", "--precision", "fp32"],
    "roofline h200 --json": ["roofline", "--gpu", "h200", "--precision", "bf16", "--ai", "10", "--json"],
    "mfu": ["mfu", "--params", "8e9", "--tokens-per-step", "1e6", "--step-time", "10", "--gpus", "8",
            "--gpu", "h100-sxm", "--precision", "bf16", "--json"],
    "synth": ["synth", "healthy", "--steps", "2", "-o", "{tmp}/out.json"],
    "diagnose": ["diagnose", "{trace}", "--json"],
    "diff": ["diff", "{trace}", "{trace}", "--json"],
}
CORRUPTIONS = {
    "ceilings wrong types": ("data/bench/ceilings/cpu.json", WRONG_TYPES),
    "ceilings garbage": ("data/bench/ceilings/cpu.json", GARBAGE),
    "devices tflops array": ("config/devices.toml", TFLOPS_ARRAY),
    "devices deep array": ("config/devices.toml", DEEP_ARRAY),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_runs_with_a_corrupted_state_file(tmp_path: Path, capsys, trace, command, corruption) -> None:
    relative, text = CORRUPTIONS[corruption]
    path = _write(tmp_path / relative, text)
    argv = [arg.format(tmp=tmp_path, trace=trace) for arg in COMMANDS[command]]
    code = main(argv)
    err = capsys.readouterr().err
    expected = 2 if command == "roofline cpu" else 0  # the cpu is unmeasured once its file is set aside
    assert code == expected, err
    assert "Traceback" not in err
    said = _warnings(err)
    assert len(said) <= 1 and len([line for line in err.splitlines() if str(path) in line]) <= 1
    if said:
        assert str(path) in said[0] and ".bad" in said[0]
    if command.startswith(("gpus", "roofline")):  # these read both files: they must say it
        assert len(said) == 1 and not path.exists()


def test_bench_runs_and_saves_over_a_corrupted_ceilings_file(tmp_path: Path, capsys, monkeypatch) -> None:
    from gpuperf_gui.core.bench import points
    monkeypatch.setattr(points, "UNRELIABLE_IQR_FRACTION", float("inf"))  # a 5 ms run on a shared machine
    path = _write(_ceilings_file(tmp_path), WRONG_TYPES)
    assert main(["bench", "--device", "cpu", "--kernels", "matmul", "--sizes", "64", "--dtypes", "fp32",
                 "--warmup-ms", "1", "--rep-ms", "5", "--quiet"]) == 0
    err = capsys.readouterr().err
    (line,) = _warnings(err)
    assert str(path) in line and "key matmul_flops_per_s" in line and "Traceback" not in err
    (entry,) = load_ceiling_entries("cpu")  # the run's own, saved in a fresh file
    assert entry.matmul_flops_per_s["fp32"] > 0 and entry.method == "cpu-perf_counter" and entry.threads
    assert path.with_name("cpu.json.bad").read_text() == WRONG_TYPES


# --------------------------------------------------------------------------------------------
# Run files


def test_a_bad_record_in_a_run_is_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "20260101-000000-cpu.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_header({"device": "cpu"})
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "point", "kernel": "matmul", "dtype": "fp32", "size": 64,
                                 "flops": 1.0, "bytes": 1.0, "seconds": "abc", "method": "x",
                                 "iqr_low_s": 0.0, "iqr_high_s": 0.0, "samples": 5}) + "\n")
        handle.write(json.dumps({"type": "ceilings", "device_id": "cpu", "matmul_flops_per_s": "abc"}) + "\n")
    run = read_run(path)
    assert run.points == [] and run.ceilings is None and run.torn_lines == 2
    assert run.problems == ["line 2: seconds must be a number ≥ 0, got 'abc'",
                            "line 3: matmul_flops_per_s: must be an object, got 'abc'"]
    assert path.exists()  # a readable run with bad lines stays where it is


def test_an_unreadable_run_of_ours_is_set_aside_but_a_file_the_user_picked_is_not(tmp_path: Path) -> None:
    ours = _write(tmp_path / "runs" / "20260101-000000-cpu.jsonl", "garbage\n" * 3)
    with pytest.raises(RunFileError, match=r"line 1: not JSON.*set aside as 20260101-000000-cpu\.jsonl\.bad"):
        read_run(ours)
    assert not ours.exists() and ours.with_name(ours.name + ".bad").exists()
    (item,) = state_files.take_pending()
    assert item.path == ours and item.where == "line 1"
    picked = _write(tmp_path / "elsewhere" / "notes.jsonl", "garbage\n")
    with pytest.raises(RunFileError, match="not a benchmark run"):
        read_run(picked)
    assert picked.exists() and state_files.take_pending() == []


# --------------------------------------------------------------------------------------------
# The catalog reads measurements only when asked


def test_the_catalog_reads_saved_measurements_only_when_asked(tmp_path: Path) -> None:
    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11}, bandwidth_bytes_per_s=1e10,
                                   threads=4, method="cpu-perf_counter"))
    plain = DeviceCatalog.load()
    assert plain.measured("cpu") is None and plain.device("cpu").dense_flops_per_s == {}
    changes: list[tuple[str, bool]] = []
    plain.on_change = lambda device_id, added: changes.append((device_id, added))
    assert plain.read_saved_measurements() == ["cpu"]
    assert changes == [("cpu", False)]
    assert plain.device("cpu").peak_flops_per_s("fp32") == 2.9e11
    assert plain.measured("cpu").threads == 4
