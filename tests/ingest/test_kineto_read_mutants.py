"""The Kineto reader's table side (ingest/kineto/read.py), fast and by hand, for mutation testing: what
`finish` makes of the parts (the device and stream stand-ins, the sort, the kinds of unnamed categories,
communication kernels), the window (`_window_of`), the metadata (`_meta_of`: environment, ranks, host,
devices, names), the problems told (`_report`), the collectives' bytes, the memory records' devices, the
scanner's side (`add_scanned` and its helpers, each trace read both ways) and `read_kineto`'s refusals.
Small traces written here; every expected value worked out in the comments, never by the reader."""
import json
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from canning_tb.ingest import _json
from canning_tb.ingest.kineto import parallel as kineto_parallel
from canning_tb.ingest.kineto import read as kineto_read
from canning_tb.ingest.table import NONE, InputError, Kind, Strings

BOTH = pytest.mark.parametrize("scan", [False, True])


def _read(tmp_path, monkeypatch, events=None, scan=False, top=None, raw=None):
    monkeypatch.setenv("CANNING_KINETO_SCAN", "1" if scan else "0")
    path = tmp_path / "t.pt.trace.json"
    if raw is None:
        raw = json.dumps({**(top or {}), "traceEvents": events})
    path.write_bytes(raw.encode() if isinstance(raw, str) else raw)
    return kineto_read.read_kineto(str(path))


