"""The cross-rank model (analysis/cluster.py, cluster_rows.py) on digests made by hand: the survivors of
issue 46's mutation run over these modules. Every expected number is worked out by hand in the comments
(ns throughout), never read from the code under test."""
import numpy as np

from test_analysis_synthetic import K, mk

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import (CallTable, Cells, _match_calls, _ring_sends, _slow_ranks, _stat_bytes,
                                         analyse_ranks, matrix_cells, rank_ids,
                                         rank_numbers)
from canning_tb.analysis.cluster_rows import cann_columns, trace_columns

AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
ANSWER_KEYS = ["breakdown_source", "clock_offsets", "collectives", "compute_source", "coverage", "critical_path",
               "distributions", "groups", "matrix", "matrix_bins", "matrix_cells", "matrix_source",
               "matrix_truncated", "matrix_unmapped", "rank_heatmap", "ranks", "slow_ranks", "unmatched",
               "world_size", "world_size_source"]
ROW_INTS = ("step_ns", "compute_ns", "overlapped_ns", "communication_ns", "free_ns", "preparing_ns", "other_ns",
            "computing_ns")


def test_rank_numbers_keep_distinct_ranks_and_number_repeated_ones():
    assert rank_numbers([3, 1]) == [3, 1]
    assert rank_numbers([2, 2, 5]) == [0, 1, 2]  # rank 2 twice: by position
    five, seven, bare = pb.Digest(), pb.Digest(), pb.Digest()
    five.window.rank, seven.window.rank = 5, 7
    assert rank_ids([five, seven]) == [5, 7]
    assert rank_ids([five, bare]) == [5, 1]  # no window: its position (1), not the unset rank 0


def _gpu_rank(rank: int):
    """Step [0, 1000), gemm [0, 300), an AllReduce of 800 bytes [200, 400): compute (not under the
    collective) [0, 200) = 200, overlapped [200, 300) = 100, communication not overlapped [300, 400) = 100,
    free 1000 - 200 - 100 - 100 = 600, computing 200 + 100 = 300."""
    return build_digest(mk([dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
                            dict(ts=0, dur=300, kind=K.KERNEL, name="gemm"),
                            dict(ts=200, dur=200, kind=K.COMM_KERNEL, name=AR, bytes=800)], rank=rank))


def test_answer_of_two_gpu_ranks_given_out_of_order():
    r = analyse_ranks([_gpu_rank(1), _gpu_rank(0)])
    assert sorted(r) == ANSWER_KEYS
    assert [row["rank"] for row in r["ranks"]] == [0, 1]
    for row in r["ranks"]:
        assert [row[f] for f in ROW_INTS] == [1000, 200, 100, 100, 600, -1, 0, 300]
        assert all(type(row[f]) is int for f in ROW_INTS)  # JSON: ints stay ints
        assert (row["source"], row["wait_source"]) == ("trace", "matched calls")
        (step,) = row["per_step"]
        assert [step[f] for f in ROW_INTS] == [1000, 200, 100, 100, 600, -1, 0, 300]
    assert (r["compute_source"], r["breakdown_source"], r["matrix_source"]) == ("device", "trace", "ring")
    # the ring: n = 2, AllReduce 2 (n - 1) / n x 800 = 800 to the other rank; 2 cells, none dropped
    assert r["matrix"] == [{"src": src, "dst": dst, "transport": "ring", "group": "", "group_label": "", "bytes": 800,
                            "time_ns": 0, "bandwidth_gbps": -1.0} for src, dst in ((0, 1), (1, 0))]
    assert r["matrix_truncated"] is False
    assert r["clock_offsets"] == [{"rank": 0, "offset_ns": 0, "aligned": True},
                                  {"rank": 1, "offset_ns": 0, "aligned": True}]  # both steps start at 0


