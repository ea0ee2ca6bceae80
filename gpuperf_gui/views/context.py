"""State shared by all tabs: the device database and the device/precision picked in the toolbar."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from gpuperf_gui.core.hardware import DeviceDatabase, load_database


class AppContext(QObject):
    """The shared device picker's state. Tabs read it and listen to its signals."""

    device_changed = Signal(str)
    precision_changed = Signal(str)

    def __init__(self, database: DeviceDatabase | None = None, device_id: str = "h100-sxm",
                 precision: str = "bf16", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.database = database if database is not None else load_database()
        self.device_id = device_id if device_id in self.database else self.database.ids()[0]
        self.precision = precision

    @property
    def device(self):  # -> Device
        return self.database.get(self.device_id)

    def set_device(self, device_id: str) -> None:
        self.database.get(device_id)  # raises UnknownDeviceError for a bad id
        if device_id != self.device_id:
            self.device_id = device_id
            self.device_changed.emit(device_id)

    def set_precision(self, precision: str) -> None:
        if precision != self.precision:
            self.precision = precision
            self.precision_changed.emit(precision)
