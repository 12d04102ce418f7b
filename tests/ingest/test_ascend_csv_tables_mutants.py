"""ingest/ascend/csv/tables.py under mutation (docs/mutants.md, issue 46): kernel_details.csv, memory_record.csv and
the side tables read from small hand-made CSV files (torch_npu's headers, its cell forms), every expected value worked
out by hand in the test. Each reader runs both through pyarrow and through the csv module in chunks of 2 rows, so the
rows counted across chunks and the parts joined after them are checked too."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from canning_tb.ingest.ascend.csv import rows
from canning_tb.ingest.ascend.csv import tables as T
from canning_tb.ingest.table import NONE, Kind, Strings
from canning_tb.ingest import side_tables as side

KERNEL_HEAD = ("Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim,Device_id,Stream ID,Input Shapes,"
               "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,aicore_time(us),"
               "aiv_time(us),Mix Block Dim,cube_utilization(%),aic_mac_ratio, aiv_vec_ratio ,aic_mac_time(us),"
               "aic_l2_hit_rate,aiv_vec_total,aic_empty_ratio")
KERNEL_ROWS = [
    # 1: a compute kernel, every column set
    'MatMul_1,MatMulV2,AI_CORE,1000.5,2.25,8,0,3,"""2,3""",FLOAT16;INT32,ND;ND,"""2,4""",FLOAT16,ND,2.5,0.125,1,'
    '50.5,0.25,0.5,1.5,0.75,9,',
    # 2: a collective by its name; no type, no shapes, device N/A (-> the hint)
    'hcom_allReduce__1_0_1,N/A,AI_CPU,1001,1,N/A,N/A,N/A,,,,,,,,,,,,,,,,',
    # 3: no start time: skipped (data row 3, still counted among the rows); its duration 'inf' is not counted again
    'Add_2,Add,AI_VECTOR_CORE,N/A,inf,1,0,3,"""1""",,,,,,,,,,,,,,,',
    # 4: a dimension of 19 digits in Input Shapes (kept as text), negative duration (0), a collective by its core
    'Send_3,Send,communication,1002.001,-5,2,1,4,"""1234567890123456789,2""",,,,,,,,,,,,,,,',
    # 5: a duration that is no number in range: skipped
    'Add_4,Add,AI_CORE,1003,inf,1,0,3,,,,,,,,,,,,,,,,',
    # 6: a collective by its type; a device of 10 digits (no device: the hint); a duration N/A (kept, 0)
    'x_5,hcomBroadcast,AI_CORE,1004,N/A,1,1234567890,5,,,,,,,,,,,,,,,,',
    # 7: HCOM in capitals is no hcom type, MIX core is no communication core; a 19-digit output dimension
    'Mul_6,HCOMX,MIX_AIC,1005.0005,0.0004,3,1,6,,,,"""1,1234567890123456789""",,,,,,,,,,,,',
    # 8: a second duration out of range: skipped
    'Add_7,Add,AI_CORE,1006,1e400,1,0,3,,,,,,,,,,,,,,,,',
]


def _write(tmp_path, name, head, body, decoys=True):
    """The file, with (decoys) every column again after the others under its name in capitals, each cell 777:
    the readers find a column by its exact name first (CsvTable.col), by its name in any case only when no column
    has it exactly (then the last such column), so no answer below may come from a decoy."""
    if decoys:
        n = len(head.split(","))
        head = head + "," + head.upper()
        body = [row + ",777" * n for row in body]
    p = tmp_path / name
    p.write_text("\n".join([head, *body]) + "\n", encoding="utf-8")
    return str(p)


@pytest.fixture(params=["arrow", "csv module, chunks of 2"])
def reader(request, monkeypatch):
    if request.param != "arrow":
        monkeypatch.setenv("CANNING_CSV_ARROW", "0")
        monkeypatch.setattr(rows, "CHUNK_ROWS", 2)
    return request.param


def _texts(strings, ids):
    return [strings[int(i)] for i in ids]


def test_kernel_details_by_hand(tmp_path, reader):
    """8 data rows, 3 skipped (row 3: no start; rows 5 and 8: 'inf', '1e400'), 5 events in file order:
    ts: 1000.5 us = 1000500 ns, 1001 -> 1001000, 1002.001 -> 1002001, 1004 -> 1004000, 1005.0005 -> 1005000.5
    rounded half up: 1005001 (exact µs text to whole ns);
    dur: 2.25 us = 2250 ns, 1 -> 1000, -5 -> max(-5000, 0) = 0, N/A -> unknown: 0, 0.0004 us = 0.4 ns -> 0;
    device: 0, N/A -> hint 7, 1, 10 digits -> hint 7, 1; stream 3, NONE, 4, 5, 6; blocks 8, NONE, 2, 1, 3.
    Kinds: MatMul KERNEL; hcom_ name COMM; core 'communication' (upper: COMMUNICATION) COMM; type hcomBroadcast
    COMM; 'HCOMX' and MIX_AIC: KERNEL."""
    path = _write(tmp_path, "kernel_details.csv", KERNEL_HEAD, KERNEL_ROWS)
    problems, strings = [], Strings()
    k = T.read_kernel_details(path, "kd", problems, strings, 7)
    e = k.events
    assert len(k) == 5
    assert e["ts"].tolist() == [1000500, 1001000, 1002001, 1004000, 1005001]
    assert e["dur"].tolist() == [2250, 1000, 0, 0, 0]
    assert e["device"].tolist() == [0, 7, 1, 7, 1]
    assert e["stream"].tolist() == [3, NONE, 4, 5, 6]
    assert e["blocks"].tolist() == [8, NONE, 2, 1, 3]
    assert _texts(strings, e["name"]) == ["MatMul_1", "hcom_allReduce__1_0_1", "Send_3", "x_5", "Mul_6"]
    assert _texts(strings, e["core"]) == ["AI_CORE", "AI_CPU", "communication", "AI_CORE", "MIX_AIC"]
    assert _texts(strings, e["shapes"]) == ["[[2, 3]]", None, '["1234567890123456789,2"]', None, None]
    assert _texts(strings, e["cat"]) == ["kernel_details"] * 5
    assert e["kind"].tolist() == [Kind.KERNEL, Kind.COMM_KERNEL, Kind.COMM_KERNEL, Kind.COMM_KERNEL, Kind.KERNEL]
    for col, dtype in (("ts", np.int64), ("dur", np.int64), ("kind", np.uint8), ("name", np.int32),
                       ("device", np.int32), ("stream", np.int64), ("blocks", np.int64), ("args", np.int32)):
        assert e[col].dtype == dtype, col
    assert e["pid"].tolist() == [NONE] * 5 and e["correlation"].tolist() == [NONE] * 5
    args = [None if a is None else json.loads(a) for a in _texts(strings, e["args"])]
    assert args[0] == {"types": ["FLOAT16", "INT32"], "op_type": "MatMulV2", "formats": ["ND", "ND"],
                       "out_shapes": [[2, 4]], "out_types": ["FLOAT16"], "out_formats": ["ND"]}
    assert list(args[0]) == ["types", "op_type", "formats", "out_shapes", "out_types", "out_formats"]
    assert args[1] == {"op_type": "N/A"}  # a text column keeps N/A as text (Level0's kernel types)
    assert args[2] == {"op_type": "Send"} and args[3] == {"op_type": "hcomBroadcast"}
    assert args[4] == {"op_type": "HCOMX", "out_shapes": ["1,1234567890123456789"]}
    # PMU: aicore_time 2.5 us -> 2500 ns, aiv_time 0.125 us -> 125 ns; the ratios and rates by their names;
    # aic_mac_time(us) and aiv_vec_total are neither; aic_empty_ratio has no number: dropped
    m = k.metrics
    assert sorted(m) == sorted(["aic_time_ns", "aiv_time_ns", "mix_block_dim", "cube_utilization_pct",
                                "aic_mac_ratio", "aiv_vec_ratio", "aic_l2_hit_rate"])
    want = {"aic_time_ns": 2500.0, "aiv_time_ns": 125.0, "mix_block_dim": 1.0, "cube_utilization_pct": 50.5,
            "aic_mac_ratio": 0.25, "aiv_vec_ratio": 0.5, "aic_l2_hit_rate": 0.75}
    for name, first in want.items():
        got = m[name].tolist()
        assert m[name].dtype == np.float64 and got[0] == first, name
        assert all(math.isnan(v) for v in got[1:]), name
    got = [(p.severity, p.message) for p in problems]
    assert got[-2:] == [("warning", "1 row(s) without a start time skipped"),
                        ("warning", "2 row(s) with a duration that is no number in range skipped")]
    # the odd cells' warnings in the order first seen (pyarrow: one chunk, the device column checked first)
    assert sorted(got[:-2]) == sorted([
        ("warning", "1 row(s) with a dimension of 19 digits or more in Input Shapes (kept as text); first at data row 4"),
        ("warning", "1 row(s) with a Device_id cell that names no device (a number of 10 digits or more); "
                    "first at data row 6"),
        ("warning", "1 row(s) with a dimension of 19 digits or more in Output Shapes (kept as text); "
                    "first at data row 7")])
    assert {p.file for p in problems} == {"kd"}


def test_kernel_details_of_the_older_headers_without_a_device_column(tmp_path, reader):
    """CANN's op_summary names kernel_details.csv may keep (OP Type, Task Type, Task Start / Duration, Block Num, Stream Id, aic_total_time,
    aiv_total_time, Mix Block Num), no Device_id column: every row on the hint (3), its cells never checked.
    ts 10 us = 10000 ns, 11.5 -> 11500; dur 1 -> 1000, 0.5 -> 500; aic 2 us -> 2000 ns, aiv 3 -> 3000; mix 4 and 5.
    Kinds: task type HCCL COMM; row 2 (Cast, AI_CORE): KERNEL. (The reader asks for 'Name': a file with only
    op_summary's 'Op Name' is refused, as the plain reading refuses it.)"""
    head = ("Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Block Num,Stream Id,"
            "aic_total_time(us),aiv_total_time(us),Mix Block Num")
    path = _write(tmp_path, "kernel_details.csv", head, ["Recv,Recv,HCCL,10,1,2,9,2,3,4",
                                                         "Cast,Cast,AI_CORE,11.5,0.5,1,8,,,5"])
    problems, strings = [], Strings()
    k = T.read_kernel_details(path, "kd", problems, strings, 3)
    e = k.events
    assert e["ts"].tolist() == [10000, 11500] and e["dur"].tolist() == [1000, 500]
    assert e["device"].tolist() == [3, 3] and e["blocks"].tolist() == [2, 1] and e["stream"].tolist() == [9, 8]
    assert _texts(strings, e["name"]) == ["Recv", "Cast"] and _texts(strings, e["core"]) == ["HCCL", "AI_CORE"]
    assert e["kind"].tolist() == [Kind.COMM_KERNEL, Kind.KERNEL]
    assert sorted(k.metrics) == ["aic_time_ns", "aiv_time_ns", "mix_block_dim"]
    assert k.metrics["aic_time_ns"][0] == 2000.0 and math.isnan(k.metrics["aic_time_ns"][1])
    assert k.metrics["aiv_time_ns"][0] == 3000.0 and k.metrics["mix_block_dim"].tolist() == [4.0, 5.0]
    assert problems == []


def test_kernel_details_without_its_columns_or_rows(tmp_path, reader):
    """No Name and no duration column: one error naming both, no rows. A header alone: 0 events of every column,
    no metric with no number. An unreadable file: None (read_table's own error)."""
    problems = []
    path = _write(tmp_path, "a.csv", "Op Name,Start Time(us)", ["x,1"], decoys=False)
    assert T.read_kernel_details(path, "kd", problems, Strings(), NONE) is None
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("kd", "missing column(s) Name, Duration(us)", "error")]
    problems, strings = [], Strings()
    path = _write(tmp_path, "b.csv", "Name,Start Time(us),Duration(us),Type,aicore_time(us)", [])
    k = T.read_kernel_details(path, "kd", problems, strings, NONE)
    assert len(k) == 0 and k.metrics == {} and problems == []
    assert set(k.events) == {"ts", "dur", "kind", "name", "cat", "pid", "tid", "device", "stream", "correlation",
                             "external_id", "shapes", "stack", "core", "blocks", "bytes", "group", "args"}
    assert all(len(v) == 0 for v in k.events.values())
    assert T.read_kernel_details(str(tmp_path / "none.csv"), "kd", problems, Strings(), NONE) is None
    assert len(problems) == 1


