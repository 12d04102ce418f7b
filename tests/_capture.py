"""Shared by the capture tests: the files of a run's .canning-capture/ read and written by hand (json and
os, never the code under test), a request written as the documented format says, and waits that end on an
event with a bounded deadline."""
import glob
import gzip
import json
import os
import re
import secrets
import time

CAPTURE = ".canning-capture"


def wait_for(cond, what, timeout=120.0, every=0.01):
    """cond()'s first truthy answer; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def status(run, rank=0):
    """The rank's status as the job wrote it, or None."""
    try:
        with open(os.path.join(run, CAPTURE, f"rank{rank}.status.json"), encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None  # absent, or being replaced (never half-written: os.replace)


def write_request(run, raw: bytes):
    """request.json replaced at once, as a writer must."""
    os.makedirs(os.path.join(run, CAPTURE), exist_ok=True)
    tmp = os.path.join(run, CAPTURE, ".request.json.test.tmp")
    with open(tmp, "wb") as f:
        f.write(raw)
    os.replace(tmp, os.path.join(run, CAPTURE, "request.json"))


def request(start_step, steps=3, **fields):
    """A request as src/canning_tb/capture/request.py documents it (a dict; json.dumps it to write)."""
    body = {"format": "canning-capture-request", "version": 1, "id": secrets.token_hex(8), "by": "cli",
            "created_ns": time.time_ns(), "start_step": start_step, "steps": steps, "seen_step": 0, "ranks": "all",
            "activities": [], "record_shapes": False, "profile_memory": False, "with_stack": False,
            "with_flops": False, "with_modules": False}
    body.update(fields)
    return body


def manifests(run):
    out = []
    for path in sorted(glob.glob(os.path.join(run, "*.canning.json"))):
        with open(path, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def trace_steps(run, manifest):
    """The ProfilerStep#N numbers in the window's trace, read from the gzipped Chrome trace itself."""
    (name,) = [f["name"] for f in manifest["files"] if f["name"].endswith(".pt.trace.json.gz")]
    with gzip.open(os.path.join(run, name), "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    return sorted({int(m.group(1)) for e in events if (m := re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", "")))})


def window_files(run):
    """Every file the handler may write into the run folder (windows, scalars), not the capture folder."""
    return sorted(n for n in os.listdir(run) if n != CAPTURE and not n.startswith("."))
