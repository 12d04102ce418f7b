"""The graph across ranks (analysis/graph/ranks.py) on two ranks made by hand (issue 46, mutation testing): the
clocks' offsets, the replay, "balance this rank", "scale a rank's own work", a rank's own work and the critical
path across ranks, each expected number worked out by hand in the test's docstring (times in ns).

The job, in true time: two steps of 100 ns, four all-reduces of group "g" (two a step); rank 1's clock reads
1000 ns more than rank 0's, and each rank's window starts at its own clock's 0 of the job.

    call        rank 0 start-end   rank 1 start-end   (a collective ends together on both)
    AllReduce#0   20 -  50           40 -  50
    AllReduce#1   85 -  90           80 -  90
    AllReduce#2  120 - 150          145 - 150
    AllReduce#3  185 - 190          180 - 190
    steps 1, 2: 0-100, 100-200 on both

Lead times (a call's start less the previous call's end, the first from the step's start):
rank 0: 20, 35, 30, 35; rank 1: 40, 30, 55, 30. Tails after the last call of each step: 10 on both ranks.
Transfers (a call's end less the later arrival): 10, 5, 5, 5."""
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.graph import ranks as R

CALLS = {0: [(20, 50), (85, 90), (120, 150), (185, 190)], 1: [(40, 50), (80, 90), (145, 150), (180, 190)]}
SKEW = {0: 0, 1: 1000}


def _digest(rank, calls, skew, group="g", kind="AllReduce", steps=((1, 0, 100), (2, 100, 100))):
    d = pb.Digest()
    d.window.start_ns = skew
    for i, (s, e) in enumerate(calls):
        d.communication.calls.add(kind=kind, group=group, seq=i, start_ns=skew + s, dur_ns=e - s)
    for number, start, dur in steps:
        d.steps.add(number=number, start_ns=skew + start, dur_ns=dur)
    return d


def _job():
    return R.skeleton([_digest(r, CALLS[r], SKEW[r]) for r in (0, 1)], [0, 1])


def test_the_clocks_are_aligned_on_the_median_end_of_the_calls_they_share():
    """Every call ends at x on rank 0 and x + 1000 on rank 1: the median end is x + 500, so rank 0 is 500 behind it
    (offset -500) and rank 1 500 ahead (offset 500); both then read true time + 500. The calls are listed in the
    order they end, each labelled by kind, sequence number and group, each in its instance with the other rank's."""
    sk = _job()
    r0, r1 = sk.ranks
    assert (r0.rank, r0.offset, r0.aligned, r0.origin) == (0, -500, True, 0)
    assert (r1.rank, r1.offset, r1.aligned, r1.origin) == (1, 500, True, 1000)
    assert r0.start.tolist() == [520, 585, 620, 685] and r0.end.tolist() == [550, 590, 650, 690]
    assert r1.start.tolist() == [540, 580, 645, 680] and r1.end.tolist() == [550, 590, 650, 690]
    assert r0.label == ["AllReduce#0 (g)", "AllReduce#1 (g)", "AllReduce#2 (g)", "AllReduce#3 (g)"]
    assert r0.steps == [(1, 500, 600), (2, 600, 700)] and r1.steps == [(1, 500, 600), (2, 600, 700)]
    assert sorted(sorted(m) for m in sk.instances) == [[(0, p), (1, p)] for p in range(4)]
    assert sk.p2p == [False] * 4
    assert [int(sk.instances[k][0][1]) for k in r0.instance.tolist()] == [0, 1, 2, 3]
    assert [x.tolist() for x in R.replay_ranks(sk)] == [[550, 590, 650, 690]] * 2
    assert R.step_ends(sk, R.replay_ranks(sk)) == {1: 600, 2: 700}


