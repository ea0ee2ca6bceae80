"""PyInstaller hook: ship the runtime data (device database, icons, demo traces) and the
distribution metadata (the About box and importlib.metadata read it).

`gpuperf_gui.resources` is the top-level `resources/` folder mapped into the package by the build
(and by an editable install's finder, which PyInstaller cannot see), so it is located through
importlib.resources and copied whole, `__init__.py` included: at run time the frozen package's
`__path__` finds it on disk.
"""
from importlib import resources

from PyInstaller.utils.hooks import collect_submodules, copy_metadata

resources_dir = resources.files("gpuperf_gui.resources")
datas = [(str(resources_dir), "gpuperf_gui/resources")]
datas += copy_metadata("gpuperf-gui")
hiddenimports = collect_submodules("gpuperf_gui")