def _gloo_rank(rank: int):
    """CPU only: step [0, 100), c10d::allreduce_ [10, 50) around gloo:all_reduce [15, 35), aten::mm [60, 70).
    Communication = the gloo range, 20; host work = [10, 15) + [35, 50) + [60, 70) = 30; no device work."""
    return build_digest(mk([dict(ts=0, dur=100, kind=K.USER_ANNOTATION, name="ProfilerStep#0"),
                            dict(ts=10, dur=40, kind=K.CPU_OP, name="c10d::allreduce_"),
                            dict(ts=15, dur=20, kind=K.USER_ANNOTATION, name="gloo:all_reduce"),
                            dict(ts=60, dur=10, kind=K.CPU_OP, name="aten::mm")], rank=rank))


def test_cpu_only_ranks_count_host_work_as_compute():
    r = analyse_ranks([_gloo_rank(0), _gloo_rank(1)])
    assert r["compute_source"] == "host"
    for row in r["ranks"]:
        # compute = host 30, overlapped 0, communication 20, free 100 - 30 - 20 = 50, computing 30
        assert [row[f] for f in ROW_INTS] == [100, 30, 0, 20, 50, -1, 0, 30]
        assert [row["per_step"][0][f] for f in ROW_INTS] == [100, 30, 0, 20, 50, -1, 0, 30]


def test_trace_columns_free_time_never_below_zero():
    d = pb.Digest()
    # parts 60 + 30 + 20 = 110 over a step of 100: free max(100 - 110, 0) = 0, computing 60 + 30 = 90
    d.average.total_ns, d.average.compute_ns, d.average.overlapped_ns, d.average.communication_ns = 100, 60, 30, 20
    d.average.host_ns = 5
    cols = {k: v.tolist() for k, v in trace_columns([d], False).items()}
    assert cols == {"step_ns": [100], "compute_ns": [60], "overlapped_ns": [30], "communication_ns": [20],
                    "free_ns": [0], "preparing_ns": [-1], "other_ns": [0], "computing_ns": [90]}
    # on the host: compute = host 5, free 100 - 5 - 30 - 20 = 45
    assert trace_columns([d], True)["free_ns"].tolist() == [45]


def _cann(digest, step, computing, ov, comm, free, preparing, bubble, source="step_trace_time.csv"):
    digest.cann_steps.add(step=step, computing_ns=computing, overlapped_ns=ov, communication_not_overlapped_ns=comm,
                          free_ns=free, preparing_ns=preparing, bubble_ns=bubble, source=source)


def test_cann_columns_by_hand():
    a, b, c = pb.Digest(), pb.Digest(), pb.Digest()
    # a: mean over its kept steps 1 and 2 (step 3 not kept): computing (600 + 700) / 2 = 650, overlapped 150,
    # communication 200, free 50, preparing 50 (step 2 does not know it), bubble 20; compute 650 - 150 = 500,
    # other 1000 - 650 - 200 - 50 - 50 = 50, CANN's step 650 + 200 + 50 = 900
    a.average.total_ns = 1000
    a.average_steps.extend([1, 2])
    _cann(a, 1, 600, 100, 150, 100, 50, 20)
    _cann(a, 2, 700, 200, 250, 0, -1, -1)
    _cann(a, 3, 9000, 9000, 9000, 9000, 9000, 9000)
    # b: no kept step among CANN's (7): all of them; computing unknown stays -1 (compute too), other
    # max(400 - 0 - 300 - 200 - 0, 0) = 0, CANN's step 0 + 300 + 200 = 500
    b.average.total_ns = 400
    b.average_steps.append(7)
    _cann(b, 1, -1, 0, 300, 200, -1, -1)
    # c: every figure 0: compute max(0 - 0, 0) = 0 (known), other 10, CANN's step 0
    c.average.total_ns = 10
    _cann(c, 1, 0, 0, 0, 0, 0, 0)
    cols = {k: v.tolist() for k, v in cann_columns([a, b, c]).items()}
    assert cols == {"step_ns": [1000, 400, 10], "compute_ns": [500, -1, 0], "overlapped_ns": [150, 0, 0],
                    "communication_ns": [200, 300, 0], "free_ns": [50, 200, 0], "preparing_ns": [50, -1, 0],
                    "other_ns": [50, 0, 10], "computing_ns": [650, -1, 0], "cann_step_ns": [900, 500, 0],
                    "bubble_ns": [20, -1, 0]}


