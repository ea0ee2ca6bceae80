"""Write the package diagram of docs/ARCHITECTURE.md from the code's own imports (grimp).

    python docs/architecture_diagram.py          # rewrites the block between the markers
    python docs/architecture_diagram.py --check  # exit 1 when the committed diagram is stale

Each box is a group of modules (a floor or a room); an arrow A --n--> B says that n imports in A's
modules name a module of B (at any depth of a module, as import-linter counts them).
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import grimp

DOC = Path(__file__).resolve().parent / "ARCHITECTURE.md"
BEGIN, END = "<!-- diagram:begin -->", "<!-- diagram:end -->"

# Longest prefix wins: the rooms drawn, top floor first.
GROUPS = [
    ("app", "gpuperf_gui.__main__"),
    ("cli", "gpuperf_gui.cli"),
    ("commands", "gpuperf_gui.commands"),
    ("views", "gpuperf_gui.views"),
    ("core.trace.session", "gpuperf_gui.core.trace.session"),
    ("core.trace.engine", "gpuperf_gui.core.trace.engine"),
    ("core.trace.diagnosis", "gpuperf_gui.core.trace.diagnosis"),
    ("core.trace.analysis", "gpuperf_gui.core.trace.analysis"),
    ("core.trace.ingest", "gpuperf_gui.core.trace.ingest"),
    ("core.trace.model", "gpuperf_gui.core.trace.model"),
    ("core.trace.synthetic", "gpuperf_gui.core.trace.synthetic"),
    ("core.trace.vocabulary", "gpuperf_gui.core.trace.vocabulary"),
    ("core.bench", "gpuperf_gui.core.bench"),
    ("core", "gpuperf_gui.core"),
]


def group_of(module: str) -> str | None:
    best = None
    for name, prefix in GROUPS:
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
            best = (name, prefix)
    return best[0] if best else None


def edges() -> tuple[Counter, Counter]:
    graph = grimp.build_graph("gpuperf_gui", cache_dir=None)
    arrows: Counter = Counter()
    sizes: Counter = Counter()
    for module in graph.modules:
        source = group_of(module)
        if source is None:
            continue
        sizes[source] += 1
        for imported in graph.find_modules_directly_imported_by(module):
            target = group_of(imported)
            if target is not None and target != source:
                arrows[(source, target)] += 1
    return arrows, sizes


def mermaid() -> str:
    arrows, sizes = edges()
    lines = ["```mermaid", "flowchart TD"]
    for name, _ in GROUPS:
        node = name.replace(".", "_")
        count = sizes[name]
        lines.append(f'    {node}["{name} ({count} module{"" if count == 1 else "s"})"]')
    for (source, target), count in sorted(arrows.items()):
        lines.append(f"    {source.replace('.', '_')} -->|{count}| {target.replace('.', '_')}")
    lines.append("```")
    return "\n".join(lines)


def main() -> int:
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        print(f"{DOC}: the markers {BEGIN} and {END} are missing", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{mermaid()}\n{END}{tail}"
    if "--check" in sys.argv:
        if new != text:
            print(f"{DOC}: the diagram is stale; run python docs/architecture_diagram.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
