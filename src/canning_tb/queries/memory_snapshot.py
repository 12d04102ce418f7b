"""The memory snapshot of a window (issue 41), as every front door serves it: `snapshot_impl` (the snapshot
explained: state, peak, empty_cache, OOMs, steps, growth, leaks; analysis/memory_snapshot/summary.py),
`snapshot_series_impl` (requested and reserved bytes over the history, bounded points) and
`snapshot_state_impl` (the allocator's state at one entry of the history) and `snapshot_ranks_impl` (the ranks
side by side at one window position), `snapshot_bands_impl` (the allocation timeline's bands). Every list is
bounded by `limit`.

A snapshot beside a trace is joined to the window by time when both clocks allow it (the window's steps and
host operators); the answer says "not joined" and why otherwise.
"""
from __future__ import annotations


from .bounds import check_int
from .errors import BadParameter, NotFound, Unreadable, short_path, unknown_window

MAX_LIMIT = 200
MAX_POINTS = 20_000


def _window(store, run: str, worker: str, window: str):
    try:
        return store.window(run, worker, window)
    except KeyError:
        raise unknown_window(run, worker, window) from None


def _snapshot(store, run: str, worker: str, window: str, index: int):
    from canning_tb.ingest.table import InputError
    found = _window(store, run, worker, window)
    if not found.snapshots:
        raise NotFound(f"{run} / {worker} / {window} has no memory snapshot")
    check_int("snapshot", index)
    if not 0 <= index < len(found.snapshots):
        raise NotFound(f"no snapshot {index}: the window has {len(found.snapshots)}")
    try:
        return found, store.snapshot(run, worker, window, index)
    except InputError as e:
        raise Unreadable(f"{short_path(store, e.file)}: {e.problem}", file=short_path(store, e.file)) from None
    except OSError as e:
        raise Unreadable(f"{short_path(store, found.snapshots[index])}: cannot read: {e.strerror or e}") from None


def _window_clock(store, run: str, worker: str, window: str, found):
    """(table, steps [(number, start_ns, end_ns)], base_ns, (start, end)) of the window's trace; Nones for a
    snapshot alone or a trace that cannot be read (the snapshot is then shown unjoined)."""
    if found.format == "snapshot":
        return None, None, None, None
    from canning_tb.ingest.table import InputError
    try:
        table = store.table(run, worker, window)
    except (InputError, OSError, ValueError):
        return None, None, None, None
    from canning_tb.analysis.steps import host_steps
    from canning_tb.ingest.step_marks import trace_base_ns
    nums, starts, ends, _ = host_steps(table)
    ts = table.events["ts"]
    span = (int(ts.min()), int((ts + table.events["dur"]).max())) if len(ts) else None
    return table, list(zip(nums.tolist(), starts.tolist(), ends.tolist())), trace_base_ns(table), span


def snapshot_impl(store, run: str, worker: str, window: str, index: int = 0, limit: int = 20) -> dict:
    from canning_tb.analysis.memory_snapshot.summary import summarize
    check_int("limit", limit)
    if not 1 <= limit <= MAX_LIMIT:
        raise BadParameter(f"limit must be 1 to {MAX_LIMIT}")
    found, snap = _snapshot(store, run, worker, window, index)
    # the window's events only when the snapshot's entries carry times to join them by
    table, steps, base, span = (_window_clock(store, run, worker, window, found) if snap.has_times
                                else (None, None, None, None))
    out = summarize(snap, table=table, limit=limit, window_steps=steps, base_ns=base, window_span=span)
    out["file"] = short_path(store, snap.path)
    out.update({"run": run, "worker": worker, "window": window, "index": index,
                "snapshots": [short_path(store, p) for p in found.snapshots]})
    return out


def _device(snap, device: int) -> int:
    check_int("device", device)
    if device not in snap.devices:
        raise NotFound(f"unknown device {device}: the snapshot has {snap.devices}")
    return device


def snapshot_series_impl(store, run: str, worker: str, window: str, device: int = 0, index: int = 0,
                         points: int = 2000) -> dict:
    from canning_tb.analysis.memory_snapshot.summary import series
    check_int("points", points)
    if not 2 <= points <= MAX_POINTS:
        raise BadParameter(f"points must be 2 to {MAX_POINTS}")
    _, snap = _snapshot(store, run, worker, window, index)
    return {"run": run, "worker": worker, "window": window, **series(snap, _device(snap, device), points)}


