"""Entry script for the PyInstaller build of the gpuperf CLI."""
import sys

from gpuperf_gui.cli import main

sys.exit(main())