def test_a_rank_that_shares_no_call_keeps_its_clock():
    """A third rank whose only call is a Broadcast of group "h" (called by no other rank): offset 0, not aligned, its
    call in no instance, labelled with its group; a call of group "" is labelled "default"."""
    third = _digest(2, [(30, 60)], 5000, group="h", kind="Broadcast")
    sk = R.skeleton([_digest(r, CALLS[r], SKEW[r]) for r in (0, 1)] + [third], [0, 1, 2])
    r2 = sk.ranks[2]
    assert (r2.offset, r2.aligned, r2.instance.tolist(), r2.label) == (0, False, [-1], ["Broadcast#0 (h)"])
    assert r2.start.tolist() == [5030] and r2.steps[0] == (1, 5000, 5100)
    assert len(sk.instances) == 4
    lone = R.skeleton([_digest(0, [(1, 2)], 0, group="")], [0]).ranks[0]
    assert lone.label == ["AllReduce#0 (default)"] and not lone.aligned


def test_balancing_the_late_rank_replays_it_at_the_others_lead_times():
    """Rank 1 given rank 0's lead time where its own is longer: 40 -> 20 (call 0) and 55 -> 30 (call 2); 30 stays at
    calls 1 and 3 (rank 0 took 35). Replayed in true time: call 0 both arrive at 20, end 20 + 10 = 30; call 1 rank 0
    at 30 + 35 = 65, rank 1 at 60, end 65 + 5 = 70; step 1 ends 70 + 10 = 80 (was 100: 20 gained). Call 2 both at
    70 + 30 = 100, end 105; call 3 rank 0 at 140, rank 1 at 135, end 145; step 2 ends 155: 75 long (was 100: 25).
    Mean 22.5 -> 22, lowest 20, highest 25, over 2 steps."""
    assert R.balance_gain(_job(), 1) == (22, 20, 25, 2)


def test_balancing_a_rank_helps_only_where_it_came_later():
    """Rank 0 came later than rank 1 only at call 1 (35 against 30) and call 3 (35 against 30): with 30 there, call 0
    ends at 40 + 10 = 50 (rank 1 arrives at 40), call 1 both at 80, end 85; step 1 ends 95 (5 gained); call 2: rank 0
    at 85 + 30 = 115, rank 1 at 85 + 55 = 140, end 145; call 3 both at 175, end 180; step 2 190 - 95 = 95 (5 gained).
    A rank nowhere later gains 0; a rank sharing no call: unknown (None)."""
    assert R.balance_gain(_job(), 0) == (5, 5, 5, 2)
    calls = {0: [(20, 50), (80, 90)], 1: [(40, 50), (85, 90)]}  # rank 1 later at both
    sk = R.skeleton([_digest(r, calls[r], SKEW[r], steps=((1, 0, 100),)) for r in (0, 1)], [0, 1])
    assert R.balance_gain(sk, 0) == (0, 0, 0, 1)
    third = _digest(2, [(30, 60)], 5000, group="h", kind="Broadcast")
    sk = R.skeleton([_digest(r, CALLS[r], SKEW[r]) for r in (0, 1)] + [third], [0, 1, 2])
    assert R.balance_gain(sk, 2) is None


def test_scaling_a_ranks_own_work_scales_its_lead_times_and_tails():
    """Rank 0's own work at half: leads 20, 35, 30, 35 -> 10, 18, 15, 18 (17.5 rounds to even 18), tails 10 -> 5. In
    true time: call 0 ends 40 + 10 = 50 (rank 1 arrives at 40); call 1 rank 0 at 68, rank 1 at 80, end 85; step 1:
    rank 0 85 + 5, rank 1 85 + 10 = 95 (5 gained); call 2 rank 1 at 140, end 145; call 3 rank 0 at 163, rank 1 at
    175, end 180; step 2 ends 190 (95 long, 5 gained). Rank 1 at half instead: leads 20, 15, 28 (27.5), 15, tails 5:
    call 0 at 20 both, end 30; call 1 rank 0 at 65, end 70; step 1 ends at rank 0's 80 (20 gained); call 2 rank 0 at
    100, rank 1 at 98, end 105; call 3 rank 0 at 140, end 145; step 2 ends 155 (75 long, 25 gained)."""
    sk = _job()
    assert R.scale_gain(sk, {0: 0.5}) == (5, 5, 5, 2)
    assert R.scale_gain(sk, {1: 0.5}) == (22, 20, 25, 2)


