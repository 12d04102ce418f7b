"""Memory: curves, peaks, allocation events and per-op statistics per device.

- Curve: the running totals of the records (Kineto `[memory]` records carry Total Allocated /
  Total Reserved after the record). Ascend memory_record rows are per-component samples: the
  curve uses the `PTA+GE` component when present, else `PTA`; records of other components
  only feed `components`. Old Kineto records without running totals: the running sum of the
  signed sizes, shifted so that the lowest point is 0 (what was held before the window is
  unknown, so that curve and its peak are relative).
- Downsampling: at most MAX_POINTS points; the records are cut in MAX_POINTS/2 - 1 buckets by
  index and each keeps its minimum and maximum allocated point (plus the first and last point),
  so every local extreme that matters, and the exact global peak, stay in the curve.
- Allocation events: records with bytes > 0 paired with the next record of the same device and
  address having bytes < 0 (the free). Frees without an allocation in the window give events
  with alloc_ns = -1. Events are in time order; beyond MAX_EVENTS the largest are kept, largest
  first (events_truncated set). The op of an allocation: the `op` column when the reader set it, else the
  innermost CPU_OP enclosing the record's time on the busiest host thread that has one (memory
  records carry no thread: a sound approximation for the usual single training thread).
  Ascend: the operator_memory side table gives allocation events and op names.
- Per-op statistics (names as torch-tb-profiler's Memory Statistics): allocations / bytes
  (children included) and self ones, increase = net signed bytes while the op ran.
"""
from __future__ import annotations

import re

import numpy as np

from canning_tb.util.arrays import distinct

from ..ingest import side_tables as side
from ..ingest.table import NONE, EventTable, Kind
from . import digest_pb2 as pb
from .common import group_rows, id_mask, ids_matching, innermost_at, nest, sum_up_tree
from .context import Context

MAX_POINTS = 2000
MAX_EVENTS = 10000
EMPTY_CACHE_RE = re.compile(r"empty_cache", re.I)


def downsample(values: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices to keep: min/max per bucket (the first of equal ones), first and last, the global
    maximum always kept."""
    n = len(values)
    if n <= max_points:
        return np.arange(n)
    nb = max(1, (max_points - 2) // 2)
    edges = np.linspace(0, n, nb + 1).astype(np.int64)
    starts = edges[:-1][edges[:-1] < edges[1:]]  # the buckets that hold an index
    keep = np.concatenate([[0, n - 1, int(np.argmax(values))], _first_extreme(values, starts, np.maximum),
                           _first_extreme(values, starts, np.minimum)])
    return distinct(keep)


def _first_extreme(values: np.ndarray, starts: np.ndarray, extreme: np.ufunc) -> np.ndarray:
    """Per bucket of consecutive values (from each of `starts` to the next): the index of the first
    value equal to the bucket's maximum (np.maximum) or minimum (np.minimum)."""
    best = extreme.reduceat(values, starts)
    bucket = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))
    index = np.where(values == best[bucket], np.arange(len(values)), len(values))
    return np.minimum.reduceat(index, starts)


def _device_capacity(table: EventTable, device: str) -> int:
    m = re.match(r"([a-zA-Z]+):?(\d+)?", device or "")
    if not m:
        return -1
    if m.group(2) and len(m.group(2)) > 9:
        return -1  # a device number no device has (a damaged npu_module_mem.csv: the reader warned)
    kind, idx = m.group(1).lower(), int(m.group(2) or 0)
    for d in table.meta.devices:
        if str(d.get("kind", "")).lower() == kind and int(d.get("index", 0)) == idx:
            mem = d.get("memory", -1)
            return int(mem) if mem is not None else -1
    if kind in ("cuda", "npu", "gpu") and len(table.meta.devices) == 1:
        mem = table.meta.devices[0].get("memory", -1)
        return int(mem) if mem is not None else -1
    return -1


