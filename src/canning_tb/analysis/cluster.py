"""Cross-rank analysis over the digests of one window of many ranks (never the traces), vectorised
over ranks and calls with numpy: the digests are read once into flat arrays (one row per rank, one
row per collective call of any rank), and every figure is a sort, a grouped reduction or a
scatter over those arrays; Python loops only build the answer's rows. Wait and transfer per call
and per step come from wait_transfer.py (their one definition), all ranks in one pass.

`analyse_ranks(digests) -> dict` (JSON-friendly, ints stay ints):

- ranks: per rank, its step and the parts of it (cluster_rows.py: CANN's split where every rank has
  it, Preparing included, else the trace's mean step breakdown; the parts add up to the step), each
  row's `source` and `wait_source` named; and wait / transfer.
- wait vs transfer: analysis/communication/wait_transfer.py, the one definition (per call: CANN's measured wait
  and transit where this rank has them, else the torch-tb-profiler rule over the calls matched
  within their communicator and kind, in their sequence: transfer_j = the shortest duration of
  the j-th call among the ranks, wait_j = duration - transfer_j; per step: the merged intervals
  clipped to the step, so wait + transfer <= communication <= step). A row's wait_ns /
  p2p_wait_ns / transfer_ns / communication_total_ns are per mean step like its step_ns,
  `window_*` their sums over the steps, and `per_step` each step (with the step's split as the
  row's, for the step selector). A step with no place on the clock (CANN's step trace alone) holds
  the calls its files file under its number. Calls a rank's files give no communicator (kernel_details.csv
  without communication.json) take the one another rank's files give the same HCCL operator name
  (its name is the same on every member: hcom_allReduce__586_2_1).
  Keys whose call counts differ between ranks are matched on the first min(count) calls and
  listed in `unmatched`.
- collectives: per (kind, group) totals over all ranks (calls, time, and wait / transfer summed over
  the calls, like the time; -1 where a rank's calls have none); bytes: the ranks' own collective
  tables summed (the payload, else what CANN measured on the links), -1 where no rank knows them.
- CPU-only runs (no device work on any rank, `summary.has_device_work`): the host operators are
  the computation, so compute = host time and `compute_source` = "host" (else "device").
- groups: the run's communicators (communication/groups.py group_rows): the files' declarations
  (Ascend: profiler_metadata.json's parallel_group_info, msprof-analyze's communication_group.json;
  the name only where a file gives it), else the global ranks the member links map, the ranks here
  that called into each, and the declared members present here that made no call (`missing`).
- world_size: the largest a rank's files declare or imply, and at least every rank and group member
  seen + 1; `world_size_source` names where it comes from.
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
- matrix: Ascend links (communication_matrix.json) in global ranks (communication/groups.py maps each
  communicator's member numbers; `matrix_unmapped` counts the links it cannot place) summed per (src,
  dst, transport, group) when any digest has them, each row with its group's label; otherwise a ring approximation from collective sizes: the members of a
  (kind, group) are the ranks that called it, ordered by rank, and each rank sends to the next:
  AllReduce 2(n-1)/n x size, AllGather / ReduceScatter (n-1)/n x size, Broadcast / Reduce /
  Gather / Scatter size, Send / Recv size to the next rank; AllToAll size/n to every other member.
  Sizes unknown (-1) give no cell; `matrix_source` says which way was used. Past
  MATRIX_CELLS_LIMIT cells (an all-to-all of 1,024 ranks has a million) the largest by bytes are
  listed and `matrix_truncated` is true; `matrix_bins` sums all of them.
- matrix_cells: the matrix summed per (src, dst) over transports and groups (what the heatmap draws):
  bytes and time (negative values count as 0), bandwidth = bytes / time in GB/s (None without
  time), and the transports and groups seen.
- distributions, rank_heatmap, matrix_bins: the views that fit thousands of ranks (cluster_spread.py).
- coverage: per rank, where its figures come from, its files that hold a part of the window only and
  the sources that disagree (coverage.py coverage_rows).
- rank ids: each digest's own rank; when two digests carry the same rank (e.g. all 0) the ranks
  are numbered by position instead (`rank_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph.ranks import cross_rank_paths, skeleton

from .coverage import coverage_rows
from .cluster_rows import cann_columns, rank_rows, trace_columns
from .cluster_spread import distributions, matrix_bins, rank_heatmap
from .summary import has_device_work
from .communication.groups import global_links, group_rows, with_groups, world_size
from .communication.wait_transfer import call_splits, collective_sums, rank_figures_many, split_sources
from .rules.thresholds import SLOW_RANK_RATIO  # the one threshold, shared with the rules

MATRIX_CELLS_LIMIT = 16384  # cells listed in `matrix` / `matrix_cells`; beyond, the largest (matrix_bins has all)
RING_KINDS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "Reduce", "Gather", "Scatter", "Send")
WAIT_FIELDS = ("wait_ns", "p2p_wait_ns", "transfer_ns", "communication_total_ns")  # wait_transfer.rank_figures


def rank_ids(digests: list) -> list[int]:
    """The rank of each digest; numbered by position when the digests' ranks repeat."""
    return rank_numbers([int(d.window.rank) if d.HasField("window") else i for i, d in enumerate(digests)])


