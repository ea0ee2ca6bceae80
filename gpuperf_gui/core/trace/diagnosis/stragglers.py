"""Which rank the others wait for: collectives matched across ranks step by step.

A rank's collectives are given to the ``ProfilerStep`` whose CPU span holds their *launch* (a GPU
collective kernel: its launch call, through the flows; a CPU-side collective: its own start), so a
kernel that starts a step or two after the CPU step that launched it, as when a fast rank's host
runs ahead of its GPU, still counts in its own step, and kernels launched before the window (no
launch record) count in none. Within a step the n-th collective of one rank is the n-th of every
other. Over NCCL a rank that arrives late does not make the others wait on the host: their kernels
start on time and spin until it joins. So in each step the collective that tells is the one whose
duration differs most across ranks (the one the others waited in: a late rank's first bucket,
with the later buckets queued behind it on every rank); there, a rank's lag is its start minus
the median start of the others, and its wait explained the others' median duration minus its own.
A rank's lag and wait are the medians over steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.trace_model import RankTrace


@dataclass
class RankCollectives:
    """One rank's collectives in (step, start) order: start and duration (µs) and the step number
    whose CPU span launched each (-1: none, e.g. launched before the window)."""

    start_us: np.ndarray
    duration_us: np.ndarray
    step: np.ndarray
    on_gpu: bool


def launch_steps(rt: RankTrace, launch_us: np.ndarray) -> np.ndarray:
    """The ``ProfilerStep`` number whose CPU span holds each launch time (-1: none or NaN)."""
    out = np.full(launch_us.size, -1, dtype=np.int64)
    if not rt.steps:
        return out
    starts = np.array([s.cpu_start_us for s in rt.steps])
    ends = np.array([s.cpu_end_us for s in rt.steps])
    numbers = np.array([s.number for s in rt.steps], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    ok = ~np.isnan(launch_us)
    i = np.searchsorted(starts, launch_us[ok], side="right") - 1
    inside = (i >= 0) & (launch_us[ok] <= ends[np.maximum(i, 0)])
    out[np.flatnonzero(ok)[inside]] = numbers[i[inside]]
    return out


def per_step_lags(ranks: dict[int, RankCollectives]) -> dict[int, tuple[float, float, int]]:
    """Per rank: (lag_us, wait_us, steps compared), the medians over the steps every rank has.
    Empty when fewer than two ranks have collectives in a common step."""
    if len(ranks) < 2:
        return {}
    order = list(ranks)
    common = set.intersection(*(set(np.unique(r.step[r.step >= 0]).tolist()) for r in ranks.values()))
    lags: dict[int, list[float]] = {rk: [] for rk in order}
    waits: dict[int, list[float]] = {rk: [] for rk in order}
    for step in sorted(common):
        picked = [np.flatnonzero(ranks[rk].step == step) for rk in order]
        k = min(len(p) for p in picked)   # >= 1: every rank has the step
        start = np.stack([ranks[rk].start_us[p[:k]] for rk, p in zip(order, picked)])
        dur = np.stack([ranks[rk].duration_us[p[:k]] for rk, p in zip(order, picked)])
        n = int(np.argmax(dur.max(axis=0) - dur.min(axis=0)))  # the collective the others waited in
        for i, rk in enumerate(order):
            others = np.delete(np.arange(len(order)), i)
            lags[rk].append(float(start[i, n] - np.median(start[others, n])))
            waits[rk].append(float(np.median(dur[others, n]) - dur[i, n]))
    if not lags[order[0]]:
        return {}
    return {rk: (float(np.median(lags[rk])), float(np.median(waits[rk])), len(lags[rk])) for rk in order}
