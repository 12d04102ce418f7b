"""Figures CANN measured itself (Ascend side tables), as the digest carries them.

- Step trace: each row of the `step_trace` side table becomes a CannStep, kept as written. A
  window without ProfilerStep ranges (no trace_view.json: Level0 copies, analysis-off exports)
  takes its steps from it: step time = Preparing + computing + communication not overlapped + free
  (CANN's own split of its device step, which equals Stage + Bubble up to CANN's float rounding,
  after the time from the host step's start to its first device task), breakdown compute =
  computing - overlapped, overlapped, communication = not overlapped, host = Preparing, idle =
  free; each step placed on the device tasks of the window (steps_from_cann), else start -1.
- Communication per call (`comm_ops`, `comm_bandwidth`): elapse, transit, wait, synchronization;
  transit bytes = SDMA + RDMA sizes (SDMA is CANN's sum of the on-node HCCS, PCIE and SIO; without
  an SDMA row those three are added instead), their time the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ingest import side_tables as side
from ..ingest.table import EventTable, Kind
from . import digest_pb2 as pb

_STEP_COLS = ("computing_ns", "communication_not_overlapped_ns", "overlapped_ns", "communication_ns", "free_ns",
              "stage_ns", "bubble_ns", "communication_not_overlapped_exclude_receive_ns", "preparing_ns")
_ON_NODE = ("HCCS", "PCIE", "SIO")
_HCCL_SEQ_RE = re.compile(r"^hcom_[A-Za-z]+_+\d+_(\d+)(?:_\d+)?$")  # 2023 names end in __483_0


def source_of(table: EventTable, name: str) -> str:
    return table.meta.environment.get(f"source.{name}", "")


def _or_unknown(v) -> int:
    return -1 if v is None else int(v)


def cann_steps(table: EventTable) -> list:
    src = source_of(table, "step_trace")
    return [pb.CannStep(step=_or_unknown(r["step"]), source=src, **{c: _or_unknown(r[c]) for c in _STEP_COLS})
            for r in side.rows(table.side, "step_trace")]


def steps_from_cann(steps: list, table: EventTable | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(numbers, starts (-1: unknown), durations, breakdown columns) as steps.breakdowns: each step is
    Preparing + CANN's device step (computing + communication not overlapped + free, = Stage + Bubble),
    Preparing (host step start to its first device task, the device idle) counted as host time; the
    starts placed on the device tasks of the window (`_device_starts`)."""
    def col(f):
        return np.array([max(getattr(s, f), 0) for s in steps], np.int64)
    computing, ov = col("computing_ns"), col("overlapped_ns")
    comm, free, preparing = col("communication_not_overlapped_ns"), col("free_ns"), col("preparing_ns")
    zero = np.zeros(len(steps), np.int64)
    res = {"compute": np.maximum(computing - ov, 0), "overlapped": ov, "communication": comm, "memcpy": zero,
           "memset": zero, "device_wait": zero, "runtime": zero, "dataloader": zero, "host": preparing, "idle": free}
    nums = np.array([max(s.step, 0) for s in steps], np.int64)
    device = computing + comm + free
    return nums, _device_starts(table, preparing, device), preparing + device, res


def _device_starts(table: EventTable | None, preparing: np.ndarray, device: np.ndarray) -> np.ndarray:
    """Where CANN's steps start on the window's clock, from its device tasks (kernel_details.csv): step
    k's first task is the first one at or after the end of step k - 1 on the device, its start that
    minus its Preparing (CANN's rule: Preparing = first task - step start). -1 without tasks."""
    out = np.full(len(device), -1, np.int64)
    if table is None or not len(device):
        return out
    ev = table.events
    kind = ev["kind"]
    rows = np.flatnonzero((kind == int(Kind.KERNEL)) | (kind == int(Kind.COMM_KERNEL)))
    if not len(rows):
        return out
    starts = np.sort(ev["ts"][rows])
    cursor = int(starts[0])
    for k in range(len(device)):
        i = int(np.searchsorted(starts, cursor))
        if i >= len(starts):
            break
        first = int(starts[i])
        out[k] = first - int(preparing[k])
        cursor = first + int(device[k])
    return out


