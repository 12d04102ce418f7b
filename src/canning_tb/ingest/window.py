"""Reader for our own handler's windows: `<worker>.<window>.canning.json` + the trace or folder it names.

The manifest (canning_tb.util.manifest, written by the handler) is the authority on who wrote the window
(rank, world size, host, pid, devices, versions, settings, steps); the trace, or torch_npu's
`*_ascend_pt` folder, gives the events.
"""
from __future__ import annotations

import json
import os
from typing import Any

from canning_tb.util.manifest import ASCEND_OUTPUT, FileEntry, Manifest, ManifestError, ascend_status
from canning_tb.util.manifest import load as load_manifest

from . import side_tables as side
from .devices import BYTES_MAX, INDEX_MAX, fit_devices, shown_int
from .kineto.read import read_kineto
from .step_marks import attach as attach_step_marks
from .table import NONE, EventTable, InputError, Problem

_TRACE_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json")
_NOT_IN_ENVIRONMENT = ("files", "devices", "step_times_ns", "manifest")


def read_canning_window(manifest_path: str) -> EventTable:
    path = str(manifest_path)
    try:
        man = load_manifest(path)
    except ManifestError as e:
        raise InputError(path, str(e)) from None
    folder = os.path.dirname(os.path.abspath(path))
    entry, target = _target(path, folder, man)
    if man.kind == "ascend_pt" or (entry is not None and entry.kind == "ascend_pt"):
        _check_analysed(path, target, man.analysis)
        from .ascend.read import read_ascend  # another reader, imported only for torch_npu windows
        table = read_ascend(target)
    else:
        table = read_kineto(target)
        if not side.rows(table.side, "step_marks"):  # the loop's prof.step() times: the steps without a schedule
            attach_step_marks(table, man.step_times_ns)
    _enrich(table, man, path)
    if entry is not None and entry.bytes is not None and os.path.isfile(target):
        size = os.path.getsize(target)
        if size != entry.bytes:
            table.problems.append(Problem(path, f"{os.path.basename(target)} has {size} bytes, the manifest says "
                                                f"{entry.bytes}", "warning"))
    return table


def _check_analysed(path: str, target: str, analysis: str) -> None:
    status = ascend_status(target, analysis)
    if status == "analysing":
        raise InputError(path, f"torch_npu is still analysing {os.path.basename(target)} (its {ASCEND_OUTPUT} "
                               f"is being written); open it again when it is done")
    if status == "incomplete":
        how = "analyse_flag=False" if analysis == "off" else "torch_npu skipped its analysis"
        raise InputError(path, f"{os.path.basename(target)} holds torch_npu's raw data only ({how}); parse it with "
                               f"torch_npu.profiler.profiler.analyse({target!r}) on a machine with CANN")


def _target(path: str, folder: str, man: Manifest) -> tuple[FileEntry | None, str]:
    """The trace file (or torch_npu folder) of the window; names are looked up in the manifest's folder only."""
    for entry in man.files:  # names are plain file names (Manifest drops paths): never outside the run folder
        full = os.path.join(folder, entry.name)
        if (entry.name.endswith(_TRACE_SUFFIXES) or entry.kind == "ascend_pt") and os.path.exists(full):
            return entry, full
    stem = os.path.basename(path)[: -len(".canning.json")] if path.endswith(".canning.json") else None
    for suffix in _TRACE_SUFFIXES if stem else ():
        full = os.path.join(folder, stem + suffix)
        if os.path.isfile(full):
            return None, full
    raise InputError(path, "the trace file named by the manifest is missing")


def _enrich(table: EventTable, man: Manifest, path: str) -> None:
    m = table.meta
    m.format = "canning"
    m.source_files = [path] + [f for f in m.source_files if f != path]
    if man.rank >= 0:  # the manifest knows the rank: the trace's lack of it is no problem
        if man.rank > INDEX_MAX:  # the digest's rank is an int32, as the Kineto reader's is
            raise InputError(path, f"rank {shown_int(man.rank)}: not a rank (0 to {INDEX_MAX})")
        m.rank = man.rank
        numbers = {"world_size": (man.world_size, 1, INDEX_MAX), "local_rank": (man.local_rank, NONE, INDEX_MAX),
                   "pid": (man.pid, NONE, BYTES_MAX)}
        bad = [f"{key} {shown_int(v)}" for key, (v, lo, hi) in numbers.items() if not lo <= v <= hi]
        if bad:
            table.problems.append(Problem(path, f"{', '.join(bad)}: out of range, not used", "warning"))
        if 1 <= man.world_size <= INDEX_MAX:
            m.world_size = man.world_size
        m.local_rank = man.local_rank if NONE <= man.local_rank <= INDEX_MAX else NONE
        if man.pid and NONE <= man.pid <= BYTES_MAX:
            m.pid = man.pid
        table.problems = [p for p in table.problems if "no rank" not in p.message]
    if man.host:
        m.host = man.host
    if man.worker:
        m.worker = man.worker
    merge_devices(m, man.devices)
    m.devices = fit_devices(m.devices, path, table.problems)
    env = m.environment
    for key, v in man.to_dict().items():
        if key in _NOT_IN_ENVIRONMENT or v is None or v == "":
            continue
        if isinstance(v, dict):
            for k2, v2 in v.items():
                env[f"{key}.{k2}"] = _text(v2)
        else:
            env[key] = _text(v)


def merge_devices(meta, devices: list[dict]) -> None:
    """The process's devices (as the handler wrote them: util.identity.devices(), the host's memory
    included) over the trace's own; one source for the capacities, whether the window is read from
    its manifest or from the profile object that wrote it (collect/summaries.py)."""
    if not devices:
        return
    seen = {(d.get("kind"), d.get("index")) for d in devices}
    # keep what the trace adds (compute capability...) for devices the manifest also lists
    extra = {(d.get("kind"), d.get("index")): d for d in meta.devices}
    meta.devices = [{**extra.get((d.get("kind"), d.get("index")), {}), **d} for d in devices] + \
                   [d for k, d in extra.items() if k not in seen]


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)
