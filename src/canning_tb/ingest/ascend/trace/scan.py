"""trace_view.json's pieces through the compiled scanner (native/ascend_scan.c), when it is built: one pass over a
piece's bytes gives its columns (phases, times in ns, the int args) and one table of the distinct raw
texts its events name (names, processes, threads, flow ids, text args, counter keys), each decoded once
here by msgspec. `decode` falls back to decode.decode_piece (msgspec, per event) for any piece the
scanner declines, so both give the same columns; `add` feeds a scanned piece to a parse._Parse
exactly as its own `piece` feeds the decoded events: the same ids, in the same order of first sight.
CANNING_TRACE_SCAN=0 turns the scanner off (the equality tests compare both readings)."""
from __future__ import annotations

import os

import msgspec
import numpy as np

from canning_tb.ingest.ascend.counters import is_id_key
from canning_tb.ingest.table import NONE

from . import decode as dec

try:  # built by pip from native/ascend_scan.c where a C compiler is found (setup.py: optional)
    from canning_tb.ingest.native import _ascend_scan as _scan
except ImportError:  # pragma: no cover - the plain reading then takes every piece
    _scan = None

_NREF, _NTEXT, _NINT, _CKEYS = 5, 5, 5, 8  # the column widths of ascend_scan.c
_OK = 1  # ts_state of a usable timestamp
_TEXT_COLS = {"dims": 0, "stack": 1, "itype": 2, "task_type": 3, "data_type": 4}
_X, _C, _M = ord("X"), ord("C"), ord("M")
_FLOWS = np.array([ord("s"), ord("f"), ord("t")], np.uint8)
_DEC_META = msgspec.json.Decoder(list[dec.Ev])


def enabled() -> bool:
    return _scan is not None and os.environ.get("CANNING_TRACE_SCAN", "1") != "0"


class Scanned:
    """One piece's columns (ascend_scan.c) with its distinct texts decoded; `canon` maps each text to the first
    of those equal to it once decoded (the plain reading keys its dicts by decoded values)."""

    def __init__(self, got: dict, values: list, metas: list):
        self.n = got["n"]
        n = self.n
        self.ph = np.frombuffer(got["ph"], np.uint8)
        self.ref = np.frombuffer(got["ref"], np.int32).reshape(n, _NREF)
        self.ts = np.frombuffer(got["ts"], np.int64)
        self.ts_ok = np.frombuffer(got["ts_state"], np.uint8) == _OK
        self.dur = np.frombuffer(got["dur"], np.int64)
        self.text = np.frombuffer(got["text"], np.int32).reshape(n, _NTEXT)
        self.ints = np.frombuffer(got["ints"], np.int64).reshape(n, _NINT)
        self.flops = np.frombuffer(got["flops"], np.float64)
        self.sig = np.frombuffer(got["sig"], np.int32)
        self.cval = np.frombuffer(got["cval"], np.float64).reshape(n, _CKEYS)
        self.cref = np.frombuffer(got["cref"], np.int32).reshape(n, _CKEYS)
        self.values = values + [None]  # [-1]: absent
        # texts that decode equal get one id (the plain reading keys its dicts by values); only an escape or
        # -0 can make two distinct texts equal, which the scanner says
        canon = _canon(values) if got["aliased"] else np.arange(len(values), dtype=np.int32)
        self.canon = np.append(canon, len(values)).astype(np.int32)
        self.metas = metas


def _hashable(v):
    return tuple(v) if type(v) is list else v


def _canon(values: list) -> np.ndarray:
    first: dict = {}
    return np.fromiter((first.setdefault(_hashable(v), k) for k, v in enumerate(values)), np.int32, len(values))


def decode(piece):
    """A piece as a Scanned, or as decode.decode_piece gives it when the scanner declines it."""
    if enabled():
        got = _scan.scan(piece)
        if got is not None:
            scanned = _scanned(got, piece)
            if scanned is not None:
                return scanned
    return dec.decode_piece(piece)


def _scanned(got: dict, piece) -> Scanned | None:
    strings = got["strings"]
    values = dec._DEC_ANY.decode(b"[" + b",".join(strings) + b"]") if strings else []
    ph = np.frombuffer(got["ph"], np.uint8)
    metas = []
    at = np.flatnonzero(ph == _M)
    if len(at):  # metadata events (a few per process), decoded as the plain reading decodes them (the
        # scanner has checked each field's type as decode.Ev declares it)
        spans = np.frombuffer(got["span"], np.int64).reshape(-1, 2)[at].tolist()
        metas = _DEC_META.decode(b"[" + b",".join(bytes(piece[a:b]) for a, b in spans) + b"]")
    sigs = np.frombuffer(got["sig"], np.int32)
    for k in set(sigs[sigs >= 0].tolist()):
        if not all(key.isascii() for key in values[k]):  # *id keys told apart by their ASCII ends in ascend_scan.c
            return None
    return Scanned(got, values, metas)


