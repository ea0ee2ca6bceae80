"""Running a core generator in a helper interpreter (gpuperf_gui.core.child_stream)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gpuperf_gui.core.child_stream import HelperProcessError, iter_in_child


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))   # a helper sees this process's sys.path


def test_items_and_kwargs_are_relayed():
    assert list(iter_in_child("child_targets:count", (4,), {"scale": 10})) == [0, 10, 20, 30]


def test_child_error_is_reraised_after_its_items():
    seen = []
    with pytest.raises(ValueError, match="bad input in the child"):
        for item in iter_in_child("child_targets:fail_after", (2,)):
            seen.append(item)
    assert seen == [0, 1]


def test_stop_lets_the_generator_finish_cleanly():
    stop = threading.Event()
    items = []
    for item in iter_in_child("child_targets:until_stopped", stop=stop):
        items.append(item)
        stop.set()
    assert items == ["started", "stopped cleanly"]


def test_child_that_ignores_stop_is_killed_after_grace():
    stop = threading.Event()
    started = time.monotonic()
    items = []
    for item in iter_in_child("child_targets:ignore_stop", stop=stop, grace_s=0.3):
        items.append(item)
        stop.set()
    assert items == ["started"]
    assert time.monotonic() - started < 10


def test_dead_child_is_a_clear_error():
    with pytest.raises(HelperProcessError, match="exit code 9"):
        list(iter_in_child("child_targets:die"))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"  # a zombie is dead, waiting to be reaped
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_cancel_kills_what_the_helper_started():
    stop = threading.Event()
    pids = []
    for pid in iter_in_child("child_targets:spawn_sleeper", stop=stop, grace_s=0.0):
        pids.append(pid)
        stop.set()
    deadline = time.monotonic() + 5
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids[0])


def _mapped(array) -> bool:
    """Whether ``array``'s memory belongs to a memory mapping (follows the base chain)."""
    import mmap

    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return False


def test_big_arrays_arrive_exactly_as_views_of_a_mapped_file(tmp_path, monkeypatch):
    import numpy as np

    from gpuperf_gui.core import child_stream

    if not child_stream.CAN_SPILL:
        pytest.skip("out-of-band transfer is POSIX only")
    monkeypatch.setattr(child_stream, "spill_root", lambda: str(tmp_path))  # the transfer folder goes here
    n = 600_000   # 4.8 MB of float64: above SPILL_MIN_BYTES
    stats: dict[str, float] = {}
    item, pid = list(iter_in_child("child_targets:arrays", (n,), stats=stats))
    rng = np.random.default_rng(7)   # the same numbers, drawn again here
    assert np.array_equal(item["f8"], rng.random(n))
    assert np.array_equal(item["i4"], np.arange(n, dtype=np.int32)[::-1])
    assert np.array_equal(item["strided"], np.arange(0, 2 * n, 2))
    assert item["small"].tolist() == [0, 1, 2, 3, 4] and item["text"] == "kept"
    assert item["f8"].dtype == np.float64 and item["i4"].dtype == np.int32
    assert _mapped(item["f8"]) and _mapped(item["i4"])        # no copy in this process
    assert not _mapped(item["small"])                        # 40 bytes: through the pipe
    assert stats["spilled_bytes"] >= item["f8"].nbytes + item["i4"].nbytes and stats["transfer_s"] > 0
    item["f8"][0] = -1.0                                     # copy-on-write: writable, private
    assert item["f8"][0] == -1.0
    assert list(tmp_path.iterdir()) == []                    # file unlinked, folder removed
    assert not _alive(pid)                                   # the helper has exited


