"""CANN's own communication figures, as analysis/communication/ascend.py adds them (issue 46, mutation round).

Every case is small and hand-made (side tables written row by row, CannCall figures given directly); each
expected value is worked out by hand in the comment beside it. The last test reads a real communication.json
(the level1 fixture) with json and checks the collectives made from it alone.
"""
from __future__ import annotations

import json
import shutil

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.cann import CannCall
from canning_tb.analysis.communication import ascend
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import EventTable

from conftest import fixture_path

AR0, AR1, BC0, ARH = "hcom_allReduce__586_0_1", "hcom_allReduce__586_1_1", "hcom_broadcast__586_0_1", "hcom_allReduce__7_0_1"


def _table(env=None, **tables) -> EventTable:
    t = EventTable()
    t.meta.environment.update(env or {})
    for name, rows in tables.items():
        side.put(t.side, name, [side.row(name, **r) for r in rows])
    return t


def _op(op, group, start, elapse, transit, wait, sync, kind="collective", step=1):
    return dict(step=step, kind=kind, op=op, group=group, start_ns=start, elapse_ns=elapse, transit_ns=transit,
                wait_ns=wait, synchronization_ns=sync, idle_ns=None)


def _bw(op, transport, size, time, group="g", step=1):
    return dict(step=step, kind="collective", op=op, group=group, transport=transport, size_bytes=size, time_ns=time,
                bandwidth_gbps=None, large_packet_ratio=None)


def _cc(op, group="g", start=0, elapse=10, transit=1, wait=2, sync=3, nbytes=-1, link=0, comm_type="collective",
        step=1) -> CannCall:
    return CannCall(op=op, group=group, comm_type=comm_type, step=step, start_ns=start, elapse_ns=elapse,
                    transit_ns=transit, wait_ns=wait, synchronization_ns=sync, transit_bytes=nbytes,
                    link_time_ns=link)


# ---- comm_type, known_sum ----

def test_comm_type_is_p2p_when_cann_files_it_so_or_the_kind_is_a_send_or_receive():
    assert ascend.comm_type("AllReduce") == "collective"
    assert ascend.comm_type("Send") == "p2p" and ascend.comm_type("Recv") == "p2p"
    assert ascend.comm_type("AllReduce", _cc("a", comm_type="p2p")) == "p2p"  # CANN's filing wins
    assert ascend.comm_type("Recv", _cc("a", comm_type="collective")) == "p2p"  # a receive stays p2p
    assert ascend.comm_type("AllGather", _cc("a", comm_type="collective")) == "collective"


def test_known_sum_is_unknown_when_any_part_is_or_there_is_none():
    assert ascend.known_sum([]) == -1
    assert ascend.known_sum([0, 5]) == 5  # 0 is a known figure
    assert ascend.known_sum([7, -1, 3]) == -1
    assert ascend.known_sum(x for x in (2, 3)) == 5  # a generator is read once: 2 + 3


# ---- add_cann_figures ----

def test_cann_figures_of_a_collective_sum_its_calls_each_name_once():
    """a: transit 20, wait 10, sync 5, 1,500 bytes on the links in 500 ns; b: 25, 3, 0, 3,000 bytes in 1,000 ns.
    ["a", "a", "b", "zz"]: a once, zz unknown to CANN: transfer 45, wait 13, sync 5, 4,500 bytes in 1,500 ns
    = 3.0 GB/s (bytes per ns); the events gave no payload (-1): the bytes are CANN's 4,500."""
    calls = {"a": _cc("a", transit=20, wait=10, sync=5, nbytes=1500, link=500),
             "b": _cc("b", transit=25, wait=3, sync=0, nbytes=3000, link=1000)}
    stat = pb.CollectiveStat(kind="AllReduce", group="g", bytes=-1, bandwidth_gbps=-1.0)
    ascend.add_cann_figures(stat, ["a", "a", "b", "zz"], calls, "communication.json")
    assert (stat.transfer_ns, stat.wait_ns, stat.synchronization_ns) == (45, 13, 5)
    assert (stat.transit_bytes, stat.bytes, stat.bandwidth_gbps) == (4500, 4500, 3.0)
    assert (stat.source, stat.comm_type) == ("communication.json", "collective")


