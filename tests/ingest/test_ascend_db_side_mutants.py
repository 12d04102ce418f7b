"""ingest/ascend/db/side.py under mutation (issue 46): MEMORY_RECORD -> the memory columns, OP_MEMORY,
NPU_MODULE_MEM, OVERLAP_ANALYSIS and analysis.db's StepTraceTime, CommAnalyzerTime, CommAnalyzerBandwidth and
CommAnalyzerMatrix -> side tables; from small db files made here (tests/_ascend_db_make.py, torch_npu's schema).
Every answer by hand: ms x 1e6, µs x 1e3 and decimal MB x 1e6 to ints."""
from __future__ import annotations

import numpy as np

from _ascend_db_make import make_db, open_db
from canning_tb.ingest.ascend.db import side
from canning_tb.ingest.table import NONE, EventTable

STRINGS = [(1, "PTA"), (2, "GE"), (3, "aten::empty"), (4, "cann::op")]


def _db(tmp_path, tables, schema=None):
    path = tmp_path / f"p{len(list(tmp_path.iterdir()))}.db"
    return open_db(make_db(path, {"STRING_IDS": STRINGS, **tables}, schema))


def test_device_names_by_hand():
    """0 .. 0xFFFE are npu:N; 0xFFFF, -1, None and the INT_NULL of a NULL cell are CPU."""
    assert [side._device(d) for d in (0, 7, 0xFFFE, 0xFFFF, -1, None)] == ["npu:0", "npu:7", "npu:65534", "CPU",
                                                                             "CPU", "CPU"]
    assert side._device_of(np.iinfo(np.int64).min) == "CPU" and side._device_of(3, 99) == "npu:3"
    codes, values = side._devices(np.array([5, 1, 5, 0xFFFF, np.iinfo(np.int64).min], np.int64))
    # sorted distinct: INT_NULL 'CPU', 1 'npu:1', 5 'npu:5', 0xFFFF 'CPU' -> values CPU, npu:1, npu:5
    assert values == ["CPU", "npu:1", "npu:5"] and codes.tolist() == [2, 1, 2, 0, 0] and codes.dtype == np.int32
    codes, values = side._devices(np.zeros(0, np.int64))
    assert codes.dtype == np.int32 and codes.shape == (0,) and values == []


def test_memory_record_by_hand(tmp_path):
    """MEMORY_RECORD rows at 300, 100, 200, 100: sorted by time, stable (the first 100 first); NULL totals NONE;
    bytes 0; device npu:N / CPU; component text (NULL: none)."""
    rows = [(1, 300, 10, 20, 15, 0, 0), (2, 100, None, 40, None, 0, 1), (None, 200, 5, None, 6, 0, None),
            (1, 100, 7, 8, 9, 0, 65535)]
    t = EventTable()
    side.read_memory_tables(_db(tmp_path, {"MEMORY_RECORD": rows}), t)
    m, s = t.memory, t.strings
    assert m["ts"].tolist() == [100, 100, 200, 300]
    assert m["allocated"].tolist() == [NONE, 7, 5, 10]
    assert m["reserved"].tolist() == [40, 8, NONE, 20]
    assert m["active"].tolist() == [NONE, 9, 6, 15]
    assert m["bytes"].tolist() == [0, 0, 0, 0]
    assert [s[int(i)] for i in m["component"]] == ["GE", "PTA", None, "PTA"]
    assert [s[int(i)] for i in m["device"]] == ["npu:1", "CPU", "CPU", "npu:0"]
    assert m["op"].tolist() == [NONE] * 4
    assert m["device"].dtype == np.int32 and m["ts"].dtype == np.int64 and m["component"].dtype == np.int32
    assert t.side == {}


def test_memory_record_empty_or_absent(tmp_path):
    """No MEMORY_RECORD rows, or no table: the memory columns stay empty."""
    for tables in ({"MEMORY_RECORD": []}, {}):
        t = EventTable()
        side.read_memory_tables(_db(tmp_path, tables), t)
        assert len(t.memory["ts"]) == 0 and t.side == {}


