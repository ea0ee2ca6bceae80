"""Check that ``gpuperf diagnose --json`` and ``diff --json`` print the same bytes at a base commit and at HEAD.

For every trace in tests/data (each ``.json`` / ``.json.gz`` file on its own, the multi-rank folders
and the unprofiled jobs as jobs; the few files there that are not traces too: their error text and
exit status must not change either), ``gpuperf diagnose --json`` (``--top`` 10, and ``--top``
1000000000 for the whole op table), and ``gpuperf diff --json`` on the before/after pairs
(tests/data/h200/pairs/pairs.json and HTA's trace-compare pair), run in a ``git worktree`` of BASE
and one of HEAD (``--tree``: this working tree as it is, uncommitted changes included), each side in
its own interpreter; the stdout, stderr and exit status of every run are compared byte for byte.
``--dask`` adds the folder jobs through ``--dask-scheduler local:1`` (needs the 'cluster' extra).

The C scanner is built in this checkout only: it is copied into both worktrees when their
``_scan.c`` is the one it was built from, else both sides run without it (each side's interpreter
cannot import the extension: a machine without a compiler, docs/environment.md). The other
extensions built here (``_nest``) are copied into each worktree whose source of it is the one it
was built from; a side without that source, or with another one, runs without it.

    nice .venv/bin/python benchmarks/diagnose_same_output.py 286eeec           # base vs HEAD
    nice .venv/bin/python benchmarks/diagnose_same_output.py 286eeec --tree    # base vs this tree

Prints IDENTICAL, or the jobs that differ (their outputs stay in the run's folder, printed).
Modelled on benchmarks/post_load_same_output.py (which compares the Trace tab's objects as well).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK_PREFIX = "diagnose_same_output-"
"""Each run works in a fresh folder of its own under the temp folder (runs side by side never meet)."""
TRACE_DIR = Path("gpuperf_gui", "core", "trace")
NOT_TRACES = (".key_averages.json", ".meta.json")   # reference figures beside the traces
FOLDERS = ("dlrm_kineto", "gloo_cpu_allreduce", "ddp_straggler_gloo")
UNPROFILED = ("compiled_tiny", "eager_tiny", "loader_fed", "loader0")


def jobs(dask: bool) -> list[tuple[str, list[str]]]:
    """(name, the command's arguments) for every trace of tests/data: ``diagnose``, then ``diff``."""
    data = ROOT / "tests" / "data"
    files = sorted(p for p in data.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz"))
                   and not p.name.endswith(NOT_TRACES))
    out = [(str(p.relative_to(data)).replace("/", "_"), [str(p)]) for p in files]
    folders = sorted(p for p in data.rglob("*") if p.is_dir() and p.name in FOLDERS)
    out += [(f"dir_{p.name}", [str(p)]) for p in folders]
    for job in UNPROFILED:
        ranks = sorted(str(p) for p in (data / "h200" / "unprofiled").glob(f"{job}.r*.json.gz"))
        if ranks:
            out.append((f"unprof_{job}", ranks))
    with_top = [(f"{name}.top{top}", ["diagnose", "--json", "--top", str(top), *paths])
                for name, paths in out for top in (10, 10**9)]
    if dask:
        with_top += [(f"dask_{p.name}", ["diagnose", "--json", "--dask-scheduler", "local:1", str(p)])
                     for p in folders]
    return with_top + diff_jobs(data)


def diff_jobs(data: Path) -> list[tuple[str, list[str]]]:
    """``gpuperf diff --json`` on each before/after pair of tests/data (a name without a suffix is a
    folder of ranks or a ``.json.gz``), whole and with ``--top 5``."""
    folder = data / "h200" / "pairs"
    pairs = [(folder / p["before"], folder / p["after"])
             for p in json.loads((folder / "pairs.json").read_text())["pairs"]]
    pairs = [tuple(p if p.is_dir() else p.with_name(p.name + ".json.gz") for p in pair) for pair in pairs]
    pairs.append((data / "hta_trace_compare" / "base.json.gz", data / "hta_trace_compare" / "test.json.gz"))
    return [(f"diff_{before.name}_{after.name}{top}", ["diff", "--json", *(["--top", "5"] if top else []),
                                                        str(before), str(after)])
            for before, after in pairs if before.exists() and after.exists() for top in ("", ".top5")]


class _NoScanner(importlib.abc.MetaPathFinder):
    """Fails the C scanner's import (``..._scan``, wherever the side's layout keeps it)."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name.startswith("gpuperf_gui.") and name.rsplit(".", 1)[-1] == "_scan":
            raise ImportError(f"{name}: this side runs without the C scanner")


def snapshot(out_dir: Path, dask: bool, scanner: bool = True) -> None:
    """Run every job through the CLI's ``main`` in this interpreter (the side being compared);
    without ``scanner`` the C extension's import fails here, as where it is not built."""
    if not scanner:
        sys.meta_path.insert(0, _NoScanner())
    from gpuperf_gui.cli import main

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, args in jobs(dask):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                rc = main(args)
            except SystemExit as exc:     # argparse and fail() exit
                rc = exc.code
        (out_dir / f"{name}.out").write_text(stdout.getvalue())
        (out_dir / f"{name}.err").write_text(stderr.getvalue())
        (out_dir / f"{name}.rc").write_text(json.dumps(rc))


def _worktree(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(where), rev],
                   check=True, capture_output=True, text=True)
    return where


