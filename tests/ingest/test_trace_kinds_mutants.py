"""The end of a trace_view.json read (ingest/ascend/trace/kinds.py) on small hand-written traces: each event's
Kind and columns by its process (docs/formats/ascend.md), every expected value worked out by hand from the
events written here (the mutation round of issue 46: these pin what the fixture tests let go)."""
import json
import math

import numpy as np
import pytest

from canning_tb.ingest.ascend.trace.read import read_trace
from canning_tb.ingest.table import EVENT_COLUMNS, METRIC_FLOPS, NONE, Kind, Strings

PY, CANN, HW, HCCL, OVL, ELSE, NOPROC = 100, 41, 7, 39, 40, 42, 200


def _meta(pid, name, tid=None):
    if tid is None:
        return {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def _x(name, pid, tid, ts, dur, cat=None, **args):
    e = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if cat is not None:
        e["cat"] = cat
    if args:
        e["args"] = {k.replace("_SP_", " "): v for k, v in args.items()}
    return e


def _read(tmp_path, events, hint=NONE, groups=None):
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(events))
    strings, problems = Strings(), []
    td = read_trace(str(path), "trace_view.json", problems, strings, hint, groups)
    assert td is not None, problems
    return td, strings, problems


def _by_name(td, strings):
    """name -> row (each name written once in these traces)."""
    names = [strings.values[i] if i >= 0 else None for i in td.events["name"].tolist()]
    assert len(set(names)) == len(names)
    return {n: i for i, n in enumerate(names)}


def _text(strings, i):
    return None if i == NONE else strings.values[i]


HOST = [_meta(PY, "Python"), _meta(CANN, "CANN"),
        _x("ProfilerStep#3", PY, 1, "10.000", 100, "cpu_op"),
        _x("aten::mm", PY, 1, "11.000", "5.5", "cpu_op", Input_SP_Dims="2,3;\r\n3,4",
           Input_SP_type="float;\r\nfloat", Call_SP_stack="a.py(1): f;\r\nb.py(2): g", flops=48),
        _x("fwd", PY, 1, "12.000", 1, "python_function", Input_SP_Dims="7"),
        _x("ProfilerStep#4", PY, 1, "13.000", 1, "python_function"),
        _x("region", PY, 1, "14.000", 1, "user_annotation"),
        _x("aten::add", PY, 1, "15.000", 1, "operator", flops=-1),
        _x("misc", PY, 1, "16.000", 1, "other_cat", Input_SP_Dims="9"),
        _x("aclnnMm", CANN, 3, "11.500", 1, "cann", connection_id=55),
        _x("aclrtSync", CANN, 3, "11.700", 1, "cann"),
        _x("aten::lone", NOPROC, 2, "17.000", 1, "cpu_op", Input_SP_Dims="4"),
        _x("lone_kernel", NOPROC, 2, "18.000", 1, "kernel")]


def test_host_events_get_their_kind_by_category_and_name(tmp_path):
    """Python process: python_function first (a ProfilerStep# there stays a Python function), then
    user_annotation or a ProfilerStep# name, then cpu_op / operator; any other category is OTHER. A process
    without a process_name event is read as Python for the three host categories only."""
    td, s, _ = _read(tmp_path, HOST)
    row, kind = _by_name(td, s), td.events["kind"]
    want = {"ProfilerStep#3": Kind.USER_ANNOTATION, "aten::mm": Kind.CPU_OP, "fwd": Kind.PYTHON_FUNCTION,
            "ProfilerStep#4": Kind.PYTHON_FUNCTION, "region": Kind.USER_ANNOTATION, "aten::add": Kind.CPU_OP,
            "misc": Kind.OTHER, "aclnnMm": Kind.RUNTIME, "aclrtSync": Kind.RUNTIME,
            "aten::lone": Kind.CPU_OP, "lone_kernel": Kind.OTHER}
    assert {n: Kind(int(kind[i])) for n, i in row.items()} == want
    # times: "11.000" us -> 11,000 ns; dur 5.5 us -> 5,500 ns; pid / tid as written
    assert td.events["ts"][row["aten::mm"]] == 11_000 and td.events["dur"][row["aten::mm"]] == 5_500
    assert td.events["pid"][row["aten::lone"]] == NOPROC and td.events["tid"][row["aten::lone"]] == 2
    assert _text(s, td.events["cat"][row["misc"]]) == "other_cat"
    # host events are no device's: device -1, and no device is listed
    assert set(td.events["device"].tolist()) == {NONE} and td.devices == set()
    assert not td.device_mask.any()


