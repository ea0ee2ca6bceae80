"""Shared fixtures. Qt runs offscreen; QSettings go to a per-test folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from font_pinning import pin_fonts

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Before Qt starts: the vendored fonts only, whatever the machine's fontconfig prefers (font_pinning.py).
pin_fonts(os.environ)
os.environ.setdefault("GPUPERF_DEVICES_FILE", os.devnull + ".none")  # no user file in tests
# Benchmark results go to a throw-away folder, never the user's data folder.
os.environ.setdefault("GPUPERF_DATA_DIR", tempfile.mkdtemp(prefix="gpuperf-tests-"))

TEST_DATA = Path(__file__).resolve().parent / "data"
# The real traces of shared/traces, copied byte for byte into tests/data/shared_traces (SOURCES.md
# there), so a clone without ../shared runs every oracle test. GPUPERF_SHARED_TRACES points elsewhere.
SHARED_TRACES = Path(os.environ.get("GPUPERF_SHARED_TRACES", TEST_DATA / "shared_traces"))


@pytest.fixture
def shared_traces() -> Path:
    """The real traces (tests/data/shared_traces, or where GPUPERF_SHARED_TRACES points)."""
    path = SHARED_TRACES.resolve()
    if not path.is_dir():
        pytest.fail(f"shared traces not found at {path}")
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ANN001, ANN201 (pytest hook)
    """With GPUPERF_NO_SKIPS=1 (CI), a skipped test fails unless it is marked ``gpu``: an oracle test
    that quietly skips checks nothing."""
    outcome = yield
    report = outcome.get_result()
    if (os.environ.get("GPUPERF_NO_SKIPS") == "1" and report.skipped and not hasattr(report, "wasxfail")
            and item.get_closest_marker("gpu") is None):
        report.outcome = "failed"
        report.longrepr = f"unexpected skip (GPUPERF_NO_SKIPS=1): {report.longrepr}"


@pytest.fixture
def test_data() -> Path:
    return TEST_DATA


@pytest.fixture(autouse=True)
def _isolated_qsettings(tmp_path, request):
    """Point QSettings at tmp_path for tests that import Qt (core tests never load Qt)."""
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName("gpuperf-tests")
    QCoreApplication.setApplicationName("gpuperf-tests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield
