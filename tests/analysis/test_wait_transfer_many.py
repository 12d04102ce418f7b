"""Wait and transfer of many ranks at once (analysis/communication/wait_transfer.py: the calls of all ranks matched by
one sort, the steps of all ranks measured in one pass) against the definition applied here by plain
loops: calls matched by sorting each rank's calls by (seq, start), transfer = the shortest duration of
the j-th call among the ranks that made it, and each step's figures counted instant by instant over
point sets. Random digests: epoch-sized instants that differ per rank, overlapping calls, calls only
some ranks made, CANN-measured calls mixed with unmeasured ones, pipeline (p2p) calls, zero-length
and negative durations."""
import random

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.communication.wait_transfer import call_splits, own_figures, rank_figures, rank_figures_many

EPOCH = 1_700_000_000_000_000_000
KEYS = [("AllReduce", "g0"), ("AllGather", "g0"), ("AllReduce", "g1"), ("Send", "pp0")]


def random_digest(rng: random.Random, rank: int) -> pb.Digest:
    digest = pb.Digest()
    digest.window.rank = rank
    base = EPOCH + rng.randrange(10**9)  # each rank's clock elsewhere: the batch must keep them apart
    for number in range(rng.randrange(1, 4)):
        digest.steps.add(number=number + 3, start_ns=base + 120 * number, dur_ns=rng.choice([0, 60, 120, 150]))
    digest.average_steps.extend(s.number for s in digest.steps if rng.random() < 0.7)
    for _ in range(rng.randrange(0, 12)):
        kind, group = rng.choice(KEYS[:3] if rank % 5 else KEYS)  # pp0: only some ranks
        measured = rng.random() < 0.3
        digest.communication.calls.add(
            kind=kind, group=group, start_ns=base + rng.randrange(-20, 380), dur_ns=rng.choice([-3, 0, 5, 17, 40, 90]),
            seq=rng.choice([-1, 0, 1, 2]), comm_type="p2p" if kind == "Send" else "collective",
            wait_ns=rng.randrange(0, 50) if measured else -1, transit_ns=rng.randrange(0, 50) if measured else -1)
    return digest


def splits_by_loops(digests):
    """The rule, call by call: CANN's measurement (capped to the call), else the matched calls' shortest."""
    out = [[None] * len(d.communication.calls) for d in digests]
    sequences = {}
    for i, digest in enumerate(digests):
        calls = digest.communication.calls
        for j, c in enumerate(calls):
            if c.wait_ns >= 0 and c.transit_ns >= 0:
                wait = min(c.wait_ns, c.dur_ns)
                out[i][j] = (wait, min(c.transit_ns, c.dur_ns - wait))
            sequences.setdefault((c.kind, c.group), {}).setdefault(i, []).append(j)
    for members in sequences.values():
        for i in members:
            members[i].sort(key=lambda j, i=i: (digests[i].communication.calls[j].seq,
                                                digests[i].communication.calls[j].start_ns, j))
        if len(members) < 2:
            continue
        for place in range(min(len(v) for v in members.values())):
            shortest = min(digests[i].communication.calls[v[place]].dur_ns for i, v in members.items())
            for i, v in members.items():
                j = v[place]
                if out[i][j] is None or out[i][j][0] < 0:
                    out[i][j] = (digests[i].communication.calls[j].dur_ns - shortest, shortest)
    return [[s if s is not None else (-1, -1) for s in rank] for rank in out]


def points(pairs) -> set:
    return {t for lo, hi in pairs for t in range(lo, hi)}


def steps_by_points(digest, split) -> list[dict]:
    """Each step's communication, wait, p2p wait and transfer, counted instant by instant."""
    calls = digest.communication.calls
    known = [k for k, s in enumerate(split) if s[0] >= 0]
    transfer = points((c.start_ns + split[k][0], c.start_ns + split[k][0] + split[k][1])
                      for k, c in enumerate(calls) if k in known)
    waits = {p2p: points((c.start_ns, c.start_ns + split[k][0]) for k, c in enumerate(calls)
                         if k in known and (c.comm_type == "p2p") == p2p) for p2p in (False, True)}
    sets = {"communication_total_ns": points((c.start_ns, c.start_ns + max(c.dur_ns, 0)) for c in calls),
            "transfer_ns": transfer, "wait_ns": waits[False] - transfer,
            "p2p_wait_ns": waits[True] - transfer - waits[False]}
    rows = []
    for s in digest.steps:
        inside = set(range(s.start_ns, s.start_ns + max(s.dur_ns, 0)))
        row = {"step": s.number, "start_ns": s.start_ns, "dur_ns": s.dur_ns}
        for name, found in sets.items():
            row[name] = len(found & inside) if known or not calls or name == "communication_total_ns" else -1
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_many_ranks_at_once_equal_the_loops(seed):
    rng = random.Random(seed)
    digests = [random_digest(rng, rank) for rank in range(rng.randrange(1, 40))]
    splits = call_splits(digests)
    want = splits_by_loops(digests)
    assert [s.tolist() for s in splits] == [[list(x) for x in rank] for rank in want]
    together = rank_figures_many(digests, splits)
    for digest, split, found in zip(digests, splits, together):
        assert found["per_step"] == steps_by_points(digest, split.tolist())
        assert found == rank_figures(digest, split)  # one rank alone: the same figures


@pytest.mark.parametrize("seed", range(3))
def test_own_figures_of_many_windows_are_each_windows_alone(seed):
    rng = random.Random(100 + seed)
    digests = [random_digest(rng, rank) for rank in range(25)]
    alone = [rank_figures(d, call_splits([d])[0]) for d in digests]
    assert own_figures(digests) == alone
    for digest, found in zip(digests, alone):  # nothing matched: only CANN's measured calls are known
        want = [s if digest.communication.calls[k].wait_ns >= 0 and digest.communication.calls[k].transit_ns >= 0
                else (-1, -1) for k, s in enumerate(splits_by_loops([digest])[0])]
        assert found["per_step"] == steps_by_points(digest, want)