def test_kernel_args_by_hand():
    """_kernel_args of (type, input dtypes, input formats, output shapes, output dtypes, output formats):
    blanks stripped, empty or None parts left out, nothing left: None."""
    assert T._kernel_args((" Conv2D ", "FLOAT;INT8", None, '"1,2";"3"', "N/A", "NCHW")) == \
        '{"types":["FLOAT","INT8"],"op_type":"Conv2D","out_shapes":[[1,2],[3]],"out_formats":["NCHW"]}'
    assert T._kernel_args(("  ", None, "", None, None, None)) is None
    assert T._kernel_args((None, None, None, "", None, None)) is None
    assert T._strip("  a ") == "a" and T._strip(" ") is None and T._strip(None) is None


MEMORY_HEAD = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type"


def test_memory_record_by_hand(tmp_path, reader):
    """Rows: (APP, 1.5 us, 1 MB alloc = 1048576 B, reserved 2 -> 2097152, active 0.5 -> 524288, NPU:0);
    (PTA, N/A time: skipped silently); (GE, 'soon': no number, skipped and counted); (PTA+GE, 3 us, empty
    cells -> NONE, ' NPU:1 ' -> npu:1); (WORKSPACE, 2.0005 us -> 2000.5 ns rounds half up to 2001, CPU,
    a device of 10 digits at data row 5 -> a warning). bytes 0, addr and op NONE."""
    path = _write(tmp_path, "memory_record.csv", MEMORY_HEAD, [
        "APP,1.5,1,2,0.5,,NPU:0", "PTA,N/A,1,1,1,,NPU:0", "GE,soon,1,1,1,,NPU:0", "PTA+GE,3,,,,, NPU:1 ",
        "WORKSPACE,2.0005,0.25,,,,NPU:1234567890"])
    problems, strings = [], Strings()
    m = T.read_memory_record(path, "mr", problems, strings)
    assert m["ts"].tolist() == [1500, 3000, 2001]
    assert _texts(strings, m["device"]) == ["npu:0", "npu:1", "npu:1234567890"]
    assert _texts(strings, m["component"]) == ["APP", "PTA+GE", "WORKSPACE"]
    assert m["allocated"].tolist() == [1048576, NONE, 262144]
    assert m["reserved"].tolist() == [2097152, NONE, NONE] and m["active"].tolist() == [524288, NONE, NONE]
    assert m["bytes"].tolist() == [0, 0, 0] and m["addr"].tolist() == [NONE] * 3 and m["op"].tolist() == [NONE] * 3
    assert {k: str(v.dtype) for k, v in m.items()} == {
        "ts": "int64", "device": "int32", "bytes": "int64", "addr": "int64", "allocated": "int64",
        "reserved": "int64", "active": "int64", "component": "int32", "op": "int32"}
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("mr", "1 row(s) with a timestamp that is no number in range skipped", "warning"),
        ("mr", "1 row(s) with a Device Type cell that names no device (a number of 10 digits or more); first at "
               "data row 5", "warning")]


