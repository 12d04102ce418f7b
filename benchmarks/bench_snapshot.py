"""Memory snapshot reading: canning-tb's reader (a restricted unpickler, then columns) and its whole analysis
against a plain `pickle.load` and PyTorch's own `python -m torch.cuda._memory_viz stats`, on the largest fixture
and on a synthetic snapshot built by repeating the fixture's history.

    python benchmarks/bench_snapshot.py [--mb 300] [--out out/snapshot]

The synthetic file: the largest fixture's trace entries repeated, each copy's addresses shifted past the last so
that allocs and frees still pair, frames shared as the allocator shares them (the pickle's memo), until the file
is about --mb MB (built in a child process, so that this one stays small: Linux counts the parent's pages in a
child's peak RSS when the child is started by vfork). Each reading runs in its own fresh process (wall time,
CPU, peak RSS of that process).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
SRC = os.path.join(ROOT, "src")

READERS = {
    "pickle.load": "import pickle,sys\nwith open(sys.argv[1],'rb') as f: d=pickle.load(f)\nprint(len(d['device_traces'][0]))",
    "canning read": ("import sys\nfrom canning_tb.ingest.snapshot import read_snapshot\n"
                     "s=read_snapshot(sys.argv[1])\nprint(len(s.tr_action))"),
    "canning read + analysis": ("import sys\nfrom canning_tb.ingest.snapshot import read_snapshot\n"
                                "from canning_tb.analysis.memory_snapshot.summary import summarize\n"
                                "d=summarize(read_snapshot(sys.argv[1]))\nprint(d['entries'])"),
    "memory_viz stats": None,  # python -m torch.cuda._memory_viz stats FILE
}


def largest_fixture() -> str:
    folder = os.path.join(FIXTURES, "memory_snapshot")
    return max((os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".pkl")), key=os.path.getsize)


def build_synthetic(src: str, out: str, mb: int) -> str:
    """The fixture's history repeated to about `mb` MB (module doc); kept when already built at that size."""
    if os.path.exists(out) and abs(os.path.getsize(out) / 2**20 - mb) < mb * 0.2:
        return out
    with open(src, "rb") as f:
        d = pickle.load(f)  # our own trusted fixture
    trace = d["device_traces"][0]
    one = len(pickle.dumps(trace))
    copies = max(1, int(mb * 2**20 / one))
    span = max(e.get("addr", 0) + e.get("size", 0) for e in trace) - min(e.get("addr", 1 << 62) for e in trace) + 1
    grown = []
    for c in range(copies):
        shift = c * span
        grown.extend({**e, "addr": e["addr"] + shift} if "addr" in e else e for e in trace)
    d["device_traces"][0] = grown
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "wb") as f:
        pickle.dump(d, f, protocol=4)
    os.replace(out + ".tmp", out)
    return out


def measure(name: str, path: str) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = ([sys.executable, "-m", "torch.cuda._memory_viz", "stats", path] if READERS[name] is None
           else [sys.executable, "-c", READERS[name], path])
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode()[-300:]
    proc.stderr.close()
    return {"reader": name, "ok": os.waitstatus_to_exitcode(status) == 0, "wall_s": round(wall, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "error": "" if os.waitstatus_to_exitcode(status) == 0 else err}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "snapshot"))
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    src = largest_fixture()
    synthetic = os.path.join(args.out, f"synthetic_{args.mb}mb.pickle")
    if args.build_only:
        build_synthetic(src, synthetic, args.mb)
        return 0
    subprocess.run([sys.executable, __file__, "--build-only", "--mb", str(args.mb), "--out", args.out], check=True)
    files = [src, synthetic]
    rows = []
    for path in files:
        size = os.path.getsize(path) / 2**20
        for name in READERS:
            row = {"file": os.path.basename(path), "file_mib": round(size, 1), "load": os.getloadavg()[0],
                   **measure(name, path)}
            rows.append(row)
            print(f"{row['file']:<44} {row['file_mib']:>7.1f} MiB  {name:<24} wall {row['wall_s']:>7.2f} s  "
                  f"cpu {row['cpu_s']:>7.2f} s  peak {row['peak_rss_mib']:>8.1f} MiB  {'' if row['ok'] else row['error']}",
                  flush=True)
    with open(os.path.join(args.out, "results_snapshot.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
