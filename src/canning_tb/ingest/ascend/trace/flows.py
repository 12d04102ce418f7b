"""torch_to_npu flows of trace_view.json: the host op (flow start `s`) and the device task (flow end `f`)
share one external_id, over columns. The rules of the plain reading, kept exactly: the last `s` and the
last `f` of an id count; a flow binds the innermost host op of its start's thread that encloses the
start (among the 64 ops starting just before it) to every device task starting on the end's thread at
the end's time; host ops get ids in the order their flows first appear, and a task bound twice keeps
the later flow's.
"""
from __future__ import annotations

import numpy as np

from canning_tb.ingest.table import NONE
from canning_tb.util.arrays import distinct

_SCAN_BACK = 64  # host ops starting before the flow's start that may enclose it (ops are nested)


def _last_per_id(ids: np.ndarray, mask: np.ndarray) -> dict[int, int]:
    rows = np.flatnonzero(mask)
    if not len(rows):
        return {}
    rev = rows[::-1]
    uniq, first_in_rev = np.unique(ids[rev], return_index=True)
    return dict(zip(uniq.tolist(), rev[first_in_rev].tolist()))


def _threads(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return pid.astype(np.int64) * (1 << 32) + tid.astype(np.int64)


def innermost(host_thread, host_ts, host_dur, q_thread, q_at) -> np.ndarray:
    """Per query, the index (into the host arrays) of the innermost host op enclosing it, else -1."""
    out = np.full(len(q_at), -1, np.int64)
    order = np.lexsort((np.arange(len(host_ts)), -host_dur, host_ts, host_thread))
    th, ts, dur = host_thread[order], host_ts[order], host_dur[order]
    for thread in distinct(q_thread):
        lo, hi = np.searchsorted(th, thread, "left"), np.searchsorted(th, thread, "right")
        if lo == hi:
            continue
        q = np.flatnonzero(q_thread == thread)
        at = q_at[q]
        j = np.searchsorted(ts[lo:hi], at, "right") - 1 + lo
        best_dur = np.full(len(q), np.iinfo(np.int64).max)
        best = np.full(len(q), -1, np.int64)
        for back in range(_SCAN_BACK):
            k = j - back
            valid = k >= lo
            kk = np.where(valid, k, lo)
            t0, d = ts[kk], dur[kk]
            better = valid & (t0 <= at) & (at <= t0 + d) & (d < best_dur)
            best = np.where(better, kk, best)
            best_dur = np.where(better, d, best_dur)
        out[q] = np.where(best >= 0, order[np.maximum(best, 0)], -1)
    return out


def bind(flows: dict[str, np.ndarray], ev: dict[str, np.ndarray], host: np.ndarray,
         device: np.ndarray) -> tuple[np.ndarray, int]:
    """(external_id column, flows that could not be bound). `flows`: ph, id, pid, tid, ts, ts_ok, seq
    (file order); `ev`: the events' local pid / tid, ts, dur; host / device: row masks."""
    n = len(ev["ts"])
    ext = np.full(n, NONE, np.int64)
    if not len(flows.get("id", ())):
        return ext, 0
    ids = flows["id"]
    starts, ends = _last_per_id(ids, flows["ph"] == "s"), _last_per_id(ids, flows["ph"] == "f")
    uniq, first = np.unique(ids, return_index=True)
    in_order = uniq[np.argsort(first, kind="stable")]
    pairs = [(starts[i], ends[i]) for i in in_order.tolist() if i in starts and i in ends]
    if not pairs:
        return ext, 0
    s_rows, f_rows = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    hosts = np.flatnonzero(host)
    found = innermost(_threads(ev["pid"][hosts], ev["tid"][hosts]), ev["ts"][hosts], ev["dur"][hosts],
                      _threads(flows["pid"][s_rows], flows["tid"][s_rows]), flows["ts"][s_rows])
    picked = hosts[np.maximum(found, 0)] if len(hosts) else found  # no host op at all: every flow found -1
    found = np.where(flows["ts_ok"][s_rows] & (found >= 0), picked, -1)
    dev_rows, dev_flow = _tasks_at(ev, device, flows, f_rows)
    has_task = np.bincount(dev_flow, minlength=len(pairs)) > 0 if len(dev_flow) else np.zeros(len(pairs), bool)
    bound = (found >= 0) & has_task
    unbound = int((~bound).sum())
    order = np.flatnonzero(bound)  # flows in first-appearance order
    host_of = found[order]
    uniq_host, first_at = np.unique(host_of, return_index=True)
    rank = np.empty(len(uniq_host), np.int64)
    rank[np.argsort(first_at, kind="stable")] = np.arange(1, len(uniq_host) + 1)
    ext[uniq_host] = rank
    flow_ext = np.full(len(pairs), NONE, np.int64)
    flow_ext[order] = ext[host_of]
    keep = bound[dev_flow]
    dev_rows, dev_flow = dev_rows[keep], dev_flow[keep]
    last = np.lexsort((dev_flow, dev_rows))  # per task, the later flow last
    dev_rows, dev_flow = dev_rows[last], dev_flow[last]
    final = np.append(dev_rows[1:] != dev_rows[:-1], True) if len(dev_rows) else np.zeros(0, bool)
    ext[dev_rows[final]] = flow_ext[dev_flow[final]]
    return ext, unbound


def _tasks_at(ev, device: np.ndarray, flows, f_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(device row, flow index) of every device task starting on a flow end's thread at its time."""
    dev = np.flatnonzero(device)
    d_thread = _threads(ev["pid"][dev], ev["tid"][dev])
    d_order = np.lexsort((dev, ev["ts"][dev], d_thread))
    d_thread, d_ts, dev = d_thread[d_order], ev["ts"][dev][d_order], dev[d_order]
    q_thread = _threads(flows["pid"][f_rows], flows["tid"][f_rows])
    q_ts = flows["ts"][f_rows]
    q_ok = flows["ts_ok"][f_rows]
    rows_out, flow_out = [], []
    for thread in distinct(q_thread):
        lo, hi = np.searchsorted(d_thread, thread, "left"), np.searchsorted(d_thread, thread, "right")
        if lo == hi:
            continue
        q = np.flatnonzero((q_thread == thread) & q_ok)
        a = np.searchsorted(d_ts[lo:hi], q_ts[q], "left") + lo
        b = np.searchsorted(d_ts[lo:hi], q_ts[q], "right") + lo
        counts = b - a
        if not counts.sum():
            continue
        flow_out.append(np.repeat(q, counts))
        starts = np.repeat(a - np.cumsum(counts) + counts, counts)
        rows_out.append(dev[starts + np.arange(counts.sum())])
    if not rows_out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows_out), np.concatenate(flow_out)
