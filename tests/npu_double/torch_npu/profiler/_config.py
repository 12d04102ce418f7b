"""ProfilerActivity, _ExperimentalConfig and torch_npu's message helpers (FAKE, see the package docstring)."""
import datetime
import enum
import functools
import os


class ProfilerActivity(enum.Enum):  # a pybind enum in torch_npu._C._profiler: CPU and NPU only
    CPU = 0
    NPU = 1


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


class _ExperimentalConfig:
    def __init__(self, profiler_level="Level0", aic_metrics="ACL_AICORE_NONE", l2_cache=False,
                 data_simplification=True, record_op_args=False, export_type="text"):
        self._profiler_level, self._aic_metrics, self._l2_cache = profiler_level, aic_metrics, l2_cache
        self._data_simplification, self.record_op_args, self._export_type = \
            data_simplification, record_op_args, [export_type]


def _msg(level: str, message: str) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    print(f"{now} [{level}] [{os.getpid()}] profiler.py: {message}")


def print_warn_msg(message: str) -> None:
    _msg("WARNING", message)


def print_error_msg(message: str) -> None:
    _msg("ERROR", message)


def no_exception_func(default_ret=None):
    """torch_npu wraps its API in this: an exception is printed, then swallowed."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as ex:  # noqa: BLE001  the behaviour being imitated
                print_error_msg(f"Call {func.__name__} failed. Exception: {str(ex)}")
                return default_ret
        return wrapper
    return decorator