def test_breakdown_source_is_the_lowest_ranks_file():
    zero, one = _gpu_rank(0), _gpu_rank(1)
    # both: computing 400, overlapped 100, communication 50, free 500, preparing 20: compute 400 - 100 = 300,
    # other 1000 - 400 - 50 - 500 - 20 = 30, CANN's step 400 + 50 + 500 = 950; rank 1's row is for step 5, a
    # step its trace does not have: its step 1 keeps the trace's split (see _gpu_rank)
    _cann(zero, 1, 400, 100, 50, 500, 20, 0, "step_trace_time.csv")
    _cann(one, 5, 400, 100, 50, 500, 20, 0, "analysis.db")
    r = analyse_ranks([one, zero])
    assert r["breakdown_source"] == "step_trace_time.csv"
    assert [(row["rank"], row["source"], row["steps"]) for row in r["ranks"]] == [
        (0, "step_trace_time.csv", 1), (1, "analysis.db", 1)]
    for row in r["ranks"]:
        assert [row[f] for f in ROW_INTS + ("cann_step_ns", "bubble_ns")] == [1000, 300, 100, 50, 500, 20, 30, 400,
                                                                                950, 0]
    steps = [row["per_step"][0] for row in r["ranks"]]
    assert [steps[0][f] for f in ROW_INTS] == [1000, 300, 100, 50, 500, 20, 30, 400]
    assert all(type(steps[0][f]) is int for f in ROW_INTS)
    assert [steps[1][f] for f in ROW_INTS] == [1000, 200, 100, 100, 600, -1, 0, 300]


def _call(digest, kind, group, dur, nbytes, wait, transit, comm_type="collective", seq=0):
    digest.communication.calls.add(kind=kind, group=group, start_ns=seq * 100, dur_ns=dur, bytes=nbytes, seq=seq,
                                   wait_ns=wait, transit_ns=transit, comm_type=comm_type)