def _x(name, ts, dur=1, cat="cpu_op", pid=1, tid=1, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _texts(t, col, part="events"):
    return [t.strings[i] for i in getattr(t, part)[col].tolist()]


def _msgs(t):
    return [p.message for p in t.problems]


@BOTH
def test_device_and_stream_stand_ins(tmp_path, monkeypatch, scan):
    """A device event without a device arg takes its pid as device when 0 <= pid < 1024 (1023 yes, 1024 no, a
    text pid -2 no); without a stream its tid when tid >= 0 (0 yes, a text tid -2 no); host events never."""
    evs = [_x("k0", 1, cat="kernel", pid=1023, tid=0),
           _x("k1", 2, cat="kernel", pid=1024, tid=5),
           _x("k2", 3, cat="gpu_memcpy", pid="Spans", tid="x"),
           _x("k3", 4, cat="gpu_memset", pid=0, tid=3, device=7, stream=9),
           _x("op", 5, pid=3, tid=4),
           _x("k4", 6, cat="kernel", pid=5, tid=6, device=0, stream=0)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    # k4: its own device 0 and stream 0 stand (not its pid 5, tid 6)
    assert t.events["device"].tolist() == [1023, NONE, NONE, 7, NONE, 0]
    assert t.events["stream"].tolist() == [0, 5, NONE, 9, NONE, 0]
    assert t.events["kind"].tolist() == [Kind.KERNEL, Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.CPU_OP, Kind.KERNEL]


@BOTH
def test_rows_sorted_by_time_ties_in_file_order(tmp_path, monkeypatch, scan):
    """The rows come sorted by ts, ties in the file's order (a stable sort): 40 events at ts 2, 1, 2, 1, ...
    (names e0..e39) give first the odd ones (ts 1) in order, then the even ones; the memory records too."""
    evs = [_x(f"e{i}", 2 - i % 2, cat="cpu_op" if i % 3 else "user_annotation") for i in range(40)]
    mem = [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2 - i % 2, "args": {"Bytes": i}}
           for i in range(40)]
    t = _read(tmp_path, monkeypatch, evs + mem, scan)
    odd, even = list(range(1, 40, 2)), list(range(0, 40, 2))
    # the categories are parts of their own (user_annotation for i % 3 == 0): the sort puts them back in
    # order of ts, and within a ts in order of parts then rows (user_annotation first: e0 is the first event)
    cpu = [i for i in range(40) if i % 3]
    ua = [i for i in range(40) if i % 3 == 0]
    want = [i for i in ua if i % 2] + [i for i in cpu if i % 2] + [i for i in ua if not i % 2] + \
        [i for i in cpu if not i % 2]
    assert _texts(t, "name") == [f"e{i}" for i in want]
    assert t.memory["bytes"].tolist() == odd + even
    assert t.memory["ts"].tolist() == [1000] * 20 + [2000] * 20


def test_rows_already_in_order_stay(tmp_path, monkeypatch):
    """Events already in ts order in one part are kept as they are (ts 1, 2, 3 -> e0, e1, e2)."""
    t = _read(tmp_path, monkeypatch, [_x("e0", 1), _x("e1", 2), _x("e2", 3)])
    assert _texts(t, "name") == ["e0", "e1", "e2"] and t.events["ts"].tolist() == [1000, 2000, 3000]


@BOTH
def test_kinds_of_profiler_steps_and_communication(tmp_path, monkeypatch, scan):
    """ProfilerStep#N as a cpu_op is an annotation (not as a python function); a kernel is communication by
    its name (ncclDevKernel_AllReduce), its process group, or an external id shared with a collective host op
    (record_param_comms exactly, c10d::, nccl: at the start) that is a cpu_op or annotation, not a runtime
    call; a memcpy named like a collective stays a memcpy."""
    evs = [_x("ProfilerStep#3", 1),
           _x("ProfilerStep#4", 2, cat="python_function"),
           _x("record_param_comms", 3, **{"External id": 11}),
           _x("record_param_comms_x", 4, **{"External id": 12}),
           _x("c10d::allreduce_", 5, cat="user_annotation", **{"External id": 13}),
           _x("xnccl:all_reduce", 6, **{"External id": 14}),
           _x("nccl:broadcast", 7, cat="cuda_runtime", **{"External id": 15}),
           _x("ka", 8, cat="kernel", pid=0, **{"External id": 11}),
           _x("kb", 9, cat="kernel", pid=0, **{"External id": 12}),
           _x("kc", 10, cat="kernel", pid=0, **{"External id": 13}),
           _x("kd", 11, cat="kernel", pid=0, **{"External id": 14}),
           _x("ke", 12, cat="kernel", pid=0, **{"External id": 15}),
           _x("ncclDevKernel_AllReduce_Sum_f32", 13, cat="kernel", pid=0),
           _x("kf", 14, cat="kernel", pid=0, **{"Process Group Name": "3"}),
           _x("ncclDevKernel_AllReduce_Sum_f32", 15, cat="gpu_memcpy", pid=0),
           _x("kg", 16, cat="kernel", pid=0)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    K, C = Kind.KERNEL, Kind.COMM_KERNEL
    assert t.events["kind"].tolist() == [Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.CPU_OP, Kind.CPU_OP,
                                         Kind.USER_ANNOTATION, Kind.CPU_OP, Kind.RUNTIME,
                                         C, K, C, K, K, C, C, Kind.MEMCPY, K]


@BOTH
def test_unnamed_categories_by_where_they_sit(tmp_path, monkeypatch, scan):
    """An unnamed category (and collective_comm) is device work on a device process ("GPU 1", not "CPU"),
    at a launch flow's end, or correlated to a runtime launch from a pid that is no host's (no host event
    there, not labelled " cpu "); else OTHER. On the device its kind comes from its name: "MemCpy ..." a copy
    (any case), "memset..." a fill, "x memcpy" a kernel; collective_comm a communication kernel."""
    meta = [{"ph": "M", "name": "process_labels", "pid": 5, "args": {"labels": "GPU 1"}},
            {"ph": "M", "name": "process_labels", "pid": 6, "args": {"labels": " cpu "}},
            {"ph": "M", "name": "process_labels", "pid": 7, "args": {"labels": "CPU"}}]
    evs = [_x("launch", 1, cat="cuda_runtime", correlation=31),
           _x("launch_no_corr", 2, cat="cuda_runtime"),
           _x("MemCpy DtoD", 3, cat="gpu_stuff", pid=5),
           _x("memset0", 4, cat="gpu_stuff", pid=5),
           _x("x memcpy", 5, cat="gpu_stuff", pid=5),
           _x("allreduce", 6, cat="collective_comm", pid=5),
           _x("allreduce_host", 7, cat="collective_comm", pid=1),
           _x("corr", 8, cat="gpu_stuff", pid=9, correlation=31),
           _x("corr_on_host", 9, cat="gpu_stuff", pid=1, correlation=31),
           _x("corr_on_cpu_label", 10, cat="gpu_stuff", pid=6, correlation=31),
           _x("corr_unknown", 11, cat="gpu_stuff", pid=9, correlation=32),
           _x("no_corr", 12, cat="gpu_stuff", pid=9),
           _x("nothing", 13, cat="gpu_stuff", pid=8, tid=2),
           {"ph": "f", "id": 1, "pid": 8, "tid": 3, "ts": 13, "cat": "ac2g"}]  # a flow end elsewhere (tid 3)
    t = _read(tmp_path, monkeypatch, meta + evs, scan)
    O = Kind.OTHER
    assert _texts(t, "name") == ["launch", "launch_no_corr", "MemCpy DtoD", "memset0", "x memcpy", "allreduce",
                                 "allreduce_host", "corr", "corr_on_host", "corr_on_cpu_label", "corr_unknown",
                                 "no_corr", "nothing"]
    # the runtime calls keep their kind: only the unnamed categories and collective_comm are placed
    assert t.events["kind"].tolist() == [Kind.RUNTIME, Kind.RUNTIME, Kind.MEMCPY, Kind.MEMSET, Kind.KERNEL,
                                         Kind.COMM_KERNEL, O, Kind.KERNEL, O, O, O, O, O]
    # the device rows take their pid and tid as device and stream; OTHER rows keep NONE
    assert t.events["device"].tolist()[2:8] == [5, 5, 5, 5, NONE, 9]


@BOTH
def test_a_label_pid_alone_is_host_for_correlation(tmp_path, monkeypatch, scan):
    """A pid labelled "CPU" counts as a host pid even with no host event on it: a correlated unnamed event
    there stays OTHER; on pid 9 (no label, no host event) it is a kernel."""
    evs = [{"ph": "M", "name": "process_labels", "pid": 7, "args": {"labels": "CPU"}},
           _x("launch", 1, cat="cuda_runtime", pid=1, correlation=4),
           _x("a", 2, cat="gpu_stuff", pid=7, correlation=4),
           _x("b", 3, cat="gpu_stuff", pid=9, correlation=4)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.events["kind"].tolist() == [Kind.RUNTIME, Kind.OTHER, Kind.KERNEL]


@BOTH
def test_flow_ends_place_only_their_own_event(tmp_path, monkeypatch, scan):
    """A launch flow's end (ac2g) at pid 3, tid 4, 6 µs places the unnamed event there only: not one at the
    same time on another tid, nor on the same tid 1 ns later; a flow end without a time places nothing."""
    evs = [_x("a", 6, cat="gpu_stuff", pid=3, tid=4),
           _x("b", 6, cat="gpu_stuff", pid=3, tid=5),
           _x("c", 6.001, cat="gpu_stuff", pid=3, tid=4),
           {"ph": "f", "id": 1, "pid": 3, "tid": 4, "ts": 6, "cat": "ac2g", "bp": "e"},
           {"ph": "f", "id": 2, "pid": 3, "tid": 6, "cat": "ac2g", "bp": "e"},
           _x("d", 7, cat="gpu_stuff", pid=3, tid=6)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "name") == ["a", "b", "c", "d"]
    assert t.events["kind"].tolist() == [Kind.KERNEL, Kind.OTHER, Kind.OTHER, Kind.OTHER]


@BOTH
def test_the_environment_ranks_and_host(tmp_path, monkeypatch, scan):
    """The environment keeps the top-level scalars (str(True) is "True", 1.5 "1.5"), not lists, objects or
    traceEvents, and a value of 4,096 bytes or more (4,094 letters in quotes: 4,096) but 4,095 bytes is kept;
    distributedInfo's scalars are prefixed; the rank and world size are read from it, digits as text too;
    the host from host_name, else hostname."""
    top = {"schemaVersion": 1, "displayTimeUnit": "ms", "ratio": 1.5, "flag": True, "lst": [1], "obj": {"a": 1},
           "long": "a" * 4094, "almost": "b" * 4093, "hostname": "h2",
           "distributedInfo": {"backend": "nccl", "rank": " 3 ", "world_size": 8, "pg": {"x": 1}, "ok": False}}
    t = _read(tmp_path, monkeypatch, [_x("a", 1)], scan, top=top)
    env = t.meta.environment
    assert env == {"schemaVersion": "1", "displayTimeUnit": "ms", "ratio": "1.5", "flag": "True",
                   "almost": "b" * 4093, "hostname": "h2", "distributed.backend": "nccl",
                   "distributed.rank": " 3 ", "distributed.world_size": "8", "distributed.ok": "False"}
    assert (t.meta.rank, t.meta.world_size, t.meta.host) == (3, 8, "h2")
    assert t.meta.format == "kineto" and t.meta.source_files == [str(tmp_path / "t.pt.trace.json")]
    assert t.problems == []
    t = _read(tmp_path, monkeypatch, [_x("a", 1)], scan, top={"host_name": "h1", "hostname": "h2"})
    assert (t.meta.host, t.meta.rank, t.meta.world_size) == ("h1", 0, 1)
    t = _read(tmp_path, monkeypatch, [_x("a", 1)], scan, top={"host_name": ""})
    assert t.meta.host == "" and t.meta.environment == {"host_name": ""}


@pytest.mark.parametrize("dist, rank, world, told", [
    ({"rank": 0, "world_size": 2 ** 31}, 0, 2 ** 31, []),
    ({"rank": 2 ** 31 - 1, "world_size": 0}, 2 ** 31 - 1, 1,
     ["distributedInfo.world_size 0 is no number of processes: ignored"]),
    ({"rank": 1, "world_size": 2 ** 31 + 1}, 1, 1,
     ["distributedInfo.world_size 2147483649 is no number of processes: ignored"]),
    ({"world_size": 1}, 0, 1, ["no rank in distributedInfo: assuming rank 0"]),
    ({"rank": True, "world_size": "x"}, 0, 1, ["no rank in distributedInfo: assuming rank 0"]),
    ({"rank": 1.0, "world_size": "4"}, 0, 4, ["no rank in distributedInfo: assuming rank 0"]),
])
def test_ranks_and_world_sizes_at_their_edges(tmp_path, monkeypatch, dist, rank, world, told):
    """world_size in 1..2**31 is kept, else 1 and a warning; rank in 0..2**31 - 1; a bool, a float or other
    text is no number (the world size then 1, the rank 0 with a warning)."""
    t = _read(tmp_path, monkeypatch, [_x("a", 1)], top={"distributedInfo": dist})
    assert (t.meta.rank, t.meta.world_size) == (rank, world)
    assert _msgs(t) == told
    assert all((p.severity, p.file) == ("warning", str(tmp_path / "t.pt.trace.json")) for p in t.problems)


@pytest.mark.parametrize("rank, shown", [(-1, "-1"), (2 ** 31, "2147483648"), ("9" * 65, "of more than 38 digits")])
def test_a_rank_out_of_range_is_refused(tmp_path, monkeypatch, rank, shown):
    """A rank below 0 or from 2**31 stops the read; 65 digits are read as a stand-in past every bound."""
    with pytest.raises(InputError) as err:
        _read(tmp_path, monkeypatch, [_x("a", 1)], top={"distributedInfo": {"rank": rank}})
    assert str(err.value) == f"{tmp_path / 't.pt.trace.json'}: distributedInfo.rank {shown}: not a rank (0 to 2147483647)"


def test_int_reads_ints_and_digit_texts_only():
    """_int: an int as it is, a bool or float the default, text of digits (spaces and one leading minus
    allowed) as its number, past 64 characters a stand-in of 2**256 with the sign; other text the default."""
    i = kineto_read._int
    assert [i(5, 0), i(True, 7), i(False, 7), i(2.0, 7), i(" -12 ", 0), i("12", 0), i("1.5", 7), i("", 7),
            i(None, 7), i("-", 7), i("X5", 7)] == [5, 7, 7, 7, -12, 12, 7, 7, 7, 7, 7]
    assert i("1" * 64, 0) == int("1" * 64)
    assert i("1" * 65, 0) == 1 << 256 and i("-" + "1" * 64, 0) == -(1 << 256)


def test_devices_from_device_properties():
    """deviceProperties: each object a device (not a list item that is no object); AMD by its name's words or
    by any "hip..." string, else cuda; the index from id (else its place among the devices), the memory, the
    compute capability "major.minor" (minor 0 when absent) and the SM count where given."""
    table = SimpleNamespace(strings=Strings(["cudaLaunchKernel"]))
    props = [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 100, "computeMajor": 8, "computeMinor": 6,
              "numSms": 108},
             "junk",
             {"name": "AMD Instinct MI250X", "computeMajor": 9},
             {"id": "3", "name": "Radeon Pro"},
             {"name": "x Instinct", "numSms": "no"},
             {"name": "AMD MI300X"}]
    devs = kineto_read._devices(props, table)
    assert devs == [
        {"kind": "cuda", "index": 0, "name": "NVIDIA A100", "memory": 100, "compute_capability": "8.6",
         "sm_count": 108},
        {"kind": "rocm", "index": 1, "name": "AMD Instinct MI250X", "memory": NONE, "compute_capability": "9.0"},
        {"kind": "rocm", "index": 3, "name": "Radeon Pro", "memory": NONE},
        {"kind": "rocm", "index": 3, "name": "x Instinct", "memory": NONE, "sm_count": NONE},
        {"kind": "rocm", "index": 4, "name": "AMD MI300X", "memory": NONE}]
    assert kineto_read._devices({"a": 1}, table) == [] and kineto_read._devices(None, table) == []
    # a hip string among the first 100,000 makes every device rocm; the 100,001st is not looked at
    hip = SimpleNamespace(strings=Strings(["x"] * 99_999 + ["hipLaunchKernel"]))
    assert kineto_read._devices([{"name": "GPU"}], hip)[0]["kind"] == "rocm"
    far = SimpleNamespace(strings=SimpleNamespace(values=["x"] * 100_000 + ["hipLaunchKernel"]))
    assert kineto_read._devices([{"name": "GPU"}], far)[0]["kind"] == "cuda"
    assert kineto_read._devices([{}], table) == [{"kind": "cuda", "index": 0, "name": "", "memory": NONE}]


@BOTH
def test_devices_by_labels_where_no_properties(tmp_path, monkeypatch, scan):
    """Without deviceProperties, the labelled processes that hold device work are the devices, by pid
    ("GPU 1" on pid 4 holds a kernel, " MTIA  0 " on pid 2 a copy; "GPU 2" on pid 6 holds only a host op,
    "CPU" on pid 1 is no device label); with deviceProperties those win."""
    meta = [{"ph": "M", "name": "process_labels", "pid": 4, "args": {"labels": "GPU 1"}},
            {"ph": "M", "name": "process_labels", "pid": 2, "args": {"labels": " MTIA  0 "}},
            {"ph": "M", "name": "process_labels", "pid": 6, "args": {"labels": "GPU 2"}},
            {"ph": "M", "name": "process_labels", "pid": 1, "args": {"labels": "CPU"}}]
    evs = meta + [_x("k", 1, cat="kernel", pid=4), _x("c", 2, cat="gpu_memcpy", pid=2), _x("op", 3, pid=6),
                  _x("op2", 4, pid=1)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.meta.devices == [{"kind": "mtia", "index": 0, "name": "MTIA  0"},
                              {"kind": "gpu", "index": 1, "name": "GPU 1"}]
    t = _read(tmp_path, monkeypatch, evs, scan, top={"deviceProperties": [{"id": 0, "name": "A"}]})
    assert t.meta.devices == [{"kind": "cuda", "index": 0, "name": "A", "memory": NONE}]


@BOTH
def test_names_of_text_ids_and_metadata(tmp_path, monkeypatch, scan):
    """Text pids and tids name their process and thread (-2, -3 ... in first sight), unless metadata names
    them (the metadata's name wins); a text pid in metadata gets the same id; process_labels with no labels
    but a name names nothing; a metadata event without args names nothing."""
    evs = [{"ph": "M", "name": "process_name", "pid": "Spans", "args": {"name": "my spans"}},
           {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": "t1", "args": {"name": "my thread"}},
           {"ph": "M", "name": "process_labels", "pid": 3, "args": {"name": "no labels"}},
           {"ph": "M", "name": "process_name", "pid": 4},
           {"ph": "M", "name": "other_meta", "pid": 5, "args": {"name": "x"}},
           _x("a", 1, pid="Spans", tid="t1"),
           _x("b", 2, pid="Other", tid="t2"),
           _x("c", 3, pid=1, tid="t3")]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.events["pid"].tolist() == [-2, -4, 1] and t.events["tid"].tolist() == [-3, -5, -6]
    assert t.meta.process_names == {-2: "my spans", -4: "Other"}
    assert t.meta.thread_names == {"-2:-3": "my thread", "-4:-5": "t2", "1:-6": "t3"}


@BOTH
def test_window_from_the_trace_span(tmp_path, monkeypatch, scan):
    """A "Trace" span (its name "Trace" too, so the category's string id is 0) gives the window: its start
    10 µs and end 10 + 100 = 110 µs, whatever the events outside it; an Iteration Start (20 µs) is the start
    instead; a Record Window End within a day of the start (then 200 µs) the end."""
    span = _x("Trace", 10, 100, cat="Trace")
    evs = [span, _x("a", 5, 1), _x("b", 300, 50)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (10_000, 110_000)
    marks = [{"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1, "ts": 20},
             {"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 200}]
    t = _read(tmp_path, monkeypatch, evs + marks, scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (20_000, 200_000)


@BOTH
def test_window_end_within_a_day(tmp_path, monkeypatch, scan):
    """The Record Window End is the end when 0 <= end - start <= 1 day (86,400,000,000 µs) of the Iteration
    Start (5 µs): at the start or a day after it, yes; 1 µs before the start or a day and 1 µs after, no (the
    events' end, 6 + 3 = 9 µs, stands). Without an Iteration Start or span it is the end as it is (100 µs), if not
    before the first event."""
    day = 86_400_000_000
    start = {"ph": "i", "s": "t", "name": "Iteration Start: PyTorch Profiler", "pid": 1, "tid": 1, "ts": 5}
    for end_us, want in ((5, 5_000), (5 + day, (5 + day) * 1000), (4, 9_000), (5 + day + 1, 9_000)):
        evs = [start, _x("a", 5, 1), _x("b", 6, 3),
               {"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1, "ts": end_us}]
        t = _read(tmp_path, monkeypatch, evs, scan)
        assert (t.meta.start_ns, t.meta.end_ns) == (5_000, want), end_us
    evs = [_x("a", 7, 1), _x("b", 8, 3), {"ph": "i", "s": "t", "name": "Record Window End", "pid": 1, "tid": 1,
                                          "ts": 100}]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (7_000, 100_000)
    # ... unless it lies before the first event (4 µs against 7 µs: a window ending before it starts): the events'
    # end, 8 + 3 = 11 µs; at the first event's start (7 µs) it is kept
    for end_us, want in ((4, 11_000), (7, 7_000)):
        evs[2]["ts"] = end_us
        t = _read(tmp_path, monkeypatch, evs, scan)
        assert (t.meta.start_ns, t.meta.end_ns) == (7_000, want), end_us


@BOTH
def test_window_of_events_alone_and_of_none(tmp_path, monkeypatch, scan):
    """Without a span or marks: the first ts (3 µs) and the latest end (a: 3 + 10 = 13 µs, after b's 5 + 1);
    with no events at all: no window, unless a Record Window End gives the end alone."""
    t = _read(tmp_path, monkeypatch, [_x("b", 5, 1), _x("a", 3, 10)], scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (3_000, 13_000)
    t = _read(tmp_path, monkeypatch, [], scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (NONE, NONE) and len(t.events["ts"]) == 0
    assert t.problems == [] and t.meta.rank == 0
    t = _read(tmp_path, monkeypatch, [{"ph": "i", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 9}], scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (NONE, 9_000)


@BOTH
def test_marks_last_wins_and_names_exact(tmp_path, monkeypatch, scan):
    """Of two Iteration Starts the last in the file wins (40, not 30 µs), and of two Record Window Ends (90, then
    80 µs: 80); "Iteration Start" is a prefix, "Record Window End" must be whole ("Record Window End 2" is no
    mark); another instant is no mark."""
    evs = [_x("a", 50, 1),
           {"ph": "i", "s": "t", "name": "Iteration Start: x", "pid": 1, "tid": 1, "ts": 40},
           {"ph": "i", "s": "t", "name": "Iteration Start", "pid": 1, "tid": 1, "ts": 30},
           {"ph": "i", "s": "t", "name": "Iteration Start: y", "pid": 1, "tid": 1, "ts": 40},
           {"ph": "I", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 90},
           {"ph": "I", "name": "Record Window End", "pid": 1, "tid": 1, "ts": 80},
           {"ph": "I", "name": "Record Window End 2", "pid": 1, "tid": 1, "ts": 85},
           {"ph": "i", "name": "Iteration", "pid": 1, "tid": 1, "ts": 1},
           {"ph": "i", "name": "", "pid": 1, "tid": 1, "ts": 2}]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert (t.meta.start_ns, t.meta.end_ns) == (40_000, 80_000)
    evs[1], evs[3] = evs[3], dict(evs[2], ts=45)
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.meta.start_ns == 45_000


@BOTH
def test_problems_told_once_each(tmp_path, monkeypatch, scan):
    """One event without a name, one with a ts out of range (1e300 µs) and one negative duration: three
    warnings, the missing one counted apart from the one out of range (2 missing - 1 out of range = 1)."""
    evs = [{"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
           _x("far", 1e300), _x("neg", 3, -2), _x("ok", 4)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _msgs(t) == ["1 events without a usable name, ts or dur skipped",
                        "1 events with ts or dur out of range (beyond ±146 years) skipped",
                        "1 negative durations set to 0"]
    assert all(p.severity == "warning" and p.file == str(tmp_path / "t.pt.trace.json") for p in t.problems)
    assert _texts(t, "name") == ["neg", "ok"]


@BOTH
def test_invalid_utf8_is_told(tmp_path, monkeypatch, scan):
    """A name with a byte that is no UTF-8 (0xff) is read with U+FFFD and told once."""
    raw = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\xffb", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}'
    t = _read(tmp_path, monkeypatch, scan=scan, raw=raw)
    assert _texts(t, "name") == ["a\ufffdb"] and _msgs(t) == ["invalid UTF-8 bytes replaced (U+FFFD)"]
    assert [(p.file, p.severity) for p in t.problems] == [(str(tmp_path / "t.pt.trace.json"), "warning")]


def test_malformed_events_are_told(tmp_path, monkeypatch):
    """Two array items that are no event (7 and "x") are skipped and told once, a warning of this file."""
    t = _read(tmp_path, monkeypatch, [_x("a", 1), 7, "x"])
    assert _texts(t, "name") == ["a"] and _msgs(t) == ["2 malformed events skipped"]
    assert [(p.file, p.severity) for p in t.problems] == [(str(tmp_path / "t.pt.trace.json"), "warning")]


@pytest.mark.parametrize("raw, said", [
    ('{"schemaVersion": 1}', "expected an object with traceEvents, found no traceEvents key"),
    ('{"traceEvents": {"a": 1}}', "traceEvents is not a list (got an object)"),
    ('{"traceEvents": 5}', "traceEvents is not a list (got a number)"),
    ('{"traceEvents": [{"ph": "X", "args": ' + "[" * 3000 + "]" * 3000 + "}]}", _json.TOO_DEEP),
])
def test_read_kineto_refuses(tmp_path, monkeypatch, raw, said):
    """No traceEvents, traceEvents not a list, nesting deeper than the decoder allows: an InputError naming the
    file and saying so."""
    with pytest.raises(InputError) as err:
        _read(tmp_path, monkeypatch, raw=raw)
    assert str(err.value) == f"{tmp_path / 't.pt.trace.json'}: {said}"


def test_a_file_past_the_cap_is_refused_by_name(tmp_path, monkeypatch):
    """A file bigger than CANNING_MAX_TRACE_BYTES (here 100 bytes) is refused before it is read, naming the file."""
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", "100")
    with pytest.raises(InputError) as err:
        _read(tmp_path, monkeypatch, [_x("a", 1), _x("b", 2)])
    assert str(err.value).startswith(f"{tmp_path / 't.pt.trace.json'}: expands past the 100 bytes cap")


def test_a_repaired_file_tells_its_repairs(tmp_path, monkeypatch):
    """A bare NaN (no JSON) is read as null and told; the event whose dur it was is skipped as missing."""
    raw = json.dumps({"traceEvents": [_x("a", 1, "@NAN@"), _x("b", 2)]}).replace('"@NAN@"', "NaN")
    t = _read(tmp_path, monkeypatch, raw=raw)
    assert _texts(t, "name") == ["b"]
    assert _msgs(t) == ["1 bare NaN/Infinity/N/A values read as null", "1 events without a usable name, ts or dur skipped"]


def test_the_parallel_path_reads_the_same(tmp_path, monkeypatch):
    """A plain file of 256 KiB or more (4 x the 64 KiB head and tail it plans from) read by the parallel path (its
    threshold set to 0 bytes here; the spy sees it planned): 3,000 events ts 3000 - i µs come sorted, the
    top-level keys (distributedInfo's rank 2, world size 4, "x") read as by the whole-file path."""
    monkeypatch.setattr(kineto_parallel, "PARALLEL_BYTES", 0)
    planned = []
    real = kineto_parallel.read_ranges

    def spy(path, reader_type):
        out = real(path, reader_type)
        planned.append(path)
        return out
    monkeypatch.setattr(kineto_parallel, "read_ranges", spy)
    evs = [_x(f"e{i:04d}", 3000 - i, 1, args_pad="p" * 60) for i in range(3000)]
    t = _read(tmp_path, monkeypatch, evs, top={"distributedInfo": {"rank": 2, "world_size": 4}, "x": "y"})
    assert planned == [str(tmp_path / "t.pt.trace.json")]
    assert (tmp_path / "t.pt.trace.json").stat().st_size >= 4 * 65536
    names = _texts(t, "name")
    assert len(names) == 3000 and names[:2] == ["e2999", "e2998"] and names[-1] == "e0000"
    assert t.events["ts"].tolist()[:2] == [1000, 2000] and t.events["ts"].tolist()[-1] == 3_000_000
    assert (t.meta.rank, t.meta.world_size, t.meta.environment["x"]) == (2, 4, "y")


@BOTH
def test_collective_bytes_of_host_ranges(tmp_path, monkeypatch, scan):
    """Host collective ranges (gloo:, nccl:, hccl: at the start) take their inputs' shapes x dtype sizes:
    [[2, 3], []] of float and double = 6 x 4 + 1 x 8 = 32; a shape with a negative or a bool item, or an
    unknown dtype, adds nothing (bytes stay NONE where nothing adds); a range that has bytes from its group's
    elements x dtype keeps them (10 x 4 = 40; 0 elements: 0); other names are no collective range."""
    evs = [_x("gloo:all_reduce", 1, **{"Input Dims": [[2, 3], []], "Input type": ["float", "Double"]}),
           _x("hccl:broadcast", 2, **{"Input Dims": [[2, -1], [True, 3]], "Input type": ["float", "float"]}),
           _x("nccl:all_gather", 3, **{"Input Dims": [[4]], "Input type": ["mystery"]}),
           _x("nccl:all_reduce", 4, **{"Input Dims": [[100]], "Input type": ["float"], "Process Group Name": "0",
                                       "dtype": "Float", "In msg nelems": 10}),
           _x("nccl:reduce", 5, **{"Input Dims": [[100]], "Input type": ["float"], "Process Group Name": "0",
                                   "dtype": "Float", "In msg nelems": 0}),
           _x("mygloo:all_reduce", 6, **{"Input Dims": [[3]], "Input type": ["float"]}),
           _x("gloo:x", 7, **{"Input Dims": [[3]]}),
           _x("gloo:y", 8, **{"Input Dims": {"a": 1}, "Input type": ["float"]}),
           _x("gloo:z", 9, **{"Input Dims": [[5], [7]], "Input type": ["char"]}),
           _x("gloo:w", 10, **{"Input Dims": [3, [2]], "Input type": ["float", "float"]})]
    t = _read(tmp_path, monkeypatch, evs, scan)
    # gloo:z: zip stops at the shorter list: 5 x 1 = 5; gloo:w: a shape that is no list (3) adds nothing: 2 x 4 = 8
    assert t.events["bytes"].tolist() == [32, NONE, NONE, 40, 0, NONE, NONE, NONE, 5, 8]


def test_collective_bytes_directly():
    """_collective_bytes on rows given: only the rows listed, those with bytes >= 0 skipped (0 too), a shape
    of ints x its dtype's size, a product past int64 none (_prod gives NONE)."""
    Args = kineto_read.Args
    raw = kineto_read.msgspec.Raw

    def args(dims, types):
        return Args(dims=raw(json.dumps(dims).encode()), types=raw(json.dumps(types).encode()))
    a = [args([[2]], ["float"]), args([[3]], ["float"]), args([[4]], ["float"]), args([[2 ** 62, 2]], ["float"]),
         Args()]
    nbytes = np.array([NONE, 0, NONE, NONE, NONE], np.int64)
    kineto_read._collective_bytes(a, nbytes, [1, 2, 3, 4])
    # row 0 not listed; row 1 has 0; row 2: 4 x 4 = 16; row 3: 2**63 is past int64 -> NONE x 4 = -4 (no size:
    # the product is NONE, -1, times 4); row 4: no dims -> nothing
    assert nbytes.tolist() == [NONE, 0, 16, -4, NONE]
    # a dims text that is no JSON skips its row only: the next is still read (2 x 4 = 8)
    bad = [Args(dims=raw(b"[[2"), types=raw(b'["float"]')), args([[2]], ["float"])]
    nbytes = np.array([NONE, NONE], np.int64)
    kineto_read._collective_bytes(bad, nbytes, [0, 1])
    assert nbytes.tolist() == [NONE, 8]
    assert kineto_read._prod([2, 3, 4]) == 24 and kineto_read._prod([]) == 1
    assert kineto_read._prod([2 ** 62, 2]) == NONE and kineto_read._prod([-(2 ** 62), 2]) == -(2 ** 63)
    assert kineto_read._prod([2 ** 62, 2, -1]) == -(2 ** 63) and kineto_read._prod([2 ** 63 - 1]) == 2 ** 63 - 1


def test_render_dims_directly():
    """Input Dims' raw JSON text in one rendering (json.dumps: ", " between items); a text that is no JSON as its
    bytes say, a byte that is no UTF-8 as U+FFFD."""
    assert kineto_read._render_dims(b"[[1,2],[]]") == "[[1, 2], []]"
    assert kineto_read._render_dims(b"[1, \xff") == "[1, \ufffd"


@BOTH
def test_process_groups_and_their_bytes(tmp_path, monkeypatch, scan):
    """A kernel's process group: "name (description)", the name alone when the description is absent, empty
    or "undefined"; its bytes elements x dtype where the file gives none: 2**50 - 1 elements of a char is
    2**50 - 1 bytes, no dtype none."""
    evs = [_x("k1", 1, cat="kernel", pid=0, **{"Process Group Name": "a", "Process Group Description": "d"}),
           _x("k2", 2, cat="kernel", pid=0, **{"Process Group Name": "b", "Process Group Description": ""}),
           _x("k3", 3, cat="kernel", pid=0, **{"Process Group Name": "c", "dtype": "char",
                                                "In msg nelems": 2 ** 50 - 1}),
           _x("k4", 4, cat="kernel", pid=0, **{"Process Group Name": "d", "In msg nelems": 5}),
           _x("k5", 5, cat="kernel", pid=0, **{"Process Group Description": "e", "dtype": "char",
                                                "In msg nelems": 5}),
           _x("k6", 6, cat="kernel", pid=0, bytes=0, **{"Process Group Name": "f", "dtype": "float",
                                                         "In msg nelems": 3})]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "group") == ["a (d)", "b", "c", "d", None, "f"]
    # k6: the file's own 0 bytes stand (not 3 x 4)
    assert t.events["bytes"].tolist() == [NONE, NONE, 2 ** 50 - 1, NONE, NONE, 0]
    assert t.events["kind"].tolist() == [Kind.COMM_KERNEL] * 4 + [Kind.KERNEL, Kind.COMM_KERNEL]


@BOTH
def test_memory_records_devices(tmp_path, monkeypatch, scan):
    """A memory record's device from its Device Type and Id: 0 is "CPU" whatever the id, 1 "cuda:5", 20
    "npu:3", 99 (no c10 type) "device99:0", -5 "device-5:3"; an id past 2**20 - 1 is clipped to it, a negative
    one to 0; absent Bytes read as 0."""
    recs = [(0, 4), (1, 5), (20, 3), (99, 0), (-5, 3), (1, 2 ** 21), (1, -7), (1, 5)]
    evs = [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": i + 1,
            "args": {"Device Type": typ, "Device Id": idx}} for i, (typ, idx) in enumerate(recs)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "device", "memory") == ["CPU", "cuda:5", "npu:3", "device99:0", "device-5:3", "cuda:1048575",
                                             "cuda:0", "cuda:5"]
    assert t.memory["bytes"].tolist() == [0] * 8 and t.memory["ts"].tolist() == [1000 * (i + 1) for i in range(8)]


@BOTH
def test_kernel_metrics_by_name_and_2021_name(tmp_path, monkeypatch, scan):
    """Occupancy: the current name's value, else the 2021 name's (30 then 50); a metric no kernel has makes no
    column; a host op's flops NaN where absent."""
    evs = [_x("k1", 1, cat="kernel", pid=0, **{"est. achieved occupancy %": 30, "theoretical occupancy %": 99}),
           _x("k2", 2, cat="kernel", pid=0, **{"theoretical occupancy %": 50}),
           _x("k3", 3, cat="kernel", pid=0, **{"registers per thread": 16}),
           _x("op", 4, flops=7)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert sorted(t.metrics) == ["flops", "occupancy_pct", "registers_per_thread"]
    assert np.array_equal(t.metrics["occupancy_pct"], [30, 50, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(t.metrics["flops"], [np.nan, np.nan, np.nan, 7], equal_nan=True)
    assert np.array_equal(t.metrics["registers_per_thread"], [np.nan, np.nan, 16, np.nan], equal_nan=True)


@BOTH
def test_grids_and_host_columns(tmp_path, monkeypatch, scan):
    """A kernel's blocks: the grid's product (2 x 3 x 4 = 24), none for a null grid or none given; host ops'
    shapes (Input Dims, else Input dims), stack, and args from Input type / Concrete Inputs (types alone,
    concrete alone, both)."""
    evs = [_x("k1", 1, cat="kernel", pid=0, grid=[2, 3, 4]),
           _x("k2", 2, cat="kernel", pid=0, grid=None),
           _x("k3", 3, cat="kernel", pid=0),
           _x("k4", 3.5, cat="kernel", pid=0, grid=[2 ** 60 + 1, 1]),
           _x("o1", 4, **{"Input Dims": [[1]], "Input dims": [[9]], "Input type": ["int"]}),
           _x("o2", 5, **{"Concrete Inputs": ["3"], "Call stack": "f.py(2): g"}),
           _x("o3", 6, **{"Input dims": [[2, 2]], "Input type": ["a"], "Concrete Inputs": ["b"]})]
    t = _read(tmp_path, monkeypatch, evs, scan)
    # k4: 2**60 + 1 blocks, every digit (no float64 on the way)
    assert t.events["blocks"].tolist() == [24, NONE, NONE, 2 ** 60 + 1, NONE, NONE, NONE]
    assert _texts(t, "shapes") == [None, None, None, None, "[[1]]", None, "[[2, 2]]"]
    assert _texts(t, "stack") == [None, None, None, None, None, "f.py(2): g", None]
    assert _texts(t, "args") == [None, None, None, None, '{"types":["int"]}', '{"concrete":["3"]}',
                                 '{"types":["a"],"concrete":["b"]}']


@BOTH
def test_text_ids_through_the_scanner_too(tmp_path, monkeypatch, scan):
    """pid / tid texts: where every text of a column is digits they are the numbers (" 12 " -> 12); beside a
    name each is read alone ("stream 7" -> 7); digits past int64 are a name; names in first sight, the pid
    column before the tid column ("999..." -2, then "Spans" -3)."""
    evs = [_x("a", 1, pid=" 12 ", tid="stream 7"), _x("b", 2, pid="13", tid="Spans"),
           _x("c", 3, pid="99999999999999999999", tid=5)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.events["pid"].tolist() == [12, 13, -2] and t.events["tid"].tolist() == [7, -3, 5]
    assert t.meta.process_names == {-2: "99999999999999999999"} and t.meta.thread_names == {"13:-3": "Spans"}
    evs = [_x("a", 1, pid=" 12 ", tid="4"), _x("b", 2, pid="-9223372036854775808", tid="9223372036854775807")]
    t = _read(tmp_path, monkeypatch, evs, scan)
    # int64's two ends given as digits are numbers
    assert t.events["pid"].tolist() == [12, -(2 ** 63)] and t.events["tid"].tolist() == [4, 2 ** 63 - 1]
    # a text that is also the piece's first (its category and name): the scanner's text 0 is a text too
    t = _read(tmp_path, monkeypatch, [_x("Spans", 4, cat="Spans", pid="Spans", tid="Spans")], scan)
    assert t.events["pid"].tolist() == [-2] and t.events["tid"].tolist() == [-2]
    assert t.meta.process_names == {-2: "Spans"} and t.meta.thread_names == {"-2:-2": "Spans"}


@BOTH
def test_flow_ends_with_text_ids_place_events(tmp_path, monkeypatch, scan):
    """A launch flow's end given with text pid / tid ("Dev", "q") finds the unnamed event on the same texts; a
    flow of another category (fwdbwd) places nothing."""
    evs = [_x("a", 6, cat="gpu_stuff", pid="Dev", tid="q"),
           {"ph": "f", "id": 1, "pid": "Dev", "tid": "q", "ts": 6, "cat": "async"},
           _x("b", 7, cat="gpu_stuff", pid="Dev", tid="q"),
           {"ph": "f", "id": 2, "pid": "Dev", "tid": "q", "ts": 7, "cat": "fwdbwd"}]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.events["kind"].tolist() == [Kind.KERNEL, Kind.OTHER]


@BOTH
def test_an_exact_chunk_after_a_part_is_read_once(tmp_path, monkeypatch, scan):
    """A chunk whose second category holds a time past 2**43 µs with a fraction is read again as decimals: the
    first category's part (made before) is not kept twice, and its event out of range (1e300) is counted once."""
    b = 8796093022208  # 2**43
    raw = ('{"traceEvents": ['
           '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
           '{"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1},'
           f'{{"ph": "X", "cat": "user_annotation", "name": "b", "pid": 1, "tid": 1, "ts": {b}.5, "dur": 1}}'
           ']}')
    t = _read(tmp_path, monkeypatch, scan=scan, raw=raw)
    assert _texts(t, "name") == ["a", "b"] and t.events["ts"].tolist() == [1000, 8_796_093_022_208_500]
    assert _msgs(t) == ["1 events with ts or dur out of range (beyond ±146 years) skipped"]


def test_a_reader_travels_by_pickle():
    """A reader sent from a child process (pickle) leaves its bound method behind and remakes it: the strings
    interned before keep their ids (a 0, b 1), a new one takes the next (c 2)."""
    r = kineto_read._Reader("p")
    assert (r.sid("a"), r.sid("b")) == (0, 1)
    assert "sid" not in r.__getstate__() and "strs" in r.__getstate__()
    r2 = pickle.loads(pickle.dumps(r))
    assert (r2.sid("b"), r2.sid("c"), r2.sid("a")) == (1, 2, 0)
    assert r2.strs.keys_in_order() == ["a", "b", "c"] and r2.path == "p"


def test_kind_of_category():
    """Kineto's names (any case), *_runtime / *_driver of any backend, the named non-work and launch flows OTHER,
    anything else unknown (255)."""
    k = kineto_read._kind_of_cat
    assert [k("Kernel"), k("foo_runtime"), k("BAR_DRIVER"), k("cuda_sync"), k("ac2g"), k("gpu_stuff"),
            k("runtime_x")] == [Kind.KERNEL, Kind.RUNTIME, Kind.RUNTIME, Kind.OTHER, Kind.OTHER, 255, 255]


def test_concat_and_sort_directly():
    """_concat casts each part to the column's dtype (an int64 part into int32), empty parts give empty columns
    of the dtype, excluded columns are left out; _sort_in_place orders every column by ts, stably."""
    spec = {"ts": np.int64, "name": np.int32, "kind": np.uint8}
    parts = [{"ts": np.array([3, 1], np.int64), "name": np.array([7, 8], np.int64)},
             {"ts": np.array([1], np.int64), "name": np.array([9], np.int32)}]
    out = kineto_read._concat(parts, spec, exclude=("kind",))
    assert sorted(out) == ["name", "ts"] and out["name"].dtype == np.int32 and out["name"].tolist() == [7, 8, 9]
    assert parts == [{}, {}]  # freed as copied
    empty = kineto_read._concat([], spec)
    assert {k: (v.dtype, len(v)) for k, v in empty.items()} == {
        "ts": (np.dtype(np.int64), 0), "name": (np.dtype(np.int32), 0), "kind": (np.dtype(np.uint8), 0)}
    kineto_read._sort_in_place(out)
    assert out["ts"].tolist() == [1, 1, 3] and out["name"].tolist() == [8, 9, 7]


def test_small_values_of_the_top():
    """Top-level values under 4,096 bytes are decoded (4,095 yes, 4,096 no), deviceProperties and
    distributedInfo whatever their size."""
    raw = kineto_read.msgspec.Raw
    big = raw(json.dumps(["x" * 5000]).encode())
    top = {"a": raw(b'"' + b"y" * 4093 + b'"'), "b": raw(b'"' + b"y" * 4094 + b'"'), "deviceProperties": big,
           "distributedInfo": raw(json.dumps({"rank": 1, "pad": "z" * 5000}).encode()), "n": raw(b"5")}
    out = kineto_read._small_values(top)
    assert sorted(out) == ["a", "deviceProperties", "distributedInfo", "n"]
    assert out["a"] == "y" * 4093 and out["n"] == 5 and out["distributedInfo"]["rank"] == 1


@BOTH
def test_int_args_keep_every_digit(tmp_path, monkeypatch, scan):
    """Int args past 2**53 (which float64 cannot hold) keep every digit both ways: stream 2**61 + 1, correlation
    2**60 + 1, External id 2**53 + 1, bytes 2**62 + 3, and the lower-case external id 2**55 + 1 where the other
    is absent."""
    evs = [_x("k", 1, cat="kernel", pid=0, stream=2 ** 61 + 1, correlation=2 ** 60 + 1,
              bytes=2 ** 62 + 3, **{"External id": 2 ** 53 + 1}),
           _x("r", 2, cat="cuda_runtime", correlation=7, **{"external id": 2 ** 55 + 1})]
    t = _read(tmp_path, monkeypatch, evs, scan)
    ev = t.events
    assert ev["stream"].tolist() == [2 ** 61 + 1, NONE] and ev["correlation"].tolist() == [2 ** 60 + 1, 7]
    assert ev["external_id"].tolist() == [2 ** 53 + 1, 2 ** 55 + 1] and ev["bytes"].tolist() == [2 ** 62 + 3, NONE]


@BOTH
def test_a_group_named_as_the_first_text(tmp_path, monkeypatch, scan):
    """A process group whose name is the piece's first text (its category and name, "kernel": the scanner's text
    0) is a group too: "kernel", and its bytes 2 elements x 4 (float) = 8."""
    evs = [_x("kernel", 1, cat="kernel", pid=0, **{"Process Group Name": "kernel", "dtype": "float",
                                                    "In msg nelems": 2})]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "group") == ["kernel"] and t.events["bytes"].tolist() == [8]
    assert t.events["kind"].tolist() == [Kind.COMM_KERNEL]


@BOTH
def test_a_flow_end_without_a_time_places_nothing(tmp_path, monkeypatch, scan):
    """A launch flow's end with no time (absent, or out of range: 1e300 µs) places no event, not even one at
    -0.001 µs (-1 ns, the value that stands for "none" in the columns) or at 0 on its pid and tid."""
    evs = [{"ph": "f", "id": 1, "pid": 3, "tid": 4, "cat": "ac2g"},
           {"ph": "f", "id": 2, "pid": 3, "tid": 5, "ts": 1e300, "cat": "ac2g"},
           _x("a", -0.001, cat="gpu_stuff", pid=3, tid=4),
           _x("b", 0, cat="gpu_stuff", pid=3, tid=4),
           _x("c", -0.001, cat="gpu_stuff", pid=3, tid=5),
           _x("d", 0, cat="gpu_stuff", pid=3, tid=5)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "name") == ["a", "c", "b", "d"] and t.events["ts"].tolist() == [-1, -1, 0, 0]
    assert t.events["kind"].tolist() == [Kind.OTHER] * 4


@BOTH
def test_fractions_of_a_us_to_the_ns(tmp_path, monkeypatch, scan):
    """µs fractions to the nearest ns: 1.75 µs = 1,750 ns, 0.999 µs = 999 ns, 2.625 µs = 2,625 ns, 0.75 = 750."""
    t = _read(tmp_path, monkeypatch, [_x("a", 1.75, 0.999), _x("b", 2.625, 0.75)], scan)
    assert t.events["ts"].tolist() == [1_750, 2_625] and t.events["dur"].tolist() == [999, 750]


@BOTH
def test_chunk_by_chunk(tmp_path, monkeypatch, scan):
    """Each event its own chunk (the cut after every element): a flow end read as floats at exactly
    4,611,686,018,427,387 µs (the float path's strict bound) has no time, so it places nothing, even once a later
    chunk (holding 2**43 + 0.5 µs) makes the reader read decimals, which take the unnamed event "k" at that µs
    (4,611,686,018,427,387,000 ns < 2**62); the counts of every chunk add up (two negative durations)."""
    import functools
    monkeypatch.setattr(_json, "iter_chunks", functools.partial(_json.iter_chunks, chunk=1))
    b = 8796093022208  # 2**43
    raw = ('{"traceEvents": ['
           '{"ph": "f", "id": 1, "pid": 3, "tid": 4, "ts": 4611686018427387, "cat": "ac2g"},'
           '{"ph": "X", "cat": "cpu_op", "name": "n1", "pid": 1, "tid": 1, "ts": 1, "dur": -1},'
           f'{{"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": {b}.5, "dur": 1}},'
           '{"ph": "X", "cat": "gpu_stuff", "name": "k", "pid": 3, "tid": 4, "ts": 4611686018427387, "dur": 0},'
           '{"ph": "X", "cat": "cpu_op", "name": "n2", "pid": 1, "tid": 1, "ts": 2, "dur": -1},'
           '{"ph": "X", "cat": "gpu_stuff", "name": "z", "pid": 3, "tid": 4, "ts": 0, "dur": 0}'
           ']}')
    t = _read(tmp_path, monkeypatch, scan=scan, raw=raw)
    # "z" at 0 on the flow end's pid and tid is not placed either: the end has no time, not 0
    assert _texts(t, "name") == ["z", "n1", "n2", "e", "k"]
    assert t.events["ts"].tolist() == [0, 1000, 2000, 8_796_093_022_208_500, 4_611_686_018_427_387_000]
    assert t.events["kind"].tolist() == [Kind.OTHER, Kind.CPU_OP, Kind.CPU_OP, Kind.CPU_OP, Kind.OTHER]
    assert _msgs(t) == ["2 negative durations set to 0"]


@BOTH
def test_counts_add_up_over_categories(tmp_path, monkeypatch, scan):
    """Each category of a chunk is a part of its own, and the counts add up over them. Per category (cpu_op,
    user_annotation): one event without a name, one negative duration, one ts and one dur out of range (1e300 µs,
    and exactly 4,611,686,018,427,387 µs, the float path's strict bound): 3 + 3 = 6 skipped, of which 4 out of
    range, told apart (6 - 4 = 2 missing); 1 + 1 = 2 negative."""
    evs = []
    for cat in ("cpu_op", "user_annotation"):
        evs += [{"ph": "X", "cat": cat, "pid": 1, "tid": 1, "ts": 1, "dur": 1},
                _x("neg", 2, -1, cat=cat)]
    evs += [_x("far_ts", 4611686018427387, 1), _x("far_dur", 3, 1e300),
            _x("far_ts2", 1e300, 1, cat="user_annotation"), _x("far_dur2", 3, 4611686018427387, cat="user_annotation")]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert _texts(t, "name") == ["neg", "neg"]
    assert _msgs(t) == ["2 events without a usable name, ts or dur skipped",
                        "4 events with ts or dur out of range (beyond ±146 years) skipped",
                        "2 negative durations set to 0"]


@BOTH
def test_a_device_past_int32_is_none(tmp_path, monkeypatch, scan):
    """The device column is int32: a device arg past it (2**32 + 5, -2**31 - 1) is no device (NONE, then the pid
    stands in where it is one: pid 2000 is not), not wrapped around to 5 or 2**31 - 1; int32's two ends are kept."""
    evs = [_x("k1", 1, cat="kernel", pid=2000, device=2 ** 32 + 5), _x("k2", 2, cat="kernel", pid=2000,
                                                                      device=-(2 ** 31) - 1),
           _x("k3", 3, cat="kernel", pid=2000, device=2 ** 31 - 1), _x("k4", 4, cat="kernel", pid=2000,
                                                                       device=-(2 ** 31)),
           _x("k5", 5, cat="kernel", pid=2000, device=2 ** 31)]
    t = _read(tmp_path, monkeypatch, evs, scan)
    assert t.events["device"].tolist() == [NONE, NONE, 2 ** 31 - 1, -(2 ** 31), NONE]


def test_a_device_id_past_int32_is_told_as_this_files(tmp_path, monkeypatch):
    """deviceProperties' id 2**40 is no device index: read as unknown (-1), told once as this file's warning."""
    t = _read(tmp_path, monkeypatch, [_x("a", 1)], top={"deviceProperties": [{"id": 2 ** 40, "name": "A"}]})
    assert [d["index"] for d in t.meta.devices] == [-1]
    assert [(p.file, p.message, p.severity) for p in t.problems] == [
        (str(tmp_path / "t.pt.trace.json"), "device index 1099511627776 is no index (0 to 2147483647): read as unknown",
         "warning")]
