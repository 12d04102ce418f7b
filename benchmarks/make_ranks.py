"""A generated N-rank run from real windows: the 8 ranks of the DLRM fixture (param/dlrm_8ranks, one
real step of a real 8-GPU job), each copied as ranks r, r+8, ... with its rank ids changed
(distributedInfo) and its times shifted (a few µs per copy, so the copies do not arrive together),
and optionally its step repeated end to end (`--repeat`: ids offset so flows stay paired).

    python benchmarks/make_ranks.py --ranks 16 [--repeat 20] --out DIR

Writes DIR/worker<r>.<window>.pt.trace.json.gz (Kineto's own layout) and prints what it wrote.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(os.environ.get("CANNING_FIXTURES", os.path.join(HERE, "..", "tests", "fixtures")),
                       "param", "dlrm_8ranks")
ID_ARGS = ("correlation", "External id", "external id")
ID_STRIDE = 10_000_000  # ids of repeat k are offset by k * ID_STRIDE


def source_ranks(folder: str) -> dict[int, dict]:
    """rank -> the trace of that rank (rank from distributedInfo, as the files say)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".pt.trace.json.gz"):
            with gzip.open(os.path.join(folder, name), "rt") as f:
                doc = json.load(f)
            out[int(doc["distributedInfo"]["rank"])] = doc
    return out


def shifted(event: dict, shift_us: float, id_offset: int) -> dict:
    """A copy of the event moved by shift_us, its correlation / external / flow ids offset."""
    event = copy.deepcopy(event)
    if "ts" in event and event.get("ph") != "M":
        event["ts"] = round(float(event["ts"]) + shift_us, 3)
    if id_offset and isinstance(event.get("id"), int):
        event["id"] += id_offset
    args = event.get("args")
    if id_offset and isinstance(args, dict):
        for key in ID_ARGS:
            if isinstance(args.get(key), int) and args[key] >= 0:
                args[key] += id_offset
    return event


def window_span_us(doc: dict) -> float:
    times = [(float(e["ts"]), float(e.get("dur", 0))) for e in doc["traceEvents"] if e.get("ph") == "X"]
    return max(t + d for t, d in times) - min(t for t, _ in times)


def make_rank(doc: dict, rank: int, world: int, skew_us: float, repeat: int) -> dict:
    out = {key: value for key, value in doc.items() if key != "traceEvents"}
    out["distributedInfo"] = dict(doc["distributedInfo"], rank=rank, world_size=world)
    meta = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    timed = [e for e in doc["traceEvents"] if e.get("ph") != "M"]
    span = window_span_us(doc)
    events = list(meta)
    for k in range(repeat):
        events += [shifted(e, skew_us + k * span, k * ID_STRIDE) for e in timed]
    out["traceEvents"] = events
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=1, help="the step end to end this many times per rank")
    parser.add_argument("--source", default=FIXTURE)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sources = source_ranks(args.source)
    if not sources:
        sys.exit(f"no Kineto traces with distributedInfo in {args.source}")
    os.makedirs(args.out, exist_ok=True)
    total = 0
    for rank in range(args.ranks):
        base = sorted(sources)[rank % len(sources)]
        copy_number = rank // len(sources)
        doc = make_rank(sources[base], rank, args.ranks, skew_us=37.0 * copy_number, repeat=args.repeat)
        path = os.path.join(args.out, f"worker{rank}.{1700000000000 + rank}.pt.trace.json.gz")
        with gzip.open(path, "wt", compresslevel=3) as f:
            json.dump(doc, f)
        total += os.path.getsize(path)
    print(f"wrote {args.ranks} ranks ({args.repeat} step(s) each) into {args.out}: {total / 1e6:.1f} MB gzipped")


if __name__ == "__main__":
    main()
