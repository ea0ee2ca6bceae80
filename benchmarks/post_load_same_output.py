"""Check that the Trace tab's objects and the diagnosis are the same as at an earlier commit, byte for byte.

For each trace of tests/data (every ``*.json.gz``, the multi-rank folders and unprofiled jobs as
jobs) and, with ``--big``, /tmp/tabscale/e1M.json: ``gpuperf diagnose --json``'s text (``--top``
10 and the whole op table) and a fingerprint of the Trace tab's LoadedTrace (lanes, LOD indexes,
op tables, overview, diagnosis view, roofline points, activity; arrays by SHA-1 of their bytes).
The "before" side runs a ``git worktree`` of ``BASE`` (with the C extensions built here where
their sources match, as :mod:`diagnose_same_output` sets its sides up); the "after" side runs this
tree as it is. Both sides read the same trace files, through this script.

    nice .venv/bin/python benchmarks/post_load_same_output.py 221f716          # tests/data
    nice .venv/bin/python benchmarks/post_load_same_output.py 221f716 --big    # + e1M.json

Prints IDENTICAL, or the files that differ (they stay in the run's folder, printed).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK_PREFIX = "post_load_same_output-"
"""Each run's folder (``tempfile.mkdtemp``): runs side by side do not share one."""
SKIPPED_FIELDS = ("model", "timings_s", "analysis_pending")


def canon(x: object, depth: int = 0) -> object:
    """A JSON-able fingerprint of ``x``: floats by repr, arrays by dtype, shape and SHA-1."""
    import numpy as np

    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        return f"nd{a.dtype}{a.shape}:" + hashlib.sha1(a.tobytes()).hexdigest()
    if isinstance(x, np.generic):
        return repr(x.item())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {type(x).__name__: {f.name: canon(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)
                                   if f.name not in SKIPPED_FIELDS}}
    if isinstance(x, dict):
        return [[canon(k), canon(v, depth + 1)] for k, v in x.items()]
    if isinstance(x, (list, tuple)):
        return [canon(v, depth + 1) for v in x]
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    if isinstance(x, (set, frozenset)):
        return sorted(canon(v) for v in x)
    if hasattr(x, "__dict__") and depth < 12:
        return {type(x).__name__: canon({k: v for k, v in vars(x).items() if k not in SKIPPED_FIELDS}, depth + 1)}
    if hasattr(type(x), "__slots__") and depth < 12:
        return {type(x).__name__: canon({k: getattr(x, k) for k in type(x).__slots__ if hasattr(x, k)}, depth + 1)}
    return f"{type(x).__name__}:{repr(x)[:200]}"


def jobs(big: bool) -> list[tuple[str, list[Path]]]:
    data = ROOT / "tests" / "data"
    multi = ("gloo_cpu_allreduce", "ddp_straggler_gloo", "unprofiled")
    out = [(str(p.relative_to(data)).replace("/", "_"), [p]) for p in sorted(data.rglob("*.json.gz"))
           if p.parent.name not in multi]
    out += [("gloo_dir", [data / "h200" / "gloo_cpu_allreduce"]), ("ddp_dir", [data / "h200" / "ddp_straggler_gloo"])]
    for job in ("compiled_tiny", "eager_tiny", "loader_fed", "loader0"):
        out.append((f"unprof_{job}", sorted((data / "h200" / "unprofiled").glob(f"{job}.r*.json.gz"))))
    if big:
        out.append(("e1M", [Path("/tmp/tabscale/e1M.json")]))
    return out


def snapshot(out_dir: Path, big: bool) -> None:
    """Write every job's outputs under ``out_dir`` (run in the interpreter whose code is compared)."""
    from gpuperf_gui.core.trace.session import loaded_trace as session
    from gpuperf_gui.core.trace.session.trace import Trace

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, paths in jobs(big):
        result = Trace(paths, memory_budget=16 << 30).result()
        texts = {"json": json.dumps(result.to_json(top=10), indent=2, allow_nan=False),
                 "full.json": json.dumps(result.to_json(top=10**9), indent=2, allow_nan=False)}
        loaded = session.build_loaded_trace(result, roofline=True)
        texts["loaded.json"] = json.dumps(canon(loaded), indent=1)
        texts["model.json"] = json.dumps(canon([list(r.lanes) for r in loaded.model.ranks]), indent=1)
        for suffix, text in texts.items():
            (out_dir / f"{name}.{suffix}").write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", help="commit whose post-load modules are 'before'")
    parser.add_argument("--big", action="store_true", help="also /tmp/tabscale/e1M.json")
    parser.add_argument("--snapshot", type=Path, help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args(argv)
    if args.snapshot:
        snapshot(args.snapshot, args.big)
        return 0
    if not args.base:
        parser.error("give the base commit")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import diagnose_same_output as same

    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    base_tree = same._worktree(args.base, work / "base")
    try:
        source, theirs = same.scanner_source(ROOT), same.scanner_source(base_tree)
        built = sorted(source.parent.glob("_scan.*.so")) if source else []
        if built and same._scanner_fits(base_tree):
            shutil.copy2(built[0], theirs.parent / built[0].name)
        else:
            print("the scanner differs or is not built: the before side runs without it")
        same._copy_fitting_extensions(base_tree, "before")
        flag = ["--big"] if args.big else []
        runs = []
        for side, path in (("before", base_tree), ("after", ROOT)):
            env = dict(os.environ, PYTHONPATH=str(path))
            runs.append(subprocess.Popen([sys.executable, __file__, "--snapshot", str(work / side), *flag],
                                         env=env, cwd=work))
        if any(p.wait() for p in runs):
            print("a snapshot failed")
            return 1
    finally:
        same._remove_worktree(base_tree)
    before, after = sorted((work / "before").iterdir()), sorted((work / "after").iterdir())
    differ = [a.name for b, a in zip(before, after) if b.read_bytes() != a.read_bytes()]
    if [p.name for p in before] != [p.name for p in after]:
        differ.append("(the file lists differ)")
    print(f"{len(after)} files: " + ("IDENTICAL" if not differ else "DIFFER: " + ", ".join(differ)))
    if differ:
        print(f"outputs: {work}/before and {work}/after")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
