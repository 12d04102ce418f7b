"""Communication: per collective kind and group, the call list, overlap with compute.

- Calls (`comm_rows`, the one classification that the step breakdown uses too): COMM_KERNEL
  events (NCCL/RCCL kernels, HCCL tasks, symmetric-memory and DeepEP kernels, kernels launched
  by a collective op: the reader's evidence). On windows without any, the host collective ops
  instead (`c10d::*`, `gloo:*`, `nccl:*`, `hccl:*`, `record_param_comms`, `hcom_*`): the backend
  ranges `gloo:*` / `nccl:*` / `hccl:*` when there are any (gloo runs them on a worker thread,
  outside the `c10d::` op that queued them: counting both would count each collective twice),
  else the outermost of nested collective ops.
- Kind: common.collective_kind of the name; group: the `group` column ("" when unknown).
- Bytes: the `bytes` column; bandwidth = bytes / total time (GB/s = bytes per ns), -1 unknown.
- Time: total_ns = union of communication time inside the steps; overlapped = its part under
  device compute (KERNEL union); not overlapped = the rest, i.e. exactly the sums of the
  step breakdown's overlapped / communication categories (their share of the step:
  summary.step_shares, the one definition).
- Ascend: what CANN measured itself (transit, wait, synchronization, bytes on the links, the
  link matrix) is added by communication/ascend.py, which says where each figure comes from; the
  calls communication.json holds that the events do not (a kernel_details.csv listing some of the
  step's HCCL operators only) are added from it, so the collectives are the most complete list.
- wait/transfer on GPU/CPU windows stay -1 here: they need the other ranks (cluster.py).
"""
from __future__ import annotations

import re

import numpy as np

from ...ingest.table import NONE, Kind
from .. import digest_pb2 as pb
from . import ascend
from .peers import p2p_peers
from ..cann import cann_calls, source_of
from ..common import HOST_COMM_RE, collective_kind, group_rows, id_mask, ids_matching
from ..context import Context

MAX_CALLS = 100_000
WORKER_RE = re.compile(r"^(gloo:|nccl:|hccl:)")


def comm_rows(ctx: Context) -> np.ndarray:
    """Rows that are communication, sorted (module docstring, "Calls")."""
    ev = ctx.ev
    rows = np.flatnonzero(ev["kind"] == int(Kind.COMM_KERNEL))
    if len(rows):
        return rows
    h = ctx.host
    ids = ids_matching(ctx.table, HOST_COMM_RE)
    is_comm = id_mask(ev["name"][h.rows], ids, len(ctx.table.strings)) & (ctx.host_kind != int(Kind.RUNTIME))
    if not is_comm.any():
        return np.zeros(0, np.int64)
    # the backend's own ranges (gloo:all_reduce, nccl:all_reduce) are the collective as it ran;
    # with gloo they sit on a worker thread, outside the c10d:: op that queued them, so counting
    # both would count each collective twice: take them when present
    worker = id_mask(ev["name"][h.rows], ids_matching(ctx.table, WORKER_RE), len(ctx.table.strings)) & is_comm
    if worker.any():
        is_comm = worker
    anc = np.zeros(len(h.rows), bool)  # has a communication ancestor
    for d in range(1, int(h.depth.max()) + 1):
        sel = np.flatnonzero(h.depth == d)
        p = h.parent[sel]
        anc[sel] = is_comm[p] | anc[p]
    rows = h.rows[is_comm & ~anc]
    return np.sort(rows)


def _kind_from_launcher(ctx: Context, rows: np.ndarray, kinds: np.ndarray, own_kind: np.ndarray) -> None:
    """Device comm kernels: the kind of the host collective that launched them wins when it is
    specific (NCCL runs all_to_all as `ncclKernel_SendRecv`: the host op `nccl:all_to_all` /
    `c10d::alltoall_base_` says AllToAll), except where the kernel's own name is the collective
    (`own_kind`: HCCL names each operator by its kind, hcom_send__.., hcom_allReduce__..). Up to 4
    enclosing ops are looked at."""
    ev, t = ctx.ev, ctx.table
    if not (ev["kind"][rows] == int(Kind.COMM_KERNEL)).any() or len(ctx.device_rows) == 0:
        return
    pos = np.searchsorted(ctx.device_rows, rows)
    ok = (pos < len(ctx.device_rows)) & (ctx.device_rows[np.minimum(pos, len(ctx.device_rows) - 1)] == rows)
    owner = np.where(ok, ctx.device_owner[np.minimum(pos, len(ctx.device_rows) - 1)], NONE)
    found = np.full(len(rows), "", dtype=object)
    cur = owner.copy()
    for _ in range(4):
        alive = np.flatnonzero((cur != NONE) & (found == ""))
        if not len(alive):
            break
        # the kind of each distinct launcher name, then looked up per kernel
        names, which = np.unique(ev["name"][ctx.host.rows[cur[alive]]], return_inverse=True)
        kind_of = np.array([_launcher_kind(t.strings[int(n)] or "") for n in names], dtype=object)
        launcher = kind_of[which.reshape(-1)]
        named = launcher != "Other"
        found[alive[named]] = launcher[named]
        up = np.full(len(cur), NONE, np.int64)
        up[alive] = ctx.host.parent[cur[alive]]
        cur = up
    sel = (found != "") & ~own_kind
    kinds[sel] = found[sel]


