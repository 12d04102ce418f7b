"""The timeline's `*_impl`s: a window's events and level-of-detail index (built once, cached beside
the columnar events as `<prefix>.timeline.npz`, kept in memory for the last few windows), and the
answers of the /timeline_* routes (docs/http_api.md). Times in answers are ns relative to the
window start (the digest's window.start_ns), like the other routes."""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent import futures
from dataclasses import dataclass

from canning_tb.util.lru import LRU
from canning_tb.util.safe_files import open_file

from .errors import BadParameter, NotFound, QueryError, unknown_window, window_digest

log = logging.getLogger("canning_tb.plugin")
_MEMORY_ITEMS = 16  # the ranks of a window side by side


@dataclass
class Loaded:
    table: object  # EventTable
    index: object  # TimelineIndex
    origin: int  # window start, absolute ns
    end: int  # window end, absolute ns
    rank: int
    steps: list  # [{number, start_ns, dur_ns}] from the digest (start relative to the window start)
    counters: list  # the NPU counters' Series (timeline/counters.py)
    memory: list  # the memory totals per device and measure (timeline/counters.py memory_series)
    step_source: str = ""  # where the digest's steps come from (digest.proto step_source; "window": none marked)


class IndexCache:
    """Windows' (table, index) pairs, least recently used dropped; one build per window at a time."""

    def __init__(self, items: int = _MEMORY_ITEMS):
        self._lock = threading.Lock()
        self._loaded = LRU(items)  # events prefix -> Loaded
        self._building: dict[str, threading.Lock] = {}
        self._jobs: dict[tuple[str, str, str], futures.Future] = {}
        self._progress: dict[tuple[str, str, str], dict] = {}  # windows being loaded: stage, facts, since
        self._pool = futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="canning-timeline")
        self._args_jobs: dict[str, futures.Future] = {}  # events prefix -> the raw args build
        self._args_pool: futures.ProcessPoolExecutor | None = None

    def ready(self, store, run: str, worker: str, window: str, wait_s: float) -> Loaded | None:
        """The window's events and index, read and built in a background thread: None while they
        are not ready after `wait_s` (a big trace: the route says "loading", the browser asks again);
        the build's own error (404, 422) is raised here."""
        key = (run, worker, window)
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = self._jobs[key] = self._pool.submit(self.get, store, run, worker, window)
        try:
            return job.result(timeout=wait_s)
        except futures.TimeoutError:
            return None
        finally:
            if job.done():
                with self._lock:
                    if self._jobs.get(key) is job:
                        del self._jobs[key]

    def progress(self, run: str, worker: str, window: str) -> dict:
        """How far the loading of a window has got: `stage` ("reading the trace": ingest and digest;
        "loading the events"; "indexing"), `elapsed_s`, and once the digest is known the window's
        `rank`, `start_ns`, `duration_ns` and `steps` (what the browser can draw already)."""
        with self._lock:
            found = dict(self._progress.get((run, worker, window)) or {"stage": "reading the trace"})
        since = found.pop("since", time.monotonic())
        return dict(found, elapsed_s=round(time.monotonic() - since, 1))

    def _note(self, key: tuple, stage: str, facts: dict | None = None) -> None:
        with self._lock:
            found = self._progress.setdefault(key, {"since": time.monotonic()})
            found.update(facts or {}, stage=stage)

    def get(self, store, run: str, worker: str, window: str) -> Loaded:
        key = (run, worker, window)
        try:
            return self._get(store, key)
        finally:
            with self._lock:
                self._progress.pop(key, None)

    def _get(self, store, key: tuple) -> Loaded:
        run, worker, window = key
        with self._lock:  # a second ask of a window being loaded keeps its stage
            self._progress.setdefault(key, {"since": time.monotonic(), "stage": "reading the trace"})
        digest = window_digest(store, run, worker, window)  # 404 / 422 for unknown or bad windows
        prefix = store.events_prefix(run, worker, window)
        found = self._loaded.get(prefix)
        if found is not None:
            return found
        with self._lock:
            lock = self._building.setdefault(prefix, threading.Lock())
        with lock:
            found = self._loaded.get(prefix)
            if found is not None:
                return found
            origin = int(digest.window.start_ns)
            facts = {"rank": int(digest.window.rank), "start_ns": origin,
                     "duration_ns": int(digest.window.end_ns) - origin,
                     "steps": [{"number": int(step.number), "start_ns": int(step.start_ns) - origin,
                                "dur_ns": int(step.dur_ns)} for step in digest.steps],
                     "step_source": digest.step_source}
            self._note(key, "loading the events", facts)
            table = _events(store, key, prefix)
            self._note(key, "indexing", facts)
            store.wait_timeline_index(run, worker, window)
            loaded = Loaded(table, _index(table, prefix), origin, int(digest.window.end_ns), facts["rank"],
                            facts["steps"], *_series(table), step_source=digest.step_source)
            self._loaded.put(prefix, loaded)
        return loaded

    def raw_args_state(self, prefix: str, rows: int, root: str = "") -> str:
        """"ready" when the window's raw args store is there; else its build is started (once, in a
        separate process: it reads the whole trace again) and this says "pending" ("failed" when
        the build broke: the details then show the table's columns only)."""
        from canning_tb.timeline.raw_args import build_from_cache, has_raw_args
        if has_raw_args(prefix, rows):
            return "ready"
        with self._lock:
            job = self._args_jobs.get(prefix)
            if job is None:
                if self._args_pool is None:
                    import multiprocessing
                    self._args_pool = futures.ProcessPoolExecutor(
                        max_workers=1, mp_context=multiprocessing.get_context("spawn"))
                # the child opens the window's trace again: inside the logdir only (safe_files)
                job = self._args_jobs[prefix] = self._args_pool.submit(build_from_cache, prefix, root)
        if not job.done():
            return "pending"
        error = job.exception()
        if error is not None:
            log.warning("canning: the raw args of %s could not be read: %s", prefix, error)
            return "failed"
        with self._lock:  # built: a later ask finds the files (or builds again if they went)
            self._args_jobs.pop(prefix, None)
        return "ready" if has_raw_args(prefix, rows) else "failed"


