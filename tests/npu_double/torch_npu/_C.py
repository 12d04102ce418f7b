"""torch_npu._C (FAKE, see the package docstring): only the allocator's out-of-memory observer. The NPU cannot
run out of memory here; `_fake_oom(...)` calls the observers as torch_npu's allocator does before it raises
(device, the request's bytes, the device's allocated bytes, its free bytes)."""
_observers = []


def _npu_attach_out_of_memory_observer(observer) -> None:
    _observers.append(observer)


def _fake_oom(device: int, alloc: int, device_allocated: int, device_free: int) -> None:
    for observer in list(_observers):
        observer(device, alloc, device_allocated, device_free)