def test_a_ranks_own_work_is_its_steps_less_its_calls():
    """Rank 0 per step: 100 - (30 + 5) = 65 both steps; rank 1: 100 - (10 + 10) = 80, 100 - (5 + 10) = 85: 82.5.
    Overlapping calls count once (10-50 and 30-60 are 50 busy: 50 own of 100); calls clipped to the step (90-130 is 10
    inside 0-100: 90); a rank without steps: -1."""
    sk = _job()
    assert R.own_work(sk, 0) == 65.0 and R.own_work(sk, 1) == 82.5
    sk = R.skeleton([_digest(0, [(10, 50), (30, 60)], 0, steps=((1, 0, 100),))], [0])
    assert R.own_work(sk, 0) == 50.0
    sk = R.skeleton([_digest(0, [(90, 130)], 0, steps=((1, 0, 100),))], [0])
    assert R.own_work(sk, 0) == 90.0
    sk = R.skeleton([_digest(0, [(90, 130)], 0, steps=())], [0])
    assert R.own_work(sk, 0) == -1.0


def test_the_path_across_ranks_goes_to_the_rank_that_arrived_last_at_each_call():
    """Step 1 ends at 100 on both ranks (the later rank index is taken). Walked back from rank 1: its tail 90-100, the
    transfer of call 1 85-90 (rank 0 came last, at 85), rank 0's own work 50-85 since call 0, call 0's transfer 40-50
    (rank 1 came last, at 40), rank 1's own work 0-40 from the step's start. Rank 1 holds 10 + 5 + 40 = 55, rank 0
    35 + 10 = 45. Each hop's times are on its rank's own clock from its window's start (true time here)."""
    paths = R.cross_rank_paths(_job())
    assert [p["step"] for p in paths] == [1, 2]
    p = paths[0]
    assert (p["dur_ns"], p["by_rank"], p["hops_total"]) == (100, {1: 55, 0: 45}, 5)
    got = [(h["rank"], h["what"], h["after"], h["start_ns"], h["end_ns"], h["ns"], h.get("waited_for"))
           for h in p["hops"]]
    assert got == [(1, "own work", "step start", 0, 40, 40, None),
                   (0, "transfer", "AllReduce#0 (g)", 40, 50, 10, 1),
                   (0, "own work", "AllReduce#0 (g)", 50, 85, 35, None),
                   (1, "transfer", "AllReduce#1 (g)", 85, 90, 5, 0),
                   (1, "own work", "AllReduce#1 (g)", 90, 100, 10, None)]
    # step 2 (100-200): rank 1's tail 190-200; call 3 held by rank 0 (185): 185-190; rank 0 since call 2, 150-185;
    # call 2 held by rank 1 (145): 145-150; rank 1 since call 1: 90-145... cut at the step's start, 100-145
    q = paths[1]
    assert q["by_rank"] == {1: 10 + 5 + 45, 0: 35 + 5} and q["dur_ns"] == 100
    assert [(h["rank"], h["start_ns"], h["end_ns"]) for h in q["hops"]] == [(1, 100, 145), (0, 145, 150),
                                                                          (0, 150, 185), (1, 185, 190), (1, 190, 200)]


