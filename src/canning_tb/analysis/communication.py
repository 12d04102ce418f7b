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
  step breakdown's overlapped / communication categories. not_overlapped_share = not
  overlapped / sum of step times.
- Ascend: extras["communication"] (communication.json) gives per op the transit (transfer) and
  wait times, summed per (kind, group); bandwidth = (SDMA + RDMA bytes) / (SDMA + RDMA time),
  SDMA being CANN's sum of the on-node transports (HCCS, PCIE, SIO). extras["communication_matrix"]
  gives the links (the "<op>-total" entries when present, else all).
- wait/transfer on GPU/CPU windows stay -1 here: they need the other ranks (cluster.py).
"""
from __future__ import annotations

import re

import numpy as np

from ..ingest.table import NONE, Kind
from . import digest_pb2 as pb
from .common import HOST_COMM_RE, collective_kind, group_rows, id_mask, ids_matching
from .context import Context

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


def _kind_from_launcher(ctx: Context, rows: np.ndarray, kinds: np.ndarray) -> None:
    """Device comm kernels: the kind of the host collective that launched them wins when it is
    specific (NCCL runs all_to_all as `ncclKernel_SendRecv`: the host op `nccl:all_to_all` /
    `c10d::alltoall_base_` says AllToAll). Up to 4 enclosing ops are looked at."""
    ev, t = ctx.ev, ctx.table
    if not (ev["kind"][rows] == int(Kind.COMM_KERNEL)).any() or len(ctx.device_rows) == 0:
        return
    pos = np.searchsorted(ctx.device_rows, rows)
    ok = (pos < len(ctx.device_rows)) & (ctx.device_rows[np.minimum(pos, len(ctx.device_rows) - 1)] == rows)
    owner = np.where(ok, ctx.device_owner[np.minimum(pos, len(ctx.device_rows) - 1)], NONE)
    cache: dict[int, str] = {}
    found = np.full(len(rows), "", dtype=object)
    cur = owner.copy()
    for _ in range(4):
        alive = (cur != NONE) & (found == "")
        if not alive.any():
            break
        for i in np.flatnonzero(alive):
            nid = int(ev["name"][ctx.host.rows[cur[i]]])
            k = cache.get(nid)
            if k is None:
                s = t.strings[nid] or ""
                k = collective_kind(s) if HOST_COMM_RE.search(s) else "Other"
                cache[nid] = k
            if k != "Other":
                found[i] = k
        cur = np.where(alive, ctx.host.parent[np.maximum(cur, 0)], NONE)
    sel = found != ""
    kinds[sel] = found[sel]


def _ascend_ops(extras) -> dict[str, dict]:
    """op name -> {transit_ns, wait_ns, bytes, bw_time_ns} summed over steps, from communication.json."""
    out: dict[str, dict] = {}
    comm = extras.get("communication")
    if not isinstance(comm, dict):
        return out
    for step in comm.values():
        if not isinstance(step, dict):
            continue
        for part in ("collective", "p2p"):
            for op, info in (step.get(part) or {}).items():
                if op == "Total Op Info" or not isinstance(info, dict):
                    continue
                o = out.setdefault(op, {"transit_ns": 0, "wait_ns": 0, "bytes": 0, "bw_time_ns": 0})
                o["transit_ns"] += int(info.get("transit_ns") or 0)
                o["wait_ns"] += int(info.get("wait_ns") or 0)
                bw = info.get("bandwidth") or {}
                for tr in ("SDMA", "RDMA"):
                    b = bw.get(tr) or {}
                    o["bytes"] += int(b.get("size_bytes") or 0)
                    o["bw_time_ns"] += int(b.get("time_ns") or 0)
    return out


def communication_stats(ctx: Context, step_starts: np.ndarray, step_ends: np.ndarray, step_nums: np.ndarray,
                        breakdown: dict) -> pb.Communication:
    t, ev = ctx.table, ctx.ev
    c = pb.Communication(wait_ns=-1, transfer_ns=-1)
    rows = comm_rows(ctx)
    step_total = int(np.sum(step_ends - step_starts))
    c.overlapped_ns = int(np.sum(breakdown.get("overlapped", 0)))
    c.not_overlapped_ns = int(np.sum(breakdown.get("communication", 0)))
    c.total_ns = c.overlapped_ns + c.not_overlapped_ns
    c.not_overlapped_share = c.not_overlapped_ns / step_total if step_total > 0 else 0.0
    asc = _ascend_ops(t.extras)
    if len(rows):
        names = ev["name"][rows]
        un, ninv = np.unique(names, return_inverse=True)
        kinds_u = np.array([collective_kind(t.strings[int(x)] or "") for x in un])
        kinds = kinds_u[ninv.reshape(-1)].astype(object)
        _kind_from_launcher(ctx, rows, kinds)
        groups = np.array([t.strings[int(g)] or "" if g >= 0 else "" for g in ev["group"][rows]]) if len(rows) else np.array([])
        dur = ev["dur"][rows]
        byt = ev["bytes"][rows]
        ts = ev["ts"][rows]
        kind_list = sorted(set(kinds.tolist()))
        kind_idx = np.searchsorted(np.array(kind_list), kinds)
        uk, kinv = group_rows(np.stack([kind_idx, ev["group"][rows].astype(np.int64)], axis=1))
        # per-name Ascend wait / transfer
        a_tr = np.full(len(un), -1, np.int64)
        a_wt = np.full(len(un), -1, np.int64)
        a_b = np.zeros(len(un), np.int64)
        a_bt = np.zeros(len(un), np.int64)
        for i, x in enumerate(un):
            o = asc.get(t.strings[int(x)] or "")
            if o:
                a_tr[i], a_wt[i], a_b[i], a_bt[i] = o["transit_ns"], o["wait_ns"], o["bytes"], o["bw_time_ns"]
        row_tr, row_wt = a_tr[ninv.reshape(-1)], a_wt[ninv.reshape(-1)]
        stats = []
        for gi, (ki, gid) in enumerate(uk):
            sel = kinv == gi
            kind, group = kind_list[int(ki)], (t.strings[int(gid)] or "") if gid >= 0 else ""
            d = dur[sel]
            b = byt[sel]
            s = pb.CollectiveStat(kind=kind, group=group, calls=int(sel.sum()), total_ns=int(d.sum()),
                                  min_ns=int(d.min()), max_ns=int(d.max()), wait_ns=-1, transfer_ns=-1)
            s.bytes = int(b[b != NONE].sum()) if (b != NONE).any() else -1
            s.bandwidth_gbps = s.bytes / s.total_ns if s.bytes >= 0 and s.total_ns > 0 else -1.0
            tr, wt = row_tr[sel], row_wt[sel]
            if (tr >= 0).any():
                # communication.json lists each op once per step: count each distinct name once
                nm_sel = np.unique(ninv.reshape(-1)[sel])
                nm_sel = nm_sel[a_tr[nm_sel] >= 0]
                s.transfer_ns = int(a_tr[nm_sel].sum())
                s.wait_ns = int(a_wt[nm_sel].sum())
                bt = int(a_bt[nm_sel].sum())
                if bt > 0:
                    s.bandwidth_gbps = float(a_b[nm_sel].sum()) / bt
            stats.append(s)
        stats.sort(key=lambda s: (-s.total_ns, s.kind, s.group))
        c.collectives.extend(stats)
        if any(s.transfer_ns >= 0 for s in stats):
            c.transfer_ns = sum(max(s.transfer_ns, 0) for s in stats)
            c.wait_ns = sum(max(s.wait_ns, 0) for s in stats)
        order = np.argsort(ts, kind="stable")
        if len(order) > MAX_CALLS:
            order = order[:MAX_CALLS]
            c.calls_truncated = True
        k_step = np.searchsorted(step_starts, ts, side="right") - 1
        stepno = np.where(k_step >= 0, step_nums[np.maximum(k_step, 0)], -1)
        for i in order:
            c.calls.add(kind=str(kinds[i]), group=str(groups[i]), start_ns=int(ts[i]), dur_ns=int(dur[i]),
                        bytes=int(byt[i]), step=int(stepno[i]))
    links = t.extras.get("communication_matrix")
    if isinstance(links, list) and links:
        tot = [x for x in links if str(x.get("link", "")).endswith("-total")]
        for x in (tot or links):
            c.links.add(src=int(x.get("src", -1)), dst=int(x.get("dst", -1)), transport=str(x.get("transport") or ""),
                        bytes=int(x.get("bytes") or 0), time_ns=int(x.get("time_ns") or 0),
                        bandwidth_gbps=float(x.get("bandwidth_gbps") or 0.0), op=str(x.get("op") or x.get("link") or ""))
    return c
