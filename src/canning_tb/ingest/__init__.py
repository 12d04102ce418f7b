"""Readers, one per format, each producing one columnar EventTable (see table.py).

The names below load table.py (numpy) on first use only, so that light modules of this package
(ascend/layout.py, which discovery uses) import without numpy, as the plugin must load without it.
"""
__all__ = ["NONE", "EventTable", "InputError", "Kind", "Meta", "Problem", "Strings"]


def __getattr__(name: str):
    if name in __all__:
        from . import table
        return getattr(table, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
