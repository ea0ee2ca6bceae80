"""Entry script for the PyInstaller build of gpuperf-gui.

The same executable also serves as the helper interpreter of gpuperf_gui.core.child_stream (trace
loading and benchmarks run there; a frozen app has no `python -c`): multiprocessing's spawn start
method runs it with its own arguments, and freeze_support() turns that run into the helper.
"""
import multiprocessing
import sys

multiprocessing.freeze_support()

from gpuperf_gui.__main__ import main  # noqa: E402

sys.exit(main())