def snapshot_state_impl(store, run: str, worker: str, window: str, entry: int, device: int = 0,
                        index: int = 0) -> dict:
    from canning_tb.analysis.memory_snapshot import state
    from canning_tb.analysis.memory_snapshot.replay import replay
    check_int("entry", entry)
    _, snap = _snapshot(store, run, worker, window, index)
    r = replay(snap, _device(snap, device))
    if not 0 <= entry < r.n:
        raise BadParameter(f"entry must be 0 to {r.n - 1}" if r.n else "the snapshot has no history")
    return {"run": run, "worker": worker, "window": window, "device": device, **state.at_entry(snap, r, entry)}


def has_snapshot(store, run: str, worker: str, window: str) -> bool:
    return bool(_window(store, run, worker, window).snapshots)




def snapshot_ranks_impl(store, run: str, position: int) -> dict:
    """The ranks side by side at one window position (Store.windows_at): each worker's first snapshot there, its
    peak, the state at the snapshot, growth in its last step and leaks; and the ranks' findings (one rank's peak
    far above the others'). A snapshot that cannot be read is a row with its error."""
    from canning_tb.analysis.memory_snapshot.findings import rank_findings
    from canning_tb.analysis.memory_snapshot.summary import summarize
    from canning_tb.ingest.table import InputError
    check_int("window_index", position)
    try:
        pairs = store.windows_at(run, position)
    except KeyError:
        raise NotFound(f"unknown run: {run!r}") from None
    rows = []
    for worker, win in pairs:
        if not win.snapshots:
            continue
        row = {"worker": worker.name, "rank": worker.rank, "window": win.id, "file": short_path(store, win.snapshots[0])}
        try:
            dev = summarize(store.snapshot(run, worker.name, win.id, 0), limit=1)["devices"]
        except (InputError, OSError) as e:
            rows.append({**row, "error": f"{short_path(store, getattr(e, 'file', win.snapshots[0]))}: "
                                         f"{getattr(e, 'problem', None) or e}", "peak_requested": -1})
            continue
        first = dev[0] if dev else None
        snap = first["at_snapshot"] if first else {}
        last = first["growth_last"] if first else None
        rows.append({**row, "device": first["device"] if first else -1,
                     "peak_requested": first["peak"]["requested"] if first else -1,
                     "peak_reserved": first["peak"]["reserved"] if first else -1,
                     "reserved": snap.get("reserved", -1), "fragmentation": snap.get("fragmentation", -1.0),
                     "largest_free_block": snap.get("largest_free_block", -1),
                     "steps": first["steps"] if first else 0,
                     "last_step_grown": last["grown"] if last else -1,
                     "leaks": len(first["leaks"]) if first else 0,
                     "empty_cache_calls": first["empty_cache"]["empty_cache_calls"] if first else 0})
    return {"run": run, "window_index": position, "ranks": rows, "findings": rank_findings(rows)}


MAX_BANDS = 5000


def snapshot_bands_impl(store, run: str, worker: str, window: str, device: int = 0, index: int = 0,
                        start_entry: int | None = None, end_entry: int | None = None, limit: int = 1000) -> dict:
    """The allocation timeline's bands in [start_entry, end_entry] of the device's history (both open: all of it),
    the largest `limit` (analysis/memory_snapshot/bands.py)."""
    from canning_tb.analysis.memory_snapshot.bands import bands
    from canning_tb.analysis.memory_snapshot.replay import replay
    for name, value in (("start_entry", start_entry), ("end_entry", end_entry), ("limit", limit)):
        if value is not None:
            check_int(name, value)
    if not 1 <= limit <= MAX_BANDS:
        raise BadParameter(f"limit must be 1 to {MAX_BANDS}")
    _, snap = _snapshot(store, run, worker, window, index)
    r = replay(snap, _device(snap, device))
    lo = 0 if start_entry is None else start_entry
    hi = r.n - 1 if end_entry is None else end_entry
    if lo > hi:
        raise BadParameter("start_entry is after end_entry")
    return {"run": run, "worker": worker, "window": window, "device": device, **bands(snap, r, lo, hi, limit)}