def rank_numbers(ranks: list[int]) -> list[int]:
    """The ranks as given; numbered by position when they repeat (rank_ids, and the routes that name the
    worker of each rank from /cluster's `workers`)."""
    return list(range(len(ranks))) if len(set(ranks)) != len(ranks) else list(ranks)


def analyse_ranks(digests: list) -> dict:
    ranks = np.array(rank_ids(digests), np.int64)
    order = np.argsort(ranks, kind="stable")
    digests, ranks = with_groups([digests[i] for i in order]), ranks[order]
    on_host = not any(has_device_work(d) for d in digests)
    cann = bool(digests) and all(len(d.cann_steps) for d in digests)
    cols = cann_columns(digests) if cann else trace_columns(digests, on_host)
    splits = call_splits(digests)  # wait / transfer of each call: wait_transfer.py, the one definition
    figures = rank_figures_many(digests, splits)  # every rank's steps measured in one pass
    for name in WAIT_FIELDS:
        cols[name] = np.fromiter((f[name] for f in figures), np.int64, len(figures))
    for figure, source in zip(figures, split_sources(digests, splits)):
        figure["wait_source"] = source
    calls = CallTable.of(ranks, digests)
    slots, collectives, unmatched = _match_calls(calls, ranks, collective_sums(digests, splits), _stat_bytes(digests))
    cells, source, unmapped = _matrix(digests, ranks, calls, slots)
    groups = _groups(digests, calls, slots)
    matrix = cells.rows(MATRIX_CELLS_LIMIT, {g["group"]: g["label"] for g in groups})
    return {"ranks": rank_rows(ranks, cols, digests, cann, figures, on_host), "collectives": collectives,
            "slow_ranks": _slow_ranks(ranks, cols), "groups": groups, "matrix": matrix,
            "matrix_cells": matrix_cells(matrix), "matrix_truncated": len(matrix) < len(cells.src),
            "matrix_bins": matrix_bins(ranks, cells), "unmatched": unmatched, "matrix_source": source,
            "matrix_unmapped": unmapped, **dict(zip(("world_size", "world_size_source"),
                                                    world_size(digests, ranks.tolist(), groups))),
            "compute_source": "host" if on_host else "device",
            "breakdown_source": digests[0].cann_steps[0].source if cann else "trace",
            "distributions": distributions(ranks, cols), "rank_heatmap": rank_heatmap(ranks, cols),
            "coverage": coverage_rows(digests, ranks.tolist()), **_paths(digests, ranks.tolist())}


