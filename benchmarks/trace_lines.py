"""Lines of ``gpuperf_gui/core/trace`` now against when the structure issue was filed, like for like.

When the issue asking for fewer lines in ``core/trace`` was filed (:data:`FILED`, commit 90e3cf7), the
package had 10,008 lines of Python in 28 modules. Later issues added features there (the critical path
and what-if, precision per kernel, the host-sync and host-bound signatures, the diff headline, the
nesting extension, ...) and the structure issue itself moved the Trace tab's state in from the views.
A plain total compares a larger program with a smaller one; this script also prints the lines of the
modules those features added (:data:`ADDED`, each with the commit that added it: ``git log
--diff-filter=A``) and of the modules moved in from the views (:data:`MOVED_IN`), and compares the
remainder - the code that existed at filing, doing the same job - with the 10,008.

The remainder still holds what other issues added *inside* modules that existed at filing (host-sync
causes in the rank analysis, precision columns in the builder, the what-if line in the loading
worker ...), so the comparison errs against the reduction. The script counts the part of it that
``git blame`` still gives to the features' commits in :data:`ADDED` (a line changed since counts as
the later commit's: an undercount) and prints the remainder without those lines too.

It also counts the load/analyse entry points (:data:`CHAIN`, the functions listed in
docs/trace-object.md, *The ways in*, and those the structure issue removed): how many are public
functions of their module, and how many are called from outside core/trace (the rest of
gpuperf_gui, tests, benchmarks), at :data:`ENTRY_BASE` (before the entry-point trim) and now.

    .venv/bin/python benchmarks/trace_lines.py            # now = this working tree
    .venv/bin/python benchmarks/trace_lines.py --rev HEAD  # now = a commit
"""
from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gpuperf_gui/core/trace"
FILED = "90e3cf7"
"""The commit the structure issue was filed at."""
ENTRY_BASE = "2379541"
"""The layers move: the last commit before the entry points were trimmed."""

ADDED: list[tuple[str, str, str]] = [
    # (path under core/trace, the commit that added it, the feature and its issue)
    ("analysis/critical_path.py", "572e7f6", "what-if: the step's critical path"),
    ("analysis/what_if.py", "572e7f6", "what-if: projected speedups"),
    ("session/what_if_shown.py", "2b405bd", "what-if: in the loading worker"),
    ("vocabulary/precision.py", "0579c5d", "context of figures: precision per kernel"),
    ("analysis/kernel_roof.py", "0579c5d", "context of figures: kernels on the roofline"),
    ("vocabulary/glossary.py", "a06dcd7", "context of figures: one name per figure"),
    ("analysis/profiler_overhead.py", "f4d0d98", "context of figures: the diff headline"),
    ("session/diff_headline.py", "f4d0d98", "context of figures: the diff headline"),
    ("model/host_sync.py", "8f156ec", "diagnosis: host-sync signature"),
    ("analysis/kernel_evidence.py", "8f156ec", "diagnosis: skinny GEMMs, graph replays"),
    ("diagnosis/signatures/host_sync_bound.py", "8f156ec", "diagnosis: host-sync signature"),
    ("diagnosis/signatures/host_bound.py", "73bbb4c", "diagnosis: host-bound signature"),
    ("diagnosis/stragglers.py", "89fcecf", "diagnosis: NCCL straggler"),
    ("synthetic/synth_nccl.py", "89fcecf", "diagnosis: NCCL straggler"),
    ("model/nesting/nest.py", "abcb3d8", "speed: op-table nesting in one pass"),
]
"""Modules that other issues' features added after :data:`FILED`."""

MOVED_IN: list[tuple[str, str, str]] = [
    ("session/tab_state.py", "d7eecd4", "the Trace tab's state, from views/trace_tab.py"),
    ("session/signature_lanes.py", "7778ef8", "the presentation's signature lanes, from views/presentation.py"),
    ("session/demos.py", "193294a", "the demo menu's list, from views/trace_tab.py"),
]
"""Modules the structure issue moved into core/trace from the views (Qt-free state)."""

