"""torch_npu output (`*_ascend_pt/ASCEND_PROFILER_OUTPUT`, its CSVs, trace_view.json and the SQLite export) -> EventTable.

`read_ascend` (read.py) is the entry point; `layout.py` finds the files and imports without numpy, so
discovery can use it in a plugin that must load without numpy: the name below is loaded on first use.
"""
__all__ = ["read_ascend"]


def __getattr__(name: str):
    if name == "read_ascend":
        from .read import read_ascend
        return read_ascend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
