"""Loader: every dialect in tests/data/shared_traces, ranks, gzip by magic, truncation, limits, errors."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpuperf_gui.core.trace.ingest.budget import MemoryBudget
from gpuperf_gui.core.trace.ingest import source, stream_decode
from gpuperf_gui.core.trace.ingest.load import load_rank, plan_workers
from gpuperf_gui.core.trace.ingest.source import EventCounter
from gpuperf_gui.core.trace.model.trace_model import TraceFormatError
from gpuperf_gui.core.trace.session.trace import Trace

from trace_support import loaded, sources_table

DATA = Path(__file__).resolve().parents[1] / "data"


def test_every_shared_trace_loads_with_the_event_count_of_sources_md(shared_traces: Path) -> None:
    table = sources_table(shared_traces)
    assert len(table) == 35
    for rel, row in table.items():
        rt, _ = loaded(shared_traces / rel)
        assert rt.n_events == row["events"], rel  # every event decoded, none skipped
        if row["rank"] is not None:
            assert rt.rank == row["rank"] and rt.rank_source == "distributedInfo", rel


def test_dialects_are_recognised(shared_traces: Path) -> None:
    old, _ = loaded(shared_traces / "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    assert old.dialect == "kineto-2021"
    assert [lane.label for lane in old.gpu_lanes] == ["GPU 0 stream 7"]  # tid "stream 7"
    assert len(old.steps) == 6  # SOURCES.md: 6 steps
    assert len(old.flows) == 9096  # every Kernel/Memcpy/Memset has its Runtime call
    new, _ = loaded(shared_traces / "tracelens/b200/eager_trace.json.gz")
    assert new.dialect == "kineto-ns" and new.device_name == "NVIDIA B200"
    assert new.steps == []  # no ProfilerStep: analysis falls back to the device-work window
    v100, _ = loaded(shared_traces / "hta/df_index_resolver/df_index_resolver.json.gz")
    kinds = {lane.stream: lane.kind for lane in v100.gpu_lanes}
    assert kinds == {7: "gpu_compute", 14: "gpu_comm"}  # SOURCES.md: NCCL on stream 14
    nccl = sum(int(np.sum(lane.kernel_class == 3)) for lane in v100.gpu_lanes)
    assert nccl == 2020  # SOURCES.md: 2020 NCCL AllReduce kernels


def test_rank_from_distributed_info_file_name_or_order(tmp_path: Path) -> None:
    assert load_rank(DATA / "backward_thread.json").rank == 0
    big_int = load_rank(DATA / "rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz")
    assert (big_int.rank, big_int.rank_source) == (70, "filename")
    assert big_int.n_events == 2  # Comms Id beyond int64 does not break decoding
    amd = load_rank(DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz", order_index=3)
    assert (amd.rank, amd.rank_source) == (3, "order")
    assert amd.n_events == 220 and amd.warnings == []  # string "0x0" streams are part of the dialect


def test_gzip_is_detected_by_magic_bytes_not_suffix(tmp_path: Path) -> None:
    raw = gzip.decompress((DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes())
    plain = tmp_path / "trace.json.gz"  # misnamed: plain JSON
    plain.write_bytes(raw)
    packed = tmp_path / "trace.json"  # misnamed: gzip
    packed.write_bytes(gzip.compress(raw))
    assert load_rank(plain).n_events == load_rank(packed).n_events == 220


def test_truncated_file_keeps_complete_events_and_says_how_much_was_cut(tmp_path: Path) -> None:
    raw = gzip.decompress((DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes())
    cut = tmp_path / "rank0.json.tmp"
    cut.write_bytes(raw[: len(raw) * 2 // 3])
    rt = load_rank(cut)
    assert rt.truncation is not None
    assert 0 < rt.truncation.events_kept < 220
    assert rt.truncation.bytes_cut == len(raw) * 2 // 3 - rt.truncation.bytes_used
    full = json.loads(raw)["traceEvents"]
    assert rt.n_events == rt.truncation.events_kept
    assert rt.n_events <= len(full)
    gz_cut = tmp_path / "cut.json.gz"
    gz_cut.write_bytes((DATA / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes()[:4000])
    assert load_rank(gz_cut).truncation is not None


@pytest.mark.parametrize("content, reason", [
    (b"", "empty"),
    (b"hello world", "not JSON"),
    (b'{"traceEvents": 5}', "traceEvents"),
    (b'[1, 2, 3', "not valid JSON"),
    (b"\x1f\x8b\x08\x00garbage", "gzip"),
])
def test_garbage_raises_one_trace_format_error_naming_the_file(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as info:
        load_rank(path)
    assert str(path) in str(info.value) and reason in str(info.value)


def test_size_limit_and_gzip_bomb_are_refused_before_reading(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (50 << 20)))  # 50 MB of spaces in ~50 kB
    with pytest.raises(TraceFormatError, match="gzip bomb"):
        load_rank(bomb, max_bytes=1 << 20)
    with pytest.raises(TraceFormatError, match="limit"):
        load_rank(DATA / "backward_thread.json", max_bytes=100)


def test_begin_end_pairs_and_metadata_names(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "B", "name": "outer", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 10},
        {"ph": "B", "name": "inner", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": 12},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 15},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 20},
        {"ph": "q", "name": "unknown phase is kept out, not fatal", "pid": 1, "tid": 2, "ts": 1},
    ]
    path = tmp_path / "be.json"
    path.write_text(json.dumps(events))  # JSON array form
    rt = load_rank(path)
    (lane,) = rt.cpu_lanes
    assert lane.label == "main"
    assert [rt.strings[i] for i in lane.name_id] == ["outer", "inner"]
    assert lane.duration_us.tolist() == [10.0, 3.0] and lane.depth.tolist() == [0, 1]


def test_folder_of_ranks_is_aligned_on_one_clock(shared_traces: Path) -> None:
    model = Trace([shared_traces / "hta/trace_filter"], workers=1).model()
    assert [r.rank for r in model.ranks] == [0, 1]
    assert len({r.origin_us for r in model.ranks}) == 1
    assert min(r.span_us[0] for r in model.ranks) == 0.0


def test_event_counter_counts_keys_split_across_chunks() -> None:
    text = b'[{"ph":"X","args":{}},{"ph":"B"},{"ph":"E"}]'  # 3 events, by hand
    for cut in range(len(text) + 1):
        counter = EventCounter()
        counter.feed(text[:cut])
        counter.feed(text[cut:])
        assert (counter.ph_keys, counter.events) == (3, 3), cut
    escaped = EventCounter()  # a "ph" key spelled with an escape still counts through its braces
    escaped.feed(b'[{"\\u0070h":"X"},{"\\u0070h":"X"},{"\\u0070h":"X"},{"\\u0070h":"X"}]')
    assert escaped.events == 2


def test_plan_workers_loads_large_ranks_one_at_a_time(tmp_path: Path) -> None:
    small = [tmp_path / f"s{i}.json" for i in range(4)]
    for f in small:
        f.write_bytes(b"{}" * 1000)
    assert plan_workers(small, MemoryBudget(2_000_000_000), 4) == (4, MemoryBudget(500_000_000))
    big = tmp_path / "big.json.gz"  # a gzip member records its uncompressed size: 1.5 GB here
    big.write_bytes(gzip.compress(b"{}")[:-4] + (1_500_000_000).to_bytes(4, "little"))
    n, share = plan_workers(small + [big], MemoryBudget(2_000_000_000), 4)
    assert n == 1 and share.limit_bytes == 2_000_000_000  # ~6M events of 250 B need ~1.5 GB streamed
    fifo = tmp_path / "pipe.json"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
        assert plan_workers([fifo], MemoryBudget(), None)[0] == 1  # never opened here


# Peak RSS over the imports, from /proc: ru_maxrss would carry the parent's peak (Linux keeps it
# across fork and exec), so the high-water mark is reset (clear_refs 5) after the imports.
_PEAK = ("import sys\nfrom gpuperf_gui.core.trace.engine.api import _analyse_one\n"
         "def kb(key):\n"
         "    return int(next(l for l in open('/proc/self/status') if l.startswith(key)).split()[1])\n"
         "open('/proc/self/clear_refs', 'w').write('5')\n"
         "base = kb('VmRSS:')\n"
         "_analyse_one(sys.argv[1], max_bytes=None, order_index=0)\n"
         "print((kb('VmHWM:') - base) * 1024)\n")


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/clear_refs is Linux's")
@pytest.mark.parametrize("name", ["tiny", "df_index_resolver", "launch_bound_tiny"])
def test_the_budget_cost_model_bounds_the_measured_peak(tmp_path: Path, shared_traces: Path, name: str) -> None:
    """Peak memory of load + analysis + op table (fresh process, over its imports) stays under
    what the budget is checked against on the streamed path (the columns, a run of text and of
    structs in flight), with a fixed 8 MB for lazily imported modules."""
    if name == "tiny":  # 400k events of ~70 bytes: the most events per byte
        path = tmp_path / "tiny.json"
        event = b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":%d,"dur":1},'
        path.write_bytes(b'{"traceEvents":[' + b"".join(event % i for i in range(400_000)) + b'{"ph":"M"}]}')
    else:
        path = next(shared_traces.rglob(f"{name}.json.gz"))
    raw = path.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    counter = EventCounter()
    counter.feed(text)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, env=env,
                         check=True)
    peak = int(out.stdout.split()[-1])
    in_flight = stream_decode.MIN_DECODE_BYTES + source.OUT_CHUNK_BYTES
    structs = stream_decode.STRUCT_BUDGET_BYTES // stream_decode.STRUCT_COST_BYTES
    bound = stream_decode.streamed_load_bytes(counter.events, in_flight, structs)
    assert peak < bound + 8_000_000, (peak, bound, len(text), counter.events)
    print(name, peak, counter.events, peak / counter.events, "bytes per event")
