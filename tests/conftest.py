"""Shared fixtures. Qt runs offscreen; QSettings go to a per-test folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("GPUPERF_DEVICES_FILE", os.devnull + ".none")  # no user file in tests
# Benchmark results go to a throw-away folder, never the user's data folder.
os.environ.setdefault("GPUPERF_DATA_DIR", tempfile.mkdtemp(prefix="gpuperf-tests-"))

SHARED_TRACES = Path(os.environ.get("GPUPERF_SHARED_TRACES",
                                    Path(__file__).resolve().parents[1] / ".." / "shared" / "traces"))
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def shared_traces() -> Path:
    """The real traces in ../shared/traces (skips when that folder is not beside the checkout)."""
    path = SHARED_TRACES.resolve()
    if not path.is_dir():
        pytest.skip(f"shared traces not found at {path}")
    return path


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