def memory_stats(ctx: Context) -> list:
    t = ctx.table
    mem = t.memory
    ev = t.events
    out = []
    n_empty = int(id_mask(ev["name"][ev["kind"] == int(Kind.CPU_OP)], ids_matching(t, EMPTY_CACHE_RE), len(t.strings)).sum())
    op_rows = np.flatnonzero((ev["kind"] == int(Kind.CPU_OP)) & (ev["device"] == NONE))
    op_nest = None
    devices = distinct(mem["device"]) if len(mem["ts"]) else np.zeros(0, np.int32)
    comp_names = {int(c): t.strings[int(c)] for c in distinct(mem["component"]) if c >= 0}
    for dev_id in devices:
        dname = t.strings[int(dev_id)] or ""
        dm = np.flatnonzero(mem["device"] == dev_id)
        d = pb.DeviceMemory(device=dname, capacity_bytes=_device_capacity(t, dname), empty_cache_calls=n_empty,
                            peak_allocated_bytes=-1, peak_ts_ns=-1, peak_reserved_bytes=-1)
        _curve(d, t, _curve_rows(t, dm, comp_names))
        _components(d, t, dm, comp_names)
        # allocations and frees
        b = mem["bytes"][dm]
        d.allocations = int((b > 0).sum())
        d.frees = int((b < 0).sum())
        d.allocated_bytes = int(b[b > 0].sum())
        rec = dm[b != 0]
        if len(rec):
            if op_nest is None:
                op_nest = nest(t, op_rows)
            inner = innermost_at(t, op_nest, mem["ts"][rec])
            _events(d, t, rec, inner, op_nest)
            _op_memory(d, t, rec, inner, op_nest)
        out.append(d)
    _ascend_side_tables(ctx, out, n_empty)
    return out


def _curve_rows(t: EventTable, dm: np.ndarray, comp_names: dict[int, str]) -> np.ndarray:
    """The records of a device that make its curve (the PTA+GE, else PTA component on NPU), by time."""
    mem = t.memory
    comps = mem["component"][dm]
    rows = dm
    if (comps != NONE).any():
        want = None
        for label in ("PTA+GE", "PTA"):
            cid = [c for c, s in comp_names.items() if s == label]
            if cid and (comps == cid[0]).any():
                want = cid[0]
                break
        rows = dm[comps == want] if want is not None else dm[comps == NONE]
    return rows[np.argsort(mem["ts"][rows], kind="stable")]


def _curve(d, t: EventTable, curve_rows: np.ndarray) -> None:
    mem = t.memory
    known = mem["allocated"][curve_rows] != NONE
    derived = None
    if not known.any() and (mem["bytes"][curve_rows] != 0).any():
        # old Kineto records (no Total Allocated): running sum of the changes, shifted so the
        # lowest point of the window is 0 (memory held before the window is unknown)
        cs = np.cumsum(mem["bytes"][curve_rows])
        derived = cs - min(int(cs.min()), 0)
        known = np.ones(len(curve_rows), bool)
    cr = curve_rows[known]
    if len(cr):
        a = mem["allocated"][cr] if derived is None else derived
        keep = downsample(a)
        p = int(np.argmax(a))
        d.peak_allocated_bytes = int(a[p])
        d.peak_ts_ns = int(mem["ts"][cr[p]])
        d.curve_ts_ns.extend(mem["ts"][cr[keep]].tolist())
        d.curve_allocated_bytes.extend(a[keep].tolist())
        if _reserved_recorded(mem["reserved"][cr]):
            d.curve_reserved_bytes.extend(mem["reserved"][cr[keep]].tolist())
        act = mem["active"][cr[keep]]
        if (act != NONE).any():
            d.curve_active_bytes.extend(act.tolist())
    res = mem["reserved"][curve_rows]
    if _reserved_recorded(res[res != NONE]):
        d.peak_reserved_bytes = int(res[res != NONE].max())


def _reserved_recorded(reserved: np.ndarray) -> bool:
    """The records say how much the allocator reserved: some value, none absent, not all 0 (the CPU
    allocator reserves nothing: Kineto writes 0 there, which is "not recorded", not a figure)."""
    return len(reserved) > 0 and bool((reserved != NONE).all()) and int(reserved.max()) > 0


def _components(d, t: EventTable, dm: np.ndarray, comp_names: dict[int, str]) -> None:
    """Peaks per memory_record component (NPU: PTA, GE, APP ...)."""
    mem = t.memory
    comps = mem["component"][dm]
    for c in distinct(comps[comps != NONE]):
        rr = dm[comps == c]
        ra, rs = mem["allocated"][rr], mem["reserved"][rr]
        d.components.add(component=comp_names[int(c)],
                         peak_reserved_bytes=int(rs.max()) if (rs != NONE).any() else -1,
                         peak_allocated_bytes=int(ra.max()) if (ra != NONE).any() else -1)


