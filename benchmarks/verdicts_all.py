"""Every labelled trace's verdict: expected against got, and (with ``--base``) what a base commit said.

The labels are the recorders' own, never gpuperf's output:

- ``tests/data/h200/**/*.meta.json``: ``expected_signature`` (by construction, benchmarks/h200/
  record_scenarios.py and check_unprofiled.py); the trace is the meta's ``files`` (one file, or the
  rank files of a job: a job) or, for the unprofiled pairs, each repeat's ``traces[].file`` on its own;
- the ``SOURCES.md`` of the shared traces (``/work/shared/traces``, else ``tests/data/shared_traces``): a
  row or bullet that names a trace and, in its own words, a signature ("DATA-STARVED case",
  "communication-bound", "healthy", a file named ``launch_bound_tiny``; :func:`label_of_text`). A row
  that names a signature only as its counterpart ("the fixed counterpart of the data-starved case") is
  not a label. The multi-rank folders (``param/dlrm_kineto``, ``h200_nccl/*``) are one job each.

``--all`` adds every other trace of tests/data (expected "-"). ``--base REV`` runs the same list in a
``git worktree`` of REV (its own interpreter, like benchmarks/diagnose_same_output.py) and prints its
verdict beside HEAD's, marking each that changed.

    nice .venv/bin/python benchmarks/verdicts_all.py                 # expected vs got, and the counts
    nice .venv/bin/python benchmarks/verdicts_all.py --base 9043c63  # ... and the base commit's verdict
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SHARED = Path("/work/shared/traces") if Path("/work/shared/traces").is_dir() else DATA / "shared_traces"
TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = (".key_averages.json", ".meta.json")
SHARED_JOBS = ("param/dlrm_kineto", "h200_nccl/ddp_nccl_comm", "h200_nccl/ddp_nccl_healthy", "hta/trace_filter")
"""Folders of the shared traces that are one job of several ranks (each file's rank is in the file)."""

# The words a SOURCES.md uses for each signature (the registry's names, as written in prose).
_WORDS = {
    "data_starved": r"data[-_ ]starved",
    "comm_bound": r"comm(unication)?[-_ ]bound",
    "launch_bound": r"launch[-_ ]bound",
    "memory_bound": r"memory[-_ ]bound",
    "host_sync_bound": r"host[-_ ]sync[-_ ]bound",
    "pipeline_bubble": r"pipeline[-_ ]bubble",
    "straggler": r"straggler",
    "healthy": r"\bhealthy",
}
_COUNTERPART = re.compile(r"counterpart|fixed|instead of|likely|not\s+\w+[-_ ]bound", re.I)
"""A row that names a signature only as another trace's, or as a guess, gives no label."""


def label_of_text(text: str) -> str | None:
    """The one signature a SOURCES.md row names for its trace, or None (none, several, or one named
    only as the counterpart of this trace)."""
    if _COUNTERPART.search(text):
        return None
    found = {sig for sig, pat in _WORDS.items() if re.search(pat, text, re.I)}
    return found.pop() if len(found) == 1 else None


def meta_jobs() -> list[tuple[str, list[Path], str | None]]:
    """(name, paths, expected) from every meta.json of tests/data/h200."""
    out = []
    for meta_path in sorted((DATA / "h200").rglob("*.meta.json")):
        meta = json.loads(meta_path.read_text())
        expected = meta.get("expected_signature")
        here = meta_path.parent
        rel = str(meta_path.relative_to(DATA)).removesuffix(".meta.json")
        if meta.get("files"):
            paths = [here / f for f in meta["files"]]
            if len(paths) > 1:  # the rank files of one job: its folder
                paths = [paths[0].parent]
            out.append((rel, paths, expected))
        for t in meta.get("traces") or []:  # the unprofiled pairs: each repeat is a trace of its own
            out.append((f"{rel}.r{t['rep']}", [here / t["file"]], expected))
    return [(n, p, e) for n, p, e in out if all(x.exists() for x in p)]


def sources_labels(shared: Path) -> dict[str, str | None]:
    """trace or job (relative to ``shared``) -> the label its SOURCES.md row gives (None: no label)."""
    text = (shared / "SOURCES.md").read_text()
    out: dict[str, str | None] = {}
    for line in text.splitlines():
        names = re.findall(r"`?((?:[\w.-]+/)+[\w.#-]*(?:\.json(?:\.gz)?)?/?)`?", line.split("|")[1] if
                           line.startswith("|") else line)
        if not names:
            continue
        rel = names[0].strip("`").rstrip("/")
        job = next((j for j in SHARED_JOBS if rel.startswith(j)), None)
        key = job or rel
        if not (shared / key).exists() or not (job or key.endswith(TRACE_SUFFIXES)):
            continue
        label = label_of_text(line)
        if label or key not in out:
            out[key] = label if out.get(key) is None else out[key]
    return out


def all_jobs(every: bool) -> list[tuple[str, list[Path], str | None]]:
    jobs = meta_jobs()
    seen = {p for _, paths, _ in jobs for p in paths}
    seen |= {f for p in list(seen) if p.is_dir() for f in p.iterdir()}
    for key, label in sorted(sources_labels(SHARED).items()):
        if label or every:
            jobs.append((f"shared/{key}", [SHARED / key], label))
    if every:
        covered = {f for _, paths, _ in jobs for p in paths for f in ([p, *p.rglob("*")] if p.is_dir() else [p])}
        for p in sorted(DATA.rglob("*")):
            if (p.is_file() and p.name.endswith(TRACE_SUFFIXES) and not p.name.endswith(NOT_TRACES)
                    and "shared_traces" not in p.parts and p not in covered | seen):
                jobs.append((str(p.relative_to(DATA)), [p], None))
    return jobs


def verdicts(jobs: list[tuple[str, list[Path], str | None]]) -> dict[str, dict]:
    """name -> {signature, headline, confidence, loss} of this interpreter's gpuperf (or an error)."""
    from gpuperf_gui.core.trace.session.trace import Trace

    out = {}
    for name, paths, _ in jobs:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = Trace(paths, workers=1).result().diagnosis
            out[name] = {"signature": d.signature, "headline": getattr(d, "headline", d.signature),
                         "confidence": d.confidence, "loss": round(d.loss_fraction, 3)}
        except Exception as exc:  # a file the engine refuses is a verdict too
            out[name] = {"signature": f"error: {type(exc).__name__}", "headline": "error", "confidence": 0.0,
                         "loss": 0.0}
    return out


def _base_verdicts(rev: str, jobs: list[tuple[str, list[Path], str | None]]) -> dict[str, dict]:
    with tempfile.TemporaryDirectory(prefix="verdicts_all-") as work:
        tree = Path(work) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), rev],
                       check=True, capture_output=True, text=True)
        try:
            for so in (ROOT / "gpuperf_gui/core/trace").glob("_scan.*.so"):   # same scanner when it fits
                if (tree / "gpuperf_gui/core/trace/ingest/scanner/_scan.c").read_bytes() == \
                        (ROOT / "gpuperf_gui/core/trace/ingest/scanner/_scan.c").read_bytes():
                    (tree / "gpuperf_gui/core/trace" / so.name).write_bytes(so.read_bytes())
            listing = Path(work) / "jobs.json"
            listing.write_text(json.dumps([[n, [str(p) for p in ps]] for n, ps, _ in jobs]))
            out = Path(work) / "out.json"
            subprocess.run([sys.executable, __file__, "--snapshot", str(listing), str(out)], check=True,
                           env=dict(os.environ, PYTHONPATH=str(tree)), cwd=work)
            return json.loads(out.read_text())
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def _cell(v: dict | None) -> str:
    return f"{v['headline']} {v['confidence']:.2f}" if v else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="also the verdicts of this commit (a git worktree)")
    parser.add_argument("--all", action="store_true", help="also the traces without a label")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--snapshot", nargs=2, help=argparse.SUPPRESS)  # the base's child: jobs.json out.json
    args = parser.parse_args(argv)
    if args.snapshot:
        listing = json.loads(Path(args.snapshot[0]).read_text())
        jobs = [(n, [Path(p) for p in ps], None) for n, ps in listing]
        Path(args.snapshot[1]).write_text(json.dumps(verdicts(jobs)))
        return 0
    jobs = all_jobs(args.all)
    got = verdicts(jobs)
    base = _base_verdicts(args.base, jobs) if args.base else {}
    rows = []
    for name, _, expected in jobs:
        g, b = got[name], base.get(name)
        rows.append({"trace": name, "expected": expected, "got": g, "base": b,
                     "match": expected is not None and g["signature"] == expected,
                     "changed": b is not None and (b["headline"], b["confidence"]) != (g["headline"], g["confidence"])})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["trace"]) for r in rows)
    head = f"{'trace':<{width}}  {'expected':<16} {'got':<34}" + (f" {'base ' + args.base:<34}" if args.base else "")
    print(head)
    print("-" * len(head))
    for r in rows:
        mark = "ok" if r["match"] else ("  " if r["expected"] is None else "XX")
        line = f"{r['trace']:<{width}}  {r['expected'] or '-':<16} {_cell(r['got']):<34}"
        if args.base:
            line += f" {_cell(r['base']):<34}" + (" CHANGED" if r["changed"] else "")
        print(f"{line} {mark}")
    labelled = [r for r in rows if r["expected"] is not None]
    print(f"\n{sum(r['match'] for r in labelled)} of {len(labelled)} labelled traces diagnose as labelled"
          + (f" (base {args.base}: {sum(r['base'] is not None and r['base']['signature'] == r['expected'] for r in labelled)})"
             if args.base else ""))
    if args.base:
        changed = [r["trace"] for r in rows if r["changed"]]
        print(f"{len(changed)} verdicts changed" + (": " + ", ".join(changed) if changed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