def test_host_operators_keep_shapes_stack_and_input_types(tmp_path):
    """Only host operators (cpu_op / operator / user_annotation) keep Input Dims, Call stack and Input type:
    '2,3;\\r\\n3,4' -> '[[2, 3], [3, 4]]', the stack's frames joined by ';', the types as op_args JSON."""
    td, s, _ = _read(tmp_path, HOST)
    row, ev = _by_name(td, s), td.events
    mm = row["aten::mm"]
    assert _text(s, ev["shapes"][mm]) == "[[2, 3], [3, 4]]"
    assert _text(s, ev["stack"][mm]) == "a.py(1): f;b.py(2): g"
    assert json.loads(_text(s, ev["args"][mm])) == {"types": ["float", "float"]}
    assert _text(s, ev["shapes"][row["aten::lone"]]) == "[[4]]"  # a host op of a process without a name
    for n in ("fwd", "misc", "aclnnMm"):  # a Python function, another category, a runtime call: none kept
        assert (ev["shapes"][row[n]], ev["stack"][row[n]], ev["args"][row[n]]) == (NONE, NONE, NONE)


def test_host_flops_known_only_where_counted_and_not_negative(tmp_path):
    """flops 48 on aten::mm is kept; -1 on aten::add is unknown (NaN); events without it NaN."""
    td, s, _ = _read(tmp_path, HOST)
    row, f = _by_name(td, s), td.metrics[METRIC_FLOPS]
    assert len(f) == len(td)
    assert f[row["aten::mm"]] == 48.0
    assert [n for n, i in row.items() if not math.isnan(f[i])] == ["aten::mm"]


def test_a_flops_count_of_zero_is_known_and_no_count_gives_no_metric(tmp_path):
    """0 FLOPs is a count (>= 0), not unknown; a trace with only negative counts has no flops metric."""
    zero = [_meta(PY, "Python"), _x("aten::view", PY, 1, "1.000", 1, "cpu_op", flops=0)]
    td, s, _ = _read(tmp_path, zero)
    assert td.metrics[METRIC_FLOPS].tolist() == [0.0]
    neg = [_meta(PY, "Python"), _x("aten::view", PY, 1, "1.000", 1, "cpu_op", flops=-3)]
    assert METRIC_FLOPS not in _read(tmp_path, neg)[0].metrics


def test_runtime_calls_carry_their_connection_id(tmp_path):
    td, s, _ = _read(tmp_path, HOST)
    row, c = _by_name(td, s), td.events["correlation"]
    assert c[row["aclnnMm"]] == 55 and c[row["aclrtSync"]] == NONE
    assert c[row["aten::mm"]] == NONE  # host operators get no correlation of their own


HW_EVENTS = [_meta(HW, "Ascend Hardware"), _meta(HW, "Stream 2", 2), _meta(HW, "Stream 9", 3),
             _x("MatMul_1", HW, 2, "20.000", 3, None, Task_SP_Type="AI_CORE", Physic_SP_Stream_SP_Id=5,
                connection_id=55),
             _x("MEMCPY_ASYNC", HW, 3, "21.000", 2, None, Task_SP_Type="MEMCPY_ASYNC"),
             _x("hcom_allReduce__1", HW, 3, "22.000", 2, None, Task_SP_Type="AI_CORE"),
             _x("Add_2", HW, 2, "23.000", 1, None, Task_SP_Type=""),
             _x("EVENT_RECORD", HW, 4, "24.000", 1, None, Task_SP_Type="EVENT_RECORD")]