def _paths(digests: list, ranks: list) -> dict:
    """The critical path of each step across ranks and the clock offset applied per rank (analysis/graph/ranks.py)."""
    sk = skeleton(digests, ranks)
    return {"critical_path": cross_rank_paths(sk),
            "clock_offsets": [{"rank": rc.rank, "offset_ns": rc.offset, "aligned": rc.aligned} for rc in sk.ranks]}


@dataclass
class CallTable:
    """Every collective call of every rank, one row each, sorted by (key, rank, seq, start): the calls
    of one (kind, group) on one rank form a contiguous run ("slot" = (key, rank)), in their order in
    the communicator. `pos` is a call's index in its slot."""
    keys: list  # (kind, group) of each key id
    rank_index: np.ndarray  # per call: index of its rank in the sorted ranks
    key: np.ndarray
    dur: np.ndarray
    size: np.ndarray
    wait: np.ndarray
    transit: np.ndarray
    p2p: np.ndarray
    pos: np.ndarray
    starts: np.ndarray  # first call of each slot
    sources: list  # per rank: the file CANN's figures come from ("" from the events)
    rank_order: np.ndarray  # the rank ids, ascending (rank_index indexes them)

    @classmethod
    def of(cls, ranks: np.ndarray, digests: list) -> "CallTable":
        key_ids: dict = {}
        cols: dict = {name: [] for name in ("rank", "key", "seq", "start", "dur", "size", "wait", "transit", "p2p")}
        for index, digest in enumerate(digests):
            calls = digest.communication.calls
            cols["rank"].append(np.full(len(calls), index, np.int64))
            cols["key"].append(np.fromiter((key_ids.setdefault((c.kind, c.group), len(key_ids)) for c in calls),
                                           np.int64, len(calls)))
            for name, attr in (("seq", "seq"), ("start", "start_ns"), ("dur", "dur_ns"), ("size", "bytes"),
                               ("wait", "wait_ns"), ("transit", "transit_ns")):
                cols[name].append(np.fromiter((getattr(c, attr) for c in calls), np.int64, len(calls)))
            cols["p2p"].append(np.fromiter((c.comm_type == "p2p" for c in calls), bool, len(calls)))
        flat = {name: np.concatenate(parts) if parts else np.zeros(0, bool if name == "p2p" else np.int64)
                for name, parts in cols.items()}
        order = np.lexsort((flat["start"], flat["seq"], flat["rank"], flat["key"]))
        flat = {name: values[order] for name, values in flat.items()}
        new = np.ones(len(order), bool)
        new[1:] = (flat["key"][1:] != flat["key"][:-1]) | (flat["rank"][1:] != flat["rank"][:-1])
        starts = np.flatnonzero(new)
        pos = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
        return cls(list(key_ids), flat["rank"], flat["key"], flat["dur"], flat["size"], flat["wait"], flat["transit"],
                   flat["p2p"], pos, starts, [d.communication.source for d in digests], ranks)

    def slot_sum(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts) if len(self.starts) else np.zeros(0, np.int64)

    def slot_counts(self) -> np.ndarray:
        return np.diff(np.append(self.starts, len(self.key)))

    def slots(self, ranks: np.ndarray, columns: dict) -> "Slots":
        slot_key = self.key[self.starts]
        bounds = np.searchsorted(slot_key, np.arange(len(self.keys) + 1))
        return Slots(ranks[self.rank_index[self.starts]], bounds, columns)


@dataclass
class Slots:
    """Per (key, rank) sums, the slots of one key contiguous (bounds[k]:bounds[k + 1]), ranks ascending."""
    rank: np.ndarray
    bounds: np.ndarray
    columns: dict

    def of(self, key: int, name: str) -> tuple[list, list]:
        part = slice(self.bounds[key], self.bounds[key + 1])
        return self.rank[part].tolist(), self.columns[name][part].tolist()

    def ranks_of(self, key: int) -> np.ndarray:
        return self.rank[self.bounds[key]:self.bounds[key + 1]]


