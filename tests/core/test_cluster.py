"""The distributed engine (core/trace/engine/cluster.py): the same ``--json`` and verdict as the local run on
tiled folders, compact per-rank results, clear errors without Dask or a scheduler."""
from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

from gpuperf_gui.cli import main
from gpuperf_gui.core.trace.synthetic import synth
from gpuperf_gui.core.trace.session.trace import Trace
from gpuperf_gui.core.trace.engine.cluster import RankSummary, dask_client, parse_address, summarize_rank
from gpuperf_gui.core.trace.synthetic.tile import repeat_events, tile_rank_folder
from gpuperf_gui.core.trace.ingest.load import MANY_RANKS
from gpuperf_gui.core.trace.model.trace_model import ClusterError

pytest.importorskip("distributed")

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = DATA / "h200"


def _json(capsys: pytest.CaptureFixture, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("jobs")
    gloo = H200 / "gloo_cpu_allreduce"
    return {
        # 64 ranks, CPU-side collectives (gloo): the straggler rule reads host spans; ranks 7 µs apart
        "gloo": tile_rank_folder([gloo / "rank0.json.gz", gloo / "rank1.json.gz"], root / "gloo", 64, shift_us=7),
        # two different real traces, clocks 1 ms apart
        "mixed": tile_rank_folder([H200 / "eager_tiny.json.gz", H200 / "attention.json.gz"], root / "mixed", 8,
                                  shift_us=1001),
        # the generator's known late rank (synth.STRAGGLER_RANK) among 8 DDP ranks
        "straggler": synth.write_synth_trace("straggler", root / "straggler", world_size=8, steps=6),
    }


@pytest.fixture(scope="module")
def scheduler() -> str:
    """One LocalCluster (2 worker processes) for the module, reached by its tcp address."""
    import distributed
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=40) as cluster:
        yield cluster.scheduler_address


def _no_what_if(local: dict) -> dict:
    """The local engine's JSON less the what-if: it walks every rank's events together (collectives
    across ranks), and the Dask engine brings back compact per-rank results, so it has none
    (docs/what-if.md)."""
    out = dict(local)
    if len(out["ranks"]) > MANY_RANKS:   # more ranks than that: compact results on the local pool too
        assert "what_if" not in out
        return out
    assert "what_if" in out and "critical_path" in out
    del out["what_if"], out["critical_path"]
    return out


def _no_what_if_text(report: str) -> str:
    """The local report less its what-if block (from "Try first:" to "Critical path:")."""
    lines = report.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Try first:"))
    last = next(i for i, line in enumerate(lines) if line.startswith("Critical path:"))
    return "".join(lines[:first] + lines[last + 1:])


@pytest.mark.parametrize("job", ["gloo", "mixed", "straggler"])
def test_cluster_json_equals_local(jobs: dict[str, Path], scheduler: str, capsys: pytest.CaptureFixture,
                                   job: str) -> None:
    local = _json(capsys, ["diagnose", str(jobs[job]), "--json", "--top", "5", "--workers", "1"])
    remote = _json(capsys, ["diagnose", str(jobs[job]), "--json", "--top", "5", "--dask-scheduler", scheduler])
    assert remote == _no_what_if(local)
    n_files = len(list(jobs[job].iterdir()))
    assert [r["rank"] for r in remote["ranks"]] == list(range(n_files))
    if job == "straggler":
        assert remote["diagnosis"]["signature"] == "straggler"
        assert remote["multi_rank"]["stragglers"] == [synth.STRAGGLER_RANK]


