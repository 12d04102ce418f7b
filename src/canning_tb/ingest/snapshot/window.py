"""The EventTable of a window that is a memory snapshot alone: no events (the snapshot is no trace), its file
checked to be a snapshot so that a damaged one is reported like every unreadable window."""
from __future__ import annotations

import os

from ..table import EventTable
from .unpickle import load_plain
from .read import _top


def snapshot_only_table(path: str) -> EventTable:
    _top(load_plain(path), path)  # InputError naming the file when it is not a snapshot
    table = EventTable()
    table.meta.format = "snapshot"
    table.meta.source_files = [os.path.basename(path)]
    table.check()
    return table