def _events(d, t: EventTable, rec: np.ndarray, inner: np.ndarray, op_nest) -> None:
    mem = t.memory
    b = mem["bytes"][rec]
    addr = mem["addr"][rec]
    ts = mem["ts"][rec]
    opcol = mem["op"][rec]
    inner_name = np.full(len(rec), NONE, np.int64)
    has_op = inner != NONE
    inner_name[has_op] = t.events["name"][op_nest.rows[inner[has_op]]]
    opname = np.where(opcol != NONE, opcol, inner_name)
    has = addr != NONE
    idx = np.flatnonzero(has)
    order = idx[np.lexsort((ts[idx], addr[idx]))]
    a_s, b_s = addr[order], b[order]
    nxt_same = np.r_[a_s[1:] == a_s[:-1], False]
    prv_same = np.r_[False, a_s[1:] == a_s[:-1]]
    is_alloc = b_s > 0
    paired = is_alloc & nxt_same & np.r_[b_s[1:] < 0, False]
    alloc_pos = order[is_alloc]
    free_ts = np.full(len(order), -1, np.int64)
    free_ts[paired] = ts[order[np.flatnonzero(paired) + 1]]
    ev_op = opname[alloc_pos]
    ev_bytes = b[alloc_pos]
    ev_a = ts[alloc_pos]
    ev_f = free_ts[is_alloc]
    # frees whose allocation happened before the window
    orphan = (b_s < 0) & ~(prv_same & np.r_[False, b_s[:-1] > 0])
    op_o = opname[order[orphan]]
    ev_op = np.r_[ev_op, op_o]
    ev_bytes = np.r_[ev_bytes, -b_s[orphan]]
    ev_a = np.r_[ev_a, np.full(int(orphan.sum()), -1, np.int64)]
    ev_f = np.r_[ev_f, ts[order[orphan]]]
    when = np.where(ev_a >= 0, ev_a, ev_f)
    if len(ev_bytes) > MAX_EVENTS:  # the largest, largest first (as the schema says)
        keep = _largest(ev_bytes, when, MAX_EVENTS)
        d.events_truncated = True
    else:
        keep = np.lexsort((ev_bytes, when))  # by time
    names = [t.strings[op] or "" if op >= 0 else "" for op in ev_op[keep].tolist()]
    for name, size, alloc, free in zip(names, ev_bytes[keep].tolist(), ev_a[keep].tolist(), ev_f[keep].tolist()):
        d.events.add(op=name, bytes=size, alloc_ns=alloc, free_ns=free)


def _largest(sizes: np.ndarray, when: np.ndarray, count: int) -> np.ndarray:
    """np.lexsort((when, -sizes))[:count]: the `count` largest, by size down, then time, then index;
    only the sizes at or above the count-th largest are sorted."""
    threshold = np.partition(sizes, len(sizes) - count)[len(sizes) - count]
    candidates = np.flatnonzero(sizes >= threshold)
    return candidates[np.lexsort((when[candidates], -sizes[candidates]))][:count]


def _op_memory(d, t: EventTable, rec: np.ndarray, inner: np.ndarray, op_nest) -> None:
    mem = t.memory
    n = len(op_nest.rows)
    if n == 0:
        return
    b = mem["bytes"][rec]
    ok = inner != NONE
    pos = inner[ok]
    bb = b[ok]
    self_alloc = np.zeros(n, np.int64)
    self_bytes = np.zeros(n, np.int64)
    self_inc = np.zeros(n, np.int64)
    np.add.at(self_alloc, pos[bb > 0], 1)
    np.add.at(self_bytes, pos[bb > 0], bb[bb > 0])
    np.add.at(self_inc, pos, bb)
    tot_alloc, tot_bytes, tot_inc = sum_up_tree(np.stack([self_alloc, self_bytes, self_inc], axis=1), op_nest).T
    names = t.events["name"][op_nest.rows]
    touched = tot_alloc + np.abs(tot_inc) > 0
    if not touched.any():
        return
    u, inv = group_rows(names[touched])
    u = u[:, 0]
    agg = [np.bincount(inv, weights=x[touched], minlength=len(u)).astype(np.int64)
           for x in (tot_alloc, tot_bytes, self_alloc, self_bytes, tot_inc, self_inc)]
    order = np.argsort(-agg[1], kind="stable")
    for i in order:
        d.ops.add(name=t.strings[int(u[i])] or "", allocations=int(agg[0][i]), allocated_bytes=int(agg[1][i]),
                  self_allocations=int(agg[2][i]), self_allocated_bytes=int(agg[3][i]),
                  increase_bytes=int(agg[4][i]), self_increase_bytes=int(agg[5][i]))


