"""ingest/ascend/db/device.py under mutation (issue 46): TASK joined with COMPUTE_TASK_INFO and the latest
COMMUNICATION_TASK_INFO row (names, cores, kinds, categories, shapes, groups, bytes, blocks, `args`), TASK_PMU_INFO's
metrics, the MIX block dim, and COMMUNICATION_OP's bytes = count x data type size; from a small profiler db made here
(tests/_ascend_db_make.py, torch_npu's schema). Every answer by hand."""
from __future__ import annotations

import numpy as np
import pytest

from _ascend_db_make import make_db, open_db
from canning_tb.ingest.ascend.db import device
from canning_tb.ingest.table import NONE, EventTable, Kind

STRINGS = [(1, "aclnnMm_MatMulV2"), (2, "AI_CORE"), (3, "MatMulV2"), (4, "FLOAT16;FLOAT16"), (5, "ND;ND"),
           (6, "4,8"), (7, "FLOAT16"), (8, "ND"), (9, "2,4;4,8"), (10, "hcom_allReduce__1"), (11, "MEMCPY_ASYNC"),
           (12, "MEMSET"), (13, "Notify_Wait"), (14, "group_a"), (15, "Reduce_Inline"), (16, "EVENT_RECORD"),
           (17, "AI_VECTOR_CORE"), (18, "aic_total_time"), (19, "aiv_total_time"), (20, "aic_mac_ratio"),
           (21, "aic_icache_miss_rate"), (22, "other_metric"), (23, "hcom_broadcast_")]

# startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, contextId, streamId, taskId, modelId
TASKS = [
    (100, 150, 0, 5000, 1, 77, 2, 0, 3, 0, 0),  # t0: compute, every info cell
    (200, 180, 0, 5001, 2, 77, 2, 0, 3, 0, 0),  # t1: compute hcom_*, ends before it starts, a MIX block dim
    (300, 400, 0, None, 3, 77, 2, 0, 4, 0, 0),  # t2: communication, two info rows (the later wins)
    (500, 600, 0, 5000, 4, 77, 11, 0, None, 0, 0),  # t3: no info, MEMCPY_ASYNC
    (700, 800, 1, 5002, 5, None, 12, 0, 5, 0, 0),  # t4: no info, MEMSET, device 1
    (900, 950, None, 5003, 6, 77, 16, 0, 5, 0, 0),  # t5: no info, EVENT_RECORD, no device
    (1000, 1100, 0, 5004, 7, 77, None, 0, 5, 0, 0),  # t6: no info, no task type
    (1200, 1300, 0, None, 8, 77, 2, 0, 6, 0, 0),  # t7: communication, named, no size
    (1400, 1500, 0, None, 9, 77, 2, 0, 6, 0, 0),  # t8: compute and communication info: compute
    (1600, 1700, 0, None, 10, 77, 16, 0, 6, 0, 0),  # t9: communication, no name nor type
]
# name, globalTaskId, blockDim, mixBlockDim, taskType, opType, inputFormats, inputDataTypes, inputShapes,
# outputFormats, outputDataTypes, outputShapes, attrInfo
COMPUTE = [(1, 1, 8, None, 17, 3, 5, 4, 9, 8, 7, 6, None), (10, 2, None, 24, None, None, None, None, None, None, None,
                                                              None, None),
           (None, 9, 2, None, None, None, None, None, None, None, None, None, None)]
# name, globalTaskId, taskType, planeId, groupName, notifyId, rdmaType, srcRank, dstRank, transportType, size, ...
COMM = [(13, 3, 15, 0, 14, None, None, 0, 1, None, 100, None, None, None),
        (13, 8, 15, 0, 14, None, None, 0, 1, None, None, None, None, None),
        (None, 3, 15, 0, 14, None, None, 0, 1, None, 256, None, None, None),
        (13, 9, 15, 0, 14, None, None, 0, 1, None, 64, None, None, None),
        (None, 10, None, 0, None, None, None, 0, 1, None, 8, None, None, None)]