def test_cann_bytes_do_not_replace_a_payload_the_events_gave_even_a_zero_one():
    """Payload 0 from the events stays 0 (only -1 means none); transit bytes 0 count as moved: 0 + 600 bytes
    over 200 + 100 ns of links = 2.0 GB/s (leaving the 0-byte call out would give 600 / 100 = 6.0)."""
    calls = {"a": _cc("a", nbytes=0, link=200), "b": _cc("b", nbytes=600, link=100)}
    stat = pb.CollectiveStat(kind="AllReduce", bytes=0, bandwidth_gbps=-1.0)
    ascend.add_cann_figures(stat, ["a", "b"], calls, "analysis.db")
    assert (stat.bytes, stat.transit_bytes, stat.bandwidth_gbps) == (0, 600, 2.0)


def test_without_link_time_the_bandwidth_stays_unknown_and_without_bytes_so_do_they():
    """Bytes 800 but 0 ns on the links: no bandwidth (-1 kept); no call with bytes: transit bytes -1, bytes kept."""
    stat = pb.CollectiveStat(kind="AllReduce", bytes=-1, bandwidth_gbps=-1.0)
    ascend.add_cann_figures(stat, ["a"], {"a": _cc("a", nbytes=800, link=0)}, "communication.json")
    assert (stat.transit_bytes, stat.bytes, stat.bandwidth_gbps) == (800, 800, -1.0)
    stat = pb.CollectiveStat(kind="AllReduce", bytes=-1, bandwidth_gbps=-1.0)
    ascend.add_cann_figures(stat, ["a"], {"a": _cc("a", nbytes=-1, link=300)}, "communication.json")
    assert (stat.transit_bytes, stat.bytes, stat.bandwidth_gbps) == (-1, -1, -1.0)
    assert (stat.transfer_ns, stat.wait_ns, stat.synchronization_ns) == (1, 2, 3)
    stat = pb.CollectiveStat(kind="AllReduce", bytes=-1, bandwidth_gbps=-1.0)  # 1 ns of link time is a time
    ascend.add_cann_figures(stat, ["a"], {"a": _cc("a", nbytes=5, link=1)}, "communication.json")
    assert stat.bandwidth_gbps == 5.0  # 5 bytes / 1 ns


def test_a_collective_cann_did_not_measure_keeps_its_figures_and_says_unknown():
    stat = pb.CollectiveStat(kind="Send", bytes=64, wait_ns=7, transfer_ns=9, bandwidth_gbps=0.5)
    ascend.add_cann_figures(stat, ["x"], {"a": _cc("a")}, "communication.json")
    assert (stat.comm_type, stat.synchronization_ns, stat.transit_bytes, stat.source) == ("p2p", -1, -1, "")
    assert (stat.bytes, stat.wait_ns, stat.transfer_ns, stat.bandwidth_gbps) == (64, 7, 9, 0.5)


def test_the_comm_type_comes_from_the_first_call_cann_measured():
    calls = {"a": _cc("a", comm_type="collective"), "b": _cc("b", comm_type="p2p")}
    stat = pb.CollectiveStat(kind="AllReduce")
    ascend.add_cann_figures(stat, ["zz", "a", "b"], calls, "s")
    assert stat.comm_type == "collective"
    stat = pb.CollectiveStat(kind="AllReduce")
    ascend.add_cann_figures(stat, ["b", "a"], calls, "s")
    assert stat.comm_type == "p2p"


# ---- add_call_figures ----

def test_a_call_takes_cann_figures_of_its_operator():
    """hcom_allReduce__586_2_1: HCCL's index 2; no payload in the events (-1): CANN's 0 bytes; wait / transit /
    synchronization CANN's 4 / 5 / 6."""
    call = pb.CommCall(kind="AllReduce", bytes=-1)
    ascend.add_call_figures(call, "hcom_allReduce__586_2_1",
                            {"hcom_allReduce__586_2_1": _cc("x", transit=5, wait=4, sync=6, nbytes=0)})
    assert (call.op, call.seq, call.comm_type, call.bytes) == ("hcom_allReduce__586_2_1", 2, "collective", 0)
    assert (call.wait_ns, call.transit_ns, call.synchronization_ns) == (4, 5, 6)


