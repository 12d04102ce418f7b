"""What a device task of trace_view.json (or of the SQLite export's TASK table) is, by its name and
task type, and the HCCL data type sizes: shared by the trace and db readers."""
from __future__ import annotations

import re

from canning_tb.ingest.table import NONE, Kind, is_comm_kernel_name

from .csv.rows import to_int

DTYPE_BYTES = {
    "INT8": 1, "UINT8": 1, "FP8": 1, "HIF8": 1, "BOOL": 1,
    "INT16": 2, "UINT16": 2, "FP16": 2, "BF16": 2, "BFP16": 2,
    "INT32": 4, "UINT32": 4, "FP32": 4, "FLOAT": 4,
    "INT64": 8, "UINT64": 8, "FP64": 8, "DOUBLE": 8, "INT128": 16,
}

_COMPUTE_TASK_RE = re.compile(r"AI_CORE|AI_VECTOR|AIV|AIC|MIX|AI_CPU|AICPU|DSA|KERNEL|FFTS|VECTOR|CUBE", re.I)
_MEMCPY_RE = re.compile(r"MEMCPY|DMA_SQE|PCIE_DMA|SDMA_SQE", re.I)
_SYNC_RE = re.compile(r"EVENT_|NOTIFY|WRITE VALUE|PLACE_HOLDER|PROFILING_|^SDMA$|RDMA|REDUCE_INLINE|STARS_COMMON|"
                      r"BARRIER|WAIT|RECORD", re.I)
# Task Type values that say nothing of the task: CANN writes "Other" where it does not know the
# hardware type (every task of some versions); the task's name then tells (an op name, or the
# task type's own name for sync and copy tasks)
_UNTYPED = frozenset({"", "OTHER", "UNKNOWN", "N/A", "NA", "NONE", "NULL", "INVALID"})
_TASK_TYPE_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # MODEL_EXECUTE, STREAM_SWITCH: a task type, no op
STREAM_RE = re.compile(r"Stream\s+(\d+)")


def hccl_bytes(args: dict) -> int:
    count = to_int(args.get("count"))
    size = DTYPE_BYTES.get(str(args.get("data_type", "")).upper())
    if count is None or size is None or count < 0:
        return NONE
    return count * size


def classify_hardware(name: str, task_type: str) -> Kind:
    if is_comm_kernel_name(name):
        return Kind.COMM_KERNEL
    untyped = task_type.strip().upper() in _UNTYPED
    if untyped:
        task_type = ""
    if _MEMCPY_RE.search(task_type) or (not _COMPUTE_TASK_RE.search(task_type) and _MEMCPY_RE.search(name)):
        return Kind.MEMCPY
    if _COMPUTE_TASK_RE.search(task_type):  # incl. AI_CORE "*_MemSet" kernels, which kernel_details lists
        return Kind.KERNEL
    # an op named *_MemSet runs on the AI Core (a kernel); a memset task is named by its type (MEMSET...)
    if "MEMSET" in task_type.upper() or ("MEMSET" in name.upper() and (not untyped or name.isupper())):
        return Kind.MEMSET
    if _SYNC_RE.search(task_type) or _SYNC_RE.search(name):
        return Kind.OTHER
    if not task_type:  # no type, or one that says nothing: an op's name is compute, a task type's is not
        return Kind.OTHER if _TASK_TYPE_NAME_RE.match(name) else Kind.KERNEL
    return Kind.OTHER