def _ascend_side_tables(ctx: Context, out: list, n_empty: int) -> None:
    """NPU: the operator_memory side table -> allocation events and per-op statistics of each device
    (when the memory records gave none); npu_module_mem -> the peak reserved of each CANN module."""
    t = ctx.table
    allocs = side.rows(t.side, "operator_memory")
    modules = side.rows(t.side, "npu_module_mem")
    if not allocs and not modules:
        return
    entries = _DeviceEntries(t, out, n_empty)
    by_device: dict[str, list[dict]] = {}
    for r in allocs:
        by_device.setdefault(r["device"] or entries.default, []).append(r)
    for dev, rows in by_device.items():
        d = entries.get(dev)
        if d.allocations == 0:
            _op_memory_events(d, rows)
        if len(d.ops) == 0:
            _op_memory_stats(d, rows)
    _module_components(entries, modules)


class _DeviceEntries:
    """The DeviceMemory of a device name, created when the memory records had none."""

    def __init__(self, table: EventTable, out: list, n_empty: int):
        self.table, self.out, self.n_empty = table, out, n_empty
        self.default = out[0].device if out else "npu:0"

    def get(self, name: str):
        for d in self.out:
            if d.device.lower() == name.lower():
                return d
        d = pb.DeviceMemory(device=name, capacity_bytes=_device_capacity(self.table, name),
                            empty_cache_calls=self.n_empty, peak_allocated_bytes=-1, peak_ts_ns=-1,
                            peak_reserved_bytes=-1)
        self.out.append(d)
        return d


def _op_memory_events(d, rows: list[dict]) -> None:
    blocks = [r for r in rows if (r["bytes"] or 0) > 0]
    d.allocations = len(blocks)
    d.frees = sum(1 for r in blocks if r["free_ns"] >= 0)
    d.allocated_bytes = sum(r["bytes"] for r in blocks)
    d.events_truncated = len(blocks) > MAX_EVENTS
    if d.events_truncated:  # the largest, largest first
        blocks = sorted(blocks, key=lambda r: (-r["bytes"], r["alloc_ns"]))[:MAX_EVENTS]
    else:
        blocks = sorted(blocks, key=lambda r: r["alloc_ns"])
    del d.events[:]
    for r in blocks:
        d.events.add(op=r["name"], bytes=r["bytes"], alloc_ns=r["alloc_ns"], free_ns=r["free_ns"])


def _op_memory_stats(d, rows: list[dict]) -> None:
    per: dict[str, list[int]] = {}  # name -> [allocations, bytes, bytes freed in the window]
    for r in rows:
        size = max(r["bytes"] or 0, 0)
        acc = per.setdefault(r["name"], [0, 0, 0])
        acc[0] += size > 0
        acc[1] += size
        acc[2] += size if r["free_ns"] >= 0 else 0
    for name, (count, nbytes, freed) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        d.ops.add(name=name, allocations=count, allocated_bytes=nbytes, self_allocations=count,
                  self_allocated_bytes=nbytes, increase_bytes=nbytes - freed, self_increase_bytes=nbytes - freed)


def _module_components(entries: _DeviceEntries, modules: list[dict]) -> None:
    peaks: dict[tuple[str, str], int] = {}
    for (device, component), peak in side.max_by(modules, ("device", "component"), "reserved_bytes").items():
        key = (device or entries.default, component)
        peaks[key] = max(peaks.get(key, -1), peak)
    for (dev, comp), peak in peaks.items():
        d = entries.get(dev)
        if comp not in {c.component for c in d.components}:
            d.components.add(component=comp, peak_reserved_bytes=peak, peak_allocated_bytes=-1)
