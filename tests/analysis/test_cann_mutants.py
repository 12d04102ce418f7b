"""CANN's own figures as the digest carries them (analysis/cann.py), on side-table rows written here by hand (issue 46,
docs/mutants.md "What was run on rules/events.py, attention_backward.py and cann.py": before it only whole Ascend
fixtures reached it, and a mutation run showed which of its figures no test read). Each expected value is worked out
in the docstring or a comment from the rows in the test (times in ns).
"""
from _synthetic import ev, table

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis import cann
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import Kind as K


def with_side(name, *rows, evs=()):
    t = table(list(evs))
    side.put(t.side, name, [side.row(name, **r) for r in rows])
    return t


def test_cann_steps_keep_the_rows_with_unknown_as_minus_one_and_name_their_file():
    t = with_side("step_trace", dict(step=3, computing_ns=100, communication_not_overlapped_ns=20, overlapped_ns=30,
                                     communication_ns=50, free_ns=5, stage_ns=120, bubble_ns=4,
                                     communication_not_overlapped_exclude_receive_ns=16, preparing_ns=None),
                  dict(step=None))
    t.meta.environment["source.step_trace"] = "step_trace_time.csv"
    got = cann.cann_steps(t)
    assert got[0] == pb.CannStep(step=3, source="step_trace_time.csv", computing_ns=100,
                                 communication_not_overlapped_ns=20, overlapped_ns=30, communication_ns=50, free_ns=5,
                                 stage_ns=120, bubble_ns=4, communication_not_overlapped_exclude_receive_ns=16,
                                 preparing_ns=-1)
    unknown = dict.fromkeys(("step", "computing_ns", "communication_not_overlapped_ns", "overlapped_ns",
                             "communication_ns", "free_ns", "stage_ns", "bubble_ns",
                             "communication_not_overlapped_exclude_receive_ns", "preparing_ns"), -1)
    assert got[1] == pb.CannStep(source="step_trace_time.csv", **unknown)
    assert cann.source_of(table([]), "step_trace") == ""


def _step(step, computing, overlapped, comm, free, preparing) -> pb.CannStep:
    return pb.CannStep(step=step, computing_ns=computing, overlapped_ns=overlapped,
                       communication_not_overlapped_ns=comm, free_ns=free, preparing_ns=preparing)


def test_steps_from_cann_add_preparing_to_the_device_step():
    """Step 1: 30 + (500 + 200 + 50) = 780, compute 500 - 100 = 400. Step -1 with every figure unknown: number 0,
    all 0. Step 5: overlapped 150 above computing 100: compute 0, not -50; 10 + 100 + 0 + 0 = 110."""
    nums, starts, durs, res = cann.steps_from_cann([_step(1, 500, 100, 200, 50, 30), _step(-1, -1, -1, -1, -1, -1),
                                                    _step(5, 100, 150, 0, 0, 10)])
    assert (nums.tolist(), starts.tolist(), durs.tolist()) == ([1, 0, 5], [-1, -1, -1], [780, 0, 110])
    assert {k: v.tolist() for k, v in res.items()} == {
        "compute": [400, 0, 0], "overlapped": [100, 0, 150], "communication": [200, 0, 0], "memcpy": [0, 0, 0],
        "memset": [0, 0, 0], "device_wait": [0, 0, 0], "runtime": [0, 0, 0], "dataloader": [0, 0, 0],
        "host": [30, 0, 10], "idle": [50, 0, 0]}
    assert {str(v.dtype) for v in (nums, starts, durs, *res.values())} == {"int64"}  # whole ns, as steps.breakdowns


def test_steps_start_at_their_first_device_task_less_preparing():
    """Device tasks (kernels and communication kernels) start at 100, 150, 600, 1000, 1020, 2500; a memcpy at 1600 and
    an operator at 50 are no tasks. Steps: preparing 10, 20, 5, 0; on the device 500, 900, 100, 10.
    Step 1: first task at or after 100 is 100: starts 90; the next from 100 + 500 = 600: the task at 600 itself, 580;
    the next from 600 + 900 = 1500: 2500, 2495; the next from 2600: none, -1."""
    t = table([ev("aten::add", K.CPU_OP, 50, 10), ev("k", K.KERNEL, 100, 10), ev("k", K.KERNEL, 150, 10),
               ev("hcom_allReduce__1_0_1", K.COMM_KERNEL, 600, 10), ev("k", K.KERNEL, 1000, 10),
               ev("k", K.KERNEL, 1020, 10), ev("Memcpy", K.MEMCPY, 1600, 10), ev("k", K.KERNEL, 2500, 10)])
    steps = [_step(1, 400, 0, 100, 0, 10), _step(2, 900, 0, 0, 0, 20), _step(3, 50, 0, 0, 50, 5),
             _step(4, 10, 0, 0, 0, 0)]
    assert cann.steps_from_cann(steps, t)[1].tolist() == [90, 580, 2495, -1]
    assert cann.steps_from_cann(steps, table([ev("aten::add", K.CPU_OP, 50, 10)]))[1].tolist() == [-1] * 4
    assert cann.steps_from_cann([], t)[1].tolist() == []


def test_hccl_seq_is_the_calls_index_in_its_communicator():
    assert [cann.hccl_seq(n) for n in ("hcom_allReduce__586_2_1", "hcom_broadcast__483_2", "hcom_allGather_12_7",
                                       "hcom_allReduce__586", "xhcom_allReduce__586_2_1", "aten::add")] == [
        2, 2, 7, -1, -1, -1]


def _link(size, time):
    return {"size_bytes": size, "time_ns": time}


def test_transit_is_sdma_and_rdma_or_the_on_node_links_and_rdma():
    """With an SDMA row, SDMA + RDMA only (HCCS is inside SDMA): 1000 + 24 bytes, 10 + 0 ns (an unknown time counts 0).
    An SDMA row without its size still rules the on-node links out: RDMA's 50 bytes, 4 ns. Without SDMA, HCCS + PCIE +
    SIO + RDMA where sized: 100 + 200 + 300 = 600 bytes, 1 + 2 = 3 ns (RDMA has no size). No sized link: unknown."""
    assert cann._transit({"SDMA": _link(1000, 10), "HCCS": _link(600, 6), "RDMA": _link(24, None)}) == (1024, 10)
    assert cann._transit({"SDMA": _link(None, 5), "HCCS": _link(70, 7), "RDMA": _link(50, 4)}) == (50, 4)
    assert cann._transit({"HCCS": _link(100, 1), "PCIE": _link(200, 2), "SIO": _link(300, None),
                          "RDMA": _link(None, 99)}) == (600, 3)
    assert cann._transit({"HCCS": _link(100, 1), "RDMA": _link(50, 4)}) == (150, 5)  # RDMA also without SDMA
    assert cann._transit({"RDMA": _link(None, 5)}) == (-1, 0)
    assert cann._transit({}) == (-1, 0)


def _op(step, op, **kw):
    return dict(step=step, op=op, **kw)


def _bw(step, op, transport, size, time):
    return dict(step=step, op=op, transport=transport, size_bytes=size, time_ns=time)


def test_cann_calls_per_op_with_their_links_of_the_same_step():
    """The all-reduce in step 1 (elapse 500, its SDMA 1000 bytes) and again in step 2 (the last wins): elapse 700,
    HCCS 100 + PCIE 200 bytes of step 2, 3 ns. A send with nothing known: collective, group "", 0 ns elapse, the rest
    -1, no bytes (its RDMA has no size). A receive of -5 ns elapse: 0."""
    t = with_side("comm_ops",
                  _op(1, "hcom_allReduce__1_0_1", kind="collective", group="g1", start_ns=100, elapse_ns=500,
                      transit_ns=300, wait_ns=150, synchronization_ns=50),
                  _op(1, "hcom_send__2_0_1"),
                  _op(1, "hcom_receive__3_0_1", kind="p2p", group="g2", start_ns=900, elapse_ns=-5, transit_ns=0,
                      wait_ns=0, synchronization_ns=0),
                  _op(2, "hcom_allReduce__1_0_1", kind="collective", group="g1", start_ns=5000, elapse_ns=700,
                      transit_ns=400, wait_ns=250, synchronization_ns=40))
    side.put(t.side, "comm_bandwidth", [side.row("comm_bandwidth", **r) for r in (
        _bw(1, "hcom_allReduce__1_0_1", "SDMA", 1000, 10), _bw(2, "hcom_allReduce__1_0_1", "HCCS", 100, 1),
        _bw(2, "hcom_allReduce__1_0_1", "PCIE", 200, 2), _bw(1, "hcom_send__2_0_1", "RDMA", None, 5))])
    got = cann.cann_calls(t)
    assert got == {
        "hcom_allReduce__1_0_1": cann.CannCall("hcom_allReduce__1_0_1", "g1", "collective", 2, 5000, 700, 400, 250, 40,
                                               300, 3),
        "hcom_send__2_0_1": cann.CannCall("hcom_send__2_0_1", "", "collective", 1, -1, 0, -1, -1, -1, -1, 0),
        "hcom_receive__3_0_1": cann.CannCall("hcom_receive__3_0_1", "g2", "p2p", 1, 900, 0, 0, 0, 0, -1, 0)}
    assert cann.cann_calls(table([])) == {}


