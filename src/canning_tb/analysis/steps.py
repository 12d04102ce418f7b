"""Steps and the step time breakdown.

Steps
-----
A step is a `ProfilerStep#N` event (any kind but GPU_USER_ANNOTATION) on the main thread (the
(pid, tid) holding most of them). Without any, the window is one step numbered 0 spanning the
first start to the last end of all events.

Step span (the rule, kept): step i runs from S_i = start of ProfilerStep#i to
E_i = max(host end of ProfilerStep#i, last end of the device events *launched* in it), capped at
S_{i+1} so that steps never overlap; the last step is not capped. A device event is launched in
step i when its RUNTIME launch (joined on `correlation`) starts inside the host range of step i;
device events without a launch record use their own start. This is torch-tb-profiler's
"extend the step to the last device event of its launches", kept disjoint. The device work
counted in step i is everything on the device clock inside [S_i, E_i): a kernel that straddles
the cap is split at the boundary, so each instant belongs to exactly one step.

Breakdown (the priority rule, kept)
-----------------------------------
Every instant of [S_i, E_i) goes to the first category that covers it, in this order:
  1-3. device work: K = union of KERNEL, C = union of communication (COMM_KERNEL; on windows with
       no device events at all, host collective ops `c10d::*`, `gloo:*`, `nccl:*`,
       `record_param_comms`, `hcom_*` instead):
         compute = K - C, overlapped = K ∩ C, communication = C - K
  4. memcpy (MEMCPY)   5. memset (MEMSET)   6. runtime (RUNTIME)
  7. dataloader (`enumerate(DataLoader)#...`, `enumerate(DataPipe)#...`, `DataLoader*` ranges)
  8. host (any CPU_OP / USER_ANNOTATION on any host thread, ProfilerStep#N excluded)
  9. idle = the rest.
The categories are disjoint by construction, so they sum exactly to E_i - S_i.

Ascend
------
step_trace_time.csv (the step_trace side table) uses the same device sets: Computing = compute +
overlapped, Communication(Not Overlapped) = communication, Overlapped = overlapped, Free = the
rest of the step (memcpy + memset + runtime + dataloader + host + idle here). Differences come
only from the step span: CANN measures the step on the device from its own "Step" range, we
from ProfilerStep#N extended to its device work; both are reported, the csv in `scalars`
(`step_trace_computing_ns`, `step_trace_free_ns`, ... : the mean over the csv rows).
"""
from __future__ import annotations

import numpy as np

from ..ingest.table import NONE, EventTable, Kind
from . import intervals as iv
from .common import (DATALOADER_RE, DEVICE_KINDS, HOST_COMM_RE, HOST_OP_KINDS, STEP_RE, group_rows, id_mask, join_on,
                     kind_mask, name_mask)

CATEGORIES = ["compute", "overlapped", "communication", "memcpy", "memset", "runtime", "dataloader", "host"]


