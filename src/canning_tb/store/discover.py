"""Find runs, workers (ranks) and windows under a logdir, for all three formats.

A run is any folder under the logdir that directly holds profiles:
- our handler's windows: `<worker>.<window>.canning.json` (the manifest is written last,
  so its presence means the window is complete); the files it names belong to it, and a
  torch_npu folder it names is that window (listed once; "analysing" while torch_npu writes it);
- plain torch.profiler output: `<worker>[.<timestamp>].pt.trace.json[.gz]`;
- torch_npu output, recognised by what the folders hold, whatever their names (see
  discover_ascend.py): window folders, bare ASCEND_PROFILER_OUTPUT folders, profiler dbs;
- the allocator's memory snapshots (`*.pickle` / `*.pkl` that hold one, told by content: ingest/snapshot/sniff.py):
  ours (`<worker>.<window>.snapshot.pickle`, listed in the manifest) and any a user dumped by hand. Each is attached
  (`Window.snapshots`) to the window of the same worker and window id (or to the worker's only window), else it
  is a window of its own (format "snapshot": no events, only the snapshot).
Names starting with "." and temporary files are never windows (atomic writers use them).
Only regular files inside the logdir's real path are opened (links.py: one policy for links and FIFOs,
checked again at every open by canning_tb/util/safe_files.py; each Window carries the logdir's real path as
`root`, so a reader in another process checks against it too).
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache

from canning_tb.ingest.file_head import file_head, is_canning_report
from canning_tb.ingest.snapshot.sniff import has_snapshot_name, looks_like_snapshot
from canning_tb.util.manifest import ManifestError, ascend_output_files, ascend_status
from canning_tb.util.manifest import load as load_manifest

from .discover_ascend import ascend_windows, folder_windows, worker_names
from .links import Policy, walk

MANIFEST_RE = re.compile(r"^(?P<worker>.+)\.(?P<window>\d+)\.canning\.json$")
KINETO_RE = re.compile(r"^(?P<worker>.*?)(?:\.(?P<span>\d+))?\.pt\.trace\.json(?:\.gz)?$")
GENERIC_JSON_RE = re.compile(r"^(?P<worker>.+?)\.json(?:\.gz)?$")  # HTA-style names: rank-0.json.gz
RANK_RE = re.compile(r"(?:^|[^a-z])rank[_-]?(\d+)", re.I)
DISTRIBUTED_RANK_RE = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)')
_SKIP_DIRS = {".canning", "node_modules", "__pycache__", "ASCEND_PROFILER_OUTPUT", "FRAMEWORK", "logs"}


@dataclass(frozen=True)
class Window:
    id: str  # unique within its worker; sorts in time order through `order`
    label: str
    format: str  # "canning" | "kineto" | "ascend" | "snapshot" (a memory snapshot alone)
    path: str  # manifest file, trace file or *_ascend_pt folder
    files: tuple[str, ...]  # every file that makes up the window (for cache keys)
    order: tuple = ()
    status: str = "ready"  # "ready" | "incomplete" (torch_npu raw data, not analysed) | "analysing" (being written)
    rank: int = -1
    steps: tuple[int, ...] = ()
    # (path, bytes) of the plain files a manifest names, as it records them: a copy that changed their
    # times (cp -r, aws s3 sync) still has the digest written at the source (store.fresh_source_digest)
    sizes: tuple[tuple[str, int], ...] = ()
    # the logdir's real path: every file of the window is opened only when it really lies inside it
    # (safe_files.confine; "" where the user lets links out of the logdir: CANNING_FOLLOW_LINKS=1)
    root: str = ""
    # why the job asked for this window itself (the manifest's trigger reason, ps.on_demand(trigger=...)); "" if not
    trigger: str = ""
    # the allocator's memory snapshots of this window (ingest/snapshot), in name order; also in `files`
    snapshots: tuple[str, ...] = ()


@dataclass
class Worker:
    name: str
    rank: int = -1
    windows: list[Window] = field(default_factory=list)


@dataclass
class Run:
    name: str
    path: str
    workers: dict[str, Worker] = field(default_factory=dict)


def _span_time(span: str) -> str:
    """A readable UTC time for a window id that is a timestamp, else the id itself.

    torch.profiler writes epoch ms (13 digits, older) or ns (19 digits); torch_npu writes
    %Y%m%d%H%M%S + milliseconds (17 digits, or with a dot before the milliseconds).
    """
    digits = span.replace(".", "")
    try:
        if len(span) in (13, 16, 19) and span.isdigit():
            secs = int(span) / 10 ** (len(span) - 10)
            return datetime.fromtimestamp(secs, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        if len(digits) == 17 and digits.isdigit():
            return datetime.strptime(digits[:14], "%Y%m%d%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        pass
    return span


def _rank_from_name(name: str) -> int:
    m = RANK_RE.search(name)
    return int(m.group(1)) if m else -1


def _kineto_rank(path: str, worker: str) -> int:
    """The rank Kineto wrote into the trace (`distributedInfo`, near the file's start, or at its end in
    on-demand traces); the worker name's `rank<N>` only for traces that carry none (single-process runs)."""
    try:
        st = os.stat(path)
    except OSError:
        return _rank_from_name(worker)
    rank = _rank_in_head(path, st.st_size, st.st_mtime_ns)
    if rank < 0:
        rank = _rank_in_tail(path, st.st_size, st.st_mtime_ns)
    return rank if rank >= 0 else _rank_from_name(worker)


