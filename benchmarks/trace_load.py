"""Trace engine timings: prints load + analysis figures (not a timed test).

Usage: python benchmarks/trace_load.py [--shared tests/data/shared_traces] [--repeat 5] [--ranks 8]

1. hta/df_index_resolver (216 k events, 3 MB gz) loaded (``load_rank``: the streamed decode, its C
   scanner where built; ``--no-scanner`` for msgspec alone), analysed, diagnosed and op-tabled in
   this process: first run and median of the repeats, with the split load / analyse.
2. The same file tiled into a folder of N ranks (ranks rewritten in distributedInfo), analysed in
   parallel processes: wall time and the peak RSS of the whole process tree (sampled every 20 ms).
3. Cost growth: µs per event over the shared traces, and wall time for 1, 2, 4, N ranks.
"""
from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuperf_gui.core.trace.ingest.scanner import scan  # noqa: E402
from gpuperf_gui.core.trace.analysis.rank_analysis import analyse_rank  # noqa: E402
from gpuperf_gui.core.trace.session.trace import Trace  # noqa: E402
from gpuperf_gui.core.trace.diagnosis.diagnose import diagnose_rank  # noqa: E402
from gpuperf_gui.core.trace.ingest.load import load_rank  # noqa: E402
from gpuperf_gui.core.trace.analysis.optable import op_table  # noqa: E402

DF_INDEX = "hta/df_index_resolver/df_index_resolver.json.gz"
_NO_SCANNER: list[str] = []


def _rss_tree_kib(pid: int, field: str = "Pss:") -> int:
    """Memory of a process tree: the sum of PSS (shared pages split between the sharers, so forked
    children are not counted twice); ``field="Rss:"`` gives the plain RSS sum."""
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith(field):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


class PeakSampler:
    """Peak PSS and RSS of a process tree, sampled every 20 ms."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid or os.getpid()
        self.peak_kib = 0
        self.peak_rss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, _rss_tree_kib(self.pid))
            self.peak_rss_kib = max(self.peak_rss_kib, _rss_tree_kib(self.pid, "Rss:"))
            self._stop.wait(0.02)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def one_file(path: Path, repeat: int) -> None:
    """The loader users get (:func:`.load.load_rank`: the streamed decode, its C scanner where built)
    and the analysis, timed apart."""
    totals, parts = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        rt = load_rank(path)
        t1 = time.perf_counter()
        a = analyse_rank(rt)
        diagnose_rank(a)
        op_table(rt)
        t2 = time.perf_counter()
        totals.append(t2 - t0)
        parts.append((t1 - t0, t2 - t1))
    print(f"{path.name}: {rt.n_events} events (C scanner: {'on' if scan.ENABLED else 'off'})")
    print(f"  load + full analysis: first {totals[0]:.3f} s, median of {repeat} {statistics.median(totals):.3f} s, "
          f"best {min(totals):.3f} s")
    med = [statistics.median(p[i] for p in parts) for i in range(2)]
    print(f"  median split: load (read, gunzip, decode, columns) {med[0]:.3f} s, "
          f"analysis+diagnosis+op table {med[1]:.3f} s")


def tiled_folder(src: Path, ranks: int, folder: Path) -> None:
    raw = gzip.decompress(src.read_bytes())
    head = raw[:4096]
    for r in range(ranks):
        new_head = head.replace(b'"rank": 1,', f'"rank": {r},'.encode(), 1)
        (folder / f"rank-{r}.json.gz").write_bytes(gzip.compress(new_head + raw[4096:], compresslevel=1))


def many_ranks(src: Path, ranks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tiled_folder(src, ranks, folder)
        for n in sorted({1, 2, 4, ranks}):
            sub = folder / f"n{n}"
            sub.mkdir()
            for r in range(n):
                os.link(folder / f"rank-{r}.json.gz", sub / f"rank-{r}.json.gz")
            # A fresh interpreter per configuration, so earlier runs do not inflate its memory.
            proc = subprocess.Popen([sys.executable, __file__, "--child", str(sub), *_NO_SCANNER], stdout=subprocess.PIPE, text=True)
            with PeakSampler(proc.pid) as sampler:
                out, _ = proc.communicate()
            print(f"  {n} rank(s), {os.cpu_count()} CPUs: {out.strip()}; peak memory of the process tree "
                  f"{sampler.peak_kib / 1024:.0f} MiB PSS ({sampler.peak_rss_kib / 1024:.0f} MiB RSS sum)")


def child(folder: Path) -> None:
    t0 = time.perf_counter()
    result = Trace([folder]).result()
    wall = time.perf_counter() - t0
    events = sum(r.trace.n_events for r in result.ranks)
    print(f"{events} events, wall {wall:.2f} s (in-process, after imports), ranks {[r.trace.rank for r in result.ranks]}")


def growth(shared: Path) -> None:
    rows = []
    for rel in ("hta/nccl_parser_config/nccl_data.json.gz", "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                "hta/negative_queue_length_values_check/rank0.json.gz", DF_INDEX):
        path = shared / rel
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            Trace([path]).result()
            best = min(best, time.perf_counter() - t0)
        n = Trace([path]).result().ranks[0].trace.n_events
        rows.append((n, best))
        print(f"  {n:>7} events: {best:.3f} s = {1e6 * best / n:.2f} µs/event  ({rel})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "data" / "shared_traces")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--no-scanner", action="store_true", help="msgspec alone (scan.ENABLED False; docs/environment.md)")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.no_scanner:
        scan.ENABLED = False
        _NO_SCANNER.append("--no-scanner")  # the children of the many-ranks run too
    if args.child:
        child(args.child)
        return
    src = args.shared / DF_INDEX
    print(f"load average before: {_load_average()}")
    print("== one rank in-process")
    one_file(src, args.repeat)
    print(f"== {args.ranks} tiled ranks, parallel processes")
    many_ranks(src, args.ranks)
    print("== cost growth with events (one process)")
    growth(args.shared)
    print(f"load average after: {_load_average()} (other work on the machine slows every figure)")


def _load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" over {os.cpu_count()} CPUs"


if __name__ == "__main__":
    main()
