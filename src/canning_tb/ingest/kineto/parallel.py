"""A big plain Kineto trace read by two processes, never held whole in memory.

`_json.plan_array` finds the traceEvents array from the file's head and tail; its elements are cut in
two byte ranges; this process reads the first and a forked child (ingest.forked) the second, each a
block at a time through the same `_Reader.chunk` as the whole-file path (so the events and their
figures are the same), and the child's reader (its columns and interned strings) is merged into ours.
Anything unexpected (a cut inside a string, a child that fails, no fork) sends the caller back to the
whole-file path, which gives the precise error.
"""
from __future__ import annotations

import msgspec
import numpy as np

from .. import _json, forked
from ..table import NONE, InputError

PARALLEL_BYTES = 64 << 20  # plain traces this big are read this way


class NotPlanned(Exception):
    """The file does not fit the plan: read it whole."""


def read_ranges(path: str, reader_type, workers: int = 2):
    """A _Reader (before finish) over the file's traceEvents, and the file's other top-level keys."""
    try:
        plan = _json.plan_array(path, PARALLEL_BYTES)
    except OSError:
        plan = None
    if plan is None:
        raise NotPlanned(path)
    ranges = plan.split(path, workers if forked.can_fork() else 1)
    child = forked.Forked(_read_range, path, reader_type, ranges[1]) if len(ranges) > 1 else None
    try:
        reader = _read_range(path, reader_type, ranges[0])
    except BaseException:
        if child:
            child.kill()
        raise
    theirs = child.result() if child else None
    if child and theirs is None:
        raise NotPlanned(path)
    if theirs is not None:
        merge(reader, theirs)
    return reader, plan.top


def _read_range(path: str, reader_type, span: tuple[int, int]):
    reader = reader_type(path)

    def on_utf8():
        reader.count["utf8"] += 1

    try:
        for _ in _json.iter_file_chunks(path, span[0], span[1], reader.chunk, on_utf8):
            pass
    except (msgspec.DecodeError, RecursionError, InputError):
        raise NotPlanned(path) from None
    return reader


def merge(into, other) -> None:
    """Append other's columns to into's, its string / shape / named-id ids translated to into's."""
    strs = _lut(other.strs, into.strs)
    dims = _lut(other.raw_dims, into.raw_dims)
    extra = _lut(other.raw_args, into.raw_args)
    named = {-2 - i: -2 - into.named_ids[text] for text, i in other.named_ids.items() if text is not None}
    for part in other.ev_parts:
        for col in type(into).STRING_COLUMNS:
            part[col] = strs[part[col]]
        part["shapes"] = dims[part["shapes"]]
        part["args"] = extra[part["args"]]
        part["pid"], part["tid"] = _renamed(part["pid"], named), _renamed(part["tid"], named)
        into.ev_parts.append(part)
    for part in other.mem_parts:
        part["device"] = strs[part["device"]]
        into.mem_parts.append(part)
    for pid, tid, ts in other.flow_parts:
        into.flow_parts.append((_renamed(pid, named), _renamed(tid, named), ts))
    for pid, label in other.process_names.items():
        into.process_names[named.get(pid, pid)] = label
    for pid, label in other.process_labels.items():
        into.process_labels[named.get(pid, pid)] = label
    for key, label in other.thread_names.items():
        pid, tid = (int(x) for x in key.split(":"))
        into.thread_names[f"{named.get(pid, pid)}:{named.get(tid, tid)}"] = label
    for attr in ("window_end", "iter_start"):  # read in file order, the last one wins
        if getattr(other, attr) != NONE:
            setattr(into, attr, getattr(other, attr))
    into.count.update(other.count)
    into.problems.extend(other.problems)


def _lut(theirs, ours) -> np.ndarray:
    """Their id -> our id (interning what we lack); index -1 (NONE) maps to NONE. int32, as the id columns
    are: the mapped columns are half the fresh memory of int64 ones."""
    return np.array([ours[key] for key in theirs.keys_in_order()] + [NONE], np.int32)


def _renamed(ids: np.ndarray, named: dict[int, int]) -> np.ndarray:
    """pid / tid columns: ids of text names (-2, -3, ...) translated; numeric ids kept."""
    if not named or not (ids <= -2).any():
        return ids
    out = ids.copy()
    for old, new in named.items():
        out[ids == old] = new
    return out
