"""What the dependency graph costs: the digest of one window with and without it (its critical paths and the
replays that give the findings' gains), and the cross-rank critical path of many ranks from their digests.

    .venv/bin/python benchmarks/bench_graph.py [--kineto TRACE] [--ascend RANK_DIR] [--ranks 1024] [--repeat 3] [--rss]

Each figure is the best of --repeat runs in this process (the read too, each table let go before the next),
so a load spike on a shared machine falls on both sides alike. --rss: the peak RSS of read + digest, with and without
the graph, each in a fresh child process (its VmHWM: one case never inherits another's pages). Writes
benchmarks/out/graph.json and prints a table.
Defaults: the traces `bench_native.py` grows (benchmarks/out/native/), the DLRM fixture's 8 ranks copied to
--ranks ranks (make_ranks.py).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))


def best(fn, repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds of this process) over `repeat` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def label(path: str) -> str:
    return "/".join(os.path.normpath(path).split(os.sep)[-3:])


def window(path: str, reader, repeat: int) -> dict:
    """Read best of `repeat` (each table let go before the next read: never two in memory), then the digest
    without and with the graph on the last one. CPU seconds: this process's (the digest runs in it alone), the
    figure a loaded machine moves least."""
    from canning_tb.analysis.build import build_digest
    held = []
    read_s, _ = best(lambda: (held.clear(), held.append(reader(path))), repeat)
    table = held[0]
    without, without_cpu = best(lambda: build_digest(table, graph=False), repeat)
    with_graph, with_cpu = best(lambda: build_digest(table), repeat)
    return {"file": path, "events": len(table), "read_s": round(read_s, 3), "digest_without_graph_s": round(without, 3),
            "digest_with_graph_s": round(with_graph, 3),
            "digest_cpu_s": [round(without_cpu, 3), round(with_cpu, 3)],
            "added_to_digest": round((with_graph - without) / without, 3),
            "added_to_read_and_digest": round((with_graph - without) / (read_s + without), 3)}


def child(kind: str, path: str, graph: bool) -> None:
    """One read + digest in this (fresh) process; prints its own peak RSS: VmHWM, not ru_maxrss, which keeps the
    forked parent's RSS across the exec."""
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.ascend.read import read_ascend
    from canning_tb.ingest.kineto.read import read_kineto
    t = time.perf_counter()
    table = (read_kineto if kind == "kineto" else read_ascend)(path)
    build_digest(table, graph=graph)
    with open("/proc/self/status") as f:
        hwm_kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"peak_rss_mib": round(hwm_kb / 1024),
                      "read_and_digest_s": round(time.perf_counter() - t, 2)}))


def peak_rss(kind: str, path: str) -> dict:
    """Peak RSS of read + digest without and with the graph, one fresh child each, one after the other."""
    import subprocess
    out = {}
    for graph in (False, True):
        res = subprocess.run([sys.executable, __file__, "--child", kind, path, "1" if graph else "0"],
                             check=True, capture_output=True, text=True)
        out["graph" if graph else "no_graph"] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def ranks(count: int, repeat: int) -> dict:
    from canning_tb.analysis.build import build_digest
    from canning_tb.analysis.cluster import rank_ids
    from canning_tb.analysis.graph.ranks import cross_rank_paths, skeleton
    from canning_tb.ingest.kineto.read import read_kineto
    with tempfile.TemporaryDirectory() as tmp:
        import subprocess
        subprocess.run([sys.executable, os.path.join(HERE, "make_ranks.py"), "--ranks", str(count), "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        files = sorted(glob.glob(os.path.join(tmp, "*.pt.trace.json.gz")))
        digests = [build_digest(read_kineto(f)) for f in files[:8]]
    # the 8 real ranks' digests stand for each copy (what each rank summarised at the source): re-ranked
    many = []
    for r in range(count):
        d = type(digests[0])()
        d.CopyFrom(digests[r % 8])
        d.window.rank = r
        many.append(d)
    ids = rank_ids(many)
    seconds, _ = best(lambda: cross_rank_paths(skeleton(many, ids)), repeat)
    return {"ranks": count, "calls": sum(len(d.communication.calls) for d in many), "critical_path_s": round(seconds, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    out_native = os.path.join(HERE, "out", "native")
    ap.add_argument("--kineto", default=next(iter(sorted(glob.glob(f"{out_native}/kineto_*/*.pt.trace.json"))), None))
    ap.add_argument("--ascend", default=next(iter(sorted(glob.glob(f"{out_native}/ascend_*/*_ascend_pt"))), None))
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rss", action="store_true", help="also the peak RSS with and without the graph")
    ap.add_argument("--no-ranks", action="store_true", help="skip the cross-rank critical path")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "GRAPH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], args.child[2] == "1")
    from canning_tb.ingest.ascend.read import read_ascend
    from canning_tb.ingest.kineto.read import read_kineto
    result = {"windows": [], "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "load": os.getloadavg()[0]}
    for kind, path, reader in (("kineto", args.kineto, read_kineto), ("ascend", args.ascend, read_ascend)):
        if path:
            w = window(path, reader, args.repeat)
            if args.rss:  # after this process let its window go: never two big windows in memory at once
                w["peak_rss"] = peak_rss(kind, path)
            result["windows"].append(w)
    if not args.no_ranks:
        result["ranks"] = ranks(args.ranks, args.repeat)
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "graph.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("| window | events | read s | digest s (no graph) | digest s (graph) | digest CPU s (no graph / graph) "
          "| added to digest | added to read + digest |")
    print("|---|---|---|---|---|---|---|---|")
    for w in result["windows"]:
        print(f"| {label(w['file'])} | {w['events']:,} | {w['read_s']} | {w['digest_without_graph_s']} | "
              f"{w['digest_with_graph_s']} | {w['digest_cpu_s'][0]} / {w['digest_cpu_s'][1]} | "
              f"{100 * w['added_to_digest']:.0f} % | {100 * w['added_to_read_and_digest']:.0f} % |")
    for w in result["windows"]:
        if "peak_rss" in w:
            p = w["peak_rss"]
            print(f"peak RSS of read + digest, {label(w['file'])}: "
                  f"{p['no_graph']['peak_rss_mib']:,} MiB without the graph, {p['graph']['peak_rss_mib']:,} MiB with it")
    if "ranks" not in result:
        return
    r = result["ranks"]
    print(f"\ncross-rank critical path of {r['ranks']} ranks ({r['calls']:,} calls): {r['critical_path_s']} s "
          f"(load {result['load']:.1f})")


if __name__ == "__main__":
    main()
