"""torch_npu.profiler (FAKE, see the package docstring): the names torch_npu exports."""
from torch_npu import VERSION
from torch_npu.npu import _lazy_init

from ._config import ProfilerActivity, _ExperimentalConfig, supported_activities
from .profiler import profile, tensorboard_trace_handler
from .scheduler import ProfilerAction
from .scheduler import Schedule as schedule

__all__ = ["profile", "tensorboard_trace_handler", "schedule", "ProfilerAction", "ProfilerActivity",
           "_ExperimentalConfig", "supported_activities"]

if VERSION == "2.1":
    _lazy_init()  # the 2.1 branches check the device when the package is imported
