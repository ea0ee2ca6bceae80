"""State shared by all tabs: the device catalog and the device/precision picked in the toolbar."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from gpuperf_gui.core.bench.ceilings import MeasuredCeilings
from gpuperf_gui.core.catalog import DeviceCatalog
from gpuperf_gui.core.hardware import Device, DeviceDatabase


class AppContext(QObject):
    """The shared device picker's state and the one device catalog. Tabs read it and listen to
    its signals; measured ceilings enter only through :meth:`add_measured_ceilings`."""

    device_changed = Signal(str)
    precision_changed = Signal(str)
    ceilings_changed = Signal(str, bool)   # device id, True when the device is new to the catalog

    def __init__(self, database: DeviceDatabase | None = None, device_id: str = "h100-sxm",
                 precision: str = "bf16", parent: QObject | None = None, *,
                 catalog: DeviceCatalog | None = None) -> None:
        """Without ``catalog`` or ``database``: the shipped and user devices plus the ceilings
        saved on this machine (read here, once). With a ``database``: that, and no saved ones."""
        super().__init__(parent)
        if catalog is None:
            catalog = (DeviceCatalog(database) if database is not None
                       else DeviceCatalog.load(saved_measurements=True))
        self.catalog = catalog
        catalog.on_change = self._on_catalog_changed
        self.device_id = device_id if device_id in self.database else self.database.ids()[0]
        self.precision = precision

    @property
    def database(self) -> DeviceDatabase:
        return self.catalog.database

    @property
    def device(self) -> Device:
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

    def add_measured_ceilings(self, ceilings: MeasuredCeilings) -> None:
        """The one way measured ceilings reach the tabs (the catalog calls back when done)."""
        self.catalog.add_measured(ceilings)

    def _on_catalog_changed(self, device_id: str, added: bool) -> None:
        self.ceilings_changed.emit(device_id, added)
        if device_id == self.device_id and self.device.origin == "measured":
            self.device_changed.emit(device_id)  # its peaks are the measured ones: tabs re-read them
