"""Coverage-guided fuzzing of the C scanner (``core/trace/ingest/scanner/_scan.c``) with atheris (libFuzzer).

Each input is one run of trace events as the streamed decoder hands it over (``[`` events ``]``),
given to ``_scan.scan`` in a buffer of exactly its size (under ASan a read past its end is a
report). Where the scanner reads the run, msgspec's typed decode of the same text (the path the
scanner must agree with, :func:`.stream_decode.decode_into` with the scanner off) must accept it and
give the same columns, string and id codes, shapes and B/E/M events; where the scanner hands the run
back (None), msgspec decides and there is nothing to compare. Anything else (an exception out of
the scanner, a mismatch, a sanitizer report) stops the run and libFuzzer saves the input.

Usage::

    .venv/bin/python benchmarks/fuzz_scan.py -runs=20000             # the in-place build
    .venv/bin/python benchmarks/fuzz_scan.py -runs=20000 -jobs=2 -workers=2
    .venv/bin/python benchmarks/fuzz_scan.py --replay DIR_OR_FILE ...    # re-check saved inputs

Flags starting with ``-`` go to libFuzzer (``-runs``, ``-max_total_time``, ``-jobs``, ``-workers``,
``-artifact_prefix``...). ``--corpus DIR`` (default ``/tmp/gpuperf_fuzz_scan_corpus``) is seeded with
runs cut from the traces in tests/data and the hand-written edge cases of tests/core/test_scan.py;
the dictionary holds every key, phase and literal the scanner special-cases. The ASan + UBSan
build runs it the same way (``.ci/run``: ``tests/run_with_scan_build.py``, ``LD_PRELOAD`` of gcc's
libasan, ``PYTHONMALLOC=malloc`` so every buffer has its own redzones). That build is compiled with
``-fsanitize-coverage=trace-pc,trace-cmp``: gcc's edge and comparison hooks, which libFuzzer inside
atheris counts as coverage of the C code (without them atheris would see only the Python side).

What it found (2026-12-01, this machine's 2 shared cores):

- Before this target existed, a coverage-guided run found in 7,500 inputs what the structured fuzz
  (benchmarks/fuzz.py) had missed: invalid UTF-8 in two kept strings of one event made ``scan``
  raise ``SystemError`` (fixed: the key lists are built one after another; the run goes to msgspec).
- Its own first runs found one harness mistake, no scanner bug: a B/E/M event with invalid UTF-8
  makes msgspec raise ``DecodeError`` (not ``ValidationError``) when the scanner's run is read back;
  msgspec refuses the whole run the same way, so both paths refuse it (now counted as agreement).
- Long run on the ASan + UBSan build (clang 14, libFuzzer coverage of the C code and atheris's of
  the Python side), from the seed corpus: 1,500,000 inputs in 7 min (3,588 per s), coverage 519
  edges / 1,782 features, corpus 567 inputs: no sanitizer report, no exception, no mismatch.
  Continued from that corpus: 3,000,000 more in 47 min (1,056 per s, the machine shared), coverage
  519 edges / 1,901 features, corpus 600: nothing. 4,500,000 inputs in all, no finding.
"""
from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DICTIONARY = [
    # event keys (field_index) and args keys (arg_index)
    '"ph"', '"cat"', '"name"', '"pid"', '"tid"', '"ts"', '"dur"', '"args"',
    '"External id"', '"external id"', '"correlation"', '"stream"', '"device"', '"bytes"', '"flops"',
    '"Input Dims"', '"Input type"', '"Concrete Inputs"',
    # phases: kept as columns, decoded by msgspec, skipped, unknown
    '"X"', '"B"', '"E"', '"M"', '"i"', '"s"', '"C"', '"f"', '"Q"', '"XX"',
    # values at the edges msgspec draws
    "true", "false", "null", "-0", "0.0", "1e308", "1e309", "-1e-400", "4.9e-324", "1.7976931348623157e308",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "00", "1.", ".5", "1e", "NaN", "Infinity",
    '"\\u0041"', '"\\ud800"', '"\\udc00\\ud800"', '"\\n"', '"\\/"', '"\\x"', '"\xc3\xa9"', '"\xff"', '"\xed\xa0\x80"',
    "[[", "]]", "{}", "[]", '{"', '":', '",', "},{", "\t", "\r\n",
]


class Mismatch(AssertionError):
    """The scanner and msgspec disagree on a run both accept (or the scanner reads a refused one)."""


def _modules():  # noqa: ANN202 - imported after a possible preload of another scanner build
    import msgspec

    from gpuperf_gui.core.trace.ingest.scanner import _scan, scan
    from gpuperf_gui.core.trace.ingest import stream_decode
    from gpuperf_gui.core.trace.ingest.build import EventColumns
    return msgspec, _scan, scan, stream_decode, EventColumns


KEYS = ("cat", "name", "pid", "tid", "ts", "dur", "correlation", "external", "external_2021", "flops",
        "device_rows", "bytes", "device", "stream")


def _state(columns, msgspec) -> str:  # noqa: ANN001
    """Everything a run leaves in the columns, as text (NaN compares equal as text)."""
    out = {key: columns.column(key).tolist() for key in KEYS}
    out["ids"] = [list(ids.items()) for ids in (columns._cats, columns._names, columns._pids, columns._tids)]
    rows, codes, shape_keys = columns.shapes()
    out["shapes"] = [(i, shape_keys[c]) for i, c in zip(rows.tolist(), codes.tolist())]
    out["rest"] = [msgspec.json.encode(e) for e in columns._rest]
    out["n"] = columns.n
    return json.dumps(out, default=repr)