def test_memory_record_without_its_time_or_rows(tmp_path, reader):
    """No Timestamp(us): an error, None. Header only (and the 2023 'Device' name): every column empty."""
    problems = []
    assert T.read_memory_record(_write(tmp_path, "a.csv", "Component,Device", ["x,NPU:0"]), "mr", problems,
                                Strings()) is None
    assert [(p.message, p.severity) for p in problems] == [("missing column Timestamp(us)", "error")]
    problems = []
    m = T.read_memory_record(_write(tmp_path, "b.csv", "Timestamp(us),Device", []), "mr", problems, Strings())
    assert problems == [] and set(m) == {"ts", "device", "bytes", "addr", "allocated", "reserved", "active",
                                         "component", "op"}
    assert all(len(v) == 0 for v in m.values()) and m["ts"].dtype == np.int64
    assert T.read_memory_record(str(tmp_path / "none.csv"), "mr", [], Strings()) is None


def _rows_of(cols):
    return [dict(r) for r in cols]


def test_operator_memory_by_hand(tmp_path, reader):
    """Size 18816.5 KB = 18816.5 * 1024 = 19268096 B; 0.5 KB = 512 B; N/A -> None. Times in µs to ns, none ->
    -1 (NONE, the side table's 'unknown'). Device Type: NPU:0 -> npu:0; 10 digits -> a warning at data row 3."""
    head = "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Device Type"
    path = _write(tmp_path, "operator_memory.csv", head, [
        "aten::empty_strided,18816.5,1.5,2.25,,NPU:0", ",0.5,3,,,NPU:1", "cann::x,N/A,,4,,NPU:9999999999"])
    problems = []
    got = T.read_operator_memory(path, "om", problems)
    assert _rows_of(got) == [
        {"name": "aten::empty_strided", "bytes": 19268096, "alloc_ns": 1500, "free_ns": 2250, "device": "npu:0"},
        {"name": "", "bytes": 512, "alloc_ns": 3000, "free_ns": -1, "device": "npu:1"},
        {"name": "cann::x", "bytes": None, "alloc_ns": -1, "free_ns": 4000, "device": "npu:9999999999"}]
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("om", "1 row(s) with a Device Type cell that names no device (a number of 10 digits or more); first at "
               "data row 3", "warning")]
    assert T.read_operator_memory(str(tmp_path / "none.csv"), "om", []) is None


