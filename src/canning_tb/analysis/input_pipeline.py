"""The host side of data loading, per step: how long the training loop waits for the next batch (the
DataLoader's next() ranges the profiler records, `enumerate(DataLoader)#..._DataLoaderIter.__next__`),
the host-to-device copies on the device and the pin-memory operators on the host, and the loader's
workers the trace names. Each per-step figure is the union of its events' time inside the step (calls
that overlap count once). What the trace does not show is unknown (-1, ""), never 0: torch.profiler
records the main process only, so a multiprocessing DataLoader's worker processes are not in it."""
from __future__ import annotations

import re

import numpy as np

from canning_tb.ingest.table import NONE, EventTable, Kind

from . import digest_pb2 as pb
from .common import DATALOADER_RE, HOST_OP_KINDS, kind_mask, name_mask
from .intervals import measure, union

H2D_RE = re.compile(r"htod|h2d|host.?to.?device", re.I)
PIN_RE = re.compile(r"^aten::_?pin_memory$")
WORKER_RE = re.compile(r"dataloader|data_?loader|pin_memory|pin memory|pt_data_worker|data_worker", re.I)
_MULTI = "_MultiProcessingDataLoaderIter"
_SINGLE = "_SingleProcessDataLoaderIter"


def _loader(table: EventTable, rows: np.ndarray) -> str:
    names = {table.strings[int(i)] or "" for i in np.unique(table.events["name"][rows])}
    if any(_MULTI in n for n in names):
        return "multiprocessing"
    if any(_SINGLE in n for n in names):
        return "single process"
    return "DataLoader" if len(rows) else ""


def _workers(table: EventTable) -> list[str]:
    meta = table.meta
    named = [name for name in list(meta.thread_names.values()) + list(meta.process_names.values())
             if name and WORKER_RE.search(name)]
    return sorted(set(named))


def _per_step(starts: np.ndarray, ends: np.ndarray, ev_start: np.ndarray, ev_end: np.ndarray):
    """(time of the rows' union inside each step, rows starting in each step)."""
    iset = union(ev_start, ev_end)
    inside = measure(iset, starts, ends)
    calls = np.array([int(((ev_start >= s) & (ev_start < e)).sum()) for s, e in zip(starts.tolist(), ends.tolist())],
                     np.int64)
    return inside.astype(np.int64), calls


def input_pipeline(table: EventTable, nums: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   kept: np.ndarray) -> pb.InputPipeline:
    """The InputPipeline section of a window whose steps are [starts, ends) numbered nums; the means
    are over the steps `kept` (the average's steps)."""
    ev = table.events
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    host = kind_mask(table, HOST_OP_KINDS)
    loading = np.flatnonzero(host & name_mask(table, DATALOADER_RE))
    copies = np.flatnonzero((ev["kind"] == int(Kind.MEMCPY)) & name_mask(table, H2D_RE))
    pins = np.flatnonzero(host & name_mask(table, PIN_RE))
    out = pb.InputPipeline(loader=_loader(table, loading), next_calls=len(loading))
    names = _workers(table)
    out.worker_names.extend(names)
    out.workers = len(names) if names else (0 if out.loader == "single process" else -1)
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    nxt, nxt_calls = _per_step(starts, ends, ts[loading], end[loading])
    h2d, h2d_calls = _per_step(starts, ends, ts[copies], end[copies])
    pin, _ = _per_step(starts, ends, ts[pins], end[pins])
    sizes = ev["bytes"][copies]
    known_sizes = len(copies) > 0 and bool((sizes != NONE).all())
    for i in range(len(nums)):
        in_step = (ts[copies] >= starts[i]) & (ts[copies] < ends[i])
        out.steps.add(step=int(nums[i]), step_ns=int(ends[i] - starts[i]), next_ns=int(nxt[i]),
                      next_calls=int(nxt_calls[i]), h2d_ns=int(h2d[i]), h2d_calls=int(h2d_calls[i]),
                      h2d_bytes=int(sizes[in_step].sum()) if known_sizes else (0 if not len(copies) else -1),
                      pin_ns=int(pin[i]))
    kept = np.asarray(kept, bool)
    if not kept.any():
        kept = np.ones(len(nums), bool)
    n = max(int(kept.sum()), 1)
    mean = lambda values: int(round(float(np.sum(values[kept])) / n)) if len(values) else 0  # noqa: E731
    out.step_ns = mean(ends - starts)
    out.next_ns = mean(nxt) if len(loading) else -1
    out.next_share = out.next_ns / out.step_ns if out.next_ns >= 0 and out.step_ns > 0 else -1.0
    out.h2d_ns = mean(h2d)
    out.pin_ns = mean(pin)
    per_step_bytes = np.array([s.h2d_bytes for s in out.steps], np.int64)
    out.h2d_bytes = mean(per_step_bytes) if len(per_step_bytes) and (per_step_bytes >= 0).all() else -1
    return out
