"""A step annotation, a DataLoader span and a blocking host call are one concept each with one
definition (``categories.STEP_NAME_RE``, ``DATALOADER_NAME_RE``, ``HOST_SYNC_CALL_RE``): the builder's steps,
the op table, the analysis and the critical path all read a name the same way."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.model.name_masks import pattern_mask, step_name_mask
from gpuperf_gui.core.trace.model.trace_model import StringTable
from gpuperf_gui.core.trace.vocabulary.categories import DATALOADER_NAME_RE

DATA = Path(__file__).resolve().parents[1] / "data"
CORE_TRACE = Path(__file__).resolve().parents[2] / "gpuperf_gui" / "core" / "trace"


def test_what_is_a_step_name() -> None:
    names = ["ProfilerStep#12", " ProfilerStep # 7 ", "ProfilerStep#0003", "ProfilerStep*", "ProfilerStep#",
             "ProfilerStep#1 forward", "MyProfilerStep#1", "ProfilerStep#x", "ProfilerStep#12345678901234567890"]
    mask = step_name_mask(StringTable(names))
    # by hand: a name is a step when it is "ProfilerStep#<digits>", spaces allowed around the parts
    assert np.flatnonzero(mask).tolist() == [0, 1, 2, 8]


def test_spaced_step_names_diagnose_as_the_plain_ones(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """torch writes "ProfilerStep#N"; a hand-made or re-exported trace may write "ProfilerStep # N".
    Every layer must then find the same steps: the JSON is the same but for the names themselves."""
    source = DATA / "h200" / "eager_small.json.gz"
    text = gzip.decompress(source.read_bytes()).decode()
    assert text.count('"ProfilerStep#') >= 4
    spaced = tmp_path / "spaced.json"
    spaced.write_text(re.sub(r'"ProfilerStep#(\d+)"', r'"ProfilerStep # \1"', text))
    outputs = []
    for path in (source, spaced):
        assert main(["diagnose", "--json", str(path)]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    plain, other = outputs
    for doc in (plain, other):
        for rank in doc["ranks"]:
            rank.pop("file")
    assert json.dumps(other, sort_keys=True).replace("ProfilerStep # ", "ProfilerStep#") == \
        json.dumps(plain, sort_keys=True)
    assert plain["ranks"][0]["steps"] and plain["what_if"]


def _modules_compiling(word: str) -> list[str]:
    return sorted(p.relative_to(CORE_TRACE).as_posix() for p in CORE_TRACE.rglob("*.py")
                  if re.search(r"re\.compile\([^)]*" + word, p.read_text(), re.IGNORECASE))


def test_no_module_keeps_its_own_step_or_dataloader_pattern() -> None:
    # the definitions, and the synthetic writer that renumbers the steps it wrote itself
    assert _modules_compiling("ProfilerStep") == ["synthetic/tile.py", "vocabulary/categories.py"]
    assert _modules_compiling("dataloader") == ["vocabulary/categories.py"]


def test_what_is_a_dataloader_span() -> None:
    names = ["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "_next_data",
             "torch/utils/data/dataloader.py(631): __next__", "my_dataloader.fetch", "aten::mm", "loader"]
    mask = pattern_mask(StringTable(names), DATALOADER_NAME_RE)
    assert np.flatnonzero(mask).tolist() == [0, 1, 2, 3]


# The CUDA Runtime API's "API synchronization behavior": these return only when the device is done;
# cudaStreamWaitEvent makes a stream wait and returns to the host at once; a launch never waits.
_HOST_WAITS = ["cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "hipDeviceSynchronize",
               "hipCtxSynchronize", "cudaMemcpy", "cudaMemcpy2D", "hipMemcpyWithStream"]
_HOST_GOES_ON = ["cudaStreamWaitEvent", "hipStreamWaitEvent", "cudaLaunchKernel", "cudaEventRecord",
                 "cudaEventQuery", "cudaMemsetAsync"]


def test_every_reader_of_a_blocking_host_call_agrees_with_the_runtime_documentation() -> None:
    from gpuperf_gui.core.trace.analysis import critical_path, rank_analysis
    from gpuperf_gui.core.trace.model import host_sync
    readers = {"host-sync stalls": host_sync.SYNC_CALL_RE, "idle split": rank_analysis._BLOCKING_CALL_RE,
               "critical path": critical_path._BLOCKING_RE}
    for reader, pattern in readers.items():
        assert [n for n in _HOST_WAITS if not pattern.search(n)] == [], reader
        assert [n for n in _HOST_GOES_ON if pattern.search(n)] == [], reader


def test_a_synchronous_rocm_copy_is_a_sync_in_the_analysis_and_on_the_critical_path(capsys) -> None:  # noqa: ANN001
    """ROCm torch makes its blocking copies with hipMemcpyWithStream; the file shows each call
    returning after its copy (same correlation id) ended: the host waited. Counted by hand from the JSON."""
    path = DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    copies = {e["args"]["correlation"]: e for e in events if e.get("cat") == "gpu_memcpy"}
    calls = [e for e in events if e.get("name") == "hipMemcpyWithStream"]
    waited = [c for c in calls if (k := copies.get(c["args"]["correlation"]))
              and k["ts"] + k["dur"] <= c["ts"] + c["dur"]]
    assert len(waited) == len(calls) == 2
    assert main(["diagnose", "--json", str(path)]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["ranks"][0]["idle_causes"]["syncs"] == 2
    assert obj["critical_path"]["share"]["sync"] > 0
