"""A collective's message size in bytes = its element count x the size of its element type, in every
format that says them apart: Kineto's `In msg nelems` x `dtype` (NCCL kernels), a host collective's
`Input Dims` x `Input type` (gloo, recorded with record_shapes), torch_npu's HCCL `count` x
`data_type` (trace_view.json) and COMMUNICATION_OP.count x dataType (the SQLite export).

The element sizes come from torch itself (`element_size()` of a tensor of that dtype); the files'
own type names are mapped to torch dtypes by hand, from c10/core/ScalarType.h (Kineto's `dtype` is
c10's ScalarType name), the C++ type names torch.profiler writes as `Input type`, and CANN's
HcclDataType names. Each test rewrites the types of a real file's collectives (or runs a real gloo
job), so that every type is seen: the fixtures hold only Float / Byte / Long and FP32. Written
against two one-line bugs the suite let pass (issue 24, item 7): bf16 sized at 4 bytes, and the
SQLite export's counts taken as bytes.
"""
import gzip
import json
import shutil
import sqlite3

import numpy as np
import pytest

from conftest import fixture_path, read_db

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import NONE, Kind

torch = pytest.importorskip("torch")

# c10 ScalarType names (Kineto's `dtype` arg) -> torch dtype
SCALAR_TYPES = {"Float": torch.float32, "BFloat16": torch.bfloat16, "Half": torch.float16, "Double": torch.float64,
                "Long": torch.int64, "Int": torch.int32, "Short": torch.int16, "Char": torch.int8, "Byte": torch.uint8,
                "Bool": torch.bool, "ComplexFloat": torch.complex64, "ComplexDouble": torch.complex128,
                "ComplexHalf": torch.complex32, "UInt16": torch.uint16, "UInt32": torch.uint32,
                "UInt64": torch.uint64}
# CANN's HcclDataType names (torch_npu's trace_view.json `data_type`, ENUM_HCCL_DATA_TYPE) -> torch dtype
HCCL_TYPES = {"INT8": torch.int8, "INT16": torch.int16, "INT32": torch.int32, "FP16": torch.float16,
              "FP32": torch.float32, "INT64": torch.int64, "UINT64": torch.uint64, "UINT8": torch.uint8,
              "UINT16": torch.uint16, "UINT32": torch.uint32, "FP64": torch.float64, "BFP16": torch.bfloat16,
              "BF16": torch.bfloat16}  # BF16: the short name, as CANN's task tables write bf16


def size_of(dtype) -> int:
    return torch.zeros(1, dtype=dtype).element_size()


def _comm_bytes(table) -> list[tuple[int, int]]:
    """(start ns, bytes) of the table's communication events, by start."""
    ev = table.events
    rows = np.flatnonzero(ev["kind"] == int(Kind.COMM_KERNEL))
    return sorted(zip(ev["ts"][rows].tolist(), ev["bytes"][rows].tolist()))


def test_nccl_kernel_bytes_are_elements_times_the_dtype_size(tmp_path):
    """The real A100 NCCL trace, each collective kernel given the next ScalarType name in turn."""
    with gzip.open(fixture_path("hta", "nccl_parser_config", "nccl_data.json.gz")) as f:
        trace = json.load(f)
    names = list(SCALAR_TYPES)
    kernels = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel" and "dtype" in e.get("args", {})),
                     key=lambda e: e["ts"])
    assert len(kernels) >= len(names)
    expected = []
    for i, e in enumerate(kernels):
        e["args"]["dtype"] = names[i % len(names)]
        expected.append(e["args"]["In msg nelems"] * size_of(SCALAR_TYPES[names[i % len(names)]]))
    path = tmp_path / "nccl.pt.trace.json"
    path.write_text(json.dumps(trace))
    got = [b for _, b in _comm_bytes(read_kineto(str(path)))]
    assert got == expected


def test_gloo_collective_bytes_are_the_input_tensors_size(tmp_path):
    """A real one-rank gloo job under torch.profiler (record_shapes): one all_reduce per dtype; the
    host collective's bytes = numel x element size of the tensor it was given."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch without gloo")
    from torch.profiler import ProfilerActivity, profile
    dtypes = [torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.int64, torch.int32, torch.int8,
              torch.uint8]
    tensors = [torch.ones(1000 + 8 * i).to(dt) for i, dt in enumerate(dtypes)]
    path = tmp_path / "gloo.pt.trace.json"
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for x in tensors:
                dist.all_reduce(x)
        prof.export_chrome_trace(str(path))
    finally:
        dist.destroy_process_group()
    calls = build_digest(read_kineto(str(path))).communication.calls  # host ranges: the analysis picks them
    assert [c.bytes for c in sorted(calls, key=lambda c: c.start_ns)] == [x.numel() * x.element_size() for x in tensors]


def _ascend_copy(tmp_path, level: str):
    src = fixture_path("ascend", level, "rank0_ascend_pt")
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_ascend_trace_hccl_bytes_are_count_times_the_data_type_size(tmp_path):
    """level1 rank 0's trace_view.json, its HCCL ops given other data types: count x type size."""
    folder = _ascend_copy(tmp_path, "level1")
    path = folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(path.read_text())
    ops = sorted((e for e in events if "data_type" in e.get("args", {})), key=lambda e: float(e["ts"]))
    chosen = ["BFP16", "BF16", "FP16", "INT64"]
    assert len(ops) == len(chosen)
    for e, name in zip(ops, chosen):
        e["args"]["data_type"] = name
    path.write_text(json.dumps(events))
    got = [b for _, b in _comm_bytes(read_ascend(str(folder))) if b != NONE]
    assert got == [e["args"]["count"] * size_of(HCCL_TYPES[n]) for e, n in zip(ops, chosen)]


def test_ascend_db_hccl_bytes_are_count_times_the_data_type_size(tmp_path):
    """db_level1 rank 0: COMMUNICATION_OP.count x the size of its dataType (ENUM_HCCL_DATA_TYPE's
    name); the file's own FP32 ops first, then the same ops given BFP16 / INT8 / FP64."""
    folder = _ascend_copy(tmp_path, "db_level1")
    db = folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"

    def expected():
        c = read_db(db)
        rows = c.execute("select o.startNs, o.count, e.name from COMMUNICATION_OP o "
                         "join ENUM_HCCL_DATA_TYPE e on e.id = o.dataType order by o.startNs").fetchall()
        c.close()
        return [(start, count * size_of(HCCL_TYPES[name])) for start, count, name in rows]

    def ours():
        return [(ts, b) for ts, b in _comm_bytes(read_ascend(str(folder)))]

    first = expected()
    assert len(first) == 4 and ours() == first
    c = sqlite3.connect(db)
    ids = {name: i for i, name in c.execute("select id, name from ENUM_HCCL_DATA_TYPE")}
    for (start, _), name in zip(first[1:], ("BFP16", "INT8", "FP64")):
        c.execute("update COMMUNICATION_OP set dataType = ? where startNs = ?", (ids[name], start))
    c.commit()
    c.close()
    assert ours() == expected() != first
