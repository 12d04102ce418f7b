"""Readers of the JSON summaries of a torch_npu folder (communication.json, communication_matrix.json).

Each function takes a path, the name to report in Problems and the Problems list, and returns rows
of a declared side table (side_tables.py) or event rows, already in int ns / bytes. The units of each
file and why (decimal MB in the communication files, MiB in the memory CSVs) are in
docs/formats/ascend.md.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from canning_tb.ingest import side_tables as side
from canning_tb.ingest._json import TOO_DEEP
from canning_tb.ingest.table import Problem
from canning_tb.util.safe_files import open_file, read_all

from .csv.rows import ms_to_ns, step_value, to_float, to_int, us_float_to_ns

MB_DECIMAL = 1_000_000


def _load_json(path: str, display: str, problems: list[Problem]) -> Any:
    try:
        with open_file(path) as f:  # a regular file inside the logdir (safe_files), else OSError
            return json.loads(read_all(f, path).decode("utf-8-sig"))
    except (OSError, ValueError) as e:
        problems.append(Problem(display, f"not valid JSON (truncated or still being written?): {e}"))
        return None
    except RecursionError:
        problems.append(Problem(display, TOO_DEEP))
        return None


# -- communication.json / communication_matrix.json ---------------------------------------------------
TOTAL_OP_INFO = "Total Op Info"


def split_op_group(key: str) -> tuple[str, str]:
    """'hcom_allReduce__586_0_1@1752...' -> ('hcom_allReduce__586_0_1', '1752...'); no '@': group ''."""
    if "@" in key:
        op, grp = key.rsplit("@", 1)
        return op, grp
    return key, ""


def as_dict(v: Any) -> dict:
    """A JSON object, or {} for anything else (a damaged file keeps its well-formed parts)."""
    return v if isinstance(v, dict) else {}


def comm_time_row(key: dict, t: dict) -> dict:
    """A comm_ops row from the 'Communication Time Info' of one operator (ms / µs floats -> ns)."""
    return side.row("comm_ops", **key, elapse_ns=ms_to_ns(t.get("Elapse Time(ms)")),
                    transit_ns=ms_to_ns(t.get("Transit Time(ms)")), wait_ns=ms_to_ns(t.get("Wait Time(ms)")),
                    synchronization_ns=ms_to_ns(t.get("Synchronization Time(ms)")),
                    idle_ns=ms_to_ns(t.get("Idle Time(ms)")), start_ns=us_float_to_ns(t.get("Start Timestamp(us)")))


def mb_decimal_to_bytes(v: Any) -> int | None:
    """Transit sizes are decimal MB (see the module docstring)."""
    f = to_float(v)
    return None if f is None else int(round(f * MB_DECIMAL))


def _bandwidth_rows(key: dict, info: dict, out: "CommTables") -> None:
    for transport, b in info.items():
        if not isinstance(b, dict):
            continue
        out.bandwidth.append(side.row(
            "comm_bandwidth", **key, transport=str(transport), size_bytes=mb_decimal_to_bytes(b.get("Transit Size(MB)")),
            time_ns=ms_to_ns(b.get("Transit Time(ms)")), bandwidth_gbps=to_float(b.get("Bandwidth(GB/s)")),
            large_packet_ratio=to_float(b.get("Large Packet Ratio"))))
        for pk, v in as_dict(b.get("Size Distribution")).items():
            if not isinstance(v, (list, tuple)) or len(v) < 2 or mb_decimal_to_bytes(pk) is None:
                continue
            out.packets.append(side.row("comm_packets", **key, transport=str(transport),
                                        packet_bytes=mb_decimal_to_bytes(pk), count=to_int(v[0]),
                                        time_ns=ms_to_ns(v[1])))


@dataclass
class CommTables:
    """The three side tables communication.json (or analysis.db) gives."""

    ops: list[dict] = field(default_factory=list)
    bandwidth: list[dict] = field(default_factory=list)
    packets: list[dict] = field(default_factory=list)

    def groups(self) -> dict[str, str]:
        """op name -> communicator, for the trace reader."""
        return {r["op"]: r["group"] for r in self.ops if r["group"]}


def _comm_entries(d: dict):
    """(step, kind, op key, info) of every operator entry of communication(_matrix).json."""
    for step, kinds in d.items():
        if not isinstance(kinds, dict):
            continue
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                continue
            for key, info in ops.items():
                if isinstance(info, dict):
                    yield step_value(step), str(kind), str(key), info


def read_communication(path: str, display: str, problems: list[Problem]) -> CommTables | None:
    d = read_json_dict(path, display, problems)
    if d is None:
        return None
    out = CommTables()
    for step, kind, opkey, info in _comm_entries(d):
        if opkey == TOTAL_OP_INFO:  # CANN's sum over the calls of the step: derivable, never a call
            continue
        op, grp = split_op_group(opkey)
        key = {"step": step, "kind": kind, "op": op, "group": grp}
        out.ops.append(comm_time_row(key, as_dict(info.get("Communication Time Info"))))
        _bandwidth_rows(key, as_dict(info.get("Communication Bandwidth Info")), out)
    return out


_SLICE_RE = re.compile(r"-(top|middle|bottom)\d*$")


def matrix_aggregate(link: str) -> str:
    """What a communication_matrix key stands for: 'total' (a sum over the step's calls), a slice
    CANN picked by bandwidth ('top', 'middle', 'bottom'), or '' (one operator call)."""
    if link == TOTAL_OP_INFO or link.endswith("-total"):
        return "total"
    m = _SLICE_RE.search(link)
    return m.group(1) if m else ""


def read_communication_matrix(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    d = read_json_dict(path, display, problems)
    if d is None:
        return None
    out = []
    for step, kind, key, links in _comm_entries(d):
        link, grp = split_op_group(key)
        for pair, v in links.items():
            if not isinstance(v, dict):
                continue
            src, _, dst = str(pair).partition("-")
            out.append(matrix_row(step, kind, grp, src, dst, v.get("Transport Type"), v.get("Transit Size(MB)"),
                                  v.get("Transit Time(ms)"), v.get("Bandwidth(GB/s)"), v.get("Op Name"), link))
    return out


def matrix_row(step, kind, group, src, dst, transport, size_mb, time_ms, bw, op, link) -> dict:
    link = str(link or "")
    return side.row("comm_matrix", step=step_value(step), kind=str(kind or ""), group=str(group or ""), link=link,
                    aggregate=matrix_aggregate(link), src=to_int(src), dst=to_int(dst),
                    transport=None if transport is None else str(transport), bytes=mb_decimal_to_bytes(size_mb),
                    time_ns=ms_to_ns(time_ms), bandwidth_gbps=to_float(bw), op=None if op is None else str(op))


def read_json_dict(path: str, display: str, problems: list[Problem]) -> dict | None:
    d = _load_json(path, display, problems)
    if d is not None and not isinstance(d, dict):
        problems.append(Problem(display, "expected a JSON object"))
        return None
    return d
