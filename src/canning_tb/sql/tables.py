"""The digest's sections as flat tables, one row per thing the views list, for every window of a run.

Each table is declared once (`TABLES`): the digest fields it reads (`store.digest_part`: a run of 1,000
ranks parses only those), its columns with their Arrow types, and the function that turns one window's
digest into rows. The rows are the views' own: the same digest fields and the same functions
(`analysis/summary.py` for the shares, `queries/sections.py` for the operators' and kernels' columns and
the times relative to the window start, `analysis/communication/wait_transfer.py` for wait / transfer).

Every row starts with the key columns `run, worker, rank, window, window_index, step` (`step` is NULL in a
table of the whole window: operators, kernels, memory, findings). Unknown is NULL: a figure the digest holds
as -1 (or any negative number, but in the signed columns of `SIGNED`) is NULL, never 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.summary import CATEGORIES, category_shares, has_device_work, step_shares
from canning_tb.queries.sections import relative, scalar_fields

KEYS = (("run", pa.string()), ("worker", pa.string()), ("rank", pa.int64()), ("window", pa.string()),
        ("window_index", pa.int64()), ("step", pa.int64()))
# columns whose negative values are real (a net change of memory), not "unknown"
SIGNED = {"increase_bytes", "self_increase_bytes", "value", "speedup"}
_ARROW = {"int64": pa.int64(), "int32": pa.int64(), "uint32": pa.int64(), "uint64": pa.int64(),
          "double": pa.float64(), "float": pa.float64(), "bool": pa.bool_(), "string": pa.string()}
_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 8: "bool", 9: "string", 13: "uint32"}


@dataclass(frozen=True)
class Window:
    """One window as a table's rows name it (the key columns)."""
    run: str
    worker: str
    rank: int
    window: str
    window_index: int


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    fields: tuple  # store.digest_part's spec: what of the digest it reads
    columns: tuple  # ((name, arrow type), ...) after the key columns
    rows: Callable  # (digest, context) -> [(step or None, {column: value})]
    cross_rank: bool = False  # rows need every rank's digest at the same window position (rows(digests))


def _proto_columns(message_type, skip=()) -> tuple:
    """(column, arrow type) of a digest message's scalar fields (and its single sub-messages' as a_b),
    the fields the views' tables sort on (queries/sections.scalar_fields)."""
    out = []
    for field in scalar_fields(message_type):
        if field in skip:
            continue
        descriptor = message_type.DESCRIPTOR
        for part in field.split("."):
            found = descriptor.fields_by_name[part]
            descriptor = found.message_type
        out.append((field.replace(".", "_"), _ARROW[_TYPE_NAMES[found.type]]))
    return tuple(out)


def _read(message, column_names: tuple) -> dict:
    out = {}
    for column in column_names:
        value = message
        for part in column.split("."):
            value = getattr(value, part)
        out[column.replace(".", "_")] = value
    return out


def _fields_of(message_type, skip=()) -> tuple:
    return tuple(f for f in scalar_fields(message_type) if f not in skip)


# what every part read must hold: the store checks the schema and which analysis code made the digest
BASE = (("schema_version", None), ("analysis_revision", None))

# -- the tables ---------------------------------------------------------------------------------------------
WINDOW_FIELDS = (("schema_version", None), ("window", None), ("steps", None), ("average", None), ("average_steps", None),
                 ("kernels_by_name", "counted"), ("ops_by_name", ("name", "device_self_ns", "device_total_ns")),
                 ("step_source", None), ("analysis_revision", None))
BREAKDOWN = tuple(f"{c}_ns" for c in CATEGORIES)
SHARES = ("compute_share", "comm_not_hidden_share", "dataloader_share", "idle_share", "device_idle_share")


def _windows(digest, ctx) -> list:
    win = digest.window
    steps = list(digest.steps)
    return [(None, {"format": win.format, "label": ctx["label"], "world_size": win.world_size, "host": win.host,
                    "pid": win.pid, "start_ns": win.start_ns, "end_ns": win.end_ns,
                    "duration_ns": win.end_ns - win.start_ns if win.end_ns >= 0 and win.start_ns >= 0 else -1,
                    "steps": len(steps), "average_step_ns": digest.average.total_ns,
                    "total_step_ns": sum(max(0, s.dur_ns) for s in steps),
                    "step_source": digest.step_source or "trace", "analysis_revision": digest.analysis_revision})]


