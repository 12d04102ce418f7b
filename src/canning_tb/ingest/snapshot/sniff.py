"""A memory snapshot told from its first bytes, for discovery (light: no numpy, no unpickling).

A snapshot is a pickle (protocol 2 or later starts with the PROTO opcode, 0x80, and its version) of a dict whose
keys "segments" / "device_traces" are short strings near its start. The reader checks the content in full.
"""
from __future__ import annotations

import re

from canning_tb.ingest.file_head import file_head

SUFFIXES = (".pickle", ".pkl")
_KEY = re.compile(rb"\x8c\x08segments|\x8c\x0ddevice_traces|X\x08\x00\x00\x00segments|X\x0d\x00\x00\x00device_traces")


def has_snapshot_name(name: str) -> bool:
    return name.lower().endswith(SUFFIXES) and not name.startswith(".")


def looks_like_snapshot(path: str) -> bool:
    head = file_head(path, 65536)
    return len(head) > 2 and head[0] == 0x80 and 2 <= head[1] <= 5 and _KEY.search(head) is not None