def _p2p(send=(20, 60), recv=(40, 60), peers=(1, 0), group_ranks=(5, 3), extra=None):
    """Global ranks 3 and 5 in group "pp" declared as [5, 3] (rank 5 is its 0, rank 3 its 1), one clock, one step
    0-100: rank 5 sends to its group's rank `peers[0]`, rank 3 receives from `peers[1]`. `extra`: a call of rank 5's
    (start, end) of group "g"."""
    out = []
    for rank, kind, (s, e), peer in ((3, "Recv", recv, peers[1]), (5, "Send", send, peers[0])):
        d = pb.Digest()
        if group_ranks:
            d.communication.groups.add(group="pp", ranks=list(group_ranks))
        c = d.communication.calls.add(kind=kind, group="pp", seq=0, start_ns=s, dur_ns=e - s)
        if peer is not None:
            c.peer = peer
        if extra and rank == 5:
            d.communication.calls.add(kind="AllReduce", group="g", seq=0, start_ns=extra[0], dur_ns=extra[1] - extra[0])
        d.steps.add(number=1, start_ns=0, dur_ns=100)
        out.append(d)
    return R.skeleton(out, [3, 5])


def test_a_send_pairs_with_its_receive_through_the_groups_declared_ranks():
    """Rank 5 sends to its group's 1 (global 3), rank 3 receives from its group's 0 (global 5): one pair, the send
    first, labelled with the peers' global ranks; not used for the clocks (offsets 0, not aligned). Replayed as is:
    the send waited for the receive (it arrived at 40) and moved its data 60 - 40 = 20 after."""
    sk = _p2p()
    assert sk.p2p == [True] and sk.instances == [[(1, 0), (0, 0)]]
    assert sk.ranks[1].label == ["Send#0 (pp) to rank 3"] and sk.ranks[0].label == ["Recv#0 (pp) from rank 5"]
    assert [(rc.offset, rc.aligned) for rc in sk.ranks] == [(0, False), (0, False)]
    assert [x.tolist() for x in R.replay_ranks(sk)] == [[60], [60]]


def test_a_faster_link_shortens_the_transfer_after_both_sides_arrived():
    """The 20 ns after both arrived at half: 10; both sides end at 50, the step (tails of 40) at 90: 10 gained. No send
    from 3 to 5: None. A send the transport buffered (20-25, before the receive came at 40) keeps its 5 ns; the
    receive still ends its observed 60 - 40 = 20 after the later arrival."""
    sk = _p2p()
    assert R.link_gain(sk, 5, 3, 0.5) == (10, 10, 10, 1)
    assert R.link_gain(sk, 3, 5, 0.5) is None
    sk = _p2p(send=(20, 25))
    assert [x.tolist() for x in R.replay_ranks(sk)] == [[60], [25]]


def test_without_peers_or_declared_ranks_the_two_callers_of_a_group_pair():
    """No peer in the calls and no ranks declared: the group's two callers are each other's peer. A peer index past
    the group's declared ranks names no one: no pair. Without declared ranks a peer is read as a global rank."""
    assert _p2p(peers=(None, None), group_ranks=()).p2p == [True]
    assert _p2p(peers=(7, 0)).instances == []
    sk = _p2p(peers=(3, 5), group_ranks=())
    assert sk.p2p == [True] and sk.ranks[1].label == ["Send#0 (pp) to rank 3"]


def test_a_pair_whose_side_overlaps_another_call_of_its_rank_is_counted():
    """Rank 5's send 20-60 and its all-reduce 30-50 overlap: 1 pair; an all-reduce 60-70 after it touches only: 0."""
    assert R.p2p_overlaps(_p2p(extra=(30, 50))) == 1
    assert R.p2p_overlaps(_p2p(extra=(60, 70))) == 0
    assert R.p2p_overlaps(_p2p()) == 0


def _two(calls0, calls1, steps=((1, 0, 100),)):
    """Ranks 0 and 1 on one clock, all-reduces of group "g" at the (start, end) given."""
    return R.skeleton([_digest(0, calls0, 0, steps=steps), _digest(1, calls1, 0, steps=steps)], [0, 1])