def _steps(digest, ctx) -> list:
    t0, on_device = digest.window.start_ns, has_device_work(digest)
    kept = set(digest.average_steps)
    out = []
    for step in digest.steps:
        row = {"start_ns": relative(step.start_ns, t0), "dur_ns": step.dur_ns, "tail_ns": step.tail_ns,
               "untraced_wait_ns": step.untraced_wait_ns, "distorted": step.distorted,
               "in_average": step.number in kept if kept else not step.distorted}
        row.update({c: getattr(step.breakdown, c) for c in BREAKDOWN})
        row["breakdown_total_ns"] = step.breakdown.total_ns
        row.update({f"share_{c}": v for c, v in category_shares(step.breakdown).items()})
        shares = step_shares(step.breakdown, on_device)
        row.update({s: shares[s] for s in SHARES})
        row["compute_source"] = shares["compute_source"]
        out.append((int(step.number), row))
    return out


def _stats(section: str, names: tuple):
    def rows(digest, ctx) -> list:
        return [(None, _read(row, names)) for row in getattr(digest, section)]
    return rows


OP_COLUMNS = _fields_of(pb.OpStat)
KERNEL_COLUMNS = _fields_of(pb.KernelStat)
WORK = tuple(f"work.{f.name}" for f in pb.WorkRates.DESCRIPTOR.fields)


def _efficiency(digest, ctx) -> list:
    names = ("name", "input_shapes", "calls", "host_total_ns", "device_total_ns") + WORK
    return [(None, {k.removeprefix("work_"): v for k, v in _read(op, names).items()})
            for op in digest.ops_by_shape if op.work.model]


def _collectives(digest, ctx) -> list:
    return [(None, _read(c, _fields_of(pb.CollectiveStat))) for c in digest.communication.collectives]


def _links(digest, ctx) -> list:
    return [(None, _read(link, _fields_of(pb.Link))) for link in digest.communication.links]


def _memory(digest, ctx) -> list:
    t0 = digest.window.start_ns
    out = []
    for mem in digest.memory:
        row = _read(mem, MEMORY_COLUMNS)
        row["peak_ts_ns"] = relative(mem.peak_ts_ns, t0)
        out.append((None, row))
    return out


def _allocations(digest, ctx) -> list:
    t0 = digest.window.start_ns
    return [(None, {"device": mem.device, "op": e.op, "bytes": e.bytes, "alloc_ns": relative(e.alloc_ns, t0),
                    "free_ns": relative(e.free_ns, t0)}) for mem in digest.memory for e in mem.events]


def _memory_curve(digest, ctx) -> list:
    t0 = digest.window.start_ns
    out = []
    for mem in digest.memory:
        reserved, active = list(mem.curve_reserved_bytes), list(mem.curve_active_bytes)
        for i, (ts, allocated) in enumerate(zip(mem.curve_ts_ns, mem.curve_allocated_bytes)):
            out.append((None, {"device": mem.device, "ts_ns": relative(ts, t0), "allocated_bytes": allocated,
                               "reserved_bytes": reserved[i] if i < len(reserved) else -1,
                               "active_bytes": active[i] if i < len(active) else -1}))
    return out


def _findings(digest, ctx) -> list:
    names = ("rule", "severity", "category", "title", "seen", "why", "change_torch", "change_npu", "gain_ns",
             "speedup", "gain", "needs", "device", "value", "detail")
    return [(None, {**_read(hit, names), "rank_order": i}) for i, hit in enumerate(digest.rule_hits)]


CALL_COLUMNS = (("kind", pa.string()), ("group", pa.string()), ("comm_type", pa.string()), ("op", pa.string()),
                ("seq", pa.int64()), ("start_ns", pa.int64()), ("dur_ns", pa.int64()), ("bytes", pa.int64()),
                ("wait_ns", pa.int64()), ("transfer_ns", pa.int64()), ("synchronization_ns", pa.int64()),
                ("cann_wait_ns", pa.int64()), ("cann_transit_ns", pa.int64()), ("split_source", pa.string()))


