"""torch_npu.npu (FAKE, see the package docstring): device presence and its lazy initialisation."""
import os


def is_available() -> bool:
    return os.environ.get("NPU_DOUBLE_DEVICES", "1") != "0"


def device_count() -> int:
    return 1 if is_available() else 0


def _lazy_init() -> None:
    # torch_npu's real _lazy_init fails in its C++ layer when no device or driver answers
    if not is_available():
        raise RuntimeError("npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1 NPU "
                           "function error: aclrtGetDeviceCount, error code is 507033")
