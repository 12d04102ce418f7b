"""Reader for our own handler's windows: `<worker>.<window>.canning.json` + the trace it names.

The manifest (see canning_tb.handler.trace_handler) is the authority on who wrote the window
(rank, world size, host, pid, devices, versions, settings, steps); the trace gives the events.
"""
from __future__ import annotations

import json
import os
from typing import Any

import msgspec

from .kineto import read_kineto
from .table import EventTable, InputError, Problem

_TRACE_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json")


def read_canning_window(manifest_path: str) -> EventTable:
    path = str(manifest_path)
    man = _manifest(path)
    folder = os.path.dirname(os.path.abspath(path))
    entry, target = _target(path, folder, man)
    if man.get("kind") == "ascend_pt" or (entry and entry.get("kind") == "ascend_pt"):
        try:
            from .ascend import read_ascend  # another reader; optional here
        except ImportError:
            raise InputError(path, "window holds torch_npu output but no Ascend reader is installed") from None
        table = read_ascend(target)
    else:
        table = read_kineto(target)
    _enrich(table, man, path)
    if entry is not None and isinstance(entry.get("bytes"), int) and os.path.isfile(target):
        size = os.path.getsize(target)
        if size != entry["bytes"]:
            table.problems.append(Problem(path, f"{os.path.basename(target)} has {size} bytes, the manifest says "
                                                f"{entry['bytes']}", "warning"))
    return table


def _manifest(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror or e}") from None
    if not data.strip():
        raise InputError(path, "empty manifest")
    try:
        man = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise InputError(path, f"manifest is not JSON: {e}") from None
    if not isinstance(man, dict):
        raise InputError(path, f"manifest: expected an object, got {type(man).__name__}")
    return man


def _target(path: str, folder: str, man: dict) -> tuple[dict | None, str]:
    """The trace file (or torch_npu folder) of the window; names are looked up in the manifest's folder only."""
    for entry in man.get("files") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = os.path.basename(entry["name"])  # never follow a path out of the run folder
        full = os.path.join(folder, name)
        if (name.endswith(_TRACE_SUFFIXES) or entry.get("kind") == "ascend_pt") and os.path.exists(full):
            return entry, full
    stem = os.path.basename(path)[: -len(".canning.json")] if path.endswith(".canning.json") else None
    for suffix in _TRACE_SUFFIXES if stem else ():
        full = os.path.join(folder, stem + suffix)
        if os.path.isfile(full):
            return None, full
    raise InputError(path, "the trace file named by the manifest is missing")


def _enrich(table: EventTable, man: dict, path: str) -> None:
    m = table.meta
    m.format = "canning"
    m.source_files = [path] + [f for f in m.source_files if f != path]
    for key in ("rank", "world_size", "local_rank", "pid"):
        v = man.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            setattr(m, key, v)
    if isinstance(man.get("rank"), int):  # the manifest knows the rank: the trace's lack of it is no problem
        table.problems = [p for p in table.problems if "no rank" not in p.message]
    for key in ("host", "worker"):
        if isinstance(man.get(key), str):
            setattr(m, key, man[key])
    devices = [d for d in man.get("devices") or [] if isinstance(d, dict)]
    if devices:
        seen = {(d.get("kind"), d.get("index")) for d in devices}
        # keep what the trace adds (compute capability...) for devices the manifest also lists
        extra = {(d.get("kind"), d.get("index")): d for d in m.devices}
        m.devices = [{**extra.get((d.get("kind"), d.get("index")), {}), **d} for d in devices] + \
                    [d for k, d in extra.items() if k not in seen]
    env = m.environment
    for key, v in man.items():
        if key in ("files", "devices", "step_times_ns", "manifest"):
            continue
        if isinstance(v, dict):
            for k2, v2 in v.items():
                env[f"{key}.{k2}"] = _text(v2)
        elif v is not None:
            env[key] = _text(v)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)
