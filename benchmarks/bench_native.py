"""Does each C part of ingest/native/ still pay against the best library path it stands in for? One run,
each part timed with and without its C, interleaved on the same input in the same process.

    python benchmarks/bench_native.py [--kineto-mb 60] [--ascend-mb 90] [--repeats 5]

| part              | the call timed                        | without C (its switch)                             |
|-------------------|---------------------------------------|----------------------------------------------------|
| kineto_scan.c     | read_kineto(trace) of a real trace    | msgspec's typed decode (CANNING_KINETO_SCAN=0)     |
| kineto_sweep.c    | fill_python_stacks of that trace's ops | numpy and a Python loop per depth (CANNING_STACK_SWEEP=0) |
| tree.c            | build_digest(table) of that trace     | numpy's sorts and np.add.at (CANNING_NEST_SWEEP=0) |
| ascend_scan.c     | read_ascend(rank) of a grown 910 rank | msgspec's decode (CANNING_TRACE_SCAN=0)            |

Inputs are real: a torch.profiler trace of a Transformer made by make_big_trace.py (with_stack, shapes and
memory), and the real level2 torch_npu rank of the fixtures grown by grow_ascend.py; both are generated once
into benchmarks/out/native/. The figure per part is the median of the repeats of each reading and their
ratio (without C / with C) in CPU seconds (this process and its reaped children) and in wall time:
above 1, the C part pays. The readings alternate, so load on the machine moves both alike. Results: a table
on stdout and benchmarks/out/native.json.
"""
from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out", "native")
FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(HERE, "..", "tests", "fixtures"))
ASCEND_SRC = os.path.join(FIXTURES, "ascend", "level2", "rank0_ascend_pt")


def kineto_trace(mb: int) -> str:
    folder = os.path.join(OUT, f"kineto_{mb}mb")
    subprocess.run([sys.executable, os.path.join(HERE, "make_big_trace.py"), "--target-mb", str(mb), "--out", folder],
                   check=True)
    return sorted(glob.glob(os.path.join(folder, "*.pt.trace.json")))[-1]


def ascend_rank(mb: int) -> str:
    out = os.path.join(OUT, f"ascend_{mb}mb", "worker0_0_ascend_pt")
    if not os.path.isdir(out):
        subprocess.run([sys.executable, os.path.join(HERE, "grow_ascend.py"), "--src", ASCEND_SRC, "--out", out,
                        "--target-mb", str(mb)], check=True)
    return out


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the Kineto read forks one): on a shared
    machine the work done, where wall time also counts the other jobs' turns."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(call, switch: str, on: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of one call with the C part on or off."""
    os.environ[switch] = "1" if on else "0"
    gc.collect()
    wall, cpu = time.perf_counter(), _cpu()
    call()
    return time.perf_counter() - wall, _cpu() - cpu


def measure(name: str, call, switch: str, repeats: int) -> dict:
    """Median seconds with and without the C part, alternating which goes first."""
    with_c, without = [], []
    call()  # warm: imports, page cache
    for r in range(repeats):
        order = (True, False) if r % 2 == 0 else (False, True)
        for on in order:
            (with_c if on else without).append(timed(call, switch, on))
    os.environ.pop(switch, None)
    row = {"part": name, "switch": switch}
    for i, kind in enumerate(("wall", "cpu")):
        row[f"with_c_{kind}_s"] = statistics.median(t[i] for t in with_c)
        row[f"without_c_{kind}_s"] = statistics.median(t[i] for t in without)
        row[f"{kind}_ratio"] = row[f"without_c_{kind}_s"] / row[f"with_c_{kind}_s"]
    row["runs"] = {"with_c": with_c, "without_c": without}
    return row


def stacks_stage(table):
    """fill_python_stacks alone, on the ops' stacks emptied again each time (the read's own output is the
    expected answer: both ways must give it back)."""
    import numpy as np

    from canning_tb.ingest.kineto.stacks import fill_python_stacks
    from canning_tb.ingest.table import NONE, Kind
    ev = table.events
    ops = (ev["kind"] == Kind.CPU_OP) | (ev["kind"] == Kind.USER_ANNOTATION)
    expected = ev["stack"].copy()

    def run():
        ev["stack"][:] = np.where(ops, NONE, expected)
        fill_python_stacks(table)
        assert (ev["stack"] == expected).all(), "the two sweeps disagree"
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kineto-mb", type=int, default=60)
    ap.add_argument("--ascend-mb", type=int, default=90)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.ascend.read import read_ascend
    from canning_tb.ingest.kineto.read import read_kineto
    from canning_tb.ingest.native import _ascend_scan, _kineto_scan, _kineto_sweep, _tree  # noqa: F401  (built?)

    trace, rank = kineto_trace(args.kineto_mb), ascend_rank(args.ascend_mb)
    table = read_kineto(trace)  # the stacks' sweep is timed on its own: the read holds it among much else
    rows = [
        measure("kineto_scan.c", lambda: read_kineto(trace), "CANNING_KINETO_SCAN", args.repeats),
        measure("kineto_sweep.c", stacks_stage(table), "CANNING_STACK_SWEEP", args.repeats),
        measure("tree.c", lambda: build_digest(table), "CANNING_NEST_SWEEP", args.repeats),
        measure("ascend_scan.c", lambda: read_ascend(rank), "CANNING_TRACE_SCAN", args.repeats),
    ]
    sizes = {"kineto_trace_mb": os.path.getsize(trace) / 1e6,
             "ascend_rank_mb": sum(os.path.getsize(p) for p in glob.glob(os.path.join(rank, "**", "*"), recursive=True)
                                   if os.path.isfile(p)) / 1e6}
    print(f"inputs: Kineto trace {sizes['kineto_trace_mb']:.0f} MB, Ascend rank {sizes['ascend_rank_mb']:.0f} MB; "
          f"medians of {args.repeats}")
    print("| part | CPU with C (s) | CPU without C (s) | without / with, CPU | wall |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['part']} | {r['with_c_cpu_s']:.3f} | {r['without_c_cpu_s']:.3f} | {r['cpu_ratio']:.2f}x "
              f"| {r['wall_ratio']:.2f}x |")
    with open(os.path.join(HERE, "out", "native.json"), "w") as f:
        json.dump({"inputs": sizes, "repeats": args.repeats, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
