"""The columnar torch_npu readers against the plain reading (tests/ingest/_ascend_plain: a dict per event,
csv.reader rows, one SQLite row at a time), on every Ascend fixture and on grown copies of one: every
column of the EventTable (strings compared as text, not ids), the memory columns, the metrics, every
side table row, the metadata and the problems must be the same."""
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from _ascend_plain.read import read_ascend as read_plain
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import EVENT_COLUMNS, MEMORY_COLUMNS

from conftest import fixture_path

FIXTURES = [(level, rank) for level in ("level0", "level1", "level2", "db_level0", "db_level1", "db_level2")
            for rank in (0, 1)]
_TEXT = {"name", "cat", "shapes", "stack", "core", "group", "args"}
_MEMORY_TEXT = {"device", "component", "op"}


def _resolved(table, cols, text) -> dict:
    out = {}
    for k, v in cols.items():
        if k in text:
            lookup = np.array(list(table.strings.values) + [None], dtype=object)
            out[k] = lookup[np.asarray(v)].tolist()
        else:
            out[k] = np.asarray(v).tolist()
    return out


def assert_same(new, plain) -> None:
    assert len(new) == len(plain)
    got, want = _resolved(new, new.events, _TEXT), _resolved(plain, plain.events, _TEXT)
    for k in EVENT_COLUMNS:
        assert got[k] == want[k], k
    got, want = _resolved(new, new.memory, _MEMORY_TEXT), _resolved(plain, plain.memory, _MEMORY_TEXT)
    for k in MEMORY_COLUMNS:
        assert got[k] == want[k], k
    assert sorted(new.metrics) == sorted(plain.metrics)
    for k in plain.metrics:
        np.testing.assert_array_equal(new.metrics[k], plain.metrics[k], err_msg=k)
    assert sorted(new.side) == sorted(plain.side)
    for k in plain.side:
        assert list(new.side[k]) == list(plain.side[k]), k
    for attr in ("format", "rank", "world_size", "worker", "devices", "environment", "process_names",
                 "thread_names", "start_ns", "end_ns"):
        assert getattr(new.meta, attr) == getattr(plain.meta, attr), attr
    # the files are read in another order (the trace's second half meanwhile): the same files and problems
    assert sorted(new.meta.source_files) == sorted(plain.meta.source_files)
    assert sorted((p.file, p.message, p.severity) for p in new.problems) == \
        sorted((p.file, p.message, p.severity) for p in plain.problems)


@pytest.mark.parametrize("compiled", [pytest.param("compiled parts", marks=pytest.mark.compiled("_ascend_scan")),
                                      "none compiled"])
@pytest.mark.parametrize("level,rank", FIXTURES)
def test_every_fixture_reads_as_the_plain_reading(level, rank, compiled, monkeypatch):
    """With the compiled part (trace_view.json's scanner, trace_scan) and the CSVs read by pyarrow.csv, and
    without them (a build with no C compiler: msgspec and numpy; the CSVs read by the csv module, pyarrow's
    fallback)."""
    from canning_tb.ingest.ascend.csv import arrow as csv_arrow
    from canning_tb.ingest.ascend.trace import scan as trace_scan
    on = compiled == "compiled parts"
    monkeypatch.setenv("CANNING_TRACE_SCAN", "1" if on else "0")
    monkeypatch.setenv("CANNING_CSV_ARROW", "1" if on else "0")
    assert trace_scan.enabled() == csv_arrow.enabled() == on
    folder = str(fixture_path("ascend", level, f"rank{rank}_ascend_pt"))
    assert_same(read_ascend(folder), read_plain(folder))