def _stat_bytes(digests: list) -> dict:
    """{(rank index, kind, group): bytes} of the ranks' own collective tables, where known."""
    return {(i, s.kind, s.group): s.bytes for i, d in enumerate(digests) for s in d.communication.collectives
            if s.bytes >= 0}


def _slot_bytes(calls: "CallTable", slot_rank: np.ndarray, slot_key: np.ndarray, stat_bytes: dict) -> np.ndarray:
    """Per slot: the rank's collective table's bytes, else its calls' known sizes summed, else -1."""
    from_calls = calls.slot_sum(np.maximum(calls.size, 0))
    any_known = calls.slot_sum((calls.size >= 0).astype(np.int64)) > 0
    out = np.where(any_known, from_calls, -1)
    for j, (i, k) in enumerate(zip(slot_rank.tolist(), slot_key.tolist())):
        out[j] = stat_bytes.get((i,) + calls.keys[k], out[j])
    return out


def _match_calls(calls: CallTable, ranks: np.ndarray, sums: dict, stat_bytes: dict) -> tuple:
    """Per (kind, group) over the ranks: calls, time, bytes (`_slot_bytes`), and wait / transfer summed
    over the calls (`sums`: wait_transfer.collective_sums, by (rank index, kind, group); -1 where a
    rank's are unknown). Returns (slots, collectives, unmatched)."""
    n_keys = len(calls.keys)
    slot_key, slot_rank = calls.key[calls.starts], calls.rank_index[calls.starts]
    counts = calls.slot_counts()
    matched = np.full(n_keys, np.iinfo(np.int64).max)
    np.minimum.at(matched, slot_key, counts)
    most = np.zeros(n_keys, np.int64)
    np.maximum.at(most, slot_key, counts)
    unmeasured = np.zeros(n_keys, bool)
    np.logical_or.at(unmeasured, calls.key, (calls.wait < 0) | (calls.transit < 0))
    p2p = np.zeros(n_keys, bool)
    np.logical_or.at(p2p, calls.key, calls.p2p)
    split = np.array([sums[(i,) + calls.keys[k]] for i, k in zip(slot_rank.tolist(), slot_key.tolist())],
                     np.int64).reshape(-1, 2)
    slots = calls.slots(ranks, {"calls": counts, "total_ns": calls.slot_sum(calls.dur), "wait_ns": split[:, 0],
                                "transfer_ns": split[:, 1], "bytes": _slot_bytes(calls, slot_rank, slot_key, stat_bytes)})
    collectives = [_collective_row(calls, slots, k, int(matched[k]), not unmeasured[k], bool(p2p[k]))
                   for k in range(n_keys)]
    collectives.sort(key=lambda c: (-c["total_ns"], c["kind"], c["group"]))
    unmatched = [{"kind": calls.keys[k][0], "group": calls.keys[k][1],
                  "calls": {str(rank): count for rank, count in zip(*slots.of(k, "calls"))}}
                 for k in sorted(range(n_keys), key=lambda k: calls.keys[k]) if matched[k] != most[k]]
    return slots, collectives, unmatched


def _collective_row(calls: CallTable, slots: Slots, key: int, matched: int, measured: bool, p2p: bool) -> dict:
    members = slots.ranks_of(key)
    sums = {name: slots.of(key, name)[1] for name in ("calls", "total_ns", "wait_ns", "transfer_ns", "bytes")}
    known = all(w >= 0 for w in sums["wait_ns"])
    sizes = [b for b in sums["bytes"] if b >= 0]
    row = {"kind": calls.keys[key][0], "group": calls.keys[key][1], "comm_type": "p2p" if p2p else "collective",
           "ranks": len(members), "calls": sum(sums["calls"]), "matched_calls": matched,
           "total_ns": sum(sums["total_ns"]), "bytes": sum(sizes) if sizes else -1,
           "wait_ns": sum(sums["wait_ns"]) if known else -1, "transfer_ns": sum(sums["transfer_ns"]) if known else -1,
           "wait_source": _wait_source(calls, members, known, measured)}
    row["per_rank"] = {str(rank): {name: sums[name][i] for name in ("calls", "total_ns", "wait_ns", "transfer_ns")}
                       for i, rank in enumerate(members.tolist())}
    return row


