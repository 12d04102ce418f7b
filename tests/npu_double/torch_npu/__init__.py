"""A FAKE torch_npu, for tests only.

The real torch_npu needs Ascend hardware and the CANN toolkit (its `_C` extension links libascendcl,
libhccl, ...), so it cannot be imported here. This package behaves as torch_npu's profiler does,
written from a reading of its source (Ascend/pytorch, torch_npu/profiler: profiler.py,
profiler_interface.py, _profiler_path_creator.py, _profiler_action_controller.py, scheduler.py,
analysis/_npu_profiler.py, analysis/_profiling_parser.py), not copied from it. What it cannot do, it
takes from a real recording: the analysed output (ASCEND_PROFILER_OUTPUT) is copied from a real
torch_npu folder among the fixtures (tests/fixtures/ascend).

Environment (set by the tests):
    NPU_DOUBLE_VERSION   "2.1" (as branch v2.1.0-6.0.0) or "current" (26.x / master; the default)
    NPU_DOUBLE_FIXTURE   a folder holding real rank<N>_ascend_pt folders; rank N % count is copied
    NPU_DOUBLE_DEVICES   "0": no NPU device (torch_npu raises when a profile is built)
    NPU_DOUBLE_PARSE_S   seconds its analysis takes (spread over the files it writes), default 0.3
"""
import os

import torch  # noqa: F401  the real torch_npu patches torch, which must come first

from . import _C, npu  # noqa: F401

VERSION = os.environ.get("NPU_DOUBLE_VERSION", "current")
__version__ = "2.1.0.post6" if VERSION == "2.1" else "2.8.0.post1"
