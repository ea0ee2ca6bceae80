"""Synthetic traces, one per signature, a DDP job over NCCL, large jobs tiled from small ones (demos, tests,
benchmarks); they import nothing of the engine."""
