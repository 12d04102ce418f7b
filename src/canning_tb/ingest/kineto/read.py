"""Reader for torch.profiler / Kineto Chrome traces (`.json`, `.json.gz`), 2021 and current layouts.

The format itself (categories, args, metadata, flows) is written down in docs/formats/kineto.md and
declared, as this reader takes it, in schema.py. The file is decoded a few MB at a time into the small
typed msgspec Structs of schema.py, which carry only the fields we use (unknown args are skipped by the
decoder, never materialised); each chunk becomes numpy columns at once and its Python objects are dropped. Times become int ns here, once (see
`_to_ns` for exactness).

What an event is comes from what the trace says, never from one vendor's names:
- its category, per Kineto's ActivityType names (`CATEGORY_KIND`; `*_runtime` / `*_driver` are host
  runtime APIs of any backend);
- for a category Kineto does not name, where it sits: on a device process (`process_labels`
  other than "CPU", e.g. "GPU 0", "MTIA 1"), at the end of a launch flow (`ac2g` / `async`), or
  correlated to a runtime launch; such an event is device work (copy / set / kernel by its name);
- a device kernel is communication when its name is a collective family (table.is_comm_kernel_name),
  it carries a process group (collective args), or the host op that launched it (its external id)
  is a collective op (`record_param_comms`, `c10d::*`, `nccl:*`, `symm_mem::*` ...).
"""
from __future__ import annotations

import decimal
import json
import os
import re
from collections import Counter
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from canning_tb.util.arrays import distinct

from .. import _json, op_args
from ..devices import fit_devices, shown_int
from ..table import (EVENT_COLUMNS, MEMORY_COLUMNS, METRIC_BLOCKS_PER_SM, METRIC_FLOPS, METRIC_OCCUPANCY,
                     METRIC_REGISTERS, METRIC_SHARED_MEMORY, NONE, EventTable, InputError, Kind, Meta, Problem, Strings,
                     is_comm_kernel_name)
from . import parallel as kineto_parallel
from . import scan as kineto_scan
from .schema import (CATEGORY_KIND, COLLECTIVE_CATEGORY, DEVICE_TYPE, DTYPE_SIZE, EVENTS, EVENTS_EXACT, EVENTS_RAW,
                     EXACT_LIMIT, LAUNCH_FLOWS, NO_ARGS, NOT_WORK, Args, Ev, EvExact)
from .stacks import fill_python_stacks

_NAN = float("nan")
_INT_ABSENT = np.iinfo(np.int64).min  # the scanner's absent int
_UNKNOWN = 255  # a category Kineto does not name: decided by where the event sits (see module doc)
_HOST_COLLECTIVE_OP = re.compile(
    r"^(record_param_comms$|c10d::|c10d_functional::|_c10d_functional::|symm_mem::|gloo:|nccl:|hccl:)")
_DEVICE_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s+(\d+)\s*$")  # "GPU 0", "MTIA 1"; not "CPU"
_HOST = {"ext", "ext2", "dims", "stack", "pg_name"}
_DEV = {"device", "stream", "correlation", "ext", "ext2", "nbytes"}
_ALL = {f.name for f in msgspec.structs.fields(Args)}
_WANT = {Kind.PYTHON_FUNCTION: set(), Kind.CPU_OP: _HOST, Kind.USER_ANNOTATION: _HOST,
         Kind.RUNTIME: {"ext", "ext2", "correlation"}, Kind.KERNEL: _DEV | {"grid", "pg_name", "metrics"},
         Kind.MEMCPY: _DEV, Kind.MEMSET: _DEV, Kind.GPU_USER_ANNOTATION: _DEV}
# kernel args -> EventTable.metrics (the 2021 occupancy name filled in where the current one is absent)
_KERNEL_METRICS = ((METRIC_BLOCKS_PER_SM, "blocks_per_sm"), (METRIC_OCCUPANCY, "occupancy"),
                   (METRIC_REGISTERS, "registers"), (METRIC_SHARED_MEMORY, "shared_memory"))