def test_dump_and_load_spilled_round_trip(tmp_path):
    import numpy as np

    from gpuperf_gui.core.child_stream import dump_spilled, load_spilled

    payload = {"a": np.linspace(0.0, 1.0, 300_000), "b": np.arange(3, dtype=np.int16), "c": [1, "x"],
               "d": np.ones((400, 700), dtype=np.float32)}
    data, name, spans, _ = dump_spilled(payload, tmp_path, min_bytes=1000)
    assert name is not None and len(spans) == 2                      # "a" and "d"; "b" is 6 bytes
    assert all(offset % 64 == 0 for offset, _ in spans)              # aligned for numpy
    back = load_spilled(data, name, spans, tmp_path)
    assert not (tmp_path / name).exists()
    assert np.array_equal(back["a"], np.linspace(0.0, 1.0, 300_000)) and back["d"].shape == (400, 700)
    assert back["b"].tolist() == [0, 1, 2] and back["c"] == [1, "x"]
    data, name, spans, _ = dump_spilled({"small": np.arange(4)}, tmp_path)
    assert name is None and spans == [] and load_spilled(data, name, spans, tmp_path)["small"].tolist() == [0, 1, 2, 3]


def test_a_generator_goes_on_with_the_mapped_twin_of_what_it_sent():
    from gpuperf_gui.core import child_stream

    n = 100_000
    item, report = list(iter_in_child("child_targets:mapped_twin", (n,)))
    assert float(item["a"].sum()) == n * (n - 1) / 2
    if child_stream.CAN_SPILL:   # the child's twin: equal values, and a view of the mapped file
        assert report == ("twin", n * (n - 1) / 2, True)
    else:
        assert report == "no twin"


def test_a_twin_sent_again_is_not_written_twice():
    import numpy as np

    from gpuperf_gui.core import child_stream

    if not child_stream.CAN_SPILL:
        pytest.skip("out-of-band transfer is POSIX only")
    n = 200_000   # 1.6 MB per array
    stats: dict[str, float] = {}
    first, second = list(iter_in_child("child_targets:twin_sent_again", (n,), stats=stats))
    assert np.array_equal(first, np.arange(n)) and np.array_equal(second["again"], np.arange(n))
    assert np.array_equal(second["new"], np.full(n, 2.0))
    # spilled_bytes counts what each item referenced in the file: 3 arrays, ...
    assert stats["spilled_bytes"] == 3 * 8 * n
    # ... but the file holds two: "again" is the first array's place in it, not a new copy
    assert 2 * 8 * n <= stats["file_bytes"] < 2 * 8 * n + 4096


def test_an_item_stored_but_not_relayed_reaches_the_parent_only_inside_the_next():
    import numpy as np

    from gpuperf_gui.core import child_stream

    n = 200_000
    stats: dict[str, float] = {}
    items = list(iter_in_child("child_targets:stored_then_sent", (n,), stats=stats))
    assert len(items) == 1                                   # the stored array was not relayed
    if not child_stream.CAN_SPILL:
        assert items[0]["twin"] is None
        return
    assert items[0]["was_mapped"] and np.array_equal(items[0]["twin"], np.arange(n))
    assert 8 * n <= stats["file_bytes"] < 8 * n + 4096      # written once


def test_a_helper_started_ahead_runs_the_next_task_with_its_modules_imported(monkeypatch):
    from gpuperf_gui.core import child_stream

    child_stream.discard_spare_helper()
    child_stream.prestart_helper(("child_targets_preloaded",))
    spare = child_stream._spare
    [(pid, _)] = list(iter_in_child("child_targets:whoami"))   # not asked to: a helper of its own
    assert pid != spare.pid and child_stream._spare is spare
    [(pid, preloaded)] = list(iter_in_child("child_targets:whoami", ahead=True))
    assert pid == spare.pid and preloaded
    assert child_stream._spare is None                 # taken: the task after it starts its own
    [(pid_after, preloaded_after)] = list(iter_in_child("child_targets:whoami", ahead=True))
    assert pid_after != pid and not preloaded_after


def test_a_helper_started_before_a_setting_changed_is_not_used(monkeypatch):
    from gpuperf_gui.core import child_stream

    child_stream.discard_spare_helper()
    child_stream.prestart_helper(("child_targets_preloaded",))
    spare = child_stream._spare
    monkeypatch.setenv("GPUPERF_DECODE_WORKERS", "1")  # a helper must see the environment of now
    [(pid, _)] = list(iter_in_child("child_targets:whoami", ahead=True))
    assert pid != spare.pid
    assert spare.wait(5) is not None                    # the stale one was ended, not left behind
    child_stream.prestart_helper()
    child_stream.discard_spare_helper()
    assert child_stream._spare is None


