"""torch_npu profiler output (one window of one rank) -> EventTable.

``read_ascend(path)`` takes what users have: a window folder holding ``ASCEND_PROFILER_OUTPUT/``
(any name: ``*_ascend_pt`` or the free names of 2023), a bare ``ASCEND_PROFILER_OUTPUT/`` folder
(the exported files directly inside), or one ``ascend_pytorch_profiler[_N].db`` file. Which files
it reads, how their units convert and how device tasks from two files are merged without double
counting is written down in docs/formats/ascend.md. Helpers: ``ascend_info`` (profiler_info /
metadata), ``ascend_csv`` (CSV quirks), ``ascend_trace`` (trace_view.json), ``ascend_tables`` (the
other text files), ``ascend_db*`` (SQLite), ``ascend_layout`` (where the files are).

Every file present is used; each missing file that would add something gives an "info" Problem
saying what it would add. A broken file gives an error Problem and the rest still loads;
``InputError(path, ...)`` only when nothing usable exists.
"""
from __future__ import annotations

import os

import numpy as np

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.devices import fit_devices
from canning_tb.ingest.table import NONE, EventTable, InputError, Kind, Problem
from canning_tb.util.arrays import distinct

from . import tables as T
from .csv import tables as C
from .groups import read_group_file
from .info import device_facts, rank_from_data, read_device_info, read_info, set_devices, worker_of
from .layout import Layout, locate
from .merge import fill_events, fill_memory, merge_device
from .trace.read import Started, read_trace

_SIDE_FILES = (("step_trace", "step_trace_time.csv", C.read_step_trace),
               ("op_statistic", "op_statistic.csv", C.read_op_statistic),
               ("operator_memory", "operator_memory.csv", C.read_operator_memory),
               ("npu_module_mem", "npu_module_mem.csv", C.read_npu_module_mem),
               ("comm_matrix", "communication_matrix.json", T.read_communication_matrix))

# side table -> the text file it comes from (the db export: analysis.db or the profiler db)
_SIDE_SOURCES = {"step_trace": "step_trace_time.csv", "comm_ops": "communication.json",
                 "comm_bandwidth": "communication.json", "comm_packets": "communication.json",
                 "comm_matrix": "communication_matrix.json", "op_statistic": "op_statistic.csv",
                 "operator_details": "operator_details.csv", "operator_memory": "operator_memory.csv",
                 "npu_module_mem": "npu_module_mem.csv", "overlap_analysis": "trace_view.json",
                 "npu_counters": "trace_view.json"}
_FROM_ANALYSIS_DB = ("step_trace", "comm_ops", "comm_bandwidth", "comm_packets", "comm_matrix")

# file -> what it adds, for the note written when it is missing
WHAT_IT_ADDS = {
    "trace_view.json": "host operators, ProfilerStep ranges, operator-to-kernel links and the timeline",
    "kernel_details.csv": "the device kernel list (kernel table, compute and communication time)",
    "step_trace_time.csv": "CANN's own split of each step (computing, communication not overlapped, free)",
    "communication.json": "CANN's transit / wait / synchronization times and bytes per link type of each collective",
    "communication_matrix.json": "the link matrix between ranks",
    "memory_record.csv": "the memory curve (profile_memory=True)",
    "operator_details.csv": "operator times without the trace",
}


class _Reader:
    """State of one read: the layout, the table being filled and the files used."""

    def __init__(self, layout: Layout):
        self.lay = layout
        self.table = EventTable()
        self.used: list[str] = []
        self.usable = False

    def take(self, name: str, fn, *args):
        if name not in self.lay.names:
            return None
        self.used.append(self.lay.path(name))
        value = fn(self.lay.path(name), self.lay.display(name), self.table.problems, *args)
        if value is not None:
            self.usable = True
        return value

    def note_missing(self, name: str, why: str = "") -> None:
        self.table.problems.append(Problem(self.lay.display(name), f"not present{why}: it would add "
                                                                   f"{WHAT_IT_ADDS[name]}", "info"))


def read_ascend(path: str) -> EventTable:
    return read_window(path, _read_text, None)


def read_window(path: str, read_text, read_db) -> EventTable:
    """A window read with read_text(reader) for a text export and read_db(layout, table, used) for a db
    (None: ours); everything around them (metadata, rank, sources, checks) the same for any reader."""
    lay = locate(os.path.normpath(path))
    r = _Reader(lay)
    table = r.table
    table.meta.format = "ascend"
    table.meta.worker = worker_of(lay.base)
    if not lay.alone:
        read_info(lay.root, table, r.used)
        read_device_info(lay.root, table, r.used)
    if lay.db is not None:
        if read_db is None:
            from .db.read import read_ascend_db as read_db
        table.meta.environment["ascend_source"] = "db"
        read_db(lay, table, r.used)
    else:
        table.meta.environment["ascend_source"] = "text"
        if lay.ignored_dbs:
            table.meta.environment["ascend_db_ignored"] = ",".join(lay.ignored_dbs)
        read_text(r)
    rank_from_data(table)
    device_facts(table.meta)
    table.meta.devices = fit_devices(table.meta.devices, lay.root, table.problems)  # ids from profiler_info, the db
    if not lay.alone:
        read_group_file(os.path.dirname(lay.root), table, r.used)
    _record_sources(table, lay)
    table.meta.source_files = list(dict.fromkeys(r.used))
    table.check()
    return table


