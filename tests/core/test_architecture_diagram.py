"""docs/ARCHITECTURE.md's diagram is made from the code's imports and must match them (never stale)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "architecture_diagram.py"


def _check() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_committed_diagram_matches_the_import_graph() -> None:
    proc = _check()
    assert proc.returncode == 0, proc.stderr or "docs/architecture_diagram.py --check failed"


def test_the_check_fails_on_a_stale_diagram(tmp_path: Path) -> None:
    """The same script on a copy of the doc with one arrow's count changed says it is stale."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split("<!-- diagram:begin -->", 1)[1].split("<!-- diagram:end -->", 1)[0]
    assert "flowchart TD" in block and "views -->|" in block and "core[" in block
    arrow = next(line for line in block.splitlines() if "-->|" in line)
    stale = doc.replace(arrow, arrow.replace("-->|", "-->|9", 1), 1)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ARCHITECTURE.md").write_text(stale)
    (tmp_path / "docs" / "architecture_diagram.py").write_text(SCRIPT.read_text())
    proc = subprocess.run([sys.executable, str(tmp_path / "docs" / "architecture_diagram.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "stale" in proc.stderr
