"""Device tasks of the torch_npu SQLite export (TASK, COMPUTE_TASK_INFO, COMMUNICATION_TASK_INFO,
COMMUNICATION_OP, TASK_PMU_INFO) -> event columns, joined in SQL. Mapping in docs/formats/ascend.md:
compute tasks are KERNEL (``hcom*`` names COMM_KERNEL), HCCL plane sub-tasks OTHER, COMMUNICATION_OP
rows COMM_KERNEL with bytes = count x data type size; TASK rows without task info stay MEMCPY / MEMSET
/ OTHER (among them an AI_CORE task per HCCL op spanning the whole op: counting it as a kernel would
count the communication twice)."""
from __future__ import annotations

import json

import numpy as np

from canning_tb.ingest import op_args
from canning_tb.ingest.ascend.csv.rows import norm_shapes
from canning_tb.ingest.ascend.hardware import DTYPE_BYTES, classify_hardware
from canning_tb.ingest.table import METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_MIX_BLOCK_DIM, NONE, Kind, blank_events
from canning_tb.util.arrays import distinct

from . import columns as q

_PMU_TIMES = {"aic_total_time": METRIC_AIC_TIME, "aiv_total_time": METRIC_AIV_TIME}  # ns in the db


def _task_source(db) -> tuple[str, list[str]]:
    """The TASK rows joined with their compute info and their latest communication info (SQL)."""
    info = db.columns("COMPUTE_TASK_INFO")
    mix = "ci.mixBlockDim" if "mixBlockDim" in info else "NULL"
    compute = "COMPUTE_TASK_INFO" in db.tables
    comm = "COMMUNICATION_TASK_INFO" in db.tables
    more = "".join(f", {'ci.' + c if compute and c in info else 'NULL'} as {a}" for a, c in _ARG_COLUMNS.items())
    parts = ["select t.rowid as rid, t.startNs, t.endNs, t.deviceId, t.connectionId, t.globalTaskId, t.globalPid, "
             "t.taskType, t.streamId",
             (f", ci.globalTaskId as c_gid, ci.name as c_name, ci.blockDim as c_blk, ci.taskType as c_type, "
              f"ci.inputShapes as c_shapes, {mix} as c_mix") if compute else
             ", NULL as c_gid, NULL as c_name, NULL as c_blk, NULL as c_type, NULL as c_shapes, NULL as c_mix",
             more,
             ", cm.globalTaskId as m_gid, cm.name as m_name, cm.taskType as m_type, cm.size as m_size, "
             "cm.groupName as m_group"
             if comm else ", NULL as m_gid, NULL as m_name, NULL as m_type, NULL as m_size, NULL as m_group",
             " from TASK t"]
    if compute:
        parts.append(" left join COMPUTE_TASK_INFO ci on ci.globalTaskId = t.globalTaskId")
    if comm:
        parts.append(" left join (select globalTaskId as g, max(rowid) as last from COMMUNICATION_TASK_INFO"
                     " group by globalTaskId) latest on latest.g = t.globalTaskId"
                     " left join COMMUNICATION_TASK_INFO cm on cm.rowid = latest.last")
    ints = ["startNs", "endNs", "deviceId", "connectionId", "globalTaskId", "globalPid", "taskType", "streamId",
            "c_gid", "c_name", "c_blk", "c_type", "c_shapes", "c_mix", "m_gid", "m_name", "m_type", "m_size", "m_group",
            *_ARG_COLUMNS]
    return "(" + "".join(parts) + ")", ints


# COMPUTE_TASK_INFO columns (STRING_IDS ids) -> the `args` of its kernel (ingest/op_args.py)
_ARG_COLUMNS = {"a_optype": "opType", "a_types": "inputDataTypes", "a_formats": "inputFormats",
                "a_out_shapes": "outputShapes", "a_out_types": "outputDataTypes", "a_out_formats": "outputFormats"}