def test_a_helper_killed_by_a_signal_says_so_and_the_next_task_runs():
    seen = []
    with pytest.raises(HelperProcessError, match="killed by SIGKILL.*out of memory"):
        for item in iter_in_child("child_targets:killed"):
            seen.append(item)
    assert seen == [1]
    assert list(iter_in_child("child_targets:count", (2,))) == [0, 1]   # the app goes on


def test_a_helper_started_ahead_that_died_while_waiting_is_replaced():
    import os
    import signal

    from gpuperf_gui.core import child_stream

    child_stream.discard_spare_helper()
    child_stream.prestart_helper()
    spare = child_stream._spare
    os.kill(spare.pid, signal.SIGKILL)
    assert spare.wait(5) is not None
    [(pid, _)] = list(iter_in_child("child_targets:whoami", ahead=True))
    assert pid != spare.pid


def test_an_error_that_does_not_pickle_still_arrives_with_its_message():
    with pytest.raises(RuntimeError, match="_Unpicklable: lost in transit"):
        list(iter_in_child("child_targets:unpicklable_error"))


def test_a_failing_initializer_is_the_task_error():
    with pytest.raises(RuntimeError, match="the initializer failed"):
        list(iter_in_child("child_targets:count", (2,), initializer="child_targets:failing_initializer"))


def test_a_helper_started_ahead_with_another_initializer_is_not_used():
    from gpuperf_gui.core import child_stream

    child_stream.discard_spare_helper()
    child_stream.prestart_helper(initializer="child_targets:count")
    spare = child_stream._spare
    [(pid, _)] = list(iter_in_child("child_targets:whoami", ahead=True))
    assert pid != spare.pid and spare.wait(5) is not None


def test_stray_prints_in_the_helper_go_to_stderr(capfd):
    assert list(iter_in_child("child_targets:prints")) == ["after the print"]
    out, err = capfd.readouterr()
    assert "stray print" not in out and "stray print" in err


def test_a_transfer_of_big_arrays_cancelled_midway_leaves_no_file_and_no_helper(tmp_path, monkeypatch):
    from gpuperf_gui.core import child_stream

    if not child_stream.CAN_SPILL:
        pytest.skip("out-of-band transfer is POSIX only")
    monkeypatch.setattr(child_stream, "spill_root", lambda: str(tmp_path))
    stop = threading.Event()
    got = []
    for pid, array in iter_in_child("child_targets:big_arrays_forever", (500_000,), stop=stop, grace_s=0.0):
        got.append(float(array.sum()))
        if len(got) == 2:
            stop.set()
    assert got[:2] == [500_000.0, 500_000.0]
    assert list(tmp_path.iterdir()) == []            # the transfer file and its folder are gone
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_an_app_that_exits_with_a_helper_started_ahead_does_not_wait_for_it():
    import subprocess
    import sys

    code = ("from gpuperf_gui.core.child_stream import prestart_helper, _spare\n"
            "import gpuperf_gui.core.child_stream as cs\n"
            "cs.prestart_helper()\n"
            "print(cs._spare.pid, flush=True)\n")   # exits with the spare still waiting for a task
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 15
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_helper_that_cannot_start_leaves_no_transfer_folder(tmp_path, monkeypatch):
    """A script without the spawn rule's main guard fails so (docs/helper-process.md)."""
    from gpuperf_gui.core import child_stream

    def cannot_start(*_args, **_kwargs):
        raise RuntimeError("An attempt has been made to start a new process before ...")

    monkeypatch.setattr(child_stream, "spill_root", lambda: str(tmp_path))
    monkeypatch.setattr(child_stream, "Helper", cannot_start)
    with pytest.raises(RuntimeError, match="start a new process"):
        list(iter_in_child("child_targets:count", (2,)))
    assert list(tmp_path.iterdir()) == []
