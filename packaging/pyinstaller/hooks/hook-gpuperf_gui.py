"""PyInstaller hook: ship the runtime data (device database, icons, demo traces) and the
distribution metadata (the About box and importlib.metadata read it)."""
from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

datas = collect_data_files("gpuperf_gui", include_py_files=False)
datas += collect_data_files("gpuperf_gui.resources", include_py_files=False)
datas += copy_metadata("gpuperf-gui")
hiddenimports = collect_submodules("gpuperf_gui")