PMU = [(1, 18, 1000), (1, 18, 1500), (2, 19, 300), (1, 20, 0.5), (2, 21, 0.25), (1, 22, 9), (3, 20, "text"),
       (99, 20, 0.75), (4, None, 5)]
LINKS = (np.array([5000, 5002]), np.array([42, 43]))
ARGS0 = ('{"types":["FLOAT16","FLOAT16"],"op_type":"MatMulV2","formats":["ND","ND"],"out_shapes":[[4,8]],'
         '"out_types":["FLOAT16"],"out_formats":["ND"]}')


def _db(tmp_path, tables, schema=None):
    path = tmp_path / f"p{len(list(tmp_path.iterdir()))}.db"
    return open_db(make_db(path, {"STRING_IDS": STRINGS, **tables}, schema))


def _texts(s, col):
    return [s[int(i)] for i in col]


def _read(db, known=(0,)):
    t = EventTable()
    t.meta.devices = [{"kind": "npu", "index": d, "name": "Ascend (x)"} for d in known]
    (tasks, metrics), (ops, none) = device.read_device_tasks(db, t, LINKS)
    assert none == {}
    return t, tasks, metrics, ops


def test_tasks_columns_by_hand(tmp_path):
    """t0..t9 in TASK's order: times, dur = max(end - start, 0), device / stream / tid / pid (NULL -> NONE),
    correlation = connectionId, external id by the host's links (5000 -> 42)."""
    db = _db(tmp_path, {"TASK": TASKS, "COMPUTE_TASK_INFO": COMPUTE, "COMMUNICATION_TASK_INFO": COMM})
    t, ev, _, _ = _read(db)
    assert ev["ts"].tolist() == [100, 200, 300, 500, 700, 900, 1000, 1200, 1400, 1600]
    assert ev["dur"].tolist() == [50, 0, 100, 100, 100, 50, 100, 100, 100, 100]
    assert ev["device"].tolist() == [0, 0, 0, 0, 1, NONE, 0, 0, 0, 0]
    assert ev["stream"].tolist() == ev["tid"].tolist() == [3, 3, 4, NONE, 5, 5, 5, 6, 6, 6]
    assert ev["pid"].tolist() == [77, 77, 77, 77, NONE, 77, 77, 77, 77, 77]
    assert ev["correlation"].tolist() == [5000, 5001, NONE, 5000, 5002, 5003, 5004, NONE, NONE, NONE]
    assert ev["external_id"].tolist() == [42, NONE, NONE, 42, 43, NONE, NONE, NONE, NONE, NONE]
    # devices 0 (known already) and 1 (new: noted); NONE never
    assert t.meta.devices == [{"kind": "npu", "index": 0, "name": "Ascend (x)"},
                              {"kind": "npu", "index": 1, "name": "Ascend"}]