def test_a_call_keeps_its_payload_and_is_unknown_where_cann_has_nothing():
    call = pb.CommCall(kind="Recv", bytes=0)  # a payload of 0 from the events is kept
    ascend.add_call_figures(call, "op", {"op": _cc("op", nbytes=900, comm_type="collective")})
    assert (call.bytes, call.seq, call.comm_type) == (0, -1, "p2p")
    call = pb.CommCall(kind="AllReduce", bytes=-1)
    ascend.add_call_figures(call, "op", {"op": _cc("op", nbytes=-1)})
    assert call.bytes == -1
    call = pb.CommCall(kind="Broadcast", bytes=-1)  # CANN files it under p2p: so is the call
    ascend.add_call_figures(call, "op", {"op": _cc("op", comm_type="p2p")})
    assert call.comm_type == "p2p"
    call = pb.CommCall(kind="AllReduce", bytes=-1)
    ascend.add_call_figures(call, "hcom_allReduce__586_7_1", {})
    assert (call.bytes, call.seq, call.comm_type) == (-1, 7, "collective")
    assert (call.wait_ns, call.transit_ns, call.synchronization_ns) == (-1, -1, -1)


# ---- number_unsequenced ----

def test_calls_without_hccl_index_are_numbered_after_the_last_one_of_their_group():
    """By start: A@1 (-1 -> 0, next 1), A@2 (HCCL's 0 kept, next max(1, 0) + 1 = 2), A@3 (5 kept, next 6), B@4
    (-1 -> 0), A@5 (-1 -> 6), A@6 (-1 -> 7); group B counts apart."""
    c = pb.Communication()
    for start, group, seq in ((6, "A", -1), (3, "A", 5), (1, "A", -1), (5, "A", -1), (4, "B", -1), (2, "A", 0)):
        c.calls.add(group=group, start_ns=start, seq=seq)
    ascend.number_unsequenced(c)
    assert sorted((x.start_ns, x.group, x.seq) for x in c.calls) == [
        (1, "A", 0), (2, "A", 0), (3, "A", 5), (4, "B", 0), (5, "A", 6), (6, "A", 7)]


def test_a_zero_index_is_kept_after_an_unnumbered_call():
    """A@1 unnumbered -> 0 (next 1), A@2 HCCL's 0 kept (it is HCCL's own, not -1; next max(1, 0) + 1 = 2), A@3
    unnumbered -> 2."""
    c = pb.Communication()
    for start, seq in ((1, -1), (2, 0), (3, -1)):
        c.calls.add(group="A", start_ns=start, seq=seq)
    ascend.number_unsequenced(c)
    assert [x.seq for x in c.calls] == [0, 0, 2]


# ---- totals ----

def test_window_totals_over_the_measured_collectives_p2p_wait_apart():
    """Measured: g (transfer 10, wait 4, sync 1), p (p2p: 20, 6, 2), q (p2p: 30, 5, 0); x unmeasured (no
    source, 1000s left out): transfer 60, wait 15, sync 3, p2p wait 6 + 5 = 11, source of the first measured."""
    c = pb.Communication(wait_ns=-1, transfer_ns=-1)
    c.collectives.add(kind="AllReduce", transfer_ns=1000, wait_ns=1000, synchronization_ns=1000, comm_type="p2p")
    c.collectives.add(kind="AllReduce", source="communication.json", transfer_ns=10, wait_ns=4, synchronization_ns=1,
                      comm_type="collective")
    c.collectives.add(kind="Send", source="analysis.db", transfer_ns=20, wait_ns=6, synchronization_ns=2,
                      comm_type="p2p")
    c.collectives.add(kind="Recv", source="x", transfer_ns=30, wait_ns=5, synchronization_ns=0, comm_type="p2p")
    ascend.totals(c)
    assert (c.source, c.transfer_ns, c.wait_ns, c.synchronization_ns, c.p2p_wait_ns) == (
        "communication.json", 60, 15, 3, 11)


def test_window_totals_unknown_where_nothing_is_measured_and_p2p_wait_unknown_when_one_is():
    c = pb.Communication(wait_ns=-1, transfer_ns=-1)
    c.collectives.add(kind="AllReduce", transfer_ns=5, wait_ns=5)
    ascend.totals(c)
    assert (c.source, c.wait_ns, c.transfer_ns, c.synchronization_ns, c.p2p_wait_ns) == ("", -1, -1, -1, -1)
    c = pb.Communication()
    c.collectives.add(kind="Send", source="s", transfer_ns=1, wait_ns=-1, synchronization_ns=2, comm_type="p2p")
    c.collectives.add(kind="Recv", source="s", transfer_ns=1, wait_ns=3, synchronization_ns=2, comm_type="p2p")
    ascend.totals(c)
    assert (c.transfer_ns, c.wait_ns, c.synchronization_ns, c.p2p_wait_ns) == (2, -1, 4, -1)


