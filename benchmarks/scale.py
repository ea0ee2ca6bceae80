"""Scale: events vs time and peak memory, one file and many ranks, locally and on a Dask LocalCluster.

Usage: nice python benchmarks/scale.py [--big] [--many] [--cluster-workers 2] [--workdir /tmp/gpuperf-scale]
       nice python benchmarks/scale.py --dask [--dask-ranks 64,256,1024] [--repeat 3]

``--dask``: only folders of small ranks (tests/data/h200/ddp_straggler_gloo tiled, 3,245 events a
rank), `gpuperf diagnose FOLDER --json` run by the CLI itself in a fresh process on the local pool
(``--workers``) and on a real ``dask scheduler`` with ``--cluster-workers`` ``dask worker`` processes
(one thread each) on 127.0.0.1, which it starts and stops: wall, the client's CPU and peak RSS, the
workers' CPU, the scheduler's and nannies' CPU, and whether both printed the same bytes; ``--repeat N``
alternates N pairs and prints the Dask / local ratios pair by pair. Figures: docs/scaling.md.

Every case runs in a fresh interpreter (imports counted, as the CLI pays them). Peak memory: the
child's own peak RSS (exact), and for a process tree (pool or Dask workers) the peak of the summed
RSS, sampled every 50 ms (shared library pages are counted once per process).

* ``file N``: one plain-JSON trace of N events (a real H200 trace's events repeated,
  core/trace/synthetic/tile.py). Columns: a plain ``msgspec.json.decode`` of the file with the garbage
  collector off (the baseline: with it on, decoding 1M events takes ~5x longer), the
  loader alone (``load_rank``) and the whole ``gpuperf diagnose --json`` work (load, analysis,
  diagnosis, op table, roofline points). 1M and 5M events; ``--big`` adds 10M.
* ``ranks R``: a folder of R rank files tiled from a small real trace (11.8k events each, clocks
  13 µs apart), ``gpuperf diagnose`` with the local process pool and with ``--dask-scheduler
  local:W``; for the cluster, the cluster's start-up is timed apart and the client's own peak RSS is
  shown (what comes back is compact: it must not grow with the events). 8 and 64 ranks; ``--many``
  adds 256.

Measured 2026-12-01 with the C scanner, the reused heap and shapes interned in C (core/trace/ingest/heap.py,
_scan.c; ``--files 1,5,10 --ranks ""``), 16-core Xeon GPU host, idle (benchmarks/results/h200_host_scale.txt)::

      events    MB  decode s  load s  load/dec  1-core s  1-core/dec  diagnose s  tree peak  B/ev
   1,005,369   272      2.50    0.38      0.15      0.89        0.36        0.67    0.20 GB   199
   5,008,968  1362     13.68    1.71      0.12      5.12        0.37        3.36    0.79 GB   159
  10,000,239  2723     24.91    3.35      0.13      8.24        0.33        7.53    1.50 GB   150

The same earlier that day, with the C scanner alone::

      events    MB  decode s  load s  load/dec  1-core s  1-core/dec  diagnose s  tree peak  B/ev
   1,005,369   272      4.38    0.53      0.12      1.40        0.32        0.97    0.29 GB   291
   5,008,968  1362     16.87    2.26      0.13      6.88        0.41        4.32    0.93 GB   185
  10,000,239  2723     29.85    4.09      0.14     10.20        0.34        8.22    1.58 GB   158

and on the 2-core VM (``--files 1,5 --ranks ""``, load average ~1.2)::

   1,005,369   272      6.70    0.67      0.10      0.94        0.14        0.95    0.20 GB   194
   5,008,968  1362     44.68    3.13      0.07      4.98        0.11        4.49    0.79 GB   159

Before the scanner, measured 2026-12-01 after the streamed decode went parallel (``--files 1,5,10 --ranks ""``) on the
16-core Xeon GPU host of the device pool, Python 3.12, idle (benchmarks/results/h200_host_scale.txt;
that run's diagnose column was a second load in the loading process):

      events    MB  decode s  load s  load/dec  1-core s  1-core/dec  diagnose s
   1,005,369   272      2.56    0.92      0.36      2.19        0.85        1.32
   5,008,968  1362     14.19    3.68      0.26      9.36        0.66        7.11
  10,000,239  2723     30.16    8.00      0.27     22.16        0.73       16.16

and on the shared 2-core AMD EPYC VM (24 GiB, load average ~1; ``--files 1,5 --ranks ""``):

      events    MB  decode s  load s  load/dec  1-core s  1-core/dec  diagnose s  tree peak  B/ev
   1,005,369   272      4.63    2.20      0.48      2.30        0.50        2.31    0.30 GB   294
   5,008,968  1362     45.69   10.64      0.23     13.61        0.30       15.63    0.85 GB   170

(The 5M plain decode needs 9.4 GB and pages on this VM, so its ratio flatters the loader; at 1M the
interpreter, imports and two decoding workers, ~150 MB, weigh on the bytes per event.) Times vary run
to run on the shared VM (1M plain decode 3.4-4.6 s).

Ranks, before the streamed decode (``--ranks 8,64,256 --cluster-workers 8``, 16-core host):

   ranks     events  engine  wall s  start s  µs/ev  tree peak  client peak
       8     94,408   local    0.74     0.00   7.84    0.45 GB      0.07 GB
       8     94,408    dask    2.42     1.87   4.06    1.04 GB      0.09 GB
      64    755,264   local    1.19     0.00   1.57    0.91 GB      0.09 GB
      64    755,264    dask    3.29     2.07   1.38    1.05 GB      0.10 GB
     256  3,021,056   local    2.68     0.00   0.89    1.06 GB      0.24 GB
     256  3,021,056    dask    4.90     1.78   0.97    1.07 GB      0.12 GB

The cluster client's peak stays ~0.1 GB whatever the rank count (the local client's grows with
the events it holds); every verdict agrees.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import subprocess
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
try:  # an installed package first (its gpuperf_gui.resources), else this checkout
    import gpuperf_gui  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

SMALL_RANK = ROOT / "tests/data/h200/eager_tiny.json.gz"
FILE_SOURCE = ROOT / "tests/data/h200/eager_small.json.gz"


# -- the child: one measurement, printed as one JSON line ---------------------------------------------
def _budget() -> int:
    """Most of this machine's memory: the benchmark measures the loads, it does not refuse them."""
    return int(0.85 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _child(kind: str, path: str, workers: int) -> dict:
    t0 = time.perf_counter()
    out: dict = {}
    if kind != "decode":   # a process made for the load, as the `gpuperf` command and the GUI's helper are
        from gpuperf_gui.core.trace.ingest.heap import enable_reused_heap
        enable_reused_heap()
    if kind == "decode":
        import gc

        import msgspec
        gc.disable()  # the fair baseline: the cyclic GC would otherwise walk the growing dicts
        data = Path(path).read_bytes()
        obj = msgspec.json.decode(data)
        out["events"] = len(obj["traceEvents"])
        del obj, data
    elif kind == "whole":  # the whole-file path (text read whole, then decoded, then built): before
        from gpuperf_gui.core.trace.ingest.load import load_rank_whole
        t_imp = time.perf_counter()
        rt = load_rank_whole(path, memory_budget=_budget())
        out["load_s"] = time.perf_counter() - t_imp
        out["events"] = rt.n_events
    elif kind == "serial":  # the streamed loader on one core (no scanning threads)
        os.environ["GPUPERF_DECODE_WORKERS"] = "1"
        from gpuperf_gui.core.trace.ingest.load import load_rank
        t_imp = time.perf_counter()
        rt = load_rank(path, memory_budget=_budget())
        out["load_s"] = time.perf_counter() - t_imp
        out["events"] = rt.n_events
    elif kind == "file":  # the loader alone
        from gpuperf_gui.core.trace.ingest.load import load_rank
        t_imp = time.perf_counter()
        rt = load_rank(path, memory_budget=_budget())
        out["load_s"] = time.perf_counter() - t_imp
        out["events"] = rt.n_events
        out["imports_s"] = t_imp - t0
    elif kind == "diagnose":  # what `gpuperf diagnose --json` does, in a fresh process of its own
        from gpuperf_gui.core.trace.session.trace import Trace
        t1 = time.perf_counter()
        result = Trace([path], workers=1, memory_budget=_budget()).result()
        json.dumps(result.to_json())
        out["diagnose_s"] = time.perf_counter() - t1
        out["events"] = sum(rt.n_events for rt in result.model.ranks)
    elif kind == "local":
        from gpuperf_gui.core.trace.session.trace import Trace
        result = Trace([path], memory_budget=_budget()).result()
        json.dumps(result.to_json())
        out["events"] = sum(rt.n_events for rt in result.model.ranks)
        out["verdict"] = result.diagnosis.signature
    elif kind == "dask":
        from gpuperf_gui.core.trace.engine.cluster import dask_client
        from gpuperf_gui.core.trace.session.trace import Trace
        with dask_client(f"local:{workers}") as client:
            out["startup_s"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            result = Trace([path], dask_scheduler=client.scheduler.address, memory_budget=_budget()).result()
            json.dumps(result.to_json())
            out["analysis_s"] = time.perf_counter() - t1
        out["events"] = result.n_events
        out["verdict"] = result.diagnosis.signature
    elif kind in ("cli-local", "cli-dask"):  # `gpuperf diagnose FOLDER --json [--dask-scheduler A]` itself
        from gpuperf_gui.cli import main as cli_main
        argv = ["diagnose", path, "--json"]
        argv += ["--workers", str(workers)] if kind == "cli-local" else \
            ["--dask-scheduler", os.environ["GPUPERF_BENCH_SCHEDULER"]]
        sink, real_stdout = _HashingSink(), sys.stdout
        t1 = time.perf_counter()
        sys.stdout = sink  # type: ignore[assignment]
        try:
            status = cli_main(argv)
        finally:
            sys.stdout = real_stdout
        out["analysis_s"] = time.perf_counter() - t1
        if status != 0:
            raise SystemExit(f"gpuperf {' '.join(argv)}: exit {status}")
        out["json_sha1"] = sink.sha1.hexdigest()
        out["events"] = 0
        found = re.search(r'"signature": "(\w+)"', sink.head)  # the job's verdict comes first
        out["verdict"] = found.group(1) if found else "?"
        pool = resource.getrusage(resource.RUSAGE_CHILDREN)  # the pool's processes, reaped when it shut down
        out["pool_cpu_s"] = pool.ru_utime + pool.ru_stime
    out["wall_s"] = time.perf_counter() - t0
    out["client_peak_rss_bytes"] = _self_peak()
    own = resource.getrusage(resource.RUSAGE_SELF)
    out["client_cpu_s"] = own.ru_utime + own.ru_stime
    return out


class _HashingSink:
    """Stands in for stdout: hashes what is written and keeps its first 4 kB (holding the text
    would add to the client's peak)."""

    def __init__(self) -> None:
        self.sha1, self.head = hashlib.sha1(), ""

    def write(self, text: str) -> int:
        self.sha1.update(text.encode())
        if len(self.head) < 4096:
            self.head += text[:4096]
        return len(text)

    def flush(self) -> None:
        pass


def _self_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# -- the parent ------------------------------------------------------------------------------------
class TreeRss:
    """Peak of the summed VmRSS of a process tree, sampled every 50 ms from /proc/PID/status (cheap:
    smaps_rollup's page walk takes the mmap lock and slows an allocating process severalfold)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_bytes = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        total, stack = 0, [self.pid]
        while stack:
            p = stack.pop()
            try:
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                for task in os.listdir(f"/proc/{p}/task"):
                    stack.extend(int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split())
            except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
                continue
        return total

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_bytes = max(self.peak_bytes, self._rss())

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(kind: str, path: Path, workers: int = 1, env: dict | None = None) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, str(path), str(workers)],
                            stdout=subprocess.PIPE, text=True, env=env)
    with TreeRss(proc.pid) as sampler:
        stdout, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {path}: exit {proc.returncode}")
    out = json.loads(stdout.strip().splitlines()[-1])
    # one process: its exact peak (ru_maxrss); a tree: the sampled peak of the RSS sum
    out["tree_peak_bytes"] = max(sampler.peak_bytes, out["client_peak_rss_bytes"])
    return out


def _file_input(workdir: Path, n: int) -> Path:
    from gpuperf_gui.core.trace.synthetic.tile import repeat_events
    path = workdir / f"events_{n // 1_000_000}M.json"
    if not path.exists():
        tmp = path.with_suffix(".part")
        repeat_events(FILE_SOURCE, tmp, n)
        tmp.rename(path)
    return path


def _ranks_input(workdir: Path, ranks: int) -> Path:
    from gpuperf_gui.core.trace.synthetic.tile import tile_rank_folder
    folder = workdir / f"ranks_{ranks}"
    if not (folder / "done").exists():
        tile_rank_folder([SMALL_RANK], folder, ranks, shift_us=13)
        (folder / "done").write_text("")
    return folder


# -- --dask: a real scheduler and two workers on 127.0.0.1 ----------------------------------------------
STRAGGLER_SOURCES = (ROOT / "tests/data/h200/ddp_straggler_gloo/rank0.json.gz",
                     ROOT / "tests/data/h200/ddp_straggler_gloo/rank1.json.gz")
"""The small ranks of the --dask runs: a real two-rank DDP recording of 3,245 events a rank."""


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (/proc/PID/stat), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def dask_processes(workdir: Path, n_workers: int) -> Iterator[tuple[str, list[int]]]:
    """A ``dask scheduler`` and ``n_workers`` ``dask worker`` processes (one thread each) on
    127.0.0.1, as a user starts them; yields the address, the workers' pids and the pids of the
    scheduler and the workers' nannies (``dask worker`` runs each worker under one); stops them all."""
    sched_file = workdir / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    log = (workdir / "dask.log").open("w")
    py = [sys.executable, "-m"]
    procs = [subprocess.Popen([*py, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)], stdout=log, stderr=log)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(n_workers):
            procs.append(subprocess.Popen([*py, "distributed.cli.dask_worker", address, "--nworkers", "1",
                                           "--nthreads", "1", "--no-dashboard", "--memory-limit", "0",
                                           "--local-directory", str(workdir / "dask-worker-space")],
                                          stdout=log, stderr=log))
        import distributed
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(n_workers, timeout=60)
            pids = list(client.run(os.getpid).values())
        yield address, pids, [p.pid for p in procs]  # the scheduler and the workers' nannies
    finally:
        for proc in reversed(procs):  # workers first, then the scheduler
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def _straggler_folder(workdir: Path, ranks: int) -> Path:
    from gpuperf_gui.core.trace.synthetic.tile import tile_rank_folder
    folder = workdir / f"ddp_ranks_{ranks}"
    if not (folder / "done").exists():
        tile_rank_folder(list(STRAGGLER_SOURCES), folder, ranks, shift_us=13)
        (folder / "done").write_text("")
    return folder


def dask_table(workdir: Path, ranks: list[int], n_workers: int, repeat: int = 1) -> None:
    """Local process pool (``n_workers`` processes) against Dask (``n_workers`` workers), per rank count:
    ``repeat`` alternating pairs (local, Dask, local, Dask, ...), each run a row, then the medians and
    the Dask / local ratios pair by pair (the machine's speed drifts between pairs, less within one)."""
    print(f"\n--dask: folders of small ranks ({STRAGGLER_SOURCES[0].parent.name} tiled, 3,245 events a rank); "
          f"`gpuperf diagnose --json` on the local pool (--workers {n_workers}) and on a `dask scheduler` with "
          f"{n_workers} `dask worker`s on 127.0.0.1")
    print(f"{'ranks':>6} {'engine':>7} {'wall s':>7} {'client CPU s':>12} {'ms/rank':>8} {'client peak':>11} "
          f"{'work CPU s':>10} {'ms/rank':>8} {'sched CPU s':>11}  same JSON  verdict")
    with dask_processes(workdir, n_workers) as (address, worker_pids, cluster_pids):
        env = dict(os.environ, GPUPERF_BENCH_SCHEDULER=address)
        summary = []
        for r in ranks:
            folder = _straggler_folder(workdir, r)
            pairs = []
            for _ in range(repeat):
                runs = {}
                for kind in ("cli-local", "cli-dask"):
                    before = sum(_cpu_s(p) for p in worker_pids)
                    others = sum(_cpu_s(p) for p in cluster_pids)
                    run = measure(kind, folder, n_workers, env)
                    worker_cpu = sum(_cpu_s(p) for p in worker_pids) - before
                    # the pool's processes are the child's children (their CPU is not the client's);
                    # the Dask workers' CPU is read from /proc around the run, the scheduler's and the
                    # workers' nannies' beside it
                    run["work_cpu_s"] = worker_cpu if kind == "cli-dask" else run.get("pool_cpu_s", 0.0)
                    run["sched_cpu_s"] = sum(_cpu_s(p) for p in cluster_pids) - others if kind == "cli-dask" else 0.0
                    runs[kind] = run
                same = runs["cli-local"]["json_sha1"] == runs["cli-dask"]["json_sha1"]
                for kind, run in runs.items():
                    print(f"{r:>6} {kind[4:]:>7} {run['wall_s']:>7.2f} {run['client_cpu_s']:>12.2f} "
                          f"{1e3 * run['client_cpu_s'] / r:>8.2f} {_gb(run['client_peak_rss_bytes']):>11} "
                          f"{run['work_cpu_s']:>10.2f} {1e3 * run['work_cpu_s'] / r:>8.2f} {run['sched_cpu_s']:>11.2f}"
                          f"  {'yes' if same else 'NO':>9}  {run['verdict']}", flush=True)
                pairs.append(runs)
            summary.append((r, pairs))
    print("client: the process that runs `gpuperf diagnose` (for the local pool, the parent of its worker "
          "processes); work CPU: the worker processes' CPU (the pool's, or the two Dask workers'); sched CPU: "
          "the Dask scheduler's and the workers' nannies'; same JSON: the two engines printed the same bytes.")
    if repeat > 1:
        _dask_summary(summary)


def _dask_summary(summary: list[tuple[int, list[dict]]]) -> None:
    """Medians of each engine's figures and the Dask / local ratios of each pair (min, median, max)."""
    med = statistics.median
    print(f"\n{'ranks':>6} {'pairs':>5}  {'wall s local / Dask':>20}  {'Dask/local wall: min med max':>29}  "
          f"{'client CPU ms/rank':>18}  {'client peak GB':>14}  {'total CPU s local / Dask':>24}")
    for r, pairs in summary:
        wall = [p["cli-dask"]["wall_s"] / p["cli-local"]["wall_s"] for p in pairs]
        total = {k: [p[k]["client_cpu_s"] + p[k]["work_cpu_s"] + p[k]["sched_cpu_s"] for p in pairs]
                 for k in ("cli-local", "cli-dask")}
        print(f"{r:>6} {len(pairs):>5}  {med(p['cli-local']['wall_s'] for p in pairs):>9.2f} / "
              f"{med(p['cli-dask']['wall_s'] for p in pairs):>7.2f}  {min(wall):>11.2f} {med(wall):>8.2f} "
              f"{max(wall):>6.2f}  {1e3 * med(p['cli-local']['client_cpu_s'] for p in pairs) / r:>8.2f} / "
              f"{1e3 * med(p['cli-dask']['client_cpu_s'] for p in pairs) / r:>6.2f}  "
              f"{med(p['cli-local']['client_peak_rss_bytes'] for p in pairs) / 1e9:>6.3f} / "
              f"{med(p['cli-dask']['client_peak_rss_bytes'] for p in pairs) / 1e9:>5.3f}  "
              f"{med(total['cli-local']):>11.2f} / {med(total['cli-dask']):>6.2f}", flush=True)
    print("total CPU: client + workers (+ the Dask scheduler and nannies); a ratio below 1: Dask faster.")


def _gb(b: float) -> str:
    return f"{b / 1e9:6.2f} GB"


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    load = os.getloadavg()[0]
    return (f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {mem / 2**30:.0f} GiB, Python "
            f"{platform.python_version()}, load average {load:.1f} at start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--big", action="store_true", help="add the 10M-event file (~5 GB of memory)")
    ap.add_argument("--many", action="store_true", help="add the 256-rank folder")
    ap.add_argument("--whole", action="store_true", help="add the whole-file path (the loader before streaming)")
    ap.add_argument("--files", type=str, default="1,5", help="file sizes in millions of events (default 1,5)")
    ap.add_argument("--ranks", type=str, default="8,64", help="rank counts (default 8,64)")
    ap.add_argument("--cluster-workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/gpuperf-scale"))
    ap.add_argument("--dask", action="store_true",
                    help="only the rank folders, local pool vs a real `dask scheduler` + workers on 127.0.0.1")
    ap.add_argument("--dask-ranks", type=str, default="64,256,1024", help="rank counts of --dask")
    ap.add_argument("--repeat", type=int, default=1, help="--dask: alternating local/Dask pairs per rank count")
    args = ap.parse_args()
    if args.child:
        kind, path, workers = args.child
        print(json.dumps(_child(kind, path, int(workers))))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in args.files.split(",") if x] + ([10] if args.big else [])
    ranks = [int(x) for x in args.ranks.split(",") if x] + ([256] if args.many else [])
    print(f"machine: {machine()}")
    # the package's bytecode, as an install leaves it: with PYTHONDONTWRITEBYTECODE (this VM) every
    # fresh process would compile its ~80 modules again (~0.45 s of CPU)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gpuperf_gui")], stdout=subprocess.DEVNULL,
                   check=False)
    if args.dask:
        dask_table(args.workdir, [int(x) for x in args.dask_ranks.split(",") if x], args.cluster_workers,
                   args.repeat)
        return
    print(f"\none file ({FILE_SOURCE.name} repeated; plain JSON)")
    print(f"{'events':>10} {'MB':>7} {'decode s':>9} {'load s':>7} {'load/dec':>8} {'1-core s':>8} "
          f"{'1-core/dec':>10} {'whole s':>7} {'whole/dec':>9} {'diagnose s':>10} {'µs/ev':>6} {'tree peak':>9} "
          f"{'B/ev':>6} {'decode peak':>11}")
    for m in sizes:
        path = _file_input(args.workdir, m * 1_000_000)
        base = measure("decode", path)
        serial = measure("serial", path)
        whole = measure("whole", path) if args.whole else None
        run = measure("file", path)
        diag = measure("diagnose", path)
        n = run["events"]
        whole_s = f"{whole['load_s']:>7.2f} {whole['load_s'] / base['wall_s']:>9.2f}" if whole else f"{'-':>7} {'-':>9}"
        print(f"{n:>10,} {path.stat().st_size / 1e6:>7.0f} {base['wall_s']:>9.2f} {run['load_s']:>7.2f} "
              f"{run['load_s'] / base['wall_s']:>8.2f} {serial['load_s']:>8.2f} "
              f"{serial['load_s'] / base['wall_s']:>10.2f} {whole_s} {diag['diagnose_s']:>10.2f} "
              f"{1e6 * diag['diagnose_s'] / n:>6.2f} {_gb(diag['tree_peak_bytes'])} "
              f"{diag['tree_peak_bytes'] / n:>6.0f} {_gb(base['tree_peak_bytes']):>11}", flush=True)
    print(f"\nfolders of ranks ({SMALL_RANK.name} tiled; local pool vs --dask-scheduler "
          f"local:{args.cluster_workers})")
    print(f"{'ranks':>6} {'events':>10} {'engine':>8} {'wall s':>7} {'start s':>7} {'µs/ev':>6} "
          f"{'tree peak':>10} {'client peak':>11}  verdict")
    for r in ranks:
        folder = _ranks_input(args.workdir, r)
        for kind in ("local", "dask"):
            run = measure(kind, folder, args.cluster_workers)
            n = run["events"]
            work_s = run.get("analysis_s", run["wall_s"])
            print(f"{r:>6} {n:>10,} {kind:>8} {run['wall_s']:>7.2f} {run.get('startup_s', 0.0):>7.2f} "
                  f"{1e6 * work_s / n:>6.2f} {_gb(run['tree_peak_bytes']):>10} "
                  f"{_gb(run['client_peak_rss_bytes']):>11}  {run['verdict']}", flush=True)
    print("\nµs/ev: the work after start-up per event (diagnose: load + analysis + JSON; dask: after the "
          "cluster is up). load/dec: the loader's time (scanning threads as it picks them) over a plain "
          "msgspec decode of the same file; 1-core: the loader with GPUPERF_DECODE_WORKERS=1; diagnose: "
          "load + analysis + JSON in a fresh process; tree peak, B/ev: that process tree's peak summed RSS "
          "(interpreter and imports included) and per event; whole: the whole-file path.")


if __name__ == "__main__":
    main()
