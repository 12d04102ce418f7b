"""Capture from the viewer into a job that uses torch_npu's own dynamic profiling (`dp.init(folder)` and
`dp.step()` from torch_npu.profiler.dynamic_profile, the file-config path of msMonitor), so its users keep
their workflow: we write the config torch_npu watches and read what it writes back.

The config (`<folder>/profiler_config.json`, keys as torch_npu's _dynamic_profiler_config_context.py reads
them: activities, prof_dir, analyse, async_mode, record_shapes, profile_memory, with_stack, with_flops,
with_modules, active, warmup, start_step, is_rank, rank_list, experimental_config, metadata) is the user's:
a request keeps every key it does not set (prof_dir and experimental_config included: no path comes from
a request) and sets the activities, the options, active = steps, start_step, and is_rank / rank_list.
torch_npu starts when its own step count equals start_step (26.x; its 2.1 branch starts at the next step
and ignores it): it writes no heartbeat, so the start step is the asker's (canning-prof capture --start-step).
torch_npu logs each capture into `<folder>/log/dp_<host>_<pid>_rank_<rank>.log` ("Start Dynamic Profiler at N
step.", "Stop Dynamic Profiler at N step."): the request's state is read from what those logs gained since it
was written (offsets kept in `.canning-capture/npu-request.json`). Its windows are torch_npu folders under
prof_dir, listed by the viewer as any other (discover_ascend.py) when prof_dir is under the logdir.
Local folders only (torch_npu's monitor reads a local path).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import time

from canning_tb.util import safe_files

from . import request as cr
from .files import CAPTURE_DIR, replace_local

CONFIG = "profiler_config.json"
SIDECAR = "npu-request.json"
MAX_CONFIG_BYTES = 1020  # torch_npu 2.1's shared memory holds 1024 bytes, 4 of them a time stamp
_KEYS = {"activities", "prof_dir", "active", "start_step"}  # what every version's template has
_LOG_RE = re.compile(r"^dp_.+_\d+_rank_(-?\d+)\.log$")
_START_RE = re.compile(r"Start Dynamic Profiler at (\d+) step")
_STOP_RE = re.compile(r"Stop Dynamic Profiler at (\d+) step")
MAX_CONFIG_READ = 64 * 1024
MAX_LOG_READ = 1 << 20  # of a log, from the request's offset on
# Every file here is the user's (or torch_npu's): opened only through safe_files, so a FIFO, socket or device
# planted under one of these names is refused at once instead of blocking the poll that reads it for good.


def read_config(folder: str) -> dict | None:
    """torch_npu's config in folder, or None when the folder holds none (recognised by its keys)."""
    try:
        raw = safe_files.read_file(os.path.join(folder, CONFIG), MAX_CONFIG_READ + 1)
        data = cr.loads_bounded(raw, MAX_CONFIG_READ, CONFIG)
    except (OSError, cr.RequestError):
        return None
    return data if isinstance(data, dict) and _KEYS <= set(data) else None


def ask(folder: str, options: dict, start_step, now_ns: int | None = None) -> dict:
    """Write torch_npu's config for these options; the request's state. RequestError when unusable."""
    now = time.time_ns() if now_ns is None else now_ns
    chosen = cr.check_options(options)
    if not isinstance(start_step, int) or isinstance(start_step, bool) or not 1 <= start_step <= cr.MAX_STEP:
        raise cr.RequestError("torch_npu's dynamic_profile starts at a step of its own count: give the start step "
                              "(canning-prof capture --start-step N), a whole number from 1")
    config = read_config(folder)
    if config is None:
        raise cr.JobNotReady(f"{CONFIG} is gone or unreadable: is the job still running dp.init()?")
    activities = [a for a in chosen["activities"] if a in ("CPU", "NPU")]
    every = chosen["ranks"] == "all"
    config.update({"activities": activities or config["activities"], "active": chosen["steps"],
                   "start_step": start_step, "is_rank": not every, "rank_list": [] if every else chosen["ranks"],
                   **{k: chosen[k] for k in cr.OPTIONS}})
    raw = json.dumps(config).encode()
    if len(raw) > MAX_CONFIG_BYTES:
        raise cr.RequestError(f"the config would be {len(raw)} bytes; torch_npu reads at most {MAX_CONFIG_BYTES}: "
                              "name fewer ranks")
    request = {"id": secrets.token_hex(8), "by": "cli", "created_ns": now, "start_step": start_step,
               "steps": chosen["steps"], "ranks": chosen["ranks"], "logs": _log_sizes(folder)}
    replace_local(os.path.join(folder, CAPTURE_DIR), SIDECAR, json.dumps(request).encode())
    replace_local(folder, CONFIG, raw)  # torch_npu reads it again once its mtime changes
    return state(folder, now)


