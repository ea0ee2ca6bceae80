"""Trace engine: load Kineto/Chrome traces into columns, analyse, diagnose (no Qt)."""
