"""Run Holistic Trace Analysis (HTA 0.5.0) on a folder of Kineto traces; write its numbers as JSON.

Runs INSIDE the peer venv (.venv-peers, `make peers`), never in the project venv:
    .venv-peers/bin/python tests/peers/hta_oracle.py <trace_dir> <out.json> [--include-last-step] [--no-ns-rounding]

Output: {"hta_version", "include_last_profiler_step", "ranks": {rank: {...}}} with, per rank,
  temporal breakdown (µs, HTA's own integer-µs arithmetic):
    idle_us, compute_us, non_compute_us, kernel_time_us
  communication/computation overlap: comp_comm_overlap_pctg (100 * overlapped comm / comm
  union, rounded by HTA to 2 decimals)
  and, from the same HTA-filtered kernel frame, the window HTA looked at (first_start_us,
  last_end_us, relative to HTA's global min ts, plus min_ts_us to undo the alignment) and the
  kernel counts per HTA kernel type, so a disagreement can be located.
Only HTA's public API (TraceAnalysis, get_temporal_breakdown, get_comm_comp_overlap) computes
the compared numbers; the extra fields are read from the frame HTA itself holds.
"""
from __future__ import annotations

import json
import logging
import math
import os
import sys
from importlib.metadata import version


def _num(x):
    x = float(x)
    return None if math.isnan(x) else x


def main(argv: list[str]) -> int:
    include_last = "--include-last-step" in argv
    if "--no-ns-rounding" in argv:  # HTA's own switch: keep float-µs (ns resolution) timestamps as they are
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    args = [a for a in argv if not a.startswith("--")]
    trace_dir, out = args[0], args[1]
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import get_kernel_type

    ta = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=include_last)
    tb = ta.get_temporal_breakdown(visualize=False)
    ov = ta.get_comm_comp_overlap(visualize=False)
    sym = ta.t.symbol_table.get_sym_table()
    ranks: dict[str, dict] = {}
    for _, r in tb.iterrows():
        ranks[str(int(r["rank"]))] = {
            "idle_us": _num(r["idle_time(us)"]), "compute_us": _num(r["compute_time(us)"]),
            "non_compute_us": _num(r["non_compute_time(us)"]), "kernel_time_us": _num(r["kernel_time(us)"]),
        }
    for _, r in ov.iterrows():
        ranks.setdefault(str(int(r["rank"])), {})["comp_comm_overlap_pctg"] = _num(r["comp_comm_overlap_pctg"])
    for rank, df in ta.t.traces.items():
        g = df[df["stream"].ne(-1)]
        kinds = g["name"].map(lambda n: get_kernel_type(sym[n]))
        d = ranks.setdefault(str(rank), {})
        d["first_start_us"] = _num(g["ts"].min()) if len(g) else None
        d["last_end_us"] = _num((g["ts"] + g["dur"]).max()) if len(g) else None
        d["kernels_by_type"] = {str(k): int(v) for k, v in kinds.value_counts().items()}
    res = {"hta_version": version("HolisticTraceAnalysis"), "include_last_profiler_step": include_last,
           "ns_rounding": os.environ.get("HTA_DISABLE_NS_ROUNDING") != "1",
           "min_ts_us": _num(ta.t.min_ts), "ranks": ranks}
    with open(out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
