"""Ours, cold: a fresh process takes one Kineto trace to a full digest, with the cache removed first.

    python benchmarks/ours_cold.py <run_dir> <trace_file_name> <cache_dir>

Store(run_dir, cache_dir=cache_dir) -> runs() -> workers(run) -> windows(run, worker) -> digest(...) of the
window made of <trace_file_name>: discovery, read_kineto, build_digest, cache write. <cache_dir> is removed
before the clock starts, so nothing is reused. Last stdout line: JSON with work_s (from before the first
canning import to the digest in hand) and what was built.

Only this file and ours_warm.py know our API (docs/CONTRACTS.md); bench_ingest.py only reads the JSON.
"""
import json
import os
import shutil
import sys
import time


def find_window(store, trace_name):
    """(run, worker name, window id) of the window whose files include trace_name."""
    for run in store.runs():
        for worker in store.workers(run):
            for win in store.windows(run, worker.name):
                if any(os.path.basename(f) == trace_name for f in win.files):
                    return run, worker.name, win.id
    raise SystemExit(f"no window holds {trace_name}: runs={store.runs()}")


def digest_summary(d):
    fields = [f.name for f, _ in d.ListFields()]
    return {"digest_bytes": d.ByteSize(), "digest_fields": fields}


def timed_digest(run_dir, trace_name, cache_dir):
    """Store(run_dir) -> find_window -> digest, clocked from before the first canning import.
    Returns (digest, [run, worker, window id], {work_s, import_s, discover_s, digest_s})."""
    t0 = time.perf_counter()
    from canning_tb.store import Store
    t_imp = time.perf_counter()
    store = Store(run_dir, cache_dir=cache_dir)
    window = find_window(store, trace_name)
    t_disc = time.perf_counter()
    d = store.digest(*window)
    t1 = time.perf_counter()
    return d, list(window), {"work_s": round(t1 - t0, 3), "import_s": round(t_imp - t0, 3),
                             "discover_s": round(t_disc - t_imp, 3), "digest_s": round(t1 - t_disc, 3)}


def main() -> int:
    run_dir, trace_name, cache_dir = sys.argv[1:4]
    shutil.rmtree(cache_dir, ignore_errors=True)
    d, window, secs = timed_digest(run_dir, trace_name, cache_dir)
    print(json.dumps({"tool": "canning-tb (cold)", "ok": True, "mode": "Store.digest", **secs, "window": window,
                      **digest_summary(d)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
