"""The manifest of one window: the contract between the handler (writes it) and discovery and the
reader (read it). Light on purpose (json and os only): the training side and the viewer side both
import it, and neither imports the other.

`<worker>.<window>.canning.json`, written last by the handler (its presence means the window is
complete), one JSON object:

| field            | type                        | meaning |
|------------------|-----------------------------|---------|
| format_version   | int                         | FORMAT_VERSION of the writer |
| kind             | "kineto" \\| "ascend_pt"    | what the window's data is: a Chrome trace, or torch_npu's folder |
| worker           | str                         | worker name (default `rank<R>.<host>.<pid>`) |
| window           | int                         | index of the window in this handler, from 0 |
| rank, world_size, local_rank | int             | from torch.distributed, else RANK / WORLD_SIZE / LOCAL_RANK |
| host, pid        | str, int                    | who wrote it |
| steps            | [int]                       | the profiler steps the window recorded |
| step_times_ns    | [[step, begin, end]]        | wall clock (ns since the epoch) of each finished step |
| wall_start_ns, wall_end_ns | int \\| null      | wall clock span of the window |
| devices          | [{kind, name, index, memory, ...}] | devices of the process |
| versions         | {python, torch, torch_npu, cann}   | versions of the stack |
| settings         | {activities, schedule, record_shapes, profile_memory, with_stack, with_flops, with_modules, chip?} (chip: ps.Profile(chip=...), the peak table's name) |
| trace_events     | int \\| null                | events in the Chrome trace (null for torch_npu) |
| files            | [{name, bytes, kind?}]      | the window's files, by name, in the manifest's folder only; kind "ascend_pt" marks torch_npu's folder |
| analysis         | "" \\| "sync" \\| "async" \\| "off" \\| "skipped" | torch_npu only: how its folder was analysed: during the handler, in the background (async_mode), not at all (analyse_flag=False: parse later with torch_npu.profiler.profiler.analyse), or skipped by torch_npu itself (daemon process, parse failure) |
| manifest         | str                         | the manifest's own file name |
| trigger          | {kind, step, step_ns, median_ns, reason} \\| null | why the job itself asked for this window (ps.on_demand(trigger=...)): the trigger of its capture request (capture/request.py); null when a person asked, or for any other schedule |
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT_VERSION = 1
MANIFEST_SUFFIX = ".canning.json"
DIGEST_SUFFIX = ".digest.pb"  # a window's digest, computed at the source, beside its manifest
ASCEND_OUTPUT = "ASCEND_PROFILER_OUTPUT"
ASCEND_DONE = "analyse.done"  # torch_npu 26.x writes it when its analysis ends (even a failed one)
# torch_npu before 26.x leaves no marker: its output counts as finished once nothing in it changed for this long
ASCEND_QUIET_NS = 30 * 1_000_000_000
# The profiler settings recorded per window (the booleans of torch.profiler.profile), in this order.
PROFILER_SETTINGS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")


class ManifestError(ValueError):
    """A manifest that cannot be used: the message says why."""


@dataclass
class FileEntry:
    name: str
    bytes: int | None = None
    kind: str = ""  # "ascend_pt" for torch_npu's folder

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "bytes": self.bytes}
        if self.kind:
            out["kind"] = self.kind
        return out


@dataclass
class Manifest:
    kind: str
    worker: str
    window: int
    manifest: str
    rank: int = -1
    world_size: int = 1
    local_rank: int = 0
    host: str = ""
    pid: int = 0
    steps: list[int] = field(default_factory=list)
    step_times_ns: list[list[int]] = field(default_factory=list)
    wall_start_ns: int | None = None
    wall_end_ns: int | None = None
    devices: list[dict] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    trace_events: int | None = None
    files: list[FileEntry] = field(default_factory=list)
    analysis: str = ""
    trigger: dict | None = None
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict:
        out = asdict(self)
        out["files"] = [f.to_dict() for f in self.files]
        return out

    @property
    def ascend_folder(self) -> str | None:
        """Name of torch_npu's folder of this window, when it is one."""
        return next((f.name for f in self.files if f.kind == "ascend_pt"), None)

    @classmethod
    def from_dict(cls, data: Any, path: str = "manifest") -> Manifest:
        """A Manifest from parsed JSON; fields of the wrong type are dropped (the defaults stand)."""
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: expected an object, got {type(data).__name__}")
        kw: dict[str, Any] = {}
        for key in ("window", "rank", "world_size", "local_rank", "pid", "wall_start_ns", "wall_end_ns",
                    "trace_events", "format_version"):
            if _is_int(data.get(key)):
                kw[key] = data[key]
        for key in ("kind", "worker", "host", "analysis", "manifest"):
            if isinstance(data.get(key), str):
                kw[key] = data[key]
        for key in ("versions", "settings"):
            if isinstance(data.get(key), dict):
                kw[key] = dict(data[key])
        kw["steps"] = [s for s in _list(data.get("steps")) if _is_int(s)]
        kw["step_times_ns"] = [list(t) for t in _list(data.get("step_times_ns"))
                               if isinstance(t, list) and len(t) == 3 and all(_is_int(x) for x in t)]
        kw["devices"] = [d for d in _list(data.get("devices")) if isinstance(d, dict)]
        kw["files"] = [FileEntry(e["name"], e.get("bytes") if _is_int(e.get("bytes")) else None,
                                 e.get("kind") if isinstance(e.get("kind"), str) else "")
                       for e in _list(data.get("files"))
                       if isinstance(e, dict) and isinstance(e.get("name"), str)
                       and os.path.basename(e["name"]) == e["name"] and e["name"] not in ("", ".", "..")]
        kw["trigger"] = _trigger(data.get("trigger"))
        kw.setdefault("kind", "ascend_pt" if any(f.kind == "ascend_pt" for f in kw["files"]) else "kineto")
        kw.setdefault("worker", "")
        kw.setdefault("window", 0)
        kw.setdefault("manifest", os.path.basename(path))
        return cls(**kw)


