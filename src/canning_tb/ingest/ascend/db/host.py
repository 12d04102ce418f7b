"""The host side of the torch_npu SQLite export, as columns (columns.py): PYTORCH_API (operators,
ProfilerStep ranges, Python functions; their call stacks grouped in SQL), STEP_TIME (steps PYTORCH_API
lacks), CANN_API (runtime calls). Mapping in docs/formats/ascend.md."""
from __future__ import annotations

import re

import numpy as np

from canning_tb.ingest import op_args
from canning_tb.ingest.ascend.csv.rows import norm_shapes
from canning_tb.ingest.table import NONE, Kind, blank_events
from canning_tb.util.arrays import distinct, distinct_pairs

from . import columns as q

_SHAPE_RE = re.compile(r"^[\d,\s;\[\]\"\r\n-]*$")
_API_CATS = {50001: "cpu_op", 50002: "queue", 50003: "python_function", 50004: "mstx"}


def _stacks(db, chain: np.ndarray, strings) -> np.ndarray:
    """Per PYTORCH_API row, the id of its call stack text (frames in stackDepth order, ';' joined)."""
    out = np.full(len(chain), NONE, np.int32)
    if "PYTORCH_CALLCHAINS" not in db.tables or not len(chain):
        return out
    rows = db.c.execute(
        "select group_concat(id), frames from (select id, group_concat(coalesce(stack, ''), ',') frames from "
        "(select id, stack from PYTORCH_CALLCHAINS order by id, stackDepth) group by id) group by frames")
    keys, values = [], []
    for ids, frames in rows:  # one row per distinct stack, never per frame or per call
        text = ";".join(f for f in (db.strings.get(int(x), "") if x else "" for x in frames.split(",")) if f)
        sid = strings.id(text)
        for i in str(ids).split(","):
            keys.append(int(i))
            values.append(sid)
    found = q.lookup(np.array(keys, np.int64), np.array(values, np.int64), chain, NONE)
    return found.astype(np.int32)


def _shapes_and_args(db, s1: np.ndarray, s2: np.ndarray, strings) -> tuple[np.ndarray, np.ndarray]:
    """(shapes, args) ids. Some versions swap inputShapes / inputDtypes: the cell whose text looks like
    shapes gives the shapes, the first other one the input dtypes (the `args`: ingest/op_args.py)."""
    if not len(s1):
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    first, second, inverse = distinct_pairs(s1, s2)
    shapes, args = [], []
    for a, b in zip(first.tolist(), second.tolist()):
        texts = [db.strings.get(cell) if cell != q.INT_NULL else None for cell in (a, b)]
        shape = next((norm_shapes(t) for t in texts if t and _SHAPE_RE.match(t)), None)
        types = next((op_args.encode(types=op_args.split_list(t)) for t in texts if t and not _SHAPE_RE.match(t)), None)
        shapes.append(NONE if shape is None else strings.id(shape))
        args.append(NONE if types is None else strings.id(types))
    return np.array(shapes, np.int32)[inverse], np.array(args, np.int32)[inverse]


