"""Communication edges the fixtures do not reach, by hand on events placed here (ns; written after
mutation testing showed them untested: docs/mutants.md).

The collective kind of a device communication kernel (analysis/communication/collectives.py): the
kind of the host collective that launched it (up to 4 enclosing ops up) when that one is specific,
except where the kernel's own name is the collective (HCCL's hcom_<kind>__ operators); a kernel no
collective launched keeps the kind of its own name.
"""
from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.table import Kind as K


def test_collective_kind_from_the_launcher_unless_the_kernel_names_its_own():
    d = build_digest(table([
        # NCCL runs all_to_all as SendRecv kernels: the host op says AllToAll
        ev("c10d::alltoall_base_", K.CPU_OP, 0, 100, external_id=1),
        ev("ncclDevKernel_SendRecv", K.COMM_KERNEL, 10, 50, external_id=1),
        # the launch sits two ops below the collective: its kind is found up the stack
        ev("c10d::allreduce_", K.CPU_OP, 200, 100),
        ev("record_param_comms", K.CPU_OP, 210, 80),
        ev("aten::empty", K.CPU_OP, 220, 10, external_id=2),
        ev("ncclDevKernel_SendRecv", K.COMM_KERNEL, 230, 40, external_id=2),
        # HCCL names each operator by its kind: torch_npu runs gather as an all-gather
        ev("c10d::gather_", K.CPU_OP, 400, 100, external_id=3),
        ev("hcom_allGather__123_0_1", K.COMM_KERNEL, 410, 30, external_id=3),
        # no collective launched it: its own name
        ev("aten::copy_", K.CPU_OP, 600, 100, external_id=4),
        ev("ncclKernel_Broadcast_RING_LL_Sum_int8_t", K.COMM_KERNEL, 610, 20, external_id=4),
    ]))
    calls = sorted((c.start_ns, c.kind) for c in d.communication.calls)
    assert calls == [(10, "AllToAll"), (230, "AllReduce"), (410, "AllGather"), (610, "Broadcast")]
    assert sorted((s.kind, s.calls, s.total_ns) for s in d.communication.collectives) == [
        ("AllGather", 1, 30), ("AllReduce", 1, 40), ("AllToAll", 1, 50), ("Broadcast", 1, 20)]


def test_hccl_calls_are_grouped_by_their_family_and_families_stay_apart():
    """HCCL numbers every call of an operator (hcom_allReduce__586_2_1; 2023's hcom_broadcast__483_0):
    the kernel table groups communication kernels by the name without that suffix, each family on its own
    row; a compute kernel whose name ends in digits keeps its name (written after mutation testing found
    families merged unnoticed: every fixture has one family only)."""
    d = build_digest(table([
        ev("hcom_allReduce__586_2_1", K.COMM_KERNEL, 0, 30),
        ev("hcom_allReduce__587_2_1", K.COMM_KERNEL, 100, 50),
        ev("hcom_broadcast__483_0", K.COMM_KERNEL, 200, 20),
        ev("hcom_allGather__12_0_1", K.COMM_KERNEL, 300, 40),
        ev("MatMul_1_2", K.KERNEL, 400, 70),
        ev("MatMul_1_3", K.KERNEL, 500, 10),
    ]))
    rows = sorted((k.name, k.calls, k.total_ns, k.min_ns, k.max_ns) for k in d.kernels_by_name)
    assert rows == [("MatMul_1_2", 1, 70, 70, 70), ("MatMul_1_3", 1, 10, 10, 10),
                    ("hcom_allGather_", 1, 40, 40, 40), ("hcom_allReduce_", 2, 80, 30, 50),
                    ("hcom_broadcast_", 1, 20, 20, 20)]


def test_cann_sums_stay_unknown_where_a_call_has_no_figure():
    """Issue 45: a collective that moved data with no transfer time in its file read "0.000"; CANN's
    sums (analysis/communication/ascend.py) are unknown (-1) where any call's figure is, by hand."""
    from canning_tb.analysis import digest_pb2 as pb
    from canning_tb.analysis.cann import CannCall
    from canning_tb.analysis.communication import ascend

    def call(op, transit, wait, sync):
        return CannCall(op=op, group="g", comm_type="collective", step=1, start_ns=0, elapse_ns=1000,
                        transit_ns=transit, wait_ns=wait, synchronization_ns=sync,
                        transit_bytes=716_800_000, link_time_ns=-1)
    calls = {"a": call("a", -1, 30, -1), "b": call("b", -1, 40, 5)}
    stat = pb.CollectiveStat(kind="AllReduce", group="g", calls=2, bytes=716_800_000)
    ascend.add_cann_figures(stat, ["a", "b"], calls, "communication.json")
    assert (stat.transfer_ns, stat.wait_ns, stat.synchronization_ns) == (-1, 70, -1)
    assert stat.transit_bytes == 2 * 716_800_000  # the bytes are known: only the times are not
    comm = pb.Communication()
    comm.collectives.append(stat)
    ascend.totals(comm)
    assert (comm.transfer_ns, comm.wait_ns, comm.synchronization_ns, comm.p2p_wait_ns) == (-1, 70, -1, 0)
