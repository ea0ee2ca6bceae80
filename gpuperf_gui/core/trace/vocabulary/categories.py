"""The event categories the profilers write (Kineto's ``cat``; the older profiler's in capitals), and
what each one is to the engine: the names every layer above shares, so no reader of the model needs
the module that builds it."""
from __future__ import annotations

GPU_ACTIVITY_CATEGORIES = frozenset({"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
"""Device work: kernels, copies, memsets."""
COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
"""Device copies and memsets (the kernel class ``copy``)."""
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
"""Host calls into the CUDA runtime or driver (launches, syncs, allocations)."""
SKIPPED_CATEGORIES = frozenset({"Trace"})
"""The profiler's own span over the whole trace: not an event of the program."""
