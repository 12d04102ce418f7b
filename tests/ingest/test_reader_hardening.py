"""The reader against files that change under it, expand without end, nest without end, or carry
numbers and escapes no event can hold (issue 14, items 1, 2, 4, 8, 12). Each input is a real
fixture changed in one way; expected counts come from a second reading of the file with json."""
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import InputError

import _hostile

CHILD_ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def n_complete(doc) -> int:
    return sum(1 for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X")


def write(tmp_path, data: bytes, name="t.pt.trace.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def big_trace(copies: int) -> bytes:
    """The fixture's events repeated `copies` times (same events, shifted in time)."""
    doc = _hostile.kineto_doc()
    events = doc["traceEvents"]
    out = []
    for i in range(copies):
        for e in events:
            if isinstance(e, dict) and "ts" in e and isinstance(e["ts"], (int, float)):
                e = {**e, "ts": e["ts"] + i * 10_000_000}
            out.append(e)
    doc["traceEvents"] = out
    return json.dumps(doc).encode()


# -- 1. a file rewritten in place while it is read -----------------------------------------------

READER = textwrap.dedent("""
    import sys, time
    from canning_tb.ingest.kineto.read import read_kineto
    from canning_tb.ingest.table import InputError
    path, seconds = sys.argv[1], float(sys.argv[2])
    ok = bad = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            read_kineto(path)
            ok += 1
        except InputError:
            bad += 1
    print(ok, bad)
""")


def test_a_trace_rewritten_while_read_costs_at_most_that_read(tmp_path):
    """A script re-exporting to the same name truncates the file under the reader again and again:
    the reading process survives (no SIGBUS), and the read after the last write sees the new file."""
    first, second = big_trace(12), _hostile.kineto_text()
    path = write(tmp_path, first)
    reader = subprocess.Popen([sys.executable, "-c", READER, path, "8"], stdout=subprocess.PIPE, env=CHILD_ENV)
    rounds = 0
    while reader.poll() is None and rounds < 4000:
        with open(path, "r+b") as f:  # shrink under the reader, then grow back, as `open(path, "wb")` does
            f.truncate(len(first) // (3 + rounds % 5))
            f.flush()
            f.seek(0)
            f.write(first if rounds % 2 else first[: len(first) // 2])
            f.truncate()
        rounds += 1
    out, _ = reader.communicate(timeout=120)
    assert reader.returncode == 0, f"the reader died: {signal.Signals(-reader.returncode).name}" \
        if reader.returncode < 0 else reader.returncode
    ok, bad = map(int, out.split())
    assert ok + bad > 0 and rounds > 10
    with open(path, "wb") as f:
        f.write(second)
    assert len(read_kineto(path)) == n_complete(json.loads(second))


# -- 2. nesting past any depth -------------------------------------------------------------------

@pytest.mark.parametrize("case", ["k_deep_arg", "k_deep_top_key", "k_deep_event", "k_deep_distributed_info",
                                  "k_deep_1500_objects", "k_bare_array_deep"])
def test_nesting_past_any_depth_is_an_input_error(tmp_path, case):
    from canning_tb.ingest.chrome_array import read_chrome_trace
    (build,) = [c.build for c in _hostile.CASES if c.name == case]
    build(tmp_path / "run")
    (path,) = (tmp_path / "run").iterdir()
    with pytest.raises(InputError, match="nested deeper than") as e:
        read_chrome_trace(str(path))
    assert e.value.file == str(path)


# -- 4. expansion cap ------------------------------------------------------------------------------

def test_gzip_expansion_is_capped_with_an_error_naming_the_cap(tmp_path, monkeypatch):
    _hostile._gzip_bomb_in_string(tmp_path / "run")
    (path,) = (tmp_path / "run").iterdir()
    assert path.stat().st_size < 2 << 20
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", str(64 << 20))
    with pytest.raises(InputError, match=r"expands past .*64 MiB.*CANNING_MAX_TRACE_BYTES") as e:
        read_kineto(str(path))
    assert e.value.file == str(path)


def test_a_plain_file_over_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = write(tmp_path, _hostile.kineto_text())
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", "1000")
    with pytest.raises(InputError, match="CANNING_MAX_TRACE_BYTES"):
        read_kineto(path)


def test_the_child_process_threshold_counts_expanded_bytes(tmp_path, monkeypatch):
    """A small .gz that expands past the threshold is parsed in a child, not in the host."""
    from canning_tb.store import Store
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    text = big_trace(8)
    gz = gzip.compress(text)
    (run / "w.1.pt.trace.json.gz").write_bytes(gz)
    threshold = (len(gz) + len(text)) // 2  # between the compressed and the expanded size
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"), isolate_bytes=threshold)

    from canning_tb.store import compute as store_module
    read = store_module.read_window

    def not_here(window):  # the host may start reading; it must stop once the bytes pass the threshold
        read(window)
        raise AssertionError("parsed in the host process")
    monkeypatch.setattr(store_module, "read_window", not_here)  # the spawned child is unaffected
    (worker,) = store.workers("r")
    digest = store.digest("r", worker.name, store.windows("r", worker.name)[0].id)
    assert sum(op.calls for op in digest.ops_by_name) > 0


# -- 8. peak memory relative to the file -----------------------------------------------------------

PEAK = textwrap.dedent("""
    import resource, sys
    import numpy, msgspec
    from canning_tb.ingest.chrome_array import read_chrome_trace
    from canning_tb.ingest.table import InputError
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        read_chrome_trace(sys.argv[1])
        outcome = "read"
    except InputError as e:
        outcome = "refused: " + e.problem
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024, outcome)
""")


def _junk_with_control_chars(size: int) -> bytes:
    head = b'{"traceEvents": [{"ph": "X", "name": "a\x01b", "ts": 1, "dur": 1, "pid": 1, "tid": 1}, '
    return head + b"\x01" * (size - len(head) - 3) + b"1]}"


def _junk_with_nan_tokens(size: int) -> bytes:
    head = b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": NaN, "pid": 1, "tid": 1}, '
    body = b'{"a": NaN}, ' * ((size - len(head)) // 12)
    return head + body + b"1]}"


@pytest.mark.parametrize("make, outcome", [
    # a first byte no JSON or gzip file starts with: random bytes that happened to start with '{', '['
    # or a space were refused with another message (about 1 run in 50)
    (lambda size: b"\xff" + os.urandom(size - 1), "refused: not a trace"),
    (lambda size: b"{" + os.urandom(size - 1), "refused"),
    (_junk_with_control_chars, "read"),
    (_junk_with_nan_tokens, "read"),
    (lambda size: big_trace(max(1, size // len(_hostile.kineto_text()))), "read"),
])
def test_peak_memory_stays_within_one_and_a_half_times_the_file(tmp_path, make, outcome):
    path = write(tmp_path, make(48 << 20))
    size = os.path.getsize(path)
    out = subprocess.run([sys.executable, "-c", PEAK, path], capture_output=True, text=True, env=CHILD_ENV,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    peak, got = out.stdout.split(" ", 1)
    assert got.startswith(outcome), got
    assert int(peak) <= 1.5 * size, f"peak {int(peak) / size:.2f}x the file ({got.strip()})"


# -- 12. numbers and escapes no event can hold -----------------------------------------------------

@pytest.mark.parametrize("field, text", [("ts", b"1e400"), ("ts", b"-1e400"), ("dur", b"1e400"), ("ts", b"1e300"),
                                         ("dur", b"1e300"), ("ts", b"9" * 40), ("dur", str(2 ** 63).encode()),
                                         ("ts", b'"1e400"')])
def test_a_number_out_of_range_costs_its_event_only(tmp_path, field, text):
    doc = _hostile.kineto_doc()
    n = n_complete(doc)
    _hostile._ts(field)(doc)
    path = write(tmp_path, json.dumps(doc).encode().replace(b'"@NUM@"', text, 1))
    table = read_kineto(path)
    assert len(table) == n - 1
    assert any("out of range" in p.message or "without a usable" in p.message for p in table.problems), \
        table.problems
    ends = table.events["ts"] + table.events["dur"]
    assert np.all(ends >= table.events["ts"])  # nothing wrapped around int64


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\udc00", b"\\udbff\\u0041"])
def test_a_lone_surrogate_escape_costs_nothing_but_its_character(tmp_path, escape):
    doc = _hostile.kineto_doc()
    n = n_complete(doc)
    _hostile._surrogate(doc)
    path = write(tmp_path, json.dumps(doc).encode().replace(b'"@SUR@"', b'"op' + escape + b'name"', 1))
    table = read_kineto(path)
    assert len(table) == n
    assert any(s.startswith("op\ufffd") and s.endswith("name") for s in table.strings.values)
    assert any("surrogate" in p.message for p in table.problems)


# -- issue 15: a big plain trace read by two processes, a block at a time --------------------------

def _rows(table):
    """Every event and memory record with its strings resolved, as sorted tuples (row order and
    string ids may differ between ways of reading; the rows may not)."""
    values = table.strings.values + [None]

    def resolved(cols, text):
        return sorted(zip(*([values[i] for i in cols[k].tolist()] if k in text else cols[k].tolist()
                            for k in sorted(cols))))
    return (resolved(table.events, ("name", "cat", "shapes", "stack", "group", "core")),
            resolved(table.memory, ("device", "component", "op")))


@pytest.mark.parametrize("fixture", [_hostile.KINETO, ("hta", "df_index_resolver", None)])
def test_reading_in_two_processes_gives_the_same_table(tmp_path, fixture):
    from conftest import fixture_path
    if fixture[-1] is None:
        (src,) = fixture_path(*fixture[:-1]).glob("*.json*")
    else:
        src = fixture_path(*fixture)
    data = gzip.decompress(src.read_bytes()) if src.name.endswith(".gz") else src.read_bytes()
    path = write(tmp_path, data)
    # the reader forks only from a process with one thread; earlier tests leave threads in this one
    # (servers, pools), so the comparison runs in a fresh spawned interpreter
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        assert pool.submit(_two_process_read_differences, str(path)).result() == []


@pytest.mark.parametrize("nested", [False, True])
def test_element_cuts_inside_strings_and_nested_values_still_give_the_same_table(tmp_path, nested):
    """Names holding the text of an element boundary ('}, {"ph": ...') put wrong cut candidates
    everywhere: the block and piece cuts step over them and the file is still read in two ranges.
    Args holding lists of objects ('}, {"b": ...' is then JSON structure) may send a block back to the
    whole-file read; either way no event is lost or split."""
    doc = _hostile.kineto_doc()
    for i, event in enumerate(doc["traceEvents"]):
        if isinstance(event, dict) and event.get("ph") == "X":
            event["name"] = f'{event.get("name", "")}"}}, {{"ph": "X", "name": "fake{i}"}}'
            if nested:
                event.setdefault("args", {})["nested"] = [{"a": i}, {"b": [{"c": 1}, {"d": 2}]}]
    path = write(tmp_path, json.dumps(doc, indent=1).encode())
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        differences = pool.submit(_two_process_read_differences, path).result()
    assert [d for d in differences if not (nested and d == "not read in two ranges")] == []


def _two_process_read_differences(path: str) -> list:
    """What differs between the whole-file read and the read in two byte ranges (two processes)."""
    from canning_tb.ingest import _json, forked
    from canning_tb.ingest.kineto import parallel as kineto_parallel
    whole = read_kineto(path)
    calls = []
    ranges = kineto_parallel.read_ranges
    kineto_parallel.PARALLEL_BYTES = 0
    _json._BLOCK = 200_000  # many blocks, cut between elements

    def planned(*args):  # counted only when the file was read in ranges (no fallback)
        result = ranges(*args)
        calls.append(result)
        return result
    kineto_parallel.read_ranges = planned
    parallel = read_kineto(path)
    out = [] if calls and forked.can_fork() else ["not read in two ranges"]
    if _rows(parallel) != _rows(whole):
        out.append("rows")
    for field in ("rank", "world_size", "start_ns", "end_ns", "process_names", "thread_names", "devices",
                  "environment", "host"):
        if getattr(parallel.meta, field) != getattr(whole.meta, field):
            out.append(field)
    if [(p.message, p.severity) for p in parallel.problems] != [(p.message, p.severity) for p in whole.problems]:
        out.append("problems")
    return out


def test_damaged_text_in_a_big_plain_file_is_read_by_the_whole_file_path(tmp_path, monkeypatch):
    """NaN tokens deep in the array: the block reader gives up at once (no piece grown event by event),
    and the whole-file path repairs them, as for a small file."""
    from canning_tb.ingest import _json
    from canning_tb.ingest.kineto import parallel as kineto_parallel
    text = _hostile.kineto_text()
    damaged = text[: len(text) * 3 // 4] + text[len(text) * 3 // 4:].replace(b'"dur": 1,', b'"dur": NaN,', 2)
    assert damaged != text
    path = write(tmp_path, damaged)
    small = read_kineto(path)
    monkeypatch.setattr(kineto_parallel, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(_json, "_BLOCK", 200_000)
    big = read_kineto(path)
    assert len(big) == len(small) and any("NaN" in p.message for p in big.problems)