def test_hardware_tasks_kind_stream_core_correlation_and_device(tmp_path):
    """Kind by name and task type (hardware.classify_hardware); the stream is Physic Stream Id where given,
    else the number in the thread's name ('Stream 9'), else unknown; the core is the task type (an empty one
    unknown); the device pid & 31: 7 & 31 = 7."""
    td, s, _ = _read(tmp_path, HW_EVENTS)
    row, ev = _by_name(td, s), td.events
    assert {n: Kind(int(ev["kind"][i])) for n, i in row.items()} == {
        "MatMul_1": Kind.KERNEL, "MEMCPY_ASYNC": Kind.MEMCPY, "hcom_allReduce__1": Kind.COMM_KERNEL,
        "Add_2": Kind.KERNEL, "EVENT_RECORD": Kind.OTHER}
    assert {n: int(ev["stream"][i]) for n, i in row.items()} == {
        "MatMul_1": 5, "MEMCPY_ASYNC": 9, "hcom_allReduce__1": 9, "Add_2": 2, "EVENT_RECORD": NONE}
    assert {n: _text(s, ev["core"][i]) for n, i in row.items()} == {
        "MatMul_1": "AI_CORE", "MEMCPY_ASYNC": "MEMCPY_ASYNC", "hcom_allReduce__1": "AI_CORE", "Add_2": None,
        "EVENT_RECORD": "EVENT_RECORD"}
    assert ev["correlation"][row["MatMul_1"]] == 55 and ev["correlation"][row["Add_2"]] == NONE
    assert set(ev["device"].tolist()) == {7} and td.devices == {7} and td.device_mask.all()
    assert td.hardware_pid == HW and td.process_names == {HW: "Ascend Hardware"}
    assert td.thread_names == {f"{HW}:2": "Stream 2", f"{HW}:3": "Stream 9"}


def test_the_device_hint_wins_over_the_pid(tmp_path):
    td, s, _ = _read(tmp_path, HW_EVENTS, hint=3)
    assert set(td.events["device"].tolist()) == {3} and td.devices == {3}


def test_a_big_hardware_pid_gives_its_low_five_bits(tmp_path):
    """pid 3178247 = 0x307F07: & 31 = 7 (0b00111)."""
    pid = 3178247
    events = [_meta(pid, "Ascend Hardware"), _x("MatMul_1", pid, 2, "1.000", 1, None, Task_SP_Type="AI_CORE")]
    td, s, _ = _read(tmp_path, events)
    assert td.events["device"].tolist() == [7] and td.hardware_pid == pid


HCCL_EVENTS = [_meta(HCCL, "HCCL"), _meta(HCCL, "Group hccl_world_group Communication", 4),
               _meta(HCCL, "Plane 0", 5),
               _x("hcom_allReduce__123_0_1", HCCL, 4, "30.000", 10, None, count=10, data_type="FP16",
                  connection_id=77),
               _x("Memcpy", HCCL, 5, "30.500", 1, None, connection_id=78, **{"size(Byte)": 4096, "stream id": 3}),
               _x("hcom_broadcast_1", HCCL, 5, "31.000", 1, None, count=2, data_type="FP16"),
               _x("hcom_allGather_9", HCCL, 6, "32.000", 1, None, count=4, data_type="int64"),
               _x("hcom_reduce_2", HCCL, 6, "33.000", 1, None, count=4, data_type="COMPLEX64"),
               _x("hcom_send_3", HCCL, 6, "34.000", 1, None, count=-4, data_type="FP32"),
               _x("hcom_recv_4", HCCL, 6, "35.000", 1, None, data_type="FP32"),
               _x("hcom_allToAll_5", HCCL, 4, "36.000", 1, None, count=0, data_type="INT8")]


def _hccl(tmp_path, groups=None):
    td, s, _ = _read(tmp_path, HCCL_EVENTS, groups=groups)
    return td, s, _by_name(td, s)


