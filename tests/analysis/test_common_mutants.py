"""Shared helpers of analysis/common.py on hand-made inputs: collective_kind on names of each family,
join_on and id_mask on small arrays, every expected value worked out by hand in the comments
(issue 46, mutation testing)."""
import numpy as np
import pytest

from canning_tb.analysis.common import collective_kind, id_mask, join_on
from canning_tb.ingest.table import NONE


@pytest.mark.parametrize("name,kind", [
    # vLLM's custom all-reduce: "reduce" alone would read Reduce; the name check says AllReduce
    ("void vllm::cross_device_reduce_1stage<float, 8>(vllm::RankData*, float*, int)", "AllReduce"),
    # DeepEP's token exchange: no collective word at all, AllToAll by EP_EXCHANGE_RE
    ("deep_ep::intranode::dispatch", "AllToAll"),
    # NCCL's fused send/receive: "Send" must win over the "recv" in it (send(?!recv) fails on SendRecv)
    ("ncclDevKernel_SendRecv", "Send"), ("ncclKernel_SendRecv_RING", "Send"),
    ("hcom_bcast_", "Broadcast"), ("HcclReceive", "Recv"), ("c10d::irecv_", "Recv"), ("c10d::isend_", "Send"),
    ("hcom_alltoallv_", "AllToAll"), ("NCCL_ALLREDUCE", "AllReduce"),  # any case
    ("aten::mm", "Other"), ("ncclDevKernel_Generic", "Other"),
])
def test_collective_kind_by_family(name, kind):
    assert collective_kind(name) == kind


def test_join_on_by_hand():
    """keys_to [5, 3, 5, -1]: 3 is at 1; 5 at 0 and 2, the first (stable order) is 0; 4 is absent; -1 (NONE)
    never joins though keys_to holds it at 3; 9 lies past the largest key; 1 below the smallest real one
    (between -1 and 3)."""
    out = join_on(np.array([3, 5, 4, NONE, 9, 1]), np.array([5, 3, 5, NONE]))
    assert out.tolist() == [1, 0, NONE, NONE, NONE, NONE]
    assert out.dtype == np.int64


def test_join_on_empty_and_single_sides():
    """Empty sides give all NONE / nothing; one key on either side still joins: 1 at 0, 2 absent; 3 at 1."""
    assert join_on(np.array([1, 2]), np.array([], np.int64)).tolist() == [NONE, NONE]
    assert join_on(np.array([], np.int64), np.array([1])).tolist() == []
    assert join_on(np.array([1, 2]), np.array([1])).tolist() == [0, NONE]
    assert join_on(np.array([3]), np.array([5, 3])).tolist() == [1]


def test_join_on_takes_the_first_of_repeated_keys():
    """keys_to = i % 5 for i in 0..99: each key 0..4 occurs 20 times, first at position i (a reused id joins
    its earliest holder, the same on every run); 100 keys, past the sizes where numpy's default sort happens
    to keep equal keys in order."""
    keys_to = np.arange(100) % 5
    assert join_on(np.arange(5), keys_to).tolist() == [0, 1, 2, 3, 4]


def test_id_mask_by_hand():
    """ids {3, 2} in 0..7 (9 and -1 out of range, dropped); col 0, 3, -1, 8, 2, -5, 7: only 3 and 2 are in;
    -1 (NONE), 8 (= size) and -5 read the lookup's last, False entry."""
    col = np.array([0, 3, -1, 8, 2, -5, 7])
    assert id_mask(col, [3, 2, 9, -1], 8).tolist() == [False, True, False, False, True, False, False]


def test_id_mask_edges():
    """No ids, or no column: all False of the column's length; size 0: nothing is in (every id out of range);
    the largest id, size - 1, is in; an id equal to size is not."""
    col = np.array([0, 1, 2])
    assert id_mask(col, [], 3).tolist() == [False] * 3
    assert id_mask(np.array([], np.int64), [1], 3).tolist() == []
    assert id_mask(col, [0], 0).tolist() == [False] * 3
    assert id_mask(col, [2, 3], 3).tolist() == [False, False, True]
    assert id_mask(np.array([3, 2]), [3], 3).tolist() == [False, False]


def test_id_mask_one_side_out_of_range():
    """ids {4} in 0..7. A column with one value: 2 is not in, 4 is. col [-5, 4]: -5 lies below NONE alone
    (the largest value is in range) and is not in (read naively, lut[-5] would be lut[4], True); col [9, 4]:
    9 lies past the range alone (the smallest is in range) and is not in."""
    assert id_mask(np.array([2]), [2], 3).tolist() == [True]
    assert id_mask(np.array([2]), [4], 8).tolist() == [False]
    assert id_mask(np.array([-5, 4]), [4], 8).tolist() == [False, True]
    assert id_mask(np.array([9, 4]), [4], 8).tolist() == [False, True]
