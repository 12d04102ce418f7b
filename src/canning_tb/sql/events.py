"""The `events` table of one window: its EventTable (the columns every reader produces, the timeline's
and the digest's input) as Arrow, one row per event, cached as Parquet in the store's cache folder beside
the window's cached columns (`Store.events_prefix`), never in the logdir.

Columns: `id` (the event's row in the window), `parent` (the id of the event that encloses it on its
thread / stream, analysis/common.nest; NULL at a root), `depth`, `ts_ns` (start, relative to the window
start as every table's instants), `dur_ns`, `kind` (cpu_op, kernel, memcpy, comm_kernel ... : ingest's
Kind), `name`, `cat`, `pid`, `tid`, `device`, `stream`, `correlation`, `external_id`, `shapes`, `stack`,
`core`, `blocks`, `bytes`, `group`, `args`. Strings are dictionary-encoded; -1 ("absent") is NULL. `step`:
the digest step whose span holds the event's start, NULL outside every step.
"""
from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa

from canning_tb.ingest.table import NONE, Kind
from canning_tb.util import safe_files

from .tables import KEYS

log = logging.getLogger("canning_tb.sql")

VERSION = 1  # of the Parquet file's columns: a new one is written when they change
SUFFIX = f".sql-events-v{VERSION}.parquet"
KINDS = [k.name.lower() for k in sorted(Kind, key=int)]
INTS = ("pid", "tid", "device", "stream", "correlation", "external_id", "blocks", "bytes")
STRINGS = ("name", "cat", "shapes", "stack", "core", "group", "args")
COLUMNS = (("id", pa.int64()), ("parent", pa.int64()), ("depth", pa.int64()), ("ts_ns", pa.int64()),
           ("dur_ns", pa.int64()), ("kind", pa.dictionary(pa.int32(), pa.string())),
           *((n, pa.dictionary(pa.int32(), pa.string())) for n in STRINGS[:2]),
           *((n, pa.int64()) for n in INTS),
           *((n, pa.dictionary(pa.int32(), pa.string())) for n in STRINGS[2:]))


def schema() -> pa.Schema:
    return pa.schema([*KEYS, *COLUMNS])


def _strings(ids: np.ndarray, values: list) -> pa.Array:
    ids = np.asarray(ids, np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(ids, mask=ids < 0), pa.array(values, pa.string()))


def _ints(values: np.ndarray, absent: bool = True) -> pa.Array:
    values = np.asarray(values, np.int64)
    return pa.array(values, pa.int64(), mask=(values == NONE) if absent else None)


def _steps_of(ts: np.ndarray, steps: list) -> pa.Array:
    """The number of the step whose [start, start + dur) holds each instant, NULL outside every step."""
    placed = sorted((s.start_ns, s.start_ns + max(s.dur_ns, 0), int(s.number)) for s in steps if s.start_ns >= 0)
    out = np.full(len(ts), -1, np.int64)
    inside = np.zeros(len(ts), bool)
    if placed:
        starts = np.array([p[0] for p in placed], np.int64)
        ends = np.array([p[1] for p in placed], np.int64)
        numbers = np.array([p[2] for p in placed], np.int64)
        k = np.searchsorted(starts, ts, side="right") - 1
        ok = k >= 0
        ok[ok] &= ts[ok] < ends[k[ok]]
        out[ok], inside = numbers[k[ok]], ok
    return pa.array(out, pa.int64(), mask=~inside)


def to_arrow(table, key: dict, t0: int, steps: list) -> pa.Table:
    """One window's EventTable as the `events` table (`key`: run, worker, rank, window, window_index)."""
    from canning_tb.analysis.common import nest
    ev, n = table.events, len(table)
    values = table.strings.values
    nesting = nest(table, np.arange(n, dtype=np.int64))
    base = t0 if t0 >= 0 else (int(ev["ts"].min()) if n else 0)
    cols = {
        "run": pa.array([key["run"]] * n, pa.string()), "worker": pa.array([key["worker"]] * n, pa.string()),
        "rank": pa.array(np.full(n, key["rank"], np.int64)), "window": pa.array([key["window"]] * n, pa.string()),
        "window_index": pa.array(np.full(n, key["window_index"], np.int64)),
        "step": _steps_of(ev["ts"], steps),
        "id": pa.array(np.arange(n, dtype=np.int64)),  # nest's rows are 0..n-1: a parent's position is its id
        "parent": _ints(nesting.parent),
        "depth": pa.array(np.asarray(nesting.depth, np.int64)),
        "ts_ns": pa.array(np.asarray(ev["ts"], np.int64) - base), "dur_ns": pa.array(np.asarray(ev["dur"], np.int64)),
        "kind": pa.DictionaryArray.from_arrays(pa.array(np.asarray(ev["kind"], np.int32)), pa.array(KINDS)),
    }
    for name in STRINGS:
        cols[name] = _strings(ev[name], values)
    for name in INTS:
        cols[name] = _ints(ev[name])
    out = schema()
    return pa.Table.from_arrays([cols[f.name] for f in out], schema=out)


def cached(prefix: str, build) -> pa.Table:
    """The window's events from `<prefix>.sql-events-vN.parquet` (the store's cache folder), else `build()`,
    written there for the next query (a cache that cannot be written only costs time)."""
    import pyarrow.parquet as pq
    path = prefix + SUFFIX
    try:
        with safe_files.open_file(path) as f:  # a regular file, never a link out of a .canning cache
            found = pq.read_table(f)
        if found.schema.names == schema().names:
            return found
    except (OSError, pa.ArrowException):
        pass
    table = build()
    try:  # safe_files: never through a link where the cache sits beside the data (.canning)
        safe_files.atomic_write(path, write=lambda f: pq.write_table(table, f, compression="zstd"))
    except (OSError, pa.ArrowException) as e:
        log.warning("canning: cannot write the events cache %s: %s", path, e)
    return table
