"""The findings lab's table: predicted against measured gain per pair (tests/_lab.py, tests/lab/test_lab.py).

    PYTHONPATH=$PWD/src python benchmarks/lab.py [PAIR ...] [--repeat N]

Runs each pair's jobs (real CPU workloads, 2-rank ones as real gloo jobs) in interleaved order (before,
after, after, before; --repeat 2 doubles it), prints the table as markdown and writes it to
benchmarks/out/lab.md, with every figure in benchmarks/out/lab.json. The machine's load shows in the step
times; the interleaving makes it fall on both sides alike.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the lab's harness, shared with its tests
sys.path.insert(0, str(REPO / "src"))

from _lab import BAND, ORDER, PAIRS, run_pair, table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*", choices=[[]] + list(PAIRS), help="pairs to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="times the interleaved order runs (default 1: 4 jobs)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="canning-lab-") as tmp:
        for name in args.pairs or list(PAIRS):
            t0 = time.perf_counter()
            result = run_pair(name, Path(tmp) / name, order=ORDER * args.repeat)
            row = result.row()
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            print(f"{name}: predicted {row['predicted_ms']:.2f}, measured {row['measured_ms']:.2f} ms/step "
                  f"({row['wall_s']:.0f} s)", file=sys.stderr, flush=True)
    md = (f"# Findings lab: predicted against measured gain per step (band ±{BAND:.0%})\n\n"
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, jobs in the order "
          f"{', '.join(ORDER * args.repeat)}. Measured: the jobs' own timer over the profiled steps "
          f"(unprofiled steps after the window in the last column); predicted: the finding's gain_ns.\n\n"
          + table(rows) + "\n")
    (out / "lab.md").write_text(md)
    (out / "lab.json").write_text(json.dumps(rows, indent=1, default=str))
    print(md)


if __name__ == "__main__":
    main()
