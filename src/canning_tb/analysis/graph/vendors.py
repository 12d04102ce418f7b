"""What blocks and what communicates, per vendor: the calls a trace names, classified once.

A runtime call in `BLOCKING` returns only when the device (or a copy from it) is done; it is a wait in
the dependency graph only where the trace shows it waited (build.py: it returned as device work ended).
`COMMUNICATION` names the libraries whose kernels and calls move data between ranks. Names are matched
as whole API names, never as substrings of other names.
"""
from __future__ import annotations

import re

BLOCKING = {
    "nvidia": ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
               "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyPeer", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
               "cudaFree", "cudaFreeHost", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
               "cuMemcpy", "cuMemcpyDtoH", "cuMemcpyHtoD", "cuMemFree"),
    "amd": ("hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy", "hipMemcpy2D",
            "hipMemcpy3D", "hipMemcpyWithStream", "hipMemcpyPeer", "hipMemcpyDtoH", "hipMemcpyHtoD",
            "hipMemcpyToSymbol", "hipMemcpyFromSymbol", "hipFree", "hipHostFree"),
    "ascend": ("aclrtSynchronizeDevice", "aclrtSynchronizeStream", "aclrtSynchronizeStreamWithTimeout",
               "aclrtSynchronizeEvent", "aclrtMemcpy", "aclrtFree", "aclrtFreeHost"),
    "mtia": ("mtiaDeviceSynchronize", "mtiaStreamSynchronize", "mtiaEventSynchronize", "mtiaMemcpy"),
}
COMMUNICATION = {
    "nvidia": ("nccl", "nvshmem", "deep_ep", "symmetric_memory"),
    "amd": ("rccl", "mori", "deep_ep"),
    "ascend": ("hccl", "hcom", "lccl"),
    "mtia": ("mtia_ccl",),
    "host": ("gloo", "c10d", "mpi"),
}
# host calls that wait for other threads or ranks: c10d's Work.wait, barriers, torch_npu's synchronize
HOST_WAIT = ("c10d::wait", "aten::wait", "c10d::barrier", "torch.cuda.synchronize", "torch_npu.npu.synchronize")
_blocking_names = sorted({n for names in BLOCKING.values() for n in names}, key=len, reverse=True)
# "AscendCL@aclrtSynchronizeStream" as torch_npu writes CANN API calls
BLOCKING_RE = re.compile(r"^(?:AscendCL@)?(?:" + "|".join(map(re.escape, _blocking_names)) + r")$")
HOST_WAIT_RE = re.compile(r"^(?:" + "|".join(map(re.escape, HOST_WAIT)) + r")$|" + BLOCKING_RE.pattern)
