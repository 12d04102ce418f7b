"""``trace_view.json`` of a torch_npu output folder (helper for ``read.py``): a bare JSON array of
Chrome trace events, µs string timestamps converted exactly to int ns. Read a block at a time
(decode.py), each piece's events turned into numpy columns at once (`_Parse.piece`); nothing per
event outlives its piece. What an event is depends on its process, which `M` events anywhere in the
file name, so kinds are decided at the end over the columns (kinds.py). The Kind each event gets,
and how the torch_to_npu flows link host ops to device tasks (flows.py), are in
docs/formats/ascend.md.
"""
from __future__ import annotations

import msgspec

from canning_tb.ingest import _json
from canning_tb.ingest._json import TOO_DEEP
from canning_tb.ingest.ascend.csv.rows import read_bytes
from canning_tb.ingest.ascend.hardware import (DTYPE_BYTES, classify_hardware,  # noqa: F401  (the readers' names)
                                               hccl_bytes)
from canning_tb.ingest.table import NONE, Problem

from . import decode as dec
from . import scan as trace_scan
from .kinds import TraceData, finish
from .merge import Ranges
from .parse import _Parse


class Started:
    """The read of trace_view.json begun early: a big file's second part is read by a child process
    while the caller reads the other files of the rank (`read_trace(..., started=)` finishes it)."""

    def __init__(self, path: str, besides: int = 0):
        """besides: the bytes of the other files this process reads meanwhile (they set the split)."""
        self.ranges, self.error = None, None
        try:
            plan = dec.plan_file(path)
            self.ranges = Ranges(plan, besides) if plan is not None else None
        except OSError as e:
            self.error = f"cannot read: {e}"
        except _json.InputError as e:
            self.error = e.problem

    def close(self) -> None:
        if self.ranges is not None:
            self.ranges.close()


def _decode_all(path: str, display: str, problems: list[Problem], parse: _Parse, started: Started | None) -> bool:
    """Feed every piece of the file to parse; False (with an error Problem) when the file is no usable array."""
    def on_utf8():
        parse.utf8 += 1
    started = started or Started(path)
    if started.error:
        problems.append(Problem(display, started.error))
        return False
    try:
        if started.ranges is not None:
            started.ranges.read(parse, on_utf8)
            return True
        return _decode_buffer(path, display, problems, parse, on_utf8)
    except msgspec.DecodeError as e:
        problems.append(Problem(display, f"not valid JSON (truncated or still being written?): {e}"))
    except RecursionError:
        problems.append(Problem(display, TOO_DEEP))
    return False


def _decode_buffer(path: str, display: str, problems: list[Problem], parse: _Parse, on_utf8) -> bool:
    buf = read_bytes(path, display, problems)
    if buf is None:
        return False
    buf = bytearray(buf)
    at = dec.text_start(buf)
    head = bytes(buf[at:at + 1])
    if head == b"{":  # tolerate the {"traceEvents": [...]} form
        top = msgspec.json.decode(memoryview(buf)[at:], type=dict[str, msgspec.Raw])  # past a BOM: msgspec refuses it
        events = top.get("traceEvents")
        if events is None or bytes(events)[:1] != b"[":
            problems.append(Problem(display, "expected a JSON array of trace events"))
            return False
        lo, hi = _json.value_span(buf, events)
        for got in _json.iter_chunks(buf, lo, hi, trace_scan.decode, on_utf8):
            parse.piece(got)
        return True
    if head != b"[":
        msgspec.json.decode(buf)  # the precise syntax error, or a value that is no array
        problems.append(Problem(display, "expected a JSON array of trace events"))
        return False
    for got in dec.iter_buffer(buf, on_utf8, trace_scan.decode):
        parse.piece(got)
    return True


def read_trace(path: str, display: str, problems: list[Problem], strings, device_hint: int = NONE,
               comm_groups: dict[str, str] | None = None, started: Started | None = None) -> TraceData | None:
    """Parse trace_view.json into columns (strings interned into `strings`); None (and an error
    Problem) when it cannot be parsed."""
    parse = _Parse()
    if not _decode_all(path, display, problems, parse, started):
        return None
    td, unbound = finish(parse, strings, device_hint, comm_groups or {})
    if parse.bad:
        problems.append(Problem(display, f"{parse.bad} event(s) without a usable timestamp skipped", "warning"))
    if parse.utf8:
        problems.append(Problem(display, "not valid UTF-8 in places; undecodable bytes replaced", "warning"))
    if unbound:
        problems.append(Problem(display, f"{unbound} torch_to_npu flow(s) could not be bound to a host op "
                                         f"and a device task", "warning"))
    return td