def _events(store, key: tuple, prefix: str):
    """The window's cached events, each column read when first used (the first view needs few of
    them); read from its files (and cached) when there is no cache yet."""
    from canning_tb.ingest.table import EventTable
    try:
        return EventTable.load(prefix, lazy=True)
    except (OSError, ValueError, KeyError):
        return store.table(*key)


def _series(table) -> tuple[list, list]:
    """The window's NPU counters and memory totals, ready to downsample."""
    from canning_tb.timeline.counters import memory_series, npu_series
    return npu_series(table), memory_series(table)


def _index(table, prefix: str):
    from canning_tb.timeline.index import INDEX_SUFFIX, build_index, cached_index
    path = prefix + INDEX_SUFFIX
    try:
        return cached_index(table, path)
    except OSError as e:  # a cache we cannot write only costs time
        log.warning("canning: cannot write timeline index %s: %s", path, e)
        return build_index(table)


def _track_name(table, pid: int, tid: int, device: int, python: bool) -> str:
    """"process / thread": the names the file gives them, else their ids; an id the file does not
    give (NONE) says so, never "process -1"."""
    meta = table.meta
    process = meta.process_names.get(pid) or (f"device {device}" if device >= 0 else
                                              "no process id in the file" if pid == -1 else f"process {pid}")
    thread = meta.thread_names.get(f"{pid}:{tid}") or (
        "no thread id in the file" if tid == -1 else f"stream {tid}" if device >= 0 else f"thread {tid}")
    return f"{process} / {thread}{' / Python' if python else ''}"


def tracks_impl(cache: IndexCache, store, run: str, worker: str, window: str, wait_s: float = 3.0) -> dict:
    """The window's tracks; `{"loading": true, stage, ...}` (IndexCache.progress) while they are not
    ready after `wait_s`: the browser draws what it has and asks again (each ask waits `wait_s`)."""
    import numpy as np

    from canning_tb.timeline.counters import series_info
    loaded = cache.ready(store, run, worker, window, wait_s)
    if loaded is None:
        return {"run": run, "worker": worker, "window": window, "loading": True,
                **cache.progress(run, worker, window)}
    index, table = loaded.index, loaded.table
    counts = np.diff(index.row_offsets)
    tracks = []
    for track in range(len(index.track_pid)):
        pid, tid, device = int(index.track_pid[track]), int(index.track_tid[track]), int(index.track_device[track])
        rows = index.rows_of(track)
        python = bool(index.track_python[track])
        tracks.append({"id": track, "name": _track_name(table, pid, tid, device, python), "pid": pid, "tid": tid,
                       "device": device, "kind": "device" if device >= 0 else ("python" if python else "host"),
                       "rows": [int(row) for row in rows], "events": int(counts[rows].sum())})
    devices = sorted({device for device, *_ in loaded.memory})
    return {"run": run, "worker": worker, "window": window, "rank": loaded.rank, "start_ns": loaded.origin,
            "duration_ns": loaded.end - loaded.origin, "events": len(table), "tracks": tracks,
            "steps": loaded.steps, "step_source": loaded.step_source, "memory_devices": devices, "counters": series_info(loaded.counters)}


def _tracks_filter(loaded: Loaded, tracks: list[int] | None):
    import numpy as np
    if tracks is None:
        return None
    known = len(loaded.index.track_pid)
    bad = [t for t in tracks if not 0 <= t < known]
    if bad:
        raise BadParameter(f"unknown track {bad[0]} (the window has {known})")
    return np.array(tracks, np.int64)


