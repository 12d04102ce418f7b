"""The graph across ranks, from what each rank summarised at the source (its digest's collective calls and
steps): clocks aligned through the collectives, the critical path of each step across ranks, and the
replay of "balance this rank".

A collective ends together on every rank that takes part (it cannot end before its last member arrives),
so the ranks' clocks are aligned by the median, over the calls they share, of how far each rank's end of a
call lies from the median end of that call (the offset shown per rank). On each rank the calls are chained
in the order they end: a call starts its local lead time (`pre`: the rank's own work since its previous call
ended, negative where calls overlap) after the previous one ends; it ends its transfer after the last member
arrived. The step ends its tail after its last call. A replay with nothing changed gives back the aligned
times; the edit "balance rank r" gives rank r the other ranks' median lead time wherever its own is longer.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np


@dataclass
class RankCalls:
    rank: int
    offset: int  # ns subtracted from this rank's clock to align it
    aligned: bool  # False: no call shared with another rank (its clock is taken as is)
    start: np.ndarray  # aligned, in end order
    end: np.ndarray
    instance: np.ndarray  # index into Skeleton.instances, -1 not matched
    label: list  # "AllReduce#12 (group)" per call
    steps: list = field(default_factory=list)  # (number, aligned start, aligned end)
    origin: int = 0  # the window's start on this rank's own clock (hops are sent relative to it)


@dataclass
class Skeleton:
    ranks: list  # RankCalls, in rank order
    instances: list  # per instance: [(rank index, call index)]


def skeleton(digests: list, ranks: list) -> Skeleton:
    """`ranks`: the rank of each digest (cluster.rank_ids)."""
    per_rank, where = [], defaultdict(list)
    for ri, d in enumerate(digests):
        calls = list(d.communication.calls)
        order = defaultdict(list)
        for i, c in enumerate(calls):
            order[(c.kind, c.group)].append(i)
        seq_of = {}
        for key, idx in order.items():
            idx.sort(key=lambda j: (calls[j].seq, calls[j].start_ns))
            for pos, j in enumerate(idx):
                seq_of[j] = (key, pos)
        for j in range(len(calls)):
            where[seq_of[j]].append((ri, j))
        per_rank.append(calls)
    instances = [v for v in where.values() if len(v) > 1]
    offsets, aligned = _offsets(per_rank, instances)
    out = []
    inst_of = [dict() for _ in per_rank]
    for k, members in enumerate(instances):
        for ri, j in members:
            inst_of[ri][j] = k
    for ri, (d, calls) in enumerate(zip(digests, per_rank)):
        off = offsets[ri]
        s = np.array([c.start_ns for c in calls], np.int64) - off
        e = s + np.array([c.dur_ns for c in calls], np.int64)
        order = np.lexsort((s, e))
        inst = np.array([inst_of[ri].get(int(j), -1) for j in order], np.int64)
        label = [f"{calls[j].kind}#{calls[j].seq} ({calls[j].group or 'default'})" for j in order]
        rc = RankCalls(int(ranks[ri]), int(off), bool(aligned[ri]), s[order], e[order], inst, label)
        rc.steps = [(int(st.number), int(st.start_ns) - off, int(st.start_ns + st.dur_ns) - off) for st in d.steps]
        rc.origin = int(d.window.start_ns)
        out.append(rc)
    # instance members as (rank index, position in that rank's end order)
    pos = [{int(j): p for p, j in enumerate(np.lexsort((np.array([c.start_ns for c in calls], np.int64),
                                                        np.array([c.start_ns + c.dur_ns for c in calls], np.int64))))}
           for calls in per_rank]
    inst = [[(ri, pos[ri][j]) for ri, j in members] for members in instances]
    return Skeleton(out, inst)


def _offsets(per_rank: list, instances: list) -> tuple[list, list]:
    ends = defaultdict(list)
    for members in instances:
        e = [per_rank[ri][j].start_ns + per_rank[ri][j].dur_ns for ri, j in members]
        mid = float(np.median(e))
        for (ri, _), x in zip(members, e):
            ends[ri].append(x - mid)
    offsets = [int(np.median(ends[ri])) if ends[ri] else 0 for ri in range(len(per_rank))]
    return offsets, [bool(ends[ri]) for ri in range(len(per_rank))]


def _leads(sk: Skeleton):
    """Per rank: lead time of each call (its start less the previous call's end) and each step's tail."""
    leads = []
    for rc in sk.ranks:
        prev = np.concatenate([[rc.steps[0][1] if rc.steps else (rc.start[0] if len(rc.start) else 0)],
                               rc.end[:-1]]) if len(rc.end) else np.zeros(0, np.int64)
        leads.append(rc.start - prev)
    return leads


def replay_ranks(sk: Skeleton, lead_override: dict | None = None) -> list[np.ndarray]:
    """New aligned call ends per rank; `lead_override`: {rank index: new leads array}."""
    leads = _leads(sk)
    for ri, arr in (lead_override or {}).items():
        leads[ri] = arr
    arrival_obs = [rc.start for rc in sk.ranks]
    last_arrival = np.array([max(int(arrival_obs[ri][p]) for ri, p in members) for members in sk.instances], np.int64)
    ends = [np.zeros(len(rc.end), np.int64) for rc in sk.ranks]
    arrivals = [np.zeros(len(rc.end), np.int64) for rc in sk.ranks]
    # every call in the order of its observed end; an instance's calls together, when its last one comes
    events = sorted(((int(rc.end[p]), ri, p) for ri, rc in enumerate(sk.ranks) for p in range(len(rc.end))))
    done = [np.zeros(len(rc.end), bool) for rc in sk.ranks]

    def arrive(ri, p):
        rc = sk.ranks[ri]
        if p > 0:  # the previous call's new end; its observed one where it has not come yet (overlapping calls)
            base = int(ends[ri][p - 1]) if done[ri][p - 1] else int(rc.end[p - 1])
        else:
            base = rc.steps[0][1] if rc.steps else int(rc.start[0])
        arrivals[ri][p] = base + leads[ri][p]

    for _, ri, p in events:
        if done[ri][p]:
            continue
        k = int(sk.ranks[ri].instance[p])
        members = sk.instances[k] if k >= 0 else [(ri, p)]
        for mi, mp in members:
            if not done[mi][mp]:
                arrive(mi, mp)
        latest = max(arrivals[mi][mp] for mi, mp in members)
        for mi, mp in members:
            rc = sk.ranks[mi]
            transfer = max(int(rc.end[mp]) - (int(last_arrival[k]) if k >= 0 else int(rc.start[mp])), 0)
            ends[mi][mp] = max(latest, arrivals[mi][mp]) + transfer
            done[mi][mp] = True
    return ends


def step_ends(sk: Skeleton, ends: list[np.ndarray]) -> dict[int, int]:
    """The job's end of each step (the latest rank), replayed: each rank's tail after its last call in it."""
    out: dict[int, int] = {}
    for rc, e in zip(sk.ranks, ends):
        for number, _, end in rc.steps:
            p = int(np.searchsorted(rc.end, end, side="right")) - 1
            tail = end - (int(rc.end[p]) if p >= 0 else end)
            new = (int(e[p]) if p >= 0 else end) + tail
            out[number] = max(out.get(number, new), new)
    return out


def balance_gain(sk: Skeleton, slow: int) -> tuple[int, int, int, int] | None:
    """(mean, lowest, highest gain per step, steps) of giving rank index `slow` the others' median lead time
    at each call it shares (0 where it is nowhere later than them); None where it shares none."""
    leads = _leads(sk)
    mine = leads[slow].copy()
    shared = changed = False
    for p, k in enumerate(sk.ranks[slow].instance.tolist()):
        if k < 0:
            continue
        others = [leads[ri][q] for ri, q in sk.instances[k] if ri != slow]
        shared |= bool(others)
        if others and mine[p] > np.median(others):
            mine[p] = int(np.median(others))
            changed = True
    if not shared:
        return None  # no collective in common: the graph cannot say
    if not changed:  # it is nowhere later than the others: balancing it gains nothing
        steps = len({number for rc in sk.ranks for number, _, _ in rc.steps})
        return 0, 0, 0, steps
    before = step_ends(sk, replay_ranks(sk))
    after = step_ends(sk, replay_ranks(sk, {slow: mine}))
    numbers = sorted(before)
    if not numbers:
        return None
    first = min(start for rc in sk.ranks for number, start, _ in rc.steps if number == numbers[0])
    # each step from the end of the one before (the first from its start, which no edit moves)
    was = [before[numbers[0]] - first] + [before[b] - before[a] for a, b in zip(numbers, numbers[1:])]
    now = [after[numbers[0]] - first] + [after[b] - after[a] for a, b in zip(numbers, numbers[1:])]
    arr = np.maximum(np.array(was, np.int64) - np.array(now, np.int64), 0)
    return int(arr.mean()), int(arr.min()), int(arr.max()), len(arr)


def _hop(rc: RankCalls, what: str, after: str, lo: int, hi: int, **more) -> dict:
    """One stretch of the path on rank `rc`, from aligned `lo` to `hi`; its times are sent on the rank's own
    clock relative to its window's start (where its events lie on its timeline): aligned + offset - origin."""
    return {"rank": rc.rank, "what": what, "after": after, "ns": int(hi - lo),
            "start_ns": int(lo) + rc.offset - rc.origin, "end_ns": int(hi) + rc.offset - rc.origin, **more}


def cross_rank_paths(sk: Skeleton) -> list[dict]:
    """Per step: the critical path across ranks, walked back from the rank that ended the step last: its tail,
    then at each collective the member that arrived last (the one the others waited for) and its lead time.
    A transfer's `waited_for` names that member: the path goes on, earlier, on its rank."""
    out = []
    step_rank_end: dict = defaultdict(list)
    for ri, rc in enumerate(sk.ranks):
        for number, start, end in rc.steps:
            step_rank_end[number].append((end, start, ri))
    for number in sorted(step_rank_end):
        end, start, ri = max(step_rank_end[number])
        lo = min(s for _, s, _ in step_rank_end[number])
        hops = _walk(sk, ri, end, lo)
        by_rank: dict = defaultdict(int)
        for hop in hops:
            by_rank[hop["rank"]] += hop["ns"]
        out.append({"step": number, "dur_ns": int(end - lo), "by_rank": dict(by_rank), "hops": hops[:64],
                    "hops_total": len(hops)})
    return out


def _walk(sk: Skeleton, ri: int, end: int, lo: int) -> list[dict]:
    """The hops of one step, earliest first, walked back from rank index `ri`'s end of the step to `lo`."""
    hops = []
    rc = sk.ranks[ri]
    p = int(np.searchsorted(rc.end, end, side="right")) - 1
    t = end
    guard = sum(len(r.end) for r in sk.ranks) + 1
    while p >= 0 and t > lo and guard > 0:
        guard -= 1
        rc = sk.ranks[ri]
        if rc.end[p] < t:
            hops.append(_hop(rc, "own work", rc.label[p], max(int(rc.end[p]), lo), t))
        t = min(t, int(rc.end[p]))
        k = int(rc.instance[p])
        if k >= 0:  # the member that arrived last held the call
            qi, qp = max(sk.instances[k], key=lambda m: int(sk.ranks[m[0]].start[m[1]]))
        else:
            qi, qp = ri, p
        arrive = int(sk.ranks[qi].start[qp])
        if arrive < t:
            hops.append(_hop(rc, "transfer", rc.label[p], max(arrive, lo), t, waited_for=sk.ranks[qi].rank))
            t = arrive
        ri, p = qi, qp - 1
        if p < 0 and t > lo:
            hops.append(_hop(sk.ranks[ri], "own work", "step start", lo, t))
            t = lo
    if t > lo:
        hops.append(_hop(sk.ranks[ri], "own work", "step start", lo, t))
    hops.reverse()
    return hops