def test_npu_module_mem_by_hand(tmp_path, reader):
    """Reserved 0.5 MB = 524288 B, 2 -> 2097152, '' -> None; time 1.25 us -> 1250 ns, N/A -> None (INT_NULL);
    the 'Device' column (this file's name for it) -> npu:N; 'Device Type' when the file says so."""
    path = _write(tmp_path, "npu_module_mem.csv", "Component,Timestamp(us),Total Reserved(MB),Device", [
        "SLOG,1.25,0.5,NPU:0", "HCCL,N/A,2,NPU:1", ",2,,NPU:12345678901"])
    problems = []
    got = T.read_npu_module_mem(path, "nm", problems)
    assert _rows_of(got) == [
        {"component": "SLOG", "ts_ns": 1250, "reserved_bytes": 524288, "device": "npu:0"},
        {"component": "HCCL", "ts_ns": None, "reserved_bytes": 2097152, "device": "npu:1"},
        {"component": "", "ts_ns": 2000, "reserved_bytes": None, "device": "npu:12345678901"}]
    assert got.data["ts_ns"][1] == side.INT_NULL and got.data["reserved_bytes"][2] == side.INT_NULL
    assert [(p.message, p.severity) for p in problems] == [
        ("1 row(s) with a Device cell that names no device (a number of 10 digits or more); first at data row 3",
         "warning")]
    path = _write(tmp_path, "b.csv", "Component,Timestamp(us),Total Reserved(MB),Device Type", ["RT,1,1,NPU:2"])
    assert _rows_of(T.read_npu_module_mem(path, "nm", [])) == [
        {"component": "RT", "ts_ns": 1000, "reserved_bytes": 1048576, "device": "npu:2"}]
    assert T.read_npu_module_mem(str(tmp_path / "none.csv"), "nm", []) is None


