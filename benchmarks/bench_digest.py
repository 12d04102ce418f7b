"""Digest benchmark: build_digest alone, on one big window already read.

    .venv/bin/python benchmarks/bench_digest.py --trace benchmarks/out/long/run [--save PREFIX] [--repeat 3]
    .venv/bin/python benchmarks/bench_digest.py --table PREFIX [--repeat 3]

--trace reads the first window of the run folder once (through Store, as a viewer would; `--save` keeps the
table as PREFIX.npz / PREFIX.json for later runs); --table loads such a saved table (EventTable.load), which
takes seconds instead of the tens a 1 GB read takes. Then build_digest runs --repeat times on the same table
and the median wall and CPU seconds are printed (CPU: this process's user + system time; on a shared
machine wall time includes waiting for a core, CPU time does not).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from canning_tb.analysis.build import build_digest  # noqa: E402
from canning_tb.ingest.table import EventTable  # noqa: E402
from canning_tb.store import Store  # noqa: E402
from canning_tb.store.store import read_window  # noqa: E402


def read_first_window(run_dir: str) -> EventTable:
    with tempfile.TemporaryDirectory() as cache:
        store = Store(run_dir, cache_dir=cache)
        run = store.runs()[0]
        worker = store.workers(run)[0]
        return read_window(store.windows(run, worker.name)[0])


def timed_digests(table: EventTable, repeat: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        build_digest(table)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", help="a run folder; its first window is read once")
    source.add_argument("--table", help="prefix of a table saved by --save (PREFIX.npz + PREFIX.json)")
    parser.add_argument("--save", help="with --trace: save the table under this prefix")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.trace:
        table = read_first_window(args.trace)
        if args.save:
            table.save(args.save)
    else:
        table = EventTable.load(args.table)
    walls, cpus = timed_digests(table, args.repeat)
    print(f"events {len(table)}  build_digest x{args.repeat}: median wall {statistics.median(walls):.3f} s, "
          f"median CPU {statistics.median(cpus):.3f} s  (wall {', '.join(f'{w:.3f}' for w in walls)}; "
          f"CPU {', '.join(f'{c:.3f}' for c in cpus)}: the first call of a process pays for fresh memory)")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
