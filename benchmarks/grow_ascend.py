"""Grow a real torch_npu rank into a big one: every timed record repeated with shifted timestamps and step ids.

    python benchmarks/grow_ascend.py --src FOLDER --out RUN/worker0_0_ascend_pt --copies N
    python benchmarks/grow_ascend.py --src FOLDER --out RUN/worker0_0_ascend_pt --target-mb 360

Copy k of the window starts k spans later (the span: the trace's first start to its last end, plus 1 ms,
in whole µs so that every µs text stays exact); its ProfilerStep#N and CANN step ids are N + k x the
steps of the window; ids that link records (flow ids, connection / correlation ids, Python ids) are made
unique per copy, so flows stay one to one. What is per-window, not per record (profiler_info,
profiler_metadata, l2_cache.csv, api_statistic.csv), is copied once; op_statistic.csv's counts and totals
are multiplied. A torch_npu SQLite export (ascend_pytorch_profiler*.db) is grown in SQL the same way
(grow_db). Standard library only (plus msgspec when present, for speed)."""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import sys

OUT = "ASCEND_PROFILER_OUTPUT"
ID_STEP = 10 ** 7  # added per copy to ids that link records
_STEP_RE = re.compile(r"^(ProfilerStep#)(\d+)$")
_LINK_ARGS = ("connection_id", "correlation_id", "Python id", "Python parent id")
_TIME_COLUMNS = ("Start Time(us)", "Timestamp(us)", "Allocation Time(us)", "Release Time(us)",
                 "Active Release Time(us)", "Task Start Time(us)")
_ONCE = ("l2_cache.csv", "api_statistic.csv")


def _shift_us(value, delta_us: int):
    """A µs time shifted by whole µs, its text kept as written (digits after the point unchanged)."""
    if isinstance(value, str):
        body = value.rstrip("\t ")
        whole, dot, frac = body.partition(".")
        if not whole.lstrip("-").isdigit():
            return value
        return f"{int(whole) + delta_us}{dot}{frac}{value[len(body):]}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + delta_us
    return value


def _shift_id(value, k: int):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + k * ID_STEP
    if isinstance(value, str) and value.isdigit():
        return str(int(value) + k * ID_STEP)
    return f"{value}_{k}" if isinstance(value, str) else value


def _span(events: list) -> tuple[int, int, int]:
    """(first start µs, span µs, steps) of the trace's timed events."""
    lo, hi, steps = None, None, set()
    for e in events:
        ts = e.get("ts")
        if ts is None:
            continue
        t = float(ts)
        end = t + float(e.get("dur") or 0)
        lo = t if lo is None else min(lo, t)
        hi = end if hi is None else max(hi, end)
        m = _STEP_RE.match(str(e.get("name", "")))
        if m:
            steps.add(int(m.group(2)))
    return int(lo), int(hi - lo) + 1000, max(1, len(steps))


def _event_copy(e: dict, k: int, delta: int, nsteps: int) -> dict | None:
    ph = e.get("ph")
    if ph == "M":
        return e if k == 0 else None
    c = dict(e)
    if "ts" in c:
        c["ts"] = _shift_us(c["ts"], delta)
    if ph in ("s", "f", "t") and "id" in c:
        if isinstance(c["id"], int) and c.get("name") == "torch_to_npu":
            c["id"] = c["id"] + delta * 1000  # torch_npu's ids are the device task's start in ns
        else:
            c["id"] = _shift_id(c["id"], k)
    m = _STEP_RE.match(str(c.get("name", "")))
    if m:
        c["name"] = f"{m.group(1)}{int(m.group(2)) + k * nsteps}"
    args = c.get("args")
    if isinstance(args, dict) and any(a in args for a in _LINK_ARGS):
        c["args"] = {key: (_shift_id(v, k) if key in _LINK_ARGS else v) for key, v in args.items()}
    return c


def _dumps():
    try:
        import msgspec
        return msgspec.json.Encoder().encode
    except ImportError:
        return lambda obj: json.dumps(obj).encode()


def grow_trace(src: str, dst: str, copies: int, delta: int, nsteps: int, events: list) -> None:
    enc = _dumps()
    with open(dst, "wb") as f:
        f.write(b"[")
        first = True
        for k in range(copies):
            for e in events:
                c = _event_copy(e, k, k * delta, nsteps)
                if c is None:
                    continue
                f.write(b"" if first else b",\n")
                f.write(enc(c))
                first = False
        f.write(b"]")


