"""One trace, one object: :class:`Trace` answers every question about a job, computed on demand.

The shape of HTA's ``TraceAnalysis(trace_dir)``: build it from paths (a trace file, several, or a
folder of per-rank files), then ask; each answer is computed the first time it is asked and kept.
Every caller (the CLI, the Trace tab's loading helper, the job window) goes through it. The engine
is chosen once, at construction: this process and its worker pool with every event kept (a
:class:`.api.TraceResult`), or compact per-rank results on a Dask cluster or the local pool (a
:class:`.cluster.ClusterResult`: no events, so no :meth:`find`, :meth:`partners` nor :meth:`model`).

>>> trace = Trace(["job/"])                                                  # doctest: +SKIP
>>> trace.diagnosis().signature, trace.analysis(0).gpu_busy_fraction, trace.op_table(0)[:5]  # doctest: +SKIP
>>> Trace(["job/"], dask_scheduler="local:4").to_json()    # compact per-rank results  # doctest: +SKIP
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from ..analysis.rank_analysis import RankAnalysis
from ..engine.api import Progress, RankResult, TraceResult, analyse_loaded_rank, assemble_job, iter_load_and_analyse
from ..ingest.budget import MemoryBudget
from ..ingest.decode import DEFAULT_MAX_BYTES
from ..diagnosis.diagnose import Diagnosis
from ..ingest.load import load_rank, plan_workers
from ..model.trace_model import TraceFormatError, TraceModel
from ..analysis.optable import OpRow

if TYPE_CHECKING:   # the Dask/compact engine, the helper process and the lane queries load on first use:
    # a local `gpuperf diagnose` of one file never needs them (tests/core/test_diagnose_imports.py)
    from ..engine.cluster import ClusterResult, RankSummary
    from ..model.lanes import EventRef
    from ..model.queries import Matches

__all__ = ["Trace", "iter_job_overview"]


def isolated(isolate: bool | None = None) -> bool:
    """``isolate``, by default True (run in a helper interpreter) unless ``GPUPERF_TRACE_INPROCESS=1``."""
    return os.environ.get("GPUPERF_TRACE_INPROCESS", "") != "1" if isolate is None else isolate


class Trace:
    """A job's trace (one file, several, or a folder of ranks) and its answers, lazy and cached.

    Parameters
    ----------
    paths : trace files (``.json`` / ``.json.gz``) and/or folders of per-rank files.
    dask_scheduler : ``tcp://host:port`` or ``local[:N]``: analyse the ranks as Dask tasks next to
        the files and keep compact results (``gpuperf diagnose --dask-scheduler``).
    compact : compact results from the local process pool (the job overview of many ranks).
    max_bytes, workers, memory_budget : the loader's limits (:mod:`.decode`, :mod:`.load`, :mod:`.budget`).
    top : op-table rows a compact rank keeps (a full result keeps them all).
    overview : compact ranks also bring their step breakdown (the Ranks heatmap).
    """

    def __init__(self, paths: Sequence[Path | str], *, dask_scheduler: str | None = None, compact: bool = False,
                 max_bytes: int | None = DEFAULT_MAX_BYTES, workers: int | None = None,
                 memory_budget: MemoryBudget | int | None = None, top: int = 10, overview: bool = False) -> None:
        self.paths = [Path(p) for p in paths]
        self.dask_scheduler = dask_scheduler
        self.compact = compact or dask_scheduler is not None
        self.max_bytes, self.workers, self.memory_budget = max_bytes, workers, memory_budget
        self.top, self.overview = top, overview
        self._model: TraceModel | None = None
        self._result: TraceResult | ClusterResult | None = None

    def __repr__(self) -> str:
        engine = f"dask {self.dask_scheduler}" if self.dask_scheduler else "compact" if self.compact else "local"
        return f"Trace({[str(p) for p in self.paths]!r}, {engine})"

    # -- loading and analysing (each once) --------------------------------------------------------------
    def iter_result(self, stop: threading.Event | None = None) -> Iterator[Progress | TraceResult | ClusterResult]:
        """:class:`.api.Progress` items, then the analysed job (kept: asked again, it is yielded at
        once). Nothing after the progress when ``stop`` is set."""
        if self._result is not None:
            yield self._result
            return
        stop = stop or threading.Event()
        if self.compact:
            from ..engine.cluster import iter_compact_analyse

            items = iter_compact_analyse(self.paths, stop, address=self.dask_scheduler, workers=self.workers,
                                         max_bytes=self.max_bytes, memory_budget=self.memory_budget, top=self.top,
                                         overview=self.overview)
        elif self._model is not None:   # the lanes were loaded first (one file): analyse those
            items = iter([Progress(0.0, "analysing"), self._analyse_model(self._model)])
        else:
            items = iter_load_and_analyse(self.paths, stop, max_bytes=self.max_bytes, workers=self.workers,
                                          memory_budget=self.memory_budget)
        for item in items:
            if isinstance(item, Progress):
                yield item
            elif not stop.is_set():
                self._result = item
                if isinstance(item, TraceResult):
                    self._model = item.model
                yield item

    def result(self) -> TraceResult | ClusterResult:
        """The analysed job (loaded and analysed now if not yet)."""
        for _ in self.iter_result():
            pass
        if self._result is None:
            raise TraceFormatError("no result")
        return self._result

    def model(self) -> TraceModel:
        """The loaded events (a one-file trace is loaded without being analysed: the Trace tab draws
        its lanes first). Not there for compact results."""
        if self._model is None:
            if self.compact:
                raise ValueError("a compact (Dask or job-overview) trace keeps no events")
            if self._result is None and self.is_one_file():
                _, budget = plan_workers(self.paths, MemoryBudget.of(self.memory_budget), 1)
                rank = load_rank(self.paths[0], max_bytes=self.max_bytes, memory_budget=budget)
                self._model = TraceModel.aligned([rank])
            else:
                self._model = self.result().model   # type: ignore[union-attr] (not compact)
        return self._model

    def is_one_file(self) -> bool:
        """The paths name one readable trace file: its lanes can be loaded before they are analysed."""
        try:
            return len(self.paths) == 1 and self.paths[0].is_file()
        except OSError:
            return False

    def adopt_model(self, model: TraceModel) -> None:
        """Go on with ``model``, a twin of the loaded one (the loading helper's columns, mapped from
        the transfer file): the same ranks in the same order."""
        self._model = model
        if isinstance(self._result, TraceResult):
            self._result.model = model
            for rank, rt in zip(self._result.ranks, model.ranks, strict=True):
                rank.trace = rt

    @staticmethod
    def _analyse_model(model: TraceModel) -> TraceResult:
        """The analysis of a loaded one-rank model, on its own clock (nothing is shifted, ``model``
        is kept): what :func:`.api.iter_load_and_analyse` gives for that file."""
        result = assemble_job([(rt, *analyse_loaded_rank(rt)) for rt in model.ranks])
        result.model = model   # the same rank, in the model the tab holds (its notes)
        return result

    # -- the questions (HTA's shape) --------------------------------------------------------------------
    @property
    def ranks(self) -> list[int]:
        """The job's rank numbers, in the model's order."""
        if self._result is None and self._model is not None:
            return [r.rank for r in self._model.ranks]
        return [r.analysis.rank for r in self.result().ranks]

    def _rank(self, rank: int) -> RankResult | RankSummary:
        for r in self.result().ranks:
            if r.analysis.rank == rank:
                return r
        raise KeyError(f"no rank {rank} (ranks: {self.ranks})")

    def analysis(self, rank: int) -> RankAnalysis:
        """A rank's figures: steps, GPU busy, idle split, exposed communication, kernel time shares."""
        return self._rank(rank).analysis

    def rank_diagnosis(self, rank: int) -> Diagnosis:
        """A rank's own verdict."""
        return self._rank(rank).diagnosis

    def diagnosis(self) -> Diagnosis:
        """The job's verdict: the signature of its largest gap, evidence, fix."""
        return self.result().diagnosis

    def op_table(self, rank: int) -> list[OpRow]:
        """A rank's op table, as torch's ``key_averages().table()`` (compact results: the top rows)."""
        return list(self._rank(rank).ops)

    def roofline_points(self, rank: int) -> list[dict]:
        """A rank's ops with known FLOPs and bytes, as ``roofline_points`` in the JSON (SI units)."""
        r = self._rank(rank)
        return list(r.roofline_points) if self.compact else [p.to_json() for p in r.points]

    def find(self, query: str, mode: str = "name", lanes: Sequence[tuple[int, int]] | None = None) -> Matches:
        """Events whose name matches ``query`` (modes: :data:`.queries.SEARCH_MODES`), time order."""
        from ..model.queries import find_events

        return find_events(self.model(), query, mode, lanes)

    def partners(self, ref: EventRef) -> list[EventRef]:
        """An event's launch <-> device-work partners (correlation ids, else Kineto external ids)."""
        from ..model.queries import event_partners

        return event_partners(self.model(), ref)

    def to_json(self, top: int | None = None, *, encoded: bool = False) -> dict:
        """``gpuperf diagnose --json``'s object (``top`` op-table rows per rank, default the
        constructor's). ``encoded``: compact ranks may come as the text their worker encoded
        (:meth:`.cluster.ClusterResult.to_json`; for ``print_json``, which writes the same bytes)."""
        result, top = self.result(), self.top if top is None else top
        return result.to_json(top=top, encoded=True) if encoded and self.compact else result.to_json(top=top)


