"""What the fast tests of the MCP tools' answers share: the glossary as the JSON file has it (read here, not
through the code under test), a glossary entry as the tools must quote it, the offset a cursor carries, and a
host whose windows are digested (or `pending`) that records which windows it was asked about."""
import base64
import json
from pathlib import Path
from types import SimpleNamespace

GLOSSARY = json.loads((Path(__file__).parents[2] / "src/canning_tb/analysis/glossary.json").read_text())


def entry(term: str) -> dict:
    return {"term": term, "name": GLOSSARY[term]["label"], "definition": GLOSSARY[term]["tip"]}


def offset_in(cursor: str) -> int:
    return int(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().split(":")[0])


def recording_host(store, pending=None) -> SimpleNamespace:
    asked = []

    def pend(run, worker, window):
        asked.append((run, worker, window))
        return pending

    return SimpleNamespace(pending=pend, store=lambda: store, asked=asked)