@lru_cache(maxsize=4096)
def _rank_in_head(path: str, size: int, mtime_ns: int) -> int:
    return _distributed_rank(file_head(path, 65536))


@lru_cache(maxsize=4096)
def _rank_in_tail(path: str, size: int, mtime_ns: int) -> int:
    """The rank of a Kineto on-demand trace (dynolog's `dyno gputrace`, `<log_file>_<pid>.json`): libkineto
    writes its distributedInfo after the events, at the end of the file (output_json.cpp,
    addOnDemandDistMetadata, from the NCCL collectives' metadata). Plain files only: a gzip's end is not text."""
    if size <= 65536:
        return -1  # the head read it all
    try:
        with open(path, "rb") as f:
            if f.read(2) == b"\x1f\x8b":
                return -1
            f.seek(size - 65536)
            return _distributed_rank(f.read(65536))
    except OSError:
        return -1


def _distributed_rank(text: bytes) -> int:
    found = DISTRIBUTED_RANK_RE.search(text)
    rank = int(found.group(1)) if found and len(found.group(1)) < 11 else -1
    return rank if rank < 1 << 31 else -1  # no rank at all rather than an absurd one


def _manifest_window(folder: str, fname: str, m: re.Match, policy: Policy) -> Window | None:
    """The window of a manifest; None when it names a file that may not be opened (links.py)."""
    path = os.path.join(folder, fname)
    try:
        st = os.stat(path)
        facts = _manifest_facts(path, st.st_size, st.st_mtime_ns)
    except OSError:
        facts = _NO_FACTS
    names, steps, rank, ascend, analysis, sizes, trigger = facts
    files = [path] + [os.path.join(folder, n) for n in names]
    if not all(policy.usable(f, folder_ok=True) for f in files[1:]):
        return None
    status = "ready"
    if ascend:
        # torch_npu may still be writing inside its folder (async analysis): its files are part of the
        # cache key, so the window is read again when they change, and its status says so meanwhile
        ascend_path = os.path.join(folder, ascend)
        files += _top_files(ascend_path) + ascend_output_files(ascend_path)
        status = ascend_status(ascend_path, analysis)
    idx = int(m.group("window"))
    return Window(id=m.group("window"), label="", format="canning", path=path, files=tuple(files),
                  order=(idx,), status=status, rank=rank, steps=steps,
                  sizes=tuple((os.path.join(folder, n), b) for n, b in sizes), trigger=trigger)


_NO_FACTS: tuple = ((), (), -1, None, "", (), "")


@lru_cache(maxsize=65536)
def _manifest_facts(path: str, size: int, mtime_ns: int) -> tuple:
    """(file names, steps, rank, torch_npu folder name or None, analysis, (name, bytes) of its files, trigger
    reason or "") of
    a manifest; read once per version of the file, since the plugin rescans the logdir every few
    seconds. A manifest we cannot read still marks a window (the reader reports the problem): it gives
    no facts here. Sizes only when every file is a plain one with its size recorded: torch_npu's folder
    changes while it is analysed."""
    try:
        man = load_manifest(path)
    except ManifestError:
        return _NO_FACTS
    plain = man.ascend_folder is None and all(f.bytes is not None and not f.kind for f in man.files)
    sizes = tuple((f.name, f.bytes) for f in man.files) if plain and man.files else ()
    return (tuple(f.name for f in man.files), tuple(man.steps), man.rank, man.ascend_folder, man.analysis, sizes,
            man.trigger["reason"] if man.trigger else "")