def step_rows(table: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the ProfilerStep#N events on the main thread, by start, and their numbers."""
    ev = table.events
    ids = [i for i, s in enumerate(table.strings.values) if STEP_RE.match(s)]
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.flatnonzero(id_mask(ev["name"], ids, len(table.strings)) & (ev["kind"] != int(Kind.GPU_USER_ANNOTATION))
                          & (ev["device"] == NONE))
    if len(rows) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = np.stack([ev["pid"][rows], ev["tid"][rows]], axis=1)
    uniq, inv = group_rows(pairs)
    cnt = np.bincount(inv)
    main = np.argmax(cnt)
    rows = rows[inv.reshape(-1) == main]
    rows = rows[np.argsort(ev["ts"][rows], kind="stable")]
    nums = np.array([int(STEP_RE.match(table.strings[int(n)]).group(1)) for n in ev["name"][rows]], np.int64)
    # one event per step number (a reader may emit duplicates)
    _, first = np.unique(nums, return_index=True)
    first = np.sort(first)
    return rows[first], nums[first]


def device_rows(table: EventTable) -> np.ndarray:
    return np.flatnonzero(kind_mask(table, DEVICE_KINDS))


def launch_times(table: EventTable, dev: np.ndarray) -> np.ndarray:
    """Start of the RUNTIME event that launched each device row (own start when unknown)."""
    ev = table.events
    rt = np.flatnonzero(ev["kind"] == int(Kind.RUNTIME))
    rt = rt[ev["correlation"][rt] != NONE]
    hit = join_on(ev["correlation"][dev], ev["correlation"][rt])
    lt = ev["ts"][dev].copy()
    ok = hit != NONE
    lt[ok] = ev["ts"][rt[hit[ok]]]
    return lt


def step_spans(table: EventTable):
    """(numbers, starts, ends) of the steps, per the rule in the module docstring."""
    ev = table.events
    rows, nums = step_rows(table)
    if len(rows) == 0:
        if len(table) == 0:
            return np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
        lo = int(ev["ts"].min())
        hi = int((ev["ts"] + ev["dur"]).max())
        return np.zeros(1, np.int64), np.array([lo]), np.array([hi])
    s = ev["ts"][rows].astype(np.int64)
    host_end = s + ev["dur"][rows]
    e = host_end.copy()
    dev = device_rows(table)
    if len(dev):
        lt = launch_times(table, dev)
        k = np.searchsorted(s, lt, side="right") - 1
        ok = (k >= 0)
        ok &= lt < host_end[np.maximum(k, 0)]
        dev_end = ev["ts"][dev] + ev["dur"][dev]
        np.maximum.at(e, k[ok], dev_end[ok])
    e[:-1] = np.minimum(e[:-1], s[1:])
    e = np.maximum(e, s)
    return nums, s, e


def category_sets(table: EventTable) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Exclusive interval sets per category over the whole window (priority applied)."""
    ev = table.events
    kind = ev["kind"]
    ts, end = ev["ts"], ev["ts"] + ev["dur"]

    def u(mask):
        return iv.union(ts[mask], end[mask])

    has_device = bool(kind_mask(table, DEVICE_KINDS).any())
    on_host = ev["device"] == NONE
    host_ops = kind_mask(table, HOST_OP_KINDS) & on_host
    step_names = name_mask(table, STEP_RE)
    if has_device:
        comm = kind == int(Kind.COMM_KERNEL)
    else:
        comm = host_ops & name_mask(table, HOST_COMM_RE)
    sets = [
        u(kind == int(Kind.KERNEL)),
        u(comm),
        u(kind == int(Kind.MEMCPY)),
        u(kind == int(Kind.MEMSET)),
        u(kind == int(Kind.RUNTIME)),
        u(host_ops & name_mask(table, DATALOADER_RE)),
        u(host_ops & ~step_names),
    ]
    return partition(sets)


def partition(sets):
    """Split into the 8 exclusive categories: bits 0 (kernels) and 1 (communication) give
    compute / overlapped / communication, then the lowest remaining bit wins."""
    pos, delta = [], []
    for i, (s, e) in enumerate(sets):
        pos += [s, e]
        delta += [np.full(len(s), 1 << i, np.int64), np.full(len(e), -(1 << i), np.int64)]
    p = np.concatenate(pos) if pos else np.zeros(0, np.int64)
    out = {c: iv.EMPTY for c in CATEGORIES}
    if len(p) < 2:
        return out
    d = np.concatenate(delta)
    order = np.argsort(p, kind="stable")
    p, d = p[order], d[order]
    m = np.cumsum(d)
    last_at = np.r_[p[1:] != p[:-1], True]
    up, um = p[last_at], m[last_at]
    ss, se, sm = up[:-1], up[1:], um[:-1]
    dev = sm & 3
    rest = sm >> 2
    low = rest & -rest  # lowest set bit of the rest
    cat = np.full(len(sm), -1, np.int64)
    cat[dev == 1] = 0
    cat[dev == 3] = 1
    cat[dev == 2] = 2
    for j in range(5):  # memcpy .. host
        cat[(dev == 0) & (low == (1 << j))] = 3 + j
    for c, name in enumerate(CATEGORIES):
        sel = cat == c
        out[name] = iv.union(ss[sel], se[sel])
    return out


def breakdowns(table: EventTable):
    """List of (number, start, dur, {category: ns, 'idle': ns}) per step."""
    nums, s, e = step_spans(table)
    cats = category_sets(table)
    res = {c: iv.measure(cats[c], s, e) for c in CATEGORIES}
    dur = e - s
    used = np.zeros(len(s), np.int64)
    for c in CATEGORIES:
        used += res[c]
    res["idle"] = dur - used
    return nums, s, dur, res