def test_collective_rows_by_hand():
    d0, d1 = pb.Digest(), pb.Digest()
    d1.communication.source = "communication.json"
    _call(d0, "AllReduce", "g1", 10, -1, 0, 10)  # measured by CANN on both ranks, no wait anywhere
    _call(d1, "AllReduce", "g1", 12, 0, 0, 12)
    _call(d0, "Send", "p", 5, 100, -1, -1, "p2p")  # unmeasured, its wait unknown
    _call(d0, "AllGather", "g2", 30, -1, 1, 0)  # measured (transit 0) on rank 0 only, no source named
    _call(d0, "Broadcast", "g1", 2, 8, -1, -1, seq=0)  # unmeasured: matched calls; rank 0 calls it twice
    _call(d0, "Broadcast", "g1", 3, -1, -1, -1, seq=1)
    _call(d1, "Broadcast", "g1", 4, 16, -1, -1)
    _call(d0, "Reduce", "g1", 4, -1, -1, 5)  # transit without wait: not measured
    _call(d0, "AllToAll", "g1", 1, -1, -1, -1, seq=0)  # unmatched too, and sorts before Broadcast
    _call(d0, "AllToAll", "g1", 1, -1, -1, -1, seq=1)
    _call(d1, "AllToAll", "g1", 1, -1, -1, -1)
    ranks = np.array([0, 1])
    calls = CallTable.of(ranks, [d0, d1])
    sums = {(0, "AllReduce", "g1"): (0, 10), (1, "AllReduce", "g1"): (0, 12), (0, "Send", "p"): (-1, -1),
            (0, "AllGather", "g2"): (5, 7), (0, "Broadcast", "g1"): (3, 4), (1, "Broadcast", "g1"): (0, 4),
            (0, "Reduce", "g1"): (2, 2), (0, "AllToAll", "g1"): (3, 2), (1, "AllToAll", "g1"): (-1, -1)}
    _slots, rows, unmatched = _match_calls(calls, ranks, sums, {(1, "Broadcast", "g1"): 64})
    # by total time: AllGather 30, AllReduce 10 + 12 = 22, Broadcast 2 + 3 + 4 = 9, Send 5, Reduce 4, AllToAll 3
    assert rows == [
        {"kind": "AllGather", "group": "g2", "comm_type": "collective", "ranks": 1, "calls": 1, "matched_calls": 1,
         "total_ns": 30, "bytes": -1, "wait_ns": 5, "transfer_ns": 7, "wait_source": "CANN",
         "per_rank": {"0": {"calls": 1, "total_ns": 30, "wait_ns": 5, "transfer_ns": 7}}},
        # bytes: rank 0 knows none (-1), rank 1 moved 0: 0, known
        {"kind": "AllReduce", "group": "g1", "comm_type": "collective", "ranks": 2, "calls": 2, "matched_calls": 1,
         "total_ns": 22, "bytes": 0, "wait_ns": 0, "transfer_ns": 22, "wait_source": "communication.json",
         "per_rank": {"0": {"calls": 1, "total_ns": 10, "wait_ns": 0, "transfer_ns": 10},
                      "1": {"calls": 1, "total_ns": 12, "wait_ns": 0, "transfer_ns": 12}}},
        # bytes: rank 0's known call sizes 8, rank 1's collective table 64 (over its calls' 16): 72
        {"kind": "Broadcast", "group": "g1", "comm_type": "collective", "ranks": 2, "calls": 3, "matched_calls": 1,
         "total_ns": 9, "bytes": 72, "wait_ns": 3, "transfer_ns": 8, "wait_source": "matched calls",
         "per_rank": {"0": {"calls": 2, "total_ns": 5, "wait_ns": 3, "transfer_ns": 4},
                      "1": {"calls": 1, "total_ns": 4, "wait_ns": 0, "transfer_ns": 4}}},
        {"kind": "Send", "group": "p", "comm_type": "p2p", "ranks": 1, "calls": 1, "matched_calls": 1,
         "total_ns": 5, "bytes": 100, "wait_ns": -1, "transfer_ns": -1, "wait_source": "",
         "per_rank": {"0": {"calls": 1, "total_ns": 5, "wait_ns": -1, "transfer_ns": -1}}},
        {"kind": "Reduce", "group": "g1", "comm_type": "collective", "ranks": 1, "calls": 1, "matched_calls": 1,
         "total_ns": 4, "bytes": -1, "wait_ns": 2, "transfer_ns": 2, "wait_source": "matched calls",
         "per_rank": {"0": {"calls": 1, "total_ns": 4, "wait_ns": 2, "transfer_ns": 2}}},
        # rank 1's wait unknown: the collective's too (not 3 - 1)
        {"kind": "AllToAll", "group": "g1", "comm_type": "collective", "ranks": 2, "calls": 3, "matched_calls": 1,
         "total_ns": 3, "bytes": -1, "wait_ns": -1, "transfer_ns": -1, "wait_source": "",
         "per_rank": {"0": {"calls": 2, "total_ns": 2, "wait_ns": 3, "transfer_ns": 2},
                      "1": {"calls": 1, "total_ns": 1, "wait_ns": -1, "transfer_ns": -1}}}]
    numbers = [v for row in rows for v in list(row.values()) + [x for p in row["per_rank"].values() for x in p.values()]
               if not isinstance(v, (str, dict))]
    assert all(type(v) is int for v in numbers)  # JSON: ints stay ints
    # by (kind, group), not by first appearance
    assert unmatched == [{"kind": "AllToAll", "group": "g1", "calls": {"0": 2, "1": 1}},
                         {"kind": "Broadcast", "group": "g1", "calls": {"0": 2, "1": 1}}]


def test_cells_summed_per_pair_and_key():
    empty = np.zeros(0, np.int64)
    c = Cells.summed(empty, empty, empty, empty, empty, [])
    assert [c.src.tolist(), c.dst.tolist(), c.transport, c.group, c.bytes.tolist(), c.time_ns.tolist()] == [[]] * 6
    src, dst, key = np.array([5, 5, 2, 5]), np.array([2, 2, 5, 2]), np.array([1, 1, 0, 0])
    nbytes, ns = np.array([10, 20, 7, 3]), np.array([1, 2, 3, 4])
    c = Cells.summed(src, dst, key, nbytes, ns, [("HCCS", "g"), ("RDMA", "h")])
    # (2, 5, HCCS): 7 in 3; (5, 2, HCCS): 3 in 4; (5, 2, RDMA): 10 + 20 = 30 in 1 + 2 = 3
    got = list(zip(c.src.tolist(), c.dst.tolist(), c.transport, c.group, c.bytes.tolist(), c.time_ns.tolist()))
    assert got == [(2, 5, "HCCS", "g", 7, 3), (5, 2, "HCCS", "g", 3, 4), (5, 2, "RDMA", "h", 30, 3)]
    assert all(type(v) is int for v in c.bytes.tolist() + c.time_ns.tolist())


