"""The window starts with each corrupted state file in place (docs/robustness.md, State files) and says once, in the status
bar, what it set aside: QSettings values of the wrong type, a bad ceilings file, a bad devices.toml."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, QSettings

from gpuperf_gui.core import state_files


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUPERF_DEVICES_FILE", str(tmp_path / "config" / "devices.toml"))
    state_files.take_pending()  # reports left by other tests
    yield
    state_files.take_pending()


def _ini(text: str) -> Path:
    path = Path(QSettings().fileName())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_rect_where_the_geometry_belongs(make_main_window) -> None:
    path = _ini("[window]\ngeometry=@Rect(0 0 640 480)\nstate=@Rect(1 2 3 4)\n"
                "[selection]\ndevice=h200\n")
    window = make_main_window()  # restoreGeometry(QRect) raised TypeError: the window did not start
    message = window.statusBar().currentMessage()
    assert message.startswith("Set aside: ")
    assert "key window/geometry" in message and "key window/state" in message and "QRect" in message
    assert f"set aside as {path.name}.bad" in message
    assert window.context.device_id == "h200"  # the good keys still count
    assert "@Rect(0 0 640 480)" in path.with_name(path.name + ".bad").read_text()  # kept, not lost
    settings = QSettings()
    assert settings.value("window/geometry") is None and settings.value("selection/device") == "h200"
    assert len(window.set_aside_notices) == 2


def test_recent_files_as_a_number(make_main_window) -> None:
    settings = QSettings()
    settings.setValue("recent/files", 5)
    settings.setValue("selection/precision", QRect(1, 2, 3, 4))
    settings.sync()
    window = make_main_window()
    assert not window.recent_menu.isEnabled() and window.recent_menu.actions() == []
    notices = window.set_aside_notices
    assert any("key recent/files" in n and "a list of file paths" in n for n in notices)
    assert any("key selection/precision" in n for n in notices)
    assert window.context.precision == "bf16"  # the default
    window.close()
    again = make_main_window()  # said once: the bad keys are gone
    assert again.set_aside_notices == []


def test_bad_ceilings_and_devices_files_at_start(make_main_window, tmp_path: Path) -> None:
    ceilings = tmp_path / "data" / "bench" / "ceilings" / "cpu.json"
    ceilings.parent.mkdir(parents=True)
    ceilings.write_text(json.dumps({"device_id": "cpu", "matmul_flops_per_s": "abc"}))
    devices = tmp_path / "config" / "devices.toml"
    devices.parent.mkdir(parents=True)
    devices.write_text("[deep]\nnotes = " + "[" * 5000 + "]" * 5000 + "\n")
    window = make_main_window(device_id="cpu", precision="fp32")
    message = window.statusBar().currentMessage()
    assert f"{ceilings}, key matmul_flops_per_s" in message and "cpu.json.bad" in message
    assert str(devices) in message and "nested too deeply" in message and "devices.toml.bad" in message
    assert "no known fp32 peak" in window.peak_label.text()  # the cpu as if never measured
    assert "h100-sxm" in window.context.database
    window.close()
    assert make_main_window().set_aside_notices == []


def test_a_state_file_set_aside_while_running_is_said_in_the_status_bar(make_main_window, tmp_path: Path) -> None:
    from gpuperf_gui.core.bench.ceilings import load_ceilings

    window = make_main_window()
    path = tmp_path / "data" / "bench" / "ceilings" / "h200.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_ceilings("h200") is None
    assert window.statusBar().currentMessage() == f"Set aside: {window.set_aside_notices[0]}"
    assert str(path) in window.set_aside_notices[0] and "invalid JSON" in window.set_aside_notices[0]
