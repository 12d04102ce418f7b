"""The digest's versions: the schema (SCHEMA_VERSION) and the revision of the code that computed it.

SCHEMA_VERSION: bump it on any change to digest.proto that is not a pure field addition (cached
digests of another version are recomputed).

`analysis_revision()`: the identity of the code that turns files into figures (every module of
ingest/ and analysis/, subpackages included). Every digest records it (Digest.analysis_revision),
the ones the handler writes at the source too, so a viewer can tell a digest made by other code
(an older canning-tb in the training job): the store re-makes it when the window's files are at
hand, and the views mark it as old when they are not (store/lookup.py).
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache

SCHEMA_VERSION = 6  # 2: device_wait split out of runtime; the average leaves out a distorted last step;
#   3: wait / transfer by analysis/communication/wait_transfer.py (per step, merged intervals), p2p wait not in wait_ns
#   4: findings (RuleHit fields 300-399, Evidence)
#   5: kernel measurements kept in the events (EventTable.metrics): device efficiency, modules
#   6: roofline and work rates (analysis/efficiency); coverage, kernel_types, step_clock; a CANN-only step
#      includes Preparing

_CODE = ("ingest", "analysis")  # the packages (of canning_tb) whose code makes a digest


@lru_cache(maxsize=1)
def analysis_revision() -> str:
    """12 hex digits of a hash over the source of ingest/ and analysis/ (names and contents)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha1()
    for package in _CODE:
        top = os.path.join(root, package)
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        h.update(os.path.relpath(path, root).encode() + b"\0" + f.read())
    return h.hexdigest()[:12]
