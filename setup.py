"""The C scanner of trace events (gpuperf_gui/core/trace/ingest/scanner/_scan.c), the op table's one-pass nesting
(_nest.c) and the what-if's replay loop (core/trace/analysis/_replay.c). Optional: without a compiler the package
installs without them and decodes with msgspec alone, nests and replays with numpy (slower, the same results)."""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """gcc/clang: -O2, and no jump tables (the scanner's key and value dispatch mispredicted them:
    valgrind's branch simulation counted ~5 indirect mispredicts per event); no fused multiply-add
    (the replay repeats numpy's float operations one by one, each rounded on its own)."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O2", "-fno-jump-tables", "-ffp-contract=off"]
        super().build_extensions()


BUFFER_H = "gpuperf_gui/core/trace/_buffer.h"  # shared by _nest.c and _replay.c

setup(ext_modules=[Extension("gpuperf_gui.core.trace.ingest.scanner._scan", ["gpuperf_gui/core/trace/ingest/scanner/_scan.c"], optional=True),
                   Extension("gpuperf_gui.core.trace.model.nesting._nest", ["gpuperf_gui/core/trace/model/nesting/_nest.c"],
                             depends=[BUFFER_H], optional=True),
                   Extension("gpuperf_gui.core.trace.analysis._replay", ["gpuperf_gui/core/trace/analysis/_replay.c"],
                             depends=[BUFFER_H], optional=True)],
      cmdclass={"build_ext": BuildExt})