def _calls(digests: list, ctxs: list) -> list:
    """Per digest, its calls with wait / transfer by wait_transfer.call_splits over every rank at this window
    position: CANN's own measurement where it has one, else the calls matched across the ranks (the ranks
    view's definition), else NULL."""
    from canning_tb.analysis.communication.wait_transfer import call_splits
    splits = call_splits(digests)
    out = []
    for digest, split in zip(digests, splits):
        t0 = digest.window.start_ns
        rows = []
        for call, (wait, transfer) in zip(digest.communication.calls, split.tolist()):
            measured = call.wait_ns >= 0 and call.transit_ns >= 0
            rows.append((int(call.step) if call.step >= 0 else None, {
                "kind": call.kind, "group": call.group, "comm_type": call.comm_type, "op": call.op, "seq": call.seq,
                "start_ns": relative(call.start_ns, t0), "dur_ns": call.dur_ns, "bytes": call.bytes,
                "wait_ns": wait, "transfer_ns": transfer, "synchronization_ns": call.synchronization_ns,
                "cann_wait_ns": call.wait_ns, "cann_transit_ns": call.transit_ns,
                "split_source": (digest.communication.source or "CANN") if measured and wait >= 0
                else ("matched calls" if wait >= 0 else "")}))
        out.append(rows)
    return out


MEMORY_COLUMNS = ("device", "peak_allocated_bytes", "peak_ts_ns", "peak_reserved_bytes", "capacity_bytes",
                  "allocations", "frees", "allocated_bytes", "events_truncated", "empty_cache_calls")
_MEMORY_TYPES = {"device": pa.string(), "events_truncated": pa.bool_()}

