"""Entry script for the PyInstaller build of gpuperf-gui.

The same executable also serves as the helper interpreter of gpuperf_gui.core.child_stream (trace
loading and benchmarks run there), since a frozen app has no `python -c`.
"""
import sys

if len(sys.argv) > 1 and sys.argv[1] == "--gpuperf-child":
    from gpuperf_gui.core.child_stream import child_main

    child_main()
    sys.exit(0)

from gpuperf_gui.__main__ import main  # noqa: E402

sys.exit(main())
