"""The test command's own rules hold under pytest-xdist: GPUPERF_NO_SKIPS=1 fails a skip (unless
marked gpu) in a worker as in one process, and the default run leaves the slow tier out."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

CASES = '''
import pytest

def test_skips():
    pytest.skip("oracle missing")

@pytest.mark.gpu
def test_gpu_skips():
    pytest.skip("needs a CUDA device")

@pytest.mark.slow
def test_long():
    pass

def test_passes():
    pass
'''


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_cases.py").write_text(CASES, encoding="utf-8")
    # tests/conftest.py as a plugin (-p conftest), so its hooks run in every worker; the project's
    # pytest configuration (-c) with its markers and its default `-m "not slow"`.
    env = {**os.environ, "GPUPERF_NO_SKIPS": "1", "PYTHONPATH": str(TESTS)}
    cmd = [sys.executable, "-m", "pytest", "-p", "conftest", "-c", str(TESTS.parent / "pyproject.toml"),
           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-q", "-rA", *args, str(tmp_path / "test_cases.py")]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_no_skips_and_the_slow_tier_under_xdist(tmp_path: Path, workers: list[str]) -> None:
    proc = _pytest(tmp_path, *workers)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "FAILED" in out and "test_cases.py::test_skips" in out and "unexpected skip" in out, out
    assert "1 failed, 1 passed, 1 skipped" in out and "test_long" not in out, out  # gpu skips, slow left out
    proc = _pytest(tmp_path, *workers, "-m", "slow")
    assert proc.returncode == 0, proc.stdout
    assert "PASSED test_cases.py::test_long" in proc.stdout and "\n1 passed" in proc.stdout, proc.stdout