def test_a_call_ending_at_the_steps_end_is_the_steps_last_call():
    """One step 0-100: rank 0 calls 20-50 and 60-100, rank 1 40-50 and 90-100 (leads 20, 10 and 40, 40). Rank 1
    balanced (20, 10): call 0 both at 20, ends 30; call 1 both at 40, ends 50; the step ends with it (no tail): 50 gained.
    The path from rank 1: call 1's transfer 90-100 (rank 1 came last), rank 1's work 50-90, call 0's transfer 40-50,
    rank 1's work 0-40: rank 1 holds all 100."""
    sk = _two([(20, 50), (60, 100)], [(40, 50), (90, 100)])
    assert R.balance_gain(sk, 1) == (50, 50, 50, 1)
    (p,) = R.cross_rank_paths(sk)
    assert [(h["rank"], h["what"], h["start_ns"], h["end_ns"]) for h in p["hops"]] == [
        (1, "own work", 0, 40), (1, "transfer", 40, 50), (1, "own work", 50, 90), (1, "transfer", 90, 100)]
    assert p["by_rank"] == {1: 100}


def test_a_step_before_any_call_and_a_step_of_one_call():
    """Steps 0-10 (no call ends in it) and 10-100; rank 0 calls 20-50 (lead 20 from its first step's start), rank 1
    40-50 (lead 40). Rank 1 balanced: the call ends at 20 + 10 = 30; step 1 still ends at 10; step 2 at 30 + its 50
    tail = 80. Steps were 10 and 90 long, now 10 and 70: gains 0 and 20, mean 10."""
    sk = _two([(20, 50)], [(40, 50)], steps=((1, 0, 10), (2, 10, 90)))
    assert R.balance_gain(sk, 1) == (10, 0, 20, 2)
    # replayed as is, step 1 ends at its own end, 10 (no call before it to move it), step 2 at 100
    assert R.step_ends(sk, R.replay_ranks(sk)) == {1: 10, 2: 100}


def test_balancing_reads_past_a_call_the_other_ranks_do_not_make():
    """Rank 1 broadcasts alone (group h) at 5-10, then the all-reduce 40-50 (lead 30 after the broadcast); rank 0's
    lead is 20: rank 1 at 20, arriving at 10 + 20 = 30; the call ends 30 + 10 = 40, the step (tail 50) 90: 10 gained."""
    d1 = _digest(1, [(40, 50)], 0, steps=((1, 0, 100),))
    d1.communication.calls.add(kind="Broadcast", group="h", seq=0, start_ns=5, dur_ns=5)
    sk = R.skeleton([_digest(0, [(20, 50)], 0, steps=((1, 0, 100),)), d1], [0, 1])
    assert R.balance_gain(sk, 1) == (10, 10, 10, 1)


def test_scaling_a_rank_up_and_another_down_can_gain_nothing():
    """One step 0-100; rank 0 calls 10-60 (lead 10, tail 40), rank 1 50-60 (lead 50, tail 40). Rank 0 x2 (lead 20, tail
    80), rank 1 x0.5 (lead 25, tail 20): both arrive by 25, the call ends 25 + 10 = 35; rank 0 ends the step at 115,
    longer than 100: no gain, 0 (not negative), in every figure."""
    sk = _two([(10, 60)], [(50, 60)])
    assert R.scale_gain(sk, {0: 2.0, 1: 0.5}) == (0, 0, 0, 1)


def test_a_faster_link_speeds_only_the_sends_from_its_source_to_its_destination():
    """Ranks 3, 5, 7 (group "pp", peers as global ranks): 5 sends to 3 (20-60; 3 receives 40-60), 7 sends to 3 (60-100;
    3 receives 70-100, 10 after its first receive); steps 0-60 on rank 5, 0-100 on 3 and 7. Link 5 -> 3 at half: the
    20 ns after both arrived take 10, the first pair ends at 50; rank 3 arrives at its second receive at 60, rank 7 was
    there at 60: it ends 60 + 30 = 90; the step ends at 90 (was 100): 10 gained. The pair 7 -> 3 keeps its time."""
    out = []
    for rank, calls, end in ((3, [("Recv", 5, 40, 60), ("Recv", 7, 70, 100)], 100), (5, [("Send", 3, 20, 60)], 60),
                             (7, [("Send", 3, 60, 100)], 100)):
        d = pb.Digest()
        for kind, peer, s, e in calls:
            d.communication.calls.add(kind=kind, group="pp", seq=0, start_ns=s, dur_ns=e - s, peer=peer)
        d.steps.add(number=1, start_ns=0, dur_ns=end)
        out.append(d)
    sk = R.skeleton(out, [3, 5, 7])
    assert sum(sk.p2p) == 2
    assert R.link_gain(sk, 5, 3, 0.5) == (10, 10, 10, 1)