def test_rank_without_step_collectives_is_left_out_as_locally(scheduler: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """A rank whose collective kernels all run before its first step: matched by the steps that
    launched them (not by where their kernels fall), both engines still compare it alike and find
    the late rank among the others."""
    job = tmp_path / "job"
    job.mkdir()
    for rank in range(4):
        trace = synth.synth_trace("straggler", rank=rank, world_size=4, steps=5)
        if rank == 3:
            for ev in trace["traceEvents"]:
                if ev.get("cat") == "kernel" and ev["name"].startswith("ncclDevKernel"):
                    ev["ts"] = 1.0  # before ProfilerStep#0 starts
        (job / f"rank{rank}.json").write_text(json.dumps(trace))
    local = _json(capsys, ["diagnose", str(job), "--json", "--workers", "1"])
    remote = _json(capsys, ["diagnose", str(job), "--json", "--dask-scheduler", scheduler])
    assert remote == _no_what_if(local)
    assert local["multi_rank"]["stragglers"] == [synth.STRAGGLER_RANK]


def test_cli_local_cluster_report_and_verdict(jobs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    """``--dask-scheduler local:2`` (an embedded LocalCluster) prints the local run's report."""
    assert main(["diagnose", str(jobs["straggler"]), "--top", "3"]) == 0
    local = capsys.readouterr().out
    assert main(["diagnose", str(jobs["straggler"]), "--top", "3", "--dask-scheduler", "local:2"]) == 0
    assert capsys.readouterr().out == _no_what_if_text(local)
    assert f"Late rank: {synth.STRAGGLER_RANK}" in local


def test_broken_rank_is_a_note_on_the_cluster_too(jobs: dict[str, Path], scheduler: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    job = tile_rank_folder([H200 / "attention.json.gz"], tmp_path / "job", 3)
    (job / "rank00001.json.gz").write_bytes(b"\x1f\x8b not a gzip stream")
    local = _json(capsys, ["diagnose", str(job), "--json", "--workers", "1"])
    remote = _json(capsys, ["diagnose", str(job), "--json", "--dask-scheduler", scheduler])
    assert remote == _no_what_if(local)
    assert len(remote["ranks"]) == 2 and "rank00001.json.gz" in remote["load_notes"][0]


def test_summary_size_does_not_grow_with_events(tmp_path: Path) -> None:
    """What comes back per rank stays compact: 8x the events (and steps), a few hundred bytes more
    per step (the per-step figures) and nothing per event."""
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    n_small = repeat_events(H200 / "eager_tiny.json.gz", small, 20_000)
    n_big = repeat_events(H200 / "eager_tiny.json.gz", big, 160_000)
    assert n_big >= 7 * n_small
    sizes, steps = [], []
    for path in (small, big):
        s = summarize_rank(str(path), 0, top=10, overview=True)
        assert isinstance(s, RankSummary)
        sizes.append(len(pickle.dumps(s)))
        steps.append(len(s.analysis.steps))
    assert steps[1] > steps[0]
    assert sizes[1] - sizes[0] < 400 * (steps[1] - steps[0])
    assert sizes[1] < 0.002 * big.stat().st_size


def test_cluster_overview_matches_local(jobs: dict[str, Path], scheduler: str) -> None:
    from gpuperf_gui.core.trace.analysis.overview import build_overview
    from gpuperf_gui.core.trace.session.trace import Trace
    remote = Trace([jobs["straggler"]], dask_scheduler=scheduler, overview=True).result().overview()
    local = build_overview(Trace([jobs["straggler"]], workers=1).result())
    for metric in ("busy", "exposed comm", "idle", "step time"):
        r_ranks, r_steps, r_values = remote.rank_step_matrix(metric)
        l_ranks, l_steps, l_values = local.rank_step_matrix(metric)
        assert (r_ranks, r_steps) == (l_ranks, l_steps)
        assert r_values.tolist() == l_values.tolist()
    assert r_ranks[0] == synth.STRAGGLER_RANK  # late ranks first


@pytest.mark.parametrize("address,expected", [("local", ("local", None)), ("local:3", ("local", 3)),
                                              ("tcp://node1:8786", ("remote", None))])
def test_parse_address(address: str, expected: tuple) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["local:0", "node1:8786", "http://x:1", ""])
def test_bad_address_exits_2(address: str, jobs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    assert main(["diagnose", str(jobs["mixed"]), "--dask-scheduler", address or " "]) == 2
    err = capsys.readouterr().err
    assert "--dask-scheduler" in err and "Traceback" not in err


def test_unreachable_scheduler_is_a_cluster_error() -> None:
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler"):
        with dask_client("tcp://127.0.0.1:1", timeout_s=1.0):
            pass


def test_without_dask_the_cli_says_how_to_install(jobs: dict[str, Path], capsys: pytest.CaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    assert main(["diagnose", str(jobs["mixed"]), "--dask-scheduler", "local:2"]) == 2
    assert "gpuperf-gui[cluster]" in capsys.readouterr().err


def test_relative_paths_print_as_given_on_both_engines(scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """One form of ``file``: the path as given (here relative), on the local pool, on Dask (whose
    workers read the absolute path) and in the full load, byte for byte; a broken rank's note too."""
    job = tile_rank_folder([H200 / "attention.json.gz"], tmp_path / "job", 4)
    (job / "rank00002.json.gz").write_bytes(b"\x1f\x8b not a gzip stream")
    monkeypatch.chdir(tmp_path)
    full = json.dumps(Trace([Path("job")], workers=1).result().to_json(top=10), indent=2) + "\n"
    assert main(["diagnose", "job", "--json", "--workers", "1"]) == 0
    local = capsys.readouterr().out
    assert main(["diagnose", "job", "--json", "--dask-scheduler", scheduler]) == 0
    remote = capsys.readouterr().out
    assert local == full and json.loads(remote) == _no_what_if(json.loads(local))
    files = [r["file"] for r in json.loads(remote)["ranks"]]
    assert files == ["job/rank00000.json.gz", "job/rank00001.json.gz", "job/rank00003.json.gz"]
    assert str(tmp_path) not in remote and "rank00002.json.gz" in json.loads(remote)["load_notes"][0]


def test_stop_cancels_and_returns_without_a_result(jobs: dict[str, Path], scheduler: str) -> None:
    """Set while the tasks run: the generator cancels what is pending and ends with no result."""
    import threading

    from gpuperf_gui.core.trace.engine.api import Progress
    from gpuperf_gui.core.trace.engine.cluster import ClusterResult
    from gpuperf_gui.core.trace.session.trace import Trace
    stop = threading.Event()
    items = []
    for item in Trace([jobs["gloo"]], dask_scheduler=scheduler).iter_result(stop):
        items.append(item)
        if isinstance(item, Progress) and item.message.startswith("analysing"):
            stop.set()
    assert items and not any(isinstance(i, ClusterResult) for i in items)
    assert not any(isinstance(i, Progress) and i.message.startswith("analysed") for i in items)


def test_worker_encoded_ranks_print_the_client_encoded_bytes(jobs: dict[str, Path], tmp_path: Path) -> None:
    """A Dask task encodes its ranks' JSON (``encode_json``), leaving a hole for the diagnosis the
    job's verdict may change (the late rank's); a renumbered rank (two files of one rank) is encoded
    by the client. Either way the text is json.dumps of the plain object."""
    from gpuperf_gui.core.json_text import EncodedJSON, iter_json_text
    from gpuperf_gui.core.trace.engine.cluster import assemble, summarize_ranks
    from gpuperf_gui.core.trace.diagnosis.diagnose import diagnose_rank
    from gpuperf_gui.core.trace.ingest.load import discover_files

    files = [str(f) for f in discover_files([jobs["straggler"]])]
    files.append(str(tmp_path / "copy_of_rank0.json"))
    Path(files[-1]).write_bytes(Path(files[0]).read_bytes())  # same rank number: renumbered
    result = assemble(summarize_ranks(files, list(range(len(files))), files, top=10, encode_json=True))
    late = [r for r in result.ranks if r.diagnosis.signature != diagnose_rank(r.analysis).signature]
    assert [r.rank for r in late] == [synth.STRAGGLER_RANK]   # the hole is filled with the job's verdict
    encoded = result.to_json(10, encoded=True)
    kinds = [isinstance(r, EncodedJSON) for r in encoded["ranks"]]
    assert kinds == [True] * (len(files) - 1) + [False]      # the renumbered copy: encoded by the client
    assert "".join(iter_json_text(encoded)) == json.dumps(result.to_json(10), indent=2, allow_nan=False)
    assert not any(isinstance(r, EncodedJSON) for r in result.to_json(5, encoded=True)["ranks"])  # other rows