def test_op_memory_module_mem_overlap_by_hand(tmp_path):
    """OP_MEMORY: name (NULL ''), bytes, alloc / free (NULL -> -1), device; NPU_MODULE_MEM: the ENUM_MODULE name
    (unknown id: its number, NULL: 'None'); OVERLAP_ANALYSIS by start, type 0..3 named, others by number."""
    tables = {
        "OP_MEMORY": [{"name": 3, "size": 1024, "allocationTime": 10, "releaseTime": 20, "deviceId": 0},
                      {"name": None, "size": 2048, "allocationTime": None, "releaseTime": None, "deviceId": 65534},
                      {"name": 4, "size": 512, "allocationTime": 30, "releaseTime": None, "deviceId": None}],
        "NPU_MODULE_MEM": [(1, 50, 4096, 0), (7, 60, 100, 1), (None, 70, 5, 0), (0, 80, 1, 0)],
        "ENUM_MODULE": [(0, "SLOG"), (1, "HCCL")],
        "OVERLAP_ANALYSIS": [(30, 40, 1), (10, 20, 0), (50, 60, 3), (70, 80, 2), (90, 95, 9)],
    }
    t = EventTable()
    side.read_memory_tables(_db(tmp_path, tables), t)
    assert list(t.side["operator_memory"]) == [
        {"name": "aten::empty", "bytes": 1024, "alloc_ns": 10, "free_ns": 20, "device": "npu:0"},
        {"name": "", "bytes": 2048, "alloc_ns": -1, "free_ns": -1, "device": "npu:65534"},
        {"name": "cann::op", "bytes": 512, "alloc_ns": 30, "free_ns": -1, "device": "CPU"}]
    assert list(t.side["npu_module_mem"]) == [
        {"component": "HCCL", "ts_ns": 50, "reserved_bytes": 4096, "device": "npu:0"},
        {"component": "7", "ts_ns": 60, "reserved_bytes": 100, "device": "npu:1"},
        {"component": "None", "ts_ns": 70, "reserved_bytes": 5, "device": "npu:0"},
        {"component": "SLOG", "ts_ns": 80, "reserved_bytes": 1, "device": "npu:0"}]
    assert list(t.side["overlap_analysis"]) == [
        {"name": "Computing", "start_ns": 10, "end_ns": 20}, {"name": "Communication", "start_ns": 30, "end_ns": 40},
        {"name": "Free", "start_ns": 50, "end_ns": 60},
        {"name": "Communication(Not Overlapped)", "start_ns": 70, "end_ns": 80},
        {"name": "9", "start_ns": 90, "end_ns": 95}]
    assert sorted(t.side) == ["npu_module_mem", "operator_memory", "overlap_analysis"]
    # a counter table (ACC_PMU) beside them: its four samples as npu_counters (ingest/ascend/counters.py's rows;
    # the series named as trace_view.json spells them: read_bandwidth, write_band_width)
    t = EventTable()
    side.read_memory_tables(_db(tmp_path, {"ACC_PMU": [(7, 10, 11, 12, 13, 500, 0)]}), t)
    assert sorted(t.side) == ["npu_counters"]
    assert sorted((r["counter"], r["value"], r["ts_ns"], r["device"]) for r in t.side["npu_counters"]) == [
        ("read_bandwidth acc_id 7", 10.0, 500, "npu:0"), ("read_ost acc_id 7", 12.0, 500, "npu:0"),
        ("write_band_width acc_id 7", 11.0, 500, "npu:0"), ("write_ost acc_id 7", 13.0, 500, "npu:0")]
    # no ENUM_MODULE: every module by its number
    t = EventTable()
    side.read_memory_tables(_db(tmp_path, {"NPU_MODULE_MEM": tables["NPU_MODULE_MEM"][:2]}), t)
    assert [r["component"] for r in t.side["npu_module_mem"]] == ["1", "7"]


