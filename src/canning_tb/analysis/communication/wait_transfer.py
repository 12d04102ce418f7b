"""Wait and transfer: the one definition, per call, per step and per window (docs/glossary.md).

Per call (`call_splits`), a collective call's time [start, end) splits into a wait, at its start,
then a transfer:
- where CANN measured the call on this rank (communication.json / analysis.db): wait = CANN's
  Wait Time, transfer = CANN's Transit Time (each capped to the call; the rest of the call, CANN's
  idle, is neither);
- else, where the same call (same kind and communicator, same place in the communicator's
  sequence: HCCL's number, else the order by start) is in the files of two or more ranks: transfer
  = the shortest duration of that call among them (the last rank to arrive did not wait), wait =
  this rank's duration - transfer (the torch-tb-profiler rule);
- else unknown (-1): one rank's trace alone cannot tell waiting from moving data.

Per step (`step_figures`): the calls' wait and transfer intervals are merged (calls overlap, e.g.
DDP buckets on gloo) and clipped to the step's span; where a transfer and a wait overlap, the
instant is transfer; waits in pipeline send / receive (comm_type "p2p") are `p2p_wait_ns`, after
the collectives' waits. So wait + p2p wait + transfer <= the step's communication time (the union
of its calls) <= the step's duration. Per window (`rank_figures`): the mean over the steps the
average is taken over (Digest.average_steps), the unit of every per-rank row; `window_*` the sum
over all steps.

Many ranks at once (a run overview of 1,000 ranks): the calls of every rank are matched by one sort,
and every rank's steps are measured in one numpy pass (`step_figures_many`, `rank_figures_many`,
`own_figures`); a single digest is the case of one.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import digest_pb2 as pb
from .. import intervals as iv

UNKNOWN = -1


def _sequences(digest: pb.Digest) -> dict[tuple[str, str], list[int]]:
    """{(kind, group): indices of this rank's calls in their order in the communicator}."""
    calls = digest.communication.calls
    out: dict = defaultdict(list)
    for index, call in enumerate(calls):
        out[(call.kind, call.group)].append(index)
    for indices in out.values():
        indices.sort(key=lambda j: (calls[j].seq, calls[j].start_ns))
    return out


def _call_columns(digests: list) -> dict:
    """Every call of every digest as flat arrays (digest by digest, each in its own order)."""
    calls = [d.communication.calls for d in digests]
    keys: dict = {}

    def column(read) -> np.ndarray:
        return np.fromiter((read(c) for part in calls for c in part), np.int64)
    return {"digest": np.repeat(np.arange(len(digests)), [len(c) for c in calls]),
            "key": column(lambda c: keys.setdefault((c.kind, c.group), len(keys))), "seq": column(lambda c: c.seq),
            "start": column(lambda c: c.start_ns), "dur": column(lambda c: c.dur_ns),
            "wait": column(lambda c: c.wait_ns), "transit": column(lambda c: c.transit_ns)}


def _shortest_matched(col: dict) -> tuple[np.ndarray, np.ndarray]:
    """(matched, transfer) per call: whether the same call (kind and communicator, place in its sequence:
    seq, then start) is in two or more digests, and then the shortest duration of it among them."""
    n = len(col["key"])
    order = np.lexsort((np.arange(n), col["start"], col["seq"], col["digest"], col["key"]))
    key, digest, dur = col["key"][order], col["digest"][order], col["dur"][order]
    new = np.ones(n, bool)
    new[1:] = (key[1:] != key[:-1]) | (digest[1:] != digest[:-1])
    first = np.flatnonzero(new)
    pos = np.arange(n) - first[np.cumsum(new) - 1]  # place of each call in its digest's sequence
    slot_key, slot_len = key[first], np.diff(np.append(first, n))
    keys = int(key.max()) + 1 if n else 0
    count = np.full(keys, np.iinfo(np.int64).max)
    np.minimum.at(count, slot_key, slot_len)
    count[np.bincount(slot_key, minlength=keys) < 2] = 0  # a call of one digest only: nothing to match
    place = np.concatenate([[0], np.cumsum(count)[:-1]])[key] + pos
    inside = pos < count[key]
    shortest = np.full(int(count.sum()), np.iinfo(np.int64).max)
    np.minimum.at(shortest, place[inside], dur[inside])
    matched, transfer = np.zeros(n, bool), np.zeros(n, np.int64)
    matched[order[inside]] = True
    transfer[order[inside]] = shortest[place[inside]]
    return matched, transfer


def call_splits(digests: list, match: bool = True) -> list[np.ndarray]:
    """Per digest, an (n_calls, 2) array of (wait_ns, transfer_ns) per call, -1 unknown; match=False:
    each digest's own (CANN's measurement), as call_splits([digest]) of each one (nothing to match)."""
    col = _call_columns(digests)
    out = np.full((len(col["key"]), 2), UNKNOWN, np.int64)
    measured = (col["wait"] >= 0) & (col["transit"] >= 0)
    wait = np.minimum(col["wait"], col["dur"])
    out[measured, 0] = wait[measured]
    out[measured, 1] = np.minimum(col["transit"], col["dur"] - wait)[measured]
    matched, transfer = _shortest_matched(col) if match else (np.zeros(len(out), bool), out[:, 1])
    todo = matched & (out[:, 0] < 0)  # CANN's own measurement wins
    out[todo, 0] = col["dur"][todo] - transfer[todo]
    out[todo, 1] = transfer[todo]
    return np.split(out, np.cumsum([len(d.communication.calls) for d in digests])[:-1])


def _step_bounds(start, dur, rank, number, calls) -> tuple[np.ndarray, np.ndarray]:
    """[low, high) of each step; a step placed nowhere on the clock (start -1: CANN's step trace without
    device tasks to place it on) holds the calls its files file under its number (communication.json's
    "stepN"): from the first call's start to the last call's end."""
    low, high = start.copy(), start + np.maximum(dur, 0)
    unplaced = np.flatnonzero(start < 0)
    if not len(unplaced):
        return low, high
    call_start, call_end, call_rank, call_step = calls
    for k in unplaced.tolist():
        mine = (call_rank == rank[k]) & ((call_step == number[k]) | (call_step < 0))
        if mine.any():
            low[k], high[k] = int(call_start[mine].min()), int(call_end[mine].max())
        else:
            low[k] = high[k] = 0
    return low, high


class _Many:
    """The calls and steps of many ranks on one time line: each rank's instants shifted by its own
    offset so that the ranks' spans lie apart (at least 2 ns between them), so every interval set
    of all the ranks is computed by one numpy pass, and a step's measure only sees its own rank's
    intervals (the shift is exact: int64 instants, each rank's moved as a whole)."""

    def __init__(self, digests: list, splits: list[np.ndarray]):
        def column(read, items, dtype=np.int64) -> np.ndarray:
            return np.fromiter((read(x) for part in items for x in part), dtype)

        calls = [d.communication.calls for d in digests]
        steps = [d.steps for d in digests]
        self.call_rank = np.repeat(np.arange(len(digests)), [len(c) for c in calls])
        self.step_rank = np.repeat(np.arange(len(digests)), [len(s) for s in steps])
        start = column(lambda c: c.start_ns, calls)
        dur = np.maximum(column(lambda c: c.dur_ns, calls), 0)
        self.p2p = column(lambda c: c.comm_type == "p2p", calls, bool)
        split = np.concatenate(splits) if splits else np.zeros((0, 2), np.int64)
        split = split.reshape(-1, 2)
        self.known = split[:, 0] >= 0
        self.step = column(lambda s: s.number, steps)
        self.step_start = column(lambda s: s.start_ns, steps)
        self.step_dur = column(lambda s: s.dur_ns, steps)
        low, high = _step_bounds(self.step_start, self.step_dur, self.step_rank, self.step,
                                 (start, start + dur, self.call_rank, column(lambda c: c.step, calls)))
        wait_end = start + split[:, 0]
        points = [(start, self.call_rank), (start + dur, self.call_rank), (low, self.step_rank),
                  (high, self.step_rank), (wait_end[self.known], self.call_rank[self.known]),
                  ((wait_end + split[:, 1])[self.known], self.call_rank[self.known])]
        shift = self._shifts(len(digests), points)
        self.start, self.end = start + shift[self.call_rank], start + dur + shift[self.call_rank]
        self.wait_end = wait_end + shift[self.call_rank]
        self.transfer_end = self.wait_end + split[:, 1]
        self.low, self.high = low + shift[self.step_rank], high + shift[self.step_rank]
        # a rank whose calls all lack wait / transfer has them unknown (one without calls: 0)
        has_calls = np.bincount(self.call_rank, minlength=len(digests)) > 0
        any_known = np.bincount(self.call_rank[self.known], minlength=len(digests)) > 0
        self.rank_known = ~has_calls | any_known

    @staticmethod
    def _shifts(ranks: int, points: list) -> np.ndarray:
        """Per rank, what to add to its instants so the ranks' spans follow each other, 2 ns apart."""
        values = np.concatenate([p for p, _ in points])
        owner = np.concatenate([r for _, r in points])
        low = np.full(ranks, np.iinfo(np.int64).max)
        high = np.full(ranks, np.iinfo(np.int64).min)
        np.minimum.at(low, owner, values)
        np.maximum.at(high, owner, values)
        empty = high < low
        low[empty], high[empty] = 0, 0
        span = high - low + 2
        return np.concatenate([[0], np.cumsum(span)[:-1]]) - low

    def sets(self):
        """(transfer, collective wait, p2p wait, all calls) interval sets of all the ranks."""
        known, p2p = self.known, self.p2p
        transfer = iv.union(self.wait_end[known], self.transfer_end[known])
        wait = iv.subtract(iv.union(self.start[known & ~p2p], self.wait_end[known & ~p2p]), transfer)
        p2p_wait = iv.subtract(iv.union(self.start[known & p2p], self.wait_end[known & p2p]),
                               iv.union_sets(transfer, wait))
        return transfer, wait, p2p_wait, iv.union(self.start, self.end)


def step_figures_many(digests: list, splits: list[np.ndarray]) -> list[list[dict]]:
    """Per digest, [{step, start_ns, dur_ns, communication_total_ns, wait_ns, p2p_wait_ns, transfer_ns}]
    per step (wait / transfer -1 where no call of the rank has them); `splits`: call_splits."""
    many = _Many(digests, splits)
    transfer, wait, p2p_wait, calls = many.sets()
    measures = {name: iv.measure(found, many.low, many.high).tolist() for name, found in
                (("communication_total_ns", calls), ("wait_ns", wait), ("p2p_wait_ns", p2p_wait),
                 ("transfer_ns", transfer))}
    known = many.rank_known.tolist()
    out: list[list[dict]] = [[] for _ in digests]
    for k, (rank, number, start, dur) in enumerate(zip(many.step_rank.tolist(), many.step.tolist(),
                                                       many.step_start.tolist(), many.step_dur.tolist())):
        row = {"step": number, "start_ns": start, "dur_ns": dur}
        for name, values in measures.items():
            row[name] = values[k] if known[rank] or name == "communication_total_ns" else UNKNOWN
        out[rank].append(row)
    return out


def step_figures(digest: pb.Digest, split: np.ndarray) -> list[dict]:
    """step_figures_many of one digest."""
    return step_figures_many([digest], [split])[0]


def _mean(rows: list[dict], field: str, numbers: set[int]) -> int:
    chosen = [r[field] for r in rows if r["step"] in numbers] or [r[field] for r in rows]
    if not chosen or min(chosen) < 0:
        return UNKNOWN
    # floored, not rounded: parts rounded apart could sum 1 ns past their rounded total
    return sum(chosen) // len(chosen)


def rank_figures(digest: pb.Digest, split: np.ndarray) -> dict:
    """One rank's wait / p2p wait / transfer / communication: the mean step (as `step_ns`), the window
    totals (`window_*`) and `per_step` (step_figures)."""
    return rank_figures_many([digest], [split])[0]


def rank_figures_many(digests: list, splits: list[np.ndarray]) -> list[dict]:
    """`rank_figures` of each digest, the steps of all of them measured at once (step_figures_many)."""
    out = []
    for digest, rows in zip(digests, step_figures_many(digests, splits)):
        numbers = set(digest.average_steps)
        found = {"per_step": rows}
        for field in ("communication_total_ns", "wait_ns", "p2p_wait_ns", "transfer_ns"):
            found[field] = _mean(rows, field, numbers)
            known = [r[field] for r in rows]
            found[f"window_{field}"] = sum(known) if known and min(known) >= 0 else UNKNOWN
        out.append(found)
    return out


def wait_transfer(digests: list) -> list[dict]:
    """`rank_figures` of each digest, with calls matched across all of them."""
    return rank_figures_many(digests, call_splits(digests))


def own_figures(digests: list) -> list[dict]:
    """`rank_figures` of each digest from its own files alone (no call matched with another digest)."""
    return rank_figures_many(digests, call_splits(digests, match=False))


def split_sources(digests: list, splits: list[np.ndarray]) -> list[str]:
    """Per digest, where its calls' wait / transfer come from: the file CANN measured them in, "matched
    calls" (the rule over the ranks' calls), both joined with " + ", or "" (unknown; no call: "")."""
    out = []
    for digest, split in zip(digests, splits):
        calls = digest.communication.calls
        measured = np.fromiter((c.wait_ns >= 0 and c.transit_ns >= 0 for c in calls), bool, len(calls))
        known = split[:, 0] >= 0 if len(split) else np.zeros(0, bool)
        parts = []
        if (measured & known).any():
            parts.append(digest.communication.source or "CANN")
        if (~measured & known).any():
            parts.append("matched calls")
        out.append(" + ".join(parts))
    return out


def collective_sums(digests: list, splits: list[np.ndarray]) -> dict:
    """{(digest index, kind, group): (wait, transfer)} summed over the calls of that collective on that
    rank (the unit of its Total column, also a sum over calls); -1 where a call is unknown."""
    out: dict = {}
    for i, digest in enumerate(digests):
        for key, indices in _sequences(digest).items():
            chosen = splits[i][indices]
            out[(i,) + key] = ((int(chosen[:, 0].sum()), int(chosen[:, 1].sum())) if len(chosen)
                               and (chosen >= 0).all() else (UNKNOWN, UNKNOWN))
    return out


def fill_own(digest: pb.Digest) -> None:
    """The digest's own figures, from this rank's files alone (CANN's measurement, else -1):
    Communication.wait_ns / p2p_wait_ns / transfer_ns summed over the steps, each collective's
    summed over its calls (collective_sums)."""
    split = call_splits([digest])[0]
    found = rank_figures(digest, split)
    comm = digest.communication
    comm.wait_ns, comm.p2p_wait_ns = found["window_wait_ns"], found["window_p2p_wait_ns"]
    comm.transfer_ns = found["window_transfer_ns"]
    sums = collective_sums([digest], [split])
    for stat in comm.collectives:
        stat.wait_ns, stat.transfer_ns = sums.get((0, stat.kind, stat.group), (UNKNOWN, UNKNOWN))
