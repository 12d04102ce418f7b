"""The viewer's side of a capture (the plugin's route and `canning-prof capture`): which run folders of a
logdir a capture can be asked of, what their job says, writing a request, and where it stands.
Two kinds of folder: one whose job watches with ps.on_demand() (ON_DEMAND), and one a job watches with
torch_npu's own dynamic_profile (DYNAMIC_PROFILE: its profiler_config.json, capture_npu.py).

Writing the request file is all either front door does: no port of the training job is opened, and
TensorBoard needs no access to the job's network (the files travel through the logdir). Run names come
from `targets()`, never from a caller's path: a request names a run, and only a listed run is written to.
"""
from __future__ import annotations

import json
import os
import time
from typing import NamedTuple

from canning_tb.store.links import Policy, walk
from canning_tb.util import remote_fs

from . import npu as capture_npu
from . import request as cr
from .files import CAPTURE_DIR, REQUEST_FILE, STATUS_RE, CaptureFolder

ON_DEMAND, DYNAMIC_PROFILE = "on_demand", "torch_npu_dynamic_profile"

_SKIP = {"node_modules", "__pycache__", "ASCEND_PROFILER_OUTPUT", "FRAMEWORK"}
MAX_FOLDERS = 20000  # folders one scan looks at: a huge logdir costs a bounded walk


class CaptureBusy(Exception):
    """A request may not be written now (a capture is in progress, or the job's rate limit): why."""


class Target(NamedTuple):
    folder: str  # local path or URL
    kind: str    # ON_DEMAND or DYNAMIC_PROFILE


def targets(logdir: str) -> dict[str, Target]:
    """{run name (relative to the logdir, "." for itself): Target} of every folder whose job watches for
    capture requests: a .canning-capture/ with a rank's status in it, or torch_npu's profiler_config.json."""
    if remote_fs.is_url(logdir):
        return _remote_targets(logdir)
    out: dict[str, Target] = {}
    if not os.path.isdir(logdir):
        return out
    policy, seen = Policy(logdir), 0
    for folder, dirs, files in walk(logdir, policy):
        seen += 1
        name = os.path.relpath(folder, logdir).replace(os.sep, "/")
        if CAPTURE_DIR in dirs and _has_status(os.path.join(folder, CAPTURE_DIR)):
            out[name] = Target(folder, ON_DEMAND)
        elif capture_npu.CONFIG in files and capture_npu.read_config(folder) is not None:
            out[name] = Target(folder, DYNAMIC_PROFILE)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP and not d.endswith("_ascend_pt")
                   and not d.startswith("PROF_")]
        if seen >= MAX_FOLDERS:
            break
    return out


def _has_status(folder: str) -> bool:
    try:
        return any(STATUS_RE.match(n) for n in os.listdir(folder))
    except OSError:
        return False


def _remote_targets(url: str) -> dict[str, Target]:
    fs, root = remote_fs.open_fs(url)
    found = remote_fs.call(url, fs.glob, f"{root}/**/{CAPTURE_DIR}/rank*.status.json")
    found += remote_fs.call(url, fs.glob, f"{root}/{CAPTURE_DIR}/rank*.status.json")
    out = {}
    for key in found:
        folder = key.rsplit("/", 2)[0]
        rel = folder[len(root):].strip("/") or "."
        out[rel] = Target(remote_fs.join(url, rel) if rel != "." else url, ON_DEMAND)
    return out


def job_summary(statuses: list, now_ns: int) -> dict:
    """What the ranks' statuses say about the job, for people: live ranks, world size, furthest step."""
    latest = cr.latest_by_rank(statuses)
    live = [s for s in latest.values() if cr.is_live(s, now_ns)]
    newest = max((s["time_ns"] for s in latest.values()), default=None)
    return {"live_ranks": sorted(s["rank"] for s in live),
            "world_size": max((s["world_size"] for s in latest.values()), default=0),
            "step": max((s["step"] for s in live), default=None),
            "steps_per_s": max((s["steps_per_s"] for s in live if s["steps_per_s"] is not None), default=None),
            "backend": next((s["backend"] for s in live), None),
            "max_steps": min((s["max_steps"] for s in live), default=cr.MAX_STEPS),
            "last_heartbeat_s": None if newest is None else round(max(0, now_ns - newest) / 1e9, 1),
            "ranks": [{"rank": s["rank"], "host": s["host"], "pid": s["pid"], "step": s["step"], "state": s["state"],
                       "live": cr.is_live(s, now_ns)} for s in sorted(latest.values(), key=lambda s: s["rank"])]}


def run_state(target: Target, now_ns: int | None = None) -> dict:
    """The kind, the job's summary and where the run's current request stands (None when there is none)."""
    now = time.time_ns() if now_ns is None else now_ns
    if target.kind == DYNAMIC_PROFILE:
        return {"kind": target.kind, "job": capture_npu.job_summary(target.folder),
                "request": capture_npu.state(target.folder, now), "problems": []}
    folder = CaptureFolder(target.folder)
    statuses, problems = folder.statuses()
    try:
        request = folder.request()
    except cr.RequestError as e:
        request, problems = None, problems + [f"{CAPTURE_DIR}/{REQUEST_FILE}: {e}"]
    return {"kind": target.kind, "job": job_summary(statuses, now),
            "request": cr.request_state(request, statuses, now) if request else None, "problems": problems}


def summary(target: Target, now_ns: int) -> dict:
    """{kind, job, problems}: what GET /capture lists for a run."""
    if target.kind == DYNAMIC_PROFILE:
        return {"kind": target.kind, "job": capture_npu.job_summary(target.folder), "problems": []}
    statuses, problems = CaptureFolder(target.folder).statuses()
    return {"kind": target.kind, "job": job_summary(statuses, now_ns), "problems": problems}


def ask(target: Target, options: dict, by: str, now_ns: int | None = None) -> dict:
    """Write a request for these options; its state. RequestError: options or job unusable (bad
    options, no live job); CaptureBusy: a capture is in progress or the job's rate limit holds.
    A DYNAMIC_PROFILE folder takes `start_step` among the options (torch_npu counts its own steps)."""
    now = time.time_ns() if now_ns is None else now_ns
    if target.kind == DYNAMIC_PROFILE:
        options = dict(options)
        return capture_npu.ask(target.folder, options, options.pop("start_step", None), now)
    folder = CaptureFolder(target.folder)
    statuses, _ = folder.statuses()
    try:
        previous = folder.request()
    except cr.RequestError:
        previous = None  # an unusable file is replaced
    request = cr.new_request(options, statuses, now, by)  # the options' problems first: they are the asker's
    why = cr.busy_reason(previous, statuses, now)
    if why:
        raise CaptureBusy(why)
    folder.write(REQUEST_FILE, json.dumps(request).encode())
    return cr.request_state(request, statuses, now)
