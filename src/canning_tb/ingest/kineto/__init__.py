"""torch.profiler / Kineto Chrome traces -> EventTable: `read_kineto` (read.py), the two-process read of big
plain traces (parallel.py), call stacks from `python_function` events (stacks.py)."""
__all__ = ["read_kineto"]


def __getattr__(name: str):
    if name == "read_kineto":
        from .read import read_kineto
        return read_kineto
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
