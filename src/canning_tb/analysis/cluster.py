"""Cross-rank analysis over the digests of one window of many ranks (never the traces).

`analyse_ranks(digests) -> dict` (JSON-friendly, ints stay ints):

- ranks: per rank, from the mean step breakdown: compute (device compute not overlapped),
  overlapped, communication (not overlapped), other (memcpy, memset, runtime, dataloader, host,
  idle: the device is not computing nor communicating), step time; and wait / transfer.
- wait vs transfer: calls are matched within their communicator (group) and kind, in their
  sequence in that communicator (HCCL numbers its calls: hcom_allReduce__586_2_1 is call 2; else
  the order by start). Where CANN measured each call's wait and transit on every rank
  (communication.json) those are used (`wait_source` names the file, as msprof-analyze does);
  otherwise the torch-tb-profiler rule: transfer_j = the shortest duration of the j-th call among
  the ranks (the rank that arrived last did not wait); each rank's wait_j = its duration -
  transfer_j. Keys whose call counts differ between ranks are matched on the first min(count)
  calls and listed in `unmatched`. Waits in pipeline-parallel send / receive (comm_type "p2p")
  go to a rank's `p2p_wait_ns`, the others to its `wait_ns`.
- collectives: per (kind, group) totals over all ranks (calls, time, bytes, wait, transfer).
- CPU-only runs (no device work on any rank, `summary.has_device_work`): the host operators are
  the computation, so compute = host time and `compute_source` = "host" (else "device").
- groups: the communicators the files declare (Ascend: profiler_metadata.json's
  parallel_group_info, msprof-analyze's communication_group.json), the ranks here that called into
  each, and the declared members present here that made no call (`missing`).
- Ascend: when every rank carries CANN's step trace (Digest.cann_steps), a rank's computing,
  communication not overlapped, overlapped and free are CANN's own (mean over its steps),
  `breakdown_source` / each row's `source` name the file, `cann_step_ns` = computing +
  communication not overlapped + free (step_ns stays the digest's mean step, as every per-rank
  view shows it); else they come from the mean step breakdown of the trace ("trace").
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

from .rules.thresholds import SLOW_RANK_RATIO  # the one threshold, shared with the rules



def rank_ids(digests: list) -> list[int]:
    """The rank of each digest; numbered by position when the digests' ranks repeat."""
    ranks = [int(d.window.rank) if d.HasField("window") else i for i, d in enumerate(digests)]
    if len(set(ranks)) != len(ranks):
        return list(range(len(digests)))
    return ranks


def analyse_ranks(digests: list) -> dict:
    ranks = rank_ids(digests)
    on_host = not any(has_device_work(d) for d in digests)
    cann = bool(digests) and all(len(d.cann_steps) for d in digests)
    per = {r: (_cann_breakdown(r, d) if cann else _rank_breakdown(r, d, on_host)) for r, d in zip(ranks, digests)}
    calls, sizes = _calls_by_key(ranks, digests)
    collectives, unmatched = _match_calls(calls, sizes, per)
    matrix, source = _matrix(digests, sizes)
    return {"ranks": [per[r] for r in sorted(per)], "collectives": collectives, "slow_ranks": _slow_ranks(per),
            "groups": _groups(digests, calls), "matrix": matrix, "matrix_cells": matrix_cells(matrix), "unmatched": unmatched,
            "matrix_source": source, "compute_source": "host" if on_host else "device",
            "breakdown_source": digests[0].cann_steps[0].source if cann else "trace"}


def _groups(digests: list, calls: dict) -> list[dict]:
    """The communicators the ranks' files declare, with the ranks of this view that called into them
    (`missing`: declared members present here that made no call)."""
    declared: dict[str, dict] = {}
    for digest in digests:
        for group in digest.communication.groups:
            declared.setdefault(group.group, {"group": group.group, "name": group.name, "ranks": list(group.ranks),
                                              "source": group.source})
    present = set(rank_ids(digests))
    for entry in declared.values():
        callers = {rank for (_kind, group), by_rank in calls.items() if group == entry["group"] for rank in by_rank}
        entry["calling_ranks"] = sorted(callers)
        entry["missing"] = sorted((set(entry["ranks"]) & present) - callers)
    return [declared[k] for k in sorted(declared)]


def _rank_breakdown(rank: int, digest: pb.Digest, on_host: bool) -> dict:
    """One rank's row from its mean step (wait / transfer are added by `_match_calls`)."""
    mean = digest.average
    comp, ov, comm = (mean.host_ns if on_host else mean.compute_ns), mean.overlapped_ns, mean.communication_ns
    rest = max(mean.total_ns - comp - ov - comm, 0)
    return {"rank": rank, "steps": len(digest.steps), "step_ns": mean.total_ns, "compute_ns": comp, "overlapped_ns": ov,
            "communication_ns": comm, "other_ns": rest, "computing_ns": comp + ov, "free_ns": rest,
            "wait_ns": 0, "transfer_ns": 0, "p2p_wait_ns": 0, "source": "trace"}