def _first_seen(keys: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows of each distinct key row in order of first sight, each row's index into them); keys are
    rows of ids below base, packed into one int64 where they fit (a sort of rows is far slower)."""
    flat = keys[:, 0].astype(np.int64)
    if base ** keys.shape[1] < 1 << 62:
        for j in range(1, keys.shape[1]):
            flat = flat * base + keys[:, j]
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]


def _ids_of(s: Scanned, refs: np.ndarray, lookup) -> np.ndarray:
    """lookup(decoded values of a row) of each row of refs (rows of text refs), once per distinct row."""
    firsts, at = _first_seen(s.canon[refs], len(s.canon))
    ids = [lookup(tuple(map(s.values.__getitem__, row))) for row in refs[firsts].tolist()]
    return np.array(ids, np.int32)[at]


def add(parse, s: Scanned) -> None:
    """Feed a scanned piece to parse (parse._Parse), as _Parse.piece feeds decoded events."""
    if not s.n:
        return
    ph = s.ph
    seq = np.arange(parse.seq, parse.seq + s.n)
    parse.seq += s.n
    rows = np.flatnonzero(ph == _X)
    if len(rows):
        _durations(parse, s, rows)
    if len(rows) == s.n:
        return
    flows = np.flatnonzero(np.isin(ph, _FLOWS))
    if len(flows):
        _flows(parse, s, flows, seq[flows])
    counters = np.flatnonzero(ph == _C)
    if len(counters):
        _counters(parse, s, counters, seq[counters])
    for e in s.metas:
        parse._meta(e)


def _combos(parse, s: Scanned, rows: np.ndarray) -> np.ndarray:
    return _ids_of(s, s.ref[rows, :4], parse.combos.__getitem__)


def _durations(parse, s: Scanned, rows: np.ndarray) -> None:
    ok = s.ts_ok[rows]
    if not ok.all():
        parse.bad += int((~ok).sum())
        rows = rows[ok]
    if not len(rows):
        return
    combo = _combos(parse, s, rows)
    parse.parts.append({"ts": s.ts[rows], "dur": np.maximum(s.dur[rows], 0), "combo": combo})
    out = {}
    host = np.flatnonzero(np.array(parse.combos.host, bool)[combo])
    for attr in dec.HOST_ARGS:
        _texts(parse, s, out, attr, rows[host], host)
    everyone = np.arange(len(rows))
    for attr in dec.DEVICE_TEXT:
        _texts(parse, s, out, attr, rows, everyone)
    m = dec.known_ints(s.ints[rows])
    for k, attr in enumerate(dec.DEVICE_INTS):
        at = np.flatnonzero(m[:, k] != dec.INT_ABSENT)
        if len(at):
            out[attr] = (at + parse.n, m[at, k])
    flops = s.flops[rows[host]]
    at = np.flatnonzero(~np.isnan(flops))
    if len(at):
        out["flops"] = (host[at] + parse.n, flops[at])
    parse.sparse.append(out)
    parse.n += len(rows)


def _texts(parse, s: Scanned, out: dict, attr: str, rows: np.ndarray, at: np.ndarray) -> None:
    """One text arg of the events `rows` (positions `at` in this piece's duration events) as ids of its space."""
    refs = s.text[rows, _TEXT_COLS[attr]]
    present = np.flatnonzero(refs >= 0)
    if not len(present):
        return
    space = parse.ids[dec.TEXT_ARGS[attr]]
    out[attr] = (at[present] + parse.n, _ids_of(s, refs[present, None], lambda v: space[v[0]]))


def _flows(parse, s: Scanned, rows: np.ndarray, seq: np.ndarray) -> None:
    combo = _combos(parse, s, rows)
    keep = np.flatnonzero(np.array(parse.combos.flow, bool)[combo])
    if not len(keep):
        return
    rows = rows[keep]
    ok = s.ts_ok[rows]
    flow = parse.ids["flow"]
    parse.flows.append({"ph": s.ph[rows], "id": _ids_of(s, s.ref[rows, 4:5], lambda v: flow[v[0]]),
                        "combo": combo[keep], "ts": np.where(ok, s.ts[rows], NONE), "ts_ok": ok,
                        "seq": seq[keep]})


def _counters(parse, s: Scanned, rows: np.ndarray, seq: np.ndarray) -> None:
    """CounterParts.add of the piece's counter events: grouped by (name, process, arg keys) in order of
    first sight; a group's values are the scanner's numbers, its id args' values the decoded texts."""
    keys = np.stack([s.canon[s.ref[rows, 0]], s.canon[s.ref[rows, 2]], s.canon[s.sig[rows]]], axis=1)
    firsts, group_of = _first_seen(keys, len(s.canon))
    order = np.argsort(group_of, kind="stable")
    cuts = np.flatnonzero(np.diff(group_of[order])) + 1
    for first, group in zip(firsts.tolist(), np.split(order, cuts)):
        r = rows[first]
        sig = s.sig[r]
        group = group[s.ts_ok[rows[group]]]
        if sig < 0 or not len(group):
            continue
        name, pid = s.values[s.ref[r, 0]], s.values[s.ref[r, 2]]
        at = rows[group]
        sig_keys = tuple(s.values[sig])
        id_pos = [k for k, key in enumerate(sig_keys) if is_id_key(key)]
        id_values = list(zip(*([s.values[v] for v in s.cref[at, k].tolist()] for k in id_pos))) if id_pos else None
        parse.counters.add_group(parse.ids["pid"][pid], name, sig_keys, lambda pos, key: s.cval[at, pos], id_values,
                                 s.ts[at], seq[group])
