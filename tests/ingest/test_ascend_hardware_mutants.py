"""ingest/ascend/hardware.py under mutation: HCCL byte counts and the kind of a device task, each by hand."""
from __future__ import annotations

import pytest

from canning_tb.ingest.ascend.hardware import STREAM_RE, classify_hardware, hccl_bytes
from canning_tb.ingest.table import NONE, Kind

# the width of each HCCL data type name, from the types themselves (8, 16, 32, 64, 128 bits)
_WIDTHS = [("INT8", 1), ("UINT8", 1), ("FP8", 1), ("HIF8", 1), ("BOOL", 1),
           ("INT16", 2), ("UINT16", 2), ("FP16", 2), ("BF16", 2), ("BFP16", 2),
           ("INT32", 4), ("UINT32", 4), ("FP32", 4), ("FLOAT", 4),
           ("INT64", 8), ("UINT64", 8), ("FP64", 8), ("DOUBLE", 8), ("INT128", 16)]


@pytest.mark.parametrize("dtype,size", _WIDTHS)
def test_hccl_bytes_are_count_times_the_width(dtype, size):
    """3 elements of each type: 3 x its width in bytes; the type's name in lower case reads the same."""
    assert hccl_bytes({"count": 3, "data_type": dtype}) == 3 * size
    assert hccl_bytes({"count": "3", "data_type": dtype.lower()}) == 3 * size


def test_hccl_bytes_unknown():
    """No count, a negative count, no type or an unknown type: NONE; a count of 0 is 0 bytes."""
    assert hccl_bytes({"count": 0, "data_type": "FP16"}) == 0
    assert hccl_bytes({"count": -1, "data_type": "FP16"}) == NONE
    assert hccl_bytes({"data_type": "FP16"}) == NONE
    assert hccl_bytes({"count": 4}) == NONE
    assert hccl_bytes({"count": 4, "data_type": "FP12"}) == NONE
    assert hccl_bytes({"count": 4, "data_type": None}) == NONE


_CASES = [
    # (name, task type, kind, why)
    ("hcom_allReduce__586_0_1", "AI_CORE", Kind.COMM_KERNEL, "an HCCL name wins over any type"),
    ("MemcpyAsync", "MEMCPY_ASYNC", Kind.MEMCPY, "a copy type"),
    ("x", "DMA_SQE", Kind.MEMCPY, "a copy type"),
    ("x", "PCIE_DMA", Kind.MEMCPY, "a copy type"),
    ("x", "SDMA_SQE", Kind.MEMCPY, "the last copy type of the pattern"),
    ("x", "memcpy", Kind.MEMCPY, "copy types in any case"),
    ("MEMCPY_ASYNC", "Other", Kind.MEMCPY, "untyped: the name tells a copy"),
    ("sdma_sqe_x", "", Kind.MEMCPY, "untyped: the name tells a copy (any case)"),
    ("MemcpyLike", "AI_CORE", Kind.KERNEL, "a compute type: the name's Memcpy does not make it a copy"),
    ("op", "AI_CORE", Kind.KERNEL, "the first compute type"),
    ("op", "AI_VECTOR_CORE", Kind.KERNEL, ""),
    ("op", "AIV", Kind.KERNEL, ""),
    ("op", "AIC", Kind.KERNEL, ""),
    ("op", "MIX_AIC", Kind.KERNEL, ""),
    ("op", "AI_CPU", Kind.KERNEL, ""),
    ("op", "AICPU", Kind.KERNEL, ""),
    ("op", "DSA", Kind.KERNEL, ""),
    ("op", "KERNEL", Kind.KERNEL, ""),
    ("op", "FFTS_PLUS", Kind.KERNEL, ""),
    ("op", "VECTOR", Kind.KERNEL, ""),
    ("op", "CUBE", Kind.KERNEL, "the last compute type"),
    ("op", "ai_core", Kind.KERNEL, "compute types in any case"),
    ("Foo_MemSet", "AI_CORE", Kind.KERNEL, "an AI Core *_MemSet op is a kernel"),
    ("x", "MEMSET", Kind.MEMSET, "a memset type"),
    ("x", "memset_task", Kind.MEMSET, "a memset type in lower case"),
    ("MEMSET", "Other", Kind.MEMSET, "untyped, a task type's name (upper case) MEMSET"),
    ("Foo_MemSet", "SOME_TYPE", Kind.MEMSET, "typed (not compute): a memset in the name"),
    ("Foo_MemSet", "Other", Kind.KERNEL, "untyped and not upper case: an op's name, compute"),
    ("x", "EVENT_RECORD", Kind.OTHER, "a sync type"),
    ("event_x", "", Kind.OTHER, "untyped: the name's first sync word (any case)"),
    ("record_x", "", Kind.OTHER, "untyped: the name's last sync word"),
    ("wait_x", "", Kind.OTHER, "untyped: a sync word in the name"),
    ("notify_x", "", Kind.OTHER, "untyped: a sync word in the name"),
    ("sdma", "", Kind.OTHER, "untyped: a bare SDMA name is sync, not a copy"),
    ("MODEL_EXECUTE", "", Kind.OTHER, "untyped: a task type's own name"),
    ("MODEL_EXECUTE", " other ", Kind.OTHER, "untyped after strip: a task type's own name"),
    ("MatMul", "", Kind.KERNEL, "untyped: an op's name is compute"),
    ("MatMul", "SOME_TYPE", Kind.OTHER, "a type that is none of the above"),
]


@pytest.mark.parametrize("name,task_type,kind,why", _CASES)
def test_classify_hardware(name, task_type, kind, why):
    """Each rule of classify_hardware in its order (the `why` column)."""
    assert classify_hardware(name, task_type) == kind, why


@pytest.mark.parametrize("untyped", ["", "Other", "OTHER", "unknown", "N/A", "NA", "None", "NULL", "invalid",
                                     " Other "])
def test_untyped_values(untyped):
    """Each task type that says nothing: 'Foo_MemSet' (not upper case) is then an op's name (a kernel);
    a type that says something would make it a memset by its name."""
    assert classify_hardware("Foo_MemSet", untyped) == Kind.KERNEL
    assert classify_hardware("Foo_MemSet", "X" + untyped.strip() + "X") == Kind.MEMSET


def test_stream_pattern():
    """'Stream 12' and 'Stream  7' give the stream number."""
    assert STREAM_RE.search("Stream 12").group(1) == "12"
    assert STREAM_RE.search("the Stream  7 x").group(1) == "7"
    assert STREAM_RE.search("Stream x") is None