def _cann_breakdown(rank: int, digest: pb.Digest) -> dict:
    """One rank's row from CANN's own step trace (mean over its steps), as msprof-analyze reads it."""
    steps = digest.cann_steps

    def mean(field: str) -> int:
        return int(round(sum(max(getattr(s, field), 0) for s in steps) / len(steps)))
    computing, ov = mean("computing_ns"), mean("overlapped_ns")
    comm, free = mean("communication_not_overlapped_ns"), mean("free_ns")
    # step_ns stays the digest's mean step (what every per-rank view shows); CANN's own is cann_step_ns
    return {"rank": rank, "steps": len(digest.steps), "step_ns": digest.average.total_ns,
            "cann_step_ns": computing + comm + free, "compute_ns": max(computing - ov, 0),
            "overlapped_ns": ov, "communication_ns": comm, "other_ns": free, "computing_ns": computing,
            "free_ns": free, "bubble_ns": mean("bubble_ns"), "wait_ns": 0, "transfer_ns": 0, "p2p_wait_ns": 0,
            "source": steps[0].source}


def _calls_by_key(ranks: list[int], digests: list) -> tuple[dict, dict]:
    """{(kind, group): {rank: calls}} and {(kind, group): {rank: sizes}}. A rank's calls of one key are
    in their order in the communicator (HCCL's sequence, else by start); each call is (duration,
    CANN wait, CANN transit, comm_type, source)."""
    calls: dict = defaultdict(dict)
    sizes: dict = defaultdict(dict)
    for rank, digest in zip(ranks, digests):
        by_key = defaultdict(list)
        source = digest.communication.source
        for c in digest.communication.calls:
            by_key[(c.kind, c.group)].append((c.seq, c.start_ns, c.dur_ns,
                                              c.bytes, c.wait_ns, c.transit_ns, c.comm_type or "collective", source))
        for key, rows in by_key.items():
            rows.sort(key=lambda c: (c[0], c[1]))
            calls[key][rank] = [(c[2], c[4], c[5], c[6], c[7]) for c in rows]
            sizes[key][rank] = np.array([c[3] for c in rows], np.int64)
    return calls, sizes


def _match_calls(calls: dict, sizes: dict, per: dict) -> tuple[list, list]:
    """Wait / transfer of each (kind, group) across ranks: CANN's own when every rank measured them,
    else the j-th call rule of the module doc; each rank's wait goes to its collective or its p2p
    (pipeline send / receive) wait. Returns (collectives, unmatched)."""
    collectives, unmatched = [], []
    for key, by_rank in calls.items():
        members = sorted(by_rank)
        if len({len(by_rank[r]) for r in members}) > 1:
            unmatched.append({"kind": key[0], "group": key[1],
                              "calls": {str(r): int(len(by_rank[r])) for r in members}})
        waits, transfers, source = _waits(by_rank, members)
        comm_type = "p2p" if any(c[3] == "p2p" for r in members for c in by_rank[r]) else "collective"
        durations = {r: sum(c[0] for c in by_rank[r]) for r in members}
        row = {"kind": key[0], "group": key[1], "comm_type": comm_type, "ranks": len(members),
               "calls": int(sum(len(by_rank[r]) for r in members)),
               "matched_calls": int(min(len(by_rank[r]) for r in members)), "total_ns": int(sum(durations.values())),
               "bytes": int(sum(int(b[b >= 0].sum()) for b in sizes[key].values())),
               "wait_ns": int(sum(waits.values())), "transfer_ns": int(sum(transfers.values())),
               "wait_source": source, "per_rank": {}}
        for rank in members:
            per[rank]["p2p_wait_ns" if comm_type == "p2p" else "wait_ns"] += waits[rank]
            per[rank]["transfer_ns"] += transfers[rank]
            row["per_rank"][str(rank)] = {"calls": len(by_rank[rank]), "total_ns": durations[rank],
                                          "wait_ns": waits[rank], "transfer_ns": transfers[rank]}
        collectives.append(row)
    collectives.sort(key=lambda c: (-c["total_ns"], c["kind"], c["group"]))
    return collectives, unmatched


def _waits(by_rank: dict, members: list[int]) -> tuple[dict, dict, str]:
    """({rank: wait}, {rank: transfer}, source) of one (kind, group)."""
    measured = all(c[1] >= 0 and c[2] >= 0 for r in members for c in by_rank[r])
    if measured:  # CANN measured each call's wait and transit on each rank
        source = next((c[4] for r in members for c in by_rank[r] if c[4]), "") or "CANN"
        return ({r: int(sum(c[1] for c in by_rank[r])) for r in members},
                {r: int(sum(c[2] for c in by_rank[r])) for r in members}, source)
    matched = min(len(by_rank[r]) for r in members)
    mat = np.array([[c[0] for c in by_rank[r][:matched]] for r in members], np.int64).reshape(len(members), matched)
    transfer = mat.min(axis=0) if matched else np.zeros(0, np.int64)
    wait = mat - transfer[None, :]
    return ({r: int(wait[i].sum()) for i, r in enumerate(members)},
            {r: int(transfer.sum()) for r in members}, "matched calls")


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
