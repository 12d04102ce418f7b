"""Device tasks of the torch_npu SQLite export (TASK, COMPUTE_TASK_INFO, COMMUNICATION_TASK_INFO,
COMMUNICATION_OP) -> event rows. Mapping in docs/formats/ascend.md: compute tasks are KERNEL
(``hcom*`` names COMM_KERNEL), HCCL plane sub-tasks OTHER, COMMUNICATION_OP rows COMM_KERNEL with
bytes = count x data type size; TASK rows without task info stay MEMCPY / MEMSET / OTHER (among
them an AI_CORE task per HCCL op spanning the whole op: counting it as a kernel would count the
communication twice)."""
from __future__ import annotations

import json
from typing import Any

from canning_tb.ingest import op_args

from .csv_io import norm_shapes, to_int
from .trace import DTYPE_BYTES, classify_hardware
from canning_tb.ingest.table import METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_MIX_BLOCK_DIM, NONE, ColumnBuilder, EventTable, Kind

_PMU_TIMES = {"aic_total_time": METRIC_AIC_TIME, "aiv_total_time": METRIC_AIV_TIME}  # ns in the db


def _or_none(v: Any) -> int:
    return NONE if v is None else int(v)


def _task_info(db) -> tuple[dict[int, tuple], dict[int, tuple]]:
    mix = "mixBlockDim" if "mixBlockDim" in db.columns("COMPUTE_TASK_INFO") else "NULL"
    cols = db.columns("COMPUTE_TASK_INFO")
    more = ", ".join(c if c in cols else "NULL" for c in _ARG_COLUMNS.values())
    compute = {row[0]: row[1:] for row in db.rows(
        "COMPUTE_TASK_INFO",
        f"select globalTaskId, name, blockDim, taskType, inputShapes, opType, {more}, {mix} from COMPUTE_TASK_INFO")}
    comm = {row[0]: row[1:] for row in db.rows(
        "COMMUNICATION_TASK_INFO", "select globalTaskId, name, taskType, size, groupName from COMMUNICATION_TASK_INFO")}
    return compute, comm


# COMPUTE_TASK_INFO columns -> `args` parts (ingest/op_args.py)
_ARG_COLUMNS = {"types": "inputDataTypes", "formats": "inputFormats", "out_shapes": "outputShapes",
                "out_types": "outputDataTypes", "out_formats": "outputFormats"}


def _kernel_args(db, op_type, cells: list) -> str | None:
    parts = {key: db.name(cell) for key, cell in zip(_ARG_COLUMNS, cells)}
    shapes = norm_shapes(parts.pop("out_shapes"))
    return op_args.encode(op_type=db.name(op_type) or None, out_shapes=json.loads(shapes) if shapes else None,
                          **{key: op_args.split_list(text) for key, text in parts.items()})


def _task_columns(db, table: EventTable, gid: int, task_type: str, compute: dict, comm: dict) -> dict:
    """The kind-specific columns of one TASK row."""
    s = table.strings
    if gid in compute:
        nm, blk, ctype, shp, optype, *more, _mix = compute[gid]
        name = db.name(nm) or task_type
        return dict(kind=int(Kind.COMM_KERNEL if name.startswith("hcom") else Kind.KERNEL), name=s.id(name),
                    cat=s.id("task"), core=s.id(db.name(ctype) or task_type), blocks=_or_none(blk),
                    shapes=s.id(norm_shapes(db.name(shp))), args=s.id(_kernel_args(db, optype, more)))
    if gid in comm:
        nm, ctt, size, grp = comm[gid]
        return dict(kind=int(Kind.OTHER), name=s.id(db.name(nm) or db.name(ctt) or task_type), cat=s.id("hccl_task"),
                    bytes=_or_none(size), group=s.id(db.name(grp)))
    kind = classify_hardware(task_type, task_type)
    return dict(kind=int(kind if kind in (Kind.MEMCPY, Kind.MEMSET) else Kind.OTHER), name=s.id(task_type),
                cat=s.id("task"), core=s.id(task_type or None))


def _task_pmu(db, compute: dict) -> dict[int, dict[str, float]]:
    """globalTaskId -> event metrics: TASK_PMU_INFO's ratios and core times, the MIX block dim."""
    out: dict[int, dict[str, float]] = {}
    for gid, name_id, value in db.rows("TASK_PMU_INFO", "select globalTaskId, name, value from TASK_PMU_INFO"):
        name = db.name(name_id) or ""
        metric = _PMU_TIMES.get(name) or (name if name.endswith(("_ratio", "_rate")) else None)
        if metric and isinstance(value, (int, float)):
            out.setdefault(gid, {})[metric] = float(value)
    for gid, info in compute.items():
        if isinstance(info[-1], int):
            out.setdefault(gid, {})[METRIC_MIX_BLOCK_DIM] = float(info[-1])
    return out


def _tasks(db, table: EventTable, b: ColumnBuilder, ext_of_conn: dict[int, int],
           metrics: dict[int, dict]) -> set[int]:
    compute, comm = _task_info(db)
    pmu = _task_pmu(db, compute)
    devices: set[int] = set()
    for st, en, dev, conn, gid, gpid, ttype, stream in db.rows(
            "TASK", "select startNs, endNs, deviceId, connectionId, globalTaskId, globalPid, taskType, streamId from TASK"):
        dev = _or_none(dev)
        devices.add(dev)
        vals = dict(ts=int(st), dur=max(int(en) - int(st), 0), device=dev, stream=_or_none(stream),
                    tid=_or_none(stream), pid=_or_none(gpid), correlation=_or_none(conn),
                    external_id=ext_of_conn.get(conn, NONE))
        vals.update(_task_columns(db, table, gid, db.name(ttype) or "", compute, comm))
        if gid in pmu:
            metrics[len(b)] = pmu[gid]
        b.add(**vals)
    return devices


def _communication_ops(db, table: EventTable, b: ColumnBuilder, ext_of_conn: dict[int, int], device: int) -> None:
    s = table.strings
    dtypes = db.enum("ENUM_HCCL_DATA_TYPE")
    for op, st, en, conn, grp, dt, cnt in db.rows(
            "COMMUNICATION_OP",
            "select opName, startNs, endNs, connectionId, groupName, dataType, count from COMMUNICATION_OP"):
        size, count = DTYPE_BYTES.get(str(dtypes.get(dt, "")).upper()), to_int(cnt)
        b.add(ts=int(st), dur=max(int(en) - int(st), 0), kind=int(Kind.COMM_KERNEL), name=s.id(db.name(op) or ""),
              cat=s.id("communication_op"), core=s.id("HCCL"),
              bytes=count * size if (size and count is not None) else NONE, group=s.id(db.name(grp)),
              correlation=_or_none(conn), device=device, external_id=ext_of_conn.get(conn, NONE))


def read_device_tasks(db, table: EventTable, b: ColumnBuilder, ext_of_conn: dict[int, int],
                      metrics: dict[int, dict]) -> None:
    """Adds the task rows to b; metrics gets {row index in b: event metrics} of the tasks that have some."""
    devices = _tasks(db, table, b, ext_of_conn, metrics)
    _communication_ops(db, table, b, ext_of_conn, next(iter(devices)) if len(devices) == 1 else NONE)
    known = {x.get("index") for x in table.meta.devices}
    for d in sorted(devices - {NONE} - known):
        table.meta.devices.append({"kind": "npu", "index": d, "name": "Ascend"})