FILED_AS: dict[str, str] = {
    # the 28 modules at filing (flat, core/trace/<name>.py) -> their path since the layers move
    "__init__": "__init__.py", "scan": "ingest/scanner/scan.py", "figures": "diagnosis/figures.py",
    "budget": "ingest/budget.py", "heap": "ingest/heap.py", "name_masks": "model/name_masks.py",
    "kernel_classes": "vocabulary/kernel_classes.py", "intervals": "analysis/intervals.py",
    "tile": "synthetic/tile.py", "op_points": "analysis/op_points.py", "lanes": "model/lanes.py",
    "source": "ingest/source.py", "load": "ingest/load.py", "flops": "vocabulary/flops.py",
    "api": "engine/api.py", "synth": "synthetic/synth.py", "model": "model/trace_model.py",
    "lod": "model/lod.py", "diagnose": "diagnosis/diagnose.py", "overview": "analysis/overview.py",
    "diff": "session/diff.py", "cluster": "engine/cluster.py", "optable": "analysis/optable.py",
    "decode": "ingest/decode.py", "session": "session/loaded_trace.py",
    "stream_decode": "ingest/stream_decode.py", "analysis": "analysis/rank_analysis.py", "build": "ingest/build.py",
}
"""Where each module of :data:`FILED` lives now (the layers move, commit 2379541, renamed them)."""

CHAIN: list[tuple[str, str]] = [
    # (module path under core/trace, public name): the load/analyse chain
    ("session/trace.py", "Trace"),
    ("session/trace.py", "iter_job_overview"),
    ("session/trace.py", "iter_compact_trace"),      # gone: folded into iter_job_overview
    ("session/loaded_trace.py", "load_job"),        # gone: a lambda around iter_loaded_trace
    ("session/loaded_trace.py", "iter_loaded_trace"),
    ("session/loaded_trace.py", "load_trace"),      # gone: iter_loaded_trace folded by its caller
    ("session/loaded_trace.py", "build_loaded_trace"),
    ("session/loaded_trace.py", "iter_built_trace"),
    ("engine/api.py", "iter_load_and_analyse"),
    ("engine/api.py", "analyse_paths"),
    ("engine/api.py", "analyse_loaded_rank"),
    ("engine/api.py", "assemble_job"),
    ("engine/cluster.py", "iter_compact_analyse"),
    ("engine/cluster.py", "iter_cluster_analyse"),  # gone: iter_compact_analyse(address=...)
    ("engine/cluster.py", "summarize_rank"),
    ("engine/cluster.py", "summarize_ranks"),
    ("engine/cluster.py", "lane_summaries"),
    ("ingest/load.py", "load_rank"),
    ("ingest/load.py", "load_rank_whole"),
    ("ingest/load.py", "load_trace"),
    ("ingest/stream_decode.py", "load_rank_streamed"),
    ("ingest/stream_decode.py", "stream_columns"),
    ("ingest/stream_decode.py", "decode_run"),
]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _py_files(rev: str | None, under: str) -> dict[str, str]:
    """Path -> text of the tracked ``.py`` files below ``under`` at ``rev`` (None: the working tree)."""
    if rev is None:
        return {p: (ROOT / p).read_text() for p in _git("ls-files", "--", under).split()
                if p.endswith(".py") and (ROOT / p).is_file()}
    paths = [p for p in _git("ls-tree", "-r", "--name-only", rev, "--", under).split() if p.endswith(".py")]
    batch = subprocess.run(["git", "cat-file", "--batch"], cwd=ROOT, check=True, capture_output=True,
                           input="".join(f"{rev}:{p}\n" for p in paths).encode()).stdout
    texts, at = {}, 0
    for p in paths:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        texts[p] = batch[header_end + 1:header_end + 1 + size].decode()
        at = header_end + 1 + size + 1
    return texts


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _defined(text: str, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.parse(text).body)


def _outside_uses(texts: dict[str, str]) -> set[tuple[str, str]]:
    """(module, name) pairs imported or read as ``module.name`` by a file outside core/trace."""
    used: set[tuple[str, str]] = set()
    for path, text in texts.items():
        if path.startswith(PACKAGE + "/"):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    used.add((node.module, a.name))
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]   # `import a.b` binds `a`; `import a.b as m` binds m to a.b
                    aliases[a.asname or top] = a.name if a.asname else top
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                used.add((aliases[node.value.id], node.attr))
    return used


