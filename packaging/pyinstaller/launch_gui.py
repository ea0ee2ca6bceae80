"""Entry script for the PyInstaller build of gpuperf-gui."""
import sys

from gpuperf_gui.__main__ import main

sys.exit(main())