def test_hccl_group_operations_and_their_bytes(tmp_path):
    """Operations: every event of a 'Group ...' thread, and collective names outside a 'Plane' thread. Bytes
    = count x the data type's size: 10 x FP16 (2) = 20, 4 x int64 (8, any case) = 32, 0 x INT8 = 0; an
    unknown type, a negative count or none: unknown."""
    td, s, row = _hccl(tmp_path)
    ev = td.events
    ops = ["hcom_allReduce__123_0_1", "hcom_allGather_9", "hcom_reduce_2", "hcom_send_3", "hcom_recv_4",
           "hcom_allToAll_5"]
    assert sorted(n for n, i in row.items() if ev["kind"][i] == Kind.COMM_KERNEL) == sorted(ops)
    assert {n: int(ev["bytes"][row[n]]) for n in ops} == {
        "hcom_allReduce__123_0_1": 20, "hcom_allGather_9": 32, "hcom_reduce_2": NONE, "hcom_send_3": NONE,
        "hcom_recv_4": NONE, "hcom_allToAll_5": 0}
    for n in ops:
        assert ev["stream"][row[n]] == NONE and _text(s, ev["core"][row[n]]) == "HCCL" and td.device_mask[row[n]]
    assert ev["correlation"][row["hcom_allReduce__123_0_1"]] == 77
    assert set(ev["device"].tolist()) == {HCCL & 31} == {7} and td.devices == {7}


def test_hccl_subtasks_keep_their_size_and_stream(tmp_path):
    """A 'Plane' thread's tasks, a collective's name included, are sub-tasks: OTHER, their bytes size(Byte),
    their stream the 'stream id' (unknown where absent), not device work of the merge."""
    td, s, row = _hccl(tmp_path)
    ev = td.events
    for n, want_bytes, want_stream in (("Memcpy", 4096, 3), ("hcom_broadcast_1", NONE, NONE)):
        i = row[n]
        assert (Kind(int(ev["kind"][i])), int(ev["bytes"][i]), int(ev["stream"][i])) == \
            (Kind.OTHER, want_bytes, want_stream)
        assert not td.device_mask[i] and ev["group"][i] == NONE and ev["core"][i] == NONE
    assert ev["correlation"][row["Memcpy"]] == 78


def test_hccl_groups_from_the_communication_table_then_the_thread(tmp_path):
    """The group is communication.json's for the op's name, else its thread's name, else unknown."""
    td, s, row = _hccl(tmp_path, groups={"hcom_allGather_9": "10.0.0.1%enp_60000_0_1", "hcom_allReduce__123_0_1":
                                         "grp_ar"})
    g = {n: _text(s, td.events["group"][row[n]]) for n in ("hcom_allReduce__123_0_1", "hcom_allGather_9",
                                                            "hcom_reduce_2", "hcom_allToAll_5")}
    assert g == {"hcom_allReduce__123_0_1": "grp_ar", "hcom_allGather_9": "10.0.0.1%enp_60000_0_1",
                 "hcom_reduce_2": None, "hcom_allToAll_5": "Group hccl_world_group Communication"}


OVERLAP = [_meta(OVL, "Overlap Analysis"), _meta(ELSE, "Something Else"),
           _x("Computing", OVL, 1, "10.000", 5), _x("Communication", OVL, 1, "12.000", 3),
           _x("Computing", OVL, 1, "20.000", 1), _x("Free", OVL, 1, "30.000", "0.5"),
           _x("foo", ELSE, 1, "40.000", 1, "x")]


def test_overlap_analysis_rows_by_name_in_first_seen_order(tmp_path):
    """The side table lists each name's rows together, names in the order first seen (Computing, then
    Communication, then Free), each with start and end in ns: 10,000 + 5,000 = 15,000 ..."""
    td, s, _ = _read(tmp_path, OVERLAP)
    rows = list(td.overlap)
    assert [(r["name"], r["start_ns"], r["end_ns"]) for r in rows] == [
        ("Computing", 10_000, 15_000), ("Computing", 20_000, 21_000), ("Communication", 12_000, 15_000),
        ("Free", 30_000, 30_500)]