def _exact_buffer(data: bytes) -> ctypes.Array:
    """``data`` in an allocation of exactly its size (PyMem_Malloc above 16 bytes: with
    PYTHONMALLOC=malloc and ASan, the byte after it is a redzone)."""
    buf = (ctypes.c_char * max(len(data), 1))()
    ctypes.memmove(buf, data, len(data))
    return buf


def check(data: bytes) -> str:
    """One input: ``"scanned"``, ``"handed back"`` or ``"not a run"``; raises :class:`Mismatch`."""
    msgspec, _scan, scan, stream_decode, EventColumns = _modules()
    raw = _scan.scan(_exact_buffer(data), len(data))
    if raw is None:
        return "handed back"
    try:
        expected_columns = EventColumns()
        scan.ENABLED = False
        expected = stream_decode.decode_into(expected_columns, bytearray(data), len(data))
        expected_state = _state(expected_columns, msgspec)
    except (msgspec.DecodeError, msgspec.ValidationError, stream_decode.NotStreamable):
        expected = None
    finally:
        scan.ENABLED = True
    got_columns = EventColumns()
    try:
        got = stream_decode.add_scanned(got_columns, scan.ScannedRun(raw, data))
    except (msgspec.DecodeError, msgspec.ValidationError):  # a B/E/M event msgspec refuses: so is the run
        got = None
    if expected is None:
        if got is None:
            return "handed back"
        raise Mismatch(f"the scanner read a run msgspec refuses: {data[:200]!r}")
    if got is None:
        raise Mismatch(f"msgspec reads a run whose B/E/M events the scanner's path refused: {data[:200]!r}")
    if got[:2] != expected[:2] or _state(got_columns, msgspec) != expected_state:
        raise Mismatch(f"columns differ: {data[:200]!r}")
    return "scanned"


def test_one_input(data: bytes) -> None:
    check(data)


# ---- the seed corpus ---------------------------------------------------------------------------
def _events_of(path: Path) -> list[bytes]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [json.dumps(e, separators=(",", ":")).encode() for e in events if isinstance(e, dict)]


def seed_corpus(folder: Path, per_file: int = 40) -> None:
    """Runs of 1-4 events cut from the small traces of tests/data, and test_scan's edge cases."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        return
    data = ROOT / "tests" / "data"
    sources = [data / "backward_thread.json", data / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
               data / "rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
               *sorted((data / "shared_traces").glob("**/*.json.gz"))[:6]]
    n = 0
    for path in sources:
        if not path.is_file() or path.stat().st_size > 8 << 20:
            continue
        events = _events_of(path)
        step = max(1, len(events) // per_file)
        for i in range(0, len(events), step):
            run = b"[" + b",".join(events[i:i + 1 + (i // step) % 4]) + b"]"
            if len(run) <= 4096:
                (folder / f"seed{n:04d}").write_bytes(run)
                n += 1
    sys.path.insert(0, str(ROOT / "tests" / "core"))
    try:
        from test_scan import HANDED_BACK, READ_BY_SCANNER  # hand-written edge cases
        for text in [*READ_BY_SCANNER, *HANDED_BACK]:
            (folder / f"seed{n:04d}").write_bytes(text)
            n += 1
    except ImportError:  # pragma: no cover - names moved: the traces alone still seed it
        pass


def write_dictionary(path: Path) -> None:
    """:data:`DICTIONARY` in libFuzzer's format (bytes outside printable ASCII, quotes and
    backslashes as ``\\xNN``); each word's characters are its bytes (latin-1)."""
    lines = []
    for i, word in enumerate(DICTIONARY):
        text = "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\x{b:02X}" for b in word.encode("latin-1"))
        lines.append(f'kw{i}="{text}"')
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def replay(paths: list[str]) -> int:
    """Check saved inputs (files or folders) without libFuzzer; returns the exit status."""
    from collections import Counter
    counts: Counter[str] = Counter()
    for name in paths:
        p = Path(name)
        for f in sorted(p.iterdir()) if p.is_dir() else [p]:
            counts[check(f.read_bytes())] += 1
    print(dict(counts))
    return 0


def main() -> None:
    ours = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    ours.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "gpuperf_fuzz_scan_corpus"))
    ours.add_argument("--replay", nargs="+", help="check these inputs (files or folders) and exit")
    ours.add_argument("--scan-so", help="another build of the scanner (tests/run_with_scan_build.py)")
    args, libfuzzer_args = ours.parse_known_args()
    if not args.replay:
        import atheris
    if args.scan_so:
        from run_with_scan_build import preload
        preload(args.scan_so)
    if args.replay:
        raise SystemExit(replay(args.replay))

    with atheris.instrument_imports(include=["gpuperf_gui"]):  # the Python side's branches count too
        _modules()
    corpus = Path(args.corpus)
    seed_corpus(corpus)
    dictionary = corpus.parent / "gpuperf_fuzz_scan.dict"
    write_dictionary(dictionary)
    argv = [sys.argv[0], f"-dict={dictionary}", "-max_len=4096", "-timeout=10", *libfuzzer_args, str(corpus)]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
