"""Benchmark runner: plans and the measuring loop (torch imported lazily; no Qt)."""
