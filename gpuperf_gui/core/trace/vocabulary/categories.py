"""The event categories the profilers write (Kineto's ``cat``; the older profiler's in capitals), and
what each one is to the engine, and the names of events every reader must read alike (a step, a
DataLoader span, a launch call, a host-to-device copy): the names every layer above shares, so no
reader of the model needs the module that builds it."""
from __future__ import annotations

import re

GPU_ACTIVITY_CATEGORIES = frozenset({"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
"""Device work: kernels, copies, memsets."""
COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
"""Device copies and memsets (the kernel class ``copy``)."""
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
"""Host calls into the CUDA runtime or driver (launches, syncs, allocations)."""
LAUNCH_NAME_RE = re.compile(r"launch|memcpy|memset", re.IGNORECASE)
"""Of those calls, the ones that start device work: kernel and graph launches (``cudaGraphLaunch``),
copies and memsets."""
HTOD_NAME_RE = re.compile(r"HtoD|Host to Device|H2D", re.IGNORECASE)
"""A host-to-device copy (Kineto's "Memcpy HtoD", the older profiler's "Host to Device")."""
HOST_SYNC_CALL_RE = re.compile(r"^(cuda|hip)(Device|Stream|Event|Ctx)Synchroni[sz]e$|^(cuda|hip)Memcpy(2D|3D)?$"
                               r"|^hipMemcpyWithStream$", re.IGNORECASE)
"""Runtime calls that return only when the device has done the work they wait for: the stream, device,
event and context syncs, and the synchronous copies (CUDA Runtime API, "API synchronization
behavior"; ROCm torch makes its blocking copies with ``hipMemcpyWithStream``, and a trace shows each
call returning after its copy). ``cudaStreamWaitEvent`` is not one: it makes a *stream* wait and
returns to the host at once."""
MEMCPY_ASYNC_RE = re.compile(r"^(cuda|hip)Memcpy(2D|3D)?Async$", re.IGNORECASE)
"""The asynchronous copy calls: they block the host only where the copy touches pageable memory, so a
reader decides per call (the critical path: whether its copy ended before the call returned)."""
SKIPPED_CATEGORIES = frozenset({"Trace"})
"""The profiler's own span over the whole trace: not an event of the program."""
STEP_NAME_RE = re.compile(r"\s*ProfilerStep\s*#\s*(\d+)\s*")
"""A ``torch.profiler`` step annotation ("ProfilerStep#12"): the whole name (``fullmatch``), the step
number its group. The one definition of a step for every layer (:func:`.name_masks.step_name_mask`)."""
DATALOADER_NAME_RE = re.compile(r"dataloader|_next_data", re.IGNORECASE)
"""Host time spent fetching a batch: torch's ``enumerate(DataLoader)#...__next__`` span, its
``_next_data``, Python frames in ``dataloader.py`` and a user's own DataLoader annotations."""