def tile_impl(cache: IndexCache, store, run, worker, window, tracks: list[int] | None, start_ns: int, end_ns: int,
              width: int) -> bytes:
    """The binary tile of the rows of `tracks` (all when None) over [start_ns, end_ns] (relative)."""
    import numpy as np

    from canning_tb.timeline.tiles import MAX_WIDTH, encode, make_tile
    if not 0 < width <= MAX_WIDTH:
        raise BadParameter(f"width must be between 1 and {MAX_WIDTH} pixels, not {width}")
    if end_ns <= start_ns:
        raise BadParameter(f"end_ns ({end_ns}) must be after start_ns ({start_ns})")
    loaded = cache.get(store, run, worker, window)
    index = loaded.index
    wanted = _tracks_filter(loaded, tracks)
    rows = np.flatnonzero(np.isin(index.row_track, wanted)) if wanted is not None else np.arange(len(index.row_track))
    t0, t1 = loaded.origin + start_ns, loaded.origin + end_ns
    tile = make_tile(index, loaded.table.events["name"], rows.tolist(), t0, t1, width)
    header = {"start_ns": start_ns, "end_ns": end_ns, "width": width,
              "rows": [[int(index.row_track[r]), int(index.row_depth[r])] for r in rows]}
    return encode(tile, header, loaded.table.strings, loaded.origin)


def slice_impl(cache: IndexCache, store, run, worker, window, event: int) -> dict:
    from canning_tb.timeline.details import slice_details
    from canning_tb.timeline.raw_args import read_raw_args
    loaded = cache.get(store, run, worker, window)
    if not 0 <= event < len(loaded.table):
        raise NotFound(f"no event {event} in this window ({len(loaded.table)} events)")
    details = slice_details(loaded.table, loaded.index, event, loaded.origin)
    prefix = store.events_prefix(run, worker, window)
    state = cache.raw_args_state(prefix, len(loaded.table), store.window(run, worker, window).root)
    details["raw_args_state"] = state
    details["raw_args"] = read_raw_args(prefix, event) if state == "ready" else None
    return details


def search_impl(cache: IndexCache, store, run, worker, window, text: str, at_ns: int,
                tracks: list[int] | None, exact: bool = False, collective: bool = False,
                from_ns: int | None = None, to_ns: int | None = None) -> dict:
    """The matches of `text` (timeline/query.py search); with `from_ns` and `to_ns` (relative) also
    the matches that overlap that range (`in_range`, `hits`: the first MAX_HITS by start)."""
    from canning_tb.timeline.details import brief
    from canning_tb.timeline.query import search
    if (from_ns is None) != (to_ns is None):
        raise BadParameter("from_ns and to_ns go together")
    if from_ns is not None and to_ns is not None and to_ns < from_ns:
        raise BadParameter(f"to_ns ({to_ns}) must not be before from_ns ({from_ns})")
    loaded = cache.get(store, run, worker, window)
    within = (loaded.origin + from_ns, loaded.origin + to_ns) if from_ns is not None and to_ns is not None else None
    found = search(loaded.table, text, loaded.origin + at_ns, _tracks_filter(loaded, tracks), loaded.index.track_of,
                   exact, collective, within, loaded.index.depth, loaded.origin)
    for key in ("next", "previous", "longest"):
        if found[key] is not None:
            found[key] = brief(loaded.table, loaded.index, found[key], loaded.origin)
    return dict(found, query=text)


def summary_impl(cache: IndexCache, store, run, worker, window, start_ns: int, end_ns: int,
                 tracks: list[int] | None) -> dict:
    """Per name in the range: count, time in range, self time in range, share of the range
    (timeline/query.py range_summary); `critical_path_share` only where the window's digest has a
    critical path (None otherwise: the view then shows no such line)."""
    from canning_tb.timeline.query import range_summary
    if end_ns <= start_ns:
        raise BadParameter(f"end_ns ({end_ns}) must be after start_ns ({start_ns})")
    loaded = cache.get(store, run, worker, window)
    summary = range_summary(loaded.table, loaded.origin + start_ns, loaded.origin + end_ns,
                            _tracks_filter(loaded, tracks), loaded.index.track_of, index=loaded.index)
    share = _critical_path_share(store, run, worker, window, loaded.origin + start_ns, loaded.origin + end_ns)
    return dict(summary, start_ns=start_ns, end_ns=end_ns, critical_path_share=share)


