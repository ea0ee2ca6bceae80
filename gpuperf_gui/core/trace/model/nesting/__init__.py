"""The events' nesting in one pass per lane (_nest.c, built by setup.py as the optional extension _nest) and its
Python face (nest)."""