def _kinds(db, name: np.ndarray, typ: np.ndarray, strings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, name id in strings, cat id in strings) of PYTORCH_API rows."""
    name_ids = q.text_ids(db, name, strings, lambda v: v or "")
    uniq = distinct(name_ids)
    steps = np.array([(strings[int(i)] or "").startswith("ProfilerStep#") for i in uniq], bool)
    is_step = steps[np.searchsorted(uniq, name_ids)] if len(name_ids) else np.zeros(0, bool)
    kind = np.where(typ == 50001, np.where(is_step, Kind.USER_ANNOTATION, Kind.CPU_OP),
                    np.where(typ == 50003, Kind.PYTHON_FUNCTION, Kind.OTHER)).astype(np.uint8)
    uniq, inverse = np.unique(typ, return_inverse=True)
    cats = np.array([strings.id(_API_CATS.get(int(t), "pytorch_api")) for t in uniq], np.int32)
    return kind, name_ids, cats[inverse] if len(uniq) else np.zeros(0, np.int32)


def _external_ids(db, conn: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """(external_id per row, (device connection id, external id)): host ops with device work get ids in
    row order; a device connection takes the id of the first op that names it (CONNECTION_IDS)."""
    ext = np.full(len(conn), NONE, np.int64)
    if "CONNECTION_IDS" not in db.tables:
        return ext, (np.zeros(0, np.int64), np.zeros(0, np.int64))
    pairs = q.select(db.c, "CONNECTION_IDS", ints=["id", "connectionId"])
    linked = np.isin(conn, pairs["id"]) & ((kind == Kind.CPU_OP) | (kind == Kind.USER_ANNOTATION))
    rows = np.flatnonzero(linked)
    ext[rows] = np.arange(1, len(rows) + 1)
    first_conn, first_at = np.unique(conn[rows], return_index=True)
    ext_of_api_conn = ext[rows][first_at]
    ext_of_pair = q.lookup(first_conn, ext_of_api_conn, pairs["id"], NONE)
    ok = ext_of_pair != NONE
    cid, e = pairs["connectionId"][ok], ext_of_pair[ok]
    order = np.lexsort((e, cid))
    cid, e = cid[order], e[order]
    first = np.append(True, cid[1:] != cid[:-1]) if len(cid) else np.zeros(0, bool)
    return ext, (cid[first], e[first])


def pytorch_api(db, strings) -> tuple[dict, set[str], tuple]:
    """(event columns, ProfilerStep names seen, (device connection ids, their external ids))."""
    if "PYTORCH_API" not in db.tables:
        return blank_events(0), set(), (np.zeros(0, np.int64), np.zeros(0, np.int64))
    c = q.select(db.c, "PYTORCH_API", ints=["startNs", "endNs", "globalTid", "connectionId", "name", "inputShapes",
                                            "inputDtypes", "callchainId", "type"])
    keep = q.known(c["startNs"])
    c = {k: v[keep] for k, v in c.items()}
    ts, typ = c["startNs"], c["type"]
    kind, name, cat = _kinds(db, c["name"], typ, strings)
    end = np.where(q.known(c["endNs"]) & (c["endNs"] != 0), c["endNs"], ts)
    gtid = np.where(q.known(c["globalTid"]) & (c["globalTid"] != 0), c["globalTid"], 0)
    ev = blank_events(len(ts))
    shapes, args = _shapes_and_args(db, c["inputShapes"], c["inputDtypes"], strings)
    ev.update(ts=ts, dur=np.maximum(end - ts, 0), kind=kind, name=name, cat=cat, pid=gtid >> 32,
              tid=gtid & 0xFFFFFFFF, shapes=shapes, args=args, stack=_stacks(db, c["callchainId"], strings))
    ev["external_id"], links = _external_ids(db, c["connectionId"], kind)
    steps = {strings[int(i)] for i in distinct(name[kind == Kind.USER_ANNOTATION])}
    return ev, steps, links


def step_time(db, strings, steps_seen: set[str]) -> dict:
    """STEP_TIME -> ProfilerStep#<id> ranges PYTORCH_API does not already hold (one row per step)."""
    rows = []
    for sid, st, en in db.rows("STEP_TIME", "select id, startNs, endNs from STEP_TIME"):
        name = f"ProfilerStep#{sid}"
        if name not in steps_seen and st is not None:
            rows.append((int(st), max(int(en or st) - int(st), 0), strings.id(name)))
    ev = blank_events(len(rows))
    if rows:
        ts, dur, name = (np.array(x, np.int64) for x in zip(*rows))
        ev.update(ts=ts, dur=dur, name=name.astype(np.int32), kind=np.full(len(rows), Kind.USER_ANNOTATION, np.uint8),
                  cat=np.full(len(rows), strings.id("step_time"), np.int32))
    return ev


def cann_api(db, strings) -> dict:
    if "CANN_API" not in db.tables:
        return blank_events(0)
    c = q.select(db.c, "CANN_API", ints=["startNs", "endNs", "type", "globalTid", "connectionId", "name"],
                 strict=("startNs", "endNs"))
    api_types = db.enum("ENUM_API_TYPE")
    uniq, inverse = np.unique(c["type"], return_inverse=True)
    cats = np.array([strings.id(api_types.get(int(t), "cann_api")) for t in uniq], np.int32)
    gtid = np.where(q.known(c["globalTid"]) & (c["globalTid"] != 0), c["globalTid"], 0)
    ev = blank_events(len(c["startNs"]))
    ev.update(ts=c["startNs"], dur=np.maximum(c["endNs"] - c["startNs"], 0),
              kind=np.full(len(gtid), Kind.RUNTIME, np.uint8), name=q.text_ids(db, c["name"], strings, lambda v: v or ""),
              cat=cats[inverse] if len(uniq) else np.zeros(0, np.int32), pid=gtid >> 32, tid=gtid & 0xFFFFFFFF,
              correlation=q.or_none(c["connectionId"], NONE))
    return ev
