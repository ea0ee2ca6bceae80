"""Running a core generator in a helper interpreter (gpuperf_gui.core.child_stream)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gpuperf_gui.core.child_stream import HelperProcessError, iter_in_child


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))


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