def test_the_split_weighs_only_the_files_read_beside_the_trace(monkeypatch):
    """The trace's split between this process and the child (trace_merge._ours) weighs the bytes of the files
    read here before its part: not operator_details.csv, which is read only when the trace is unusable."""
    from canning_tb.ingest.ascend import read
    from canning_tb.ingest.ascend.trace import read as trace
    seen = []
    started = trace.Started
    monkeypatch.setattr(read, "Started", lambda path, besides: seen.append(besides) or started(path, besides))
    folder = fixture_path("ascend", "level2", "rank0_ascend_pt")
    out = folder / "ASCEND_PROFILER_OUTPUT"
    names = [p.name for p in out.iterdir() if p.name != "trace_view.json" and p.name != "operator_details.csv"
             and p.suffix in (".csv", ".json")]
    assert "kernel_details.csv" in names and (out / "operator_details.csv").exists()
    by_hand = sum((out / n).stat().st_size for n in names if n not in ("api_statistic.csv", "l2_cache.csv"))
    read_ascend(str(folder))
    assert seen == [by_hand]


def test_a_cached_table_keeps_its_columnar_side_tables(tmp_path):
    """Side tables held as columns go through the cache (npz arrays) and read back row for row."""
    from canning_tb.ingest.table import EventTable
    t = read_ascend(str(fixture_path("ascend", "level2", "rank0_ascend_pt")))
    t.save(str(tmp_path / "t"))
    for lazy in (False, True):
        back = EventTable.load(str(tmp_path / "t"), lazy=lazy)
        assert sorted(back.side) == sorted(t.side)
        for k in t.side:
            assert list(back.side[k]) == list(t.side[k]), k


