"""Run msprof-analyze's cluster analysis on a folder of torch_npu ranks; write its numbers as JSON.

Runs INSIDE the peer venv (.venv-peers, `make peers`), never in the project venv:
    .venv-peers/bin/python tests/peers/msprof_oracle.py <cluster_dir> <out_dir>

<cluster_dir> holds the `*_ascend_pt` rank folders (a copy: msprof-analyze writes next to its
input). The tool runs as its own CLI (`msprof-analyze -d <cluster_dir> -m all -o <out_dir>`);
this script only parses what it wrote, with the csv/json modules, into <out_dir>/oracle.json:
  {"msprof_version", "step_trace": [{step, type, index, computing_us, ...}],
   "ops": [{group, step, op, rank, start_us, elapse_ms, transit_ms, wait_ms, synchronization_ms}],
   "total_op_info": [{group, step, rank, elapse_ms, transit_ms, wait_ms, ...}],
   "matrix": [{group, step, op, src, dst, transport, size_mb, time_ms}]: its cluster_communication_matrix.json
   "Total Op Info@group" cells, in the global ranks it mapped them to}
Units are msprof-analyze's: µs in the step trace, ms in the communication times.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from importlib.metadata import version

_ST_COLS = {"Computing": "computing_us", "Communication(Not Overlapped)": "communication_not_overlapped_us",
            "Overlapped": "overlapped_us", "Communication": "communication_us", "Free": "free_us",
            "Stage": "stage_us", "Bubble": "bubble_us", "Preparing": "preparing_us"}
_TIME = {"Start Timestamp(us)": "start_us", "Elapse Time(ms)": "elapse_ms", "Transit Time(ms)": "transit_ms",
         "Wait Time(ms)": "wait_ms", "Synchronization Time(ms)": "synchronization_ms", "Idle Time(ms)": "idle_ms"}


def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def main(cluster_dir: str, out_dir: str) -> int:
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(os.path.dirname(sys.executable), "msprof-analyze")
    p = subprocess.run([exe, "-d", cluster_dir, "-m", "all", "-o", out_dir], capture_output=True, text=True)
    with open(os.path.join(out_dir, "msprof.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    res_dir = os.path.join(out_dir, "cluster_analysis_output")
    if p.returncode != 0 or not os.path.isdir(res_dir):
        sys.stderr.write(f"msprof-analyze failed (rc {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
        return 1
    res: dict = {"msprof_version": version("msprof-analyze"), "step_trace": [], "ops": [], "total_op_info": [],
                 "matrix": []}
    with open(os.path.join(res_dir, "cluster_step_trace_time.csv"), newline="") as f:
        for row in csv.DictReader(f):
            r = {"step": row.get("Step"), "type": row.get("Type"), "index": row.get("Index")}
            r.update({v: _f(row.get(k)) for k, v in _ST_COLS.items()})
            res["step_trace"].append(r)
    with open(os.path.join(res_dir, "cluster_communication.json")) as f:
        comm = json.load(f)
    for group, steps in comm.items():
        for step, ops in steps.items():
            for op, ranks in ops.items():
                for rank, info in ranks.items():
                    t = info.get("Communication Time Info") or {}
                    r = {"group": group, "step": step, "op": op, "rank": rank}
                    r.update({v: _f(t.get(k)) for k, v in _TIME.items()})
                    (res["total_op_info"] if op.startswith("Total Op Info") else res["ops"]).append(r)
    matrix_path = os.path.join(res_dir, "cluster_communication_matrix.json")
    if os.path.isfile(matrix_path):
        with open(matrix_path) as f:
            matrix = json.load(f)
        for group, steps in matrix.items():
            for step, ops in steps.items():
                for op, links in ops.items():
                    if not op.startswith("Total Op Info"):
                        continue
                    for pair, v in links.items():
                        src, _, dst = pair.partition("-")
                        res["matrix"].append({"group": group, "step": step, "op": op, "src": int(src), "dst": int(dst),
                                              "transport": v.get("Transport Type"), "size_mb": _f(v.get("Transit Size(MB)")),
                                              "time_ms": _f(v.get("Transit Time(ms)"))})
    with open(os.path.join(out_dir, "oracle.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