def test_operator_details_by_hand(tmp_path, reader):
    """Shapes normalised ('"1,2";"3"' -> [[1, 2], [3]]), a 19-digit one kept as text with a warning (data row 3);
    stacks joined by ';' without their line ends; the four times µs -> ns, N/A -> None."""
    head = ("Name,Input Shapes,Call Stack,Host Self Duration(us),Host Total Duration(us),Device Self Duration(us),"
            "Device Total Duration(us)")
    path = _write(tmp_path, "operator_details.csv", head, [
        'aten::add,"""1,2"";""3""","a.py(1): f;\r\nb.py(2): g",1.5,2,0.001,N/A', ",,,,,,",
        'x,"""1234567890123456789""",,1,1,1,1'])
    problems = []
    got = T.read_operator_details(path, "od", problems)
    assert _rows_of(got) == [
        {"name": "aten::add", "input_shapes": "[[1, 2], [3]]", "call_stack": "a.py(1): f;b.py(2): g",
         "host_self_ns": 1500, "host_total_ns": 2000, "device_self_ns": 1, "device_total_ns": None},
        {"name": "", "input_shapes": None, "call_stack": None, "host_self_ns": None, "host_total_ns": None,
         "device_self_ns": None, "device_total_ns": None},
        {"name": "x", "input_shapes": '["1234567890123456789"]', "call_stack": None, "host_self_ns": 1000,
         "host_total_ns": 1000, "device_self_ns": 1000, "device_total_ns": 1000}]
    assert [(p.message, p.severity) for p in problems] == [
        ("1 row(s) with a dimension of 19 digits or more in Input Shapes (kept as text); first at data row 3",
         "warning")]
    got = T.read_operator_details(_write(tmp_path, "b.csv", head, []), "od", [])
    assert len(got) == 0 and got.data["host_self_ns"].dtype == np.int64
    assert T.read_operator_details(str(tmp_path / "none.csv"), "od", []) is None


