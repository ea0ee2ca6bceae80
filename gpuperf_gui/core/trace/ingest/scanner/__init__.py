"""The C scanner (_scan.c, built by setup.py as the optional extension _scan) and its Python face (scan)."""