def state(folder: str, now_ns: int | None = None) -> dict | None:
    """Where the last request stands, from torch_npu's logs (None before the first). UnusableFile when the
    request's sidecar is there but not one ask() writes (hand-edited, another version, a FIFO)."""
    request = _sidecar(folder)
    if request is None:
        return None
    seen = _log_news(folder, request.get("logs", {}))
    wanted = request["ranks"] if request["ranks"] != "all" else sorted(seen)
    ranks = []
    for rank in wanted:
        start, stop = seen.get(rank, (None, None))
        if stop is not None:
            rs, msg = cr.WRITTEN, f"torch_npu recorded steps {start}-{stop - 1}"
        elif start is not None:
            rs, msg = cr.RECORDING, f"torch_npu started at step {start}"
        else:
            rs, msg = "waiting", "torch_npu has not logged a start since the request"
        ranks.append({"rank": rank, "state": rs, "message": msg, "windows": [], "step": None})
    done = [r for r in ranks if r["state"] == cr.WRITTEN]
    recording = [r for r in ranks if r["state"] == cr.RECORDING]
    steps = f"steps {request['start_step']}-{request['start_step'] + request['steps'] - 1}"
    if ranks and len(done) == len(ranks):
        overall, message = cr.WRITTEN, f"written by torch_npu: {steps} on {len(done)} ranks"
    elif recording or done:
        overall, message = cr.RECORDING, f"torch_npu records {steps} on {len(recording) + len(done)} ranks"
    else:
        overall, message = "waiting", f"written to {CONFIG}; torch_npu starts at its step {request['start_step']}"
    return {"id": request["id"], "by": request["by"], "created_ns": request["created_ns"], "state": overall,
            "message": message, "start_step": request["start_step"],
            "end_step": request["start_step"] + request["steps"] - 1, "steps": request["steps"], "ranks": ranks,
            "written_by": [r["rank"] for r in done]}


def _sidecar(folder: str) -> dict | None:
    """The request ask() wrote (its keys checked), None when there is none."""
    where = f"{CAPTURE_DIR}/{SIDECAR}"
    try:
        raw = safe_files.read_file(os.path.join(folder, CAPTURE_DIR, SIDECAR), cr.MAX_STATUS_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise cr.UnusableFile(where, e.strerror or type(e).__name__) from None
    try:
        data = cr.loads_bounded(raw, cr.MAX_STATUS_BYTES, "the file")
        if not isinstance(data, dict):
            raise cr.RequestError("not a JSON object")
        missing = [k for k in ("id", "by", "created_ns", "start_step", "steps", "ranks") if k not in data]
        if missing:
            raise cr.RequestError(f"lacks {missing[0]!r}")
        checked = {"id": str(data["id"])[:64], "by": str(data["by"])[:64],
                   "created_ns": cr.check_int(data["created_ns"], "created_ns", 0, 1 << 63),
                   "start_step": cr.check_int(data["start_step"], "start_step", 1, cr.MAX_STEP),
                   "steps": cr.check_int(data["steps"], "steps", 1, cr.MAX_STEPS),
                   "ranks": cr.check_ranks(data["ranks"]),
                   "logs": data.get("logs") if isinstance(data.get("logs"), dict) else {}}
    except cr.RequestError as e:
        raise cr.UnusableFile(where, str(e)) from None
    return checked


def job_summary(folder: str) -> dict:
    """What torch_npu's logs say about the job: the ranks that log (it writes no heartbeat: liveness unknown)."""
    ranks = sorted({int(_LOG_RE.match(n).group(1)) for n in _logs(folder)})
    return {"live_ranks": [], "world_size": len(ranks), "step": None, "steps_per_s": None,
            "backend": "torch_npu dynamic_profile", "max_steps": cr.MAX_STEPS, "last_heartbeat_s": None,
            "ranks": [{"rank": r, "host": "", "pid": 0, "step": None, "state": "", "live": None} for r in ranks]}


def _log_sizes(folder: str) -> dict:
    out = {}
    for name in _logs(folder):
        try:
            out[name] = os.path.getsize(os.path.join(folder, "log", name))
        except OSError:
            continue
    return out


def _logs(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(os.path.join(folder, "log")) if _LOG_RE.match(n))
    except OSError:
        return []


def _log_news(folder: str, offsets: dict) -> dict:
    """{rank: (first start step, first stop step)} logged since the offsets (a rotated log: from its start)."""
    out: dict = {}
    for name in _logs(folder):
        rank = int(_LOG_RE.match(name).group(1))
        path = os.path.join(folder, "log", name)
        try:
            with safe_files.open_file(path) as f:  # a FIFO named like a log: refused, never waited on
                size = os.fstat(f.fileno()).st_size
                at = offsets.get(name, 0) if isinstance(offsets.get(name), int) and 0 <= offsets[name] <= size else 0
                f.seek(at)
                text = safe_files.read_all(f, path, MAX_LOG_READ).decode("utf-8", "replace")
        except OSError:
            continue
        start, stop = _START_RE.search(text), _STOP_RE.search(text)
        out[rank] = (int(start.group(1)) if start else None,
                     int(stop.group(1)) if stop and start and stop.start() > start.start() else None)
    return out