def test_enum_texts_by_hand():
    """Codes into the distinct names in sorted-id order; two ids of one name share it; empty: int32 codes."""
    null = np.iinfo(np.int64).min
    codes, values = side._enum_texts(np.array([2, 0, 1, null, 2], np.int64), {0: "a", 1: "b", 2: "a"})
    # sorted distinct: INT_NULL 'None', 0 'a', 1 'b', 2 'a'
    assert values == ["None", "a", "b"] and codes.tolist() == [1, 1, 2, 0, 1] and codes.dtype == np.int32
    codes, values = side._enum_texts(np.zeros(0, np.int64), {})
    assert codes.dtype == np.int32 and codes.shape == (0,) and values == []


STEP_ROW = ("step7", 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)  # µs


def test_step_trace_by_hand(tmp_path):
    """StepTraceTime µs -> ns (x 1000): every field, 'step7' -> 7; a step of no number -> None."""
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {"StepTraceTime": [STEP_ROW, ("", None, 1, 1, 1, 1, 1, 1, 1, 1)]}), t)
    assert list(t.side["step_trace"]) == [
        {"step": 7, "computing_ns": 1500, "communication_not_overlapped_ns": 2000, "overlapped_ns": 3000,
         "communication_ns": 4000, "free_ns": 5000, "stage_ns": 6000, "bubble_ns": 7000,
         "communication_not_overlapped_exclude_receive_ns": 8000, "preparing_ns": 9000},
        {"step": None, "computing_ns": None, "communication_not_overlapped_ns": 1000, "overlapped_ns": 1000,
         "communication_ns": 1000, "free_ns": 1000, "stage_ns": 1000, "bubble_ns": 1000,
         "communication_not_overlapped_exclude_receive_ns": 1000, "preparing_ns": 1000}]


def test_step_trace_of_fewer_columns(tmp_path):
    """A StepTraceTime of an older version without stage / bubble / preparing columns: those None, the rest read;
    no StepTraceTime: no table."""
    schema = {"StepTraceTime": "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
                               "overlapped NUMERIC, communication NUMERIC, free NUMERIC"}
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {"StepTraceTime": [("3", 1, 2, 3, 4, 5)]}, schema), t)
    assert list(t.side["step_trace"]) == [
        {"step": 3, "computing_ns": 1000, "communication_not_overlapped_ns": 2000, "overlapped_ns": 3000,
         "communication_ns": 4000, "free_ns": 5000, "stage_ns": None, "bubble_ns": None,
         "communication_not_overlapped_exclude_receive_ns": None, "preparing_ns": None}]
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {}), t)
    assert t.side == {}


def test_comm_ops_by_hand(tmp_path):
    """CommAnalyzerTime: ms -> ns (x 1e6), the start µs -> ns (x 1000); 'Total Op Info' left out; NULL group ''."""
    rows = [("hcom_allReduce__1", "g1", 1000.5, 2.0, 1.5, 0.25, 0.125, 0.0625, "step3", "collective"),
            ("Total Op Info", "g1", 0, 9, 9, 9, 9, 9, "step3", "collective"),
            ("hcom_send__2", None, 7, 1, 0, 0, 0, 1, "4", "p2p")]
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {"CommAnalyzerTime": rows}), t)
    assert list(t.side["comm_ops"]) == [
        {"step": 3, "kind": "collective", "op": "hcom_allReduce__1", "group": "g1", "start_ns": 1000500,
         "elapse_ns": 2000000, "transit_ns": 1500000, "wait_ns": 250000, "synchronization_ns": 125000,
         "idle_ns": 62500},
        {"step": 4, "kind": "p2p", "op": "hcom_send__2", "group": "", "start_ns": 7000, "elapse_ns": 1000000,
         "transit_ns": 0, "wait_ns": 0, "synchronization_ns": 0, "idle_ns": 1000000}]


