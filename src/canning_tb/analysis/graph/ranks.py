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

A send and its receive (matched by direction and order, not used for the clocks: they do not end together)
are one instance too: a side that ended after its peer arrived waited for it and ends its own observed time
after the later arrival (a receive cannot end before its send started); a side that ended before its peer
came (a buffered send) keeps its own time. The edit "scale rank r's own work" (a pipeline stage given the
stages' mean compute) multiplies its lead times and step tails.
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
    instances: list  # per instance: [(rank index, call index)]; a send / receive pair: [send, receive]
    p2p: list = field(default_factory=list)  # per instance: True for a send / receive pair


P2P = ("Send", "Recv")


def _partners(digests: list, ranks: list) -> dict:
    """{(group, rank): the other rank} for the groups whose point-to-point calls come from two ranks only: the
    peer of a call that does not name it (a trace without the operator's arguments)."""
    callers = defaultdict(set)
    for rank, d in zip(ranks, digests):
        for c in d.communication.calls:
            if c.kind in P2P:
                callers[c.group].add(int(rank))
    return {(g, r): next(iter(rs - {r})) for g, rs in callers.items() if len(rs) == 2 for r in rs}


def _peer(c, rank: int, members: dict, partners: dict) -> int:
    """The global rank on the other side of a send / receive, -1 unknown. The call names its peer within its
    group: the group's declared ranks map it; a group without them is taken as the whole job's."""
    if c.HasField("peer"):
        ranks = members.get(c.group)
        if ranks:
            return int(ranks[c.peer]) if 0 <= c.peer < len(ranks) else -1
        return int(c.peer)
    return partners.get((c.group, rank), -1)


def _keys(d, rank: int, partners: dict) -> list:
    """Each call's matching key: (kind, group) and its place among this rank's calls of them, a send / receive
    by its direction (group, from, to) and its place among this rank's calls of that direction; None unmatched."""
    calls = d.communication.calls
    members = {g.group: list(g.ranks) for g in d.communication.groups if g.ranks}
    order = defaultdict(list)
    for i, c in enumerate(calls):
        if c.kind not in P2P:
            order[(c.kind, c.group)].append(i)
            continue
        peer = _peer(c, rank, members, partners)
        if peer >= 0 and peer != rank:
            order[("p2p", c.group) + ((rank, peer) if c.kind == "Send" else (peer, rank))].append(i)
    keys = [None] * len(calls)
    for key, idx in order.items():
        idx.sort(key=lambda j: (calls[j].seq, calls[j].start_ns))
        for pos, j in enumerate(idx):
            keys[j] = (key, pos)
    return keys


def _label(c, peer: int) -> str:
    text = f"{c.kind}#{c.seq} ({c.group or 'default'})"
    if c.kind in P2P and peer >= 0:
        text += f" {'to' if c.kind == 'Send' else 'from'} rank {peer}"
    return text


def skeleton(digests: list, ranks: list) -> Skeleton:
    """`ranks`: the rank of each digest (cluster.rank_ids). Collectives are matched by kind, group and order;
    a send with the receive of the same direction (group, from, to) in the same place of its sequence."""
    partners = _partners(digests, ranks)
    per_rank, where = [], defaultdict(list)
    for ri, d in enumerate(digests):
        for j, key in enumerate(_keys(d, int(ranks[ri]), partners)):
            if key is not None:
                where[key].append((ri, j))
        per_rank.append(list(d.communication.calls))
    instances, p2p = [], []
    for key, members in where.items():
        if key[0][0] != "p2p":
            if len(members) > 1:
                instances.append(members)
                p2p.append(False)
            continue
        kinds = sorted(per_rank[ri][j].kind for ri, j in members)
        if kinds == ["Recv", "Send"]:  # one of each: the send first
            instances.append(sorted(members, key=lambda m: per_rank[m[0]][m[1]].kind != "Send"))
            p2p.append(True)
    offsets, aligned = _offsets(per_rank, [m for m, pp in zip(instances, p2p) if not pp])
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
        label = [_label(calls[j], _peer_of(instances, p2p, inst_of[ri].get(int(j), -1), ri, ranks)) for j in order]
        rc = RankCalls(int(ranks[ri]), int(off), bool(aligned[ri]), s[order], e[order], inst, label)
        rc.steps = [(int(st.number), int(st.start_ns) - off, int(st.start_ns + st.dur_ns) - off) for st in d.steps]
        rc.origin = int(d.window.start_ns)
        out.append(rc)
    # instance members as (rank index, position in that rank's end order)
    pos = [{int(j): p for p, j in enumerate(np.lexsort((np.array([c.start_ns for c in calls], np.int64),
                                                        np.array([c.start_ns + c.dur_ns for c in calls], np.int64))))}
           for calls in per_rank]
    inst = [[(ri, pos[ri][j]) for ri, j in members] for members in instances]
    return Skeleton(out, inst, p2p)


def _peer_of(instances: list, p2p: list, k: int, ri: int, ranks: list) -> int:
    """The other member's rank of a matched send / receive, -1 for anything else."""
    if k < 0 or not p2p[k]:
        return -1
    return int(next((ranks[m] for m, _ in instances[k] if m != ri), -1))


def _offsets(per_rank: list, instances: list) -> tuple[list, list]:
    ends = defaultdict(list)
    for members in instances:
        e = [per_rank[ri][j].start_ns + per_rank[ri][j].dur_ns for ri, j in members]
        # from the earliest end: a float64 holds epoch ns only to 256 ns, these differences exactly
        first = min(e)
        rel = [x - first for x in e]
        mid = float(np.median(rel))
        for (ri, _), x in zip(members, rel):
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


def replay_ranks(sk: Skeleton, lead_override: dict | None = None, transfer_scale: dict | None = None) -> list[np.ndarray]:
    """New aligned call ends per rank; `lead_override`: {rank index: new leads array}; `transfer_scale`:
    {instance: factor} on a send / receive pair's transfer (its time after both sides arrived)."""
    leads = _leads(sk)
    for ri, arr in (lead_override or {}).items():
        leads[ri] = arr
    arrival_obs = [rc.start for rc in sk.ranks]
    last_arrival = np.array([max(int(arrival_obs[ri][p]) for ri, p in members) for members in sk.instances], np.int64)
    ends = [np.zeros(len(rc.end), np.int64) for rc in sk.ranks]
    # every call in the order of its observed end (then start: a call that waited ends with the one it waited
    # for, which started earlier); an instance's calls together, when its first one comes
    events = sorted(((int(rc.end[p]), int(rc.start[p]), ri, p) for ri, rc in enumerate(sk.ranks)
                     for p in range(len(rc.end))))
    done = [np.zeros(len(rc.end), bool) for rc in sk.ranks]

    def arrive(ri, p):
        rc = sk.ranks[ri]
        if p > 0:  # the previous call's new end; its observed one where it has not come yet (overlapping calls)
            base = int(ends[ri][p - 1]) if done[ri][p - 1] else int(rc.end[p - 1])
        else:
            base = rc.steps[0][1] if rc.steps else int(rc.start[0])
        return base + int(leads[ri][p])

    for _, _, ri, p in events:
        if done[ri][p]:
            continue
        k = int(sk.ranks[ri].instance[p])
        if k >= 0 and sk.p2p[k]:
            ends[ri][p] = _p2p_end(sk, k, ri, p, arrive, (transfer_scale or {}).get(k, 1.0))
            done[ri][p] = True
            continue
        members = sk.instances[k] if k >= 0 else [(ri, p)]
        arrivals = {(mi, mp): arrive(mi, mp) for mi, mp in members}
        latest = max(arrivals.values())
        for mi, mp in members:
            rc = sk.ranks[mi]
            transfer = max(int(rc.end[mp]) - (int(last_arrival[k]) if k >= 0 else int(rc.start[mp])), 0)
            ends[mi][mp] = max(latest, arrivals[(mi, mp)]) + transfer
            done[mi][mp] = True
    return ends


def _p2p_end(sk: Skeleton, k: int, ri: int, p: int, arrive, scale: float = 1.0) -> int:
    """A send's or a receive's new end. A side that ended after its peer arrived waited for it (a receive for its
    data; a send for its receive, where the transport hands over only to a posted receive): it ends its observed
    time after the later of the two arrivals (a receive cannot end before its send started). A side that ended
    before its peer arrived (a send the transport buffered) keeps its own time. With nothing changed both give
    back the observed end."""
    qi, qp = next(m for m in sk.instances[k] if m != (ri, p))
    me, peer = sk.ranks[ri], sk.ranks[qi]
    mine = arrive(ri, p)
    if int(me.end[p]) < int(peer.start[qp]):
        return mine + int(me.end[p] - me.start[p])
    after = int(me.end[p]) - max(int(me.start[p]), int(peer.start[qp]))
    if scale != 1.0:
        after = int(round(after * scale))
    return max(mine, max(mine, arrive(qi, qp)) + after)


def step_ends(sk: Skeleton, ends: list[np.ndarray], tail_scale: dict | None = None) -> dict[int, int]:
    """The job's end of each step (the latest rank), replayed: each rank's tail after its last call in it
    (`tail_scale`: {rank index: factor} on that tail)."""
    out: dict[int, int] = {}
    for ri, (rc, e) in enumerate(zip(sk.ranks, ends)):
        f = (tail_scale or {}).get(ri, 1.0)
        for number, _, end in rc.steps:
            p = int(np.searchsorted(rc.end, end, side="right")) - 1
            tail = end - (int(rc.end[p]) if p >= 0 else end)
            new = (int(e[p]) if p >= 0 else end) + (int(round(tail * f)) if f != 1.0 else tail)
            out[number] = max(out.get(number, new), new)
    return out


def _gain(sk: Skeleton, after: dict) -> tuple[int, int, int, int] | None:
    """(mean, lowest, highest gain per step, steps) of the replayed step ends `after` against the unedited replay."""
    before = step_ends(sk, replay_ranks(sk))
    numbers = sorted(before)
    if not numbers:
        return None
    first = min(start for rc in sk.ranks for number, start, _ in rc.steps if number == numbers[0])
    # each step from the end of the one before (the first from its start, which no edit moves)
    was = [before[numbers[0]] - first] + [before[b] - before[a] for a, b in zip(numbers, numbers[1:])]
    now = [after[numbers[0]] - first] + [after[b] - after[a] for a, b in zip(numbers, numbers[1:])]
    arr = np.maximum(np.array(was, np.int64) - np.array(now, np.int64), 0)
    return int(arr.mean()), int(arr.min()), int(arr.max()), len(arr)


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
    return _gain(sk, step_ends(sk, replay_ranks(sk, {slow: mine})))


def link_gain(sk: Skeleton, src: int, dst: int, factor: float) -> tuple[int, int, int, int] | None:
    """(mean, lowest, highest gain per step, steps) of the sends from rank `src` to rank `dst` moving their data
    in `factor` of the time (the transfer after both sides arrived); None where no such pair was matched."""
    scale = {k: factor for k, members in enumerate(sk.instances) if sk.p2p[k]
             and sk.ranks[members[0][0]].rank == src and sk.ranks[members[1][0]].rank == dst}
    if not scale:
        return None
    return _gain(sk, step_ends(sk, replay_ranks(sk, None, scale)))


def p2p_overlaps(sk: Skeleton) -> int:
    """How many send / receive pairs have a side whose range overlaps another call of its rank: an asynchronous
    isend / irecv whose range lasts until it is waited for, the rank working and calling meanwhile. Its range is
    no wait, so the graph cannot say when that rank waited or worked (the stages' edit is not stated then)."""
    marked = []
    for rc in sk.ranks:
        order = np.argsort(rc.start, kind="stable")
        hit = np.zeros(len(rc.start), bool)
        reach, holder = None, -1
        for j in order.tolist():
            if reach is not None and rc.start[j] < reach:
                hit[j] = hit[holder] = True
            if reach is None or rc.end[j] > reach:
                reach, holder = int(rc.end[j]), j
        marked.append(hit)
    return sum(1 for k, members in enumerate(sk.instances)
               if sk.p2p[k] and any(marked[ri][p] for ri, p in members))


def own_work(sk: Skeleton, ri: int) -> float:
    """A rank's own work per step (ns): its steps' time less the union of its calls inside them; -1 without steps."""
    rc = sk.ranks[ri]
    if not rc.steps:
        return -1.0
    total = 0
    for _, start, end in rc.steps:
        s, e = np.clip(rc.start, start, end), np.clip(rc.end, start, end)
        order = np.argsort(s, kind="stable")
        busy, reach = 0, start
        for a, b in zip(s[order].tolist(), e[order].tolist()):
            if b > reach:
                busy += b - max(a, reach)
                reach = b
        total += end - start - busy
    return total / len(rc.steps)


def scale_gain(sk: Skeleton, factors: dict) -> tuple[int, int, int, int] | None:
    """(mean, lowest, highest gain per step, steps) of scaling each rank's own work by its factor ({rank index:
    factor}): every lead time before a call and every step's tail after its last call (the work between calls
    grows or shrinks; the calls' transfers stay)."""
    leads = _leads(sk)
    override = {ri: np.where(leads[ri] > 0, np.round(leads[ri] * f), leads[ri]).astype(np.int64)
                for ri, f in factors.items()}
    return _gain(sk, step_ends(sk, replay_ranks(sk, override), factors))


def _hop(rc: RankCalls, what: str, after: str, lo: int, hi: int, **more) -> dict:
    """One stretch of the path on rank `rc`, from aligned `lo` to `hi`; its times are sent on the rank's own
    clock relative to its window's start (where its events lie on its timeline): aligned + offset - origin."""
    return {"rank": rc.rank, "what": what, "after": after, "ns": int(hi - lo),
            "start_ns": int(lo) + rc.offset - rc.origin, "end_ns": int(hi) + rc.offset - rc.origin, **more}


def cross_rank_paths(sk: Skeleton) -> list[dict]:
    """Per step: the critical path across ranks, walked back from the rank that ended the step last: its tail,
    then at each collective the member that arrived last (the one the others waited for) and its lead time; at a
    receive that waited, the sender (and a send that waited, its receiver). A transfer's `waited_for` names that
    member: the path goes on, earlier, on its rank."""
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
        if t <= lo:  # the step began in this rank's own work after the call (a call of the step before): done
            break
        k = int(rc.instance[p])
        if k >= 0:  # the member that arrived last held the call
            members = sk.instances[k]
            if sk.p2p[k]:  # a send / receive waited for its peer only where the peer came before it ended
                members = [m for m in members if int(sk.ranks[m[0]].start[m[1]]) <= t]
            qi, qp = max(members, key=lambda m: int(sk.ranks[m[0]].start[m[1]]))
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
