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
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import digest_pb2 as pb
from . import intervals as iv

UNKNOWN = -1


def _measured(call: pb.CommCall) -> tuple[int, int] | None:
    if call.wait_ns < 0 or call.transit_ns < 0:
        return None
    wait = min(call.wait_ns, call.dur_ns)
    return wait, min(call.transit_ns, call.dur_ns - wait)


def _sequences(digest: pb.Digest) -> dict[tuple[str, str], list[int]]:
    """{(kind, group): indices of this rank's calls in their order in the communicator}."""
    calls = digest.communication.calls
    out: dict = defaultdict(list)
    for index, call in enumerate(calls):
        out[(call.kind, call.group)].append(index)
    for indices in out.values():
        indices.sort(key=lambda j: (calls[j].seq, calls[j].start_ns))
    return out


def call_splits(digests: list) -> list[np.ndarray]:
    """Per digest, an (n_calls, 2) array of (wait_ns, transfer_ns) per call, -1 unknown."""
    out = [np.full((len(d.communication.calls), 2), UNKNOWN, np.int64) for d in digests]
    matched: dict = defaultdict(dict)  # (kind, group) -> {digest index: call indices in sequence}
    for i, digest in enumerate(digests):
        for j, call in enumerate(digest.communication.calls):
            split = _measured(call)
            if split is not None:
                out[i][j] = split
        for key, indices in _sequences(digest).items():
            matched[key][i] = indices
    for members in matched.values():
        if len(members) < 2:
            continue
        count = min(len(indices) for indices in members.values())
        durations = np.array([[digests[i].communication.calls[j].dur_ns for j in indices[:count]]
                              for i, indices in members.items()], np.int64).reshape(len(members), count)
        transfer = durations.min(axis=0) if count else np.zeros(0, np.int64)
        for row, (i, indices) in enumerate(members.items()):
            chosen = np.array(indices[:count], np.int64)
            todo = chosen[out[i][chosen, 0] < 0]  # CANN's own measurement wins
            pick = np.isin(chosen, todo)
            out[i][todo, 0] = durations[row, pick] - transfer[pick]
            out[i][todo, 1] = transfer[pick]
    return out


def _sets(digest: pb.Digest, split: np.ndarray):
    """(transfer, collective wait, p2p wait, all calls) interval sets of one rank."""
    calls = digest.communication.calls
    start = np.array([c.start_ns for c in calls], np.int64)
    end = start + np.array([max(c.dur_ns, 0) for c in calls], np.int64)
    p2p = np.array([c.comm_type == "p2p" for c in calls], bool)
    known = split[:, 0] >= 0 if len(calls) else np.zeros(0, bool)
    wait_end = start + split[:, 0]
    transfer = iv.union(wait_end[known], (wait_end + split[:, 1])[known])
    wait = iv.subtract(iv.union(start[known & ~p2p], wait_end[known & ~p2p]), transfer)
    p2p_wait = iv.subtract(iv.union(start[known & p2p], wait_end[known & p2p]), iv.union_sets(transfer, wait))
    return transfer, wait, p2p_wait, iv.union(start, end), not len(calls) or bool(known.any())


def step_figures(digest: pb.Digest, split: np.ndarray) -> list[dict]:
    """[{step, start_ns, dur_ns, communication_total_ns, wait_ns, p2p_wait_ns, transfer_ns}] per step of the
    digest (wait / transfer -1 where no call of the rank has them)."""
    steps = list(digest.steps)
    lo = np.array([s.start_ns for s in steps], np.int64)
    hi = lo + np.array([max(s.dur_ns, 0) for s in steps], np.int64)
    transfer, wait, p2p_wait, calls, known = _sets(digest, split)
    measures = {name: iv.measure(found, lo, hi) for name, found in
                (("communication_total_ns", calls), ("wait_ns", wait), ("p2p_wait_ns", p2p_wait), ("transfer_ns", transfer))}
    rows = []
    for k, step in enumerate(steps):
        row = {"step": int(step.number), "start_ns": int(step.start_ns), "dur_ns": int(step.dur_ns)}
        for name, values in measures.items():
            row[name] = int(values[k]) if known or name == "communication_total_ns" else UNKNOWN
        rows.append(row)
    return rows


def _mean(rows: list[dict], field: str, numbers: set[int]) -> int:
    chosen = [r[field] for r in rows if r["step"] in numbers] or [r[field] for r in rows]
    if not chosen or min(chosen) < 0:
        return UNKNOWN
    # floored, not rounded: parts rounded apart could sum 1 ns past their rounded total
    return sum(chosen) // len(chosen)


def rank_figures(digest: pb.Digest, split: np.ndarray) -> dict:
    """One rank's wait / p2p wait / transfer / communication: the mean step (as `step_ns`), the window
    totals (`window_*`) and `per_step` (step_figures)."""
    rows = step_figures(digest, split)
    numbers = set(digest.average_steps)
    out = {"per_step": rows}
    for field in ("communication_total_ns", "wait_ns", "p2p_wait_ns", "transfer_ns"):
        out[field] = _mean(rows, field, numbers)
        known = [r[field] for r in rows]
        out[f"window_{field}"] = sum(known) if known and min(known) >= 0 else UNKNOWN
    return out


def wait_transfer(digests: list) -> list[dict]:
    """`rank_figures` of each digest, with calls matched across all of them."""
    return [rank_figures(d, s) for d, s in zip(digests, call_splits(digests))]


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
