"""The CPU's cache levels (sysfs), where a working set lives, and the cache roofs of a copy sweep.

The sysfs tree is the one of this project's 2-core Xeon VM, written out by hand from
`/sys/devices/system/cpu/cpu0/cache/index*` (lscpu: L1d 96 KiB in 2 instances, L1i 128 KiB, L2 4 MiB
in 2 instances, L3 480 MiB in 1). The run is tests/data/bench/cpu_cache_run.jsonl (made there)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gpuperf_gui.core.bench.cache_levels import (
    CacheLevel,
    cache_roofs,
    read_cpu_caches,
    residency,
    run_cache_levels,
    with_residency,
)
from gpuperf_gui.core.bench.results import read_run

RUN = Path(__file__).resolve().parents[1] / "data" / "bench" / "cpu_cache_run.jsonl"
KIB, MIB = 1024, 1024**2


def _sysfs(root: Path) -> Path:
    cache = root / "cpu0" / "cache"
    for index, (level, kind, size, shared) in enumerate(
            [(1, "Data", "48K", "0"), (1, "Instruction", "64K", "0"), (2, "Unified", "2048K", "0"),
             (3, "Unified", "491520K", "0-1")]):
        folder = cache / f"index{index}"
        folder.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (folder / name).write_text(f"{value}\n")
    (root / "online").write_text("0-1\n")
    return root


def test_the_data_caches_are_read_from_sysfs(tmp_path):
    levels = read_cpu_caches(_sysfs(tmp_path))
    assert levels == (CacheLevel("L1", 48 * KIB, 2), CacheLevel("L2", 2 * MIB, 2), CacheLevel("L3", 480 * MIB, 1))
    assert read_cpu_caches(tmp_path / "nothing") == ()


def test_a_working_set_lives_in_the_smallest_level_that_holds_it(tmp_path):
    levels = read_cpu_caches(_sysfs(tmp_path))
    # one thread: one core's L1d (48 KiB) and L2 (2 MiB); two threads: both cores' (96 KiB, 4 MiB)
    assert residency(48 * KIB, levels, 1) == "L1" and residency(48 * KIB + 1, levels, 1) == "L2"
    assert residency(96 * KIB, levels, 2) == "L1" and residency(3 * MIB, levels, 2) == "L2"
    assert residency(3 * MIB, levels, 1) == "L3"
    assert residency(480 * MIB, levels, 16) == "L3"      # shared: one instance, whatever the threads
    assert residency(480 * MIB + 1, levels, 2) == "memory"


def test_the_cache_roofs_are_the_best_copy_of_each_level():
    run = read_run(RUN)
    records = [json.loads(line) for line in RUN.read_text().splitlines()]
    copies = [r for r in records if r["type"] == "point" and r["kernel"] == "copy"]
    # by hand, with 2 threads: 128 KiB..2 MiB working sets in L2 (4 MiB), 8..128 MiB in L3, 512 MiB beyond
    l2 = max(r["bytes"] / r["seconds"] for r in copies if 96 * KIB < r["working_set_bytes"] <= 4 * MIB)
    l3 = max(r["bytes"] / r["seconds"] for r in copies if 4 * MIB < r["working_set_bytes"] <= 480 * MIB)
    roofs = cache_roofs(run.points)
    assert [(r.level, r.bandwidth_bytes_per_s) for r in roofs] == [("L2", l2), ("L3", l3)]


def test_an_older_run_gets_its_levels_from_its_header_or_this_machine():
    run = read_run(RUN)
    old = [replace(p, cache_level=None) for p in run.points]       # as written before levels were kept
    levels = run_cache_levels(run.header)
    assert [level.name for level in levels] == ["L1", "L2", "L3"]
    assert [p.cache_level for p in with_residency(old, levels)] == [p.cache_level for p in run.points]
    elsewhere = {k: v for k, v in run.header.items() if k != "cache_levels"} | {"host": "another-machine"}
    assert run_cache_levels(elsewhere) == ()                          # not guessed from this machine