def _sends(kind, members, sizes):
    out = _ring_sends(kind, np.array(members), np.array(sizes), "g")
    return None if out is None else sorted(zip(out[0].tolist(), out[1].tolist(), out[2].tolist()))


def test_ring_sends_by_kind():
    assert _sends("AllReduce", [3], [800]) is None  # one member sends to nobody
    assert _sends("Barrier", [0, 1], [8, 8]) is None  # no ring rule
    # Broadcast: its size to the next member; 1 byte is sent, 0 is not
    assert _sends("Broadcast", [0, 1, 2], [1, 0, 801]) == [(0, 1, 1), (2, 0, 801)]
    # ReduceScatter: (n - 1) / n = 3 / 4 of the size, floored: 400 -> 300, 10 -> 7
    assert _sends("ReduceScatter", [0, 1, 2, 3], [400, 400, 0, 10]) == [(0, 1, 300), (1, 2, 300), (3, 0, 7)]
    # AllReduce 2 (n - 1) / n = 4 / 3 of 10 = 13 (floored); AllToAll 10 // 3 = 3 to each other member
    assert _sends("AllReduce", [0, 1, 2], [10, 0, 0]) == [(0, 1, 13)]
    assert _sends("AllToAll", [0, 1, 2], [10, 0, 0]) == [(0, 1, 3), (0, 2, 3)]


def _link(digest, src, dst, transport, nbytes, ns):
    digest.communication.links.add(src=src, dst=dst, transport=transport, bytes=nbytes, time_ns=ns)


def test_links_matrix_its_cells_and_bins():
    zero, one = _gpu_rank(0), _gpu_rank(1)
    _link(zero, 0, 1, "HCCS", 100, 10)
    _link(zero, 0, 1, "RDMA", 50, 0)
    _link(one, 1, 0, "HCCS", 30, 3)
    _link(one, 1, 0, "HCCS", 20, 2)  # the same cell twice: 50 bytes in 5 ns
    r = analyse_ranks([zero, one])
    assert r["matrix_source"] == "links"
    assert r["matrix_unmapped"] == {"links": 0, "bytes": 0, "groups": []}
    assert r["matrix"] == [
        {"src": 0, "dst": 1, "transport": "HCCS", "group": "", "group_label": "", "bytes": 100, "time_ns": 10,
         "bandwidth_gbps": 10.0},
        {"src": 0, "dst": 1, "transport": "RDMA", "group": "", "group_label": "", "bytes": 50, "time_ns": 0,
         "bandwidth_gbps": -1.0},
        {"src": 1, "dst": 0, "transport": "HCCS", "group": "", "group_label": "", "bytes": 50, "time_ns": 5,
         "bandwidth_gbps": 10.0}]
    # per pair: 0 -> 1 150 bytes in 10 ns (15 B/ns), 1 -> 0 50 in 5
    assert r["matrix_cells"] == [
        {"src": 0, "dst": 1, "bytes": 150, "time_ns": 10, "transports": ["HCCS", "RDMA"], "groups": [],
         "bandwidth_gbps": 15.0},
        {"src": 1, "dst": 0, "bytes": 50, "time_ns": 5, "transports": ["HCCS"], "groups": [], "bandwidth_gbps": 10.0}]
    assert r["matrix_bins"] == {"ranks_per_bin": 1, "bins": [{"first": 0, "last": 0}, {"first": 1, "last": 1}],
                                "cells": [{"src": 0, "dst": 1, "bytes": 150, "time_ns": 10},
                                          {"src": 1, "dst": 0, "bytes": 50, "time_ns": 5}]}