def test_the_path_stops_at_the_steps_start_inside_a_transfer():
    """Steps 0-100 and 100-200; rank 0 calls 20-50, 60-90, 95-150, rank 1 40-50, 80-90, 100-150. Step 2 from rank 1
    (the later rank of two ending together): its work 150-200, the transfer of call 2 100-150 (rank 1 came last, at
    100, the step's start): two hops, 100 on rank 1."""
    sk = _two([(20, 50), (60, 90), (95, 150)], [(40, 50), (80, 90), (100, 150)], steps=((1, 0, 100), (2, 100, 100)))
    p = R.cross_rank_paths(sk)[1]
    assert [(h["rank"], h["what"], h["start_ns"], h["end_ns"]) for h in p["hops"]] == [
        (1, "transfer", 100, 150), (1, "own work", 150, 200)]
    assert p["by_rank"] == {1: 100} and p["hops_total"] == 2


def test_a_step_keeps_its_first_64_hops_of_the_path():
    """40 calls in one step 0-400: rank 0 at 10k+2 to 10k+10, rank 1 at 10k+5 to 10k+10 (k = 0..39). Walked from rank 1:
    per call a transfer of 5 (rank 1 came last) and 5 of rank 1's work before it, then the step's first 5: 80 hops,
    the first 64 kept (earliest first), all 400 on rank 1."""
    sk = _two([(10 * k + 2, 10 * k + 10) for k in range(40)], [(10 * k + 5, 10 * k + 10) for k in range(40)],
              steps=((1, 0, 400),))
    (p,) = R.cross_rank_paths(sk)
    assert (p["hops_total"], len(p["hops"]), p["by_rank"]) == (80, 64, {1: 400})
    assert [(h["start_ns"], h["end_ns"]) for h in p["hops"][:3]] == [(0, 5), (5, 10), (10, 15)]


def test_a_lone_ranks_path_walks_every_one_of_its_calls():
    """One rank, calls 10-20, 30-40, 50-60 in its step 0-70: each call its own transfer (it waited for no one but
    itself), its work between them: 7 hops."""
    sk = R.skeleton([_digest(0, [(10, 20), (30, 40), (50, 60)], 0, steps=((1, 0, 70),))], [0])
    (p,) = R.cross_rank_paths(sk)
    assert [(h["what"], h["start_ns"], h["end_ns"]) for h in p["hops"]] == [
        ("own work", 0, 10), ("transfer", 10, 20), ("own work", 20, 30), ("transfer", 30, 40), ("own work", 40, 50),
        ("transfer", 50, 60), ("own work", 60, 70)]


def _pp(calls, declared=None):
    """Digests of send / receive calls of group "pp": {rank: [(kind, peer or None, start, end)]}, one step 0-100 each,
    the group's ranks declared as `declared` on every rank (None: not declared)."""
    out = []
    for rank, mine in calls.items():
        d = pb.Digest()
        if declared:
            d.communication.groups.add(group="pp", ranks=list(declared))
        for i, (kind, peer, s, e) in enumerate(mine):
            c = d.communication.calls.add(kind=kind, group="pp", seq=i, start_ns=s, dur_ns=e - s)
            if peer is not None:
                c.peer = peer
        d.steps.add(number=1, start_ns=0, dur_ns=100)
        out.append(d)
    return R.skeleton(out, list(calls))