def _entry_points(rev: str | None) -> tuple[list[str], list[str]]:
    """The chain's public functions at ``rev``, and those of them used outside core/trace."""
    texts = _py_files(rev, "gpuperf_gui")
    texts.update(_py_files(rev, "tests"))
    texts.update(_py_files(rev, "benchmarks"))
    used = _outside_uses(texts)
    public, outside = [], []
    for module, name in CHAIN:
        path = f"{PACKAGE}/{module}"
        if path in texts and _defined(texts[path], name):
            label = f"{module[:-3]}.{name}"
            public.append(label)
            if (path[:-3].replace("/", "."), name) in used:
                outside.append(label)
    return public, outside


def _written_by(commits: list[str], paths: list[str], rev: str | None) -> int:
    """Lines of ``paths`` (under core/trace) that ``git blame`` at ``rev`` (None: the working tree)
    gives to one of ``commits``. Blame names the last change of a line only: a feature's line that a
    later commit touched counts as that commit's, so this undercounts what the features wrote."""
    wanted = {_git("rev-parse", c).strip() for c in commits}
    count = 0
    for path in paths:
        out = _git("blame", "--line-porcelain", *([rev] if rev else []), "--", f"{PACKAGE}/{path}")
        count += sum(1 for line in out.splitlines()
                     if len(line) > 41 and line[40] == " " and line[:40] in wanted)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=None, help="count this commit as 'now' (default: the working tree)")
    args = parser.parse_args()
    then = _py_files(FILED, PACKAGE)
    now = _py_files(args.rev, PACKAGE)
    total_then = sum(_lines(t) for t in then.values())
    total_now = sum(_lines(t) for t in now.values())
    print(f"core/trace at {FILED} (filed): {total_then:,} lines of Python in {len(then)} modules")
    print(f"core/trace now ({args.rev or 'working tree'}): {total_now:,} lines in {len(now)} modules "
          f"({total_now - total_then:+,})")
    set_aside = 0
    for title, rows in (("added by other issues' features", ADDED), ("moved in from the views", MOVED_IN)):
        print(f"\n{title}:")
        group = 0
        for path, commit, topic in rows:
            n = _lines(now.get(f"{PACKAGE}/{path}", ""))
            group += n
            print(f"  {n:6,}  {path:42} {commit}  {topic}")
        print(f"  {group:6,}  in all")
        set_aside += group
    print(f"\nthe {len(FILED_AS)} modules of {FILED}, then -> now:")
    old_now = 0
    for name, path in sorted(FILED_AS.items(), key=lambda kv: kv[1]):
        n_then, n_now = _lines(then[f"{PACKAGE}/{name}.py"]), _lines(now.get(f"{PACKAGE}/{path}", ""))
        old_now += n_now
        print(f"  {n_then:6,} -> {n_now:6,}  {path}")
    print(f"  {total_then:6,} -> {old_now:6,}  in all")
    known = {f"{PACKAGE}/{p}" for p, _, _ in ADDED + MOVED_IN} | {f"{PACKAGE}/{p}" for p in FILED_AS.values()}
    rest = {p: _lines(t) for p, t in now.items() if p not in known}
    print("\nthe structure issue's own modules (split out of those 28, the Trace object, the load state, the "
          "schema, the layers' package docstrings):")
    for path, n in sorted(rest.items()):
        print(f"  {n:6,}  {path[len(PACKAGE) + 1:]}")
    print(f"  {sum(rest.values()):6,}  in all")
    remainder = total_now - set_aside
    print(f"\nlike for like (the 28 modules + the structure issue's own): {remainder:,} lines against "
          f"{total_then:,} at filing ({remainder - total_then:+,}, {remainder / total_then - 1:+.1%})")
    inside = _written_by(sorted({c for _, c, _ in ADDED}), sorted(FILED_AS.values()), args.rev)
    print(f"of which {inside:,} lines of the 28 modules the features' commits above wrote there and no later "
          f"commit changed (git blame); without them: {remainder - inside:,} "
          f"({remainder - inside - total_then:+,}, {(remainder - inside) / total_then - 1:+.1%})")
    for label, rev in ((f"at {ENTRY_BASE} (before the trim)", ENTRY_BASE), ("now", args.rev)):
        public, outside = _entry_points(rev)
        print(f"\nload/analyse entry points {label}: {len(public)} public, {len(outside)} used outside core/trace")
        print("  outside: " + ", ".join(outside))


if __name__ == "__main__":
    main()
