"""Imported by a helper started ahead (tests/core/test_child_stream.py): its presence says so."""