MAX_BYTES = 64 << 20  # a manifest names files: past this it is not one (and is not read whole)


def load(path: str) -> Manifest:
    """Read and check one manifest; ManifestError says what is wrong with it."""
    from .safe_files import read_file  # light: nothing of canning_tb, as this module
    try:
        data = read_file(path, MAX_BYTES + 1)
    except OSError as e:
        raise ManifestError(f"cannot open: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise ManifestError(f"manifest larger than {MAX_BYTES >> 20} MiB: not a manifest")
    if not data.strip():
        raise ManifestError("empty manifest")
    try:
        parsed = json.loads(data)
    except ValueError as e:
        raise ManifestError(f"manifest is not JSON: {e}") from None
    except RecursionError:  # a hostile nesting: this window's error, never the viewer's
        raise ManifestError("manifest nested too deeply to read") from None
    return Manifest.from_dict(parsed, path)


def digest_path(manifest_path: str) -> str:
    """Where the digest computed at the source for this window lives: beside its manifest."""
    stem = manifest_path[: -len(MANIFEST_SUFFIX)] if manifest_path.endswith(MANIFEST_SUFFIX) else manifest_path
    return stem + DIGEST_SUFFIX


def ascend_output_files(folder: str) -> list[str]:
    """Every file inside the folder's ASCEND_PROFILER_OUTPUT (its content changes while torch_npu writes)."""
    out = os.path.join(folder, ASCEND_OUTPUT)
    try:
        with os.scandir(out) as it:
            return sorted(e.path for e in it if e.is_file() and not e.name.startswith("."))
    except OSError:
        return []


def ascend_status(folder: str, analysis: str, now_ns: int | None = None) -> str:
    """State of a torch_npu folder a manifest names: "ready", "analysing" or "incomplete" (raw data only).

    "analysing": the analysis was started in the background (async_mode, or offline) and its
    ASCEND_PROFILER_OUTPUT has no analyse.done yet and is still changing (versions before 26.x
    write no marker: quiet for ASCEND_QUIET_NS counts as finished).
    """
    out = os.path.join(folder, ASCEND_OUTPUT)
    if not os.path.isdir(out):
        return "analysing" if analysis == "async" else "incomplete"
    files = ascend_output_files(folder)
    if any(os.path.basename(f) == ASCEND_DONE for f in files):
        return "ready"
    if analysis == "sync":
        return "ready"  # the handler waited for the analysis before writing the manifest
    newest = 0
    for f in files:
        try:
            newest = max(newest, os.stat(f).st_mtime_ns)
        except OSError:
            continue
    now = time.time_ns() if now_ns is None else now_ns
    if not files or now - newest < ASCEND_QUIET_NS:
        return "analysing"
    return "ready"


def _trigger(v) -> dict | None:
    """A manifest's trigger, its keys of the right types (else none: unknown rather than wrong)."""
    if not isinstance(v, dict) or not isinstance(v.get("reason"), str) or not isinstance(v.get("kind"), str):
        return None
    out = {"kind": v["kind"][:16], "reason": v["reason"][:200]}
    for key in ("step", "step_ns", "median_ns"):
        out[key] = v.get(key) if _is_int(v.get(key)) else None
    return out


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list(v) -> list:
    return v if isinstance(v, list) else []
