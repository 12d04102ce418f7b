"""The collectives' rows, calls and kinds (analysis/communication/collectives.py) on events placed here, every
figure by hand (ns; written after mutation testing showed these paths untested: docs/mutants.md, issue 46).
A collective (kind, group) row sums its calls: total, min, max; bytes = the sum of the calls' known payloads
(-1 when no call has one), bandwidth = bytes / total (-1 unknown); rows by total time, longest first; calls by
start, each with the number of the step it starts in (-1 before the first)."""
from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.communication import collectives
from canning_tb.ingest import op_args
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import Kind as K

AR, AG, BC = "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL", "ncclKernel_Broadcast_RING_LL"
RS, RD = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "ncclDevKernel_Reduce_Sum_f32_RING_LL"


def comm(name, ts, dur, stream=8, **kw):
    return ev(name, K.COMM_KERNEL, ts, dur, stream=stream, **kw)


def rows(d):
    return [(s.kind, s.group, s.calls, s.total_ns, s.min_ns, s.max_ns, s.bytes, s.bandwidth_gbps)
            for s in d.communication.collectives]


def calls(d):
    return [(c.kind, c.group, c.start_ns, c.dur_ns, c.bytes, c.step) for c in d.communication.calls]


def test_collective_rows_and_calls_by_hand():
    d = build_digest(table([
        ev("ProfilerStep#4", K.USER_ANNOTATION, 100, 1000), ev("ProfilerStep#5", K.USER_ANNOTATION, 1100, 1000),
        comm(AR, 50, 40, bytes=800, group="pg0"),  # before the first step
        comm(AR, 200, 60, group="pg0"),            # no payload size: left out of the bytes
        comm(AR, 1200, 100, bytes=400, group="pg0"),
        comm(AG, 1300, 1, bytes=5, group="pg1"),   # 1 ns
        comm(BC, 1400, 30),                        # no group, no bytes
        comm(RS, 1500, 20, bytes=0, group="pg0"),  # moved nothing
        comm(RD, 1600, 0, bytes=16, group="pg0"),  # 0 ns: no bandwidth
    ]))
    assert rows(d) == [
        ("AllReduce", "pg0", 3, 40 + 60 + 100, 40, 100, 800 + 400, 1200 / 200),
        ("Broadcast", "", 1, 30, 30, 30, -1, -1.0),
        ("ReduceScatter", "pg0", 1, 20, 20, 20, 0, 0.0),
        ("AllGather", "pg1", 1, 1, 1, 1, 5, 5.0),
        ("Reduce", "pg0", 1, 0, 0, 0, 16, -1.0)]
    assert calls(d) == [("AllReduce", "pg0", 50, 40, 800, -1), ("AllReduce", "pg0", 200, 60, -1, 4),
                        ("AllReduce", "pg0", 1200, 100, 400, 5), ("AllGather", "pg1", 1300, 1, 5, 5),
                        ("Broadcast", "", 1400, 30, -1, 5), ("ReduceScatter", "pg0", 1500, 20, 0, 5),
                        ("Reduce", "pg0", 1600, 0, 16, 5)]


def test_a_group_whose_string_id_is_0_is_still_its_group():
    # the table's first string (id 0) is the first event's name: here also the group's text
    d = build_digest(table([ev("pg0", K.USER_ANNOTATION, 5000, 10), comm(AR, 0, 50, group="pg0")]))
    assert [(s.kind, s.group) for s in d.communication.collectives] == [("AllReduce", "pg0")]
    assert [c.group for c in d.communication.calls] == ["pg0"]


def test_an_empty_group_name_stays_empty():
    # Kineto's "Process Group Name": "" is read as the text "" (ingest/kineto/read.py), not as no group
    d = build_digest(table([comm(AR, 0, 50, group="")]))
    assert [s.group for s in d.communication.collectives] == [""] and [c.group for c in d.communication.calls] == [""]


def test_calls_with_an_empty_group_name_and_with_none_make_one_row():
    # both read as group "": one AllReduce row of 2 calls, 50 + 30 ns (it was two rows of one call each)
    d = build_digest(table([comm(AR, 0, 50, group=""), comm(AR, 100, 30)]))
    assert [(s.kind, s.group, s.calls, s.total_ns) for s in d.communication.collectives] == [("AllReduce", "", 2, 80)]