# -- the job window (many ranks, compact results) -------------------------------------------------------
COMPACT_ENGINE = "gpuperf_gui.core.trace.session.trace:iter_job_overview"


def iter_job_overview(paths: Sequence[Path | str], stop: threading.Event, *, address: str | None = None,
                      memory_budget: int | None = None, isolate: bool | None = None
                      ) -> Iterator[Progress | ClusterResult]:
    """The job window's generator: a compact :class:`Trace`'s progress and result, with the overview,
    from the local process pool (``address`` None or :data:`.cluster.LOCAL_POOL`) or the Dask
    scheduler at ``address``. On the local pool it runs in a helper interpreter (:func:`isolated`:
    the window's process never forks, decodes nor holds a rank's events, and a stop kills the helper
    and its pool at once). A Dask client runs here (its own threads do the waiting)."""
    from ...child_stream import iter_in_child
    from ..ingest.heap import HELPER_INITIALIZER
    from ..engine.cluster import is_local_pool

    if isolate is None:
        isolate = is_local_pool(address) and isolated()
    if isolate:
        kwargs = {"address": address, "memory_budget": memory_budget, "isolate": False}
        yield from iter_in_child(COMPACT_ENGINE, ([str(p) for p in paths],), kwargs, stop=stop, grace_s=0.0,
                                 initializer=HELPER_INITIALIZER)
    else:
        yield from Trace(paths, compact=True, dask_scheduler=None if is_local_pool(address) else address,
                         memory_budget=memory_budget, overview=True).iter_result(stop)