def _kernel_args(db, strings, c: dict, compute: np.ndarray) -> np.ndarray:
    """The `args` id of each compute task, made once per distinct set of its six cells."""
    out = np.full(len(compute), NONE, np.int32)
    rows = np.flatnonzero(compute)
    if not len(rows):
        return out
    cells = np.stack([c[a][rows] for a in _ARG_COLUMNS], axis=1)
    uniq, inverse = np.unique(cells, axis=0, return_inverse=True)
    ids = []
    for u in uniq.tolist():
        optype, types, formats, out_shapes, out_types, out_formats = (
            None if x == q.INT_NULL else db.strings.get(x) for x in u)
        shapes = norm_shapes(out_shapes)
        text = op_args.encode(op_type=optype or None, types=op_args.split_list(types),
                              formats=op_args.split_list(formats), out_shapes=json.loads(shapes) if shapes else None,
                              out_types=op_args.split_list(out_types), out_formats=op_args.split_list(out_formats))
        ids.append(NONE if text is None else strings.id(text))
    out[rows] = np.array(ids, np.int32)[inverse.reshape(-1)]
    return out


def _or_none(text):
    return text or None


def _names(db, strings, c: dict, compute: np.ndarray, comm: np.ndarray) -> dict:
    """name / core / shapes / group / cat / kind of each task, by which info it has."""
    task_type = q.text_ids(db, c["taskType"], strings, lambda v: v or "")
    out = {}
    # compute tasks: their op name (else the task type); core = their task type (else the TASK's)
    c_name = q.text_ids(db, c["c_name"], strings, _or_none)
    out["name"] = np.where(compute, np.where(c_name >= 0, c_name, task_type), task_type)
    c_core = q.text_ids(db, c["c_type"], strings, _or_none)
    m_name = q.text_ids(db, c["m_name"], strings, _or_none)
    m_type = q.text_ids(db, c["m_type"], strings, _or_none)
    out["name"] = np.where(comm, np.where(m_name >= 0, m_name, np.where(m_type >= 0, m_type, task_type)), out["name"])
    plain_core = q.text_ids(db, c["taskType"], strings, lambda v: v or None)
    out["core"] = np.where(compute, np.where(c_core >= 0, c_core, task_type), np.where(comm, NONE, plain_core))
    out["shapes"] = np.where(compute, q.text_ids(db, c["c_shapes"], strings, norm_shapes), NONE)
    out["group"] = np.where(comm, q.text_ids(db, c["m_group"], strings), NONE)
    uniq, inverse = np.unique(out["name"], return_inverse=True)
    hcom = np.array([(strings[int(i)] or "").startswith("hcom") for i in uniq], bool)[inverse]
    tt, tt_at = np.unique(task_type, return_inverse=True)
    plain_of = [classify_hardware(strings[int(i)] or "", strings[int(i)] or "") for i in tt]
    plain = np.array([k if k in (Kind.MEMCPY, Kind.MEMSET) else Kind.OTHER for k in plain_of], np.uint8)[tt_at] \
        if len(tt) else np.zeros(0, np.uint8)
    out["kind"] = np.where(compute, np.where(hcom, Kind.COMM_KERNEL, Kind.KERNEL),
                           np.where(comm, Kind.OTHER, plain)).astype(np.uint8)
    out["cat"] = np.where(comm & ~compute, strings.id("hccl_task"), strings.id("task")).astype(np.int32)
    return out


def _pmu(db, c: dict, compute: np.ndarray) -> dict[str, np.ndarray]:
    """Event metrics per task: TASK_PMU_INFO's ratios and core times (latest per task), the MIX block dim."""
    out: dict[str, np.ndarray] = {}
    gid = c["globalTaskId"]
    if "TASK_PMU_INFO" in db.tables:
        names = [(i, db.name(i) or "") for (i,) in db.c.execute("select distinct name from TASK_PMU_INFO")]
        wanted = [(int(i), metric) for i, name in names  # a NULL name has no text: no metric
                  if (metric := _PMU_TIMES.get(name) or (name if name.endswith(("_ratio", "_rate")) else None))]
        # one pass over the table for every metric (one scan per metric was most of the db's read)
        ids = ",".join(str(i) for i, _ in wanted)
        src = f"(select rowid as rid, name, globalTaskId, value from TASK_PMU_INFO where name in ({ids}) " \
              f"and typeof(value) in ('integer', 'real'))"
        v = q.select(db.c, src, ints=["name", "globalTaskId"], reals=["value"], order="rid") if wanted else {}
        for metric in dict.fromkeys(m for _, m in wanted):  # names of one metric: the latest row of a task wins
            rows = np.isin(v["name"], [i for i, m in wanted if m == metric])
            keys, at = np.unique(v["globalTaskId"][rows][::-1], return_index=True)
            vals = v["value"][rows][::-1][at]
            found = q.lookup(keys, np.arange(len(keys)), gid, -1)
            out[metric] = np.where(found >= 0, vals[np.maximum(found, 0)], np.nan)
    mix = np.where(compute & q.known(c["c_mix"]), c["c_mix"].astype(np.float64), np.nan)
    if (~np.isnan(mix)).any():
        out[METRIC_MIX_BLOCK_DIM] = mix
    return {k: v for k, v in out.items() if (~np.isnan(v)).any()}