def test_a_communication_kernel_with_an_empty_name_has_an_empty_op():
    # a kernel the reader filed as communication (a collective launched it) though its name is the text ""
    (c,) = build_digest(table([comm("", 0, 50, group="pg0")])).communication.calls
    assert (c.kind, c.op) == ("Other", "")


def test_calls_starting_together_keep_the_tables_order():
    # 40 calls at one instant, each on its own stream, durations 1..40 in the order the table holds them
    d = build_digest(table([comm(AR, 100, j + 1, stream=10 + j, group="pg0") for j in range(40)]))
    assert [c.dur_ns for c in d.communication.calls] == list(range(1, 41))


def test_calls_past_the_limit_are_dropped_and_said(monkeypatch):
    monkeypatch.setattr(collectives, "MAX_CALLS", 3)
    three = build_digest(table([comm(AR, 100 * j, 10, group="pg0") for j in range(3)]))
    assert (len(three.communication.calls), three.communication.calls_truncated) == (3, False)
    four = build_digest(table([comm(AR, 100 * j, 10 + j, group="pg0") for j in range(4)] + [comm(BC, 900, 5)]))
    assert [c.dur_ns for c in four.communication.calls] == [10, 11, 12]  # the first three by time
    assert four.communication.calls_truncated is True
    # the rows still count every call; the broadcast, none of whose calls is kept, has its wait and transfer unknown
    assert [(s.kind, s.calls, s.wait_ns, s.transfer_ns) for s in four.communication.collectives] == [
        ("AllReduce", 4, -1, -1), ("Broadcast", 1, -1, -1)]


def test_overlapped_and_not_overlapped_communication():
    # compute [0, 100) on stream 7, an all-reduce [50, 150) on stream 8: 50 ns under compute, 50 ns alone
    d = build_digest(table([ev("gemm", K.KERNEL, 0, 100), comm(AR, 50, 100, group="pg0")]))
    c = d.communication
    assert (c.overlapped_ns, c.not_overlapped_ns, c.total_ns) == (50, 50, 100)


def test_a_collective_op_at_the_top_holds_its_nested_one():
    # no step range: the c10d op is a root of the host nesting, record_param_comms its child: one call
    d = build_digest(table([ev("c10d::allreduce_", K.CPU_OP, 100, 300),
                            ev("record_param_comms", K.USER_ANNOTATION, 110, 280)]))
    assert [(c.kind, c.start_ns, c.dur_ns) for c in d.communication.calls] == [("AllReduce", 100, 300)]


def _p2p_args(peer: str) -> str:
    return op_args.encode(concrete=["", "", peer, "0"])  # c10d::send / recv_: (tensors, group, peer, tag)


def test_send_and_receive_carry_their_peer_and_other_calls_none():
    d = build_digest(table([
        ev("c10d::send", K.CPU_OP, 100, 50, args=_p2p_args("0")), ev("gloo:send", K.USER_ANNOTATION, 110, 30),
        ev("c10d::recv_", K.CPU_OP, 300, 100, args=_p2p_args("2")),
        ev("gloo:recv", K.USER_ANNOTATION, 310, 200),  # outlives its c10d op: it lasts until the data came
        ev("c10d::allreduce_", K.CPU_OP, 600, 50), ev("gloo:all_reduce", K.USER_ANNOTATION, 610, 30),
    ]))
    got = [(c.kind, c.start_ns, c.peer if c.HasField("peer") else None) for c in d.communication.calls]
    assert got == [("Send", 110, 0), ("Recv", 310, 2), ("AllReduce", 610, None)]


def _kinds(events):
    return [(c.start_ns, c.kind) for c in build_digest(table(events)).communication.calls]


def test_the_launchers_kind_for_the_only_and_the_last_device_row():
    only = [ev("c10d::alltoall_base_", K.CPU_OP, 0, 100, external_id=1), comm("ncclDevKernel_SendRecv", 10, 50,
                                                                               external_id=1)]
    assert _kinds(only) == [(10, "AllToAll")]
    last = [ev("gemm", K.KERNEL, 0, 5)] + [dict(e, ts=e["ts"] + 200) for e in only]
    assert _kinds(last) == [(210, "AllToAll")]


