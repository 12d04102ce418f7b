"""A step_trace_time.csv without Preparing or Bubble columns (the columns differ between torch_npu / CANN
versions): the cross-rank row says those figures are unknown (-1, shown "-"), never 0, and the rest of the
step stays the file's own figures.

Expected values are second readings of the fixture's CSV (csv module, by hand), never the code under test."""
import csv
import io
from pathlib import Path

from _ascend_sets import OUT
from test_xrank_sets import copy_level1, csv_rows, digests_of, us_ns

from canning_tb.analysis.cluster import analyse_ranks


def _drop_columns(path: Path, drop: set[str]) -> list[dict]:
    """Rewrite the CSV without `drop`; return its rows as they were (every column)."""
    rows = csv_rows(path)
    keep = [h for h in rows[0] if h not in drop]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, keep, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())
    return rows


def _run(tmp_path: Path, drop: set[str]) -> tuple[dict, list[dict], list[dict]]:
    run = copy_level1(tmp_path)
    before = _drop_columns(run / "rank1_ascend_pt" / OUT / "step_trace_time.csv", drop)
    rank0 = csv_rows(run / "rank0_ascend_pt" / OUT / "step_trace_time.csv")
    return analyse_ranks(digests_of(run)), rank0, before


def test_a_step_trace_without_preparing_and_bubble_says_unknown(tmp_path):
    r, rank0, rank1 = _run(tmp_path, {"Preparing", "Bubble"})
    assert r["breakdown_source"] != "trace"
    rows = {x["rank"]: x for x in r["ranks"]}
    (st1,) = rank1
    one = rows[1]
    assert one["preparing_ns"] == -1 and one["bubble_ns"] == -1
    # the figures the file still has are its own
    assert one["free_ns"] == us_ns(st1["Free"])
    assert one["communication_ns"] == us_ns(st1["Communication(Not Overlapped)"])
    assert one["compute_ns"] == us_ns(st1["Computing"]) - us_ns(st1["Overlapped"])
    # the parts that are known, plus Other (the rest of the step: the unknown Preparing is in it), make the step
    known = [one[k] for k in ("compute_ns", "overlapped_ns", "communication_ns", "free_ns", "other_ns")]
    assert sum(known) == one["step_ns"] and one["other_ns"] >= 0
    # rank 0's file is whole: its Preparing and Bubble are its own
    (st0,) = rank0
    assert rows[0]["preparing_ns"] == us_ns(st0["Preparing"]) and rows[0]["bubble_ns"] == us_ns(st0["Bubble"])
    # the per-step rows say the same of rank 1's step
    (step,) = one["per_step"]
    assert step["preparing_ns"] == -1
    assert sum(step[k] for k in ("compute_ns", "overlapped_ns", "communication_ns", "free_ns", "other_ns")) \
        == step["step_ns"]