def grow_csv(src: str, dst: str, copies: int, delta: int, nsteps: int) -> None:
    with open(src, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    times = [i for i, h in enumerate(header) if h.strip() in _TIME_COLUMNS]
    steps = [i for i, h in enumerate(header) if h.strip() in ("Step", "Step Id")]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header)
    for k in range(copies):
        for r in body:
            r = list(r)
            for i in times:
                if i < len(r):
                    r[i] = _shift_us(r[i], k * delta)
            for i in steps:
                if i < len(r) and r[i].strip().isdigit():
                    r[i] = str(int(r[i]) + k * nsteps)
            w.writerow(r)
    with open(dst, "w", newline="", encoding="utf-8") as f:
        f.write(out.getvalue())


def grow_op_statistic(src: str, dst: str, copies: int) -> None:
    with open(src, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    scale = [i for i, h in enumerate(header) if h in ("Count", "Total Time(us)")]
    with open(dst, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\r\n")
        w.writerow(header)
        for r in rows[1:]:
            w.writerow([_times(c, copies) if i in scale else c for i, c in enumerate(r)])


def _times(cell: str, n: int) -> str:
    try:
        return str(int(cell) * n)
    except ValueError:
        return f"{float(cell) * n:.3f}"


def _step_key(key: str, k: int, nsteps: int) -> str:
    m = re.match(r"^(step)(\d+)$", key)
    return f"{m.group(1)}{int(m.group(2)) + k * nsteps}" if m else f"{key}_{k}"


def _shift_times(obj, delta: int):
    if isinstance(obj, dict):
        return {key: (_shift_us(v, delta) if key == "Start Timestamp(us)" else _shift_times(v, delta))
                for key, v in obj.items()}
    return obj


def grow_comm_json(src: str, dst: str, copies: int, delta: int, nsteps: int) -> None:
    with open(src, encoding="utf-8") as f:
        d = json.load(f)
    out = {}
    for k in range(copies):
        for step, v in d.items():
            out[_step_key(step, k, nsteps)] = _shift_times(v, k * delta)
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f)


def grow(src: str, dst: str, copies: int) -> None:
    """The window folder src grown copies times into dst (a folder named {worker}_{number}_ascend_pt)."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(os.path.join(dst, OUT))
    for name in os.listdir(src):
        if name != OUT and os.path.isfile(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    s_out, d_out = os.path.join(src, OUT), os.path.join(dst, OUT)
    trace = os.path.join(s_out, "trace_view.json")
    if os.path.exists(trace):
        with open(trace, encoding="utf-8") as f:
            events = json.load(f)
        lo, span, nsteps = _span(events)
    else:
        events = []
        span, nsteps = _db_span(s_out)
    for name in sorted(os.listdir(s_out)):
        s, d = os.path.join(s_out, name), os.path.join(d_out, name)
        if name == "trace_view.json":
            grow_trace(s, d, copies, span, nsteps, events)
        elif name == "op_statistic.csv":
            grow_op_statistic(s, d, copies)
        elif name.endswith(".csv") and name not in _ONCE:
            grow_csv(s, d, copies, span, nsteps)
        elif name in ("communication.json", "communication_matrix.json"):
            grow_comm_json(s, d, copies, span, nsteps)
        elif name.endswith(".db") and name.startswith("ascend_pytorch_profiler"):
            grow_db(s, d, copies, span * 1000, nsteps)
        elif name == "analysis.db":
            grow_analysis_db(s, d, copies, nsteps)
        else:
            shutil.copy(s, d)


# -- the SQLite export --------------------------------------------------------------------------
_DB_TIMES = re.compile(r"^(start|end)(Ns|Time|TimeNs)?$|^timestamp(Ns)?$|^(allocation|release)Time$|"
                       r"^(startNs|endNs|timestampNs)$", re.I)
_DB_IDS = re.compile(r"^(connectionId|globalTaskId|callchainId|correlationId|opId|id)$")
_DB_KEEP = {"STRING_IDS", "META_DATA", "NPU_INFO", "HOST_INFO", "RANK_DEVICE_MAP", "SESSION_TIME_INFO",
            "sqlite_sequence"}


def _db_span(folder: str) -> tuple[int, int]:
    """(span µs, steps) of a profiler db: its tasks' and host calls' first start to last end, plus 1 ms."""
    name = next(n for n in os.listdir(folder) if n.startswith("ascend_pytorch_profiler") and n.endswith(".db"))
    c = sqlite3.connect(os.path.join(folder, name))
    lo, hi = None, None
    for t in ("TASK", "PYTORCH_API", "CANN_API"):
        try:
            a, b = c.execute(f"select min(cast(startNs as integer)), max(cast(endNs as integer)) from {t}").fetchone()
        except sqlite3.Error:
            continue
        if a is not None:
            lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    try:
        steps = c.execute("select count(*) from STEP_TIME").fetchone()[0]
    except sqlite3.Error:
        steps = 1
    c.close()
    return (hi - lo) // 1000 + 1000, max(1, steps)


def _columns(c, table: str) -> list[str]:
    return [r[1] for r in c.execute(f'pragma table_info("{table}")')]


def grow_db(src: str, dst: str, copies: int, delta_ns: int, nsteps: int) -> None:
    """Every row of every timed table of the profiler db repeated with shifted times and ids."""
    shutil.copy(src, dst)
    c = sqlite3.connect(dst)
    tables = [r[0] for r in c.execute("select name from sqlite_master where type='table'")]
    for t in tables:
        cols = _columns(c, t)
        if t.startswith("ENUM_") or t in _DB_KEEP or not any(_DB_TIMES.match(x) for x in cols):
            continue
        n = c.execute(f'select max(rowid) from "{t}"').fetchone()[0] or 0
        for k in range(1, copies):
            exprs = []
            for x in cols:
                if _DB_TIMES.match(x):
                    exprs.append(f'"{x}" + {k * delta_ns}')
                elif _DB_IDS.match(x) or (t == "STEP_TIME" and x == "id"):
                    exprs.append(f'"{x}" + {k * (nsteps if t == "STEP_TIME" else ID_STEP)}')
                else:
                    exprs.append(f'"{x}"')
            c.execute(f'insert into "{t}" ({", ".join(chr(34) + x + chr(34) for x in cols)}) '
                      f'select {", ".join(exprs)} from "{t}" where rowid <= {n}')
        _link_tables(c, t, n, copies)
    c.commit()
    c.execute("vacuum")
    c.close()


def _link_tables(c, timed: str, n: int, copies: int) -> None:
    """Tables keyed by a shifted id without a time of their own (task info, connection ids) follow."""
    follow = {"TASK": ("COMPUTE_TASK_INFO", "COMMUNICATION_TASK_INFO", "TASK_PMU_INFO"),
              "PYTORCH_API": ("CONNECTION_IDS", "PYTORCH_CALLCHAINS")}.get(timed, ())
    for t in follow:
        try:
            cols = _columns(c, t)
        except sqlite3.Error:
            continue
        if not cols:
            continue
        m = c.execute(f'select max(rowid) from "{t}"').fetchone()[0] or 0
        for k in range(1, copies):
            exprs = [f'"{x}" + {k * ID_STEP}' if _DB_IDS.match(x) else f'"{x}"' for x in cols]
            c.execute(f'insert into "{t}" select {", ".join(exprs)} from "{t}" where rowid <= {m}')


def grow_analysis_db(src: str, dst: str, copies: int, nsteps: int) -> None:
    shutil.copy(src, dst)
    c = sqlite3.connect(dst)
    for (t,) in c.execute("select name from sqlite_master where type='table'").fetchall():
        cols = _columns(c, t)
        if "step" not in cols:
            continue
        n = c.execute(f'select max(rowid) from "{t}"').fetchone()[0] or 0
        for k in range(1, copies):
            exprs = [f"'step' || (cast(replace(step, 'step', '') as integer) + {k * nsteps})" if x == "step"
                     else f'"{x}"' for x in cols]
            c.execute(f'insert into "{t}" select {", ".join(exprs)} from "{t}" where rowid <= {n}')
    c.commit()
    c.close()


def folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--copies", type=int)
    ap.add_argument("--target-mb", type=float)
    a = ap.parse_args(argv)
    copies = a.copies or max(1, round(a.target_mb * 1e6 / folder_bytes(a.src)))
    grow(a.src, a.out, copies)
    print(json.dumps({"copies": copies, "bytes": folder_bytes(a.out), "folder": a.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