def test_a_peer_outside_its_group_or_unknown_among_many_pairs_with_nothing():
    """Group [5, 1] declared: rank 5 sends to its group's 2 (past its two ranks) or 7, rank 1 receives from its 0
    (rank 5): no pair either way. Three callers of "pp" (0, 1, 2), so no two-caller guess: rank 0 sends without naming
    its peer, rank 1 receives from rank 0, rank 2 sends to rank 1: no pair. A rank naming itself pairs with nothing."""
    for bad in (2, 7):
        assert _pp({5: [("Send", bad, 20, 60)], 1: [("Recv", 0, 40, 60)]}, declared=(5, 1)).instances == []
    sk = _pp({0: [("Send", None, 20, 60)], 1: [("Recv", 0, 40, 60)], 2: [("Send", 1, 10, 30)]})
    assert sk.instances == [] and sk.ranks[0].label == ["Send#0 (pp)"]
    assert _pp({4: [("Send", 4, 20, 30), ("Recv", 4, 40, 50)]}).instances == []


def test_a_pair_with_rank_0_names_it():
    """Rank 0 sends to rank 1, which receives from rank 0 (peers as global ranks): each label names the other."""
    sk = _pp({0: [("Send", 1, 20, 60)], 1: [("Recv", 0, 40, 60)]})
    assert (sk.ranks[0].label, sk.ranks[1].label) == (["Send#0 (pp) to rank 1"], ["Recv#0 (pp) from rank 0"])


def test_calls_are_matched_by_their_sequence_number_not_their_place_in_the_digest():
    """Rank 1's digest lists its four all-reduces last first (sequence numbers 3, 2, 1, 0): each is still matched with
    rank 0's call of the same number, and the job is the same one."""
    d1 = pb.Digest()
    d1.window.start_ns = 1000
    for i in (3, 2, 1, 0):
        s, e = CALLS[1][i]
        d1.communication.calls.add(kind="AllReduce", group="g", seq=i, start_ns=1000 + s, dur_ns=e - s)
    for number, start, dur in ((1, 0, 100), (2, 100, 100)):
        d1.steps.add(number=number, start_ns=1000 + start, dur_ns=dur)
    sk = R.skeleton([_digest(0, CALLS[0], 0), d1], [0, 1])
    assert all(len({sk.ranks[ri].label[p] for ri, p in m}) == 1 for m in sk.instances)
    assert R.balance_gain(sk, 1) == (22, 20, 25, 2)


def test_a_rank_without_steps_and_a_rank_without_calls():
    """Rank 0 (step 0-100): calls 20-50 and 60-80 (leads 20, 10; tail 20); rank 1, no step: 40-50 and 70-80 (its first
    lead from its own first call: 0, then 20); rank 2: nothing. Rank 0's work at half (leads 10, 5; tail 10): call 0
    rank 0 at 10, rank 1 at 40, ends 40 + 10 = 50; call 1 rank 0 at 55, rank 1 at 70, ends 80; the step 80 + 10 = 90:
    10 gained."""
    empty = pb.Digest()
    sk = R.skeleton([_digest(0, [(20, 50), (60, 80)], 0, steps=((1, 0, 100),)),
                     _digest(1, [(40, 50), (70, 80)], 0, steps=()), empty], [0, 1, 2])
    assert R.scale_gain(sk, {0: 0.5}) == (10, 10, 10, 1)
    assert [x.tolist() for x in R.replay_ranks(sk)] == [[50, 80], [50, 80], []]


def test_the_replay_keeps_epoch_nanoseconds_exact():
    """The job of this file with both clocks 1.7e18 + 1 ns later (a Unix epoch in ns, where a float64 keeps only
    multiples of 256): the replay gives back every aligned end to the ns, and the same gains."""
    t0 = 1_700_000_000_000_000_001
    sk = R.skeleton([_digest(r, CALLS[r], t0 + SKEW[r]) for r in (0, 1)], [0, 1])
    assert [x.tolist() for x in R.replay_ranks(sk)] == [rc.end.tolist() for rc in sk.ranks]
    assert R.balance_gain(sk, 1) == (22, 20, 25, 2)


