"""Cross-rank analysis over the digests of one window of many ranks (never the traces).

`analyse_ranks(digests) -> dict` (JSON-friendly, ints stay ints):

- ranks: per rank, from the mean step breakdown: compute (device compute not overlapped),
  overlapped, communication (not overlapped), other (memcpy, memset, runtime, dataloader, host,
  idle: the device is not computing nor communicating), step time; and wait / transfer.
- wait vs transfer (the torch-tb-profiler rule): the j-th call of each (kind, group) is matched
  across the ranks that have that key; transfer_j = the shortest duration among them (the rank
  that arrived last did not wait); each rank's wait_j = its duration - transfer_j. Keys whose call
  counts differ between ranks are matched on the first min(count) calls and listed in
  `unmatched`. Needs the call lists (CommCall); a truncated list is matched as far as it goes.
- collectives: per (kind, group) totals over all ranks (calls, time, bytes, wait, transfer).
- CPU-only runs (no device work on any rank, `summary.has_device_work`): the host operators are
  the computation, so compute = host time and `compute_source` = "host" (else "device").
- slow_ranks (the msprof-analyze rule): for each metric, computing (= compute + overlapped, as
  CANN's Computing), communication (not overlapped) and free (the rest of the step),
  ratio = (max - min) / mean over ranks; ratio > 5 % flags it. The slowest rank is the one with
  the most computing, or the most free time; for communication it is the one with the *least*
  (every other rank waits for it inside the collectives).
- matrix: Ascend links (communication_matrix.json) summed per (src, dst, transport) when any
  digest has them; otherwise a ring approximation from collective sizes: the members of a
  (kind, group) are the ranks that called it, ordered by rank, and each rank sends to the next:
  AllReduce 2(n-1)/n x size, AllGather / ReduceScatter (n-1)/n x size, Broadcast / Reduce /
  Gather / Scatter size, Send / Recv size to the next rank; AllToAll size/n to every other member.
  Sizes unknown (-1) give no cell; `matrix_source` says which way was used.
- matrix_cells: the matrix summed per (src, dst) over transports (what the heatmap draws):
  bytes and time (negative values count as 0), bandwidth = bytes / time in GB/s (None without
  time), and the transports seen.
- rank ids: each digest's own rank; when two digests carry the same rank (e.g. all 0) the ranks
  are numbered by position instead (`rank_ids`).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import digest_pb2 as pb
from .summary import has_device_work

SLOW_RANK_RATIO = 0.05



def rank_ids(digests: list) -> list[int]:
    """The rank of each digest; numbered by position when the digests' ranks repeat."""
    ranks = [int(d.window.rank) if d.HasField("window") else i for i, d in enumerate(digests)]
    if len(set(ranks)) != len(ranks):
        return list(range(len(digests)))
    return ranks


def analyse_ranks(digests: list) -> dict:
    ranks = rank_ids(digests)
    on_host = not any(has_device_work(d) for d in digests)
    per = {r: _rank_breakdown(r, d, on_host) for r, d in zip(ranks, digests)}
    durations, sizes = _calls_by_key(ranks, digests)
    collectives, unmatched = _match_calls(durations, sizes, per)
    matrix, source = _matrix(digests, sizes)
    return {"ranks": [per[r] for r in sorted(per)], "collectives": collectives, "slow_ranks": _slow_ranks(per),
            "matrix": matrix, "matrix_cells": matrix_cells(matrix), "unmatched": unmatched,
            "matrix_source": source, "compute_source": "host" if on_host else "device"}


def _rank_breakdown(rank: int, digest: pb.Digest, on_host: bool) -> dict:
    """One rank's row from its mean step (wait / transfer are added by `_match_calls`)."""
    mean = digest.average
    comp, ov, comm = (mean.host_ns if on_host else mean.compute_ns), mean.overlapped_ns, mean.communication_ns
    rest = max(mean.total_ns - comp - ov - comm, 0)
    return {"rank": rank, "steps": len(digest.steps), "step_ns": mean.total_ns, "compute_ns": comp, "overlapped_ns": ov,
            "communication_ns": comm, "other_ns": rest, "computing_ns": comp + ov, "free_ns": rest,
            "wait_ns": 0, "transfer_ns": 0}


def _calls_by_key(ranks: list[int], digests: list) -> tuple[dict, dict]:
    """{(kind, group): {rank: durations}} and {(kind, group): {rank: sizes}}, calls by start."""
    durations: dict = defaultdict(dict)
    sizes: dict = defaultdict(dict)
    for rank, digest in zip(ranks, digests):
        by_key = defaultdict(list)
        for c in digest.communication.calls:
            by_key[(c.kind, c.group)].append((c.start_ns, c.dur_ns, c.bytes))
        for key, calls in by_key.items():
            calls.sort()
            durations[key][rank] = np.array([c[1] for c in calls], np.int64)
            sizes[key][rank] = np.array([c[2] for c in calls], np.int64)
    return durations, sizes