def _critical_path_share(store, run, worker, window, t0: int, t1: int) -> float | None:
    """The share of [t0, t1] (absolute ns) during which the window's critical path runs through an event (not a
    gap: idle, launch latency, untraced time), from the digest's paths (docs/critical_path.md); None where the
    digest has no path there, or keeps only the longest pieces of a step the range touches (the share would be
    a guess)."""
    try:
        digest = window_digest(store, run, worker, window)
    except QueryError:
        return None
    steps = [p for p in getattr(digest, "critical_path", ()) if p.start_ns < t1 and p.start_ns + p.dur_ns > t0]
    if not steps or any(p.segments_total > len(p.segments) for p in steps):
        return None
    covered = sum(max(0, min(s.ts_ns + s.dur_ns, t1) - max(s.ts_ns, t0)) for p in steps for s in p.segments if s.name)
    return round(covered / max(1, t1 - t0), 6)


def counters_impl(cache: IndexCache, store, run, worker, window, start_ns: int, end_ns: int, width: int) -> dict:
    from canning_tb.timeline.counters import memory_counters, npu_counters
    loaded = cache.get(store, run, worker, window)
    t0, t1 = loaded.origin + start_ns, loaded.origin + end_ns
    return {"start_ns": start_ns, "end_ns": end_ns,
            "memory": memory_counters(loaded.memory, t0, t1, width, loaded.origin),
            "npu": npu_counters(loaded.counters, t0, t1, width, loaded.origin)}


def download_impl(cache: IndexCache, store, run, worker, window):
    """(file name, chunks) of the window's trace: its original Chrome trace file when it has one,
    else one written from the events."""
    from canning_tb.timeline.chrome import chrome_trace
    try:
        found = store.local_window(run, worker, window)  # a remote window's trace is copied here first
    except KeyError:
        raise unknown_window(run, worker, window) from None
    originals = [f for f in found.files if f.endswith((".pt.trace.json", ".pt.trace.json.gz"))]
    if originals:  # opened at once, inside the logdir only (safe_files): a file swapped for a link is refused
        return os.path.basename(originals[0]), _file_chunks(open_file(originals[0], root=found.root or None))
    loaded = cache.get(store, run, worker, window)
    return f"{worker}.{window}.pt.trace.json", chrome_trace(loaded.table)


def _file_chunks(f, size: int = 1 << 20):
    with f:
        while chunk := f.read(size):
            yield chunk


def ranks_impl(store, run, position: int) -> dict:
    """The window at `position` of every worker, with the clock offset of each against the first
    and each one's first step start (for aligning ranks on their steps)."""
    members = []
    for worker, found in store.windows_at(run, position):
        try:
            digest = window_digest(store, run, worker.name, found.id)
        except QueryError as e:  # one rank's bad files never hide the others
            members.append({"worker": worker.name, "window": found.id, "rank": worker.rank, "error": e.body["error"]})
            continue
        steps = list(digest.steps)
        members.append({"worker": worker.name, "window": found.id, "rank": int(digest.window.rank),
                        "start_ns": int(digest.window.start_ns),
                        "duration_ns": int(digest.window.end_ns - digest.window.start_ns),
                        "first_step_ns": int(steps[0].start_ns - digest.window.start_ns) if steps else 0})
    if not members:
        raise NotFound(f"no worker of run {run!r} has a window at position {position}")
    readable = [member for member in members if "error" not in member]
    base = readable[0]["start_ns"] if readable else 0
    for member in readable:
        member["offset_ns"] = member["start_ns"] - base
    return {"run": run, "position": position, "ranks": members}


def peers_impl(cache: IndexCache, store, run, worker, window, event: int) -> dict:
    """The peers of a collective on every rank's window at the same position (timeline/peers.py)."""
    from canning_tb.timeline.peers import is_collective, peers
    selected = cache.get(store, run, worker, window)
    if not 0 <= event < len(selected.table):
        raise NotFound(f"no event {event} in this window ({len(selected.table)} events)")
    if not is_collective(selected.table, event):
        return {"collective": False, "name": selected.table.name(event) or "", "peers": []}
    members = store.windows_at(run, store.position(run, worker, window))
    loaded = [cache.get(store, run, member.name, found.id) for member, found in members]
    chosen = next(i for i, (member, found) in enumerate(members) if (member.name, found.id) == (worker, window))
    answers = []
    for (member, found), one, peer in zip(members, loaded, peers([one.table for one in loaded], chosen, event)):
        if peer:
            answers.append({"worker": member.name, "window": found.id, "rank": one.rank, "event": peer["event"],
                            "start_ns": peer["start"] - one.origin, "clock_ns": peer["start"] - selected.origin,
                            "dur_ns": peer["dur_ns"],
                            "track": int(one.index.track_of[peer["event"]]), "depth": int(one.index.depth[peer["event"]]),
                            "wait_ns": peer["wait_ns"], "last": peer["last"]})
    return {"collective": True, "name": selected.table.name(event) or "", "peers": answers}