def test_flops_and_odd_args_read_as_the_plain_reading(tmp_path):
    """torch_npu's own `flops` (with_flops=True; no fixture has it) and `Input type` of every type a file
    may hold: numbers, numeric text, negative, NaN / inf text, bool, a list, absent; the `flops` metric and
    the `args` column must be the plain reading's, in one typed piece and in the lenient path alike."""
    import json
    src = fixture_path("ascend", "level2", "rank0_ascend_pt")
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    path = dst / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(path.read_text())
    odd = [1.5e9, "2048", -3, "nan", "inf", True, [1, 2], 0, None, "12e3", " 7 "]
    types = ["float;\r\nScalar", ["float"], 3, "", "N/A"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    assert len(ops) > 40
    for i, e in enumerate(ops[:40]):
        if odd[i % len(odd)] is not None:
            e.setdefault("args", {})["flops"] = odd[i % len(odd)]
        e.setdefault("args", {})["Input type"] = types[i % len(types)]
    path.write_text(json.dumps(events))
    new = read_ascend(str(dst))
    assert_same(new, read_plain(str(dst)))
    assert np.count_nonzero(~np.isnan(new.metrics["flops"])) >= 10
    events[0] = 5  # an element that is no object: the lenient decode of its piece
    path.write_text(json.dumps(events))
    assert_same(read_ascend(str(dst)), read_plain(str(dst)))


def _grow():
    """benchmarks/grow_ascend.py, loaded from its path (the benchmarks are no package the tests install)."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "grow_ascend.py"
    spec = importlib.util.spec_from_file_location("grow_ascend", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rerun_fresh(node: str) -> bool:
    """Run this test again in a fresh interpreter when this one has other threads: the reader forks only
    in a process with no other thread (trace_merge._can_fork), and earlier tests of a whole run may leave
    one (a server, a progress bar). True when it was run there (and passed)."""
    if threading.active_count() == 1 or os.environ.get("CANNING_TEST_FRESH"):
        return False
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{node}"],
                          env={**os.environ, "CANNING_TEST_FRESH": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return True


def _small_grains(monkeypatch) -> None:
    """Every path the big files take, on a small rank: small blocks, CSV chunks and SQL blocks, two processes."""
    from canning_tb.ingest import _json
    from canning_tb.ingest.ascend.csv import rows as csv_io
    from canning_tb.ingest.ascend.db import columns as db_columns
    from canning_tb.ingest.ascend.trace import merge as trace_merge
    monkeypatch.setattr(_json, "_BLOCK", 1 << 20)
    monkeypatch.setattr(trace_merge, "PARALLEL_BYTES", 1 << 20)
    monkeypatch.setattr(csv_io, "CHUNK_ROWS", 500)
    monkeypatch.setattr(db_columns, "_BLOCK_ROWS", 1000)


@pytest.mark.parametrize("level", ["level2", "db_level2"])
def test_a_grown_rank_reads_as_the_plain_reading(tmp_path, monkeypatch, level):
    """A rank grown 6 times (benchmarks/grow_ascend.py: every timed record repeated with shifted times and
    steps, flows unique), read in small blocks, CSV chunks and SQL blocks, and in two processes: every path
    the big files take, and many events of one name in the kernel_details.csv merge."""
    from canning_tb.ingest.ascend.trace import merge as trace_merge
    if level == "level2" and _rerun_fresh(f"test_a_grown_rank_reads_as_the_plain_reading[{level}]"):
        return
    _small_grains(monkeypatch)
    forks = []
    start = trace_merge._start_child
    monkeypatch.setattr(trace_merge, "_start_child", lambda *a: forks.append(1) or start(*a))
    src = fixture_path("ascend", level, "rank0_ascend_pt")
    dst = tmp_path / "run" / "rank0_0_ascend_pt"
    _grow().grow(str(src), str(dst), copies=6 if level == "level2" else 3)
    assert_same(read_ascend(str(dst)), read_plain(str(dst)))
    assert forks == ([1] if level == "level2" else [])  # the trace's second part was read by a child
    shutil.rmtree(dst)


CHILD_CASES = ["dies before answering", "fails at once", "answers late"]


@pytest.mark.parametrize("child", CHILD_CASES)
def test_the_trace_is_read_whole_whatever_the_child_does(tmp_path, monkeypatch, child):
    """A big trace_view.json's second part is read by a forked child (trace_merge): the table is the plain
    reading's when the child dies after reading its part but before answering (killed: no answer comes),
    when it fails before reading (its answer is None), and when it answers long after this process is
    done with its part; in the first two cases this process reads the second part itself."""
    import time
    from canning_tb.ingest.ascend.trace import merge as trace_merge
    if _rerun_fresh(f"test_the_trace_is_read_whole_whatever_the_child_does[{child}]"):
        return
    _small_grains(monkeypatch)
    parent, read, taken = os.getpid(), trace_merge._read_span, []

    def reading(plan, parse, span, on_utf8):
        if os.getpid() == parent:
            taken.append(span)
        elif child == "fails at once":
            raise OSError("the child cannot read")
        elif child == "answers late":
            time.sleep(3)
        read(plan, parse, span, on_utf8)
        if os.getpid() != parent and child == "dies before answering":
            os._exit(3)
    monkeypatch.setattr(trace_merge, "_read_span", reading)
    spans = []
    two = trace_merge._two_spans
    monkeypatch.setattr(trace_merge, "_two_spans", lambda plan, besides: spans.extend(two(plan, besides)) or spans)
    dst = tmp_path / "run" / "rank0_0_ascend_pt"
    _grow().grow(str(fixture_path("ascend", "level2", "rank0_ascend_pt")), str(dst), copies=6)
    assert_same(read_ascend(str(dst)), read_plain(str(dst)))
    assert len(spans) == 2
    assert taken == (spans[:1] if child == "answers late" else spans)  # the second part read here only if lost


@pytest.mark.parametrize("scanner, arrow, split", [
    pytest.param(True, True, 8, marks=pytest.mark.compiled("_ascend_scan")),
    pytest.param(True, False, 2, marks=pytest.mark.compiled("_ascend_scan")), (False, True, 9), (False, False, 7)])
def test_the_split_follows_the_bytes_read_beside_the_trace(monkeypatch, scanner, arrow, split):
    """trace_merge._ours: the twentieths of the trace read in this process, from the bytes it reads before
    (read._BESIDE_TRACE). The benchmark ranks' figures (29.3 MB beside a 277 MB trace, 82.7 MB beside 781 MB)
    and the costs of trace_merge's comment give, by hand: with the scanner and pyarrow.csv 0.5 - 1.7 * 29.3 /
    554.3 = 0.41: 8/20; the scanner and the csv module 0.5 - 7.4 * 0.0529 = 0.11: 2/20; pyarrow alone 0.5 - 0.66 *
    0.0529 = 0.47: 9/20; neither 0.5 - 2.8 * 0.0529 = 0.35: 7/20 (the same at 1 GB); nothing beside: halves; more
    beside than the trace weighs: one twentieth, never none."""
    from canning_tb.ingest.ascend.trace import merge as trace_merge
    monkeypatch.setenv("CANNING_TRACE_SCAN", "1" if scanner else "0")
    monkeypatch.setenv("CANNING_CSV_ARROW", "1" if arrow else "0")
    assert trace_merge._ours(277_164_357, 29_300_000) == split
    assert trace_merge._ours(780_541_253, 82_700_000) == split
    assert trace_merge._ours(277_164_357, 0) == 10
    assert trace_merge._ours(100, 10_000) == 1


def test_a_big_trace_is_cut_where_the_split_says(monkeypatch):
    """_two_spans: this process's span ends at the end of the chosen twentieth, the child's starts at the next."""
    from canning_tb.ingest.ascend.trace import merge as trace_merge

    class Plan:
        start, end, cuts = 100, 2100, 20

        def split(self, parts):  # `parts` equal ranges of whole elements (fewer when there are few)
            step = (self.end - self.start) // parts
            return [(101 + step * k, 100 + step * (k + 1)) for k in range(min(parts, self.cuts))]
    monkeypatch.setattr(trace_merge, "_ours", lambda size, besides: 6 if (size, besides) == (2000, 7) else 0)
    assert trace_merge._two_spans(Plan(), 7) == [(101, 700), (701, 2100)]
    few = Plan()
    few.cuts = 3  # too few elements to cut in twentieths: one span, read here
    assert trace_merge._two_spans(few, 7) == [(101, 400)]


@pytest.mark.parametrize("values, uniq, codes", [
    ([3, 0, 3, 7, 0], [0, 3, 7], [1, 0, 1, 2, 0]),  # small device ids: counted, not sorted
    ([70000, 5, 70000], [5, 70000], [1, 0, 1]),  # a hint past 2**16 (a hostile file): sorted, not counted
    ([], [], []),
])
def test_counter_device_codes_by_hand(values, uniq, codes):
    """counters._codes: np.unique(values, return_inverse=True) of device ids, by hand."""
    from canning_tb.ingest.ascend.counters import _codes
    got_uniq, got_codes = _codes(np.array(values, np.int64))
    assert got_uniq.tolist() == uniq and got_codes.tolist() == codes


def test_one_counter_group_makes_the_counter_table_by_hand():
    """CounterParts.columns with a single group (one part): NaN samples dropped, MB/s to bytes/s, the pid's
    device and group, by hand."""
    from canning_tb.ingest.ascend.counters import CounterParts
    parts = CounterParts()
    parts.add_group(0, "HBM", ("Read(MB/s)",), lambda pos, key: np.array([1.5, np.nan, 2.0]), None,
                    np.array([10, 20, 30], np.int64), np.array([0, 1, 2], np.int64))
    rows = list(parts.columns(np.array([0], np.int32), np.array([3], np.int64), ["HBM 0"]))
    assert rows == [{"group": "HBM 0", "counter": "HBM", "unit": "bytes/s", "device": "npu:3", "ts_ns": 10,
                     "value": 1.5 * 2 ** 20},
                    {"group": "HBM 0", "counter": "HBM", "unit": "bytes/s", "device": "npu:3", "ts_ns": 30,
                     "value": 2.0 * 2 ** 20}]
