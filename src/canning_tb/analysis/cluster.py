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
- CPU-only runs (no device compute on any rank): the host operators are the computation, so
  compute = host time and `compute_source` = "host" (else "device").
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
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import digest_pb2 as pb

SLOW_RANK_RATIO = 0.05


def _rank_of(d: pb.Digest, i: int) -> int:
    return int(d.window.rank) if d.HasField("window") else i


def analyse_ranks(digests: list) -> dict:
    ranks = [_rank_of(d, i) for i, d in enumerate(digests)]
    if len(set(ranks)) != len(ranks):  # duplicate ranks (e.g. all 0): number them by position
        ranks = list(range(len(digests)))
    out: dict = {"ranks": [], "collectives": [], "slow_ranks": [], "matrix": [], "unmatched": [],
                 "matrix_source": "none"}
    on_host = all(d.average.compute_ns + d.average.overlapped_ns == 0 and not d.kernels_by_name for d in digests)
    out["compute_source"] = "host" if on_host else "device"
    per = {}
    for r, d in zip(ranks, digests):
        a = d.average
        comp, ov, comm = (a.host_ns if on_host else a.compute_ns), a.overlapped_ns, a.communication_ns
        per[r] = {"rank": r, "steps": len(d.steps), "step_ns": a.total_ns, "compute_ns": comp, "overlapped_ns": ov,
                  "communication_ns": comm, "other_ns": max(a.total_ns - comp - ov - comm, 0),
                  "computing_ns": comp + ov, "free_ns": max(a.total_ns - comp - ov - comm, 0),
                  "wait_ns": 0, "transfer_ns": 0}

    # --- wait / transfer by matching the j-th call of each (kind, group) ---------------------
    calls = defaultdict(dict)  # key -> rank -> durations (ordered by start)
    bytes_of = defaultdict(dict)
    for r, d in zip(ranks, digests):
        by_key = defaultdict(list)
        for c in d.communication.calls:
            by_key[(c.kind, c.group)].append((c.start_ns, c.dur_ns, c.bytes))
        for k, v in by_key.items():
            v.sort()
            calls[k][r] = np.array([x[1] for x in v], np.int64)
            bytes_of[k][r] = np.array([x[2] for x in v], np.int64)
    coll = {}
    for k, rd in calls.items():
        rs = sorted(rd)
        m = min(len(rd[r]) for r in rs)
        if len({len(rd[r]) for r in rs}) > 1:
            out["unmatched"].append({"kind": k[0], "group": k[1], "calls": {str(r): int(len(rd[r])) for r in rs}})
        mat = np.stack([rd[r][:m] for r in rs]) if m else np.zeros((len(rs), 0), np.int64)
        transfer = mat.min(axis=0) if m else np.zeros(0, np.int64)
        wait = mat - transfer[None, :]
        c = {"kind": k[0], "group": k[1], "ranks": len(rs), "calls": int(sum(len(rd[r]) for r in rs)),
             "matched_calls": int(m), "total_ns": int(sum(int(rd[r].sum()) for r in rs)),
             "bytes": int(sum(int(b[b >= 0].sum()) for b in bytes_of[k].values())),
             "wait_ns": int(wait.sum()), "transfer_ns": int(transfer.sum()) * len(rs), "per_rank": {}}
        for i, r in enumerate(rs):
            w, t = int(wait[i].sum()), int(transfer.sum())
            per[r]["wait_ns"] += w
            per[r]["transfer_ns"] += t
            c["per_rank"][str(r)] = {"calls": int(len(rd[r])), "total_ns": int(rd[r].sum()), "wait_ns": w, "transfer_ns": t}
        coll[k] = c
    out["collectives"] = sorted(coll.values(), key=lambda c: (-c["total_ns"], c["kind"], c["group"]))
    out["ranks"] = [per[r] for r in sorted(per)]

    # --- slow ranks ---------------------------------------------------------------------------
    if len(per) > 1:
        rk = sorted(per)
        for metric, field, slow_is_max in (("computing", "computing_ns", True), ("communication", "communication_ns", False),
                                           ("free", "free_ns", True)):
            v = np.array([per[r][field] for r in rk], np.float64)
            mean = float(v.mean())
            ratio = float((v.max() - v.min()) / mean) if mean > 0 else 0.0
            i_max, i_min = int(np.argmax(v)), int(np.argmin(v))
            out["slow_ranks"].append({"metric": metric, "max_ns": int(v.max()), "min_ns": int(v.min()), "mean_ns": mean,
                                      "ratio": ratio, "max_rank": rk[i_max], "min_rank": rk[i_min],
                                      "flagged": ratio > SLOW_RANK_RATIO,
                                      "slowest_rank": rk[i_max] if slow_is_max else rk[i_min]})

    # --- communication matrix ------------------------------------------------------------------
    cells = defaultdict(lambda: {"bytes": 0, "time_ns": 0})
    has_links = any(len(d.communication.links) for d in digests)
    if has_links:
        out["matrix_source"] = "links"
        for d in digests:
            for l in d.communication.links:
                c = cells[(l.src, l.dst, l.transport)]
                c["bytes"] += int(l.bytes)
                c["time_ns"] += int(l.time_ns)
    else:
        for k, rd in bytes_of.items():
            kind = k[0]
            members = sorted(rd)
            n = len(members)
            if n < 2:
                continue
            for i, r in enumerate(members):
                b = rd[r]
                size = int(b[b >= 0].sum())
                if size <= 0:
                    continue
                nxt = members[(i + 1) % n]
                if kind == "AllReduce":
                    sends = {nxt: 2 * (n - 1) * size // n}
                elif kind in ("AllGather", "ReduceScatter"):
                    sends = {nxt: (n - 1) * size // n}
                elif kind == "AllToAll":
                    sends = {o: size // n for o in members if o != r}
                elif kind in ("Broadcast", "Reduce", "Gather", "Scatter", "Send"):
                    sends = {nxt: size}
                else:
                    continue
                for dst, nb in sends.items():
                    cells[(r, dst, "ring")]["bytes"] += int(nb)
                    out["matrix_source"] = "ring"
    out["matrix"] = [{"src": int(s), "dst": int(t), "transport": tr, "bytes": v["bytes"], "time_ns": v["time_ns"],
                      "bandwidth_gbps": (v["bytes"] / v["time_ns"]) if v["time_ns"] > 0 else -1.0}
                     for (s, t, tr), v in sorted(cells.items())]
    return out
