"""Check that `gpuperf diagnose --json` prints the same bytes as at an earlier commit, on every trace of
tests/data (tests/data/shared_traces included: each file alone, each folder of ranks as a folder).

The "before" side runs the whole ``gpuperf_gui`` package of ``BASE`` (``git archive``; the C scanner
copied from this tree when ``_scan.c`` is unchanged, else built there); the "after" side runs this tree
as it is. Each side runs the real command line (``python -m gpuperf_gui.cli diagnose --json``, and
``--top 1000000``: the whole op table; jobs of ranks also with the default ``--top``) in its own interpreter, from the same working folder and
with the same arguments (paths relative to tests/data, and the multi-rank folders as folders), so the
``file`` paths, the notes and every figure are compared as a user sees them.

    nice .venv/bin/python benchmarks/diagnose_same_output.py 286eeec

Prints IDENTICAL, or the jobs that differ (both sides' text under /tmp/gpuperf-diagnose-same-output/BASE/).
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
WORK = Path("/tmp/gpuperf-diagnose-same-output")
"""Where both sides' outputs go (``--workdir``; each run of a base commit in a folder of its own)."""
SCANNER = "gpuperf_gui/core/trace/_scan.c"
SKIP_NAMES = ("ceilings.json", "hta_idle_breakdown.json")


def jobs() -> list[tuple[str, list[str]]]:
    """(name, arguments relative to tests/data): every trace file alone, and every folder that holds
    two or more trace files as a folder (a job of ranks); the unprofiled jobs of tests/data/h200 as
    their files (that folder holds several jobs)."""
    files = sorted(p for p in DATA.rglob("*.json*") if _is_trace(p))
    out = [(_name(p), [str(p.relative_to(DATA))]) for p in files]
    folders = sorted({p.parent for p in files if p.parent != DATA})
    for folder in folders:
        inside = [p for p in files if p.parent == folder]
        if len(inside) < 2:
            continue
        if folder.name == "unprofiled":
            for job in sorted({p.name.split(".r")[0] for p in inside}):
                mine = [p for p in inside if p.name.split(".r")[0] == job]
                out.append((_name(folder) + "_" + job, [str(p.relative_to(DATA)) for p in mine]))
        else:
            out.append((_name(folder) + "_dir", [str(folder.relative_to(DATA))]))
    return out


def _name(p: Path) -> str:
    return str(p.relative_to(DATA)).replace("/", "_")


def _is_trace(p: Path) -> bool:
    name = p.name
    return (name.endswith((".json.gz", ".json")) and not name.endswith((".meta.json", ".key_averages.json"))
            and name not in SKIP_NAMES and "scripts" not in p.relative_to(DATA).parts)


def base_tree(base: str, work: Path) -> Path:
    """``BASE``'s package under ``work``/base, with a C scanner."""
    tree = work / "base"
    data = subprocess.run(["git", "-C", str(ROOT), "archive", base, "gpuperf_gui", "setup.py", "pyproject.toml"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tree, filter="data")
    same_scanner = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", base, "--", SCANNER]).returncode == 0
    if same_scanner:
        for so in (ROOT / "gpuperf_gui/core/trace").glob("_scan*.so"):
            shutil.copy2(so, tree / "gpuperf_gui/core/trace" / so.name)
    else:
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree, check=True,
                       capture_output=True)
    return tree


def snapshot(side: str, package_root: Path, work: Path) -> None:
    out = work / side
    out.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(package_root), GPUPERF_TRACE_INPROCESS="1")
    where = subprocess.run([sys.executable, "-c", "import gpuperf_gui; print(gpuperf_gui.__file__)"], cwd=DATA,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).is_relative_to(package_root):  # the side must run the code it names
        raise SystemExit(f"{side}: gpuperf_gui imports from {where}, not from {package_root}")
    (out / "package.txt").write_text(f"{side}: {package_root}\n")
    for name, args in jobs():
        variants = [("full.json", ["--top", "1000000"])]  # the whole op table (--top 10 prints its head)
        if len(args) > 1 or (DATA / args[0]).is_dir():
            variants.append(("json", []))  # a job of ranks: the compact path keeps only --top rows per rank
        for suffix, extra in variants:
            run = subprocess.run([sys.executable, "-m", "gpuperf_gui.cli", "diagnose", *args, "--json", *extra],
                                 cwd=DATA, env=env, capture_output=True, text=True)
            (out / f"{name}.{suffix}").write_text(f"exit {run.returncode}\n{run.stdout}{run.stderr}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit whose output is 'before'")
    parser.add_argument("--keep-before", action="store_true",
                        help="reuse the 'before' outputs of the last run (same BASE): only 'after' runs")
    parser.add_argument("--workdir", type=Path, default=WORK)
    args = parser.parse_args(argv)
    work = args.workdir / args.base
    if not (args.keep_before and (work / "before").is_dir()):
        shutil.rmtree(work, ignore_errors=True)
        snapshot("before", base_tree(args.base, work), work)
    shutil.rmtree(work / "after", ignore_errors=True)
    snapshot("after", ROOT, work)
    before, after = sorted((work / "before").iterdir()), sorted((work / "after").iterdir())
    differ = [a.name for b, a in zip(before, after) if b.read_bytes() != a.read_bytes() and a.name != "package.txt"]
    if [p.name for p in before] != [p.name for p in after]:
        differ.append("(the file lists differ)")
    print(f"{len(after) - 1} outputs of {len(jobs())} jobs: " + ("IDENTICAL" if not differ else "DIFFER: " + ", ".join(differ)))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
