"""Cross-rank analysis over the digests of one window of many ranks (never the traces).

`analyse_ranks(digests) -> dict` (JSON-friendly, ints stay ints):

- ranks: per rank, from the mean step breakdown: compute (device compute not overlapped),
  overlapped, communication (not overlapped), other (memcpy, memset, runtime, dataloader, host,
  idle: the device is not computing nor communicating), step time; and wait / transfer.
- wait vs transfer: analysis/wait_transfer.py, the one definition (per call: CANN's measured wait
  and transit where this rank has them, else the torch-tb-profiler rule over the calls matched
  within their communicator and kind, in their sequence: transfer_j = the shortest duration of
  the j-th call among the ranks, wait_j = duration - transfer_j; per step: the merged intervals
  clipped to the step, so wait + transfer <= communication <= step). A row's wait_ns /
  p2p_wait_ns / transfer_ns / communication_total_ns are per mean step like its step_ns,
  `window_*` their sums over the steps, and `per_step` each step (with the step's compute /
  overlapped / communication / other from the trace's breakdown, for the step selector).
  Keys whose call counts differ between ranks are matched on the first min(count) calls and
  listed in `unmatched`.
- collectives: per (kind, group) totals over all ranks (calls, time, bytes, and wait / transfer
  summed over the calls, like the time; -1 where a rank's calls have none).
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
from .wait_transfer import call_splits, collective_sums, rank_figures

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
    cann = bool(digests) and all(len(d.cann_steps) for d in digests)
    per = {r: (_cann_breakdown(r, d) if cann else _rank_breakdown(r, d, on_host)) for r, d in zip(ranks, digests)}
    splits = call_splits(digests)
    for rank, digest, split in zip(ranks, digests, splits):
        per[rank].update(rank_figures(digest, split))
        _step_breakdowns(per[rank]["per_step"], digest, on_host)
    calls, sizes = _calls_by_key(ranks, digests)
    collectives, unmatched = _match_calls(calls, sizes, collective_sums(digests, splits), ranks)
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
            "source": "trace"}


def _step_breakdowns(rows: list[dict], digest: pb.Digest, on_host: bool) -> None:
    """Each `per_step` row gets its step's split as `_rank_breakdown` makes the mean step's (trace)."""
    by_number = {s.number: s.breakdown for s in digest.steps}
    for row in rows:
        b = by_number[row["step"]]
        comp = b.host_ns if on_host else b.compute_ns
        row.update(step_ns=b.total_ns, compute_ns=comp, overlapped_ns=b.overlapped_ns, communication_ns=b.communication_ns,
                   other_ns=max(b.total_ns - comp - b.overlapped_ns - b.communication_ns, 0))


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
            "free_ns": free, "bubble_ns": mean("bubble_ns"), "source": steps[0].source}


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


def _match_calls(calls: dict, sizes: dict, sums: dict, ranks: list[int]) -> tuple[list, list]:
    """Per (kind, group) over the ranks: calls, time, bytes, and wait / transfer summed over the calls
    (wait_transfer.collective_sums; -1 where a rank's are unknown). Returns (collectives, unmatched)."""
    index = {rank: i for i, rank in enumerate(ranks)}
    collectives, unmatched = [], []
    for key, by_rank in calls.items():
        members = sorted(by_rank)
        if len({len(by_rank[r]) for r in members}) > 1:
            unmatched.append({"kind": key[0], "group": key[1],
                              "calls": {str(r): int(len(by_rank[r])) for r in members}})
        comm_type = "p2p" if any(c[3] == "p2p" for r in members for c in by_rank[r]) else "collective"
        durations = {r: sum(c[0] for c in by_rank[r]) for r in members}
        split = {r: sums[(index[r],) + key] for r in members}
        known = all(w >= 0 for w, _ in split.values())
        row = {"kind": key[0], "group": key[1], "comm_type": comm_type, "ranks": len(members),
               "calls": int(sum(len(by_rank[r]) for r in members)),
               "matched_calls": int(min(len(by_rank[r]) for r in members)), "total_ns": int(sum(durations.values())),
               "bytes": int(sum(int(b[b >= 0].sum()) for b in sizes[key].values())),
               "wait_ns": sum(w for w, _ in split.values()) if known else -1,
               "transfer_ns": sum(t for _, t in split.values()) if known else -1,
               "wait_source": _wait_source(by_rank, members, known), "per_rank": {}}
        for rank in members:
            row["per_rank"][str(rank)] = {"calls": len(by_rank[rank]), "total_ns": durations[rank],
                                          "wait_ns": split[rank][0], "transfer_ns": split[rank][1]}
        collectives.append(row)
    collectives.sort(key=lambda c: (-c["total_ns"], c["kind"], c["group"]))
    return collectives, unmatched


def _wait_source(by_rank: dict, members: list[int], known: bool) -> str:
    """Where a collective's wait / transfer come from: CANN's file, the matched calls, or "" (unknown)."""
    if not known:
        return ""
    if all(c[1] >= 0 and c[2] >= 0 for r in members for c in by_rank[r]):
        return next((c[4] for r in members for c in by_rank[r] if c[4]), "") or "CANN"
    return "matched calls"


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