def hccl_seq(op: str) -> int:
    """hcom_allReduce__586_2_1 (2023: hcom_broadcast__483_2) -> 2: the call's index in its communicator,
    as HCCL numbers it."""
    m = _HCCL_SEQ_RE.match(op)
    return int(m.group(1)) if m else -1


@dataclass
class CannCall:
    """CANN's figures for one HCCL operator call."""

    op: str
    group: str
    comm_type: str  # "collective" | "p2p"
    step: int
    start_ns: int
    elapse_ns: int
    transit_ns: int
    wait_ns: int
    synchronization_ns: int
    transit_bytes: int  # -1 unknown
    link_time_ns: int  # time of those bytes on the links


def _transit(links: dict[str, dict]) -> tuple[int, int]:
    """(bytes, ns) moved by one call: SDMA + RDMA (else HCCS + PCIE + SIO + RDMA)."""
    parts = ["SDMA", "RDMA"] if "SDMA" in links else [*_ON_NODE, "RDMA"]
    got = [links[p] for p in parts if p in links and links[p]["size_bytes"] is not None]
    if not got:
        return -1, 0
    return sum(x["size_bytes"] for x in got), sum(x["time_ns"] or 0 for x in got)


def cann_calls(table: EventTable) -> dict[str, CannCall]:
    """op name -> CANN's figures (one call per op name and step; the last step wins on a clash)."""
    links: dict[tuple, dict[str, dict]] = {}
    for b in side.rows(table.side, "comm_bandwidth"):
        links.setdefault((b["step"], b["op"]), {})[b["transport"]] = b
    out = {}
    for r in side.rows(table.side, "comm_ops"):
        nbytes, link_ns = _transit(links.get((r["step"], r["op"]), {}))
        out[r["op"]] = CannCall(
            op=r["op"], group=r["group"] or "", comm_type=r["kind"] or "collective", step=_or_unknown(r["step"]),
            start_ns=_or_unknown(r["start_ns"]), elapse_ns=max(r["elapse_ns"] or 0, 0),
            transit_ns=_or_unknown(r["transit_ns"]), wait_ns=_or_unknown(r["wait_ns"]),
            synchronization_ns=_or_unknown(r["synchronization_ns"]), transit_bytes=nbytes, link_time_ns=link_ns)
    return out


def ops_from_operator_details(table: EventTable) -> tuple[list, list, list]:
    """(by name, by name + shapes, by name + stack) from the operator_details side table: a window
    without trace_view.json has no host events, but torch_npu wrote each operator call's times."""
    rows = side.rows(table.side, "operator_details")

    def build(key) -> list:
        groups: dict[tuple, list[dict]] = {}
        for r in rows:
            groups.setdefault(key(r), []).append(r)
        out = []
        for (name, shapes, stack), members in groups.items():
            totals = [max(m["host_total_ns"] or 0, 0) for m in members]
            out.append(pb.OpStat(
                name=name, input_shapes=shapes, call_stack=stack, calls=len(members),
                host_self_ns=sum(max(m["host_self_ns"] or 0, 0) for m in members), host_total_ns=sum(totals),
                device_self_ns=sum(max(m["device_self_ns"] or 0, 0) for m in members),
                device_total_ns=sum(max(m["device_total_ns"] or 0, 0) for m in members),
                host_total_min_ns=min(totals), host_total_max_ns=max(totals),
                has_call_stack=any(m["call_stack"] for m in members)))
        return sorted(out, key=lambda o: (-o.host_total_ns, o.name, o.input_shapes, o.call_stack))
    return (build(lambda r: (r["name"], "", "")), build(lambda r: (r["name"], r["input_shapes"] or "", "")),
            build(lambda r: (r["name"], "", r["call_stack"] or "")))
