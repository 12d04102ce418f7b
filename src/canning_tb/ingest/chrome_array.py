"""Chrome traces written as a bare JSON array: `[{"ph": "X", "ts": "1234.567", ...}, ...]`.

torch_npu's `export_chrome_trace` writes this form (the same events, string timestamps in µs and
pids as its trace_view.json), and users have such files. `read_chrome_trace` sends each file to
its reader by its first byte: an object to the Kineto reader, an array to the torch_npu trace
reader (ascend_trace.read_trace), so a `*.pt.trace.json` of either form opens.
"""
from __future__ import annotations

import os

from .ascend.info import set_devices
from .ascend.merge import fill_events
from .ascend.trace.read import read_trace
from .file_head import file_head
from .kineto.read import read_kineto
from .table import EventTable, InputError


def read_chrome_trace(path: str) -> EventTable:
    """Any Chrome trace file: `{"traceEvents": [...]}` (Kineto) or a bare array (torch_npu)."""
    return read_chrome_array(path) if starts_with_array(path) else read_kineto(path)


def starts_with_array(path: str) -> bool:
    """Whether the file's JSON starts with '[' (a gzipped file is looked into)."""
    return file_head(path, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"["


def read_chrome_array(path: str) -> EventTable:
    path = str(path)
    if path.endswith(".gz"):
        raise InputError(path, "a gzipped bare-array trace: gunzip it first (torch_npu writes it plain)")
    table = EventTable()
    table.meta.format = "kineto"
    table.meta.worker = os.path.basename(path).split(".")[0]
    trace = read_trace(path, os.path.basename(path), table.problems, table.strings)
    if trace is None:
        raise InputError(path, "; ".join(p.message for p in table.problems if p.severity == "error") or
                         "no trace events")
    if not len(trace):
        raise InputError(path, "a JSON array without any duration event")
    table.meta.process_names.update(trace.process_names)
    table.meta.thread_names.update(trace.thread_names)
    fill_events(table, [(trace.events, {}, None)])
    set_devices(table.meta, set(trace.devices))
    table.meta.source_files = [path]
    table.check()
    return table
