"""Run one command in a fresh process and measure it: wall time, peak RSS, bounded by a timeout.

    python benchmarks/measure.py --timeout 900 -- <cmd> [args...]

Prints one JSON object on the last line of stdout:
  wall_s            wall time of the whole child process (interpreter start, imports, work, exit)
  rc                exit status (None on timeout)
  timed_out         true when the child ran past --timeout (it and its process group are then killed)
  cpu_s             user + system CPU seconds of the child and the descendants it waited for (os.wait4): less
                    sensitive than wall time to other load on the machine
  maxrss_children   ru_maxrss from os.wait4 on the child: the largest peak RSS of any single process among the
                    child and the descendants it waited for (Linux: max, not sum), in bytes
  peak_tree_rss     the largest sum of RSS over the child and all its descendants, sampled from /proc every
                    20 ms: what the machine had to hold at once (catches a parent and its worker together)
  child_json        the last stdout line of the child, if it parses as a JSON object (the script's own timings)
Only the standard library is used, so it runs under any Python 3.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(b")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append(int(d))
    return kids


def _tree_rss(root: int) -> int:
    kids = _children_map()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            pass
        todo.extend(kids.get(pid, []))
    return total


def measure(cmd: list[str], timeout: float, env: dict | None = None, cwd: str | None = None,
            log_path: str | None = None) -> dict:
    peak = [0]
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, cwd=cwd, start_new_session=True)
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()), daemon=True)
    reader.start()
    # reap the child ourselves with wait4: its own rusage (it and the descendants it waited for), not the
    # cumulative RUSAGE_CHILDREN of this process
    timed_out, status, ru = False, None, None
    while True:
        pid, st, r = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, ru = st, r
            break
        peak[0] = max(peak[0], _tree_rss(p.pid))
        if time.perf_counter() - t0 > timeout:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if not timed_out:  # workers left behind in the child's session (a leak of the tool) are ended too
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    reader.join(10)
    p.stdout.close()
    if log_path:
        log.close()
    out = b"".join(chunks)
    child_json = None
    for line in reversed(out.decode(errors="replace").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                child_json = json.loads(line)
            except ValueError:
                pass
            break
    return {
        "cmd": cmd, "wall_s": round(wall, 3), "rc": None if timed_out else p.returncode, "timed_out": timed_out,
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "maxrss_children": ru.ru_maxrss * 1024, "peak_tree_rss": peak[0], "child_json": child_json,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--log", default=None, help="file for the child's stderr")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    print(json.dumps(measure(cmd, a.timeout, log_path=a.log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
