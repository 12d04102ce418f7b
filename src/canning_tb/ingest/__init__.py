"""Readers, one per format, each producing one columnar EventTable (see table.py)."""
from .table import NONE, EventTable, InputError, Kind, Meta, Problem, Strings

__all__ = ["NONE", "EventTable", "InputError", "Kind", "Meta", "Problem", "Strings"]
