"""Check that ``gpuperf diagnose --json`` prints the same bytes as at an earlier commit.

For every trace of tests/data (each ``*.json.gz`` / trace ``*.json`` file alone; the rank folders
and the unprofiled runs as jobs; with ``--shared``, the jobs of ../shared/traces too), the "before"
side runs ``gpuperf diagnose --json`` from the tree of ``BASE`` (``git archive``, the built C
scanner copied in), the "after" side from this tree as it is. A refactor that must not change a
figure (the signature registry) runs it before it is committed:

    nice .venv/bin/python benchmarks/diagnose_same_output.py HEAD~1
    nice .venv/bin/python benchmarks/diagnose_same_output.py main --shared --verdicts   # what changed

Prints IDENTICAL, or the jobs that differ (both outputs under /tmp/diagnose_same_output/); with
``--verdicts``, each job's signature before and after.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = Path("/tmp/diagnose_same_output")
SHARED = ROOT.parent.parent / "shared" / "traces" if (ROOT.parent.parent / "shared").is_dir() else \
    ROOT.parent / "shared" / "traces"
_FOLDERS = ("gloo_cpu_allreduce", "ddp_straggler_gloo", "unprofiled", "dlrm_kineto")


def _is_trace(path: Path) -> bool:
    if path.name.endswith(".json.gz"):
        return True
    if path.suffix != ".json" or path.name.endswith((".meta.json", ".key_averages.json")):
        return False
    with path.open("rb") as f:
        return b"traceEvents" in f.read(1 << 16) or b"traceEvents" in path.read_bytes()[-(1 << 16):]


def jobs(shared: bool) -> list[tuple[str, list[str]]]:
    data = ROOT / "tests" / "data"
    out = [(str(p.relative_to(data)), [str(p)]) for p in sorted(data.rglob("*.json*"))
           if _is_trace(p) and not any(part in _FOLDERS for part in p.parts)]
    for folder in sorted(p for p in data.rglob("*") if p.is_dir() and p.name in _FOLDERS[:2] + _FOLDERS[3:]):
        out.append((str(folder.relative_to(data)) + "/", [str(folder)]))
    for job in ("compiled_tiny", "eager_tiny", "loader_fed", "loader0"):
        out.append((f"h200/unprofiled/{job}.r*", [str(p) for p in sorted((data / "h200" / "unprofiled").glob(
            f"{job}.r*.json.gz"))]))
    if shared and SHARED.is_dir():
        for d in sorted(p for p in SHARED.rglob("*") if p.is_dir()):
            files = [p for p in sorted(d.iterdir()) if p.is_file() and _is_trace(p)]
            if len(files) > 1 and (d.name in _FOLDERS or any("rank" in p.name or "worker" in p.name for p in files)):
                out.append(("shared/" + str(d.relative_to(SHARED)) + "/", [str(d)]))
            for p in files:
                out.append(("shared/" + str(p.relative_to(SHARED)), [str(p)]))
    return out


_CHILD = """
import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
from gpuperf_gui.cli import main
import gpuperf_gui
assert gpuperf_gui.__file__.startswith(sys.argv[1]), gpuperf_gui.__file__
out = {}
for name, paths in json.loads(open(sys.argv[2]).read()):
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        try:
            rc = main(["diagnose", *paths, "--json", "--workers", "1"])
        except SystemExit as exc:
            rc = exc.code
    out[name] = [rc, buf.getvalue()]
open(sys.argv[3], "w").write(json.dumps(out))
"""


def base_tree(commit: str) -> Path:
    """``commit``'s tree under WORK/base, with this tree's built scanner (the C file is compared too)."""
    base = WORK / "base"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    shutil.copytree(base / "resources", base / "gpuperf_gui" / "resources")  # the wheel's package-dir mapping
    for so in (ROOT / "gpuperf_gui" / "core" / "trace").glob("_scan*.so"):
        shutil.copy(so, base / "gpuperf_gui" / "core" / "trace" / so.name)
    return base


def run_side(tree: Path, job_list: list, name: str) -> dict:
    spec, out = WORK / "jobs.json", WORK / f"{name}.json"
    spec.write_text(json.dumps(job_list))
    subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(spec), str(out)], check=True, cwd=WORK)
    return json.loads(out.read_text())


def _signature(text: str) -> str:
    try:
        return json.loads(text)["diagnosis"]["signature"]
    except (ValueError, KeyError, TypeError):
        return "(error)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the commit to compare with (e.g. HEAD~1, main)")
    ap.add_argument("--shared", action="store_true", help="also the jobs of ../shared/traces")
    ap.add_argument("--verdicts", action="store_true", help="print every job's signature before -> after")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    job_list = jobs(args.shared)
    before = run_side(base_tree(args.base), job_list, "before")
    after = run_side(ROOT, job_list, "after")
    differ = [name for name, _ in job_list if before[name] != after[name]]
    if args.verdicts:
        for name, _ in job_list:
            b, a = _signature(before[name][1]), _signature(after[name][1])
            print(f"{name:70s} {b:16s} -> {a}{'   CHANGED' if a != b else ''}")
    for name in differ:
        print(f"DIFFERS: {name}")
    print(f"{len(job_list)} jobs: " + ("IDENTICAL" if not differ else f"{len(differ)} differ (outputs in {WORK})"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
