"""`gpuperf diagnose` pays only for what it uses: the start-up budget guarded by what gets imported
(no timing), in a fresh interpreter. And the console script's exit: output flushed, the command's
status, no interpreter teardown."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TRACE = Path(__file__).resolve().parents[1] / "data" / "h200" / "nested_sum.json.gz"

NEVER = ("torch", "PySide6", "pyqtgraph", "dask", "distributed", "pandas", "scipy", "matplotlib",
         "gpuperf_gui.views", "gpuperf_gui.core.bench", "gpuperf_gui.core.catalog",
         "gpuperf_gui.core.mfu", "gpuperf_gui.core.mfu_gap", "gpuperf_gui.core.mfu_inputs",
         "gpuperf_gui.core.mfu_report", "gpuperf_gui.core.model_presets",
         "gpuperf_gui.core.profile_script", "gpuperf_gui.core.child_stream",
         "gpuperf_gui.core.trace.engine.cluster", "gpuperf_gui.core.trace.session.diff", "gpuperf_gui.core.trace.synthetic.synth",
         "gpuperf_gui.core.trace.session.loaded_trace", "gpuperf_gui.core.trace.model.lod",
         "gpuperf_gui.core.trace.model.lanes", "gpuperf_gui.core.trace.synthetic.tile", "gpuperf_gui.commands.roofline",
         "gpuperf_gui.commands.mfu", "gpuperf_gui.commands.bench", "gpuperf_gui.commands.profile",
         "numpy.ma", "multiprocessing", "concurrent.futures.process")
"""Modules (and their submodules) a local `gpuperf diagnose FILE` of a small file never needs: the
window, torch, the Dask engine, the hardware catalog and MFU models, the roofline model (the JSON's
points need none of it), the state files (devices.toml, ceilings), the GUI's trace session and
level-of-detail code, the other commands, numpy's masked arrays (~10 ms: `np.unique(x)` without
return_* flags and `np.median` pull them in, so the loader and the analysis avoid both) and the
process pool (~25 ms: imported only when per-file processes start).
``core.trace.analysis.overview`` is imported: the JSON carries the Overview's kernel figures (tensor-core
share, per-kernel FLOPs and precision). So is the device database (hardware, its TOML, roofline): this
file's back-to-back reduction kernels are a run the what-if fuses, bounded by the device's memory
bandwidth (docs/what-if.md); a trace with no such run and no kernel FLOPs does not read it."""

CHILD = """
import contextlib, io, json, sys
from gpuperf_gui import cli
import gpuperf_gui.commands.diagnose
before = sorted(sys.modules)
with contextlib.redirect_stdout(io.StringIO()) as out:
    rc = cli.main(["diagnose", sys.argv[1], "--json"])
json.loads(out.getvalue())
print(json.dumps({"rc": rc, "before": before, "after": sorted(sys.modules)}))
"""


def _unwanted(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_diagnose_imports_nothing_it_does_not_use() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(TRACE)], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout)
    assert got["rc"] == 0
    assert _unwanted(got["after"], NEVER) == []
    assert "gpuperf_gui.core.trace.engine.api" in got["before"]  # the check sees the real import path


def _entry(*argv: str) -> subprocess.CompletedProcess:
    code = "from gpuperf_gui.cli import entry; entry()"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def test_the_console_script_flushes_its_output_and_keeps_the_exit_status(tmp_path: Path) -> None:
    ok = _entry("diagnose", str(TRACE), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ranks"][0]["diagnosis"]["signature"]  # the whole JSON arrived
    bad = tmp_path / "not_a_trace.json"
    bad.write_text('{"hello": 1}')
    refused = _entry("diagnose", str(bad))
    assert refused.returncode == 2
    assert refused.stderr.startswith("gpuperf: error:") and "Traceback" not in refused.stderr
    assert _entry("diagnose", str(TRACE), "--top", "-1").returncode == 2


def test_the_console_script_exits_cleanly_after_a_process_pool() -> None:
    """Two ranks on two worker processes: the pool is shut down before the fast exit, and every
    rank's result is printed."""
    folder = TRACE.parent / "ddp_straggler_gloo"
    done = _entry("diagnose", str(folder), "--json", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(r["rank"] for r in json.loads(done.stdout)["ranks"]) == [0, 1]


def test_the_analysis_median_is_numpys_to_the_bit() -> None:
    """analysis._median stands in for np.median (which imports numpy.ma): the same float on odd and
    even sizes, ties, integers, a NaN."""
    import numpy as np

    from gpuperf_gui.core.trace.analysis.rank_analysis import _median

    rng = np.random.default_rng(7)
    cases = [rng.exponential(3.0, n) for n in (1, 2, 3, 10, 11, 1000, 1001)]
    cases += [np.round(rng.uniform(0, 5, 40)), rng.integers(0, 9, 12), np.array([1e300, 1e300]),
              np.array([0.1, 0.2]), np.array([3.0, np.nan, 1.0])]
    for values in cases:
        want = float(np.median(values))
        assert _median(values) == want or (np.isnan(want) and np.isnan(_median(values)))