def test_no_collective_no_matrix():
    def quiet(rank):
        return build_digest(mk([dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
                                dict(ts=0, dur=300, kind=K.KERNEL, name="gemm")], rank=rank))
    r = analyse_ranks([quiet(0), quiet(1)])
    assert (r["matrix_source"], r["matrix"], r["matrix_cells"], r["matrix_truncated"]) == ("none", [], [], False)
    assert r["matrix_unmapped"] == {"links": 0, "bytes": 0, "groups": []}
    assert r["matrix_bins"] == {"ranks_per_bin": 1, "bins": [{"first": 0, "last": 0}, {"first": 1, "last": 1}],
                                "cells": []}
    assert r["collectives"] == [] and r["unmatched"] == []


def test_matrix_cells_sum_transports_and_groups():
    matrix = [{"src": 0, "dst": 1, "transport": "HCCS", "group_label": "tp", "bytes": 10, "time_ns": 2},
              {"src": 0, "dst": 1, "transport": "HCCS", "group_label": "dp", "bytes": -1, "time_ns": -1},
              {"src": 0, "dst": 1, "transport": "RDMA", "bytes": 5, "time_ns": 3},
              {"src": 2, "dst": 0, "transport": "SDMA", "group_label": "tp", "bytes": 7, "time_ns": 1},
              {"src": 1, "dst": 0, "transport": "", "group_label": "", "bytes": 0, "time_ns": 0}]
    # 0 -> 1: 10 + 0 + 5 = 15 bytes in 2 + 0 + 3 = 5 ns (negatives count 0): 3 B/ns; no time: None
    assert matrix_cells(matrix) == [
        {"src": 0, "dst": 1, "bytes": 15, "time_ns": 5, "transports": ["HCCS", "RDMA"], "groups": ["tp", "dp"],
         "bandwidth_gbps": 3.0},
        {"src": 1, "dst": 0, "bytes": 0, "time_ns": 0, "transports": [""], "groups": [], "bandwidth_gbps": None},
        {"src": 2, "dst": 0, "bytes": 7, "time_ns": 1, "transports": ["SDMA"], "groups": ["tp"],
         "bandwidth_gbps": 7.0}]


def test_cells_rows_keep_the_largest_and_label_groups():
    cells = Cells(np.array([0, 0, 1, 1]), np.array([1, 2, 0, 2]), ["HCCS", "RDMA", "HCCS", "SDMA"],
                  ["g", "h", "g", ""], np.array([5, 9, 7, 9]), np.array([1, 0, 2, 3]))
    # limit 2: the two of 9 bytes (cells 1 and 3), in their order
    assert cells.rows(2, {"g": "tp"}) == [
        {"src": 0, "dst": 2, "transport": "RDMA", "group": "h", "group_label": "h", "bytes": 9, "time_ns": 0,
         "bandwidth_gbps": -1.0},
        {"src": 1, "dst": 2, "transport": "SDMA", "group": "", "group_label": "", "bytes": 9, "time_ns": 3,
         "bandwidth_gbps": 3.0}]
    rows = cells.rows(4, {"g": "tp"})
    assert [(r["group_label"], r["bandwidth_gbps"]) for r in rows] == [("tp", 5.0), ("h", -1.0), ("tp", 3.5),
                                                                       ("", 3.0)]
    # ties at the limit: the first cells (stable); 60 cells of 1, 0, 1, 0 ... bytes, keep 10: cells 0, 2, ... 18
    n = 60
    ties = Cells(np.arange(n), np.arange(n) + 1, ["x"] * n, [""] * n, np.array([1, 0] * 30), np.ones(n, np.int64))
    assert [r["src"] for r in ties.rows(10, {})] == list(range(0, 20, 2))