TABLES: dict[str, Table] = {t.name: t for t in (
    Table("windows", "one row per window of every rank: what it is, when, its steps and mean step time",
          (("schema_version", None), ("window", None), ("steps", ("dur_ns",)), ("average", ("total_ns",)), ("step_source", None),
           ("analysis_revision", None)),
          (("label", pa.string()), ("format", pa.string()), ("world_size", pa.int64()), ("host", pa.string()),
           ("pid", pa.int64()), ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("duration_ns", pa.int64()),
           ("steps", pa.int64()), ("average_step_ns", pa.int64()), ("total_step_ns", pa.int64()),
           ("step_source", pa.string()), ("analysis_revision", pa.string())), _windows),
    Table("steps", "one row per step: duration, the Overview's breakdown (each instant in one category) and shares",
          WINDOW_FIELDS,
          (("start_ns", pa.int64()), ("dur_ns", pa.int64()), ("tail_ns", pa.int64()), ("untraced_wait_ns", pa.int64()),
           ("distorted", pa.bool_()),
           ("in_average", pa.bool_()), *((c, pa.int64()) for c in BREAKDOWN), ("breakdown_total_ns", pa.int64()),
           *((f"share_{c}", pa.float64()) for c in CATEGORIES), *((s, pa.float64()) for s in SHARES),
           ("compute_source", pa.string())), _steps),
    Table("operators", "operators by name (the Operators view): calls, host / device self and total time, rates",
          (*BASE, ("window", ("start_ns",)), ("ops_by_name", None)), _proto_columns(pb.OpStat),
          _stats("ops_by_name", OP_COLUMNS)),
    Table("operators_by_shape", "operators by name and input shapes (the Operators view grouped by shape)",
          (*BASE, ("window", ("start_ns",)), ("ops_by_shape", None)), _proto_columns(pb.OpStat),
          _stats("ops_by_shape", OP_COLUMNS)),
    Table("operators_by_stack", "operators by name and call stack (the Operators view grouped by stack)",
          (*BASE, ("window", ("start_ns",)), ("ops_by_stack", None)), _proto_columns(pb.OpStat),
          _stats("ops_by_stack", OP_COLUMNS)),
    Table("kernels", "device kernels by name (the Kernels view): calls, total / min / max time, device, stream",
          (*BASE, ("window", ("start_ns",)), ("kernels_by_name", None)), _proto_columns(pb.KernelStat),
          _stats("kernels_by_name", KERNEL_COLUMNS)),
    Table("kernels_by_op", "device kernels by name and launching operator (the Kernels view's second table)",
          (*BASE, ("window", ("start_ns",)), ("kernels_by_op", None)), _proto_columns(pb.KernelStat),
          _stats("kernels_by_op", KERNEL_COLUMNS)),
    Table("efficiency", "operators (by name + input shapes) with modelled FLOPs / bytes: achieved rates, roof, bound",
          (*BASE, ("window", ("start_ns",)), ("ops_by_shape", None)),
          (("name", pa.string()), ("input_shapes", pa.string()), ("calls", pa.int64()), ("host_total_ns", pa.int64()),
           ("device_total_ns", pa.int64()), *_proto_columns(pb.WorkRates)), _efficiency),
    Table("collectives", "collectives per kind and communicator of each rank (the Communication view's table)",
          (*BASE, ("window", ("start_ns",)), ("communication", ("collectives",))), _proto_columns(pb.CollectiveStat),
          _collectives),
    Table("communication", "one row per collective call: start, duration, bytes, wait and transfer (matched "
                           "across the ranks at the same window position, or CANN's own)",
          (*BASE, ("window", None), ("communication", ("calls", "source"))), CALL_COLUMNS, _calls, cross_rank=True),
    Table("matrix", "the communication matrix: bytes, time and bandwidth per (source, destination, transport)",
          (*BASE, ("window", ("start_ns",)), ("communication", ("links",))), _proto_columns(pb.Link), _links),
    Table("memory", "memory per device: peak allocated (exact) and when, peak reserved, capacity, counts",
          (*BASE, ("window", ("start_ns",)), ("memory", None)),
          tuple((c, _MEMORY_TYPES.get(c, pa.int64())) for c in MEMORY_COLUMNS), _memory),
    Table("allocations", "the memory records: allocation events per device (operator, bytes, alloc / free instants)",
          (*BASE, ("window", ("start_ns",)), ("memory", None)),
          (("device", pa.string()), ("op", pa.string()), ("bytes", pa.int64()), ("alloc_ns", pa.int64()),
           ("free_ns", pa.int64())), _allocations),
    Table("memory_curve", "allocated / reserved / active bytes over time per device (the Memory view's curve)",
          (*BASE, ("window", ("start_ns",)), ("memory", None)),
          (("device", pa.string()), ("ts_ns", pa.int64()), ("allocated_bytes", pa.int64()),
           ("reserved_bytes", pa.int64()), ("active_bytes", pa.int64())), _memory_curve),
    Table("findings", "the window's findings (the Suggestions view), ranked by estimated gain (rank_order)",
          (*BASE, ("window", ("start_ns",)), ("rule_hits", None)),
          tuple((n, pa.int64() if n in ("gain_ns", "rank_order") else pa.float64() if n in ("speedup", "value")
                 else pa.string())
                for n in ("rule", "severity", "category", "title", "seen", "why", "change_torch", "change_npu",
                          "gain_ns", "speedup", "gain", "needs", "device", "value", "detail", "rank_order")),
          _findings),
)}


def schema(table: Table) -> pa.Schema:
    return pa.schema([*KEYS, *table.columns])


def unknown_as_null(name: str, values: list) -> list:
    """A column's values with the digest's "unknown" (negative numbers) as None."""
    if name in SIGNED:
        return values
    return [None if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0 else v for v in values]


def arrow(table: Table, parts: list) -> pa.Table:
    """The Arrow table of [(Window, [(step, row)])]."""
    names = [n for n, _ in table.columns]
    columns: dict[str, list] = {n: [] for n, _ in KEYS}
    columns.update({n: [] for n in names})
    for win, rows in parts:
        for step, row in rows:
            columns["run"].append(win.run)
            columns["worker"].append(win.worker)
            columns["rank"].append(win.rank)
            columns["window"].append(win.window)
            columns["window_index"].append(win.window_index)
            columns["step"].append(step)
            for n in names:
                columns[n].append(row.get(n))
    out = schema(table)
    arrays = [pa.array(unknown_as_null(f.name, columns[f.name]) if f.name not in ("rank", "window_index", "step")
                       else columns[f.name], type=f.type) for f in out]
    return pa.Table.from_arrays(arrays, schema=out)
