"""Peer: Holistic Trace Analysis 0.5.0 loading one trace folder.

Run with the peer's own venv (benchmarks/.venvs/hta):
    python benchmarks/peers/hta_load.py <trace_dir>

Times the TraceAnalysis(trace_dir=...) constructor, which parses every trace in the folder into pandas
(Trace.load_traces: json.loads, DataFrame, _compress_df, fwd/bwd links, correlation index, iteration
assignment) with HTA's default parser config. HTA takes every *.json / *.gz file in trace_dir as a trace and
keys it by "distributedInfo": {"rank": N} (missing: rank 0 with a warning), so the harness gives it a folder
holding only the one trace (benchmarks/out/<size>/hta/, a symlink to the run's trace file).
Last stdout line: JSON with load_s and the resulting frame size.
"""
import json
import os
import sys
import time


def main() -> int:
    trace_dir = os.path.abspath(sys.argv[1])
    t_imp = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis
    import_s = time.perf_counter() - t_imp

    t0 = time.perf_counter()
    ta = TraceAnalysis(trace_dir=trace_dir)
    load_s = time.perf_counter() - t0
    traces = ta.t.traces
    rows = {int(r): int(len(df)) for r, df in traces.items()}
    print(json.dumps({"tool": "HTA 0.5.0", "ok": bool(rows), "load_s": round(load_s, 3),
                      "import_s": round(import_s, 3), "ranks": sorted(rows), "rows": rows}))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