def test_step_trace_by_hand(tmp_path, reader):
    """Steps 'step50' -> 50 and 51; every field µs -> ns (8873.756 -> 8873756; 4028.6750000000175 -> 4028675.0000000175
    ns rounds to 4028675); a column the file lacks (Preparing, Bubble) -> None; N/A -> None."""
    head = ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
            "Communication(Not Overlapped and Exclude Receive)")
    path = _write(tmp_path, "step_trace_time.csv", head, [
        "step50,8873.756,101963.203,4028.6750000000175,105991.878,25744.05,136581.0,N/A", "51,1,2,3,4,5,6,7"])
    got = T.read_step_trace(path, "st", [])
    assert got == [
        {"step": 50, "computing_ns": 8873756, "communication_not_overlapped_ns": 101963203, "overlapped_ns": 4028675,
         "communication_ns": 105991878, "free_ns": 25744050, "stage_ns": 136581000, "bubble_ns": None,
         "communication_not_overlapped_exclude_receive_ns": None, "preparing_ns": None},
        {"step": 51, "computing_ns": 1000, "communication_not_overlapped_ns": 2000, "overlapped_ns": 3000,
         "communication_ns": 4000, "free_ns": 5000, "stage_ns": 6000, "bubble_ns": None,
         "communication_not_overlapped_exclude_receive_ns": 7000, "preparing_ns": None}]
    assert T.read_step_trace(str(tmp_path / "none.csv"), "st", []) is None


def test_op_statistic_by_hand(tmp_path, reader):
    """'OP Type' or the 2023 'Op Type'; Count 57 (an int), times µs -> ns (6.54 -> 6540); empty texts -> ''."""
    head = "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)"
    path = _write(tmp_path, "op_statistic.csv", head, ["TransData,AI_VECTOR_CORE,57,1423.208,6.54,24.969,70.801,16",
                                                       ",,N/A,,,,,"])
    assert T.read_op_statistic(path, "os", []) == [
        {"op_type": "TransData", "core_type": "AI_VECTOR_CORE", "count": 57, "total_ns": 1423208, "min_ns": 6540,
         "avg_ns": 24969, "max_ns": 70801},
        {"op_type": "", "core_type": "", "count": None, "total_ns": None, "min_ns": None, "avg_ns": None,
         "max_ns": None}]
    path = _write(tmp_path, "b.csv", "Op Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us)",
                  ["Add,AI_CORE,1,1,1,1,1"])
    assert T.read_op_statistic(path, "os", [])[0]["op_type"] == "Add"
    assert T.read_op_statistic(str(tmp_path / "none.csv"), "os", []) is None


def test_small_helpers_by_hand():
    """_joined: one part keeps its values in the dtype, none gives an empty array of it, two are concatenated;
    _scaled: a scale of 1.0 gives the array itself, 1000.0 multiplies; _flag: fn once per distinct id, NONE read
    as ''; _giant_dimension / _giant_device at 19 digits / 10 digits."""
    one = T._joined([np.array([1, 2], np.int64)], np.int32)
    assert one.dtype == np.int32 and one.tolist() == [1, 2]
    none = T._joined([], np.int64)
    assert none.dtype == np.int64 and len(none) == 0
    two = T._joined([np.array([1], np.int64), np.array([2, 3], np.int64)], np.int32)
    assert two.dtype == np.int32 and two.tolist() == [1, 2, 3]
    a = np.array([1.5, 2.0])
    assert T._scaled(a, 1.0) is a and T._scaled(a, 1000.0).tolist() == [1500.0, 2000.0]
    s = Strings(["hcom_x", "Add"])
    seen = []

    def fn(v):
        seen.append(v)
        return v.startswith("hcom") or v == ""
    assert T._flag(s, np.array([1, 0, NONE, 1, 0], np.int32), fn).tolist() == [False, True, True, False, True]
    assert sorted(seen) == ["", "Add", "hcom_x"]
    assert T._flag(s, np.zeros(0, np.int32), fn).tolist() == [] and T._flag(s, np.zeros(0, np.int32), fn).dtype == bool
    assert T._giant_dimension("1" * 19) and not T._giant_dimension("1" * 18) and not T._giant_dimension(None)
    assert not T._giant_dimension("123456789,1234567890")
    assert T._giant_device("NPU:1234567890") and not T._giant_device("NPU:123456789") and not T._giant_device(None)
    assert T._known_or((np.array([5, 6]), np.array([True, False])), -9).tolist() == [5, -9]


