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


class _Memory:
    """torch_npu.npu.memory (FAKE): the allocator's history switch and its snapshot. The NPU's allocator cannot
    run here, so its snapshot is a real one recorded on an Ascend NPU (NPU_DOUBLE_SNAPSHOT: a pickle of
    tests/fixtures/memory_snapshot, ours and trusted), with its history only while recording is on, as torch_npu
    gives it."""

    def __init__(self):
        self.recording = False
        self.max_entries = None
        self.calls = []  # (enabled, max_entries) of every _record_memory_history call

    def _record_memory_history(self, enabled="all", context="all", stacks="all", max_entries=9223372036854775807,
                               **kwargs):
        self.calls.append((enabled, max_entries))
        self.recording = enabled is not None and enabled is not False
        self.max_entries = max_entries if self.recording else None

    def _snapshot(self, device=None):
        import pickle
        path = os.environ.get("NPU_DOUBLE_SNAPSHOT", "")
        if not path:
            return {"segments": [], "device_traces": [[]]}
        with open(path, "rb") as f:
            snap = pickle.load(f)  # the trusted fixture (see the class doc)
        if not self.recording:
            snap["device_traces"] = [[] for _ in snap["device_traces"]]
        return snap


memory = _Memory()
