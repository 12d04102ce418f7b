"""The Kineto / torch.profiler Chrome trace as this reader takes it: the msgspec Structs the events are
decoded into (only the fields and args we use; unknown ones are skipped by the decoder, never
materialised), the categories Kineto names (libkineto ActivityType) and what each one is, and the
encodings of the args (c10::DeviceType, element sizes). What the fields mean: docs/formats/kineto.md.
"""
from __future__ import annotations

import decimal

import msgspec

from ..table import Kind

_NAN = float("nan")
_EMPTY = msgspec.Raw(b"")
F = msgspec.field


class Args(msgspec.Struct, gc=False):
    device: int = -1
    stream: int = -1
    correlation: int = -1
    ext: int = F(default=-1, name="External id")
    ext2: int = F(default=-1, name="external id")
    dims: msgspec.Raw = F(default=_EMPTY, name="Input Dims")
    dims2: msgspec.Raw = F(default=_EMPTY, name="Input dims")
    types: msgspec.Raw = F(default=_EMPTY, name="Input type")  # Raw: parsed once per distinct text
    concrete: msgspec.Raw = F(default=_EMPTY, name="Concrete Inputs")
    flops: float = _NAN  # the profiler's own count, where it wrote one (with_flops=True)
    stack: str | None = F(default=None, name="Call stack")
    nbytes: int = F(default=-1, name="bytes")
    grid: list[int] | None = None
    blocks_per_sm: float = F(default=_NAN, name="blocks per SM")
    occupancy: float = F(default=_NAN, name="est. achieved occupancy %")
    occupancy_2021: float = F(default=_NAN, name="theoretical occupancy %")  # the same estimate, its 2021 name
    registers: float = F(default=_NAN, name="registers per thread")
    shared_memory: float = F(default=_NAN, name="shared memory")
    in_nelems: int = F(default=-1, name="In msg nelems")
    out_nelems: int = F(default=-1, name="Out msg nelems")
    dtype: str | None = None
    pg_name: str | None = F(default=None, name="Process Group Name")
    pg_desc: str | None = F(default=None, name="Process Group Description")
    dev_type: int = F(default=-1, name="Device Type")
    dev_id: int = F(default=-1, name="Device Id")
    addr: int = F(default=-1, name="Addr")
    mbytes: int = F(default=0, name="Bytes")
    allocated: int = F(default=-1, name="Total Allocated")
    reserved: int = F(default=-1, name="Total Reserved")
    label: str | None = F(default=None, name="name")  # metadata events
    labels: str | None = None  # process_labels metadata: "CPU", "GPU 0", "MTIA 1"


class Ev(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str | None = None
    pid: int | str = 0
    tid: int | str = 0
    ts: float = _NAN
    dur: float = _NAN
    args: Args | None = None


class EvExact(Ev, gc=False):
    """Same, with timestamps kept as the decimal text says (for µs floats too big for float64 ns)."""

    ts: decimal.Decimal | None = None
    dur: decimal.Decimal | None = None


EVENTS = msgspec.json.Decoder(list[Ev])
EVENTS_EXACT = msgspec.json.Decoder(list[EvExact])
EVENTS_RAW = msgspec.json.Decoder(list[msgspec.Raw])
NO_ARGS = Args()
EXACT_LIMIT = 2.0 ** 43  # below this a float64 µs value is within 0.49 ns of its decimal text

# Kineto's ActivityType names (libkineto/include/ActivityType.h) -> Kind; 2021 traces capitalise them.
CATEGORY_KIND = {
    "cpu_op": Kind.CPU_OP, "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION, "python": Kind.PYTHON_FUNCTION,
    "cuda_runtime": Kind.RUNTIME, "runtime": Kind.RUNTIME, "cuda_driver": Kind.RUNTIME,
    "mtia_runtime": Kind.RUNTIME, "xpu_runtime": Kind.RUNTIME, "xpu_driver": Kind.RUNTIME,
    "privateuse1_runtime": Kind.RUNTIME, "privateuse1_driver": Kind.RUNTIME, "glow_runtime": Kind.RUNTIME,
    "hpu_op": Kind.RUNTIME,  # "HPU host side runtime event"
    "kernel": Kind.KERNEL, "mtia_ccp_events": Kind.KERNEL,  # MTIA on-device (CCP) events
    "gpu_memcpy": Kind.MEMCPY, "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET, "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
}
# Named by Kineto but not work of their own: waits seen from the device (cuda_sync, xpu_sync),
# event records, profiler overhead and ranges, counters, correlation records, the window span.
NOT_WORK = frozenset({
    "cuda_sync", "xpu_sync", "cuda_event", "overhead", "cuda_profiler_range", "xpu_scope_profiler",
    "mtia_insight", "mtia_counters", "external_correlation", "cpu_instant_event", "trace",
})
LAUNCH_FLOWS = frozenset({"ac2g", "async"})  # flow categories from a runtime launch to its device work
# Collective communication events: device work when on a device, else not work of their own.
COLLECTIVE_CATEGORY = "collective_comm"
# bytes per element of the collectives' `dtype` arg
DTYPE_SIZE = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "int8": 1,
    "byte": 1, "uint8": 1, "bool": 1, "complexfloat": 8, "complexdouble": 16, "complexhalf": 4,
    "uint16": 2, "uint32": 4, "uint64": 8,
    # the C++ type names torch.profiler writes as a host collective's `Input type` (gloo:all_reduce ...)
    "c10::half": 2, "c10::bfloat16": 2, "long int": 8, "short int": 2, "signed char": 1, "unsigned char": 1,
    "short unsigned int": 2, "unsigned int": 4, "long unsigned int": 8, "c10::complex<float>": 8,
    "c10::complex<double>": 16, "c10::complex<c10::half>": 4, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
}
# c10::DeviceType values found in `[memory]` events
DEVICE_TYPE = {0: "cpu", 1: "cuda", 6: "cuda", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia", 20: "npu"}
