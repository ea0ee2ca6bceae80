"""RowIndex build and fold_row query figures: this tree's lod.py against the committed one (HEAD).

Prints the median RowIndex build time of 1M- and 3M-event rows, the zoom index's bytes per event
(what the loading helper sends to the GUI besides the event times), and the median fold_row time
at five zoom levels, two window positions each, on two 3M-event rows, 1600 px: the GPU row of
benchmarks/lane_render.py, and a bursty row (bursts of 50 back-to-back kernels, heavy-tailed gaps
between them: some boundaries at every zoom); then zoomed into the sparse half of a row whose
other half is dense, where the max-tree (not the sorted top keys) answers. Every fold is checked
equal, array by array, between the two versions. Old and new alternate call by call, so that
load on the machine falls on both.

    nice .venv/bin/python benchmarks/lod_index.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gpuperf_gui.core.trace.model import lod as new_lod

REPO = Path(__file__).resolve().parents[1]
ZOOMS = (1.0, 0.1, 0.01, 1e-3, 1e-4)
WIDTH_PX = 1600


def committed_lod() -> types.ModuleType:
    """lod.py as committed at HEAD (the argsort index), imported under another name."""
    source = subprocess.run(["git", "show", "HEAD:gpuperf_gui/core/trace/model/lod.py"], cwd=REPO,
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("lod_head")
    sys.modules[module.__name__] = module   # dataclasses looks the module up
    exec(compile(source, "lod_head.py", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module


def bursty_row(n: int, seed: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Bursts of 50 kernels of 0.5 µs, 1 µs apart; lognormal(3, 2.5) µs gaps between bursts."""
    rng = np.random.default_rng(seed)
    gap = np.repeat(rng.lognormal(3.0, 2.5, -(-n // 50)), 50)[:n] * (np.arange(n) % 50 == 0) + 1.0
    starts = np.cumsum(gap)
    return starts, starts + 0.5


def synthetic_row(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """benchmarks/lane_render.py's GPU row: 2-40 µs kernels, a few long ones, heavy-tailed gaps."""
    rng = np.random.default_rng(seed)
    dur = np.where(rng.random(n) < 0.97, rng.uniform(2, 40, n), rng.uniform(200, 3000, n))
    starts = np.cumsum(rng.lognormal(0.5, 2.0, n) + np.concatenate(([0.0], dur[:-1])))
    return starts, starts + dur


def median_ms(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median time of each call in ms, the calls interleaved one by one."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(repeats):
        for label, call in calls.items():
            t = time.perf_counter()
            call()
            times[label].append((time.perf_counter() - t) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def index_bytes(index: object, names: tuple[str, ...]) -> int:
    return sum(getattr(index, name).nbytes for name in names)


def build_figures(old: types.ModuleType, repeats: int) -> None:
    print("RowIndex build (median ms)")
    for n in (1_000_000, 3_000_000):
        s, e = synthetic_row(n)
        ms = median_ms({"old": lambda: old.RowIndex(s, e), "new": lambda: new_lod.RowIndex(s, e)}, repeats)
        old_b = index_bytes(old.RowIndex(s, e), ("order", "key_sorted")) / n
        new_b = index_bytes(new_lod.RowIndex(s, e), ("key_max_tree", "top_keys", "top_index")) / n
        print(f"  {n:>9,} events  old {ms['old']:7.1f} ms  new {ms['new']:7.1f} ms  "
              f"({ms['old'] / ms['new']:.1f}x faster)   zoom index: old {old_b:.2f} B/event "
              f"(order + key_sorted), new {new_b:.2f} B/event (key_max_tree + top_keys + top_index)")


def assert_same(a: object, b: object) -> None:
    for name in ("start_us", "end_us", "count", "first", "busy_us", "last_end_us"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def query_figures(old: types.ModuleType, repeats: int, n: int = 3_000_000) -> None:
    worst = 0.0
    for label, (s, e) in (("lane_render GPU row", synthetic_row(n)), ("bursty row", bursty_row(n))):
        old_index, new_index = old.RowIndex(s, e), new_lod.RowIndex(s, e)
        total = e[-1] - s[0]
        print(f"fold_row on one {n:,}-event {label}, {WIDTH_PX} px (median ms; same FoldedRow checked)")
        for zoom in ZOOMS:
            for where in (0.5, 0.3):
                vs = s[0] + where * total * (1 - zoom)
                ve = vs + zoom * total
                a = old.fold_row(old_index, None, vs, ve, WIDTH_PX)
                b = new_lod.fold_row(new_index, None, vs, ve, WIDTH_PX)
                assert_same(a, b)
                i0, i1 = new_lod.visible_range(s, new_index.running_max_end, vs, ve)
                ms = median_ms({"old": lambda: old.fold_row(old_index, None, vs, ve, WIDTH_PX),
                                "new": lambda: new_lod.fold_row(new_index, None, vs, ve, WIDTH_PX)}, repeats)
                ratio = ms["new"] / ms["old"]
                worst = max(worst, ratio)
                print(f"  zoom {zoom:>6g} at {where:.2f}  visible {i1 - i0:>9,}  rects {len(b):5d}  "
                      f"old {ms['old']:6.3f} ms  new {ms['new']:6.3f} ms  new/old {ratio:.2f}")
    print(f"worst new/old: {worst:.2f}")


def mixed_row(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense boundaries in the first half (bursts of 3 kernels, heavy-tailed gaps), none in the
    second (back-to-back 0.5 µs kernels 1-3 µs apart): zoomed into the second half, more of the
    row's keys reach the threshold than the sorted top keys hold, so the tree answers."""
    rng = np.random.default_rng(2)
    half = n // 2
    gap = rng.lognormal(3.0, 2.5, half) * (np.arange(half) % 3 == 0) + 1.0
    starts = np.cumsum(gap)
    starts = np.concatenate((starts, starts[-1] + 100.0 + np.cumsum(rng.uniform(1, 3, n - half))))
    return starts, starts + 0.5


def tree_figures(old: types.ModuleType, repeats: int, n: int = 3_000_000) -> None:
    s, e = mixed_row(n)
    old_index, new_index = old.RowIndex(s, e), new_lod.RowIndex(s, e)
    total = e[-1] - s[0]
    print(f"fold_row on one {n:,}-event mixed row, windows in its sparse half (median ms)")
    for zoom in (3e-3, 1e-3, 3e-4):
        vs = s[n // 2 + n // 8]
        ve = vs + zoom * total
        assert_same(old.fold_row(old_index, None, vs, ve, WIDTH_PX),
                    new_lod.fold_row(new_index, None, vs, ve, WIDTH_PX))
        i0, i1 = new_lod.visible_range(s, new_index.running_max_end, vs, ve)
        block_us = new_lod.MIN_BLOCK_PX * (ve - vs) / WIDTH_PX
        by_tree = block_us <= new_index.top_floor
        ms = median_ms({"old": lambda: old.fold_row(old_index, None, vs, ve, WIDTH_PX),
                        "new": lambda: new_lod.fold_row(new_index, None, vs, ve, WIDTH_PX)}, repeats)
        print(f"  zoom {zoom:>6g}  visible {i1 - i0:>9,}  {'tree' if by_tree else 'top keys'}  "
              f"old {ms['old']:6.3f} ms  new {ms['new']:6.3f} ms  new/old {ms['new'] / ms['old']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="builds per row size (folds: 40x)")
    args = parser.parse_args()
    old = committed_lod()
    build_figures(old, args.repeats)
    query_figures(old, 40 * args.repeats)
    tree_figures(old, 40 * args.repeats)


if __name__ == "__main__":
    main()