def _top_files(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if e.is_file() and not e.name.startswith("."))
    except OSError:
        return []


def scan_folder(folder: str, dirs: list[str], fnames: list[str], policy: Policy | None = None) -> dict[str, list[Window]]:
    """Windows held directly in one folder, by worker name (fnames: regular files; policy: what may be
    opened, by default inside this folder)."""
    policy = policy or Policy(folder)
    found: dict[str, list[Window]] = {}
    claimed: set[str] = set()
    for fn in fnames:
        m = MANIFEST_RE.match(fn)
        if m and not fn.startswith(".") and (w := _manifest_window(folder, fn, m, policy)) is not None:
            found.setdefault(m.group("worker"), []).append(w)
            claimed.update(w.files)
    for fn in fnames:
        m = KINETO_RE.match(fn)
        path = os.path.join(folder, fn)
        if not m or fn.startswith(".") or path in claimed:
            continue
        worker, span = m.group("worker"), m.group("span")
        found.setdefault(worker, []).append(Window(
            id=span or "default", label="", format="kineto", path=path, files=(path,),
            order=(int(span) if span else 0, fn), rank=_kineto_rank(path, worker)))
    for fn in fnames:
        m = GENERIC_JSON_RE.match(fn)
        path = os.path.join(folder, fn)
        if (not m or fn.startswith(".") or path in claimed or KINETO_RE.match(fn) or MANIFEST_RE.match(fn)
                or not _looks_like_trace(path)):
            continue
        worker = m.group("worker")
        found.setdefault(worker, []).append(Window(
            id="default", label="", format="kineto", path=path, files=(path,), order=(0, fn),
            rank=_kineto_rank(path, worker)))
    # a torch_npu folder that a manifest names is part of that window, not one of its own
    _add_ascend(found, ascend_windows(folder, [d for d in dirs if os.path.join(folder, d) not in claimed], policy))
    _add_snapshots(found, folder, fnames, claimed)
    _label(found)
    return found


OUR_SNAPSHOT = ".snapshot.pickle"  # the handler's name for a window's snapshot (handler/trace_handler.py)
SNAPSHOT_RE = re.compile(r"^(?P<worker>.+?)(?:\.(?P<span>\d+))?(?:\.snapshot)?\.(?:pickle|pkl)$", re.I)


def _add_snapshots(found: dict[str, list[Window]], folder: str, fnames: list[str], claimed: set[str]) -> None:
    """Attach the folder's memory snapshots to their windows, or make them windows of their own (module doc)."""
    for w_list in found.values():  # ours: the manifest lists the snapshot among the window's files, by our name
        for i, w in enumerate(w_list):  # (a remote logdir's mirror copies it only when read: never sniffed here)
            named = tuple(sorted(f for f in w.files if f.endswith(OUR_SNAPSHOT) and w.format == "canning"))
            if named:
                w_list[i] = dataclasses.replace(w, snapshots=named)
    for fn in sorted(fnames):
        path = os.path.join(folder, fn)
        m = SNAPSHOT_RE.match(fn)
        if not m or not has_snapshot_name(fn) or path in claimed or not _is_snapshot(path):
            continue
        worker, span = m.group("worker"), m.group("span")
        wins = found.get(worker, [])
        at = next((i for i, w in enumerate(wins) if span and w.id == span), None)
        if at is None and len(wins) == 1 and not span:
            at = 0
        if at is not None and wins[at].format != "snapshot":
            w = wins[at]
            wins[at] = dataclasses.replace(w, files=w.files + (path,), snapshots=w.snapshots + (path,))
            continue
        found.setdefault(worker, []).append(Window(
            id=span or "default", label="", format="snapshot", path=path, files=(path,),
            order=(int(span) if span else 0, fn), rank=_rank_from_name(worker), snapshots=(path,)))


