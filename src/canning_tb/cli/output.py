"""What every JSON answer of canning-prof shares: its schema tag and how it is written."""
from __future__ import annotations

import json
import sys

from canning_tb.ingest.file_head import file_head, is_canning_report

JSON_SCHEMA = "canning-prof/1"  # --mode=compare
VIEW_SCHEMA = "canning-prof/2"  # --mode=view; 2: the run-level report, window digests on request


def dump_json(obj, out=None) -> None:
    out = out or sys.stdout
    # compact: the C encoder (json's pure-Python one, taken with any indent, was half of a 1,024-rank report's time);
    # keys sorted: maps built from dicts, sets and protobuf maps come out in the same order in every process,
    # so the same input gives the same bytes (docs/cli-json.md)
    out.write(json.dumps(obj, allow_nan=False, sort_keys=True))
    out.write("\n")


def is_report(path: str) -> bool:
    """The file is a JSON report of canning-prof (performance.json, `--format=json` output)."""
    return is_canning_report(file_head(path, 256))
