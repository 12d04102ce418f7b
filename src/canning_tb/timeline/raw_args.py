"""Every arg the file holds for each event, as written (the slice details show them all, beyond the
columns the EventTable keeps): read once from the window's Chrome trace files (Kineto's object or
torch_npu's bare array), matched to the table's rows by (start, duration, name), and stored beside
the index: `<prefix>.args.bin` (zlib-compressed chunks of ROWS_PER_CHUNK rows' args JSON) and
`<prefix>.args.npz` (where each chunk and each row's args lie). A click reads one chunk.

Building reads the whole trace again, so the plugin runs it in a separate process on the first
click of a window's slice; a window without a Chrome trace (a SQLite export) has no raw args."""
from __future__ import annotations

import math
import os
import zlib
from functools import lru_cache

import msgspec
import numpy as np

from canning_tb.ingest import _json
from canning_tb.ingest.ascend.csv.rows import us_to_ns
from canning_tb.ingest.file_head import file_head
from canning_tb.ingest.table import EventTable, InputError
from canning_tb.util import safe_files

ROWS_PER_CHUNK = 2048
ARGS_SUFFIX = ".args"  # <events prefix>.args.npz and .args.bin
NONE_NS = np.iinfo(np.int64).min  # a time the file does not give
_NO_ARGS = msgspec.Raw(b"")


class _RawEvent(msgspec.Struct, gc=False):
    ph: str = ""
    name: str | None = None
    ts: float | str | None = None
    dur: float | str | None = 0.0
    args: msgspec.Raw = _NO_ARGS


_DECODE = msgspec.json.Decoder(list[_RawEvent])


def _ns(value) -> int | None:
    """µs as Kineto (float: integer part and fraction apart, as ingest does) or torch_npu (text) writes it."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        whole = math.floor(value)
        return int(whole) * 1000 + round((value - whole) * 1000)
    return us_to_ns(value)


def _events_span(path: str):
    """(buffer, start, end) of the file's event array, or None when it is not a Chrome trace."""
    head = file_head(path, 256).lstrip()
    if head[:1] not in (b"[", b"{"):
        return None
    buf = _json.read_bytes(path)
    if head[:1] == b"[":
        return buf, buf.find(b"["), buf.rfind(b"]") + 1
    top, buf = _json.decode_top(path, buf, [])
    events = top.get("traceEvents")
    if events is None:
        return None
    lo, hi = _json.value_span(buf, events)
    return buf, lo, hi


def _decode(piece) -> list:
    try:
        return _DECODE.decode(piece)
    except msgspec.ValidationError:  # an odd event in the piece: keep the others
        out = []
        for raw in msgspec.json.decode(piece, type=list[msgspec.Raw]):
            try:
                out.append(msgspec.json.decode(raw, type=_RawEvent))
            except msgspec.ValidationError:
                continue
        return out


def _times_ns(values: list) -> np.ndarray:
    """µs -> ns per value (NONE_NS where unusable): floats at once, as ingest converts them; text one by one."""
    if all(type(v) is float for v in values):
        us = np.array(values, np.float64)
        ok = np.isfinite(us)
        whole = np.floor(np.where(ok, us, 0))
        out = whole.astype(np.int64) * 1000 + np.rint((np.where(ok, us, 0) - whole) * 1000).astype(np.int64)
        return np.where(ok, out, NONE_NS)
    return np.array([NONE_NS if (n := _ns(v)) is None else n for v in values], np.int64)


def _file_events(path: str, names: dict[str, int]) -> tuple[list[np.ndarray], list]:
    """Per chunk of the file: (ts ns, dur ns, name id) of its complete events, and their args."""
    span = _events_span(path)
    if span is None:
        return [], []
    buf, lo, hi = span
    keys, args = [], []
    for events in _json.iter_chunks(buf, lo, hi, _decode, lambda: None):
        complete = [e for e in events if e.ph == "X" and e.name is not None]
        ts = _times_ns([e.ts for e in complete])
        dur = _times_ns([0.0 if e.dur is None else e.dur for e in complete])
        name = np.array([names.get(e.name, -1) for e in complete], np.int64)
        ok = (ts != NONE_NS) & (dur != NONE_NS)
        keys.append(np.stack([ts, np.maximum(dur, 0), name], axis=1)[ok])
        args += [e.args for e, good in zip(complete, ok.tolist()) if good]
    return keys, args


