"""The first bytes of a file, gunzipped when it is gzip: enough to tell a format by its content.
Light on purpose (no numpy): discovery uses it while the plugin loads."""
from __future__ import annotations

import gzip
import zlib

from canning_tb.util.safe_files import read_file


def file_head(path: str, limit: int) -> bytes:
    """Up to `limit` bytes of the file's content (decompressed for gzip); b"" when unreadable (or not a
    regular file inside the logdir: safe_files)."""
    try:
        head = read_file(path, limit)
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, limit)
    except (OSError, zlib.error, gzip.BadGzipFile):
        return b""
    return head


def is_canning_report(head: bytes) -> bool:
    """canning-prof's own JSON report (performance.json, a saved `--format=json`): its schema tag is
    in the first bytes. Discovery skips it (digests, no events); the CLI reads it as its folder."""
    return head.lstrip().startswith(b"{") and b'"schema": "canning-prof/' in head[:256]
