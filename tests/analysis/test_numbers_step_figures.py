"""The step figures each per-rank view shows, against a second reading of the files or a hand count:
the device idle share of a DLRM rank (the trace's GPU events read with json), an Ascend rank's
compute in the ranks table (step_trace_time.csv read with csv), the mean wait of a rank over the
steps its average keeps (digests written here by hand).

Each test here was written against a one-line bug that the rest of the suite let pass (issue 24,
item 7; docs/mutants.md): communication counted as device idle, CANN's Computing taken as compute
(the overlap counted twice), the mean wait taken over every step.
"""
import csv
import gzip
import json

import pytest

from conftest import fixture_path

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import analyse_ranks
from canning_tb.analysis.summary import window_figures
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _union_us(pairs) -> int:
    total, end = 0, None
    for s, e in sorted(pairs):
        if end is None or s > end:
            total, end = total + (e - s), e
        elif e > end:
            total, end = total + (e - end), e
    return total


def test_dlrm_device_idle_is_the_step_less_all_device_work():
    """DLRM rank 0 (one step, integer µs): device idle = 1 - |union of every GPU event (kernels, NCCL
    kernels, memcpy, memset) inside ProfilerStep#10| / the step. The rank communicates for 5.5 of its
    14.5 ms: counting that as idle would say 92.7 % instead of 54.4 %."""
    (path,) = fixture_path("param", "dlrm_8ranks").glob("worker0_*")
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    (step,) = [e for e in events if e.get("name", "").startswith("ProfilerStep#")]
    lo, hi = step["ts"], step["ts"] + step["dur"]
    device = [(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in events
              if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES]
    assert max(e for _, e in device) <= hi  # all of it inside the host step: the step is ProfilerStep#10
    busy = _union_us([p for p in device if p[1] > p[0]])
    comm = _union_us([(e["ts"], e["ts"] + e["dur"]) for e in events
                      if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")])
    assert comm > 5000  # the case: most of the busy time is NCCL
    fig = window_figures(build_digest(read_kineto(str(path))))
    assert fig["average_step_ns"] == step["dur"] * 1000
    assert fig["device_idle_share"] == pytest.approx(1 - busy / step["dur"], abs=1e-9)
    assert fig["device_idle_share"] == pytest.approx(0.544, abs=5e-4)


def _csv_step(rank_dir) -> dict:
    with open(rank_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    return {k: round(float(v) * 1000) for k, v in row.items()}


def test_ascend_rank_compute_is_cann_computing_less_overlapped():
    """The ranks table of the two level1 ranks: CANN's Computing includes the computing under
    communication (Overlapped), so compute = Computing - Overlapped (4.85 ms on rank 0, not 8.87),
    overlapped = Overlapped, and compute + overlapped = Computing, as step_trace_time.csv says."""
    folder = fixture_path("ascend", "level1")
    dirs = sorted(folder.glob("rank*_ascend_pt"))
    rows = {r["rank"]: r for r in analyse_ranks([build_digest(read_ascend(str(d))) for d in dirs])["ranks"]}
    assert sorted(rows) == [0, 1]
    for rank, d in enumerate(dirs):
        cann, row = _csv_step(d), rows[rank]
        assert row["source"] == "step_trace_time.csv"
        assert abs(row["compute_ns"] - (cann["Computing"] - cann["Overlapped"])) <= 1
        assert abs(row["overlapped_ns"] - cann["Overlapped"]) <= 1
        assert abs(row["computing_ns"] - cann["Computing"]) <= 1
        assert abs(row["communication_ns"] - cann["Communication(Not Overlapped)"]) <= 1
        assert abs(row["free_ns"] - cann["Free"]) <= 1
        parts = sum(row[k] for k in ("compute_ns", "overlapped_ns", "communication_ns", "free_ns", "preparing_ns",
                                     "other_ns"))
        assert parts == row["step_ns"]
    assert rows[0]["compute_ns"] == pytest.approx(4_845_081, abs=2)


def _rank(rank: int, durations: list[int]) -> pb.Digest:
    """One AllReduce per step, step k in [1000 k, 1000 k + 1000), the call at its start."""
    d = pb.Digest()
    d.window.rank = rank
    for k, dur in enumerate(durations, start=1):
        d.steps.add(number=k, start_ns=1000 * k, dur_ns=1000)
        d.communication.calls.add(kind="AllReduce", group="g", seq=k - 1, start_ns=1000 * k, dur_ns=dur, bytes=-1,
                                  step=k, comm_type="collective", wait_ns=-1, transit_ns=-1, synchronization_ns=-1)
    d.average_steps.extend([1, 2])  # step 3 is left out of the average (a distorted last step)
    return d


def test_mean_wait_is_over_the_steps_the_average_keeps():
    """Two ranks, three steps, the average over steps 1 and 2. By hand, the torch-tb-profiler rule:
    transfer = the shorter of the two ranks' call, wait = this rank's call - transfer.
    Rank 0's calls 300, 500, 900 ns against rank 1's 100, 100, 100: waits 200, 400, 800; the mean
    step's wait is (200 + 400) / 2 = 300 (over all three steps it would be 466), the window's 1400."""
    r0, r1 = _rank(0, [300, 500, 900]), _rank(1, [100, 100, 100])
    rows = {r["rank"]: r for r in analyse_ranks([r0, r1])["ranks"]}
    assert (rows[0]["wait_ns"], rows[0]["transfer_ns"]) == (300, 100)
    assert (rows[0]["window_wait_ns"], rows[0]["window_transfer_ns"]) == (1400, 300)
    assert rows[0]["communication_total_ns"] == (300 + 500) // 2
    assert [s["wait_ns"] for s in rows[0]["per_step"]] == [200, 400, 800]
    assert (rows[1]["wait_ns"], rows[1]["transfer_ns"]) == (0, 100)