@pytest.mark.parametrize("device", ["Device ID", "Device Id"])
def test_kernel_details_of_the_other_device_names(tmp_path, device):
    """'Device ID' or 'Device Id' (CANN's op_summary names) read like Device_id: 4 and 5 (no hint); a device of 10
    digits names the column as the file writes it."""
    path = _write(tmp_path, "kernel_details.csv", f"Name,Start Time(us),Duration(us),{device}",
                  ["a,1,1,4", "b,2,1,NPU:5", "c,3,1,1234567890"])
    problems = []
    k = T.read_kernel_details(path, "kd", problems, Strings(), 9)
    assert k.events["device"].tolist() == [4, 5, 9]
    assert [(p.file, p.message) for p in problems] == [
        ("kd", f"1 row(s) with a {device} cell that names no device (a number of 10 digits or more); first at data "
               "row 3")]


def test_memory_files_of_the_other_device_names(tmp_path):
    """memory_record.csv and operator_memory.csv with 'Device' (2023) in place of 'Device Type'; a device of 10
    digits is reported under that name. 1 MB = 1048576 B, 2 KB = 2048 B."""
    problems, strings = [], Strings()
    m = T.read_memory_record(_write(tmp_path, "m.csv", "Timestamp(us),Device,Total Allocated(MB),Component",
                                    ["1,NPU:3,1,APP", "2,NPU:1234567890,,APP"]), "mr", problems, strings)
    assert _texts(strings, m["device"]) == ["npu:3", "npu:1234567890"] and m["allocated"].tolist() == [1048576, NONE]
    assert [(p.file, p.message) for p in problems] == [
        ("mr", "1 row(s) with a Device cell that names no device (a number of 10 digits or more); first at data "
               "row 2")]
    problems = []
    got = T.read_operator_memory(_write(tmp_path, "o.csv", "Name,Size(KB),Device", ["a,2,NPU:4", "b,,NPU:12345678901"]),
                                 "om", problems)
    assert [(r["name"], r["bytes"], r["device"]) for r in got] == [("a", 2048, "npu:4"), ("b", None, "npu:12345678901")]
    assert [(p.file, p.message) for p in problems] == [
        ("om", "1 row(s) with a Device cell that names no device (a number of 10 digits or more); first at data "
               "row 2")]


@pytest.mark.parametrize("fn", [T.read_operator_memory, T.read_npu_module_mem, T.read_operator_details,
                                T.read_step_trace, T.read_op_statistic,
                                lambda p, d, pr: T.read_memory_record(p, d, pr, Strings()),
                                lambda p, d, pr: T.read_kernel_details(p, d, pr, Strings(), NONE)])
def test_a_missing_file_is_named_by_its_display_name(tmp_path, fn):
    """No file: None and one error on the name given for it."""
    problems = []
    assert fn(str(tmp_path / "none.csv"), "shown", problems) is None
    assert [(p.file, p.severity) for p in problems] == [("shown", "error")]


def test_odd_cells_are_reported_on_the_display_name(tmp_path):
    """operator_details.csv's and memory_record.csv's warnings and errors name the file as displayed."""
    problems = []
    T.read_operator_details(_write(tmp_path, "od.csv", "Name,Input Shapes", ['x,"""1234567890123456789"""']), "od",
                            problems)
    assert [p.file for p in problems] == ["od"]
    problems = []
    assert T.read_memory_record(_write(tmp_path, "m.csv", "Component", ["x"]), "mr", problems, Strings()) is None
    assert [(p.file, p.message) for p in problems] == [("mr", "missing column Timestamp(us)")]