def _match_calls(durations: dict, sizes: dict, per: dict) -> tuple[list, list]:
    """Wait / transfer of the j-th call of each (kind, group) across ranks (see the module doc);
    adds each rank's wait and transfer to its row in `per`. Returns (collectives, unmatched)."""
    collectives, unmatched = [], []
    for key, by_rank in durations.items():
        members = sorted(by_rank)
        matched = min(len(by_rank[r]) for r in members)
        if len({len(by_rank[r]) for r in members}) > 1:
            unmatched.append({"kind": key[0], "group": key[1],
                              "calls": {str(r): int(len(by_rank[r])) for r in members}})
        mat = np.stack([by_rank[r][:matched] for r in members]) if matched else np.zeros((len(members), 0), np.int64)
        transfer = mat.min(axis=0) if matched else np.zeros(0, np.int64)
        wait = mat - transfer[None, :]
        row = {"kind": key[0], "group": key[1], "ranks": len(members),
               "calls": int(sum(len(by_rank[r]) for r in members)), "matched_calls": int(matched),
               "total_ns": int(sum(int(by_rank[r].sum()) for r in members)),
               "bytes": int(sum(int(b[b >= 0].sum()) for b in sizes[key].values())),
               "wait_ns": int(wait.sum()), "transfer_ns": int(transfer.sum()) * len(members), "per_rank": {}}
        for i, rank in enumerate(members):
            rank_wait, rank_transfer = int(wait[i].sum()), int(transfer.sum())
            per[rank]["wait_ns"] += rank_wait
            per[rank]["transfer_ns"] += rank_transfer
            row["per_rank"][str(rank)] = {"calls": int(len(by_rank[rank])), "total_ns": int(by_rank[rank].sum()),
                                          "wait_ns": rank_wait, "transfer_ns": rank_transfer}
        collectives.append(row)
    collectives.sort(key=lambda c: (-c["total_ns"], c["kind"], c["group"]))
    return collectives, unmatched


def _slow_ranks(per: dict) -> list[dict]:
    """The msprof-analyze spread of computing, communication and free time over the ranks."""
    if len(per) < 2:
        return []
    ranks = sorted(per)
    out = []
    for metric, field, slow_is_max in (("computing", "computing_ns", True),
                                       ("communication", "communication_ns", False), ("free", "free_ns", True)):
        values = np.array([per[r][field] for r in ranks], np.float64)
        mean = float(values.mean())
        ratio = float((values.max() - values.min()) / mean) if mean > 0 else 0.0
        i_max, i_min = int(np.argmax(values)), int(np.argmin(values))
        out.append({"metric": metric, "max_ns": int(values.max()), "min_ns": int(values.min()), "mean_ns": mean,
                    "ratio": ratio, "max_rank": ranks[i_max], "min_rank": ranks[i_min],
                    "flagged": ratio > SLOW_RANK_RATIO, "slowest_rank": ranks[i_max] if slow_is_max else ranks[i_min]})
    return out


def _matrix(digests: list, sizes: dict) -> tuple[list, str]:
    """(cells per (src, dst, transport), source): Ascend links when any digest has them,
    else the ring estimate from collective sizes."""
    cells: dict = defaultdict(lambda: {"bytes": 0, "time_ns": 0})
    if any(len(d.communication.links) for d in digests):
        source = "links"
        for digest in digests:
            for link in digest.communication.links:
                cell = cells[(link.src, link.dst, link.transport)]
                cell["bytes"] += int(link.bytes)
                cell["time_ns"] += int(link.time_ns)
    else:
        source = "none"
        for (kind, _group), by_rank in sizes.items():
            for src, dst, nbytes in _ring_sends(kind, by_rank):
                cells[(src, dst, "ring")]["bytes"] += nbytes
                source = "ring"
    matrix = [{"src": int(src), "dst": int(dst), "transport": transport, "bytes": v["bytes"], "time_ns": v["time_ns"],
               "bandwidth_gbps": (v["bytes"] / v["time_ns"]) if v["time_ns"] > 0 else -1.0}
              for (src, dst, transport), v in sorted(cells.items())]
    return matrix, source


def _ring_sends(kind: str, by_rank: dict):
    """(src, dst, bytes) that each member of one (kind, group) sends, by the ring rule."""
    members = sorted(by_rank)
    n = len(members)
    if n < 2:
        return
    for i, rank in enumerate(members):
        sizes = by_rank[rank]
        size = int(sizes[sizes >= 0].sum())
        if size <= 0:
            continue
        nxt = members[(i + 1) % n]
        if kind == "AllReduce":
            sends = {nxt: 2 * (n - 1) * size // n}
        elif kind in ("AllGather", "ReduceScatter"):
            sends = {nxt: (n - 1) * size // n}
        elif kind == "AllToAll":
            sends = {other: size // n for other in members if other != rank}
        elif kind in ("Broadcast", "Reduce", "Gather", "Scatter", "Send"):
            sends = {nxt: size}
        else:
            continue
        for dst, nbytes in sends.items():
            yield rank, dst, int(nbytes)


def matrix_cells(matrix: list[dict]) -> list[dict]:
    """The matrix summed per (src, dst) over its transports (see the module doc)."""
    cells: dict = {}
    for cell in matrix:
        out = cells.setdefault((cell["src"], cell["dst"]), {"src": cell["src"], "dst": cell["dst"], "bytes": 0,
                                                             "time_ns": 0, "transports": []})
        out["bytes"] += max(0, cell["bytes"])
        out["time_ns"] += max(0, cell["time_ns"])
        if cell["transport"] not in out["transports"]:
            out["transports"].append(cell["transport"])
    for out in cells.values():
        out["bandwidth_gbps"] = out["bytes"] / out["time_ns"] if out["time_ns"] > 0 else None
    return [cells[key] for key in sorted(cells)]
