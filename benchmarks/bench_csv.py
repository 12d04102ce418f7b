"""The Ascend CSV read before and after pyarrow.csv (issue 38: libraries where they win, measured), in one run.

    python benchmarks/bench_csv.py [--rows 197000] [--before 267c0e7] [--repeats 5]

The input: the real level2 kernel_details.csv of the fixtures (191 rows, 46 columns: PMU ratios, shapes, µs times
with torch_npu's trailing TAB) grown by grow_ascend.grow_csv to --rows rows (copies shifted by the trace's span,
every µs text kept exact), once, into benchmarks/out/csv/. The readings, each in a fresh interpreter, alternating
so that load on the (shared) machine moves them alike:

| reading  | the call timed                                                      | sources                              |
|----------|---------------------------------------------------------------------|--------------------------------------|
| before   | read_kernel_details(file): csv_fast's numpy cells + _cells.c numbers | `git archive BEFORE src`, _cells.c built |
| after    | read_kernel_details(file): pyarrow.csv + columns.py                  | this tree                            |
| fallback | the same, CANNING_CSV_ARROW=0: the csv module + columns.py           | this tree                            |
| parse    | pyarrow.csv.read_csv of all 46 columns as text, nothing converted    | (the floor of the pyarrow path)      |

Each child reports wall and CPU seconds of the call and a sha256 of what it returned (every event column with
its string ids resolved to text, every metric, bit for bit): before, after and fallback must agree. Results:
the median of the repeats and the speed-up (before / after) on stdout, and benchmarks/out/csv/results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out", "csv")
FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(os.path.dirname(ROOT), "shared", "fixtures"))
SRC = os.path.join(FIXTURES, "ascend", "level2", "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT")
BEFORE = "267c0e7"  # the last commit with csv_fast.py, cells.py and _ascend_cells.c

CHILD = r'''
import hashlib, json, sys, time
import numpy as np
path, what = sys.argv[1], sys.argv[2]
if what == "parse":
    import pyarrow as pa, pyarrow.csv as pcsv
    raw = open(path, "rb").read()
    n = raw[:raw.index(b"\n")].count(b",") + 1
    names = [f"c{i}" for i in range(n)]
    wall, cpu = time.perf_counter(), time.process_time()
    pcsv.read_csv(pa.BufferReader(raw), read_options=pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=False),
                  parse_options=pcsv.ParseOptions(newlines_in_values=True),
                  convert_options=pcsv.ConvertOptions(column_types={c: pa.string() for c in names}))
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "rows": None, "sha": None}))
    sys.exit()
from canning_tb.ingest.ascend.csv import tables as C
from canning_tb.ingest.table import EventTable
table, problems = EventTable(), []
wall, cpu = time.perf_counter(), time.process_time()
k = C.read_kernel_details(path, "kernel_details.csv", problems, table.strings, 0)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
h = hashlib.sha256()
for name in sorted(k.events):
    col = k.events[name]
    if name in ("name", "core", "shapes", "args", "cat"):  # string ids: their texts
        data = "\x00".join(str(table.strings[int(i)]) for i in col).encode()
    else:
        data = np.ascontiguousarray(col).tobytes()
    h.update(name.encode() + data)
for name in sorted(k.metrics):
    h.update(name.encode() + k.metrics[name].tobytes())
h.update(repr([str(p) for p in problems]).encode())
print(json.dumps({"wall": wall, "cpu": cpu, "rows": len(k), "sha": h.hexdigest()}))
'''


def grown(rows: int) -> str:
    """kernel_details.csv of the level2 rank grown to about `rows` rows (cached)."""
    sys.path.insert(0, HERE)
    import grow_ascend
    copies = -(-rows // 191)
    path = os.path.join(OUT, f"kernel_details_x{copies}.csv")
    if not os.path.exists(path):
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(SRC, "trace_view.json"), encoding="utf-8") as f:
            _, span, nsteps = grow_ascend._span(json.load(f))
        grow_ascend.grow_csv(os.path.join(SRC, "kernel_details.csv"), path + ".tmp", copies, span, nsteps)
        os.replace(path + ".tmp", path)
    return path


def before_tree(rev: str) -> str:
    """The sources at `rev` (git archive), with the CSV number cells' C part built as setup.py builds it."""
    tree = os.path.join(OUT, f"before_{rev}")
    if not os.path.isdir(tree):
        os.makedirs(tree + ".tmp", exist_ok=True)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tree + ".tmp"], input=archive, check=True)
        os.replace(tree + ".tmp", tree)
    native = os.path.join(tree, "src", "canning_tb", "ingest", "native")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name in ("ascend_cells",):  # (the only C part the CSV read used)
        source, built = os.path.join(native, name + ".c"), os.path.join(native, "_" + name + suffix)
        if not os.path.exists(built):
            subprocess.run([sysconfig.get_config_var("CC").split()[0], "-O2", "-shared", "-fPIC",
                            f"-I{sysconfig.get_paths()['include']}", source, "-o", built], check=True)
    return tree


def reading(label: str, path: str, src: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, path, label], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src, **env}, timeout=600)
    if done.returncode:
        raise SystemExit(f"{label}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=197000)
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    path = grown(a.rows)
    old = os.path.join(before_tree(a.before), "src")
    new = os.path.join(ROOT, "src")
    plan = {"before": (old, {}), "after": (new, {}), "fallback": (new, {"CANNING_CSV_ARROW": "0"}),
            "parse": (new, {})}
    runs: dict[str, list] = {k: [] for k in plan}
    for _ in range(a.repeats):
        for label, (src, env) in plan.items():
            runs[label].append(reading(label, path, src, env))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    shas = {label: {r["sha"] for r in rs} for label, rs in runs.items() if label != "parse"}
    same = len(set().union(*shas.values())) == 1
    res = {"file": path, "bytes": os.path.getsize(path), "rows": runs["after"][0]["rows"], "before": a.before,
           "same_columns": same, "load_after": load,
           "median": {label: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu")} for label, rs in runs.items()},
           "runs": runs}
    med = res["median"]
    res["speedup"] = {k: med["before"][k] / med["after"][k] for k in ("wall", "cpu")}
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"kernel_details.csv: {res['rows']:,} rows, {res['bytes'] / 1e6:.1f} MB; {a.repeats} repeats, medians; "
          f"load average after: {load}")
    print("| reading | wall (s) | CPU (s) |\n|---|---:|---:|")
    for label in plan:
        print(f"| {label} | {med[label]['wall']:.3f} | {med[label]['cpu']:.3f} |")
    print(f"speed-up before / after: {res['speedup']['wall']:.2f}x wall, {res['speedup']['cpu']:.2f}x CPU; "
          f"same columns before, after and fallback: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