def _tasks(db, strings, links) -> tuple[dict, dict, set[int]]:
    source, ints = _task_source(db)
    c = q.select(db.c, source, ints=ints, order="rid", strict=("startNs", "endNs"))
    compute, comm = q.known(c["c_gid"]), q.known(c["m_gid"]) & ~q.known(c["c_gid"])
    ev = blank_events(len(c["startNs"]))
    stream = q.or_none(c["streamId"], NONE)
    ev.update(ts=c["startNs"], dur=np.maximum(c["endNs"] - c["startNs"], 0), device=q.or_none(c["deviceId"], NONE),
              stream=stream, tid=stream, pid=q.or_none(c["globalPid"], NONE),
              correlation=q.or_none(c["connectionId"], NONE),
              external_id=q.lookup(links[0], links[1], c["connectionId"], NONE))
    ev.update(_names(db, strings, c, compute, comm))
    ev["args"] = _kernel_args(db, strings, c, compute)
    ev["blocks"] = np.where(compute, q.or_none(c["c_blk"], NONE), NONE)
    ev["bytes"] = np.where(comm, q.or_none(c["m_size"], NONE), NONE)
    devices = set(distinct(ev["device"]).tolist())
    return ev, _pmu(db, c, compute), devices


def _communication_ops(db, strings, links, device: int) -> dict:
    if "COMMUNICATION_OP" not in db.tables:
        return blank_events(0)
    c = q.select(db.c, "COMMUNICATION_OP", ints=["opName", "startNs", "endNs", "connectionId", "groupName",
                                                 "dataType"], reals=["count"], strict=("startNs", "endNs"))
    dtypes = db.enum("ENUM_HCCL_DATA_TYPE")
    uniq, inverse = np.unique(c["dataType"], return_inverse=True)
    size = np.array([DTYPE_BYTES.get(str(dtypes.get(int(d), "")).upper(), 0) for d in uniq], np.int64)
    size = size[inverse] if len(uniq) else np.zeros(0, np.int64)
    count = c["count"]
    ok = (size > 0) & ~np.isnan(count) & (np.abs(count) < 2.0 ** 62)
    n = len(count)
    ev = blank_events(n)
    ev.update(ts=c["startNs"], dur=np.maximum(c["endNs"] - c["startNs"], 0), kind=np.full(n, Kind.COMM_KERNEL, np.uint8),
              name=q.text_ids(db, c["opName"], strings, lambda v: v or ""),
              cat=np.full(n, strings.id("communication_op"), np.int32), core=np.full(n, strings.id("HCCL"), np.int32),
              bytes=np.where(ok, np.rint(np.where(ok, count, 0)).astype(np.int64) * size, NONE),
              group=q.text_ids(db, c["groupName"], strings), correlation=q.or_none(c["connectionId"], NONE),
              device=np.full(n, device, np.int32), external_id=q.lookup(links[0], links[1], c["connectionId"], NONE))
    return ev


def read_device_tasks(db, table, links) -> list[tuple[dict, dict]]:
    """[(event columns, metrics)] of the tasks, then the communication ops; devices noted in table.meta."""
    strings = table.strings
    tasks, metrics, devices = _tasks(db, strings, links) if "TASK" in db.tables else (blank_events(0), {}, set())
    ops = _communication_ops(db, strings, links, next(iter(devices)) if len(devices) == 1 else NONE)
    known = {x.get("index") for x in table.meta.devices}
    for d in sorted(devices - {NONE} - known):
        table.meta.devices.append({"kind": "npu", "index": d, "name": "Ascend"})
    return [(tasks, metrics), (ops, {})]