def test_tasks_names_kinds_by_hand(tmp_path):
    """Compute tasks: their op name (NULL: the TASK's type), core their info's type (NULL: the TASK's), KERNEL or
    COMM_KERNEL for hcom*, cat task; communication: the latest info row's name, else its type, else the TASK's type,
    no core, OTHER, cat hccl_task, its group and size; the others: MEMCPY / MEMSET by type, else OTHER, core the
    type (none for no type). Blocks of compute tasks only."""
    db = _db(tmp_path, {"TASK": TASKS, "COMPUTE_TASK_INFO": COMPUTE, "COMMUNICATION_TASK_INFO": COMM})
    t, ev, _, _ = _read(db)
    s = t.strings
    assert _texts(s, ev["name"]) == ["aclnnMm_MatMulV2", "hcom_allReduce__1", "Reduce_Inline", "MEMCPY_ASYNC",
                                     "MEMSET", "EVENT_RECORD", "", "Notify_Wait", "AI_CORE", "EVENT_RECORD"]
    assert _texts(s, ev["core"]) == ["AI_VECTOR_CORE", "AI_CORE", None, "MEMCPY_ASYNC", "MEMSET", "EVENT_RECORD",
                                     None, None, "AI_CORE", None]
    assert ev["kind"].tolist() == [Kind.KERNEL, Kind.COMM_KERNEL, Kind.OTHER, Kind.MEMCPY, Kind.MEMSET, Kind.OTHER,
                                   Kind.OTHER, Kind.OTHER, Kind.KERNEL, Kind.OTHER]
    assert ev["kind"].dtype == np.uint8 and ev["cat"].dtype == np.int32
    assert _texts(s, ev["cat"]) == ["task", "task", "hccl_task", "task", "task", "task", "task", "hccl_task", "task",
                                    "hccl_task"]
    assert _texts(s, ev["group"]) == [None, None, "group_a", None, None, None, None, "group_a", None, None]
    assert ev["bytes"].tolist() == [NONE, NONE, 256, NONE, NONE, NONE, NONE, NONE, NONE, 8]
    assert ev["blocks"].tolist() == [8, NONE, NONE, NONE, NONE, NONE, NONE, NONE, 2, NONE]
    assert _texts(s, ev["shapes"]) == ["[[2, 4], [4, 8]]"] + [None] * 9
    assert _texts(s, ev["args"]) == [ARGS0] + [None] * 9


def test_pmu_metrics_by_hand(tmp_path):
    """TASK_PMU_INFO: aic / aiv total times (ns) and *_ratio / *_rate names as metrics, the latest row of a task
    wins (t0's aic 1000 then 1500), text and NULL names skipped, other names no metric; the MIX block dim of compute
    tasks (t1: 24). A metric no task has (other_metric) is left out."""
    db = _db(tmp_path, {"TASK": TASKS, "COMPUTE_TASK_INFO": COMPUTE, "COMMUNICATION_TASK_INFO": COMM,
                        "TASK_PMU_INFO": PMU})
    _, _, metrics, _ = _read(db)
    assert sorted(metrics) == ["aic_icache_miss_rate", "aic_mac_ratio", "aic_time_ns", "aiv_time_ns",
                               "mix_block_dim"]

    def at(name):
        col = metrics[name]
        assert col.dtype == np.float64 and len(col) == 10
        return {i: v for i, v in enumerate(col.tolist()) if not np.isnan(v)}
    assert at("aic_time_ns") == {0: 1500.0}
    assert at("aiv_time_ns") == {1: 300.0}
    assert at("aic_mac_ratio") == {0: 0.5}
    assert at("aic_icache_miss_rate") == {1: 0.25}
    assert at("mix_block_dim") == {1: 24.0}


def test_pmu_without_wanted_names_and_no_mix(tmp_path):
    """TASK_PMU_INFO holding only names that are no metric: no metric, no error (the SQL `in ()` never runs);
    COMPUTE_TASK_INFO without mixBlockDim nor the args' columns: no MIX metric, no args, NULL blocks."""
    schema = {"COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, "
                                   "taskType INTEGER, inputShapes INTEGER"}
    db = _db(tmp_path, {"TASK": TASKS[:2], "COMPUTE_TASK_INFO": [(1, 1, 8, 17, 9), (10, 2, None, None, 24)],
                        "TASK_PMU_INFO": [(1, 22, 3.0)]}, schema)
    t, ev, metrics, _ = _read(db)
    assert metrics == {}
    assert _texts(t.strings, ev["args"]) == [None, None]
    assert ev["blocks"].tolist() == [8, NONE]
    assert _texts(t.strings, ev["name"]) == ["aclnnMm_MatMulV2", "hcom_allReduce__1"]
    assert ev["kind"].tolist() == [Kind.KERNEL, Kind.COMM_KERNEL]