# ---- collectives_from_cann ----

def _four_calls() -> EventTable:
    """AR0 (g, 100 +50, transit 20, wait 10, sync 5; SDMA 1000 B / 400 ns + RDMA 500 B / 100 ns, its HCCS row being
    inside SDMA: not added), AR1 (g, 300 +30,
    25, 3, 0; SDMA 3000 B / 1000 ns), BC0 (g, 200 +100, 60, 40, 30; no link rows), ARH (h, 50 +80, 70, wait None,
    2; an RDMA row of unknown size)."""
    return _table({"source.comm_ops": "communication.json"},
                  comm_ops=[_op(AR0, "g", 100, 50, 20, 10, 5), _op(AR1, "g", 300, 30, 25, 3, 0),
                            _op(BC0, "g", 200, 100, 60, 40, 30), _op(ARH, "h", 50, 80, 70, None, 2, step=2)],
                  comm_bandwidth=[_bw(AR0, "SDMA", 1000, 400), _bw(AR0, "RDMA", 500, 100), _bw(AR0, "HCCS", 1000, 400),
                                  _bw(AR1, "SDMA", 3000, 1000), _bw(ARH, "RDMA", None, 5, group="h", step=2)])


def test_collectives_from_cann_alone():
    """Calls by start: ARH 50, AR0 100, BC0 200, AR1 300, each with HCCL's index from its name and CANN's bytes
    (AR0 1000 + 500 = 1,500; AR1 3,000; the others none: -1). Collectives: Broadcast/g 100 ns first, then the two
    80 ns AllReduces by group (g: 50 + 30, min 30, max 50, 4,500 bytes over 500 + 1000 ns = 3.0 GB/s,
    transfer 45, wait 13, sync 5; h: transfer 70, wait unknown, sync 2, no bytes)."""
    c = pb.Communication()
    ascend.collectives_from_cann(_four_calls(), c)
    assert [(x.op, x.kind, x.group, x.start_ns, x.dur_ns, x.bytes, x.step, x.seq, x.comm_type) for x in c.calls] == [
        (ARH, "AllReduce", "h", 50, 80, -1, 2, 0, "collective"), (AR0, "AllReduce", "g", 100, 50, 1500, 1, 0, "collective"),
        (BC0, "Broadcast", "g", 200, 100, -1, 1, 0, "collective"), (AR1, "AllReduce", "g", 300, 30, 3000, 1, 1, "collective")]
    assert [(x.wait_ns, x.transit_ns, x.synchronization_ns) for x in c.calls] == [(-1, 70, 2), (10, 20, 5), (40, 60, 30),
                                                                                 (3, 25, 0)]
    got = [(s.kind, s.group, s.calls, s.total_ns, s.min_ns, s.max_ns, s.bytes, s.bandwidth_gbps, s.transfer_ns,
            s.wait_ns, s.synchronization_ns, s.transit_bytes, s.source, s.comm_type) for s in c.collectives]
    assert got == [
        ("Broadcast", "g", 1, 100, 100, 100, -1, -1.0, 60, 40, 30, -1, "communication.json", "collective"),
        ("AllReduce", "g", 2, 80, 30, 50, 4500, 3.0, 45, 13, 5, 4500, "communication.json", "collective"),
        ("AllReduce", "h", 1, 80, 80, 80, -1, -1.0, 70, -1, 2, -1, "communication.json", "collective")]


# ---- add_calls_only_cann_has ----

def _with_one_call(nbytes=4000, source="") -> pb.Communication:
    c = pb.Communication()
    c.calls.add(kind="AllReduce", group="g", op=AR0, start_ns=100, dur_ns=50, bytes=nbytes, seq=0)
    c.collectives.add(kind="AllReduce", group="g", calls=1, total_ns=50, min_ns=50, max_ns=50, bytes=nbytes,
                      bandwidth_gbps=-1.0, source=source)
    return c