def test_slow_ranks_by_hand():
    ranks = np.array([0, 4, 9])
    cols = {"computing_ns": np.array([300, 500, 400]), "communication_ns": np.array([50, 10, 30]),
            "free_ns": np.array([0, 3, 0])}
    # computing: (500 - 300) / 400 = 0.5, slowest the most (rank 4); communication: (50 - 10) / 30, slowest the
    # least (rank 4: the others wait for it); free: (3 - 0) / 1 = 3, slowest the most (rank 4)
    assert _slow_ranks(ranks, cols) == [
        {"metric": "computing", "max_ns": 500, "min_ns": 300, "mean_ns": 400.0, "ratio": 0.5, "max_rank": 4,
         "min_rank": 0, "flagged": True, "slowest_rank": 4},
        {"metric": "communication", "max_ns": 50, "min_ns": 10, "mean_ns": 30.0, "ratio": 40 / 30, "max_rank": 0,
         "min_rank": 4, "flagged": True, "slowest_rank": 4},
        {"metric": "free", "max_ns": 3, "min_ns": 0, "mean_ns": 1.0, "ratio": 3.0, "max_rank": 4, "min_rank": 0,
         "flagged": True, "slowest_rank": 4}]
    # (205 - 195) / 200 = 0.05: at the threshold, not above it; a metric all 0 has ratio 0
    cols = {"computing_ns": np.array([195, 205]), "communication_ns": np.array([0, 0]), "free_ns": np.array([0, 0])}
    got = _slow_ranks(np.array([0, 1]), cols)
    assert [(s["ratio"], s["flagged"]) for s in got] == [(0.05, False), (0.0, False), (0.0, False)]
    assert _slow_ranks(np.array([3]), {k: v[:1] for k, v in cols.items()}) == []


def test_stat_bytes_keep_a_known_zero():
    d = pb.Digest()
    d.communication.collectives.add(kind="AllReduce", group="g", bytes=0)
    d.communication.collectives.add(kind="Broadcast", group="g", bytes=-1)
    assert _stat_bytes([d]) == {(0, "AllReduce", "g"): 0}


def test_ring_without_sizes_or_partners_draws_nothing():
    """A Broadcast without a size (unknown: no cell) and an AllReduce only rank 0 calls (no partner)."""
    def rank(r, events):
        return build_digest(mk([dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1")] + events, rank=r))
    bcast = dict(ts=100, dur=50, kind=K.COMM_KERNEL, name="ncclDevKernel_Broadcast_RING_LL")
    alone = dict(ts=300, dur=50, kind=K.COMM_KERNEL, name=AR, bytes=800)
    r = analyse_ranks([rank(0, [bcast, alone]), rank(1, [bcast])])
    assert (r["matrix_source"], r["matrix"]) == ("none", [])


def _steps(rank: int, n: int):
    """n steps of 1000 ns, each with gemm over its first 300 ns and nothing else."""
    events = []
    for i in range(n):
        events += [dict(ts=1000 * i, dur=1000, kind=K.USER_ANNOTATION, name=f"ProfilerStep#{i + 1}"),
                   dict(ts=1000 * i, dur=300, kind=K.KERNEL, name="gemm")]
    return build_digest(mk(events, rank=rank))


def test_every_step_gets_cann_split_and_only_in_a_cann_run():
    zero, one = _steps(0, 2), _steps(1, 2)
    for d in (zero, one):  # computing 400, free 500, communication 50, overlapped 100: compute 300, other 30
        _cann(d, 1, 400, 100, 50, 500, 20, 0)
        _cann(d, 2, 400, 100, 50, 500, 20, 0)
    r = analyse_ranks([zero, one])
    for row in r["ranks"]:
        assert [[s[f] for f in ROW_INTS] for s in row["per_step"]] == [[1000, 300, 100, 50, 500, 20, 30, 400]] * 2
    # CANN's rows on rank 0 only: the run uses the trace for all (compute 300, free 700), per step too
    r = analyse_ranks([zero, _steps(1, 2)])
    assert r["breakdown_source"] == "trace"
    assert [s[f] for s in r["ranks"][0]["per_step"] for f in ("compute_ns", "free_ns", "preparing_ns")] == [
        300, 700, -1] * 2


def test_a_busy_step_has_no_free_time():
    # gemm over the whole step [0, 1000): free 1000 - 1000 = 0, per step too
    busy = build_digest(mk([dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1"),
                            dict(ts=0, dur=1000, kind=K.KERNEL, name="gemm")], rank=0))
    (row,) = analyse_ranks([busy])["ranks"]
    assert (row["free_ns"], row["per_step"][0]["free_ns"]) == (0, 0)
