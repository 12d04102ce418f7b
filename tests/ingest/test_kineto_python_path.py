"""The Kineto reader's Python paths (ingest/kineto/read.py), read with the compiled scanner turned off
(CANNING_KINETO_SCAN=0, as where native/kineto_scan.c is not built) on small traces written here, every
column worked out by hand in the comments: the typed decode (`_chunk`, `_group`, `_host_columns`,
`_arg_columns`, `_memory`, `_flow_ends`), the exact decimal path for µs past 2**43, and the lenient path
for events whose fields have other types (`_coerce`, `_coerce_arg`, `_num`). Where the scanner takes the
same trace, its reading (C code, not this one) must give the same table."""
import json

import numpy as np
import pytest

from canning_tb.ingest.kineto import read as kineto_read
from canning_tb.ingest.table import NONE, Kind


def _read(tmp_path, events, scan=False, monkeypatch=None, top=None, raw=None):
    monkeypatch.setenv("CANNING_KINETO_SCAN", "1" if scan else "0")
    path = tmp_path / "t.pt.trace.json"
    text = raw if raw is not None else json.dumps({**(top or {}), "traceEvents": events})
    path.write_text(text)
    return kineto_read.read_kineto(str(path))


def _texts(t, col):
    return [t.strings[i] for i in t.events[col].tolist()]


def _rows(t):
    """Events as (name, column values) by name: the table is sorted by ts, so the names find the rows."""
    return {t.strings[int(n)]: i for i, n in enumerate(t.events["name"].tolist())}


# One host op, its launch, its kernel, a copy, a flow end, a memory record, the metadata and the marks.
OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 7, "ts": 100.5, "dur": 20.25,
      "args": {"External id": 11, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"],
               "Concrete Inputs": ["", ""], "Call stack": "a.py(1): f", "flops": 48}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 110, "dur": 5,
          "args": {"external id": 11, "correlation": 21}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 130, "dur": 10.001,
          "args": {"device": 0, "stream": 7, "correlation": 21, "External id": 11, "grid": [4, 2, 3],
                   "blocks per SM": 1.5, "theoretical occupancy %": 50, "registers per thread": 32,
                   "shared memory": 1024}}
COPY = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 8, "ts": 150, "dur": 2,
        "args": {"device": 0, "stream": 8, "correlation": 22, "bytes": 4096}}
ALLREDUCE = {"ph": "X", "cat": "kernel", "name": "my_kernel", "pid": 0, "tid": 9, "ts": 160, "dur": 3,
             "args": {"device": 0, "stream": 9, "Process Group Name": "0", "Process Group Description": "default_pg",
                      "dtype": "BFloat16", "In msg nelems": 1000}}
GLOO = {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 7, "ts": 170, "dur": 4,
        "args": {"Input Dims": [[8, 2], [3]], "Input type": ["float", "c10::Half"]}}
META = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python main"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main thread"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "args": {"sort_index": 5}}]
MARKS = [{"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 7, "ts": 90},
         {"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 7, "ts": 95},
         {"ph": "I", "name": "Record Window End", "pid": 1, "tid": 7, "ts": 400},
         {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 7, "ts": 105.25,
          "args": {"Device Type": 1, "Device Id": 0, "Addr": 123, "Bytes": 512, "Total Allocated": 1024,
                   "Total Reserved": 2048}},
         {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 7, "ts": 106, "args": {"Bytes": -64}},
         {"ph": "s", "id": 21, "pid": 1, "tid": 7, "ts": 110, "cat": "ac2g"},
         {"ph": "f", "id": 21, "pid": 0, "tid": 7, "ts": 130, "cat": "ac2g", "bp": "e"},
         {"ph": "i", "s": "t", "name": "another mark", "pid": 1, "tid": 7, "ts": 300}]  # no mark of the window
ALL = META + [OP, LAUNCH, KERNEL, COPY, ALLREDUCE, GLOO] + MARKS


@pytest.mark.parametrize("scan", [False, True])
def test_every_column_of_a_small_trace_by_hand(tmp_path, monkeypatch, scan):
    t = _read(tmp_path, ALL, scan, monkeypatch)
    ev = t.events
    # sorted by ts (µs x 1000, the fraction rounded to the ns): 100.5 -> 100_500, 10.001 -> 10_001
    assert _texts(t, "name") == ["aten::mm", "cudaLaunchKernel", "gemm", "Memcpy HtoD", "my_kernel",
                                 "gloo:all_reduce"]
    assert ev["ts"].tolist() == [100_500, 110_000, 130_000, 150_000, 160_000, 170_000]
    assert ev["dur"].tolist() == [20_250, 5_000, 10_001, 2_000, 3_000, 4_000]
    assert ev["kind"].tolist() == [Kind.CPU_OP, Kind.RUNTIME, Kind.KERNEL, Kind.MEMCPY, Kind.COMM_KERNEL,
                                   Kind.USER_ANNOTATION]
    assert _texts(t, "cat") == ["cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "kernel", "user_annotation"]
    assert ev["pid"].tolist() == [1, 1, 0, 0, 0, 1] and ev["tid"].tolist() == [7, 7, 7, 8, 9, 7]
    # host rows keep NONE; device rows their args
    assert ev["device"].tolist() == [NONE, NONE, 0, 0, 0, NONE]
    assert ev["stream"].tolist() == [NONE, NONE, 7, 8, 9, NONE]
    assert ev["correlation"].tolist() == [NONE, 21, 21, 22, NONE, NONE]
    # "External id" or, where absent, the lower-case "external id" (the launch's)
    assert ev["external_id"].tolist() == [11, 11, 11, NONE, NONE, NONE]
    assert ev["blocks"].tolist() == [NONE, NONE, 4 * 2 * 3, NONE, NONE, NONE]
    # the copy's bytes as written; the collective's 1000 elements x 2 bytes (bf16); gloo's inputs:
    # 8 x 2 floats (4 bytes) + 3 halves (2 bytes) = 64 + 6 = 70
    assert ev["bytes"].tolist() == [NONE, NONE, NONE, 4096, 2000, 70]
    assert _texts(t, "group") == [None, None, None, None, "0 (default_pg)", None]
    assert _texts(t, "shapes") == ["[[2, 3], [3, 4]]", None, None, None, None, "[[8, 2], [3]]"]
    assert _texts(t, "stack") == ["a.py(1): f", None, None, None, None, None]
    assert _texts(t, "args") == ['{"types":["float","float"],"concrete":["",""]}', None, None, None, None,
                                 '{"types":["float","c10::Half"]}']
    assert _texts(t, "core") == [None] * 6
    m = t.metrics
    assert sorted(m) == ["blocks_per_sm", "flops", "occupancy_pct", "registers_per_thread", "shared_memory_bytes"]
    nan = float("nan")
    for name, want in (("flops", [48, nan, nan, nan, nan, nan]), ("blocks_per_sm", [nan, nan, 1.5, nan, nan, nan]),
                       ("occupancy_pct", [nan, nan, 50, nan, nan, nan]),
                       ("registers_per_thread", [nan, nan, 32, nan, nan, nan]),
                       ("shared_memory_bytes", [nan, nan, 1024, nan, nan, nan])):
        assert np.array_equal(m[name], np.array(want), equal_nan=True), name
    mem = t.memory
    # 105.25 µs -> 105_250 ns; the second record's absent args: schema.Args's defaults (type -1: "device-1")
    assert mem["ts"].tolist() == [105_250, 106_000] and mem["bytes"].tolist() == [512, -64]
    assert mem["addr"].tolist() == [123, -1] and mem["allocated"].tolist() == [1024, -1]
    assert mem["reserved"].tolist() == [2048, -1]
    assert [t.strings[i] for i in mem["device"].tolist()] == ["cuda:0", "device-1:0"]
    for k in ("active", "component", "op"):
        assert mem[k].tolist() == [NONE, NONE], k
    meta = t.meta
    assert meta.process_names == {1: "python main"} and meta.thread_names == {"1:7": "main thread"}
    assert (meta.start_ns, meta.end_ns) == (95_000, 400_000)  # the last Iteration Start; Record Window End
    assert meta.devices[0]["kind"] == "gpu" and meta.devices[0]["index"] == 0
    assert t.problems == []


def test_the_python_path_gives_the_scanners_table(tmp_path, monkeypatch):
    a, b = _read(tmp_path, ALL, False, monkeypatch), _read(tmp_path, ALL, True, monkeypatch)
    for part in ("events", "memory"):
        for k, col in getattr(a, part).items():
            assert col.dtype == getattr(b, part)[k].dtype and np.array_equal(col, getattr(b, part)[k]), (part, k)
    assert a.strings.values == b.strings.values and repr(a.meta) == repr(b.meta)


def test_ids_given_as_text(tmp_path, monkeypatch):
    """pid / tid as text: digits read as the number ("stream 7" -> 7, " 12 " -> 12, "thread 3" -> 3); other
    text gets -2, -3, ... in first-sight order and names its process or thread; an int past int64 is text
    too; 19 digits are no number (-> a name)."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "Spans", "tid": "stream 7", "ts": 1, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "b", "pid": " 12 ", "tid": "thread 3", "ts": 2, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 2 ** 64, "tid": "Spans", "ts": 3, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "d", "pid": "1234567890123456789", "tid": 4, "ts": 4, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 5, "tid": "x", "ts": 5, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "f", "pid": 2 ** 60 + 1, "tid": 1, "ts": 6, "dur": 1},
           {"ph": "X", "cat": "cpu_op", "name": "g", "pid": -(2 ** 63), "tid": 2 ** 63 - 1, "ts": 7, "dur": 1}]
    t = _read(tmp_path, evs, False, monkeypatch)
    # first sight: "Spans" -2, then 2**64 as text "18446744073709551616" -3, the 19 digits -4, "x" -5
    # f's int pid is read one by one beside the texts, every digit kept (2**60 + 1 is no float64)
    # g: int64's two ends given as ints are numbers too
    assert t.events["pid"].tolist() == [-2, 12, -3, -4, 5, 2 ** 60 + 1, -(2 ** 63)]
    assert t.events["tid"].tolist() == [7, 3, -2, 4, -5, 1, 2 ** 63 - 1]
    assert t.meta.process_names == {-2: "Spans", -3: str(2 ** 64), -4: "1234567890123456789"}
    assert t.meta.thread_names == {"-3:-2": "Spans", "5:-5": "x"}


def test_times_past_2_to_the_43_are_read_from_their_text(tmp_path, monkeypatch):
    """A µs time past 2**43 (8,796,093,022,208 µs) with a fraction cannot be held exactly by float64 (its step
    there is 2**-9 µs, 1.95 ns): the chunk is read again as decimals. 8796093022208.124 µs is
    8_796_093_022_208_124 ns (float64 holds .123046875 µs: 123 ns); the memory record and the flow end in the
    same chunk are read exactly too; 0.0005 µs = 0.5 ns rounds half to even, to 0."""
    b = 8796093022208  # 2**43
    raw = ('{"traceEvents": ['
           f'{{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": {b}.124, "dur": 1.25}},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": {b + 1}, "dur": 0.0005}},'
           '{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": null, "dur": 1},'
           f'{{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": {b + 2}.125, "args": {{"Bytes": 8}}}},'
           '{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": null, "args": {"Bytes": 9}},'
           f'{{"ph": "f", "id": 1, "pid": 0, "tid": 1, "ts": {b + 3}.75, "cat": "ac2g"}},'
           f'{{"ph": "X", "cat": "something", "name": "k", "pid": 0, "tid": 1, "ts": {b + 3}.75, "dur": 1}},'
           '{"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1}'
           ']}')
    for scan in (False, True):
        t = _read(tmp_path, None, scan, monkeypatch, raw=raw)
        assert _texts(t, "name") == ["a", "b", "k"]
        assert t.events["ts"].tolist() == [8_796_093_022_208_124, 8_796_093_022_209_000, 8_796_093_022_211_750]
        assert t.events["dur"].tolist() == [1_250, 0, 1_000]
        # the unnamed category at the flow's end (pid 0, tid 1, same ns) is device work
        assert t.events["kind"].tolist() == [Kind.CPU_OP, Kind.CPU_OP, Kind.KERNEL]
        assert t.memory["ts"].tolist() == [8_796_093_022_210_125] and t.memory["bytes"].tolist() == [8]
        msgs = [p.message for p in t.problems]
        # "n" (no ts) and the memory record without ts: 2 missing; "far": out of range, told apart
        assert msgs == ["2 events without a usable name, ts or dur skipped",
                        "1 events with ts or dur out of range (beyond ±146 years) skipped"], msgs


def test_fields_of_other_types_are_coerced_one_by_one(tmp_path, monkeypatch):
    """The lenient path: numbers written as text are read, ints written as whole floats too, a fraction
    for an int arg or text that is no number leaves the arg absent, a grid with a text item is no grid,
    a bool pid is text, an event that is no object is malformed."""
    evs = [{"ph": "X", "cat": "kernel", "name": "k1", "pid": 2 ** 62, "tid": 1, "ts": "12.5", "dur": " 2 ",
            "args": {"device": "3", "stream": 7.0, "correlation": 1.5, "External id": "x", "grid": [1, "a"],
                     "blocks per SM": "2.5", "registers per thread": "many", "bytes": True, "dtype": 5}},
           {"ph": "X", "cat": "kernel", "name": "k2", "pid": True, "tid": 1, "ts": 20, "dur": "nan",
            "args": {"device": 1}},
           {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": [1], "ts": 30, "dur": 1,
            "args": {"grid": [2, 3], "stream": "1e3", "device": "-inf"}},
           {"ph": "X", "cat": 5, "name": 6, "pid": 0, "tid": 1, "ts": 40, "dur": 1},
           {"ph": "X", "cat": "kernel", "name": "k4", "pid": 0, "tid": 1, "ts": 50, "dur": 1,
            "args": {"stream": 2 ** 70}},
           {"ph": "X", "cat": "kernel", "name": "k5", "pid": 0, "tid": 1, "ts": 60, "dur": "sNaN"},
           7, "x"]
    t = _read(tmp_path, evs, False, monkeypatch)
    ev = t.events
    # k2's "nan" and k5's "sNaN" durations are no time (float("sNaN") raises): skipped; 7 and "x" are malformed
    assert _texts(t, "name") == ["k1", "k3", "6", "k4"]
    assert ev["ts"].tolist() == [12_500, 30_000, 40_000, 50_000] and ev["dur"].tolist() == [2_000, 1_000, 1_000, 1_000]
    assert _texts(t, "cat") == ["kernel", "kernel", "5", "kernel"]
    # k3: "-inf" is no int, so no device arg, and its pid (0, below 1024) stands in
    assert ev["device"].tolist()[:2] == [3, 0]
    # k1's pid: 19 digits, in int64, beside k2's text pid "True": the number, not a name
    assert ev["pid"].tolist()[0] == 2 ** 62
    # k4 (typed: msgspec takes any int): 2**70 is no int64, so absent, and a kernel without a stream takes its tid
    assert ev["stream"].tolist() == [7, 1000, NONE, 1]
    assert ev["correlation"].tolist() == [NONE] * 4 and ev["external_id"].tolist() == [NONE] * 4
    assert ev["blocks"].tolist() == [NONE, 6, NONE, NONE]
    assert ev["bytes"].tolist() == [NONE] * 4  # k1's "bytes": true is no number
    # text ids in first sight: k2's pid True as "True" -2 (k2 itself is dropped later), k3's tid [1] as "[1]" -3
    assert ev["tid"].tolist()[1] == -3 and t.meta.thread_names.get("0:-3") == "[1]"
    assert t.metrics["blocks_per_sm"].tolist()[0] == 2.5 and "registers_per_thread" not in t.metrics
    assert [p.message for p in t.problems] == ["2 events without a usable name, ts or dur skipped",
                                               "2 malformed events skipped"]


def test_negative_durations_and_missing_names(tmp_path, monkeypatch):
    """A negative duration is set to 0 and counted; an event without a name is skipped and counted with the
    ones without a time; the counts are per event, over chunks."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": -5},
           {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": -0.5},
           {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 3, "dur": -1},
           {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 4}]
    for scan in (False, True):
        t = _read(tmp_path, evs, scan, monkeypatch)
        assert _texts(t, "name") == ["a", "b"] and t.events["dur"].tolist() == [0, 0]
        # the unnamed one's -1 is not counted: it is skipped
        assert [p.message for p in t.problems] == ["2 events without a usable name, ts or dur skipped",
                                                   "2 negative durations set to 0"]


def test_more_args_and_placements_by_hand(tmp_path, monkeypatch):
    """The 2021 "Input dims" where "Input Dims" is absent; a group described "undefined" named by its name
    alone; no bytes from an unknown dtype, from elements past 2**50, or over bytes the file gives; an
    unnamed category placed on the device by a launch flow's end (pid 3 has no label) but not by a flow of
    another category ("fwdbwd"), and left OTHER on the host; 18 digits of text are a number, 19 are not."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": "old", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
            "args": {"Input dims": [[5]], "Input type": ["float"]}},
           {"ph": "X", "cat": "kernel", "name": "c1", "pid": 0, "tid": 2, "ts": 2, "dur": 1,
            "args": {"Process Group Name": "7", "Process Group Description": "undefined", "dtype": "Int128",
                     "In msg nelems": 10}},
           {"ph": "X", "cat": "kernel", "name": "c2", "pid": 0, "tid": 2, "ts": 3, "dur": 1,
            "args": {"Process Group Name": "7", "dtype": "float", "In msg nelems": 2 ** 50}},
           {"ph": "X", "cat": "kernel", "name": "c3", "pid": 0, "tid": 2, "ts": 4, "dur": 1,
            "args": {"Process Group Name": "7", "dtype": "Double", "In msg nelems": 3, "bytes": 5}},
           {"ph": "X", "cat": "kernel", "name": "c4", "pid": 0, "tid": 2, "ts": 5, "dur": 1,
            "args": {"Process Group Name": "7", "dtype": "Double", "In msg nelems": 3}},
           {"ph": "X", "cat": "gpu_thing", "name": "by_flow", "pid": 3, "tid": 4, "ts": 6, "dur": 1},
           {"ph": "f", "id": 5, "pid": 3, "tid": 4, "ts": 6, "cat": "ac2g", "bp": "e"},
           {"ph": "X", "cat": "gpu_thing", "name": "other_flow", "pid": 3, "tid": 4, "ts": 7, "dur": 1},
           {"ph": "f", "id": 6, "pid": 3, "tid": 4, "ts": 7, "cat": "fwdbwd", "bp": "e"},
           {"ph": "X", "cat": "gpu_thing", "name": "Memset x", "pid": 3, "tid": "123456789012345678", "ts": 8,
            "dur": 1},
           {"ph": "f", "id": 7, "pid": 3, "tid": 123456789012345678, "ts": 8, "cat": "async"}]
    for scan in (False, True):
        t = _read(tmp_path, evs, scan, monkeypatch)
        ev = t.events
        assert _texts(t, "name") == ["old", "c1", "c2", "c3", "c4", "by_flow", "other_flow", "Memset x"]
        assert _texts(t, "shapes")[0] == "[[5]]" and _texts(t, "args")[0] == '{"types":["float"]}'
        assert _texts(t, "group")[1:5] == ["7"] * 4
        # c1: Int128 has no size; c2: 2**50 elements refused; c3: its own 5 bytes; c4: 3 x 8 (double) = 24
        assert ev["bytes"].tolist()[1:5] == [NONE, NONE, 5, 24]
        assert ev["kind"].tolist()[5:] == [Kind.KERNEL, Kind.OTHER, Kind.MEMSET], scan
        assert ev["tid"].tolist()[7] == 123456789012345678


def test_coerced_events_in_an_exact_chunk_keep_their_decimal_time(tmp_path, monkeypatch):
    """In a chunk read as decimals, an event the typed decode refuses (a pid that is a list) keeps the time
    its text says: 8796093022211.124 µs -> 8_796_093_022_211_124 ns (through float64 ns it would be ...123);
    a time given as text is read as a decimal; an absent duration skips the event; its args' numbers stay
    numbers (the shapes' text, the flops)."""
    b = 8796093022208  # 2**43
    raw = ('{"traceEvents": ['
           f'{{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": {b}.124, "dur": 1}},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "b", "pid": [1], "tid": 1, "ts": {b + 3}.124, "dur": 2.25, '
           '"args": {"Input Dims": [[2.5, 3]], "flops": 1.5}},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": "{b + 4}.0625", "dur": "3"}},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "d", "pid": [2], "tid": 1, "ts": {b + 5}}},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "e", "pid": [3], "tid": 1, "ts": {b + 6}, "dur": 0.5}}'
           ']}')
    for scan in (False, True):
        t = _read(tmp_path, None, scan, monkeypatch, raw=raw)
        assert _texts(t, "name") == ["a", "b", "c", "e"]
        assert t.events["ts"].tolist() == [8_796_093_022_208_124, 8_796_093_022_211_124, 8_796_093_022_212_062,
                                           8_796_093_022_214_000]
        assert t.events["dur"].tolist() == [1_000, 2_250, 3_000, 500]  # e: an int time and a fraction
        assert t.meta.process_names == {-2: "[1]", -4: "[3]"}  # d's [2] is -3, d itself skipped
        assert _texts(t, "shapes") == [None, "[[2.5, 3]]", None, None] and t.metrics["flops"].tolist()[1] == 1.5
        assert [p.message for p in t.problems] == ["1 events without a usable name, ts or dur skipped"]


def test_memory_records_out_of_range_or_without_time_are_skipped_and_counted(tmp_path, monkeypatch):
    """A memory record's time obeys the events' bound (|ns| < 2**62, 4,611,686,018,427,387.904 µs): 1e300 µs
    and 5e15 µs are out of range (before, 1e300 wrapped to ts 0 and 5e15 was kept at 5e18 ns), told as such;
    a record without a time is skipped as missing; in a chunk read as decimals the same, and a time past 2**53
    ns keeps its last digit (9007199254740.993 µs = 9_007_199_254_740_993 ns, which float64 cannot hold)."""
    mem = [{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1e300, "args": {"Bytes": 8}},
           {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5e15, "args": {"Bytes": 9}},
           {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": None, "args": {"Bytes": 11}},
           {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Bytes": 10}}]
    op = {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    told = ["1 events without a usable name, ts or dur skipped",
            "2 events with ts or dur out of range (beyond ±146 years) skipped"]
    # float64 µs are held to |µs| < 4,611,686,018,427,387 (2**62 // 1000), strictly, as events are; an event
    # out of range in the same chunk adds to the same count
    edge = dict(mem[0], ts=4611686018427387)
    far = dict(op, ts=1e300)
    for scan in (False, True):
        t = _read(tmp_path, [op, far] + mem + [edge], scan, monkeypatch)
        assert t.memory["ts"].tolist() == [2_000] and t.memory["bytes"].tolist() == [10]
        assert [p.message for p in t.problems] == [told[0], told[1].replace("2 events", "4 events")]
        exact = dict(op, ts=8796093022208.5)  # past 2**43 with a fraction: the chunk is read as decimals
        t = _read(tmp_path, [exact] + mem[:3] + [dict(mem[3], ts="@BIG@")], scan, monkeypatch,
                  raw=json.dumps({"traceEvents": [exact] + mem[:3] + [dict(mem[3], ts="@BIG@")]})
                  .replace('"@BIG@"', "9007199254740.993"))
        assert t.events["ts"].tolist() == [8_796_093_022_208_500]
        assert t.memory["ts"].tolist() == [9_007_199_254_740_993] and t.memory["bytes"].tolist() == [10]
        assert [p.message for p in t.problems] == told


def test_text_args_of_a_coerced_event(tmp_path, monkeypatch):
    """Text args of an event the typed decode refuses (its ts is text): a number is written as its text, a
    null is absent, text stays text."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": "op1", "pid": 1, "tid": 1, "ts": "70", "dur": 1,
            "args": {"Call stack": 12}},
           {"ph": "X", "cat": "cpu_op", "name": "op2", "pid": 1, "tid": 1, "ts": "80", "dur": 1,
            "args": {"Call stack": None, "Process Group Name": "pg", "Process Group Description": None}},
           {"ph": "X", "cat": "cpu_op", "name": "@NUMBER@", "pid": 1, "tid": 1, "ts": 90, "dur": 1}]
    raw = json.dumps({"traceEvents": evs}).replace('"@NUMBER@"', "1e5")
    t = _read(tmp_path, None, False, monkeypatch, raw=raw)
    # a number for a name (1e5 in the file) is written as Python writes the float it is, "100000.0" (the chunk is
    # not read as decimals, which would write "1E+5")
    assert _texts(t, "name") == ["op1", "op2", "100000.0"]
    assert _texts(t, "stack") == ["12", None, None] and _texts(t, "group") == [None, "pg", None]


def test_an_arg_past_float_range_costs_that_arg_only(tmp_path, monkeypatch):
    """flops 1e400 is no float: the event is decoded field by field, its args too, so only flops is lost
    (the op keeps its External id 5 and no flops column is made: the one op has none)."""
    raw = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, '
           '"args": {"flops": 1e400, "External id": 5}}]}')
    t = _read(tmp_path, None, False, monkeypatch, raw=raw)
    assert t.events["external_id"].tolist() == [5] and "flops" not in t.metrics and t.problems == []


def test_a_coerced_event_without_cat_pid_tid_or_name(tmp_path, monkeypatch):
    """An event the typed decode refuses (its ts is text) and that gives no cat, pid or tid takes the typed
    defaults (cat "", pid 0, tid 0); one without a name is skipped and counted."""
    evs = [{"ph": "X", "name": "a", "ts": "1", "dur": 1}, {"ph": "X", "cat": "cpu_op", "ts": "2", "dur": 1}]
    t = _read(tmp_path, evs, False, monkeypatch)
    assert _texts(t, "name") == ["a"] and _texts(t, "cat") == [""]
    assert t.events["pid"].tolist() == [0] and t.events["tid"].tolist() == [0]
    assert [p.message for p in t.problems] == ["1 events without a usable name, ts or dur skipped"]


@pytest.mark.parametrize("scan", [False, True])
def test_times_at_the_float_bound_and_flows_at_epoch_times(tmp_path, monkeypatch, scan):
    """An Iteration Start at exactly 4,611,686,018,427,387 µs (2**62 // 1000, the float path's strict bound) is
    out of range, so the window starts at the first event; a launch flow's end at an epoch time
    (1694128201435377 µs = 1_694_128_201_435_377_000 ns, not a multiple of float64's 256 ns step there) finds
    the unnamed-category event at the same ns (so it is device work)."""
    evs = [{"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1,
            "ts": 4611686018427387},
           {"ph": "X", "cat": "gpu_thing", "name": "k", "pid": 3, "tid": 4, "ts": 1694128201435377, "dur": 1},
           {"ph": "f", "id": 5, "pid": 3, "tid": 4, "ts": 1694128201435377, "cat": "ac2g", "bp": "e"}]
    t = _read(tmp_path, evs, scan, monkeypatch)
    assert t.events["kind"].tolist() == [Kind.KERNEL]
    assert t.meta.start_ns == 1_694_128_201_435_377_000


def test_int_args_beside_one_past_int64_keep_their_every_digit(tmp_path, monkeypatch):
    """A correlation past int64 (2**70) makes the column's ints go one by one: it becomes absent, and the others
    keep every digit (2**60 + 1 is no float64), both ends of int64 included (-2**63 and 2**63 - 1)."""
    ids = [2 ** 70, 2 ** 60 + 1, -(2 ** 63), 2 ** 63 - 1]
    evs = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 1, "ts": i, "dur": 1,
            "args": {"correlation": c}} for i, c in enumerate(ids)]
    t = _read(tmp_path, evs, False, monkeypatch)
    assert t.events["correlation"].tolist() == [NONE, 2 ** 60 + 1, -(2 ** 63), 2 ** 63 - 1]


def test_decimal_times_at_the_ns_bound(tmp_path, monkeypatch):
    """Read as decimals (the chunk holds 8796093022208.5 µs, past 2**43 with a fraction), ±4,611,686,018,427,387.904
    µs is ±2**62 ns exactly: out of range (|ns| < 2**62), told; ±...387.903 µs is in, to the ns (the float path
    alone would refuse it: its bound is the whole µs below). A mark or a flow end out of range is no event: it is
    dropped without a word."""
    raw = ('{"traceEvents": [' + ",".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "{n}", "pid": 1, "tid": 1, "ts": {ts}, "dur": 0}}'
        for n, ts in (("lo", "-4611686018427387.904"), ("lo_in", "-4611686018427387.903"),
                      ("t", "8796093022208.5"), ("hi_in", "4611686018427387.903"), ("hi", "4611686018427387.904")))
        + ', {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 5, "dur": 4611686018427387.904}'
        + ', {"ph": "i", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 4611686018427387.904}'
        + ', {"ph": "f", "id": 1, "cat": "ac2g", "pid": 1, "tid": 1, "ts": -4611686018427387.904}]}')
    for scan in (False, True):
        t = _read(tmp_path, None, scan, monkeypatch, raw=raw)
        assert _texts(t, "name") == ["lo_in", "t", "hi_in"]
        assert t.events["ts"].tolist() == [-(2 ** 62) + 1, 8_796_093_022_208_500, 2 ** 62 - 1]
        # lo, hi and d (its duration is 2**62 ns): 3
        assert [p.message for p in t.problems] == ["3 events with ts or dur out of range (beyond ±146 years) skipped"]
