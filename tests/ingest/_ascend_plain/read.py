"""The plain reading's window: the row-at-a-time text and db readers of this package, everything around
them (metadata, rank, missing-file notes, sources, checks) canning-tb's own (read.read_window)."""
from __future__ import annotations

import numpy as np

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend import read as columnar
from canning_tb.ingest.ascend import tables as comm_tables
from canning_tb.ingest.ascend.info import set_devices
from canning_tb.ingest.table import NONE, InputError, Kind, Problem

from . import db as plain_db
from . import tables as T
from .merge import fill_events, fill_memory, merge_device_rows
from .trace import read_trace

_SIDE_FILES = (("step_trace", "step_trace_time.csv", T.read_step_trace),
               ("op_statistic", "op_statistic.csv", T.read_op_statistic),
               ("operator_memory", "operator_memory.csv", T.read_operator_memory),
               ("npu_module_mem", "npu_module_mem.csv", T.read_npu_module_mem),
               ("comm_matrix", "communication_matrix.json", comm_tables.read_communication_matrix))


def read_ascend(path: str):
    return columnar.read_window(path, _read_text, plain_db.read_ascend_db)


def _read_text(r) -> None:
    table = r.table
    comm = r.take("communication.json", comm_tables.read_communication)
    if comm is not None:
        side.put(table.side, "comm_ops", comm.ops)
        side.put(table.side, "comm_bandwidth", comm.bandwidth)
        side.put(table.side, "comm_packets", comm.packets)
    for key, name, fn in _SIDE_FILES:
        rows = r.take(name, fn)
        if rows is not None:
            side.put(table.side, key, rows)
    groups = comm.groups() if comm else {}
    trace, kernels = _read_device(r, groups)
    mem = r.take("memory_record.csv", T.read_memory_record)
    rows = merge_device_rows(trace, kernels) if (trace or kernels) else []
    for row in rows:  # kernel_details.csv names no communicator: communication.json does
        if row["kind"] == Kind.COMM_KERNEL and not row.get("group") and row["name"] in groups:
            row["group"] = groups[row["name"]]
    if not r.usable and not rows:
        why = "; ".join(str(p) for p in table.problems[:5]) or columnar._unlistable(r.lay.root)
        raise InputError(r.lay.path_shown, "nothing usable: " + why)
    fill_events(table, rows)
    if mem:
        fill_memory(table, mem)
    devs = {int(d) for d in np.unique(table.events["device"]) if d != NONE}
    if trace is not None:
        devs |= trace.devices
        table.meta.process_names.update(trace.process_names)
        table.meta.thread_names.update(trace.thread_names)
        side.put(table.side, "overlap_analysis", [side.row("overlap_analysis", name=name, start_ns=a, end_ns=b)
                                                  for name, spans in trace.overlap.items() for a, b in spans])
        side.put(table.side, "npu_counters", trace.counters)
    set_devices(table.meta, devs)
    columnar._note_missing_text(r, trace is not None, comm is not None)


def _read_device(r, comm_groups: dict[str, str]):
    """(trace_view.json data or None, kernel_details.csv rows or None)."""
    kernels = r.take("kernel_details.csv", T.read_kernel_details, NONE)
    devs = {k["device"] for k in kernels or () if k["device"] != NONE}
    hint = devs.pop() if len(devs) == 1 else NONE
    trace = r.take("trace_view.json", read_trace, hint, comm_groups)
    if trace is None:
        if "trace_view.json" in r.lay.names:
            r.table.problems.append(Problem(r.lay.display("trace_view.json"),
                                            "trace unusable: the folder may be truncated or still being written; "
                                            "host operators come from operator_details.csv only"))
        details = r.take("operator_details.csv", T.read_operator_details)
        if details is not None:
            side.put(r.table.side, "operator_details", details)
    return trace, kernels