def test_the_launcher_is_looked_for_four_ops_up_and_no_further():
    def nested(depth):  # the collective, then `depth - 1` ops each inside the one before; the innermost launches
        ops = [ev("c10d::allreduce_", K.CPU_OP, 0, 1000)]
        ops += [ev(f"aten::op{k}", K.CPU_OP, 10 * k, 1000 - 20 * k) for k in range(1, depth)]
        ops[-1] = dict(ops[-1], external_id=1)
        return ops + [comm("ncclDevKernel_SendRecv", 400, 10, external_id=1)]
    # depth 4: the launching op, its parent, grandparent, then the collective (the 4th op looked at)
    assert _kinds(nested(4)) == [(400, "AllReduce")]
    assert _kinds(nested(5)) == [(400, "Send")]  # the collective is the 5th: the kernel keeps its own kind


def test_an_op_that_is_no_collective_gives_no_kind_even_when_its_name_reads_as_one():
    # aten::gather is a tensor op, not a collective: the broadcast kernel it launched stays a Broadcast
    assert _kinds([ev("aten::gather", K.CPU_OP, 0, 100, external_id=1), comm(BC, 10, 20, external_id=1)]) == [
        (10, "Broadcast")]


def test_an_hccl_operator_whose_name_says_no_kind_takes_its_launchers():
    assert _kinds([ev("c10d::allreduce_", K.CPU_OP, 0, 100, external_id=1),
                   comm("hcom_neighborExchange__1_0_1", 10, 20, external_id=1)]) == [(10, "AllReduce")]


def _cann(events, ops):
    """A window whose comm_ops side table (CANN's communication.json) holds `ops`: (op, group, start, elapse, transit,
    wait)."""
    t = table(events)
    side.put(t.side, "comm_ops", [side.row("comm_ops", step=1, kind="collective", op=op, group=g, start_ns=s,
                                           elapse_ns=e, transit_ns=tr, wait_ns=w, synchronization_ns=0, idle_ns=0)
                                  for op, g, s, e, tr, w in ops])
    t.meta.environment["source.comm_ops"] = "communication.json"
    return build_digest(t)


def test_a_window_without_communication_events_takes_its_collectives_from_cann():
    d = _cann([ev("gemm", K.KERNEL, 0, 1000)], [
        ("hcom_allReduce__586_0_1", "g", 100, 50, 30, 10), ("hcom_allReduce__587_1_1", "g", 300, 70, 40, 20),
        ("hcom_broadcast__483_0", "g2", 200, 20, 15, 5)])
    assert [(s.kind, s.group, s.calls, s.total_ns, s.min_ns, s.max_ns, s.source) for s in d.communication.collectives] \
        == [("AllReduce", "g", 2, 120, 50, 70, "communication.json"), ("Broadcast", "g2", 1, 20, 20, 20,
                                                                      "communication.json")]
    # calls by start; seq: HCCL's number in the name (586_0_1 -> 0, 587_1_1 -> 1, 483_0 -> 0)
    assert [(c.kind, c.group, c.start_ns, c.dur_ns, c.seq, c.wait_ns, c.transit_ns) for c in d.communication.calls] \
        == [("AllReduce", "g", 100, 50, 0, 10, 30), ("Broadcast", "g2", 200, 20, 0, 5, 15),
            ("AllReduce", "g", 300, 70, 1, 20, 40)]


def test_calls_only_cann_lists_join_the_events_collective_with_the_files_name():
    d = _cann([comm("hcom_allReduce__586_0_1", 100, 50, group="g")], [
        ("hcom_allReduce__586_0_1", "g", 100, 50, 30, 10), ("hcom_allReduce__587_1_1", "g", 300, 70, 40, 20)])
    assert [(s.kind, s.group, s.calls, s.total_ns, s.source) for s in d.communication.collectives] == [
        ("AllReduce", "g", 2, 120, "communication.json")]
    assert d.communication.source == "communication.json"