def _is_snapshot(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return _sniff_snapshot(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _sniff_snapshot(path: str, size: int, mtime_ns: int) -> bool:
    return looks_like_snapshot(path)


def _label(found: dict[str, list[Window]]) -> None:
    """Window order, unique ids and labels within each worker."""
    for worker, wins in found.items():
        wins.sort(key=lambda w: w.order)
        seen: set[str] = set()
        for i, w in enumerate(wins):
            # Two files of one worker can share an id ("default"); keep ids unique.
            wid = w.id if w.id not in seen else f"{w.id}-{i}"
            seen.add(wid)
            if w.steps:
                when = f"steps {w.steps[0]}-{w.steps[-1]}" if len(w.steps) > 1 else f"step {w.steps[0]}"
            else:
                when = "" if w.id == "default" or w.format == "canning" else _span_time(w.id)
            if w.format == "snapshot":
                when = f"{when}, memory snapshot" if when else "memory snapshot"
            elif w.snapshots:
                when = f"{when}, with a memory snapshot" if when else "with a memory snapshot"
            if w.trigger:  # the job asked for it itself: said in the label, the reason beside it (`trigger`)
                when = f"{when}, triggered" if when else "triggered"
            label = f"window {i + 1}" + (f" ({when})" if when else "")
            wins[i] = Window(**{**w.__dict__, "id": wid, "label": label})


def _add_ascend(found: dict[str, list[Window]], wins: list[dict]) -> None:
    for w, worker in zip(wins, worker_names(wins)):
        found.setdefault(worker, []).append(Window(
            id=w["span"] or "default", label="", format="ascend", path=w["path"], files=w["files"],
            order=(float(w["span"]) if w["span"] else 0.0, os.path.basename(w["path"])), status=w["status"],
            rank=w["rank"]))


def _looks_like_trace(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return _sniff(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _sniff(path: str, size: int, mtime_ns: int) -> bool:
    """A Chrome trace from a profiler names traceEvents (or schemaVersion) near its start, or is an array of events."""
    head = file_head(path, 65536)
    if head.lstrip()[:1] == b"[":  # a bare array of events (torch_npu's export_chrome_trace)
        return b'"ph"' in head and b'"ts"' in head
    if is_canning_report(head):
        return False
    return b'"traceEvents"' in head or b'"schemaVersion"' in head


def discover(logdir: str, recursive: bool = True, select=None, follow_links: bool = False) -> dict[str, Run]:
    """Every run under logdir, keyed by its path relative to logdir ("." for logdir itself).

    `recursive=False` looks at logdir alone; `select(window) -> bool` keeps only some windows;
    `follow_links`: links out of the logdir are followed (canning-prof --follow-links).
    """
    runs: dict[str, Run] = {}
    if not logdir or not os.path.isdir(logdir):
        return runs
    policy = Policy(logdir, follow_links)
    itself = folder_windows(os.path.normpath(logdir), policy)
    if itself:  # logdir is one torch_npu window (or a folder of rank dbs): the run is "."
        found: dict[str, list[Window]] = {}
        _add_ascend(found, itself)
        _label(found)
        _add_run(runs, policy, logdir, found, select)
        return runs
    for folder, dirs, fnames in walk(logdir, policy):
        found = scan_folder(folder, dirs, fnames, policy)
        inside = _window_dirs(folder, found)
        if not recursive:
            dirs.clear()
        # never descend into hidden folders, caches or the inside of a torch_npu window, listed or refused (its
        # ASCEND_PROFILER_OUTPUT alone would be a window again, without the file that made it refused)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS and d not in inside
                         and not d.startswith("PROF_") and os.path.join(folder, d) not in policy.refused)
        _add_run(runs, policy, folder, found, select)
    return runs


def _window_dirs(folder: str, found: dict[str, list[Window]]) -> set[str]:
    """Names of the sub-folders of folder that are (or hold) torch_npu windows, or that a manifest names."""
    out = set()
    for wins in found.values():
        for w in wins:
            if w.format == "ascend":
                top = w.path if os.path.isdir(w.path) else os.path.dirname(w.path)
                out.add(os.path.relpath(top, folder).split(os.sep)[0])
            elif w.format == "canning":  # its torch_npu folder is part of it, never a run of its own
                out.update(os.path.basename(f) for f in w.files if os.path.dirname(f) == folder and os.path.isdir(f))
    return out


def _add_run(runs: dict[str, Run], policy: Policy, folder: str, found: dict[str, list[Window]], select) -> None:
    if select is not None:
        found = {k: kept for k, v in found.items() if (kept := [w for w in v if select(w)])}
    if not found:
        return
    name = os.path.relpath(folder, policy.logdir).replace(os.sep, "/")
    run = Run(name=name, path=folder)
    # the root a window's files are confined to wherever they are read (a worker process too); "": none
    root = "" if policy.outside_ok else policy.root
    for wname in sorted(found):
        wins = [dataclasses.replace(w, root=root) for w in found[wname]]
        rank = next((w.rank for w in wins if w.rank >= 0), -1)
        run.workers[wname] = Worker(name=wname, rank=rank, windows=wins)
    runs[name] = run