def test_tasks_without_info_tables(tmp_path):
    """TASK alone: every task plain (MEMCPY / MEMSET / OTHER by its type), cat task, no bytes nor blocks."""
    db = _db(tmp_path, {"TASK": TASKS[3:7]})
    t, ev, metrics, _ = _read(db)
    assert ev["kind"].tolist() == [Kind.MEMCPY, Kind.MEMSET, Kind.OTHER, Kind.OTHER]
    assert _texts(t.strings, ev["cat"]) == ["task"] * 4
    assert _texts(t.strings, ev["core"]) == ["MEMCPY_ASYNC", "MEMSET", "EVENT_RECORD", None]
    assert ev["bytes"].tolist() == ev["blocks"].tolist() == [NONE] * 4
    assert metrics == {}
    # no TASK rows at all
    t, ev, metrics, _ = _read(_db(tmp_path, {"TASK": []}))
    assert len(ev["ts"]) == 0 and ev["kind"].dtype == np.uint8 and metrics == {}


# opName, startNs, endNs, connectionId, groupName, opId, relay, retry, dataType, algType, count, opType
OPS = [(23, 1000, 2000, 5000, 14, 1, 0, 0, 1, 0, 10, 0),  # fp32: 10 x 4 = 40 bytes
       (None, 3000, 2500, None, None, 2, 0, 0, 2, 0, 2.6, 0),  # fp16: rint(2.6) = 3 x 2 = 6
       (23, 4000, 4100, 5001, 14, 3, 0, 0, 3, 0, 5, 0),  # 'weird': no size
       (23, 5000, 5100, 5002, 14, 4, 0, 0, 1, 0, None, 0),  # no count
       (23, 6000, 6100, 5003, 14, 5, 0, 0, 0, 0, 2**62, 0),  # int8, 2**62: past the limit
       (23, 6500, 6600, 5003, 14, 6, 0, 0, 0, 0, 2**62 - 1024, 0),  # int8, just under: 2**62 - 1024 bytes
       (23, 7000, 7100, 5004, 14, 7, 0, 0, 99, 0, 4, 0),  # a type the enum lacks
       (23, 7500, 7600, 5005, 14, 8, 0, 0, None, 0, 4, 0)]  # no type
DTYPES = [(0, "int8"), (1, "fp32"), (2, "fp16"), (3, "weird")]


def test_communication_ops_by_hand(tmp_path):
    """COMMUNICATION_OP rows: COMM_KERNEL, cat communication_op, core HCCL, name (NULL: ''), group, correlation and
    external id (5000 -> 42, 5002 -> 43), bytes = rint(count) x the enum type's size (lower-case names), NONE for no
    size / no count / |count| >= 2**62; device: the tasks' one device (0)."""
    db = _db(tmp_path, {"TASK": TASKS[:1], "COMMUNICATION_OP": OPS, "ENUM_HCCL_DATA_TYPE": DTYPES})
    t, _, _, ev = _read(db)
    s = t.strings
    assert ev["ts"].tolist() == [1000, 3000, 4000, 5000, 6000, 6500, 7000, 7500]
    assert ev["dur"].tolist() == [1000, 0, 100, 100, 100, 100, 100, 100]
    assert ev["bytes"].tolist() == [40, 6, NONE, NONE, NONE, 2**62 - 1024, NONE, NONE]
    assert ev["kind"].tolist() == [Kind.COMM_KERNEL] * 8 and ev["kind"].dtype == np.uint8
    assert _texts(s, ev["name"]) == ["hcom_broadcast_", ""] + ["hcom_broadcast_"] * 6
    assert _texts(s, ev["cat"]) == ["communication_op"] * 8 and _texts(s, ev["core"]) == ["HCCL"] * 8
    assert ev["cat"].dtype == np.int32 and ev["core"].dtype == np.int32 and ev["device"].dtype == np.int32
    assert _texts(s, ev["group"]) == ["group_a", None] + ["group_a"] * 6
    assert ev["correlation"].tolist() == [5000, NONE, 5001, 5002, 5003, 5003, 5004, 5005]
    assert ev["external_id"].tolist() == [42, NONE, NONE, 43, NONE, NONE, NONE, NONE]
    assert ev["device"].tolist() == [0] * 8


