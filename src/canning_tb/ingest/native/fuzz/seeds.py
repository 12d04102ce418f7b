"""Seed corpora written at run time from the fixtures (nothing of them is committed): the pieces each
scanner is handed, cut by the readers' own cutter (_json.iter_chunks: "[" whole elements "]") from the
Ascend trace_view.json files and the Kineto traceEvents arrays, at a few piece sizes so that seeds
hold one element up to dozens. The array targets decode their own structure from the bytes: their seeds are
only the inputs that once crashed them (FOUND), so that every run, the short one in the tests included,
replays them first."""
from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from canning_tb.ingest import _json

SIZES = (1, 600, 4000)  # iter_chunks' chunk: bytes past which a piece is cut (1: one element a piece)
# inputs that crashed a target, as that target's code decodes them (a change in its decoding changes what
# they mean: test_compiled_sanitized holds each bug's values by hand too)
FOUND = {"tree_sum": [bytes.fromhex(  # int64 5534022346647487042 + 5534022346647487042 in tree.c's sum_up
    "af1bff424242424242f600cccccc797979794242424242f642424242424242424242fff600cccccc79797979792b797979cc")]}
PER_FILE = 40  # pieces kept per file and size (by default), spread over the file


def pieces(buf: bytearray, lo: int, hi: int, per_file: int = PER_FILE) -> list[bytes]:
    """The pieces of the array buf[lo:hi] as the reader cuts them (a cut inside a string fails to decode and
    the piece grows, as in the reader)."""
    out = []
    for size in SIZES:
        got = list(_json.iter_chunks(buf, lo, hi, lambda v: (msgspec.json.decode(v), bytes(v))[1], lambda: None,
                                     chunk=size))
        step = max(1, len(got) // per_file)
        out += got[::step][:per_file]
    return out


def array_span(path: Path) -> tuple[bytearray, int, int]:
    """The file's events array: the whole file (a bare array) or its traceEvents."""
    buf = _json.read_bytes(str(path))
    head = bytes(buf[:64]).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"[":
        return buf, len(buf) - len(bytes(buf).lstrip(b"\xef\xbb\xbf \t\r\n")), len(buf.rstrip(b" \t\r\n"))
    top, buf = _json.decode_top(str(path), buf, [])
    lo, hi = _json.value_span(buf, top["traceEvents"])
    return buf, lo, hi


def files(fixtures: Path) -> dict[str, list[Path]]:
    return {"ascend_scan": sorted(fixtures.glob("ascend/level*/rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json")),
            "kineto_scan": sorted(p for p in fixtures.glob("*/**/*.json*") if p.parts[len(fixtures.parts)] in ("kineto", "hta")
                                  and "expected" not in p.name and "nccl_parser_config" not in str(p))}


def write(target: str, fixtures: Path | None, out: Path, per_file: int = PER_FILE, max_files: int | None = None) -> int:
    """The seeds of `target` into the folder `out` (one file each, named by content); how many. max_files:
    from the smallest files only (a short run: the big traces take seconds to cut)."""
    out.mkdir(parents=True, exist_ok=True)
    for found in FOUND.get(target, []):
        (out / ("found-" + hashlib.sha1(found).hexdigest())).write_bytes(found)
    count = len(FOUND.get(target, []))
    paths = files(fixtures).get(target, []) if fixtures is not None else []
    if max_files is not None:
        paths = sorted(paths, key=lambda p: p.stat().st_size)[:max_files]
    for path in paths:
        try:
            buf, lo, hi = array_span(path)
        except (KeyError, TypeError, msgspec.DecodeError, _json.InputError):
            continue  # no events array (a metrics file, say): no seeds from it
        for piece in pieces(bytearray(buf), lo, hi, per_file):
            (out / hashlib.sha1(piece).hexdigest()).write_bytes(piece)
            count += 1
    return count
