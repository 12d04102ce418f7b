"""Reader for torch.profiler / Kineto Chrome traces (`.json`, `.json.gz`), 2021 and current layouts.

The file is decoded a few MB at a time into small typed msgspec Structs that carry only the
fields we use (unknown args are skipped by the decoder, never materialised); each chunk becomes
numpy columns at once and its Python objects are dropped. Times: Kineto writes µs as JSON
numbers; they become int ns here, once (see `_to_ns` for exactness).
"""
from __future__ import annotations

import decimal
import json
import re
from collections import Counter
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from . import _json
from ._stacks import fill_python_stacks
from .table import (EVENT_COLUMNS, MEMORY_COLUMNS, NONE, EventTable, InputError, Kind, Meta, Problem,
                    Strings, is_comm_kernel_name)

_NAN = float("nan")
_EMPTY = msgspec.Raw(b"")
F = msgspec.field


class Args(msgspec.Struct, gc=False):
    device: int = -1
    stream: int = -1
    correlation: int = -1
    ext: int = F(default=-1, name="External id")
    ext2: int = F(default=-1, name="external id")
    dims: msgspec.Raw = F(default=_EMPTY, name="Input Dims")
    dims2: msgspec.Raw = F(default=_EMPTY, name="Input dims")
    types: msgspec.Raw = F(default=_EMPTY, name="Input type")  # Raw: parsed for collectives only
    stack: str | None = F(default=None, name="Call stack")
    nbytes: int = F(default=-1, name="bytes")
    grid: list[int] | None = None
    in_nelems: int = F(default=-1, name="In msg nelems")
    out_nelems: int = F(default=-1, name="Out msg nelems")
    dtype: str | None = None
    pg_name: str | None = F(default=None, name="Process Group Name")
    pg_desc: str | None = F(default=None, name="Process Group Description")
    dev_type: int = F(default=-1, name="Device Type")
    dev_id: int = F(default=-1, name="Device Id")
    addr: int = F(default=-1, name="Addr")
    mbytes: int = F(default=0, name="Bytes")
    allocated: int = F(default=-1, name="Total Allocated")
    reserved: int = F(default=-1, name="Total Reserved")
    label: str | None = F(default=None, name="name")  # metadata events