def _wait_source(calls: CallTable, members: np.ndarray, known: bool, measured: bool) -> str:
    """Where a collective's wait / transfer come from: CANN's file, the matched calls, or "" (unknown)."""
    if not known:
        return ""
    if measured:  # CANN measured each call's wait and transit on each rank
        rank_index = np.searchsorted(calls.rank_order, members)
        return next((calls.sources[i] for i in rank_index.tolist() if calls.sources[i]), "") or "CANN"
    return "matched calls"


def _slow_ranks(ranks: np.ndarray, cols: dict) -> list[dict]:
    """The msprof-analyze spread of computing, communication and free time over the ranks."""
    if len(ranks) < 2:
        return []
    out = []
    for metric, field, slow_is_max in (("computing", "computing_ns", True),
                                       ("communication", "communication_ns", False), ("free", "free_ns", True)):
        values = cols[field].astype(np.float64)
        mean = float(values.mean())
        ratio = float((values.max() - values.min()) / mean) if mean > 0 else 0.0
        i_max, i_min = int(np.argmax(values)), int(np.argmin(values))
        out.append({"metric": metric, "max_ns": int(values.max()), "min_ns": int(values.min()), "mean_ns": mean,
                    "ratio": ratio, "max_rank": int(ranks[i_max]), "min_rank": int(ranks[i_min]),
                    "flagged": ratio > SLOW_RANK_RATIO,
                    "slowest_rank": int(ranks[i_max] if slow_is_max else ranks[i_min])})
    return out


def _groups(digests: list, calls: CallTable, slots: Slots) -> list[dict]:
    """The run's communicators (communication/groups.py group_rows) with the ranks that called into each."""
    callers: dict[str, list] = {}
    for key, (_kind, group) in enumerate(calls.keys):
        callers.setdefault(group, []).extend(slots.ranks_of(key).tolist())
    return group_rows(digests, calls.rank_order.tolist(), callers)


