"""State files that are not regular files, or too big, and state files written at once (docs/robustness.md, State files).

Every file we read (saved ceilings, devices.toml, run files, traces) goes through one check before
a byte is read (:func:`state_files.open_regular`): a FIFO, a folder or a link to ``/dev/zero`` is
refused at once with one line saying what it is; nothing blocks, nothing reads without end. The
tests make real FIFOs (``os.mkfifo``) and run each command in a subprocess with a timeout where a
hang would otherwise hang the suite.
"""
from __future__ import annotations

import json
import re
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core import state_files
from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, ceilings_path, load_ceiling_entries, save_ceilings
from gpuperf_gui.core.bench.results import RUN_NAME, RunFileError, new_run_path, read_run
from gpuperf_gui.core.hardware import load_database, parse_devices

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUPERF_DEVICES_FILE", str(tmp_path / "config" / "devices.toml"))
    state_files.take_pending()
    yield
    state_files.take_pending()


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _dev_zero(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")
    return path


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


MAKERS = {"fifo": (_fifo, "a named pipe (FIFO)"), "dev_zero": (_dev_zero, "a character device"),
          "folder": (_folder, "a folder")}


def _ceilings(tmp_path: Path) -> Path:
    return tmp_path / "data" / "bench" / "ceilings" / "cpu.json"


def _cli(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``gpuperf ARGS`` in a subprocess: a hang fails the test instead of the suite."""
    env = {**os.environ, "GPUPERF_DATA_DIR": str(tmp_path / "data"),
           "GPUPERF_DEVICES_FILE": str(tmp_path / "config" / "devices.toml")}
    return subprocess.run([sys.executable, "-m", "gpuperf_gui.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.parametrize("kind", MAKERS)
def test_saved_ceilings_that_are_not_a_file_are_set_aside_at_once(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    path = make(_ceilings(tmp_path))
    assert load_ceiling_entries("cpu") == []
    (item,) = state_files.take_pending()
    assert item.path == path and said in item.problem and item.moved_to == path.with_name("cpu.json.bad")
    assert not os.path.lexists(path)  # the next run starts clean


@pytest.mark.slow
def test_gpus_with_a_fifo_as_saved_ceilings_says_so_and_exits_0(tmp_path: Path) -> None:
    """It blocked `gpuperf gpus` forever."""
    _fifo(_ceilings(tmp_path))
    done = _cli(tmp_path, "gpus", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "cpu.json" in ln]
    assert line.startswith("gpuperf: warning: ") and "a named pipe (FIFO), not a regular file" in line


@pytest.mark.parametrize("kind", MAKERS)
def test_a_devices_file_that_is_not_a_file_is_reported_and_the_shipped_devices_load(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    make(tmp_path / "config" / "devices.toml")
    database = load_database()
    assert database.get("h200").name
    (error,) = database.errors
    assert "devices.toml" in error and said in error


@pytest.mark.parametrize("kind", MAKERS)
def test_a_run_file_that_is_not_a_file_is_one_line(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    path = make(tmp_path / "data" / "bench" / "runs" / "20260101-000000-cpu.jsonl")
    with pytest.raises(RunFileError, match=re.escape(said)) as caught:
        read_run(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])  # a folder is a folder of ranks
def test_a_trace_that_is_not_a_file_is_one_line_and_exit_2(tmp_path: Path, capsys, kind: str) -> None:
    make, said = MAKERS[kind]
    path = make(tmp_path / "rank.json")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err


def test_a_state_file_over_its_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 1001)
    with pytest.raises(state_files.UnusableStateFile, match="1,001 bytes, over the 1,000 bytes"):
        state_files.read_state_text(path, max_bytes=1000)
    assert state_files.read_state_text(path, max_bytes=1001) == " " * 1001


# ---- concurrent writers ---------------------------------------------------------------------
def test_two_runs_started_in_the_same_second_get_two_files(tmp_path: Path, monkeypatch) -> None:
    """Both found ``...-cpu.jsonl`` free and appended to it; read back as one run."""
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101-120000")
    names = {new_run_path("cpu") for _ in range(200)}
    assert len(names) == 200 and all(RUN_NAME.fullmatch(p.name) for p in names)


def _save_entry(data_dir: str, threads: int, rounds: int) -> None:
    os.environ["GPUPERF_DATA_DIR"] = data_dir
    for i in range(rounds):
        save_ceilings(MeasuredCeilings(device_id="cpu", device_name="cpu", method="bench", threads=threads,
                                       matmul_flops_per_s={"fp32": 1e9 + i}))


@pytest.mark.slow
def test_saves_of_ceilings_at_once_keep_every_entry(tmp_path: Path) -> None:
    """Four processes each saving their own entry (key: threads) 20 times: without the lock the
    read-modify-write of one lost another's entry."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_save_entry, args=(str(tmp_path / "data"), threads, 20)) for threads in (1, 2, 3, 4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    entries = load_ceiling_entries("cpu")
    assert sorted(e.threads for e in entries) == [1, 2, 3, 4]
    assert all(e.matmul_flops_per_s["fp32"] == 1e9 + 19 for e in entries)


def test_a_stale_temporary_of_a_killed_save_is_removed_by_the_next_save(tmp_path: Path) -> None:
    path = ceilings_path("cpu")
    path.parent.mkdir(parents=True)
    stale, fresh = path.with_name(".cpu.json.killed.tmp"), path.with_name(".cpu.json.inprogress.tmp")
    stale.write_text("{")
    fresh.write_text("{")
    old = time.time() - 2 * state_files.STALE_TMP_SECONDS
    os.utime(stale, (old, old))
    save_ceilings(MeasuredCeilings(device_id="cpu", device_name="cpu", method="bench", threads=1,
                                   matmul_flops_per_s={"fp32": 1e9}))
    assert not stale.exists() and fresh.exists()  # one in progress (younger) is left alone
    assert json.loads(path.read_text())["entries"][0]["threads"] == 1


# ---- devices.toml at scale -----------------------------------------------------------------
def _devices(n: int) -> str:
    return "".join(f'[dev-{i}]\nname = "Device {i}"\nmemory_bandwidth_tbs = 1.5\nmatch = ["Device {i}"]\n'
                   f'[dev-{i}.tflops]\nbf16 = 100\n' for i in range(n))


@pytest.mark.slow
def test_20000_devices_parse_in_linear_time() -> None:
    """4,000 devices took 23 s (a scan of the whole text per device), 20,000 hung every command.
    CPU time of 20,000 against 2,000: linear is ~10x, the old quadratic code ~100x."""
    small, big = _devices(2_000), _devices(20_000)
    t0 = time.process_time()
    assert len(parse_devices(small, "user file", "small.toml")) == 2_000
    t1 = time.process_time()
    assert len(parse_devices(big, "user file", "big.toml")) == 20_000
    t2 = time.process_time()
    assert (t2 - t1) < 40 * max(t1 - t0, 0.02), (t1 - t0, t2 - t1)


# ---- rank folders ---------------------------------------------------------------------------
def test_a_rank_named_file_that_is_not_a_file_gets_a_note_and_the_others_load(tmp_path: Path, capsys) -> None:
    """A FIFO, a folder and a dangling link named like rank files were dropped without a note."""
    from gpuperf_gui.core.trace.session.trace import Trace

    folder = tmp_path / "run"
    folder.mkdir()
    assert main(["synth", "healthy", "--steps", "2", "-o", str(folder / "rank1.json")]) == 0
    os.mkfifo(folder / "rank0.json")
    (folder / "rank2.json").mkdir()
    (folder / "rank3.json").symlink_to("gone.json")
    capsys.readouterr()
    model = Trace([folder], workers=1).model()
    assert len(model.ranks) == 1
    notes = {note.split()[2]: note for note in model.notes}  # "rank file rank0.json could not be loaded..."
    assert sorted(notes) == ["rank0.json", "rank2.json", "rank3.json"]
    assert "a named pipe (FIFO), not a regular file" in notes["rank0.json"]
    assert "a folder, not a regular file" in notes["rank2.json"]
    assert "a link to gone.json, which does not exist" in notes["rank3.json"]
    assert main(["diagnose", str(folder), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["load_notes"]) == 3