def _launcher_kind(name: str) -> str:
    return collective_kind(name) if HOST_COMM_RE.search(name) else "Other"


def communication_stats(ctx: Context, step_starts: np.ndarray, step_ends: np.ndarray, step_nums: np.ndarray,
                        breakdown: dict) -> pb.Communication:
    t = ctx.table
    c = pb.Communication(wait_ns=-1, transfer_ns=-1)
    rows = comm_rows(ctx)
    c.overlapped_ns = int(np.sum(breakdown.get("overlapped", 0)))
    c.not_overlapped_ns = int(np.sum(breakdown.get("communication", 0)))
    c.total_ns = c.overlapped_ns + c.not_overlapped_ns
    calls = cann_calls(t)
    if len(rows):
        _stats_from_events(ctx, rows, c, step_starts, step_nums, calls, source_of(t, "comm_ops"))
        ascend.add_calls_only_cann_has(c, calls, source_of(t, "comm_ops"))
    elif calls:
        ascend.collectives_from_cann(t, c)
    ascend.number_unsequenced(c)
    ascend.totals(c)
    c.links.extend(ascend.links(t))
    c.groups.extend(ascend.groups(t, [s.group for s in c.collectives]))
    return c


def _stats_from_events(ctx: Context, rows: np.ndarray, c: pb.Communication, step_starts: np.ndarray,
                       step_nums: np.ndarray, calls: dict, source: str) -> None:
    t, ev = ctx.table, ctx.ev
    names = ev["name"][rows]
    un, ninv = np.unique(names, return_inverse=True)
    ninv = ninv.reshape(-1)
    kinds_u = np.array([collective_kind(t.strings[int(x)] or "") for x in un])
    kinds = kinds_u[ninv].astype(object)
    hccl = np.array([(t.strings[int(x)] or "").startswith("hcom_") for x in un], bool)[ninv]
    _kind_from_launcher(ctx, rows, kinds, hccl & (kinds != "Other"))
    group_ids = ev["group"][rows].astype(np.int64)
    groups = np.array([t.strings[int(g)] or "" if g >= 0 else "" for g in group_ids])
    group_ids[groups == ""] = NONE  # an empty group name (Kineto's "Process Group Name": "") is no group: one row
    dur, byt, ts = ev["dur"][rows], ev["bytes"][rows], ev["ts"][rows]
    op_names = np.array([t.strings[int(x)] or "" for x in un], dtype=object)[ninv]
    kind_list = sorted(set(kinds.tolist()))
    kind_idx = np.searchsorted(np.array(kind_list), kinds)
    uk, kinv = group_rows(np.stack([kind_idx, group_ids], axis=1))
    stats = []
    for gi, (ki, gid) in enumerate(uk):
        sel = kinv == gi
        d, b = dur[sel], byt[sel]
        s = pb.CollectiveStat(kind=kind_list[int(ki)], group=(t.strings[int(gid)] or "") if gid >= 0 else "",
                              calls=int(sel.sum()), total_ns=int(d.sum()), min_ns=int(d.min()), max_ns=int(d.max()),
                              wait_ns=-1, transfer_ns=-1)
        s.bytes = int(b[b != NONE].sum()) if (b != NONE).any() else -1
        s.bandwidth_gbps = s.bytes / s.total_ns if s.bytes >= 0 and s.total_ns > 0 else -1.0
        ascend.add_cann_figures(s, op_names[sel].tolist(), calls, source)
        stats.append(s)
    stats.sort(key=lambda s: (-s.total_ns, s.kind, s.group))
    c.collectives.extend(stats)
    order = np.argsort(ts, kind="stable")
    if len(order) > MAX_CALLS:
        order = order[:MAX_CALLS]
        c.calls_truncated = True
    k_step = np.searchsorted(step_starts, ts, side="right") - 1
    stepno = np.where(k_step >= 0, step_nums[np.maximum(k_step, 0)], -1)
    peers = p2p_peers(ctx, rows, np.isin(kinds, ("Send", "Recv")))
    for i in order:
        call = c.calls.add(kind=str(kinds[i]), group=str(groups[i]), start_ns=int(ts[i]), dur_ns=int(dur[i]),
                           bytes=int(byt[i]), step=int(stepno[i]))
        if peers[i] >= 0:
            call.peer = int(peers[i])
        ascend.add_call_figures(call, op_names[i], calls)