def _detail(name, shapes, stack, hs, ht, ds, dt):
    return dict(name=name, input_shapes=shapes, call_stack=stack, host_self_ns=hs, host_total_ns=ht, device_self_ns=ds,
                device_total_ns=dt)


def _stat(o) -> tuple:
    return (o.name, o.input_shapes, o.call_stack, o.calls, o.host_self_ns, o.host_total_ns, o.device_self_ns,
            o.device_total_ns, o.host_total_min_ns, o.host_total_max_ns, o.has_call_stack)


def test_operator_details_grouped_by_name_by_shapes_and_by_stack():
    """Rows: mm a (shapes S1, stack f1;f0: host 10 / 100, device 5 / 50), mm b (S1, no stack: host self unknown / 300,
    device -1 / 70), mm c (S2, f1;f0: 20 / 200, 6 / unknown), add (no shapes, empty stack: 1 / 600, 0 / 0). Unknown and
    negative times count 0. By name: mm 3 calls, host 30 / 600, device 11 / 120, totals 100 to 300, a stack; add.
    By shapes: mm S1 (a, b): 2 calls, 10 / 400, 5 / 120, 100 to 300; mm S2 (c). By stack: mm f1;f0 (a, c): 30 / 300,
    11 / 50, 100 to 200; mm without (b): 0 / 300, 0 / 70, no stack. Longest host total first, then by name, shapes,
    stack: add (600) before mm (600) by name; the two mm of 300 by stack, "" first. Two relu calls whose host totals
    are unknown and -5 count 0 each: 0 ns, 0 to 0, last."""
    s1, s2 = "[[2, 3], [3, 4]]", "[[8, 8], [8, 8]]"
    t = with_side("operator_details", _detail("aten::mm", s1, "f1;f0", 10, 100, 5, 50),
                  _detail("aten::mm", s1, None, None, 300, -1, 70), _detail("aten::mm", s2, "f1;f0", 20, 200, 6, None),
                  _detail("aten::add", None, "", 1, 600, 0, 0),
                  _detail("aten::relu", None, None, 0, None, 0, 0), _detail("aten::relu", None, None, 0, -5, 0, 0))
    by_name, by_shape, by_stack = cann.ops_from_operator_details(t)
    add = ("aten::add", "", "", 1, 1, 600, 0, 0, 600, 600, False)
    relu = ("aten::relu", "", "", 2, 0, 0, 0, 0, 0, 0, False)  # host totals unknown and -5: 0 each, 0 to 0
    assert [_stat(o) for o in by_name] == [add, ("aten::mm", "", "", 3, 30, 600, 11, 120, 100, 300, True), relu]
    assert [_stat(o) for o in by_shape] == [add, ("aten::mm", s1, "", 2, 10, 400, 5, 120, 100, 300, True),
                                            ("aten::mm", s2, "", 1, 20, 200, 6, 0, 200, 200, True), relu]
    assert [_stat(o) for o in by_stack] == [add, ("aten::mm", "", "", 1, 0, 300, 0, 70, 300, 300, False),
                                            ("aten::mm", "", "f1;f0", 2, 30, 300, 11, 50, 100, 200, True), relu]
    assert cann.ops_from_operator_details(table([])) == ([], [], [])
