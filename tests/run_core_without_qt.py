"""Run tests/core with PySide6, shiboken6 and pyqtgraph made unimportable (STYLE.md R1).

Cheaper than a second venv without PySide6 and checks the same thing: core code that imports Qt,
even indirectly, fails here.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

BLOCKED = ("PySide6", "shiboken6", "pyqtgraph", "gpuperf_gui.views")


class _BlockQt(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001
        if fullname.split(".")[0] in BLOCKED or fullname.startswith("gpuperf_gui.views"):
            raise ImportError(f"{fullname} is blocked: core must not import Qt or views")
        return None


def main() -> int:
    sys.meta_path.insert(0, _BlockQt())
    import pytest

    root = Path(__file__).resolve().parents[1]
    return pytest.main([str(root / "tests" / "core"), "-q", "-p", "no:pytest-qt",
                        "-o", "addopts=", "-W", "ignore::pytest.PytestConfigWarning"])


if __name__ == "__main__":
    sys.exit(main())