_METRIC_KEY = "metric:"  # prefix of metric columns in the parts, until finish() splits them out
_DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION, Kind.COMM_KERNEL)
_INT_TEXT = re.compile(r"^\s*(?:stream\s*|thread\s*)?(-?\d+)\s*$", re.I)
_I64 = (-(1 << 63), (1 << 63) - 1)
_MAX_RANKS = 1 << 31  # ranks and world sizes are int32 in the digest
_NS_LIMIT = 1 << 62  # |ts|, |dur| in ns below this: ts + dur still fits int64
_US_LIMIT = float(_NS_LIMIT // 1000)


class _NeedExact(Exception):
    pass


def _check_exact(us: np.ndarray) -> None:
    if len(us) and np.any((np.abs(us) >= EXACT_LIMIT) & (us != np.floor(us))):
        raise _NeedExact


class _Ids(dict):
    """str -> dense id, None -> NONE; `ids[s]` interns (dict lookup in C on a hit)."""

    def __init__(self, absent: Any = None):
        super().__init__({absent: NONE})
        self.n = 0

    def __missing__(self, key):
        new_id = self[key] = self.n
        self.n += 1
        return new_id

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
    if not abs(float(v)) < _US_LIMIT:
        raise OverflowError("time out of range")
    return int(_to_ns(np.array([float(v)]))[0])


class _Reader:
    # event columns holding ids into `strs` (kineto_parallel translates them when it merges two readers):
    # a new string column goes here; a new numeric column needs nothing
    STRING_COLUMNS = ("name", "cat", "stack", "group")

    def __init__(self, path: str):
        self.path = path
        self.problems: list[Problem] = []
        self.strs = _Ids()
        self.sid = self.strs.__getitem__
        self.raw_dims = _Ids(b"")
        self.raw_args = _Ids(b"")  # "Input type" + NUL + "Concrete Inputs", raw, until finish()
        self.collective_name: dict[int, bool] = {}  # name id -> is a host collective range
        self.named_ids = _Ids()  # pid/tid given as text ("Spans", "stream 7" ...) -> -2, -3 ...
        self.ev_parts: list[dict[str, np.ndarray]] = []
        self.mem_parts: list[dict[str, np.ndarray]] = []
        self.mem_dev: dict[tuple[int, int], int] = {}
        self.process_names: dict[int, str] = {}
        self.process_labels: dict[int, str] = {}  # pid -> "CPU", "GPU 0", "MTIA 1" ...
        self.flow_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.thread_names: dict[str, str] = {}
        self.window_end = NONE
        self.iter_start = NONE
        self.exact = False
        self.count = Counter()

    def __getstate__(self) -> dict:  # sent from a child process (kineto_parallel): no bound method
        state = dict(self.__dict__)
        del state["sid"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.sid = self.strs.__getitem__

    # -- decoding -------------------------------------------------------------------------------
    def chunk(self, piece: bytes) -> None:
        if not self.exact:
            n_ev, n_mem, count = len(self.ev_parts), len(self.mem_parts), self.count.copy()
            try:
                scanned = kineto_scan.scan(piece) if kineto_scan.enabled() else None
                if scanned is not None:
                    return self.add_scanned(scanned)
                return self._chunk(self._decode(piece, EVENTS))
            except _NeedExact:  # µs floats too big for ns in float64: redo this chunk from the text
                del self.ev_parts[n_ev:], self.mem_parts[n_mem:]
                self.exact, self.count = True, count
        self._chunk(self._decode(piece, EVENTS_EXACT))

    def _collective_rows(self, name_of, name: np.ndarray):
        """Rows of host collective ranges, judged once per distinct name, not once per event
        (name_of(row): the name text)."""
        uniq, first = np.unique(name, return_index=True)
        hits = []
        for uid, i in zip(uniq.tolist(), first.tolist()):
            flag = self.collective_name.get(uid)
            if flag is None:
                text = name_of(i)
                flag = self.collective_name[uid] = bool(text) and text.startswith(_HOST_COLLECTIVE)
            if flag:
                hits.append(uid)
        return np.nonzero(np.isin(name, hits))[0].tolist() if hits else []

    def _chunk(self, evs: list) -> None:
        groups: dict[str, list] = {}  # complete events by category
        mem, flows = [], []
        for e in evs:
            ph = e.ph
            if ph == "X":
                grp = groups.get(e.cat)
                if grp is None:
                    grp = groups[e.cat] = []
                grp.append(e)
            elif ph == "f":
                if e.cat in LAUNCH_FLOWS:
                    flows.append(e)
            elif ph != "s":
                self._other(e, mem)
        del evs
        for cat, grp in groups.items():
            self._group(cat, grp)
        if flows:
            self._flow_ends(flows)
        if mem:
            self._memory(mem)

    def _other(self, e: Ev, mem: list) -> None:
        """An instant (memory records kept in `mem`, the window's marks) or a metadata event."""
        ph = e.ph
        if ph == "i" or ph == "I":
            if e.name == "[memory]":
                mem.append(e)
            elif e.name == "Record Window End":
                self.window_end = self._ns1(e.ts)
            elif e.name and e.name.startswith("Iteration Start"):
                self.iter_start = self._ns1(e.ts)
        elif ph == "M":
            self._meta(e)

    def add_scanned(self, s: kineto_scan.Scanned) -> None:
        """A piece as the scanner gives it: the same parts, ids and counts as _chunk gives for the
        events decoded one by one, in the same order (metadata and marks, then the complete events
        by category in order of first sight, then the flow ends, then memory)."""
        for e in s.others:  # metadata only: the scanner gives instants as rows
            self._other(e, [])
        for cat, rows in _by_category(s, np.flatnonzero(s.ph == ord("X"))):
            self._group_scanned(s, cat, rows)
        flows = np.flatnonzero(s.ph == ord("f"))
        flows = flows[np.isin(s.cat[flows], [i for i in distinct(s.cat[flows]).tolist()
                                             if s.values[i] in LAUNCH_FLOWS])]
        if len(flows):
            ts = s.ts[flows]
            ns = _to_ns(np.where(np.abs(ts) < _US_LIMIT, ts, 0))  # NaN fails the test too: no time
            ns = np.where((np.abs(ts) < _US_LIMIT) & (ns > -_NS_LIMIT) & (ns < _NS_LIMIT), ns, NONE)
            self.flow_parts.append((self._scanned_ids(s, s.pid, s.pid_ref, flows),
                                    self._scanned_ids(s, s.tid, s.tid_ref, flows), ns))
        self._scanned_instants(s, np.flatnonzero((s.ph == ord("i")) | (s.ph == ord("I"))))

    def _scanned_instants(self, s: kineto_scan.Scanned, rows: np.ndarray) -> None:
        """_other's instants for the scanner's rows: the window's marks (the last of each in the piece
        wins, as one by one), then the memory records as one part."""
        if not len(rows):
            return
        names = s.name[rows]
        kind = {i: s.values[i] for i in distinct(names).tolist()}
        for mark, attr in (("Record Window End", "window_end"), ("Iteration Start", "iter_start")):
            hits = [i for i, text in kind.items() if text and (text == mark or attr == "iter_start"
                                                               and text.startswith(mark))]
            if hits:
                last = rows[np.flatnonzero(np.isin(names, hits))[-1]]
                setattr(self, attr, self._ns1(float(s.ts[last])))
        memory = rows[np.isin(names, [i for i, text in kind.items() if text == "[memory]"])]
        if not len(memory):
            return
        ts = self._memory_ns(s.ts[memory])
        self._memory_columns(ts, *(_scanned_int(s, memory, attr) for attr in _MEMORY_ARGS))

    def _scanned_ids(self, s: kineto_scan.Scanned, nums: np.ndarray, refs: np.ndarray, rows) -> np.ndarray:
        """pid / tid of rows, as _ids gives them from the values: ints as they are; texts all as int()
        reads them where every one can be, else by _id_of (interned in first-sight order)."""
        out, refs = nums[rows], refs[rows]
        has = refs >= 0
        if not has.any():
            return out
        texts = kineto_scan.first_sight(refs[has])
        try:
            ids = [int(s.values[t]) for t in texts.tolist()]
            if not all(_I64[0] <= i <= _I64[1] for i in ids):
                raise OverflowError
        except (ValueError, OverflowError):
            ids = [self._id_of(s.values[t]) for t in texts.tolist()]
        lut = dict(zip(texts.tolist(), ids))
        out[has] = np.fromiter(map(lut.__getitem__, refs[has].tolist()), np.int64, int(has.sum()))
        return out

    def _group_scanned(self, s: kineto_scan.Scanned, cat: str, rows: np.ndarray) -> None:
        """_group for the scanner's rows of one category."""
        n = len(rows)
        ts_ns, dur_ns, ok = self._float_times(s.ts[rows], s.dur[rows])
        name_ids = s.name[rows]
        name = kineto_scan.lut(name_ids, lambda i: self.sid(s.values[i])).astype(np.int32)
        ok &= name >= 0
        cols = {"ts": ts_ns, "dur": dur_ns, "name": name, "cat": np.full(n, self.sid(cat), np.int32),
                "pid": self._scanned_ids(s, s.pid, s.pid_ref, rows),
                "tid": self._scanned_ids(s, s.tid, s.tid_ref, rows)}
        want = _WANT.get(_kind_of_cat(cat), _ALL)
        cols.update(_scanned_arg_columns(s, rows, want))
        if "dims" in want:
            cols.update(self._scanned_host_columns(s, rows))
        else:
            cols["shapes"] = cols["stack"] = cols["args"] = np.full(n, NONE, np.int32)
        cols["group"] = np.full(n, NONE, np.int32)
        if "pg_name" in want:
            grouped = np.flatnonzero(s.texts[rows, kineto_scan.column("text", "Process Group Name")] >= 0)
            if len(grouped):
                group, nbytes = cols["group"][grouped], cols["bytes"][grouped]
                self._group_columns([e.args for e in s.events(rows[grouped])], group, nbytes)
                cols["group"][grouped], cols["bytes"][grouped] = group, nbytes
        if "dims" in want:
            hit = self._collective_rows(lambda i: s.values[name_ids[i]], name)
            args = dict(zip(hit, (e.args or NO_ARGS for e in s.events(rows[hit]))))
            _collective_bytes(args, cols["bytes"], hit)
        if "metrics" in want:
            floats = s.floats[rows]
            cols.update(_kernel_metrics(lambda attr: floats[:, kineto_scan.column("float", _FIELD[attr])]))
        self._keep(cols, ok)

    def _scanned_host_columns(self, s: kineto_scan.Scanned, rows: np.ndarray) -> dict[str, np.ndarray]:
        """_host_columns for the scanner's rows: the raw texts interned in the same order."""
        raws = s.raws_of[rows]
        raw_id = self.raw_dims.__getitem__
        col = kineto_scan.column
        dims = kineto_scan.lut(raws[:, col("raw", "Input Dims")], lambda i: raw_id(s.raws[i]))
        dims_2021 = kineto_scan.lut(raws[:, col("raw", "Input dims")], lambda i: raw_id(s.raws[i]))
        stack = kineto_scan.lut(s.texts[rows, col("text", "Call stack")], lambda i: self.sid(s.values[i]))
        types, concrete = raws[:, col("raw", "Input type")], raws[:, col("raw", "Concrete Inputs")]
        width = len(s.raws)
        pair = (types.astype(np.int64) + 1) * (width + 1) + concrete + 1  # (absent, absent) is 0
        extra = kineto_scan.lut(pair, lambda k: self.raw_args[
            s.raws[k // (width + 1) - 1] + b"\0" + s.raws[k % (width + 1) - 1]])
        out = {"shapes": np.where(dims >= 0, dims, dims_2021).astype(np.int32), "stack": stack.astype(np.int32),
               "args": extra.astype(np.int32)}
        flops = s.floats[rows, col("float", "flops")]
        if not np.isnan(flops).all():
            out[_METRIC_KEY + METRIC_FLOPS] = flops
        return out

    def _ns1(self, v, count: bool = False) -> int:
        """µs -> int ns; NONE for what is no time (NaN, text) or lies out of range (counted when asked)."""
        try:
            ns = _dec_ns(v) if v == v else NONE
        except (ValueError, TypeError, OverflowError, decimal.InvalidOperation):
            return NONE
        if ns != NONE and not -_NS_LIMIT < ns < _NS_LIMIT:
            self.count["range"] += count
            return NONE
        return ns

    def _decode(self, piece: bytes, dec: msgspec.json.Decoder) -> list:
        try:
            return dec.decode(piece)
        except msgspec.ValidationError:
            pass
        out = []
        typ = dec.type.__args__[0]
        for raw in EVENTS_RAW.decode(piece):  # syntax errors go up: the chunk cut was wrong
            try:
                out.append(msgspec.json.decode(raw, type=typ))
            except msgspec.ValidationError:
                ev = _coerce(_lenient(raw, _DECIMALS if typ is EvExact else _FLOATS), typ)
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
        text = str(v)
        number = _INT_TEXT.match(text)
        if number and len(number.group(1)) < 19:
            return int(number.group(1))
        return -2 - self.named_ids[text]

    def _group(self, cat: str, events: list) -> None:
        """One category's complete events of a chunk -> one part of numpy columns."""
        n = len(events)
        ts_ns, dur_ns, ok = self._times(events)
        name = np.fromiter(map(self.sid, map(attrgetter("name"), events)), np.int32, n)
        ok &= name >= 0
        cols = {"ts": ts_ns, "dur": dur_ns, "name": name, "cat": np.full(n, self.sid(cat), np.int32),
                "pid": self._ids(list(map(attrgetter("pid"), events))),
                "tid": self._ids(list(map(attrgetter("tid"), events)))}
        want = _WANT.get(_kind_of_cat(cat), _ALL)
        args = [e.args or NO_ARGS for e in events] if want else []
        cols.update(_arg_columns(args, want, n))
        if "dims" in want:
            cols.update(self._host_columns(args, n))
        else:
            cols["shapes"] = cols["stack"] = cols["args"] = np.full(n, NONE, np.int32)
        cols["group"] = np.full(n, NONE, np.int32)
        if "pg_name" in want:
            self._group_columns(args, cols["group"], cols["bytes"])
        if "dims" in want:
            _collective_bytes(args, cols["bytes"], self._collective_rows(lambda i: events[i].name, name))
        if "metrics" in want:
            cols.update(_kernel_metrics(lambda attr: np.fromiter(map(attrgetter(attr), args), np.float64, n)))
        self._keep(cols, ok)

    def _times(self, events: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ts ns, dur ns, usable) of the events, exact when the floats cannot be."""
        n = len(events)
        if self.exact:
            ts = [self._ns1(e.ts, count=True) for e in events]
            dur = [self._ns1(e.dur, count=True) for e in events]
            ts_ns, dur_ns = np.array(ts, np.int64), np.array(dur, np.int64)
            return ts_ns, dur_ns, (ts_ns != NONE) & (dur_ns != NONE)
        return self._float_times(np.fromiter(map(attrgetter("ts"), events), np.float64, n),
                                 np.fromiter(map(attrgetter("dur"), events), np.float64, n))

    def _float_times(self, ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ok = np.isfinite(ts) & np.isfinite(dur)
        fits = (np.abs(np.where(ok, ts, 0)) < _US_LIMIT) & (np.abs(np.where(ok, dur, 0)) < _US_LIMIT)
        self.count["range"] += int((ok & ~fits).sum())
        ok &= fits
        _check_exact(ts[ok])
        return _to_ns(np.where(ok, ts, 0)), _to_ns(np.where(ok, dur, 0)), ok

    def _host_columns(self, args: list, n: int) -> dict[str, np.ndarray]:
        """Input shapes (ids into raw_dims until finish()) and call stacks of host ops."""
        raw_id = self.raw_dims.__getitem__
        dims = np.fromiter(map(raw_id, map(bytes, map(attrgetter("dims"), args))), np.int32, n)
        dims_2021 = np.fromiter(map(raw_id, map(bytes, map(attrgetter("dims2"), args))), np.int32, n)
        stack = np.fromiter(map(self.sid, map(attrgetter("stack"), args)), np.int32, n)
        # (neither: b"\0", which _render_args renders to None, so NONE, as b"" is)
        types, concrete = map(bytes, map(attrgetter("types"), args)), map(bytes, map(attrgetter("concrete"), args))
        extra = np.fromiter(map(self.raw_args.__getitem__, map(b"\0".join, zip(types, concrete))), np.int32, n)
        out = {"shapes": np.where(dims >= 0, dims, dims_2021), "stack": stack, "args": extra}
        flops = np.fromiter(map(attrgetter("flops"), args), np.float64, n)
        if not np.isnan(flops).all():
            out[_METRIC_KEY + METRIC_FLOPS] = flops
        return out

    def _group_columns(self, args: list, group: np.ndarray, nbytes: np.ndarray) -> None:
        """Process group of collectives, and their message size when only elements x dtype say it."""
        for i, pg_name in enumerate(map(attrgetter("pg_name"), args)):
            if pg_name is None:
                continue
            desc = args[i].pg_desc
            group[i] = self.sid(f"{pg_name} ({desc})" if desc and desc != "undefined" else str(pg_name))
            size = DTYPE_SIZE.get((args[i].dtype or "").lower(), 0)
            nelems = args[i].in_nelems
            if nbytes[i] < 0 and size and type(nelems) is int and 0 <= nelems < 1 << 50:
                nbytes[i] = nelems * size

    def _keep(self, cols: dict[str, np.ndarray], ok: np.ndarray) -> None:
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
        get = attrgetter
        args = [e.args or NO_ARGS for e in mem]
        if self.exact:
            ts = np.fromiter((self._ns1(v, count=True) for v in map(get("ts"), mem)), np.int64, n)
        else:
            ts = self._memory_ns(np.fromiter(map(get("ts"), mem), np.float64, n))
        self._memory_columns(ts, *(_i64(list(map(get(k), args)), n) for k in _MEMORY_ARGS))

    def _memory_ns(self, us: np.ndarray) -> np.ndarray:
        """Memory records' µs -> ns; NONE for no time, and for a time out of range (counted, as _float_times
        does for events: ns past 2**62, or a float past int64 that the cast would wrap)."""
        finite = np.isfinite(us)
        fits = finite & (np.abs(np.where(finite, us, 0)) < _US_LIMIT)
        self.count["range"] += int((finite & ~fits).sum())
        _check_exact(us[fits])
        return np.where(fits, _to_ns(np.where(fits, us, 0)), NONE)

    def _memory_columns(self, ts: np.ndarray, typ: np.ndarray, idx: np.ndarray, nbytes: np.ndarray,
                        addr: np.ndarray, allocated: np.ndarray, reserved: np.ndarray) -> None:
        """The memory part of records given as columns (in _MEMORY_ARGS order after ts)."""
        # device per record, judged once per distinct (type, index) pair rather than per record
        idx = np.clip(idx, 0, (1 << 20) - 1)
        pairs, inverse = np.unique((typ + 1) * (1 << 20) + idx, return_inverse=True)
        ids = [self._mem_device(int(k >> 20) - 1, int(k & ((1 << 20) - 1))) for k in pairs.tolist()]
        dev = np.asarray(ids, np.int32)[inverse.reshape(-1)] if len(ts) else np.zeros(0, np.int32)
        cols = {"ts": ts, "device": dev, "bytes": nbytes, "addr": addr, "allocated": allocated, "reserved": reserved}
        ok = ts != NONE
        if not ok.all():
            self.count["missing"] += int((~ok).sum())
            cols = {k: v[ok] for k, v in cols.items()}
        for k in ("active", "component", "op"):
            cols[k] = np.full(len(cols["ts"]), NONE, MEMORY_COLUMNS[k])
        self.mem_parts.append(cols)

    def _mem_device(self, typ: int, idx: int) -> int:
        key = (typ, idx)
        dev = self.mem_dev.get(key)
        if dev is None:
            kind = DEVICE_TYPE.get(typ, f"device{typ}")
            dev = self.mem_dev[key] = self.sid("CPU" if typ == 0 else f"{kind}:{max(idx, 0)}")
        return dev

    def _flow_ends(self, flows: list) -> None:
        """(pid, tid, ts) where launch flows end: the device work they point at starts there."""
        n = len(flows)
        self.flow_parts.append((self._ids([e.pid for e in flows]), self._ids([e.tid for e in flows]),
                                np.fromiter((self._ns1(e.ts) for e in flows), np.int64, n)))

    def _meta(self, e: Ev) -> None:
        if e.name == "process_labels" and e.args and e.args.labels is not None:
            self.process_labels[self._id_of(e.pid)] = e.args.labels
            return
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
        metric_names = sorted({k for p in self.ev_parts for k in p if k.startswith(_METRIC_KEY)})
        sizes = [len(p["ts"]) for p in self.ev_parts]
        ev = _concat(self.ev_parts, EVENT_COLUMNS, exclude=("kind", "core"))
        for k in metric_names:  # NaN for the parts (categories) without the metric
            ev[k] = np.concatenate([p.get(k, np.full(size, np.nan)) for p, size in zip(self.ev_parts, sizes)])
        self.ev_parts = []
        mem = _concat(self.mem_parts, MEMORY_COLUMNS)
        self.mem_parts = []
        strings = Strings(self.strs.keys_in_order())
        # shapes: raw JSON text -> one canonical rendering, computed once per distinct text
        lut = np.array([strings.id(_render_dims(r)) for r in self.raw_dims.keys_in_order()] + [NONE], np.int32)
        ev["shapes"] = lut[ev["shapes"]]  # NONE (-1) picks the trailing NONE
        lut = np.array([strings.id(_render_args(r)) for r in self.raw_args.keys_in_order()] + [NONE], np.int32)
        ev["args"] = lut[ev["args"]]
        ev["core"] = np.full(len(ev["ts"]), NONE, np.int32)
        ev["kind"] = self._kinds(ev, strings)
        dk = np.isin(ev["kind"], np.array(_DEVICE_KINDS, np.uint8))
        fix = dk & (ev["device"] < 0) & (ev["pid"] >= 0) & (ev["pid"] < 1024)
        ev["device"][fix] = ev["pid"][fix]
        fix = dk & (ev["stream"] < 0) & (ev["tid"] >= 0)
        ev["stream"][fix] = ev["tid"][fix]
        _sort_in_place(ev)
        _sort_in_place(mem)
        metrics = {k[len(_METRIC_KEY):]: ev.pop(k) for k in metric_names}
        table = EventTable(events=ev, memory=mem, strings=strings, problems=self.problems, metrics=metrics)
        table.meta = self._meta_of(top, table)
        fill_python_stacks(table)
        self._report()
        table.check()
        return table

    def _kinds(self, ev: dict, strings: Strings) -> np.ndarray:
        vals = strings.values
        kind = np.array([_kind_of_cat(s) for s in vals] + [Kind.OTHER], np.uint8)[ev["cat"]]
        self._place_unnamed(ev, strings, kind)
        step = np.array([s.startswith("ProfilerStep#") for s in vals] + [False])
        kind[(kind == Kind.CPU_OP) & step[ev["name"]]] = Kind.USER_ANNOTATION
        kind[(kind == Kind.KERNEL) & self._communication(ev, strings, kind)] = Kind.COMM_KERNEL
        return kind

    def _place_unnamed(self, ev: dict, strings: Strings, kind: np.ndarray) -> None:
        """Kind of the events whose category Kineto does not name (and of collective_comm
        events): device work when the trace puts them on the device, else OTHER."""
        coll = strings.find(COLLECTIVE_CATEGORY)
        todo = np.flatnonzero((kind == _UNKNOWN) | ((ev["cat"] == coll) & (coll >= 0)))
        if len(todo) == 0:
            return
        on_device = self._on_device(ev, todo, kind)
        lower = [s.lower() for s in strings.values] + [""]
        copy = np.array([s.startswith("memcpy") for s in lower])[ev["name"][todo]]
        fill = np.array([s.startswith("memset") for s in lower])[ev["name"][todo]]
        new = np.where(copy, Kind.MEMCPY, np.where(fill, Kind.MEMSET, Kind.KERNEL)).astype(np.uint8)
        new[ev["cat"][todo] == coll] = Kind.COMM_KERNEL
        kind[todo] = np.where(on_device, new, Kind.OTHER)

    def _on_device(self, ev: dict, rows: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """Per row: on a device process, at the end of a launch flow, or correlated to a launch
        from outside the host processes."""
        pid, tid, ts = ev["pid"][rows], ev["tid"][rows], ev["ts"][rows]
        device_pids = [p for p, label in self.process_labels.items() if _DEVICE_LABEL.match(label)]
        located = np.isin(pid, np.array(device_pids, np.int64))
        if self.flow_parts:
            f_pid, f_tid, f_ts = (np.concatenate(part) for part in zip(*self.flow_parts))
            # only the flow ends that can match, before building a set; one without a time (NONE) matches none,
            # not an event at -1 ns
            near = np.isin(f_ts, ts) & (f_ts != NONE)
            ends = set(zip(f_pid[near].tolist(), f_tid[near].tolist(), f_ts[near].tolist()))
            located |= np.array([key in ends for key in zip(pid.tolist(), tid.tolist(), ts.tolist())], bool)
        host = (kind == Kind.CPU_OP) | (kind == Kind.RUNTIME) | (kind == Kind.USER_ANNOTATION)
        launches = ev["correlation"][kind == Kind.RUNTIME]
        host_pids = [p for p, label in self.process_labels.items() if label.strip().upper() == "CPU"]
        off_host = ~np.isin(pid, np.concatenate([distinct(ev["pid"][host]), np.array(host_pids, np.int64)]))
        corr = ev["correlation"][rows]
        located |= off_host & (corr != NONE) & np.isin(corr, launches[launches != NONE])
        return located

    def _communication(self, ev: dict, strings: Strings, kind: np.ndarray) -> np.ndarray:
        """Per event: a kernel that is communication by its name, its process group, or the
        collective host op that launched it (same external id)."""
        comm = np.array([is_comm_kernel_name(s) for s in strings.values] + [False])[ev["name"]]
        comm |= ev["group"] != NONE
        coll_op = np.array([bool(_HOST_COLLECTIVE_OP.match(s)) for s in strings.values] + [False])[ev["name"]]
        coll_op &= (kind == Kind.CPU_OP) | (kind == Kind.USER_ANNOTATION)
        ext = ev["external_id"][coll_op]
        ext = ext[ext != NONE]
        if len(ext):
            comm |= np.isin(ev["external_id"], ext) & (ev["external_id"] != NONE)
        return comm

    def _meta_of(self, top: dict[str, Any], table: EventTable) -> Meta:
        meta = Meta(format="kineto", source_files=[self.path])
        env: dict[str, str] = {}
        for k, v in top.items():
            if isinstance(v, (str, int, float, bool)) and k != "traceEvents":
                env[k] = str(v)
        dist = top.get("distributedInfo")
        if isinstance(dist, dict):
            for k, v in dist.items():
                if isinstance(v, (str, int, float, bool)):
                    env[f"distributed.{k}"] = str(v)
            meta.world_size = _int(dist.get("world_size"), 1)
            if not 0 < meta.world_size <= _MAX_RANKS:
                self.problems.append(Problem(self.path, f"distributedInfo.world_size {shown_int(meta.world_size)} "
                                                        f"is no number of processes: ignored", "warning"))
                meta.world_size = 1
        rank = _int(dist.get("rank"), None) if isinstance(dist, dict) else None
        if rank is not None and not 0 <= rank < _MAX_RANKS:
            raise InputError(self.path, f"distributedInfo.rank {shown_int(rank)}: not a rank (0 to {_MAX_RANKS - 1})")
        if rank is None:
            # A trace without distributedInfo is a single process: rank 0 is a fact, not a guess.
            if isinstance(dist, dict):
                self.problems.append(Problem(self.path, "no rank in distributedInfo: assuming rank 0", "warning"))
            rank = 0
        meta.rank = rank
        meta.environment = env
        meta.host = str(top.get("host_name") or top.get("hostname") or "")
        meta.devices = fit_devices(_devices(top.get("deviceProperties"), table) or self._labelled_devices(table),
                                   self.path, self.problems)
        self._names_of(meta, table.events)
        meta.start_ns, meta.end_ns = self._window_of(table)
        return meta

    def _names_of(self, meta: Meta, ev: dict[str, np.ndarray]) -> None:
        """Process and thread names: metadata events, then pids / tids given as text."""
        meta.process_names = dict(self.process_names)
        meta.thread_names = dict(self.thread_names)
        named = {-2 - i: text for text, i in self.named_ids.items() if text is not None}
        for pid in set(ev["pid"][ev["pid"] <= -2].tolist()) & set(named):
            meta.process_names.setdefault(pid, named[pid])
        sel = ev["tid"] <= -2
        for pid, tid in set(zip(ev["pid"][sel].tolist(), ev["tid"][sel].tolist())):
            if tid in named:
                meta.thread_names.setdefault(f"{pid}:{tid}", named[tid])

    def _window_of(self, table: EventTable) -> tuple[int, int]:
        """(start, end) of the profiling window: the Trace span or the window instants, else the events."""
        ev = table.events
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
            if end == NONE or end < start:  # a Record Window End before the first event (no start to check it by)
                end = int((ev["ts"] + ev["dur"]).max())
        return start, end

    def _labelled_devices(self, table: EventTable) -> list[dict]:
        """Devices named only by their process labels ("MTIA 0"), for traces without
        deviceProperties: those that hold device work."""
        ev = table.events
        busy = set(ev["pid"][np.isin(ev["kind"], np.array(_DEVICE_KINDS, np.uint8))].tolist())
        out = []
        for pid, label in sorted(self.process_labels.items()):
            match = _DEVICE_LABEL.match(label)
            if match and pid in busy:
                out.append({"kind": match.group(1).lower(), "index": int(match.group(2)), "name": label.strip()})
        return out

    def _report(self) -> None:
        count = self.count
        missing = count["missing"] - count["range"]  # those out of range are told apart below
        if missing:
            self.problems.append(Problem(self.path, f"{missing} events without a usable name, ts or dur skipped",
                                         "warning"))
        if count["malformed"]:
            self.problems.append(Problem(self.path, f"{count['malformed']} malformed events skipped", "warning"))
        if count["range"]:
            self.problems.append(Problem(self.path, f"{count['range']} events with ts or dur out of range "
                                                    f"(beyond ±{_NS_LIMIT // 10 ** 9 // 86400 // 365} years) skipped",
                                         "warning"))
        if count["negative"]:
            self.problems.append(Problem(self.path, f"{count['negative']} negative durations set to 0", "warning"))
        if count["utf8"]:
            self.problems.append(Problem(self.path, "invalid UTF-8 bytes replaced (U+FFFD)", "warning"))


def read_kineto(path: str) -> EventTable:
    """One Kineto trace file -> EventTable; raises InputError when nothing can be read. A big plain
    file is read by two processes a block at a time (kineto_parallel), anything else whole."""
    path = str(path)
    _json.refuse_non_json(path)
    try:
        _json.check_size(path, os.path.getsize(path))
        reader, top_raw = kineto_parallel.read_ranges(path, _Reader)
    except (kineto_parallel.NotPlanned, OSError):
        return _read_whole(path)
    return reader.finish(_small_values(top_raw))


def _read_whole(path: str) -> EventTable:
    """The file held once in memory: repaired in place where it is damaged, decoded in chunks."""
    reader = _Reader(path)
    buf = _json.read_bytes(path)
    top_raw, buf = _json.decode_top(path, buf, reader.problems)
    raw_events = top_raw.pop("traceEvents", None)
    if raw_events is None:
        raise InputError(path, "expected an object with traceEvents, found no traceEvents key")
    top = _small_values(top_raw)
    del top_raw  # its Raw views keep the whole buffer alive
    lo, hi = _json.value_span(buf, raw_events)
    del raw_events
    if buf[lo] != 0x5B:  # '['
        raise InputError(path, f"traceEvents is not a list (got {_json._kind(buf[lo:lo + 8])})")

    def on_utf8():
        reader.count["utf8"] += 1

    try:
        for _ in _json.iter_chunks(buf, lo, hi, reader.chunk, on_utf8):
            pass
    except msgspec.DecodeError as e:  # cannot happen for text decode_top accepted; be clear if it does
        raise InputError(path, f"not JSON inside traceEvents: {e}") from None
    except RecursionError:
        raise InputError(path, _json.TOO_DEEP) from None
    del buf
    return reader.finish(top)


# -- helpers --------------------------------------------------------------------------------------

def _arg_columns(args: list, want: set, n: int) -> dict[str, np.ndarray]:
    """device, stream, correlation, external id, blocks and bytes from the args the kind carries."""
    def col(attr):
        if attr not in want:
            return np.full(n, NONE, np.int64)
        return _i64(list(map(attrgetter(attr), args)), n)

    ext = col("ext")
    out = {"device": _int32(col("device")), "stream": col("stream"), "correlation": col("correlation"),
           "external_id": np.where(ext != NONE, ext, col("ext2")), "bytes": col("nbytes")}
    if "grid" in want:
        out["blocks"] = np.fromiter((NONE if grid is None else _prod(grid) for grid in map(attrgetter("grid"), args)),
                                    np.int64, n)
    else:
        out["blocks"] = np.full(n, NONE, np.int64)
    return out


def _int32(v: np.ndarray) -> np.ndarray:
    """An int64 column as int32 (the device's): a value past int32 is none (NONE), not wrapped around
    (a device 2**32 + 5 is no device 5)."""
    return np.where((v >= -(1 << 31)) & (v < 1 << 31), v, NONE).astype(np.int32)


# schema.Args's attribute -> its JSON name (the scanner's columns are by JSON name)
_FIELD = {f.name: f.encode_name for f in msgspec.structs.fields(Args)}
_MEMORY_ARGS = ("dev_type", "dev_id", "mbytes", "addr", "allocated", "reserved")  # a memory record's args
_INT_DEFAULT = {f.encode_name: f.default for f in msgspec.structs.fields(Args) if f.type is int}


def _scanned_int(s, rows: np.ndarray, attr: str) -> np.ndarray:
    """One int arg of the scanner's rows; absent, schema.Args's default."""
    field = _FIELD[attr]
    vals = s.ints[rows, kineto_scan.column("int", field)]
    return np.where(vals == _INT_ABSENT, _INT_DEFAULT[field], vals)


def _scanned_arg_columns(s, rows: np.ndarray, want: set) -> dict[str, np.ndarray]:
    """_arg_columns for the scanner's rows (absent ints take schema.Args's defaults)."""
    n = len(rows)

    def col(attr):
        if attr not in want:
            return np.full(n, NONE, np.int64)
        return _scanned_int(s, rows, attr)

    ext = col("ext")
    out = {"device": _int32(col("device")), "stream": col("stream"), "correlation": col("correlation"),
           "external_id": np.where(ext != NONE, ext, col("ext2")), "bytes": col("nbytes")}
    if "grid" in want:
        grids = s.raws_of[rows, kineto_scan.column("raw", "grid")]
        out["blocks"] = kineto_scan.lut(grids, lambda g: NONE if g < 0 or s.grids[g] is None else _prod(s.grids[g]))
    else:
        out["blocks"] = np.full(n, NONE, np.int64)
    return out


def _by_category(s, rows: np.ndarray):
    """(category text, its rows) in order of first sight; texts that decode equal are one category."""
    rows_of: dict[str, list] = {}
    for cat_id in kineto_scan.first_sight(s.cat[rows]).tolist():
        rows_of.setdefault(s.values[cat_id], []).append(cat_id)
    for cat, ids in rows_of.items():
        yield cat, rows[np.isin(s.cat[rows], ids)]


def _kernel_metrics(column) -> dict[str, np.ndarray]:
    """Metric columns of kernels from their args (EventTable.metrics), only those some kernel has
    (column(attr): the float args column of schema.Args's attr)."""
    out = {}
    for metric, attr in _KERNEL_METRICS:
        col = column(attr)
        if attr == "occupancy":
            col = np.where(np.isnan(col), column("occupancy_2021"), col)
        if not np.isnan(col).all():
            out[_METRIC_KEY + metric] = col
    return out


def _small_values(top_raw: dict) -> dict[str, Any]:
    top: dict[str, Any] = {}
    for k, v in top_raw.items():
        if k in ("deviceProperties", "distributedInfo") or len(memoryview(v)) < 4096:
            try:
                top[k] = msgspec.json.decode(v)
            except msgspec.DecodeError:
                pass
    return top


def _prod(values: list) -> int:
    product = 1
    for x in values:
        product *= x
    return product if _I64[0] <= product <= _I64[1] else NONE


_HUGE = 1 << 256  # a digit string too long to convert (int() refuses 4,300 digits): past every bound it meets


def _int(v, default):
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        text = v.strip()
        if len(text) > 64:
            return -_HUGE if text.startswith("-") else _HUGE
        return int(text)
    return default


def _kind_of_cat(cat: str) -> int:
    """Kind by Kineto's category name; _UNKNOWN for a category it does not name."""
    low = cat.lower()
    kind = CATEGORY_KIND.get(low)
    if kind is not None:
        return kind
    if low.endswith("_runtime") or low.endswith("_driver"):  # any backend's host runtime API
        return Kind.RUNTIME
    if low in NOT_WORK or low in LAUNCH_FLOWS:
        return Kind.OTHER
    return _UNKNOWN


_HOST_COLLECTIVE = ("gloo:", "nccl:", "hccl:")  # backend ranges of a collective as it ran


def _collective_bytes(args: list, nbytes: np.ndarray, rows: list[int]) -> None:
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
            size = DTYPE_SIZE.get(str(dtype).lower(), 0)
            if size and isinstance(shape, list) and all(type(x) is int and x >= 0 for x in shape):
                total += _prod(shape) * size
        if total:
            nbytes[i] = total


def _render_args(raw: bytes) -> str | None:
    """"Input type" NUL "Concrete Inputs" (raw JSON) -> the `args` column's text (ingest/op_args.py)."""
    types, _, concrete = raw.partition(b"\0")
    return op_args.encode(types=op_args.json_list(types), concrete=op_args.json_list(concrete))


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
    for prop in props:
        if not isinstance(prop, dict):
            continue
        name = str(prop.get("name", ""))
        amd = hip or any(word in name for word in ("AMD", "Radeon", "Instinct"))
        dev = {"kind": "rocm" if amd else "cuda", "index": _int(prop.get("id"), len(out)), "name": name,
               "memory": _int(prop.get("totalGlobalMem"), NONE)}
        if "computeMajor" in prop:
            dev["compute_capability"] = f"{prop.get('computeMajor')}.{prop.get('computeMinor', 0)}"
        if "numSms" in prop:
            dev["sm_count"] = _int(prop.get("numSms"), NONE)
        out.append(dev)
    return out


def _concat(parts: list[dict], spec: dict, exclude: tuple = ()) -> dict[str, np.ndarray]:
    out = {}
    for k, t in spec.items():
        if k in exclude:
            continue
        # cast as they are copied (unsafe: as astype did): a part of another dtype costs no second copy
        # of the whole column
        out[k] = np.concatenate([p[k] for p in parts], dtype=t, casting="unsafe") if parts else np.zeros(0, t)
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
# an exact chunk's numbers as their text says (a float past 2**43 µs has lost its ns); Raw args keep them numbers
_FLOATS, _DECIMALS = msgspec.json.Decoder(), msgspec.json.Decoder(float_hook=decimal.Decimal)
_RAW_TEXT = msgspec.json.Encoder(decimal_format="number")


def _num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float, decimal.Decimal)):
        return v
    if isinstance(v, str):
        try:
            return decimal.Decimal(v.strip())
        except decimal.InvalidOperation:
            return None
    return None


def _lenient(raw: msgspec.Raw, plain: msgspec.json.Decoder):
    """An event as plain objects (by `plain`); a field that cannot be (a number out of any range) is left out."""
    try:
        return plain.decode(raw)
    except msgspec.ValidationError:
        pass
    try:
        fields = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError:
        return None
    out = {}
    for key, value in fields.items():
        try:
            out[key] = plain.decode(value)
        except msgspec.ValidationError:
            if key == "args":
                out[key] = _lenient(value, plain)
    return out


def _coerce(obj, typ) -> Ev | None:
    if not isinstance(obj, dict):
        return None
    ts, dur = _num(obj.get("ts")), _num(obj.get("dur"))
    if typ is Ev:
        ts = _NAN if ts is None or not _finite(ts) else float(ts)
        dur = _NAN if dur is None or not _finite(dur) else float(dur)
    elif ts is not None:  # the decimal path: ints (and floats) as their text says, decimals as they are
        ts, dur = _decimal(ts), (None if dur is None else _decimal(dur))
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


def _decimal(v) -> decimal.Decimal:
    return v if isinstance(v, decimal.Decimal) else decimal.Decimal(repr(v))


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
    if t is float:
        n = _num(v)
        return float(n) if n is not None and _finite(n) else None
    if t is msgspec.Raw:
        return msgspec.Raw(_RAW_TEXT.encode(v))
    if t == (list[int] | None):
        return [int(x) for x in v] if isinstance(v, list) and all(isinstance(x, int) for x in v) else None
    return None if v is None else str(v)
