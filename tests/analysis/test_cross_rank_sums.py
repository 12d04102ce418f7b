"""Across ranks, by hand: a collective's wait is summed over its ranks (not their maximum), and the ring
approximation of the communication matrix sends an AllToAll's size / n to each other member (AllReduce
2 (n - 1) / n, AllGather (n - 1) / n of its size to the next member)."""
import numpy as np

from test_analysis_synthetic import mk

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.cluster import _ring_sends, analyse_ranks
from canning_tb.ingest.table import Kind as K


def _rank(rank, durs):
    events = [dict(ts=0, dur=1000, kind=K.USER_ANNOTATION, name="ProfilerStep#1")]
    for j, dur in enumerate(durs):
        events.append(dict(ts=500 + 100 * j, dur=dur, kind=K.COMM_KERNEL,
                           name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", bytes=800))
    return build_digest(mk(events, rank=rank))


def test_a_collectives_wait_is_summed_over_its_ranks():
    # two AllReduce calls; rank 0 takes 10 and 50 ns, rank 1 30 and 20 ns. Transfer of a call = its shortest
    # duration over the ranks (10, then 20); wait = the rest: rank 0 0 + 30 = 30, rank 1 20 + 0 = 20
    r = analyse_ranks([_rank(0, [10, 50]), _rank(1, [30, 20])])
    (row,) = [c for c in r["collectives"] if c["kind"] == "AllReduce"]
    assert {k: (v["wait_ns"], v["transfer_ns"]) for k, v in row["per_rank"].items()} == {"0": (30, 30), "1": (20, 30)}
    assert (row["wait_ns"], row["transfer_ns"]) == (30 + 20, 30 + 30)  # the maximum over ranks would say 30


def test_all_to_all_ring_bytes_are_size_over_n_to_each_other_member():
    members = np.array([0, 2, 4, 6])  # global ranks, ascending
    sizes = np.array([400, 800, 0, 1200])  # rank 4 sent nothing
    src, dst, nbytes, group = _ring_sends("AllToAll", members, sizes, "g")
    got = sorted(zip(src.tolist(), dst.tolist(), nbytes.tolist()))
    # n = 4: 400 / 4 = 100 from rank 0, 800 / 4 = 200 from rank 2, 1200 / 4 = 300 from rank 6, to each other member
    assert got == sorted([(0, 2, 100), (0, 4, 100), (0, 6, 100), (2, 4, 200), (2, 6, 200), (2, 0, 200),
                          (6, 0, 300), (6, 2, 300), (6, 4, 300)])
    assert group == "g"
    # AllReduce: 2 (n - 1) / n = 6 / 4 of the size to the next member; AllGather (n - 1) / n = 3 / 4
    src, dst, nbytes, _ = _ring_sends("AllReduce", members, sizes, "g")
    assert sorted(zip(src.tolist(), dst.tolist(), nbytes.tolist())) == [(0, 2, 600), (2, 4, 1200), (6, 0, 1800)]
    src, dst, nbytes, _ = _ring_sends("AllGather", members, sizes, "g")
    assert sorted(zip(src.tolist(), dst.tolist(), nbytes.tolist())) == [(0, 2, 300), (2, 4, 600), (6, 0, 900)]


def _calls(rank, calls):
    """One rank's step holding NCCL calls [(kernel name, duration ns)], 100 ns apart."""
    events = [dict(ts=0, dur=5000, kind=K.USER_ANNOTATION, name="ProfilerStep#1")]
    for j, (name, dur) in enumerate(calls):
        events.append(dict(ts=500 + 100 * j, dur=dur, kind=K.COMM_KERNEL, name=name, bytes=800))
    return build_digest(mk(events, rank=rank))


def test_cluster_collectives_are_listed_by_their_time_over_all_ranks_then_by_kind():
    # over both ranks: AllGather 40 + 40 = 80 ns in 2 calls, AllReduce 20 + 10 + 10 + 10 = 50 in 4 (the most
    # calls), Broadcast 25 + 25 = 50 in 2 (a tie with AllReduce: by kind); rank 0 calls them in another order
    ar, ag, bc = ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL",
                  "ncclDevKernel_Broadcast_RING_LL")
    r = analyse_ranks([_calls(0, [(bc, 25), (ar, 20), (ag, 40), (ar, 10)]),
                       _calls(1, [(ag, 40), (ar, 10), (ar, 10), (bc, 25)])])
    assert [(c["kind"], c["total_ns"], c["calls"]) for c in r["collectives"]] == [
        ("AllGather", 80, 2), ("AllReduce", 50, 4), ("Broadcast", 50, 2)]