def test_overlap_and_other_processes_take_the_pid_device_but_are_no_device_work(tmp_path):
    """Overlap Analysis pid 40: 40 & 31 = 8; 'Something Else' pid 42: 42 & 31 = 10; both OTHER, neither in
    the device mask nor in the devices of the trace; their process names listed."""
    td, s, _ = _read(tmp_path, OVERLAP)
    ev = td.events
    assert set(ev["kind"].tolist()) == {Kind.OTHER}
    assert ev["device"][ev["pid"] == OVL].tolist() == [8] * 4 and ev["device"][ev["pid"] == ELSE].tolist() == [10]
    assert not td.device_mask.any() and td.devices == set()
    assert td.process_names == {OVL: "Overlap Analysis", ELSE: "Something Else"} and td.hardware_pid == NONE


def test_no_overlap_events_no_overlap_table(tmp_path):
    assert _read(tmp_path, HOST)[0].overlap is None


@pytest.mark.parametrize("hint, want", [(NONE, 8), (2, 2)])
def test_counters_take_the_device_of_their_process(tmp_path, hint, want):
    """A counter ('C') of pid 40 (40 & 31 = 8, or the hint) is kept; 12.5 MB/s = 12.5 x 2**20 = 13,107,200 B/s."""
    events = [_meta(OVL, "Ascend Hardware"),
              {"ph": "C", "name": "HBM", "pid": OVL, "tid": 0, "ts": "5.000", "args": {"read(MB/s)": 12.5}}]
    td, s, _ = _read(tmp_path, events, hint=hint)
    rows = list(td.counters)
    assert len(rows) == 1 and rows[0]["device"] == f"npu:{want}" and rows[0]["value"] == 13_107_200.0


def test_an_empty_trace_reads_to_no_events(tmp_path):
    td, s, problems = _read(tmp_path, [])
    assert len(td) == 0 and td.devices == set() and td.overlap is None and problems == []
    assert all(len(v) == 0 for v in td.events.values())


def test_flows_bind_a_host_op_to_its_device_task(tmp_path):
    """A torch_to_npu flow (s on the host op's thread at its time, f on the task's) gives both its id."""
    events = [_meta(PY, "Python"), _meta(HW, "Ascend Hardware"),
              _x("aten::mm", PY, 1, "10.000", 5, "cpu_op"),
              _x("MatMul_1", HW, 2, "20.000", 3, None, Task_SP_Type="AI_CORE"),
              {"ph": "s", "bp": "e", "name": "torch_to_npu", "id": 8230, "pid": PY, "tid": 1, "ts": "10.000",
               "cat": "async_npu"},
              {"ph": "f", "bp": "e", "name": "torch_to_npu", "id": 8230, "pid": HW, "tid": 2, "ts": "20.000",
               "cat": "async_npu"}]
    td, s, problems = _read(tmp_path, events)
    row = _by_name(td, s)
    assert td.events["external_id"][row["aten::mm"]] == td.events["external_id"][row["MatMul_1"]] != NONE
    assert problems == []


def test_events_of_an_empty_trace_keep_their_column_types(tmp_path):
    """No event at all: every column is still of EVENT_COLUMNS' dtype (ts / dur int64 ns, not float)."""
    td, s, _ = _read(tmp_path, [_meta(PY, "Python")])
    assert {k: v.dtype for k, v in td.events.items()} == {k: np.dtype(t) for k, t in EVENT_COLUMNS.items()}


