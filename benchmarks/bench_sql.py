"""SQL benchmark: queries over a generated run of many ranks (digests only), and over the events of the largest
window at hand.

    python benchmarks/bench_sql.py [--ranks 1024] [--big TRACE] [--out DIR]

The many-rank run is generated as bench_ranks.py does (tests/_many_ranks.py: the 8 real DLRM ranks of
param/dlrm_8ranks, digests at the source, each rank linking its source rank's trace). Each measure runs in a fresh
process (a new `canning_tb.open`, digests read from disk; the OS page cache warm after the first):
- `steps`: SELECT rank, avg(dur_ns) ... FROM steps GROUP BY rank ORDER BY ... LIMIT 5 over every rank;
- `communication`: the calls of every rank with wait / transfer matched across all of them (the biggest table
  built from the digests: one row per call), the ranks that waited most;
- `operators`: the operators whose device time differs most across the ranks;
- `events_one_rank`: the kernel time per stream of one rank's window (its trace read, the events' Parquet written
  to the cache: cold), then the same again in a new process (`events_one_rank_warm`: from the Parquet).
`--big TRACE` (e.g. benchmarks/make_big_trace.py's 1 GB trace; default: the largest fixture, HTA's 216k-event V100
trace): `events_big` cold (trace parsed, Parquet written) and warm, and the Parquet's size.
Wall and CPU seconds of the child (its own children's CPU included), its peak memory and the load average; results on stdout and OUT/sql.json. Not a test; not part of `make test`.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))  # the generator the many-rank tests use too

FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(REPO, "tests", "fixtures"))
QUERIES = {
    "steps": "SELECT rank, avg(dur_ns) AS step_ns FROM steps GROUP BY rank ORDER BY step_ns DESC LIMIT 5",
    "communication": "SELECT rank, count(*) AS calls, sum(wait_ns) AS wait_ns FROM communication "
                     "GROUP BY rank ORDER BY wait_ns DESC NULLS LAST LIMIT 5",
    "operators": "SELECT name, max(device_self_ns) - min(device_self_ns) AS spread_ns, "
                 "arg_max(rank, device_self_ns) AS slowest FROM operators GROUP BY name ORDER BY spread_ns DESC LIMIT 5",
    "events_one_rank": "SELECT stream, sum(dur_ns) AS ns FROM events WHERE rank = 3 AND kind = 'kernel' "
                       "GROUP BY stream ORDER BY ns DESC",
    "events_big": "SELECT kind, count(*) AS n, sum(dur_ns) AS ns FROM events GROUP BY kind ORDER BY ns DESC",
}


def log(msg: str) -> None:
    print(f"[bench_sql {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate(folder: str, ranks: int) -> str:
    from _many_ranks import write_many_ranks

    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    traces = sorted(glob.glob(os.path.join(FIXTURES, "param", "dlrm_8ranks", "*.pt.trace.json.gz")))
    if len(traces) != 8:
        raise SystemExit(f"the DLRM fixture is not under {FIXTURES}/param/dlrm_8ranks (set CANNING_FIXTURES)")
    run = os.path.join(folder, f"ranks{ranks}")
    write_many_ranks(run, [build_digest(read_kineto(t)) for t in traces], ranks, slow={3: 1.3, ranks - 5: 1.3},
                     traces=traces)
    return run


def child(logdir: str, name: str, cache: str) -> None:
    """--child LOGDIR NAME CACHE: one query in this fresh process, its figures as one JSON line."""
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    import canning_tb
    run = canning_tb.open(logdir, cache_dir=cache)
    opened = time.perf_counter() - start
    answer = run.sql(QUERIES[name], timeout_s=600)
    now = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # a big trace is read by two processes
    print(json.dumps({"wall_s": round(time.perf_counter() - start, 2), "open_s": round(opened, 2),
                      "cpu_s": round(now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime
                                     + kids.ru_utime + kids.ru_stime, 2),
                      "peak_rss_mb": _peak_mb(), "load": round(os.getloadavg()[0], 1), "windows": len(run.windows()),
                      "rows": answer.table.num_rows, "first": answer.table.slice(0, 1).to_pylist(),
                      "problems": len(answer.problems)}, default=str))


def _peak_mb() -> int:
    """This process's peak resident memory (VmHWM: ru_maxrss on Linux keeps the parent's across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    return -1


def measure(logdir: str, name: str, cache: str) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", logdir, name, cache],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{name}: {done.stderr[-3000:]}")
    found = json.loads(done.stdout.splitlines()[-1])
    log(f"{name}: {found}")
    return found


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--big", default=None, help="a big trace (default: the largest fixture trace)")
    p.add_argument("--out", default=os.path.join(HERE, "out"))
    p.add_argument("--child", nargs=3, metavar=("LOGDIR", "NAME", "CACHE"))
    args = p.parse_args()
    if args.child:
        return child(*args.child)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench_sql_")
    results: dict = {"ranks": args.ranks}
    try:
        started = time.perf_counter()
        run = generate(work, args.ranks)
        log(f"{args.ranks} ranks generated in {time.perf_counter() - started:.1f} s")
        cache = os.path.join(work, "cache")
        for name in ("steps", "communication", "operators", "events_one_rank"):
            results[name] = measure(run, name, cache)
        results["events_one_rank_warm"] = measure(run, "events_one_rank", cache)
        big = args.big or os.path.join(FIXTURES, "hta", "df_index_resolver", "df_index_resolver.json.gz")
        folder = os.path.join(work, "big")
        os.makedirs(folder)
        target = os.path.join(folder, "rank0.1.pt.trace.json" + (".gz" if big.endswith(".gz") else ""))
        try:
            os.link(big, target)
        except OSError:
            shutil.copyfile(big, target)
        results["big_trace"] = {"path": os.path.relpath(big, REPO), "bytes": os.path.getsize(big)}
        big_cache = os.path.join(work, "big_cache")
        results["events_big"] = measure(folder, "events_big", big_cache)
        results["events_big_warm"] = measure(folder, "events_big", big_cache)
        parquet = glob.glob(os.path.join(big_cache, "**", "*.parquet"), recursive=True)
        results["big_parquet_bytes"] = sum(os.path.getsize(f) for f in parquet)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(args.out, "sql.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