def match_rows(table_keys: np.ndarray, file_keys: np.ndarray) -> np.ndarray:
    """Per table row (ts, dur, name), the index of the file event with the same key (the k-th of
    equal keys with the k-th), else -1."""
    n_table = len(table_keys)
    if not len(file_keys):  # no event in the files (a window without a Chrome trace): no row has args
        return np.full(n_table, -1, np.int64)
    both = np.concatenate([table_keys, file_keys])
    side = np.repeat([0, 1], [n_table, len(both) - n_table])
    order = np.lexsort((np.arange(len(both)), side, both[:, 2], both[:, 1], both[:, 0]))
    keys, sides = both[order], side[order]
    group = np.cumsum(np.append(True, np.any(keys[1:] != keys[:-1], axis=1))) - 1
    run_start = np.flatnonzero(np.append(True, (group[1:] != group[:-1]) | (sides[1:] != sides[:-1])))
    rank = np.arange(len(order)) - np.repeat(run_start, np.diff(np.append(run_start, len(order))))
    code = group * (len(order) + 1) + rank
    file_codes, file_rows = code[sides == 1], order[sides == 1] - n_table
    found = np.full(n_table, -1, np.int64)
    mine = sides == 0
    at = np.searchsorted(file_codes, code[mine])
    hit = (at < len(file_codes)) & (file_codes[np.minimum(at, len(file_codes) - 1)] == code[mine])
    found[order[mine][hit]] = file_rows[at[hit]]
    return found


def build_raw_args(table: EventTable, sources: list[str], prefix: str) -> int:
    """Write the args store of `table` from its source files; returns how many rows got args."""
    names = {text: i for i, text in enumerate(table.strings.values)}
    keys: list[np.ndarray] = []
    args: list = []
    for path in sources:
        try:
            more_keys, more_args = _file_events(path, names)
        except (InputError, ValueError, msgspec.DecodeError):
            continue  # not a Chrome trace we can read: its events simply have no raw args
        keys += more_keys
        args += more_args
    ev = table.events
    table_keys = np.stack([ev["ts"], ev["dur"], ev["name"].astype(np.int64)], axis=1)
    found = match_rows(table_keys, np.concatenate(keys) if keys else np.zeros((0, 3), np.int64))
    _write(found, args, prefix)
    return int((found >= 0).sum())


def _write(found: np.ndarray, args: list, prefix: str) -> None:
    starts = np.zeros(len(found), np.int64)
    lengths = np.full(len(found), -1, np.int64)
    offsets = [0]

    def write_bin(out) -> None:
        for first in range(0, len(found), ROWS_PER_CHUNK):
            parts, at = [], 0
            for row in range(first, min(first + ROWS_PER_CHUNK, len(found))):
                if found[row] >= 0:
                    text = bytes(args[found[row]]) or b"{}"
                    starts[row], lengths[row] = at, len(text)
                    parts.append(text)
                    at += len(text)
            offsets.append(offsets[-1] + out.write(zlib.compress(b"".join(parts), 1)))

    # safe_files: never through a link where the cache folder sits inside a logdir (.canning)
    safe_files.atomic_write(prefix + ARGS_SUFFIX + ".bin", write=write_bin)
    safe_files.atomic_write(prefix + ARGS_SUFFIX + ".npz",
                            write=lambda f: np.savez(f, offsets=np.array(offsets, np.int64), starts=starts, lengths=lengths))


@lru_cache(maxsize=8)
def _where(path: str, mtime_ns: int) -> dict[str, np.ndarray]:
    """The store's positions, read once per version of the file."""
    with safe_files.open_file(path) as f, np.load(f) as z:  # a regular file, inside the logdir if there
        return {key: z[key] for key in ("offsets", "starts", "lengths")}


def _positions(prefix: str) -> dict[str, np.ndarray]:
    path = prefix + ARGS_SUFFIX + ".npz"
    return _where(path, os.stat(path).st_mtime_ns)


def has_raw_args(prefix: str, rows: int) -> bool:
    try:
        return len(_positions(prefix)["starts"]) == rows and os.path.exists(prefix + ARGS_SUFFIX + ".bin")
    except (OSError, ValueError, KeyError):
        return False


def read_raw_args(prefix: str, row: int) -> dict | None:
    """The args of one row as the file wrote them; None when the file has none for it."""
    where = _positions(prefix)
    start, length = int(where["starts"][row]), int(where["lengths"][row])
    chunk = row // ROWS_PER_CHUNK
    lo, hi = int(where["offsets"][chunk]), int(where["offsets"][chunk + 1])
    if length < 0:
        return None
    with safe_files.open_file(prefix + ARGS_SUFFIX + ".bin") as f:
        f.seek(lo)
        text = zlib.decompress(f.read(hi - lo))[start:start + length]
    # args are kept as the file's bytes, unchecked: a byte that is no UTF-8 reads as U+FFFD (as ingest reads it)
    value = msgspec.json.decode(text.decode("utf-8", "replace"))
    return value if isinstance(value, dict) else {"args": value}


def build_from_cache(prefix: str, root: str = "") -> int:
    """The args store of the window whose events are cached at `prefix` (a worker process's job); its
    trace files are opened only inside `root`, the logdir (safe_files)."""
    safe_files.confine(root)
    table = EventTable.load(prefix)
    return build_raw_args(table, table.meta.source_files, prefix)