def test_fractional_flops_and_ids_past_float_precision_stay_exact(tmp_path):
    """flops 12.5 stays 12.5 (not truncated to 12); connection_id 2**53 + 1 = 9,007,199,254,740,993 (not
    representable in float64, which would give ...992) stays exact on the runtime call and the task."""
    big = 2 ** 53 + 1
    events = [_meta(PY, "Python"), _meta(CANN, "CANN"), _meta(HW, "Ascend Hardware"),
              _x("aten::mm", PY, 1, "1.000", 1, "cpu_op", flops=12.5),
              _x("aclnnMm", CANN, 3, "2.000", 1, "cann", connection_id=big),
              _x("MatMul_1", HW, 2, "3.000", 1, None, Task_SP_Type="AI_CORE", connection_id=big)]
    td, s, _ = _read(tmp_path, events)
    row = _by_name(td, s)
    assert td.metrics[METRIC_FLOPS][row["aten::mm"]] == 12.5
    assert td.events["correlation"][row["aclnnMm"]] == big == td.events["correlation"][row["MatMul_1"]]


def test_a_task_without_task_type_is_named_by_its_name(tmp_path):
    """No 'Task Type' key at all: the core is unknown and the kind is the name's (an op name: KERNEL; a task
    type's own name in capitals: OTHER), as for an empty type."""
    events = [_meta(HW, "Ascend Hardware"), _x("MatMul_2", HW, 2, "1.000", 1, None, connection_id=1),
              _x("STREAM_SWITCH", HW, 2, "2.000", 1, None, connection_id=2)]
    td, s, _ = _read(tmp_path, events)
    row, ev = _by_name(td, s), td.events
    assert ev["kind"][row["MatMul_2"]] == Kind.KERNEL and ev["kind"][row["STREAM_SWITCH"]] == Kind.OTHER
    assert ev["core"].tolist() == [NONE, NONE]


def test_processes_without_a_name_are_host_for_the_three_host_categories_only(tmp_path):
    """A process with no process_name event (pid 200), or an event with no pid at all: python_function,
    user_annotation and cpu_op read as in the Python process; a ProfilerStep# name under another category stays
    OTHER there (only the Python process names steps by name); no device either way."""
    events = [_x("f", NOPROC, 2, "1.000", 1, "python_function"), _x("r", NOPROC, 2, "2.000", 1, "user_annotation"),
              _x("ProfilerStep#5", NOPROC, 2, "3.000", 1, "trace"), _x("k", NOPROC, 2, "4.000", 1, "kernel")]
    nopid = {"ph": "X", "name": "aten::nopid", "tid": 2, "ts": "5.000", "dur": 1, "cat": "cpu_op"}
    td, s, _ = _read(tmp_path, events + [nopid])
    row, ev = _by_name(td, s), td.events
    assert {n: Kind(int(ev["kind"][i])) for n, i in row.items()} == {
        "f": Kind.PYTHON_FUNCTION, "r": Kind.USER_ANNOTATION, "ProfilerStep#5": Kind.OTHER, "k": Kind.OTHER,
        "aten::nopid": Kind.CPU_OP}
    assert ev["pid"][row["aten::nopid"]] == NONE and set(ev["device"].tolist()) == {NONE}
    assert td.process_names == {}  # no process_name event: no name listed, not even ""


def test_a_device_process_of_pid_0_is_device_0(tmp_path):
    """pid 0 is a pid (0 & 31 = 0), not 'no pid': its tasks are device 0's."""
    events = [_meta(0, "Ascend Hardware"), _x("MatMul_1", 0, 2, "1.000", 1, None, Task_SP_Type="AI_CORE")]
    td, s, _ = _read(tmp_path, events)
    assert td.events["device"].tolist() == [0] and td.devices == {0} and td.hardware_pid == 0


