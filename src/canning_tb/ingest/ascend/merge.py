"""Device tasks of trace_view.json and kernel_details.csv merged without double counting, over columns.

kernel_details.csv, when present, is the list of device tasks; each row is matched to the trace's
device event of the same (start, name) (the k-th row of a key to the k-th event of it), else of the
same name with the nearest start within 2 µs (HCCL ops are written 1 ns apart in the two files); the
matched trace event is dropped and its links (external id, correlation, stream, pid/tid; bytes and
group for HCCL ops) go to the row. Trace device events no row matched stay (memcpy, sync tasks ...).
Sorting, then a search only among the few unmatched rows of each name: linear in the rows, never
quadratic in the events of one name. The rule in full: docs/formats/ascend.md.
"""
from __future__ import annotations

import numpy as np

from ..table import EVENT_COLUMNS, MEMORY_COLUMNS, NONE, EventTable, Kind

MATCH_TOLERANCE_NS = 2000


def _run_rank(tiebreak: np.ndarray, ts: np.ndarray, name: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order by name, start, tiebreak; rank of each sorted item among the items of its (name, start))."""
    order = np.lexsort((tiebreak, ts, name))
    if not len(order):
        return order, order
    sts, sname = ts[order], name[order]
    new = np.ones(len(order), bool)
    new[1:] = (sts[1:] != sts[:-1]) | (sname[1:] != sname[:-1])
    start = np.flatnonzero(new)
    rank = np.arange(len(order)) - np.repeat(start, np.diff(np.append(start, len(order))))
    return order, rank


def _exact(k_ts, k_name, t_ts, t_name, t_idx) -> np.ndarray:
    """Per kernel row, the trace row of the same (start, name) taken in order, else -1."""
    ko, kr = _run_rank(np.arange(len(k_ts)), k_ts, k_name)
    to, tr = _run_rank(t_idx, t_ts, t_name)
    both_ts = np.concatenate([k_ts[ko], t_ts[to]])
    both_name = np.concatenate([k_name[ko], t_name[to]])
    both_rank = np.concatenate([kr, tr])
    side = np.concatenate([np.zeros(len(ko), np.int8), np.ones(len(to), np.int8)])
    o = np.lexsort((side, both_rank, both_ts, both_name))
    same = (both_ts[o][1:] == both_ts[o][:-1]) & (both_name[o][1:] == both_name[o][:-1]) & \
        (both_rank[o][1:] == both_rank[o][:-1]) & (side[o][:-1] == 0) & (side[o][1:] == 1)
    at = np.flatnonzero(same)
    out = np.full(len(k_ts), -1, np.int64)
    out[ko[o[at]]] = t_idx[to[o[at + 1] - len(ko)]]
    return out


def _near(k_ts, k_name, rows: np.ndarray, t_ts, t_name, t_idx, free: np.ndarray, match: np.ndarray) -> None:
    """Rows still unmatched (in file order) take the free trace event of their name with the nearest
    start within the tolerance (ties: the earlier event)."""
    order = np.lexsort((t_idx, t_ts, t_name))
    s_name, s_ts, s_idx = t_name[order], t_ts[order], t_idx[order]
    taken = ~free[order]
    for r in rows.tolist():
        name, ts = k_name[r], k_ts[r]
        lo = np.searchsorted(s_name, name, "left")
        hi = np.searchsorted(s_name, name, "right")
        if lo == hi:
            continue
        a = lo + np.searchsorted(s_ts[lo:hi], ts - MATCH_TOLERANCE_NS, "left")
        b = lo + np.searchsorted(s_ts[lo:hi], ts + MATCH_TOLERANCE_NS, "right")
        cand = np.arange(a, b)[~taken[a:b]]
        if not len(cand):
            continue
        best = cand[np.lexsort((s_idx[cand], np.abs(s_ts[cand] - ts)))[0]]
        taken[best] = True
        match[r] = s_idx[best]


def _inherit(k: dict, t: dict, kr: np.ndarray, tr: np.ndarray) -> None:
    """Matched kernel rows take the links of their trace events."""
    for c in ("external_id", "correlation"):
        v = t[c][tr]
        k[c][kr] = np.where(v != NONE, v, k[c][kr])
    k["pid"][kr], k["tid"][kr] = t["pid"][tr], t["tid"][tr]
    no_stream = k["stream"][kr] == NONE
    k["stream"][kr] = np.where(no_stream & (t["stream"][tr] != NONE), t["stream"][tr], k["stream"][kr])
    k["device"][kr] = np.where(k["device"][kr] == NONE, t["device"][tr], k["device"][kr])
    comm = k["kind"][kr] == Kind.COMM_KERNEL
    for c in ("bytes", "group"):
        v = t[c][tr]
        k[c][kr] = np.where(comm & (v != NONE), v, k[c][kr])


def merge_device(trace, kernels) -> list[tuple[dict, dict, np.ndarray | None]]:
    """The window's tasks as `fill_events` sources: the trace's events minus those a kernel row matched
    (its rows kept), then the kernel rows; each (event columns, metrics, rows kept or None for all), not
    copied: `fill_events` takes them column by column."""
    if trace is None:
        k = dict(kernels.events)
        k["tid"] = k["stream"].copy()
        return [(k, kernels.metrics, None)]
    t = trace.events
    if kernels is None or not len(kernels):
        return [(t, trace.metrics, None)]
    k = {c: v.copy() for c, v in kernels.events.items()}
    t_idx = np.flatnonzero(trace.device_mask)
    t_ts, t_name = t["ts"][t_idx], t["name"][t_idx].astype(np.int64)
    k_name = k["name"].astype(np.int64)
    match = _exact(k["ts"], k_name, t_ts, t_name, t_idx)
    free = np.ones(len(t["ts"]), bool)
    free[match[match >= 0]] = False
    _near(k["ts"], k_name, np.flatnonzero(match < 0), t_ts, t_name, t_idx, free[t_idx], match)
    kr = np.flatnonzero(match >= 0)
    _inherit(k, t, kr, match[kr])
    loose = np.flatnonzero(match < 0)
    k["pid"][loose] = trace.hardware_pid
    k["tid"][loose] = k["stream"][loose]
    keep = np.ones(len(t["ts"]), bool)
    keep[match[kr]] = False
    return [(t, trace.metrics, keep), (k, kernels.metrics, None)]


def fill_events(table: EventTable, sources: list[tuple[dict, dict, np.ndarray | None]]) -> None:
    """The table's events from sources (event columns, metrics, rows kept or None for all) in order,
    ordered by start (stable), a column at a time, each source column released once used (memory: one
    copy of the events, not three). Each metric is one column over all rows, NaN where its source has
    none (the host ops' flops, the kernel rows' PMU figures), its values put straight where their rows land."""
    counts = [len(cols["ts"]) if rows is None else int(np.count_nonzero(rows)) for cols, _, rows in sources]
    ts = np.concatenate([cols["ts"] if rows is None else cols["ts"][rows] for cols, _, rows in sources])
    order = np.argsort(ts, kind="stable")
    del ts
    out = {}
    for c, dtype in EVENT_COLUMNS.items():
        pieces = [cols.pop(c) for cols, _, _ in sources]
        col = np.concatenate([p if rows is None else p[rows] for p, (_, _, rows) in zip(pieces, sources)])
        del pieces
        out[c] = col[order].astype(dtype, copy=False)
        del col
    table.events = out
    landing = np.empty(len(order), np.int64)
    landing[order] = np.arange(len(order))  # row k of the concatenation ends at landing[k]
    filled: dict[str, np.ndarray] = {}
    first = 0
    for (_, metrics, rows), count in zip(sources, counts):
        at = landing[first:first + count]
        for m, v in metrics.items():
            col = filled.setdefault(m, np.full(len(order), np.nan))
            col[at] = v if rows is None else v[rows]
        first += count
    table.metrics = dict(sorted(filled.items()))


def fill_memory(table: EventTable, cols: dict[str, np.ndarray]) -> None:
    order = np.argsort(cols["ts"], kind="stable")
    table.memory = {c: cols[c][order].astype(t, copy=False) for c, t in MEMORY_COLUMNS.items()}
