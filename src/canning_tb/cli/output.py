"""What every JSON answer of canning-prof shares: its schema tag and how it is written."""
from __future__ import annotations

import json
import sys

JSON_SCHEMA = "canning-prof/1"


def dump_json(obj, out=None) -> None:
    out = out or sys.stdout
    json.dump(obj, out, indent=1, allow_nan=False)
    out.write("\n")


def is_report(path: str) -> bool:
    """The file is a JSON report of canning-prof (performance.json, `--format=json` output): its
    schema tag is in its first bytes."""
    with open(path, "rb") as f:
        head = f.read(256)
    return head.lstrip().startswith(b"{") and f'"schema": "{JSON_SCHEMA}"'.encode() in head