def _unlistable(root: str) -> str:
    """Why a window's folders gave no file at all (a permission error names itself)."""
    for folder in (root, os.path.join(root, "ASCEND_PROFILER_OUTPUT")):
        try:
            os.listdir(folder)
        except OSError as e:
            return f"cannot list {os.path.basename(folder)}: {e.strerror or e}"
    return "no file torch_npu exports was found"


def _read_text(r: _Reader) -> None:
    # a big trace_view.json's second part is read by a child process while this one reads the CSVs
    started = Started(r.lay.path("trace_view.json"), _bytes(r.lay, _BESIDE_TRACE)) \
        if "trace_view.json" in r.lay.names else None
    try:
        _read_files(r, started)
    finally:
        if started is not None:
            started.close()


# the files _read_files reads before the trace (operator_details.csv only when the trace is unusable)
_BESIDE_TRACE = ("communication.json", *(name for _, name, _ in _SIDE_FILES), "memory_record.csv", "kernel_details.csv")


def _bytes(lay, names) -> int:
    total = 0
    for name in set(names) & lay.names:
        try:
            total += os.path.getsize(lay.path(name))
        except OSError:  # reported when the file is read
            pass
    return total


def _read_files(r: _Reader, started) -> None:
    table = r.table
    comm = r.take("communication.json", T.read_communication)
    if comm is not None:
        side.put(table.side, "comm_ops", comm.ops)
        side.put(table.side, "comm_bandwidth", comm.bandwidth)
        side.put(table.side, "comm_packets", comm.packets)
    for key, name, fn in _SIDE_FILES:
        rows = r.take(name, fn)
        if rows is not None:
            side.put(table.side, key, rows)
    groups = comm.groups() if comm else {}
    mem = r.take("memory_record.csv", C.read_memory_record, table.strings)
    trace, kernels = _read_device(r, groups, started)
    have_kernels = kernels is not None and len(kernels) > 0
    if not r.usable and not have_kernels and trace is None:
        why = "; ".join(str(p) for p in table.problems[:5]) or _unlistable(r.lay.root)
        raise InputError(r.lay.path_shown, "nothing usable: " + why)
    if trace is not None or kernels is not None:
        fill_events(table, merge_device(trace, kernels))
        _comm_groups(table, table.events, groups)
    if mem:
        fill_memory(table, mem)
    devs = {int(d) for d in distinct(table.events["device"]) if d != NONE}
    if trace is not None:
        devs |= trace.devices
        table.meta.process_names.update(trace.process_names)
        table.meta.thread_names.update(trace.thread_names)
        if trace.overlap is not None:
            side.put(table.side, "overlap_analysis", trace.overlap)
        if trace.counters is not None:
            side.put(table.side, "npu_counters", trace.counters)
    set_devices(table.meta, devs)
    _note_missing_text(r, trace is not None, comm is not None)


def _comm_groups(table: EventTable, cols: dict, groups: dict[str, str]) -> None:
    """kernel_details.csv names no communicator: communication.json does (by operator name)."""
    if not groups:
        return
    rows = np.flatnonzero((cols["kind"] == Kind.COMM_KERNEL) & (cols["group"] == NONE))
    if not len(rows):
        return
    s = table.strings
    uniq, inverse = np.unique(cols["name"][rows], return_inverse=True)
    ids = np.array([s.id(g) if (g := groups.get(s[int(u)])) else NONE for u in uniq], np.int32)
    cols["group"][rows] = ids[inverse]


def _read_device(r: _Reader, comm_groups: dict[str, str], started):
    """(trace_view.json data or None, kernel_details.csv rows or None)."""
    strings = r.table.strings
    kernels = r.take("kernel_details.csv", C.read_kernel_details, strings, NONE)
    devs = set(distinct(kernels.events["device"]).tolist()) - {NONE} if kernels is not None else set()
    hint = devs.pop() if len(devs) == 1 else NONE
    trace = r.take("trace_view.json", read_trace, strings, hint, comm_groups, started)
    if trace is None:
        if "trace_view.json" in r.lay.names:
            r.table.problems.append(Problem(r.lay.display("trace_view.json"),
                                            "trace unusable: the folder may be truncated or still being written; "
                                            "host operators come from operator_details.csv only"))
        details = r.take("operator_details.csv", C.read_operator_details)
        if details is not None:
            side.put(r.table.side, "operator_details", details)
    return trace, kernels


def _note_missing_text(r: _Reader, have_trace: bool, have_comm: bool) -> None:
    names = r.lay.names
    if not have_trace and "trace_view.json" not in names:
        r.note_missing("trace_view.json")
    for name in ("kernel_details.csv", "step_trace_time.csv", "memory_record.csv"):
        if name not in names:
            r.note_missing(name)
    multi_card = r.table.meta.world_size > 1 or bool(side.rows(r.table.side, "comm_matrix")) or \
        bool((r.table.events["group"] != NONE).any())
    if multi_card and not have_comm and "communication.json" not in names:
        r.note_missing("communication.json", " (Level0 does not write it)")
    if multi_card and "communication_matrix.json" not in names:
        r.note_missing("communication_matrix.json")


def _record_sources(table: EventTable, lay: Layout) -> None:
    """environment["source.<side table>"]: the file each side table was read from."""
    env = table.meta.environment
    for key in table.side:
        if key == "comm_groups":  # set where they were read (metadata, db META_DATA, communication_group.json)
            continue
        if lay.db is None:
            env[f"source.{key}"] = _SIDE_SOURCES[key]
        else:
            env[f"source.{key}"] = "analysis.db" if key in _FROM_ANALYSIS_DB else lay.db
