"""The device catalog: datasheet devices and measured ceilings in one place, with one change callback.

The database (:func:`gpuperf_gui.core.hardware.load_database`) holds what the files say: the
shipped datasheets and the user's devices.toml. Measured ceilings come in two ways, both explicit:
:meth:`DeviceCatalog.read_saved_measurements` (what ``gpuperf bench`` saved on this machine) and
:meth:`DeviceCatalog.add_measured` (a run that just finished). Either way:

- a device known only by measurement (the ``cpu``, a GPU missing from the database) takes the
  measured ceilings as its roofline and MFU denominator (:meth:`device`);
- a GPU with datasheet peaks keeps them as the denominator; its measured ceilings are kept beside
  them (:meth:`measured_device`), for the roofline to draw both;
- every measured device says how it was measured (threads, method: ``Device.measured_with``).

After each change the one callback (``on_change(device_id, added)``) is called, once, after the
catalog is complete, so whoever listens sees the new state whatever the order of listeners.
No Qt here: the window's context turns the callback into a signal.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from gpuperf_gui.core.bench.ceilings import (
    MeasuredCeilings,
    list_saved_ceilings,
    preferred_entry,
)
from gpuperf_gui.core.hardware import Device, DeviceDatabase, load_database

#: Called after a change: the device id, and True when the device is new to the catalog.
ChangeCallback = Callable[[str, bool], None]


class DeviceCatalog:
    """Datasheet devices plus measured ceilings; ``on_change`` is told about every change."""

    def __init__(self, database: DeviceDatabase | None = None,
                 on_change: ChangeCallback | None = None) -> None:
        self.database = database if database is not None else load_database()
        self.on_change = on_change
        self._datasheet: dict[str, Device] = {d.id: d for d in self.database.devices()}
        self._measured: dict[str, MeasuredCeilings] = {}

    @classmethod
    def load(cls, user_file: Path | None = None, *, saved_measurements: bool = False,
             results_dir: Path | None = None) -> DeviceCatalog:
        """The shipped database and the user file; with ``saved_measurements`` also the ceilings
        ``gpuperf bench`` saved (under ``results_dir``, default the user's data folder)."""
        catalog = cls(load_database(user_file))
        if saved_measurements:
            catalog.read_saved_measurements(results_dir)
        return catalog

    # reading ------------------------------------------------------------------------------
    @property
    def errors(self) -> list[str]:
        """Problems met while reading the user's devices file."""
        return self.database.errors

    def __contains__(self, device_id: object) -> bool:
        return device_id in self.database

    def ids(self) -> list[str]:
        return self.database.ids()

    def devices(self) -> list[Device]:
        return self.database.devices()

    def device(self, device_id: str) -> Device:
        """The device as the roofline and MFU use it: datasheet peaks where the datasheet has them,
        else (the ``cpu``) the measured ceilings. Raises ``UnknownDeviceError``."""
        return self.database.get(device_id)

    def measured(self, device_id: str) -> MeasuredCeilings | None:
        """The measured ceilings of a device (with their ``threads`` and ``method``), or None."""
        return self._measured.get(device_id)

    def measured_device(self, device_id: str) -> Device | None:
        """The device with its measured ceilings as its roofline, or None when not measured."""
        ceilings = self._measured.get(device_id)
        if ceilings is None:
            return None
        base = DeviceDatabase({device_id: self._datasheet_entry(device_id, ceilings)})
        return ceilings.to_device(base)

    # changing -----------------------------------------------------------------------------
    def read_saved_measurements(self, results_dir: Path | None = None) -> list[str]:
        """Take every device's saved ceilings (a bad file is set aside and reported by the
        reader); returns the device ids taken."""
        taken = []
        for ceilings in list_saved_ceilings(results_dir):
            self.add_measured(ceilings)
            taken.append(ceilings.device_id)
        return taken

    def add_measured(self, ceilings: MeasuredCeilings) -> Device:
        """Take a device's measured ceilings, update the device, then call ``on_change`` once.

        Measured the same way (threads, method) as the ones it had, they replace them (the caller
        passes the best so far, :func:`~gpuperf_gui.core.bench.ceilings.merge_ceilings`); measured
        another way, the better entry stays (:func:`~gpuperf_gui.core.bench.ceilings.preferred_entry`).
        Returns the device as :meth:`device` will give it."""
        device_id = ceilings.device_id
        added = device_id not in self.database
        current = self._measured.get(device_id)
        if current is not None and current.key != ceilings.key:  # measured another way: the better
            ceilings = preferred_entry([ceilings, current])       # of the two, whole (never mixed)
        self._measured[device_id] = ceilings
        datasheet = self._datasheet_entry(device_id, ceilings)
        if added:
            self._datasheet[device_id] = datasheet
        if not (datasheet.dense_flops_per_s and datasheet.origin != "measured"):
            # known only by measurement: the measured ceilings are its roofline and MFU peak
            self.database.put(self.measured_device(device_id) or datasheet)
        elif added:
            self.database.put(datasheet)
        if self.on_change is not None:
            self.on_change(device_id, added)
        return self.database.get(device_id)

    def _datasheet_entry(self, device_id: str, ceilings: MeasuredCeilings) -> Device:
        """The device before any measurement (a new, empty one for a device not in the database)."""
        if device_id in self._datasheet:
            return self._datasheet[device_id]
        return Device(device_id, ceilings.device_name or device_id, "", origin="unknown")