def _cann(nbytes=True) -> dict:
    """AR0 (as the events have it), AR1 (g, 300 +30) and BC0 (g, 200 +100): CANN's calls; bytes 1500 / 3000 / none."""
    return {AR0: _cc(AR0, start=100, elapse=50, transit=20, wait=10, sync=5, nbytes=1500 if nbytes else -1, link=500),
            AR1: _cc(AR1, start=300, elapse=30, transit=25, wait=3, sync=0, nbytes=3000 if nbytes else -1, link=1000),
            BC0: _cc(BC0, start=200, elapse=100, transit=60, wait=40, sync=30)}


def test_calls_only_communication_json_holds_join_their_collectives():
    """AR1 joins AllReduce/g: 2 calls, 50 + 30 = 80 ns, min 30, max 50; its payload (events: 4000 for AR0 only) is no
    longer the whole, CANN's 1500 + 3000 = 4500 bytes over 1500 ns = 3.0 GB/s instead. BC0 makes Broadcast/g: 1 call,
    100 ns, its min 100 (not 0), no bytes. Collectives by total: Broadcast (100) then AllReduce (80); calls by start."""
    c = _with_one_call()
    ascend.add_calls_only_cann_has(c, _cann(), "communication.json")
    assert [(x.op, x.kind, x.start_ns, x.dur_ns, x.bytes, x.seq, x.step) for x in c.calls] == [
        (AR0, "AllReduce", 100, 50, 4000, 0, 0), (BC0, "Broadcast", 200, 100, -1, 0, 1), (AR1, "AllReduce", 300, 30, 3000, 1, 1)]
    assert [(x.wait_ns, x.transit_ns, x.group) for x in c.calls[1:]] == [(40, 60, "g"), (3, 25, "g")]
    got = [(s.kind, s.group, s.calls, s.total_ns, s.min_ns, s.max_ns, s.bytes, s.bandwidth_gbps, s.transfer_ns,
            s.wait_ns, s.source) for s in c.collectives]
    assert got == [("Broadcast", "g", 1, 100, 100, 100, -1, -1.0, 60, 40, "communication.json"),
                   ("AllReduce", "g", 2, 80, 30, 50, 4500, 3.0, 45, 13, "communication.json")]


def test_a_payload_of_some_calls_only_becomes_unknown_unless_cann_measured_it():
    """Without CANN's bytes the events' 4000 (AR0 alone) is not the collective's: -1; a zero payload likewise."""
    for nbytes in (4000, 0):
        c = _with_one_call(nbytes)
        ascend.add_calls_only_cann_has(c, _cann(nbytes=False), "communication.json")
        assert [(s.kind, s.bytes, s.max_ns) for s in c.collectives] == [("Broadcast", -1, 100), ("AllReduce", -1, 50)]
    # a collective whose figures CANN already gave (source set): its payload is kept
    c = _with_one_call(4000, source="communication.json")
    ascend.add_calls_only_cann_has(c, _cann(nbytes=False), "communication.json")
    assert [(s.kind, s.bytes) for s in c.collectives] == [("Broadcast", -1), ("AllReduce", 4000)]


def test_nothing_changes_when_the_events_hold_every_call():
    """The collectives stay in the order given (not re-sorted: 5 ns before 90 ns)."""
    c = pb.Communication()
    c.calls.add(kind="AllReduce", group="g", op=AR0, start_ns=100, dur_ns=50, bytes=7)
    c.collectives.add(kind="AllReduce", group="g", total_ns=5, bytes=7)
    c.collectives.add(kind="Broadcast", group="g", total_ns=90, bytes=7)
    before = c.SerializeToString()
    ascend.add_calls_only_cann_has(c, {AR0: _cc(AR0, nbytes=10, link=5)}, "communication.json")
    assert c.SerializeToString() == before


# ---- links ----

def _cell(step, group, link, aggregate, src=0, dst=1, kind="collective", nbytes=100, time=10, bw=10.0, op=None,
          transport="HCCS"):
    return dict(step=step, kind=kind, group=group, link=link, aggregate=aggregate, src=src, dst=dst,
                transport=transport, bytes=nbytes, time_ns=time, bandwidth_gbps=bw, op=op)


