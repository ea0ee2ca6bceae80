"""The wheel ships every package: pyproject's explicit `packages` list names each folder of
gpuperf_gui that has an __init__.py (an editable install hides a missing one; a built wheel or the
app bundle would then fail to import it)."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts)
               for init in (ROOT / "gpuperf_gui").rglob("__init__.py") if "__pycache__" not in init.parts}
    assert on_disk - listed == set(), f"packages missing from pyproject.toml: {sorted(on_disk - listed)}"
    assert "gpuperf_gui.resources" in listed  # data folder mapped by package-dir