def test_host_and_device_events_of_one_trace_keep_apart(tmp_path):
    """In one trace: a host op's connection_id is not its correlation (only CANN, hardware and HCCL events
    take one); the host op is no device event (device -1, not in the device mask); a user_annotation keeps
    its Input Dims ('1' -> '[[1]]'); a task of type MEMCPY_ASYNC whose name says nothing is a copy, and a
    HCCL 'Group' thread's event is a collective even under a name that is none."""
    events = [_meta(PY, "Python"), _meta(HW, "Ascend Hardware"), _meta(HCCL, "HCCL"),
              _meta(HCCL, "Group hccl_world_group Communication", 4), _meta(ELSE, "Something Else"),
              _x("aclnnCopy_1", HW, 2, "0.500", 1, None, Task_SP_Type="MEMCPY_ASYNC", connection_id=5),
              _x("aten::mm", PY, 1, "1.000", 5, "cpu_op", connection_id=99),
              _x("region", PY, 1, "1.500", 5, "user_annotation", Input_SP_Dims="1"),
              _x("MatMul_1", HW, 2, "2.000", 1, None, Task_SP_Type="AI_CORE", connection_id=6),
              _x("MyOp_7", HCCL, 4, "3.000", 1, None, count=1, data_type="INT8", connection_id=7),
              _x("foo", ELSE, 1, "4.000", 1, "x", connection_id=8)]
    td, s, _ = _read(tmp_path, events)
    row, ev = _by_name(td, s), td.events
    assert {n: int(ev["correlation"][i]) for n, i in row.items()} == {
        "aclnnCopy_1": 5, "aten::mm": NONE, "region": NONE, "MatMul_1": 6, "MyOp_7": 7, "foo": NONE}
    assert {n: int(ev["device"][i]) for n, i in row.items()} == {
        "aclnnCopy_1": 7, "aten::mm": NONE, "region": NONE, "MatMul_1": 7, "MyOp_7": 7, "foo": 10}
    assert [n for n, i in row.items() if td.device_mask[i]] == ["aclnnCopy_1", "MatMul_1", "MyOp_7"]
    assert td.devices == {7}
    assert {n: Kind(int(ev["kind"][i])) for n, i in row.items()} == {
        "aclnnCopy_1": Kind.MEMCPY, "aten::mm": Kind.CPU_OP, "region": Kind.USER_ANNOTATION,
        "MatMul_1": Kind.KERNEL, "MyOp_7": Kind.COMM_KERNEL, "foo": Kind.OTHER}
    assert _text(s, ev["shapes"][row["region"]]) == "[[1]]" and ev["bytes"][row["MyOp_7"]] == 1


def test_thread_names_of_events_without_pid_or_tid(tmp_path):
    """thread_names' keys are 'pid:tid' as written, 'None' for a missing one."""
    events = [{"ph": "M", "name": "thread_name", "tid": 3, "args": {"name": "t3"}},
              {"ph": "M", "name": "thread_name", "pid": NOPROC, "args": {"name": "p200"}},
              _meta(NOPROC, "t4", 4)]
    td, s, _ = _read(tmp_path, events)
    assert td.thread_names == {"None:3": "t3", f"{NOPROC}:None": "p200", f"{NOPROC}:4": "t4"}


def test_counters_of_pid_0_are_kept_and_of_no_pid_dropped(tmp_path):
    """Counters: pid 0 is device 0 (0 & 31); a pid that is no number ('abc') has no device: dropped."""
    def c(pid, v):
        return {"ph": "C", "name": "HBM", "pid": pid, "tid": 0, "ts": "5.000", "args": {"read(MB/s)": v}}
    td, s, _ = _read(tmp_path, [_meta(0, "Ascend Hardware"), c(0, 1), c("abc", 2)])
    rows = list(td.counters)
    assert [(r["device"], r["value"]) for r in rows] == [("npu:0", 1_048_576.0)]  # 1 MB/s = 2**20 B/s


def test_many_overlap_rows_keep_file_order_within_their_name(tmp_path):
    """60 rows cycling three names (row k: name k % 3, start k us): each name's 20 rows stay in file order, so
    starts 0, 3, 6 ... 57 us for the first name, 1, 4 ... 58 for the second, 2, 5 ... 59 for the third."""
    names = ["Computing", "Communication", "Free"]
    events = [_meta(OVL, "Overlap Analysis")] + [_x(names[k % 3], OVL, 1, f"{k}.000", 1) for k in range(60)]
    td, s, _ = _read(tmp_path, events)
    got = [(r["name"], r["start_ns"]) for r in td.overlap]
    assert got == [(names[j], k * 1000) for j in range(3) for k in range(j, 60, 3)]
