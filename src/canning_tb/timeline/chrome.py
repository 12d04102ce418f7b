"""A Chrome trace (JSON) written from an EventTable, for windows whose original files are not one
(Ascend folders, SQLite exports): Perfetto and chrome://tracing open it."""
from __future__ import annotations

import itertools
import json
from typing import Iterator

from canning_tb.ingest.table import NONE, EventTable, Kind


def _events(table: EventTable) -> Iterator[dict]:
    ev, strings = table.events, table.strings
    columns = {name: ev[name].tolist() for name in ("ts", "dur", "kind", "name", "cat", "pid", "tid",
                                                    "correlation", "external_id", "shapes")}
    for row in range(len(table)):
        args = {}
        if columns["correlation"][row] != NONE:
            args["correlation"] = columns["correlation"][row]
        if columns["external_id"][row] != NONE:
            args["External id"] = columns["external_id"][row]
        if columns["shapes"][row] != NONE:
            args["Input Dims"] = strings[columns["shapes"][row]]
        yield {"ph": "X", "name": strings[columns["name"][row]] or "",
               "cat": strings[columns["cat"][row]] or Kind(columns["kind"][row]).name.lower(),
               "pid": columns["pid"][row], "tid": columns["tid"][row],
               "ts": columns["ts"][row] / 1000.0, "dur": columns["dur"][row] / 1000.0, "args": args}


def _names(table: EventTable) -> Iterator[dict]:
    for pid, name in table.meta.process_names.items():
        yield {"ph": "M", "name": "process_name", "pid": int(pid), "args": {"name": name}}
    for key, name in table.meta.thread_names.items():
        pid, _, tid = key.partition(":")
        if not (pid.lstrip("-").isdigit() and tid.lstrip("-").isdigit()):
            continue  # a name we cannot place on a numeric pid / tid
        yield {"ph": "M", "name": "thread_name", "pid": int(pid), "tid": int(tid), "args": {"name": name}}


def chrome_trace(table: EventTable) -> Iterator[bytes]:
    """The trace as JSON chunks (never one string of the whole trace)."""
    yield b'{"displayTimeUnit":"ns","traceEvents":['
    first = True
    for event in itertools.chain(_names(table), _events(table)):
        yield (b"" if first else b",") + json.dumps(event, separators=(",", ":")).encode()
        first = False
    yield b"]}"