def test_communication_ops_device_and_absence(tmp_path):
    """Tasks on two devices (0, 1), or no TASK table: the ops' device is NONE; no COMMUNICATION_OP: no ops; no
    enum table: no size, no bytes; an empty COMMUNICATION_OP: no ops."""
    db = _db(tmp_path, {"TASK": [TASKS[0], TASKS[4]], "COMMUNICATION_OP": OPS[:1], "ENUM_HCCL_DATA_TYPE": DTYPES})
    t, _, _, ev = _read(db, known=())
    assert ev["device"].tolist() == [NONE] and ev["bytes"].tolist() == [40]
    assert [d["index"] for d in t.meta.devices] == [0, 1] and t.meta.devices[0]["name"] == "Ascend"
    _, tasks, metrics, ev = _read(_db(tmp_path, {"COMMUNICATION_OP": OPS[:2]}))
    assert len(tasks["ts"]) == 0 and metrics == {}
    assert ev["device"].tolist() == [NONE, NONE] and ev["bytes"].tolist() == [NONE, NONE]
    _, _, _, ev = _read(_db(tmp_path, {"TASK": TASKS[:1]}))
    assert len(ev["ts"]) == 0
    _, _, _, ev = _read(_db(tmp_path, {"COMMUNICATION_OP": [], "ENUM_HCCL_DATA_TYPE": DTYPES}))
    assert len(ev["ts"]) == 0 and ev["bytes"].dtype == np.int64


EMPTY = 24  # a STRING_IDS id whose text is '' (no name)


def _small(tmp_path, seed=()):
    """Three tasks whose info names / types are '' (t0 compute, t1 communication) or whose type is '' (t2, no
    info), and a compute task whose info cells are a STRING_IDS id of -2**63 (t3); `seed`: strings the table holds
    already (the first has id 0)."""
    tables = {"STRING_IDS": STRINGS + [(EMPTY, ""), (-2**63, "ghost")],
              "TASK": [(10, 20, 0, None, 1, 7, 2, 0, 1, 0, 0), (30, 40, 0, None, 2, 7, 16, 0, 1, 0, 0),
                       (50, 60, 0, None, 3, 7, EMPTY, 0, 1, 0, 0), (70, 80, 0, None, 4, 7, 2, 0, 1, 0, 0)],
              "COMPUTE_TASK_INFO": [(EMPTY, 1, 1, None, EMPTY, None, None, None, None, None, None, None, None),
                                    (3, 4, 1, None, 17, -2**63, -2**63, -2**63, -2**63, -2**63, -2**63, -2**63,
                                     None)],
              "COMMUNICATION_TASK_INFO": [(EMPTY, 2, EMPTY, 0, 14, None, None, 0, 1, None, 8, None, None, None)]}
    db = _db(tmp_path, tables)
    t = EventTable()
    for x in seed:
        t.strings.id(x)
    (ev, _), _ = device.read_device_tasks(db, t, LINKS)
    return t, ev


@pytest.mark.parametrize("seed", [(), ("MatMulV2",), ("AI_VECTOR_CORE",), ("Notify_Wait",), ("Reduce_Inline",)])
def test_empty_names_and_types_and_id_0(tmp_path, seed):
    """An info name or type of '' is none: the compute task t0 is named and cored by its TASK type (AI_CORE), the
    communication task t1 by its TASK type (EVENT_RECORD); a TASK type of '' (t2) is the name '' and no core. A NULL
    cell read where STRING_IDS holds -2**63 is still no text (t3: no args). Whatever string has id 0 in the table
    already (the seed), it is a name like any other: t3's MatMulV2 is named by its info, cored AI_VECTOR_CORE."""
    t, ev = _small(tmp_path, seed)
    names = [t.strings[int(i)] for i in ev["name"]]
    cores = [t.strings[int(i)] for i in ev["core"]]
    assert names == ["AI_CORE", "EVENT_RECORD", "", "MatMulV2"]
    assert cores == ["AI_CORE", None, None, "AI_VECTOR_CORE"]
    assert ev["args"].tolist() == [NONE] * 4 and ev["args"].dtype == np.int32
    assert ev["kind"].tolist() == [Kind.KERNEL, Kind.OTHER, Kind.OTHER, Kind.KERNEL]


