"""Check that ``gpuperf diagnose --json`` prints the same bytes at a base commit as at HEAD.

Every trace under tests/data (each ``*.json`` / ``*.json.gz`` file, and each folder holding more than one
trace, as a multi-rank job) is diagnosed by both trees: the base checked out with ``git worktree add``
into /tmp (its C scanner copied from this tree when ``_scan.c`` is the same, else built there), HEAD as
this tree is. Each side runs in one interpreter that calls ``gpuperf_gui.cli.main(["diagnose", "--json",
path])`` per trace and keeps stdout, stderr and the exit status (``--subprocess``: one ``gpuperf``
process per trace, slower, the console script exactly). A trace the command refuses (not a trace) is
compared too: its message and status must be the same.

    nice .venv/bin/python benchmarks/diagnose_same_output.py main           # base: main, HEAD: this tree
    nice .venv/bin/python benchmarks/diagnose_same_output.py 12c19a1 --subprocess

Prints ``IDENTICAL: n of n outputs`` or the traces whose output differs (both sides' files are kept
under /tmp/diagnose_same_output.*/). A differing trace is diagnosed 3 times more by each side: when
one side's outputs vary from run to run, the output is not stable. It is printed as UNSTABLE and not
counted as a difference (at 12c19a1: the order of the notes on the unloadable rank files of a folder
of unrelated traces, h200/ and h200/pairs/). The exit status is 1 when any output differs stably.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
WORK = Path(tempfile.mkdtemp(prefix="diagnose_same_output."))  # its own: other checkouts run this too
SCAN_C = "gpuperf_gui/core/trace/_scan.c"
RERUNS = 3


def jobs() -> list[str]:
    """The traces (paths relative to tests/data): every trace file, and every folder of several."""
    files = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")))
    folders = sorted({p.parent for p in files if sum(q.parent == p.parent for q in files) > 1} - {DATA})
    return [str(p.relative_to(DATA)) for p in files + folders]


def snapshot(out_dir: Path, use_subprocess: bool, only: set[int] | None = None) -> None:
    """Diagnose every job (or those numbered ``only``) with the gpuperf_gui on ``sys.path``; one
    JSON file of outputs per job."""
    out_dir.mkdir(parents=True, exist_ok=True)
    from gpuperf_gui import cli

    for i, rel in enumerate(jobs()):
        if only is not None and i not in only:
            continue
        argv = ["diagnose", "--json", str(DATA / rel)]
        if use_subprocess:
            done = subprocess.run([sys.executable, "-c", "from gpuperf_gui.cli import entry; entry()", *argv],
                                  capture_output=True, text=True, cwd=out_dir)
            out, err, rc = done.stdout, done.stderr, done.returncode
        else:
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    rc = cli.main(argv)
                except SystemExit as exc:  # argparse / a command that exits
                    rc = exc.code if isinstance(exc.code, int) else 1
            out, err = stdout.getvalue(), stderr.getvalue()
        (out_dir / f"{i:04d}.json").write_text(json.dumps({"trace": rel, "rc": rc, "stdout": out, "stderr": err}))


def base_tree(base: str) -> Path:
    """The base commit checked out into /tmp, with its C scanner in place."""
    tree = WORK / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), base], check=True,
                   capture_output=True)
    same_c = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", base, "--", SCAN_C]).returncode == 0
    built = sorted((ROOT / SCAN_C).parent.glob("_scan*.so"))
    if same_c and built:  # (``git diff base`` compares the working tree's file)
        for so in built:
            shutil.copy2(so, tree / SCAN_C.rsplit("/", 1)[0] / so.name)
    else:
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree, check=True,
                       capture_output=True)
    return tree


def _side_env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), QT_QPA_PLATFORM="offscreen")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", help="the commit to compare HEAD (this tree) with")
    parser.add_argument("--subprocess", action="store_true", help="one gpuperf process per trace")
    parser.add_argument("--snapshot", type=Path, help=argparse.SUPPRESS)  # a side's job
    parser.add_argument("--only", help=argparse.SUPPRESS)  # the jobs a side runs again: "3,17"
    args = parser.parse_args(argv)
    if args.snapshot:
        WORK.rmdir()
        snapshot(args.snapshot, args.subprocess, {int(i) for i in args.only.split(",")} if args.only else None)
        return 0
    if not args.base:
        parser.error("give the base commit")
    WORK.mkdir(parents=True, exist_ok=True)
    sides = {"before": base_tree(args.base), "after": ROOT}
    flag = ["--subprocess"] if args.subprocess else []
    runs = []
    for side, tree in sides.items():
        shutil.rmtree(WORK / side, ignore_errors=True)
        # the script of this tree, so both sides diagnose the same list of traces
        runs.append(subprocess.Popen([sys.executable, __file__, "--snapshot", str(WORK / side), *flag],
                                     env=_side_env(tree), cwd=tree))
    if any(p.wait() for p in runs):
        print("a side failed")
        return 1
    names = sorted(p.name for p in (WORK / "after").iterdir())
    differ = [name for name in names if (WORK / "before" / name).read_bytes() != (WORK / "after" / name).read_bytes()]
    unstable: set[str] = set()
    if differ:  # run those again, 3 times a side: an output that varies from run to run is not stable
        only = ",".join(str(int(n.split(".")[0])) for n in differ)
        seen = {n: {side: {(WORK / side / n).read_bytes()} for side in sides} for n in differ}
        for again in range(RERUNS):
            for side, tree in sides.items():
                out = WORK / f"{side}_again{again}"
                subprocess.run([sys.executable, __file__, "--snapshot", str(out), *flag, "--only", only],
                               env=_side_env(tree), cwd=tree, check=True)
                for n in differ:
                    seen[n][side].add((out / n).read_bytes())
        unstable = {n for n in differ if any(len(outputs) > 1 for outputs in seen[n].values())}
    for name in differ:
        print("UNSTABLE (its output varies between runs of one side):" if name in unstable else "DIFFERS:",
              json.loads((WORK / "after" / name).read_text())["trace"],
              f"({WORK / 'before' / name} vs {WORK / 'after' / name})")
    refused = sum(json.loads((WORK / "after" / n).read_text())["rc"] != 0 for n in names)
    print(f"{'IDENTICAL' if not differ else 'SAME'}: {len(names) - len(differ)} of {len(names)} outputs "
          f"({refused} refusals, compared too)")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(sides["before"])],
                   capture_output=True)
    return 1 if set(differ) - unstable else 0


if __name__ == "__main__":
    sys.exit(main())