def test_comm_bandwidth_and_packets_by_hand(tmp_path):
    """CommAnalyzerBandwidth: one comm_bandwidth row per (step, kind, op, group, transport) (the first row's link
    figures; the repeats only add packets); a packet row per readable package size; MB decimal x 1e6, ms x 1e6;
    'Total Op Info' left out."""
    rows = [  # op, group, transport, size MB, time ms, bw, large ratio, package MB, count, total ms, step, type
        ("op1", "g", "HCCS", 2.5, 0.5, 5.0, 0.75, 0.001, 3, 0.25, "step1", "collective"),
        ("Total Op Info", "g", "HCCS", 1, 1, 1, 1, 1, 1, 1, "step1", "collective"),  # skipped, the rest still read
        ("op1", "g", "HCCS", 9.9, 9.9, 9.9, 9.9, 0.002, 4, 0.5, "step1", "collective"),
        ("op1", "g", "RDMA", 1.0, 1.0, 1.0, None, None, None, None, "step1", "collective"),
        ("op1", None, "HCCS", 3.0, 2.0, 1.5, 0.5, 0.004, 1, 1.0, "step1", "collective"),
        ("Total Op Info", "g", "HCCS", 1, 1, 1, 1, 1, 1, 1, "step1", "collective"),
    ]
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {"CommAnalyzerBandwidth": rows}), t)
    key = {"step": 1, "kind": "collective", "op": "op1", "group": "g"}
    assert list(t.side["comm_bandwidth"]) == [
        {**key, "transport": "HCCS", "size_bytes": 2500000, "time_ns": 500000, "bandwidth_gbps": 5.0,
         "large_packet_ratio": 0.75},
        {**key, "transport": "RDMA", "size_bytes": 1000000, "time_ns": 1000000, "bandwidth_gbps": 1.0,
         "large_packet_ratio": None},
        {**key, "group": "", "transport": "HCCS", "size_bytes": 3000000, "time_ns": 2000000, "bandwidth_gbps": 1.5,
         "large_packet_ratio": 0.5}]
    assert list(t.side["comm_packets"]) == [
        {**key, "transport": "HCCS", "packet_bytes": 1000, "count": 3, "time_ns": 250000},
        {**key, "transport": "HCCS", "packet_bytes": 2000, "count": 4, "time_ns": 500000},
        {**key, "group": "", "transport": "HCCS", "packet_bytes": 4000, "count": 1, "time_ns": 1000000}]


def test_comm_matrix_by_hand(tmp_path):
    """CommAnalyzerMatrix: each row a comm_matrix row (link, group, src / dst ranks, transport, MB -> bytes, ms ->
    ns, bandwidth, op), 'allreduce-total' an aggregate."""
    rows = [("hcom_allReduce__1", "g", "0", "1", "HCCS", 2.0, 0.5, 4.0, "step2", "collective", "hcom_allReduce__1"),
            ("allreduce-total", "g", "1", "0", "RDMA", 1.0, 1.0, 1.0, "step2", "collective", None)]
    t = EventTable()
    side.read_analysis_db(_db(tmp_path, {"CommAnalyzerMatrix": rows}), t)
    assert list(t.side["comm_matrix"]) == [
        {"step": 2, "kind": "collective", "group": "g", "link": "hcom_allReduce__1", "aggregate": "", "src": 0,
         "dst": 1, "transport": "HCCS", "bytes": 2000000, "time_ns": 500000, "bandwidth_gbps": 4.0,
         "op": "hcom_allReduce__1"},
        {"step": 2, "kind": "collective", "group": "g", "link": "allreduce-total", "aggregate": "total", "src": 1,
         "dst": 0, "transport": "RDMA", "bytes": 1000000, "time_ns": 1000000, "bandwidth_gbps": 1.0, "op": None}]
    assert sorted(t.side) == ["comm_matrix"]


def test_the_fixture_step_trace_has_the_exclude_receive_figure():
    """torch_npu names the column communication_not_overlapped_and_exclude_receive (db_level1's analysis.db): read
    as communication_not_overlapped_exclude_receive_ns, µs x 1000 by sqlite3 here. It was always None (the reader
    looked for the column without '_and_')."""
    import sqlite3

    from canning_tb.ingest.ascend.read import read_ascend
    from conftest import fixture_path
    folder = fixture_path("ascend", "db_level1", "rank0_ascend_pt")
    path = folder / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as c:
        want = [round(v * 1000) for (v,) in c.execute(
            "select communication_not_overlapped_and_exclude_receive from StepTraceTime")]
    assert want and all(v > 0 for v in want)
    rows = list(read_ascend(str(folder)).side["step_trace"])
    assert [r["communication_not_overlapped_exclude_receive_ns"] for r in rows] == want
