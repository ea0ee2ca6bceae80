"""Fuzzing the trace input side in CI: mutated real traces through load + analysis + JSON + lanes.

Two fuzzers over the seeds of :mod:`fuzz_support` (real traces from tests/data, cut to their first
events): a deterministic mutation fuzz of 2,000 inputs in the slow tier (`-m slow`; the default run
takes its first 250, the same inputs) (byte flips, truncation, number swaps,
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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_support import SCRATCH, STRUCTURE_MUTATORS, Seed, _byte_mutate, _encode, check_input, load_seeds, mutate

SEEDS = load_seeds()
N_INPUTS = 2_000
TIME_LIMIT_S = 60.0  # CPU seconds for N_INPUTS; a shorter run gets its share
QUICK_INPUTS = 250   # the default tier: the first inputs of the same sequence


def test_seeds_load_cleanly() -> None:
    """The unmutated seeds are real traces: they must load, or the fuzz tests nothing."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as folder:
        for seed in SEEDS:
            outcome = check_input(_encode(seed.doc, random.Random(0)), Path(folder) / "trace.json")
            assert outcome.kind == "loaded", (seed.name, outcome.detail)


@pytest.mark.parametrize("n_inputs", [QUICK_INPUTS, pytest.param(N_INPUTS, marks=pytest.mark.slow)])
def test_mutation_fuzz_within_a_minute_per_2000_inputs(tmp_path: Path, n_inputs: int) -> None:
    rng = random.Random(20261201)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    t0 = time.process_time()  # CPU time: the bound holds on a runner shared with other jobs
    with tempfile.TemporaryDirectory(dir=SCRATCH) as folder:
        for i in range(n_inputs):
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
    assert counts["loaded"] > n_inputs // 10 and counts["refused"] > n_inputs // 20, counts  # both paths
    limit_s = TIME_LIMIT_S * n_inputs / N_INPUTS
    assert elapsed_s < limit_s, f"{n_inputs} inputs took {elapsed_s:.1f} s of CPU (limit {limit_s:.1f} s)"


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