class Ev(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str | None = None
    pid: int | str = 0
    tid: int | str = 0
    ts: float = _NAN
    dur: float = _NAN
    args: Args | None = None


class EvExact(Ev, gc=False):
    """Same, with timestamps kept as the decimal text says (for µs floats too big for float64 ns)."""

    ts: decimal.Decimal | None = None
    dur: decimal.Decimal | None = None


_DEC = msgspec.json.Decoder(list[Ev])
_DEC_EXACT = msgspec.json.Decoder(list[EvExact])
_DEC_RAW = msgspec.json.Decoder(list[msgspec.Raw])
_NOARGS = Args()
_EXACT_LIMIT = 2.0 ** 43  # below this a float64 µs value is within 0.49 ns of its decimal text

_CAT_KIND = {
    "cpu_op": Kind.CPU_OP, "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION, "python": Kind.PYTHON_FUNCTION,
    "cuda_runtime": Kind.RUNTIME, "runtime": Kind.RUNTIME, "cuda_driver": Kind.RUNTIME,
    "kernel": Kind.KERNEL, "gpu_memcpy": Kind.MEMCPY, "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET, "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
}
_HOST = {"ext", "ext2", "dims", "stack", "pg_name"}
_DEV = {"device", "stream", "correlation", "ext", "ext2", "nbytes"}
_ALL = {f.name for f in msgspec.structs.fields(Args)}
_WANT = {Kind.PYTHON_FUNCTION: set(), Kind.CPU_OP: _HOST, Kind.USER_ANNOTATION: _HOST,
         Kind.RUNTIME: {"ext", "ext2", "correlation"}, Kind.KERNEL: _DEV | {"grid", "pg_name"},
         Kind.MEMCPY: _DEV, Kind.MEMSET: _DEV, Kind.GPU_USER_ANNOTATION: _DEV}
_DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION, Kind.COMM_KERNEL)
_DTYPE_SIZE = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "int8": 1,
    "byte": 1, "uint8": 1, "bool": 1, "complexfloat": 8, "complexdouble": 16, "complexhalf": 4,
    "uint16": 2, "uint32": 4, "uint64": 8,
}
# c10::DeviceType values found in `[memory]` events
_DEVICE_TYPE = {0: "cpu", 1: "cuda", 6: "cuda", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia", 20: "npu"}
_INT_TEXT = re.compile(r"^\s*(?:stream\s*|thread\s*)?(-?\d+)\s*$", re.I)
_I64 = (-(1 << 63), (1 << 63) - 1)


class _NeedExact(Exception):
    pass


def _check_exact(us: np.ndarray) -> None:
    if len(us) and np.any((np.abs(us) >= _EXACT_LIMIT) & (us != np.floor(us))):
        raise _NeedExact


class _Ids(dict):
    """str -> dense id, None -> NONE; `ids[s]` interns (dict lookup in C on a hit)."""

    def __init__(self, absent: Any = None):
        super().__init__({absent: NONE})
        self.n = 0

    def __missing__(self, k):
        v = self[k] = self.n
        self.n += 1
        return v

    def keys_in_order(self) -> list:
        return list(self)[1:]


def _i64(vals: list, n: int) -> np.ndarray:
    try:
        return np.fromiter(vals, np.int64, n)
    except (OverflowError, TypeError, ValueError):  # ints beyond int64, stray types: absent
        return np.fromiter((v if type(v) is int and _I64[0] <= v <= _I64[1] else NONE for v in vals),
                           np.int64, n)


def _to_ns(us: np.ndarray) -> np.ndarray:
    """µs float -> int ns, exact for |us| < 2**43 (integer part and fraction converted apart)."""
    ip = np.floor(us)
    return ip.astype(np.int64) * 1000 + np.rint((us - ip) * 1000).astype(np.int64)


def _dec_ns(v) -> int:
    if v is None:
        return NONE
    if isinstance(v, decimal.Decimal):
        return int((v * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))
    return int(_to_ns(np.array([float(v)]))[0])


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.problems: list[Problem] = []
        self.strs = _Ids()
        self.sid = self.strs.__getitem__
        self.raw_dims = _Ids(b"")
        self.collective_name: dict[int, bool] = {}  # name id -> is a host collective range
        self.named_ids = _Ids()  # pid/tid given as text ("Spans", "stream 7" ...) -> -2, -3 ...
        self.ev_parts: list[dict[str, np.ndarray]] = []
        self.mem_parts: list[dict[str, np.ndarray]] = []
        self.mem_dev: dict[tuple[int, int], int] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[str, str] = {}
        self.window_end = NONE
        self.iter_start = NONE
        self.exact = False
        self.count = Counter()

    # -- decoding -------------------------------------------------------------------------------
    def chunk(self, piece: bytes) -> None:
        if not self.exact:
            n_ev, n_mem, count = len(self.ev_parts), len(self.mem_parts), self.count.copy()
            try:
                return self._chunk(self._decode(piece, _DEC))
            except _NeedExact:  # µs floats too big for ns in float64: redo this chunk from the text
                del self.ev_parts[n_ev:], self.mem_parts[n_mem:]
                self.exact, self.count = True, count
        self._chunk(self._decode(piece, _DEC_EXACT))

    def _collective_rows(self, xs, name: np.ndarray):
        """Rows of host collective ranges, judged once per distinct name, not once per event."""
        u, first = np.unique(name, return_index=True)
        hits = []
        for uid, i in zip(u.tolist(), first.tolist()):
            flag = self.collective_name.get(uid)
            if flag is None:
                nm = xs[i].name
                flag = self.collective_name[uid] = bool(nm) and nm.startswith(_HOST_COLLECTIVE)
            if flag:
                hits.append(uid)
        return np.nonzero(np.isin(name, hits))[0].tolist() if hits else []

    def _chunk(self, evs: list) -> None:
        groups: dict[str, list] = {}  # complete events by category
        mem = []
        for e in evs:
            ph = e.ph
            if ph == "X":
                grp = groups.get(e.cat)
                if grp is None:
                    grp = groups[e.cat] = []
                grp.append(e)
            elif ph == "s" or ph == "f":
                continue
            elif ph == "i" or ph == "I":
                if e.name == "[memory]":
                    mem.append(e)
                elif e.name == "Record Window End":
                    self.window_end = self._ns1(e.ts)
                elif e.name and e.name.startswith("Iteration Start"):
                    self.iter_start = self._ns1(e.ts)
            elif ph == "M":
                self._meta(e)
        del evs
        for cat, grp in groups.items():
            self._group(cat, grp)
        if mem:
            self._memory(mem)

    def _ns1(self, v) -> int:
        try:
            return _dec_ns(v) if v == v else NONE
        except (ValueError, TypeError, OverflowError, decimal.InvalidOperation):
            return NONE

    def _decode(self, piece: bytes, dec: msgspec.json.Decoder) -> list:
        try:
            return dec.decode(piece)
        except msgspec.ValidationError:
            pass
        out = []
        typ = dec.type.__args__[0]
        for raw in _DEC_RAW.decode(piece):  # syntax errors go up: the chunk cut was wrong
            try:
                out.append(msgspec.json.decode(raw, type=typ))
            except msgspec.ValidationError:
                ev = _coerce(msgspec.json.decode(raw), typ)
                if ev is None:
                    self.count["malformed"] += 1
                else:
                    out.append(ev)
        return out

    def _ids(self, vals: list) -> np.ndarray:
        n = len(vals)
        try:
            return np.fromiter(vals, np.int64, n)
        except (OverflowError, TypeError, ValueError):
            return np.fromiter(map(self._id_of, vals), np.int64, n)

    def _id_of(self, v) -> int:
        if type(v) is int and _I64[0] <= v <= _I64[1]:
            return v
        s = str(v)
        m = _INT_TEXT.match(s)
        if m and len(m.group(1)) < 19:
            return int(m.group(1))
        return -2 - self.named_ids[s]

    def _group(self, cat: str, xs: list) -> None:
        n = len(xs)
        g = attrgetter
        if self.exact:
            ts_ns = np.fromiter(map(self._ns1, map(g("ts"), xs)), np.int64, n)
            dur_ns = np.fromiter(map(self._ns1, map(g("dur"), xs)), np.int64, n)
            ok = (ts_ns != NONE) & (dur_ns != NONE)
        else:
            ts = np.fromiter(map(g("ts"), xs), np.float64, n)
            dur = np.fromiter(map(g("dur"), xs), np.float64, n)
            ok = np.isfinite(ts) & np.isfinite(dur)
            _check_exact(ts[ok])
            ts_ns, dur_ns = _to_ns(np.where(ok, ts, 0)), _to_ns(np.where(ok, dur, 0))
        sid = self.sid
        name = np.fromiter(map(sid, map(g("name"), xs)), np.int32, n)
        ok &= name >= 0
        cols = {"ts": ts_ns, "dur": dur_ns, "name": name, "cat": np.full(n, sid(cat), np.int32),
                "pid": self._ids(list(map(g("pid"), xs))),
                "tid": self._ids(list(map(g("tid"), xs)))}
        want = _WANT.get(_kind_of_cat(cat), _ALL)
        a = [e.args or _NOARGS for e in xs] if want else []

        def col(attr, dtype=np.int64):
            if attr not in want:
                return np.full(n, NONE, dtype)
            return _i64(list(map(g(attr), a)), n).astype(dtype, copy=False)

        cols["device"] = col("device", np.int32)
        cols["stream"] = col("stream")
        cols["correlation"] = col("correlation")
        ext = col("ext")
        cols["external_id"] = np.where(ext != NONE, ext, col("ext2"))
        if "dims" in want:
            rd = self.raw_dims.__getitem__
            d1 = np.fromiter(map(rd, map(bytes, map(g("dims"), a))), np.int32, n)
            d2 = np.fromiter(map(rd, map(bytes, map(g("dims2"), a))), np.int32, n)
            cols["shapes"] = np.where(d1 >= 0, d1, d2)  # ids into raw_dims until finish()
            cols["stack"] = np.fromiter(map(sid, map(g("stack"), a)), np.int32, n)
        else:
            cols["shapes"] = cols["stack"] = np.full(n, NONE, np.int32)
        if "grid" in want:
            cols["blocks"] = np.fromiter((NONE if x is None else _prod(x) for x in map(g("grid"), a)),
                                         np.int64, n)
        else:
            cols["blocks"] = np.full(n, NONE, np.int64)
        nbytes = col("nbytes")
        group = np.full(n, NONE, np.int32)
        if "pg_name" in want:
            for i, x in enumerate(map(g("pg_name"), a)):
                if x is not None:
                    desc = a[i].pg_desc
                    group[i] = sid(f"{x} ({desc})" if desc and desc != "undefined" else str(x))
                    size = _DTYPE_SIZE.get((a[i].dtype or "").lower(), 0)
                    nel = a[i].in_nelems
                    if nbytes[i] < 0 and size and type(nel) is int and 0 <= nel < 1 << 50:
                        nbytes[i] = nel * size
        if "dims" in want:
            _collective_bytes(xs, a, nbytes, self._collective_rows(xs, name))
        cols["bytes"] = nbytes
        cols["group"] = group
        neg = cols["dur"] < 0
        if neg.any():
            self.count["negative"] += int((neg & ok).sum())
            cols["dur"][neg] = 0
        if not ok.all():
            self.count["missing"] += int((~ok).sum())
            cols = {k: v[ok] for k, v in cols.items()}
        self.ev_parts.append(cols)

    def _memory(self, mem: list) -> None:
        n = len(mem)
        g = attrgetter
        a = [e.args or _NOARGS for e in mem]
        ts = np.fromiter(map(self._ns1, map(g("ts"), mem)), np.int64, n) if self.exact else None
        if ts is None:
            f = np.fromiter(map(g("ts"), mem), np.float64, n)
            _check_exact(f[np.isfinite(f)])
            ts = np.where(np.isfinite(f), _to_ns(np.where(np.isfinite(f), f, 0)), NONE)
        # device per record, judged once per distinct (type, index) pair rather than per record
        typ = _i64(list(map(g("dev_type"), a)), n)
        idx = np.clip(_i64(list(map(g("dev_id"), a)), n), 0, (1 << 20) - 1)
        pairs, inverse = np.unique((typ + 1) * (1 << 20) + idx, return_inverse=True)
        ids = [self._mem_device(int(k >> 20) - 1, int(k & ((1 << 20) - 1))) for k in pairs.tolist()]
        dev = np.asarray(ids, np.int32)[inverse.reshape(-1)] if n else np.zeros(0, np.int32)
        cols = {"ts": ts, "device": dev, "bytes": _i64(list(map(g("mbytes"), a)), n),
                "addr": _i64(list(map(g("addr"), a)), n),
                "allocated": _i64(list(map(g("allocated"), a)), n),
                "reserved": _i64(list(map(g("reserved"), a)), n)}
        ok = ts != NONE
        if not ok.all():
            self.count["missing"] += int((~ok).sum())
            cols = {k: v[ok] for k, v in cols.items()}
        for k in ("active", "component", "op"):
            cols[k] = np.full(len(cols["ts"]), NONE, MEMORY_COLUMNS[k])
        self.mem_parts.append(cols)

    def _mem_device(self, typ: int, idx: int) -> int:
        key = (typ, idx)
        v = self.mem_dev.get(key)
        if v is None:
            kind = _DEVICE_TYPE.get(typ, f"device{typ}")
            v = self.mem_dev[key] = self.sid("CPU" if typ == 0 else f"{kind}:{max(idx, 0)}")
        return v

    def _meta(self, e: Ev) -> None:
        label = e.args.label if e.args else None
        if label is None:
            return
        pid = self._id_of(e.pid)
        if e.name == "process_name":
            self.process_names[pid] = label
        elif e.name == "thread_name":
            self.thread_names[f"{pid}:{self._id_of(e.tid)}"] = label

    # -- the table --------------------------------------------------------------------------------
    def finish(self, top: dict[str, Any]) -> EventTable:
        ev = _concat(self.ev_parts, EVENT_COLUMNS, exclude=("kind", "core"))
        self.ev_parts = []
        mem = _concat(self.mem_parts, MEMORY_COLUMNS)
        self.mem_parts = []
        strings = Strings(self.strs.keys_in_order())
        # shapes: raw JSON text -> one canonical rendering, computed once per distinct text
        lut = np.array([strings.id(_render_dims(r)) for r in self.raw_dims.keys_in_order()] + [NONE], np.int32)
        ev["shapes"] = lut[ev["shapes"]]  # NONE (-1) picks the trailing NONE
        ev["core"] = np.full(len(ev["ts"]), NONE, np.int32)
        ev["kind"] = self._kinds(ev, strings)
        dk = np.isin(ev["kind"], np.array(_DEVICE_KINDS, np.uint8))
        fix = dk & (ev["device"] < 0) & (ev["pid"] >= 0) & (ev["pid"] < 1024)
        ev["device"][fix] = ev["pid"][fix]
        fix = dk & (ev["stream"] < 0) & (ev["tid"] >= 0)
        ev["stream"][fix] = ev["tid"][fix]
        _sort_in_place(ev)
        _sort_in_place(mem)
        table = EventTable(events=ev, memory=mem, strings=strings, problems=self.problems)
        table.meta = self._meta_of(top, table)
        fill_python_stacks(table)
        self._report()
        table.check()
        return table

    def _kinds(self, ev: dict, strings: Strings) -> np.ndarray:
        vals = strings.values
        cat_lut = np.array([_kind_of_cat(s) for s in vals] + [Kind.OTHER], np.uint8)
        kind = cat_lut[ev["cat"]]
        comm = np.array([is_comm_kernel_name(s) for s in vals] + [False])
        step = np.array([s.startswith("ProfilerStep#") for s in vals] + [False])
        kind[(kind == Kind.KERNEL) & comm[ev["name"]]] = Kind.COMM_KERNEL
        kind[(kind == Kind.CPU_OP) & step[ev["name"]]] = Kind.USER_ANNOTATION
        return kind

    def _meta_of(self, top: dict[str, Any], table: EventTable) -> Meta:
        m = Meta(format="kineto", source_files=[self.path])
        env: dict[str, str] = {}
        for k, v in top.items():
            if isinstance(v, (str, int, float, bool)) and k != "traceEvents":
                env[k] = str(v)
        dist = top.get("distributedInfo")
        if isinstance(dist, dict):
            for k, v in dist.items():
                if isinstance(v, (str, int, float, bool)):
                    env[f"distributed.{k}"] = str(v)
            m.world_size = _int(dist.get("world_size"), 1)
        rank = _int(dist.get("rank"), None) if isinstance(dist, dict) else None
        if rank is None:
            # A trace without distributedInfo is a single process: rank 0 is a fact, not a guess.
            if isinstance(dist, dict):
                self.problems.append(Problem(self.path, "no rank in distributedInfo: assuming rank 0", "warning"))
            rank = 0
        m.rank = rank
        m.environment = env
        m.host = str(top.get("host_name") or top.get("hostname") or "")
        m.devices = _devices(top.get("deviceProperties"), table)
        m.process_names = dict(self.process_names)
        m.thread_names = dict(self.thread_names)
        named = {-2 - i: s for s, i in self.named_ids.items() if s is not None}
        ev = table.events
        for p in set(ev["pid"][ev["pid"] <= -2].tolist()) & set(named):
            m.process_names.setdefault(p, named[p])
        sel = ev["tid"] <= -2
        for p, t in set(zip(ev["pid"][sel].tolist(), ev["tid"][sel].tolist())):
            if t in named:
                m.thread_names.setdefault(f"{p}:{t}", named[t])
        cat_trace = table.strings.find("Trace")
        span = ev["cat"] == cat_trace if cat_trace >= 0 else np.zeros(len(ev["ts"]), bool)
        start = self.iter_start
        if span.any():
            start = int(ev["ts"][span].min()) if start == NONE else start
            end = int((ev["ts"][span] + ev["dur"][span]).max())
        else:
            end = NONE
        day = 86_400 * 10 ** 9
        if self.window_end != NONE and (start == NONE or 0 <= self.window_end - start <= day):
            end = self.window_end
        if len(ev["ts"]):
            if start == NONE:
                start = int(ev["ts"].min())
            if end == NONE:
                end = int((ev["ts"] + ev["dur"]).max())
        m.start_ns, m.end_ns = start, end
        return m

    def _report(self) -> None:
        c = self.count
        if c["missing"]:
            self.problems.append(Problem(self.path, f"{c['missing']} events without a usable name, ts or dur skipped",
                                         "warning"))
        if c["malformed"]:
            self.problems.append(Problem(self.path, f"{c['malformed']} malformed events skipped", "warning"))
        if c["negative"]:
            self.problems.append(Problem(self.path, f"{c['negative']} negative durations set to 0", "warning"))
        if c["utf8"]:
            self.problems.append(Problem(self.path, "invalid UTF-8 bytes replaced (U+FFFD)", "warning"))


def read_kineto(path: str) -> EventTable:
    """One Kineto trace file -> EventTable; raises InputError when nothing can be read."""
    path = str(path)
    r = _Reader(path)
    buf = _json.read_bytes(path)
    top_raw, buf = _json.decode_top(path, buf, r.problems)
    raw_events = top_raw.pop("traceEvents", None)
    if raw_events is None:
        raise InputError(path, "expected an object with traceEvents, found no traceEvents key")
    top = _small_values(top_raw)
    del top_raw  # its Raw views keep the whole buffer alive
    try:
        lo, hi = _json.value_span(buf, b"traceEvents", raw_events)
    except ValueError:  # key written with escapes: work on a copy of the array text
        buf = bytearray(memoryview(raw_events))
        lo, hi = 0, len(buf)
    del raw_events
    if buf[lo] != 0x5B:  # '['
        raise InputError(path, f"traceEvents is not a list (got {_json._kind(buf[lo:lo + 8])})")

    def on_utf8():
        r.count["utf8"] += 1

    try:
        for _ in _json.iter_chunks(buf, lo, hi, r.chunk, on_utf8):
            pass
    except msgspec.DecodeError as e:  # cannot happen for text decode_top accepted; be clear if it does
        raise InputError(path, f"not JSON inside traceEvents: {e}") from None
    del buf
    return r.finish(top)


# -- helpers --------------------------------------------------------------------------------------
def _small_values(top_raw: dict) -> dict[str, Any]:
    top: dict[str, Any] = {}
    for k, v in top_raw.items():
        if k in ("deviceProperties", "distributedInfo") or len(memoryview(v)) < 4096:
            try:
                top[k] = msgspec.json.decode(v)
            except msgspec.DecodeError:
                pass
    return top


def _prod(g: list) -> int:
    p = 1
    for x in g:
        p *= x
    return p if _I64[0] <= p <= _I64[1] else NONE


def _int(v, default):
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return default


def _kind_of_cat(cat: str) -> Kind:
    c = cat.lower()
    k = _CAT_KIND.get(c)
    if k is not None:
        return k
    if c.endswith("_runtime") or c.endswith("_driver"):  # xpu_runtime, privateuse1_runtime, mtia_...
        return Kind.RUNTIME
    return Kind.OTHER


_HOST_COLLECTIVE = ("gloo:", "nccl:")


def _collective_bytes(xs, args, nbytes: np.ndarray, rows: list[int]) -> None:
    """Bytes of host collective ranges (gloo:all_reduce ...): their inputs' shapes x dtype sizes.

    gloo (and the host side of NCCL) records no message size; the tensors it was given are
    the message. Only these few ranges are parsed, so the cost stays off the hot path.
    """
    for i in rows:
        if nbytes[i] >= 0:
            continue
        try:
            dims = msgspec.json.decode(bytes(args[i].dims) or b"null")
            types = msgspec.json.decode(bytes(args[i].types) or b"null")
        except msgspec.DecodeError:
            continue
        if not isinstance(dims, list) or not isinstance(types, list):
            continue
        total = 0
        for shape, dtype in zip(dims, types):
            size = _DTYPE_SIZE.get(str(dtype).lower(), 0)
            if size and isinstance(shape, list) and all(type(x) is int and x >= 0 for x in shape):
                total += _prod(shape) * size
        if total:
            nbytes[i] = total


def _render_dims(raw: bytes) -> str:
    try:
        return json.dumps(msgspec.json.decode(raw))
    except (msgspec.DecodeError, TypeError, ValueError):
        return raw.decode("utf-8", "replace")


def _devices(props, table: EventTable) -> list[dict]:
    if not isinstance(props, list):
        return []
    hip = any(s.startswith("hip") for s in table.strings.values[:100_000])
    out = []
    for p in props:
        if not isinstance(p, dict):
            continue
        name = str(p.get("name", ""))
        amd = hip or any(w in name for w in ("AMD", "Radeon", "Instinct"))
        d = {"kind": "rocm" if amd else "cuda", "index": _int(p.get("id"), len(out)), "name": name,
             "memory": _int(p.get("totalGlobalMem"), NONE)}
        if "computeMajor" in p:
            d["compute_capability"] = f"{p.get('computeMajor')}.{p.get('computeMinor', 0)}"
        if "numSms" in p:
            d["sm_count"] = _int(p.get("numSms"), NONE)
        out.append(d)
    return out


def _concat(parts: list[dict], spec: dict, exclude: tuple = ()) -> dict[str, np.ndarray]:
    out = {}
    for k, t in spec.items():
        if k in exclude:
            continue
        out[k] = np.concatenate([p[k] for p in parts]).astype(t, copy=False) if parts else np.zeros(0, t)
        for p in parts:  # free as we go: peak stays one column above the result
            p.pop(k, None)
    return out


def _sort_in_place(cols: dict[str, np.ndarray]) -> None:
    order = np.argsort(cols["ts"], kind="stable")
    if len(order) and np.all(order[1:] > order[:-1]):
        return
    for k in list(cols):
        cols[k] = cols[k][order]


# -- lenient path: one event whose fields have unexpected types ------------------------------------
_ARG_FIELDS = [(f.encode_name, f.name, f.type) for f in msgspec.structs.fields(Args)]


def _num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            return decimal.Decimal(v.strip())
        except decimal.InvalidOperation:
            return None
    return None


def _coerce(obj, typ) -> Ev | None:
    if not isinstance(obj, dict):
        return None
    ts, dur = _num(obj.get("ts")), _num(obj.get("dur"))
    if typ is Ev:
        ts = _NAN if ts is None or not _finite(ts) else float(ts)
        dur = _NAN if dur is None or not _finite(dur) else float(dur)
    elif ts is not None and not isinstance(ts, decimal.Decimal):
        ts, dur = decimal.Decimal(repr(ts)), (None if dur is None else decimal.Decimal(repr(dur)))
    name = obj.get("name")
    args = obj.get("args")
    kw = {}
    if isinstance(args, dict):
        for key, attr, t in _ARG_FIELDS:
            if key in args:
                v = _coerce_arg(args[key], t)
                if v is not None:
                    kw[attr] = v
    return typ(ph=str(obj.get("ph", "")), cat=str(obj.get("cat") or ""),
               name=None if name is None else str(name),
               pid=_pidlike(obj.get("pid", 0)), tid=_pidlike(obj.get("tid", 0)),
               ts=ts, dur=dur, args=Args(**kw))


def _finite(v) -> bool:
    try:
        return float(v) == float(v) and abs(float(v)) != float("inf")
    except (OverflowError, ValueError):
        return False


def _pidlike(v):
    return v if isinstance(v, (int, str)) and not isinstance(v, bool) else str(v)


def _coerce_arg(v, t):
    if t is int:
        n = _num(v)
        if n is None or not _finite(n) or n != int(n):
            return None
        return int(n)
    if t is msgspec.Raw:
        return msgspec.Raw(msgspec.json.encode(v))
    if t == (list[int] | None):
        return [int(x) for x in v] if isinstance(v, list) and all(isinstance(x, int) for x in v) else None
    return None if v is None else str(v)