def _remove_worktree(where: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], capture_output=True)


def scanner_source(tree: Path) -> Path | None:
    """The C scanner's source in ``tree``, wherever its layout keeps it under core/trace (a base
    before the layers move has it at the top, a later one in its own folder)."""
    found = sorted((tree / TRACE_DIR).rglob("_scan.c"))
    return found[0] if found else None


def _scanner_fits(tree: Path) -> bool:
    """The scanner built here was built from this tree's _scan.c."""
    mine, theirs = scanner_source(ROOT), scanner_source(tree)
    return mine is not None and theirs is not None and theirs.read_bytes() == mine.read_bytes()


def _copy_fitting_extensions(tree: Path, side: str) -> None:
    """Copy each extension built here but the scanner into ``tree`` where its C source is the same
    (found wherever each side's layout keeps it under core/trace)."""
    for so in sorted((ROOT / TRACE_DIR).rglob("_*.so")):
        source = so.name.split(".", 1)[0] + ".c"
        if source == "_scan.c":
            continue
        mine = so.parent / source
        found = sorted((tree / TRACE_DIR).rglob(source))
        fits = bool(found) and mine.exists() and found[0].read_bytes() == mine.read_bytes()
        if fits:
            shutil.copy2(so, found[0].parent / so.name)
        print(f"{source[:-2]}: {'on' if fits else 'off'} for {side}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", help="the commit whose output is 'before'")
    parser.add_argument("--head", default="HEAD", help="the commit whose output is 'after' (default HEAD)")
    parser.add_argument("--tree", action="store_true", help="'after' is this working tree, as it is")
    parser.add_argument("--dask", action="store_true", help="also the folders through --dask-scheduler local:1")
    parser.add_argument("--snapshot", type=Path, help=argparse.SUPPRESS)  # the child's job
    parser.add_argument("--no-scanner", action="store_true", help=argparse.SUPPRESS)  # the child's too
    args = parser.parse_args(argv)
    if args.snapshot:
        snapshot(args.snapshot, args.dask, scanner=not args.no_scanner)
        return 0
    if not args.base:
        parser.error("give the base commit")
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    trees = {"before": _worktree(args.base, work / "base"),
             "after": ROOT if args.tree else _worktree(args.head, work / "head")}
    source = scanner_source(ROOT)
    built = sorted(source.parent.glob("_scan.*.so")) if source else []
    use_scanner = bool(built) and all(_scanner_fits(t) for t in trees.values())
    env = dict(os.environ)
    for side, tree in trees.items():
        if use_scanner and tree != ROOT:
            shutil.copy2(built[0], scanner_source(tree).parent / built[0].name)
        if tree != ROOT:
            _copy_fitting_extensions(tree, side)
    print(f"scanner: {'on, both sides' if use_scanner else 'off, both sides'}")
    try:
        runs = []
        for side, tree in trees.items():
            side_env = dict(env, PYTHONPATH=str(tree))
            runs.append(subprocess.Popen([sys.executable, __file__, "--snapshot", str(work / side),
                                          *(["--dask"] if args.dask else []),
                                          *([] if use_scanner else ["--no-scanner"])], env=side_env, cwd=work))
        if any(p.wait() for p in runs):
            print("a snapshot failed")
            return 1
    finally:
        for side in ("base", "head"):
            _remove_worktree(work / side)
    before, after = sorted((work / "before").iterdir()), sorted((work / "after").iterdir())
    differ = sorted({a.name.rsplit(".", 1)[0] for b, a in zip(before, after) if b.read_bytes() != a.read_bytes()})
    if [p.name for p in before] != [p.name for p in after]:
        differ.append("(the job lists differ)")
    n_jobs = len(after) // 3
    ok = sum(1 for p in after if p.suffix == ".rc" and p.read_text() == "0")
    print(f"{n_jobs} runs ({ok} exit 0): " + ("IDENTICAL" if not differ else "DIFFER: " + ", ".join(differ)))
    if differ:
        print(f"outputs: {work}/before and {work}/after")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