def test_links_take_the_step_totals_else_the_per_call_cells_never_both_nor_the_slices():
    """Step 1: g's total (kept) with a per-call cell of g (left: the total has it) and a top slice (never); h's
    per-call cell (kept: no total of h); 2023's "Total Op Info" without communicator (left: step 1 has per-call
    cells with one) but kept for p2p (none there). Step 2: only a "Total Op Info" (kept) and a per-call cell without
    communicator (left: the sum has it). Step 3: a per-call cell alone (kept). None reads as -1 / "" / 0."""
    rows = [_cell(1, "g", "allreduce-total@g", "total"),
            _cell(1, "g", "hcom_allReduce__1_0_1@g", "", nbytes=55),
            _cell(1, "g", "allreduce-top1@g", "top", nbytes=66),
            _cell(1, "h", "hcom_x@h", "", src=1, dst=None, transport=None, nbytes=None, time=None, bw=None, op="hcom_x"),
            _cell(1, None, "Total Op Info", "total", nbytes=77),
            _cell(1, None, "Total Op Info", "total", kind="p2p", nbytes=88),
            _cell(2, None, "Total Op Info", "total", src=None, nbytes=99),
            _cell(2, None, "hcom_y", "", nbytes=11),
            _cell(3, None, None, "", kind="p2p", nbytes=33, op=None)]
    t = _table(comm_matrix=rows)
    got = [(x.src, x.dst, x.transport, x.bytes, x.time_ns, x.bandwidth_gbps, x.op, x.group, x.numbering)
           for x in ascend.links(t)]
    assert got == [(0, 1, "HCCS", 100, 10, 10.0, "allreduce-total@g", "g", "communicator"),
                   (1, -1, "", 0, 0, 0.0, "hcom_x", "h", "communicator"),
                   (0, 1, "HCCS", 88, 10, 10.0, "Total Op Info", "", "communicator"),
                   (-1, 1, "HCCS", 99, 10, 10.0, "Total Op Info", "", "communicator"),
                   (0, 1, "HCCS", 33, 10, 10.0, "", "", "communicator")]
    assert ascend.links(_table()) == []


def test_a_per_call_cell_is_left_only_for_the_total_of_its_own_step_kind_and_communicator():
    """g's total in step 1 leaves g's per-call cells of step 1 only: step 2's, p2p's and h's are kept. 2023's
    layout (step 4): per-call cells of g and a "Total Op Info" without communicator: the cells only. Step 5: g's
    total and top slice, a "Total Op Info": no per-call cell, so both totals."""
    rows = [_cell(1, "g", "t", "total", nbytes=1), _cell(2, "g", "c", "", nbytes=2),
            _cell(1, "g", "c", "", kind="p2p", nbytes=3), _cell(1, "h", "c", "", nbytes=4), _cell(1, "g", "c", "", nbytes=5),
            _cell(4, "g", "c", "", nbytes=6), _cell(4, None, "Total Op Info", "total", nbytes=7),
            _cell(5, "g", "t", "total", nbytes=8), _cell(5, "g", "t", "top", nbytes=9),
            _cell(5, None, "Total Op Info", "total", nbytes=10)]
    assert [x.bytes for x in ascend.links(_table(comm_matrix=rows))] == [1, 2, 3, 4, 6, 8, 10]


# ---- groups ----

def _poly_hash(text: str, base: int) -> int:
    """sum(ord(c_i) * base^(n-1-i)) mod 2^32: the polynomial hash written as one sum, not as a loop."""
    n = len(text)
    return sum(ord(ch) * pow(base, n - 1 - i, 2 ** 32) for i, ch in enumerate(text)) % 2 ** 32