def test_a_call_no_other_rank_makes_lasts_its_own_time_after_it_arrives():
    """Rank 5 of _p2p also calls an all-reduce alone, 70-70 (0 ns), 10 after its send ended at 60: replayed it
    arrives at 70 and ends there (no transfer)."""
    assert [x.tolist() for x in R.replay_ranks(_p2p(extra=(70, 70)))] == [[60], [60, 70]]


def test_the_path_ends_where_the_step_starts_and_adds_no_empty_hops():
    """Steps 0-100, 100-200; rank 0 calls 20-50, 60-100, 100-150; rank 1 40-50, 90-100, 110-150. Step 2 from rank 1:
    its work 150-200, call 2's transfer 110-150 (rank 1 came last), its work 100-110 since call 1 ended at the step's
    start. Step 1: call 1 ends at the step's end (no work after it)."""
    sk = _two([(20, 50), (60, 100), (100, 150)], [(40, 50), (90, 100), (110, 150)], steps=((1, 0, 100), (2, 100, 100)))
    one, two = R.cross_rank_paths(sk)
    assert [(h["rank"], h["what"], h["start_ns"], h["end_ns"]) for h in two["hops"]] == [
        (1, "own work", 100, 110), (1, "transfer", 110, 150), (1, "own work", 150, 200)]
    assert [(h["what"], h["start_ns"], h["end_ns"]) for h in one["hops"]] == [
        ("own work", 0, 40), ("transfer", 40, 50), ("own work", 50, 90), ("transfer", 90, 100)]
    # a lone rank whose call of 0 ns at 10 adds no transfer, and whose first call starts with its step
    sk = R.skeleton([_digest(0, [(10, 10), (30, 40)], 0, steps=((1, 0, 50),))], [0])
    assert [(h["what"], h["start_ns"], h["end_ns"]) for h in R.cross_rank_paths(sk)[0]["hops"]] == [
        ("own work", 0, 10), ("own work", 10, 30), ("transfer", 30, 40), ("own work", 40, 50)]
    sk = R.skeleton([_digest(0, [(0, 10)], 0, steps=((1, 0, 20),))], [0])
    assert [(h["what"], h["start_ns"]) for h in R.cross_rank_paths(sk)[0]["hops"]] == [("transfer", 0), ("own work", 10)]


def test_a_call_replayed_before_the_call_before_it_reads_that_ones_observed_end():
    """Rank 0: A 10-90, C 150-200; rank 1: a broadcast of its own B 60-95, A 96-100, C 160-200; steps 0-200. Clocks:
    A ends 90 and 100 (median 95: -5, +5), C 200 and 200 (0, 0): offsets int(-2.5) = -2 and 2. Aligned: rank 0 A
    12-92, C 152-202, step 2-202; rank 1 B 58-93, A 94-98, C 158-198, step -2-198. Leads: rank 0 A 10; rank 1 B 60,
    A 94 - 93 = 1. Replayed in the order of ends: rank 0's A (92) comes first and takes its instance whole; rank 1's
    A arrives after B, not replayed yet: B's observed end 93 + 1 = 94; rank 0 at 2 + 10 = 12; the last arrival
    observed was 94: rank 0's A ends 94 + 0 (it ended before it: no transfer), rank 1's 94 + 4 = 98."""
    d1 = _digest(1, [(96, 100), (160, 200)], 0, steps=((1, 0, 200),))
    d1.communication.calls.add(kind="Broadcast", group="h", seq=0, start_ns=60, dur_ns=35)
    sk = R.skeleton([_digest(0, [(10, 90), (150, 200)], 0, steps=((1, 0, 200),)), d1], [0, 1])
    assert [rc.offset for rc in sk.ranks] == [-2, 2]
    ends = R.replay_ranks(sk)
    assert (int(ends[0][0]), int(ends[1][1])) == (94, 98)