def test_communication_names_with_id_0(tmp_path):
    """The latest communication info's name (Notify_Wait) or type (Reduce_Inline) is the name, also when that
    string is the table's id 0."""
    for seed, info, want in ((("Notify_Wait",), (13, 2, 15), "Notify_Wait"), (("Reduce_Inline",), (None, 2, 15),
                                                                              "Reduce_Inline")):
        db = _db(tmp_path, {"TASK": [(30, 40, 0, None, 2, 7, 16, 0, 1, 0, 0)], "COMMUNICATION_TASK_INFO": [
            (*info, 0, 14, None, None, 0, 1, None, 8, None, None, None)]})
        t = EventTable()
        t.strings.id(seed[0])
        (ev, _), _ = device.read_device_tasks(db, t, LINKS)
        assert [t.strings[int(i)] for i in ev["name"]] == [want]


def test_plain_kinds_by_the_task_type_as_name_and_type(tmp_path):
    """Tasks without info: classified by their type as both name and type (ingest/ascend/hardware.py):
    'hccl_MEMCPY' is an HCCL name (a collective's task: OTHER, not a copy), 'Memset' a MEMSET by its type; a
    communication task whose TASK type is MEMCPY_ASYNC stays OTHER (its info decides)."""
    db = _db(tmp_path, {"STRING_IDS": STRINGS + [(25, "hccl_MEMCPY"), (26, "Memset")],
                        "TASK": [(10, 20, 0, None, 1, 7, 25, 0, 1, 0, 0), (30, 40, 0, None, 2, 7, 26, 0, 1, 0, 0),
                                 (50, 60, 0, None, 3, 7, 11, 0, 1, 0, 0)],
                        "COMMUNICATION_TASK_INFO": [(13, 3, 15, 0, 14, None, None, 0, 1, None, 8, None, None, None)]})
    t, ev, _, _ = _read(db)
    assert ev["kind"].tolist() == [Kind.OTHER, Kind.MEMSET, Kind.OTHER]
    assert [t.strings[int(i)] for i in ev["cat"]] == ["task", "task", "hccl_task"]


def test_times_held_as_text_must_be_integers(tmp_path):
    """A TASK or COMMUNICATION_OP start / end held as text that is no integer: ValueError naming the column."""
    ops = {"ENUM_HCCL_DATA_TYPE": DTYPES}
    for table, row, column in (("TASK", ("x1", 150, 0, None, 1, 77, 2, 0, 3, 0, 0), "startNs"),
                               ("TASK", (100, "15x", 0, None, 1, 77, 2, 0, 3, 0, 0), "endNs"),
                               ("COMMUNICATION_OP", (23, "t", 2000, 5000, 14, 1, 0, 0, 1, 0, 10, 0), "startNs"),
                               ("COMMUNICATION_OP", (23, 1000, "-", 5000, 14, 1, 0, 0, 1, 0, 10, 0), "endNs")):
        with pytest.raises(ValueError) as e:
            _read(_db(tmp_path, {table: [row], **ops}))
        assert str(e.value).startswith(f"{column} holds ")


def test_metrics_every_task_has(tmp_path):
    """One compute task with a MIX block dim and an aic total time: both metrics kept (no NaN in either)."""
    db = _db(tmp_path, {"TASK": TASKS[:1], "COMPUTE_TASK_INFO": [(1, 1, 8, 4, 17, None, None, None, None, None, None,
                                                                   None, None)],
                        "TASK_PMU_INFO": [(1, 18, 250)]})
    _, _, metrics, _ = _read(db)
    assert sorted(metrics) == ["aic_time_ns", "mix_block_dim"]
    assert metrics["mix_block_dim"].tolist() == [4.0] and metrics["aic_time_ns"].tolist() == [250.0]