def test_groups_declared_matrix_linked_and_only_called():
    """Declared: "world_comm" (the calls carry its hash: id = the hash, comm_name the name, ranks 0,2 -> label
    "dp (ranks 0,2)", rank 1 in it), "tp_g" (nothing known: members -1, label its id), "pp_g" (ranks 4,5,6 with a
    trailing comma: "ranks 4-6 (pp_g)"). Called, not declared: "g" (the matrix links 0 and 1: 2 members, the matrix's
    file as source), "k" (nothing: -1), "" (no communicator: no group), "g" again (once)."""
    hashed = str((_poly_hash("world_comm", 29) << 32) | _poly_hash("world_comm", 131))
    t = _table({"source.comm_groups": "profiler_metadata.json", "source.comm_matrix": "communication_matrix.json"},
               comm_matrix=[_cell(1, "g", "c", "", src=0, dst=1), _cell(1, "g", "c", "", src=1, dst=0),
                            _cell(1, "h", "c", "", src=3, dst=None)],
               comm_groups=[dict(group="world_comm", name="dp", rank_in_group=1, ranks="0,2"),
                            dict(group="tp_g", name=None, rank_in_group=None, ranks=""),
                            dict(group="pp_g", name="", rank_in_group=0, ranks="4,5,6,")])
    got = [(g.group, g.name, list(g.ranks), g.rank_in_group, g.source, g.comm_name, g.members, g.label)
           for g in ascend.groups(t, [hashed, "g", "k", "", "g"])]
    assert got == [
        (hashed, "dp", [0, 2], 1, "profiler_metadata.json", "world_comm", 2, "dp (ranks 0,2)"),
        ("tp_g", "", [], -1, "profiler_metadata.json", "", -1, "tp_g"),
        ("pp_g", "", [4, 5, 6], 0, "profiler_metadata.json", "", 3, "ranks 4-6 (pp_g)"),
        ("g", "", [], -1, "communication_matrix.json", "", 2, "2 ranks (g)"),
        ("k", "", [], -1, "", "", -1, "k")]


def test_a_declared_group_the_matrix_names_keeps_its_id_and_a_linked_group_without_file_name():
    """"h" is declared and linked (members 3, 5: src 3 -> dst 5): its own id, no comm_name; "q" is called and linked
    with no source file named: "communication matrix"."""
    t = _table(comm_matrix=[_cell(1, "h", "c", "", src=3, dst=5), _cell(1, "q", "c", "", src=None, dst=2)],
               comm_groups=[dict(group="h", name="tp", rank_in_group=None, ranks="")])
    got = [(g.group, g.comm_name, g.source, g.members, g.label) for g in ascend.groups(t, ["q"])]
    assert got == [("h", "", "", 2, "tp"), ("q", "", "communication matrix", 1, "1 ranks (q)")]


# ---- a real communication.json alone ----

@pytest.fixture(scope="module")
def level1_alone(tmp_path_factory):
    """rank 0 of the level1 set with its communication.json only (no events): the collectives come from CANN."""
    src = fixture_path("ascend", "level1", "rank0_ascend_pt") / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    out = tmp_path_factory.mktemp("l1") / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(src, out / "communication.json")
    return read_ascend(str(out.parent)), json.loads(src.read_text())


def test_collectives_from_the_level1_communication_json(level1_alone):
    """Read again with json: every 'op@group' of every step is a call; per (kind, group) the calls, the sums of
    Elapse / Transit / Wait / Synchronization (ms -> ns, each call rounded) and SDMA + RDMA MB (-> bytes); "Total
    Op Info" is CANN's sum over them, not a call."""
    table, raw = level1_alone
    want: dict = {}
    for step in raw.values():
        for key, call in step["collective"].items():
            if key == "Total Op Info":
                continue
            group = key.split("@")[1]
            info, bw = call["Communication Time Info"], call["Communication Bandwidth Info"]
            w = want.setdefault(group, [0, 0, 0, 0, 0, 0])
            w[0] += 1
            for i, name in ((1, "Elapse Time(ms)"), (2, "Transit Time(ms)"), (3, "Wait Time(ms)"),
                            (4, "Synchronization Time(ms)")):
                w[i] += round(info[name] * 1e6)
            w[5] += round((bw["SDMA"]["Transit Size(MB)"] + bw["RDMA"]["Transit Size(MB)"]) * 1e6)
    c = pb.Communication()
    ascend.collectives_from_cann(table, c)
    assert {s.kind for s in c.collectives} == {"AllReduce"}
    got = {s.group: [s.calls, s.total_ns, s.transfer_ns, s.wait_ns, s.synchronization_ns, s.transit_bytes]
           for s in c.collectives}
    assert got.keys() == want.keys()
    for group, w in want.items():
        assert got[group][0] == w[0]
        for g, x in zip(got[group][1:], w[1:]):  # each call's ms rounded to ns: at most 1 ns per call apart
            assert abs(g - x) <= w[0], (group, got[group], w)
    assert len(c.calls) == sum(w[0] for w in want.values())
    assert [x.start_ns for x in c.calls] == sorted(x.start_ns for x in c.calls)
