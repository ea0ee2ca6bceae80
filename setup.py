"""The C scanner of trace events (gpuperf_gui/core/trace/_scan.c). Optional: without a compiler the
package installs without it and decodes with msgspec alone (slower on big traces)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("gpuperf_gui.core.trace._scan", ["gpuperf_gui/core/trace/_scan.c"],
                             extra_compile_args=["-O2"], optional=True)])
