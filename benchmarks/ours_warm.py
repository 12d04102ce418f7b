"""Ours, warm: a second fresh process opens the same window's digest from the cache ours_cold.py filled.

    python benchmarks/ours_warm.py <run_dir> <trace_file_name> <cache_dir>

Last stdout line: JSON with work_s (from before the first canning import to the digest in hand: Store
discovery + cached digest load) and reopen_imported_s (the same open once more in the same process, with
a new Store: what a running TensorBoard pays, its modules imported). The whole-process wall time (interpreter start included) is measured
outside, by bench_ingest.py.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ours_cold import digest_summary, find_window, timed_digest  # noqa: E402  (no canning import)


def main() -> int:
    run_dir, trace_name, cache_dir = sys.argv[1:4]
    if not os.path.isdir(cache_dir):
        raise SystemExit(f"no cache at {cache_dir}: run ours_cold.py first")
    d, window, secs = timed_digest(run_dir, trace_name, cache_dir)
    t1 = time.perf_counter()
    # the same open again in this process, modules already imported (as in a running TensorBoard): a new
    # Store has an empty in-memory LRU, so this is discovery + cache file read + protobuf parse
    from canning_tb.store import Store
    store2 = Store(run_dir, cache_dir=cache_dir)
    store2.digest(*find_window(store2, trace_name))
    t2 = time.perf_counter()
    print(json.dumps({"tool": "canning-tb (warm)", "ok": True, "mode": "Store.digest (cached)",
                      "work_s": secs.pop("work_s"), "reopen_imported_s": round(t2 - t1, 3), **secs,
                      "window": window, **digest_summary(d)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