def test_odd_cells_count_the_rows_of_every_chunk_before(tmp_path, reader):
    """Five rows, the first odd cells on data rows 4 and 5: with chunks of 2 (rows 1-2, 3-4, 5) the row numbers
    add the rows of both chunks before; two odd devices counted."""
    problems = []
    T.read_operator_details(_write(tmp_path, "od.csv", "Name,Input Shapes",
                                   ["a,1", "b,2", "c,3", "d,4", 'e,"""1234567890123456789"""']), "od", problems)
    assert [p.message for p in problems] == [
        "1 row(s) with a dimension of 19 digits or more in Input Shapes (kept as text); first at data row 5"]
    problems = []
    T.read_npu_module_mem(_write(tmp_path, "nm.csv", "Component,Timestamp(us),Device",
                                 ["a,1,NPU:0", "b,2,NPU:0", "c,3,NPU:0", "d,4,NPU:1234567890", "e,5,NPU:1234567890"]),
                          "nm", problems)
    assert [p.message for p in problems] == [
        "2 row(s) with a Device cell that names no device (a number of 10 digits or more); first at data row 4"]


def test_exact_names_win_over_names_in_other_case(tmp_path, reader):
    """A kernel file whose name and type columns are 'NAME' and 'TYPE' (capitals) beside op_summary's exact
    'Op Name' and 'OP Type': the exact names are read (CsvTable.col: every name exactly, then in any case), so the
    kernel is 'k' of type 'MatMulV2' (args' op_type), not 'n' / 'Add'."""
    path = _write(tmp_path, "kernel_details.csv", "NAME,Op Name,TYPE,OP Type,Start Time(us),Duration(us)",
                  ["n,k,Add,MatMulV2,1,1"], decoys=False)
    strings = Strings()
    k = T.read_kernel_details(path, "kd", [], strings, NONE)
    assert _texts(strings, k.events["name"]) == ["k"]
    assert _texts(strings, k.events["args"]) == ['{"op_type":"MatMulV2"}']


def test_cells_that_look_like_numbers_in_text_columns(tmp_path, reader):
    """Unquoted '5' in Input Shapes and '1' in Input Data Types stay text: shapes [[5]], types ['1'] (not 5.0 or
    '1.0'); a memory record's component '1' and an allocation time of 19 digits in operator_memory are read from
    their text: 1736408883704643.212 us = 1736408883704643212 ns exactly (a float64 would be off by dozens of ns)."""
    path = _write(tmp_path, "kernel_details.csv", "Name,Start Time(us),Duration(us),Input Shapes,Input Data Types,"
                  "aic_mac_ratio", ["a,1,1,5,1,0.5", "b,2,1,7,2,0.25"])
    strings = Strings()
    k = T.read_kernel_details(path, "kd", [], strings, NONE)
    assert _texts(strings, k.events["shapes"]) == ["[[5]]", "[[7]]"]
    assert [json.loads(a) for a in _texts(strings, k.events["args"])] == [{"types": ["1"]}, {"types": ["2"]}]
    strings = Strings()
    m = T.read_memory_record(_write(tmp_path, "m.csv", "Timestamp(us),Total Allocated(MB),Component",
                                    ["1,1,1", "2,2,2"]), "mr", [], strings)
    assert _texts(strings, m["component"]) == ["1", "2"] and m["allocated"].tolist() == [1 << 20, 2 << 20]
    # no device column: device_name of no cell is 'CPU', and no warning names the column
    assert _texts(strings, m["device"]) == ["CPU", "CPU"]
    got = T.read_operator_memory(_write(tmp_path, "o.csv", "Name,Size(KB),Allocation Time(us)",
                                        ["1,1,1736408883704643.212", "2,2,1736408883704644.5"]), "om", [])
    assert [(r["name"], r["bytes"], r["alloc_ns"]) for r in got] == [("1", 1024, 1736408883704643212),
                                                                   ("2", 2048, 1736408883704644500)]


def test_npu_module_mem_warnings_name_the_file(tmp_path):
    problems = []
    T.read_npu_module_mem(_write(tmp_path, "nm.csv", "Component,Device", ["a,NPU:1234567890"]), "nm", problems)
    assert [p.file for p in problems] == ["nm"]