@dataclass
class Cells:
    """Matrix cells as arrays, one per (src, dst, transport, group)."""
    src: np.ndarray
    dst: np.ndarray
    transport: list  # name of each cell's transport
    group: list  # the communicator of each cell ("" unknown)
    bytes: np.ndarray
    time_ns: np.ndarray

    @classmethod
    def summed(cls, src, dst, key, nbytes, time_ns, keys: list) -> "Cells":
        """Cells summed per (src, dst, key), sorted by them; keys[k] = (transport, group) of key k."""
        if not len(src):
            return cls(src, dst, [], [], nbytes, time_ns)
        ids, rank_pos = np.unique(np.concatenate([src, dst]), return_inverse=True)
        n_ranks, n_keys = len(ids), max(len(keys), 1)
        flat = (rank_pos[:len(src)] * n_ranks + rank_pos[len(src):]) * n_keys + key
        unique, inverse = np.unique(flat, return_inverse=True)
        sums = [np.zeros(len(unique), np.int64) for _ in range(2)]
        np.add.at(sums[0], inverse, nbytes)
        np.add.at(sums[1], inverse, time_ns)
        pair, which = np.divmod(unique, n_keys)
        chosen = [keys[k] for k in which.tolist()]
        return cls(ids[pair // n_ranks], ids[pair % n_ranks], [t for t, _ in chosen], [g for _, g in chosen],
                   sums[0], sums[1])

    def rows(self, limit: int, labels: dict) -> list[dict]:
        """The cells as the answer's rows; above `limit` cells, the `limit` largest by bytes."""
        chosen = np.arange(len(self.src))
        if len(chosen) > limit:
            chosen = np.sort(np.argsort(-self.bytes, kind="stable")[:limit])
        return [{"src": int(self.src[i]), "dst": int(self.dst[i]), "transport": self.transport[i],
                 "group": self.group[i], "group_label": labels.get(self.group[i], self.group[i]),
                 "bytes": int(self.bytes[i]), "time_ns": int(self.time_ns[i]),
                 "bandwidth_gbps": (int(self.bytes[i]) / int(self.time_ns[i])) if self.time_ns[i] > 0 else -1.0}
                for i in chosen.tolist()]


def _matrix(digests: list, ranks: np.ndarray, calls: CallTable, slots: Slots) -> tuple[Cells, str, dict]:
    """(cells per (src, dst, transport, group) in global ranks, source, links not mapped): Ascend links
    when any digest has them (communication/groups.py maps the communicators' member numbers), else
    the ring estimate from collective sizes."""
    if any(len(d.communication.links) for d in digests):
        cols, lost = global_links(digests, ranks.tolist())
        pairs = list(dict.fromkeys(zip(cols["transport"], cols["group"])))
        ids = {pair: i for i, pair in enumerate(pairs)}
        keys = np.fromiter((ids[p] for p in zip(cols["transport"], cols["group"])), np.int64, len(cols["src"]))
        return Cells.summed(cols["src"], cols["dst"], keys, cols["bytes"], cols["time_ns"], pairs), "links", lost
    parts = [_ring_sends(kind, slots.ranks_of(key), np.maximum(np.asarray(slots.of(key, "bytes")[1], np.int64), 0), group)
             for key, (kind, group) in enumerate(calls.keys)]
    parts = [p for p in parts if p is not None and len(p[0])]
    none = {"links": 0, "bytes": 0, "groups": []}
    if not parts:
        empty = np.zeros(0, np.int64)
        return Cells(empty, empty, [], [], empty, empty), "none", none
    groups = [p[3] for p in parts]
    src, dst, nbytes = (np.concatenate(column) for column in zip(*(p[:3] for p in parts)))
    keys = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
    zeros = np.zeros(len(src), np.int64)
    return Cells.summed(src, dst, keys, nbytes, zeros, [("ring", g) for g in groups]), "ring", none


def _ring_sends(kind: str, members: np.ndarray, sizes: np.ndarray, group: str):
    """(src, dst, bytes, group) that the members of one (kind, group) send, by the ring rule
    (members ascending, each rank's size the sum of its calls' known sizes)."""
    n = len(members)
    if n < 2 or kind not in RING_KINDS:
        return None
    sending = sizes > 0
    if kind == "AllToAll":  # size / n to every other member: member i to members i + 1 ... i + n - 1 (mod n)
        src = np.repeat(np.flatnonzero(sending), n - 1)
        dst = (src + 1 + np.tile(np.arange(n - 1), int(sending.sum()))) % n
        return members[src], members[dst], sizes[src] // n, group
    factor = {"AllReduce": (2 * (n - 1), n), "AllGather": (n - 1, n), "ReduceScatter": (n - 1, n)}.get(kind, (1, 1))
    nxt = np.roll(members, -1)
    return members[sending], nxt[sending], factor[0] * sizes[sending] // factor[1], group


def matrix_cells(matrix: list[dict]) -> list[dict]:
    """The matrix summed per (src, dst) over its transports (see the module doc)."""
    cells: dict = {}
    for cell in matrix:
        out = cells.setdefault((cell["src"], cell["dst"]), {"src": cell["src"], "dst": cell["dst"], "bytes": 0,
                                                             "time_ns": 0, "transports": [], "groups": []})
        out["bytes"] += max(0, cell["bytes"])
        out["time_ns"] += max(0, cell["time_ns"])
        for key, value in (("transports", cell["transport"]), ("groups", cell.get("group_label", ""))):
            if value not in out[key] and (value or key == "transports"):
                out[key].append(value)
    for out in cells.values():
        out["bandwidth_gbps"] = out["bytes"] / out["time_ns"] if out["time_ns"] > 0 else None
    return [cells[key] for key in sorted(cells)]
