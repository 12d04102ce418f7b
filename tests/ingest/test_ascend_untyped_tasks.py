"""Device tasks whose "Task Type" says nothing: CANN writes `Task Type: "Other"` on every Ascend Hardware
task of some versions (274 of 276 tasks in a user's trace, whose compute then read 0.328 ms where CANN's
Overlap Analysis says 1.788 ms). The task's name tells instead: an op's name is compute, a task type's own
name (EVENT_RECORD, MEMCPY_ASYNC, Notify Wait ...) is not. The expected figure is CANN's own: the union of
the trace's "Overlap Analysis" Computing intervals, read here with json and Decimal."""
import json
import shutil
from decimal import Decimal

import numpy as np
import pytest

from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import Kind

from conftest import fixture_path

OUT = "ASCEND_PROFILER_OUTPUT"


def _union(spans) -> int:
    total, cur = 0, None
    for a, b in sorted(spans):
        if cur is None or a > cur[1]:
            total += 0 if cur is None else cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (0 if cur is None else cur[1] - cur[0])


def _ns(us) -> int:
    return int(Decimal(str(us)) * 1000)


@pytest.mark.parametrize("task_type", ["Other", "OTHER", ""])
def test_untyped_tasks_count_as_compute_by_their_names(tmp_path, task_type):
    src = fixture_path("ascend", "level1", "rank0_ascend_pt")
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    (dst / OUT / "kernel_details.csv").unlink()  # the trace's tasks are the device list
    events = json.loads((src / OUT / "trace_view.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    hardware = [e for e in events if e.get("ph") == "X" and names.get(e["pid"]) == "Ascend Hardware"]
    for e in hardware:
        e["args"]["Task Type"] = task_type
    (dst / OUT / "trace_view.json").write_text(json.dumps(events))
    computing = _union((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events if e.get("ph") == "X"
                       and names.get(e["pid"]) == "Overlap Analysis" and e["name"] == "Computing")
    t = read_ascend(str(dst))
    k = t.events["kind"] == Kind.KERNEL
    ours = _union(zip(t.events["ts"][k].tolist(), (t.events["ts"][k] + t.events["dur"][k]).tolist()))
    assert ours == pytest.approx(computing, rel=1e-5)
    # sync and copy tasks, named by their own type, stay out of compute
    kernel_names = {t.strings[i] for i in np.unique(t.events["name"][k])}
    assert not kernel_names & {"EVENT_RECORD", "EVENT_WAIT", "MEMCPY_ASYNC", "Notify Wait", "Write Value", "SDMA",
                               "PROFILING_ENABLE", "PROFILING_DISABLE"}
    copies = t.events["kind"] == Kind.MEMCPY
    assert copies.sum() == sum(1 for e in hardware if e["name"] == "MEMCPY_ASYNC")
