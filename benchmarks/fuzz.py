"""The long fuzz of the trace input side: mutated real traces through load + analysis + JSON + lanes.

Usage: python benchmarks/fuzz.py [--inputs 50000] [--workers 2] [--seed 1] [--out DIR]

The same seeds, mutators and check as the CI fuzz (tests/core/fuzz_support.py,
tests/core/test_fuzz_loader.py), many more inputs, in worker processes. Prints the inputs run, how
many loaded and how many were refused with a clear error, the crashes and hangs (each saved to
``--out`` with its traceback), the peak RSS of any process and the rate. Exit status 1 when there
was a crash or a hang.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "core")]

import fuzz_support as fs  # noqa: E402

CHUNK = 250


def run_chunk(base_seed: int, index: int, n: int, out: str) -> tuple[Counter, list[str], int, float]:
    """Inputs ``index*CHUNK ..`` of the run: (outcome counts, failure notes, peak RSS, slowest s)."""
    seeds = _seeds()
    rng = random.Random(f"{base_seed}-{index}")
    counts: Counter[str] = Counter()
    failures: list[str] = []
    slowest_s = 0.0
    with tempfile.TemporaryDirectory(dir=fs.SCRATCH) as folder:
        for k in range(n):
            seed = rng.choice(seeds)
            data, name = fs.mutate(seed, rng)
            t0 = time.perf_counter()
            outcome = fs.check_input(data, Path(folder) / name)
            slowest_s = max(slowest_s, time.perf_counter() - t0)
            counts[outcome.kind] += 1
            if outcome.kind in ("crash", "hang"):
                stem = Path(out) / f"{outcome.kind}-{index}-{k}"
                stem.with_suffix("." + name).write_bytes(data)
                stem.with_suffix(".txt").write_text(f"seed {seed.name}\n{outcome.detail}\n")
                last = outcome.detail.strip().splitlines()[-1] if outcome.detail.strip() else outcome.kind
                failures.append(f"{stem.name} ({seed.name}): {last}")
    return counts, failures, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, slowest_s


_SEEDS: list = []


def _seeds() -> list:
    if not _SEEDS:
        _SEEDS.extend(fs.load_seeds())
    return _SEEDS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="where crash/hang inputs are saved")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpuperf-fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    chunks = [(i, min(CHUNK, args.inputs - i * CHUNK)) for i in range((args.inputs + CHUNK - 1) // CHUNK)]
    counts: Counter[str] = Counter()
    failures: list[str] = []
    peak_rss = 0
    slowest_s = 0.0
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_chunk, args.seed, i, n, str(out)) for i, n in chunks]
        for done, fut in enumerate(as_completed(futures), 1):
            c, f, rss, slow = fut.result()
            counts += c
            failures += f
            peak_rss, slowest_s = max(peak_rss, rss), max(slowest_s, slow)
            if done % 20 == 0:
                print(f"  {sum(counts.values()):,} inputs, {counts['crash']} crashes, {counts['hang']} hangs, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
    wall_s = time.perf_counter() - t0
    peak_rss = max(peak_rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    total = sum(counts.values())
    print(f"fuzz of the trace input side: {total:,} inputs from {len(_seeds() or fs.load_seeds())} real seed traces, "
          f"{args.workers} worker processes, seed {args.seed}")
    print(f"  loaded {counts['loaded']:,}, refused with a clear error {counts['refused']:,}, "
          f"crashes {counts['crash']}, hangs {counts['hang']} (> {fs.HANG_S:g} s)")
    print(f"  peak RSS of any process {peak_rss / 1e6:.0f} MB, slowest input {slowest_s:.2f} s, "
          f"{total / wall_s:.0f} inputs/s, {wall_s:.0f} s")
    for line in failures[:20]:
        print("  " + line)
    if failures:
        print(f"  reproducers in {out}")
    return 1 if counts["crash"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
