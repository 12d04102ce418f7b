"""HTA 0.5.0's critical path of each instance of one annotation on rank 0, as JSON (run in .venv-peers).

    python hta_critical_path.py TRACE_DIR ANNOTATION INSTANCES OUT.json

Per instance: whether HTA's analysis succeeded, the first and last event of its path (HTA's own time base:
microseconds from its origin), the annotation's start in that time base (to align with the file's clock),
and the path's microseconds per HTA "bound_by" class.
"""
import json
import logging
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main(trace_dir: str, annotation: str, instances: int, out: str) -> None:
    ta = TraceAnalysis(trace_dir=trace_dir)
    df = ta.t.get_trace(0)
    ann = df[df["name"] == ta.t.symbol_table.sym_index[annotation]].sort_values("ts")
    rows = []
    for inst in range(instances):
        graph, ok = ta.critical_path_analysis(rank=0, annotation=annotation, instance_id=inst)
        cp = graph.get_critical_path_breakdown()
        ev = df.loc[cp["event_idx"].dropna().astype(int)]
        rows.append({"ok": bool(ok), "annotation_ts_us": int(ann["ts"].iloc[inst]),
                     "start_us": int(ev["ts"].min()), "end_us": int((ev["ts"] + ev["dur"]).max()),
                     "bound_by_us": {k: float(v) for k, v in cp.groupby("bound_by")["duration"].sum().items() if k}})
    with open(out, "w") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
