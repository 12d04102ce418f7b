"""What every JSON answer of canning-prof shares: its schema tag and how it is written."""
from __future__ import annotations

import json
import sys

JSON_SCHEMA = "canning-prof/1"  # --mode=compare
VIEW_SCHEMA = "canning-prof/2"  # --mode=view; 2: the run-level report, window digests on request


def dump_json(obj) -> None:
    # compact: the C encoder (json's pure-Python one, taken with any indent, was half of a 1,024-rank report's time)
    sys.stdout.write(json.dumps(obj, allow_nan=False))
    sys.stdout.write("\n")
