"""A piece of a Kineto trace through the compiled scanner (native/kineto_scan.c), when it is built: one pass over the
piece's bytes gives the columns of its complete, flow-end and instant events, one table of the distinct
JSON texts they name (decoded here once each, by msgspec) and one of their raw args texts; the metadata
events come back as byte spans, decoded here by msgspec in one call. `scan` returns None for a piece the
scanner declines or whose spans or grids the typed decode rejects: the reader then decodes it as before
(read._Reader.chunk), so both give the same columns. CANNING_KINETO_SCAN=0 turns the scanner off (the
equality tests compare both readings). Nothing here changes a reader: read._Reader.add_scanned does.
"""
from __future__ import annotations

import os

import msgspec
import numpy as np

from .schema import EVENTS, Args, Ev

try:  # built by pip from native/kineto_scan.c where a C compiler is found (setup.py: optional)
    from canning_tb.ingest.native import _kineto_scan as _scan
except ImportError:  # pragma: no cover - the typed decode then takes every piece
    _scan = None

_GRID = msgspec.json.Decoder(list[int] | None)
_X, _F = ord("X"), ord("f")


def _schema_fields() -> dict[str, list[str]]:
    """schema.Ev's and schema.Args's field names by the type the scanner reads them as."""
    by_type = {"int": [], "float": [], "text": [], "raw": []}
    kinds = {int: "int", float: "float", str | None: "text", msgspec.Raw: "raw", list[int] | None: "raw"}
    for field in msgspec.structs.fields(Args):
        by_type[kinds[field.type]].append(field.encode_name)
    return {"top": [f.encode_name for f in msgspec.structs.fields(Ev)], **by_type}


# the scanner's columns are in its field order; any drift from schema.py turns it off (and fails a test)
_FIELDS = _scan.fields() if _scan is not None else None
_AGREES = _FIELDS is not None and {k: sorted(v) for k, v in _FIELDS.items()} == {
    k: sorted(v) for k, v in _schema_fields().items()}


def enabled() -> bool:
    return _AGREES and os.environ.get("CANNING_KINETO_SCAN", "1") != "0"


def column(kind: str, name: str) -> int:
    """Index of an args field in the scanner's `kind` columns (ints, floats, texts, raws)."""
    return _FIELDS[kind].index(name)


class Scanned:
    """One piece's rows (complete, flow-end and instant events) and its decoded metadata (`others`)."""

    def __init__(self, got: dict, piece, values: list, grids: dict, others: list):
        n = self.n = got["n"]
        self.piece = piece
        self.ph = np.frombuffer(got["ph"], np.uint8)
        self.cat = np.frombuffer(got["cat"], np.int32)
        self.name = np.frombuffer(got["name"], np.int32)
        self.pid, self.tid = np.frombuffer(got["pid"], np.int64), np.frombuffer(got["tid"], np.int64)
        self.pid_ref, self.tid_ref = np.frombuffer(got["pid_ref"], np.int32), np.frombuffer(got["tid_ref"], np.int32)
        self.ts, self.dur = np.frombuffer(got["ts"], np.float64), np.frombuffer(got["dur"], np.float64)
        self.ints = np.frombuffer(got["ints"], np.int64).reshape(n, len(_FIELDS["int"]))
        self.floats = np.frombuffer(got["floats"], np.float64).reshape(n, len(_FIELDS["float"]))
        self.texts = np.frombuffer(got["texts"], np.int32).reshape(n, len(_FIELDS["text"]))
        self.raws_of = np.frombuffer(got["raws_of"], np.int32).reshape(n, len(_FIELDS["raw"]))
        self.span = np.frombuffer(got["span"], np.int64).reshape(n, 2)
        self.values = values + [None]  # ids into the decoded texts; [-1]: absent or null
        self.raws = got["raws"] + [b""]  # [-1]: absent (schema's Raw default)
        self.grids = grids  # raw id -> the grid list, or None
        self.others = others

    def events(self, rows) -> list[Ev]:
        """Rows decoded again from their text by the typed decode (for the few that need objects)."""
        return [msgspec.json.decode(self.piece[a:b], type=Ev) for a, b in self.span[rows].tolist()]


def scan(piece) -> Scanned | None:
    got = _scan.scan(piece)
    if got is None:
        return None
    view = memoryview(piece)
    spans = np.frombuffer(got["other"], np.int64).reshape(-1, 2).tolist()
    try:
        others = EVENTS.decode(b"[" + b",".join(view[a:b] for a, b in spans) + b"]") if spans else []
        grid_col = np.frombuffer(got["raws_of"], np.int32)[column("raw", "grid")::len(_FIELDS["raw"])]
        grids = {int(g): _GRID.decode(got["raws"][g]) for g in np.unique(grid_col[grid_col >= 0]).tolist()}
    except msgspec.ValidationError:  # a field of another type: the typed decode's own path decides
        return None
    values = msgspec.json.decode(b"[" + b",".join(got["strings"]) + b"]")
    return Scanned(got, view, values, grids, others)


def first_sight(ids: np.ndarray) -> np.ndarray:
    """The distinct ids of a column in the order they first appear (the order a row-by-row reader
    interns them in)."""
    uniq, first = np.unique(ids, return_index=True)
    return uniq[np.argsort(first, kind="stable")]


def lut(ids: np.ndarray, of) -> np.ndarray:
    """ids -> of(id), computed once per distinct id in first-sight order; index -1 maps to of(-1)."""
    out = np.zeros(int(ids.max(initial=-1)) + 2, np.int64)
    for i in first_sight(ids).tolist():
        out[i] = of(i)  # -1 lands on the last slot, which no other id uses
    return out[ids]
