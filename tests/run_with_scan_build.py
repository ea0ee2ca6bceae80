"""Run a command with another build of the C scanner: ``run_with_scan_build.py SO -m pytest ARGS``
or ``run_with_scan_build.py SO SCRIPT ARGS`` (CI's ASan + UBSan build, .ci/run).

The build ``SO`` (``setup.py build_ext --build-lib DIR`` with sanitizer flags) is loaded as
``gpuperf_gui.core.trace.ingest.scanner._scan`` before anything imports the in-place one, so the package's own
``from . import _scan`` finds it; the run fails at once if it did not take. ``--ext MODULE SO`` (before
``-m`` or the script, repeatable) loads another extension's build the same way (the what-if's
``gpuperf_gui.core.trace.analysis._replay``).
"""
from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

NAME = "gpuperf_gui.core.trace.ingest.scanner._scan"


def preload(so_path: str | Path, name: str = NAME) -> None:
    """Load ``so_path`` as the extension ``name`` (default: the scanner) of this process."""
    import gpuperf_gui.core.trace  # noqa: F401 - the parent package first

    spec = importlib.util.spec_from_file_location(name, str(so_path))
    if spec is None or spec.loader is None:
        raise SystemExit(f"{so_path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    loaded = importlib.import_module(name)
    if Path(loaded.__file__).resolve() != Path(so_path).resolve():
        raise SystemExit(f"the {name} loaded is {loaded.__file__}, not {so_path}")


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    preload(argv[0])
    argv = argv[1:]
    while argv[:1] == ["--ext"] and len(argv) >= 3:
        preload(argv[2], argv[1])
        argv = argv[3:]
    argv = [""] + argv
    if argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
