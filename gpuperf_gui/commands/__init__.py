"""Subcommands of the `gpuperf` CLI, one module each."""
