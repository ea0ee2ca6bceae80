"""Fuzzing the trace input side in CI: mutated real traces through load + analysis + JSON + lanes.

Two fuzzers over the seeds of :mod:`fuzz_support` (real traces from tests/data, cut to their first
events): a deterministic mutation fuzz of 2,000 inputs (byte flips, truncation, number swaps,
deleted keys, type swaps, renamed ops and phases, shuffled or duplicated events, gzip) and a
hypothesis fuzz that draws the same mutations and shrinks what fails. Every input must load with
every figure in range or be refused with a TraceFormatError naming the file: never a crash, never
a hang. The long run is benchmarks/fuzz.py.
"""
from __future__ import annotations

import gzip
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_support import SCRATCH, STRUCTURE_MUTATORS, Seed, _byte_mutate, _encode, check_input, load_seeds, mutate

SEEDS = load_seeds()
N_INPUTS = 2_000
TIME_LIMIT_S = 60.0


def test_seeds_load_cleanly() -> None:
    """The unmutated seeds are real traces: they must load, or the fuzz tests nothing."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as folder:
        for seed in SEEDS:
            outcome = check_input(_encode(seed.doc, random.Random(0)), Path(folder) / "trace.json")
            assert outcome.kind == "loaded", (seed.name, outcome.detail)


def test_mutation_fuzz_2000_inputs_within_a_minute(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    t0 = time.process_time()  # CPU time: the bound holds on a runner shared with other jobs
    with tempfile.TemporaryDirectory(dir=SCRATCH) as folder:
        for i in range(N_INPUTS):
            seed = rng.choice(SEEDS)
            data, name = mutate(seed, rng)
            outcome = check_input(data, Path(folder) / name)
            counts[outcome.kind] += 1
            if outcome.kind in ("crash", "hang"):
                repro = tmp_path / f"input-{i}-{name}"
                repro.write_bytes(data)  # the reproducer, kept by pytest's tmp_path
                failures.append(f"input {i} (seed {seed.name}, saved as {repro}): {outcome.kind}\n{outcome.detail}")
    elapsed_s = time.process_time() - t0
    assert not failures, "\n\n".join(failures[:3])
    assert counts["loaded"] > N_INPUTS // 10 and counts["refused"] > N_INPUTS // 20, counts  # both paths
    assert elapsed_s < TIME_LIMIT_S, f"{N_INPUTS} inputs took {elapsed_s:.1f} s of CPU"


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed_index=st.integers(0, len(SEEDS) - 1),
       structure=st.lists(st.tuples(st.integers(0, len(STRUCTURE_MUTATORS) - 1), st.integers(0, 2**32)), max_size=4),
       byte_ops=st.lists(st.integers(0, 2**32), max_size=3),
       packed=st.booleans())
def test_hypothesis_fuzz(tmp_path: Path, seed_index: int, structure: list[tuple[int, int]],
                         byte_ops: list[int], packed: bool) -> None:
    seed: Seed = SEEDS[seed_index]
    data, name = _build(seed, structure, byte_ops, packed)
    outcome = check_input(data, tmp_path / name)
    assert outcome.kind in ("loaded", "refused"), f"{seed.name}: {outcome.kind}\n{outcome.detail}"


def _build(seed: Seed, structure: list[tuple[int, int]], byte_ops: list[int], packed: bool) -> tuple[bytes, str]:
    doc = json.loads(json.dumps(seed.doc))
    for which, r in structure:
        STRUCTURE_MUTATORS[which](doc, random.Random(r))
    data = _encode(doc, random.Random(len(structure)))
    for r in byte_ops:
        data = _byte_mutate(data, random.Random(r))
    if packed:
        return gzip.compress(data, compresslevel=1), "trace.json.gz"
    return data, "trace.json"
