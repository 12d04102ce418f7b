"""Send / receive across ranks in the ranks' graph (analysis/graph/ranks.py): sends paired with their receives,
the replay exact with no edit, a receive never ending before its send started, the stages' "scale own work"
edit against an independent simulation of the pipeline, and the critical path following a receive to its sender.

The observed ranks come from a small discrete simulation written here (blocking, rendezvous send / receive:
a pair completes when both sides arrived), not from the code under test."""
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.graph import ranks as R
from canning_tb.analysis.rules.cluster_rules import stage_imbalance
from canning_tb.analysis.parallelism import recognise

MS = 1_000_000


def _programs(first: int, last: int, micro: int = 4):
    """1F1B of the lab's pipeline (tests/_lab_job.py): per layer 1 ms forward and 1 ms backward; stage 0 holds
    `first` layers, stage 1 `last` (its forward, loss and backward in one go)."""
    r0, r1 = [("work", first * MS), ("send", 1)], [("recv", 0)]
    for m in range(micro):
        if m + 1 < micro:
            r0 += [("work", first * MS), ("send", 1)]
        r0 += [("recv", 1), ("work", first * MS)]
        r1 += [("work", 2 * last * MS)] + ([("recv", 0)] if m + 1 < micro else []) + [("send", 0)]
    return [r0, r1]


def simulate(programs_per_step: list, steps: int = 3):
    """Run the programs step after step on each rank; a send and the matching receive (same pair, in order)
    complete together when both arrived. Returns per rank (calls [(kind, peer, start, end)], steps [(start, end)])."""
    n = len(programs_per_step)
    prog = [[op for _ in range(steps) for op in programs_per_step[r] + [("mark", None)]] for r in range(n)]
    pc, clock, calls = [0] * n, [0] * n, [[] for _ in range(n)]
    marks = [[0] for _ in range(n)]
    while any(pc[r] < len(prog[r]) for r in range(n)):
        moved = False
        for r in range(n):
            while pc[r] < len(prog[r]) and prog[r][pc[r]][0] in ("work", "mark"):
                kind, d = prog[r][pc[r]]
                if kind == "work":
                    clock[r] += d
                else:
                    marks[r].append(clock[r])
                pc[r] += 1
                moved = True
        for r in range(n):
            if pc[r] >= len(prog[r]) or prog[r][pc[r]][0] != "send":
                continue
            q = prog[r][pc[r]][1]
            if pc[q] < len(prog[q]) and prog[q][pc[q]] == ("recv", r):
                t = max(clock[r], clock[q])
                calls[r].append(("Send", q, clock[r], t))
                calls[q].append(("Recv", r, clock[q], t))
                clock[r] = clock[q] = t
                pc[r] += 1
                pc[q] += 1
                moved = True
        assert moved, "deadlock"
    return [(calls[r], list(zip(marks[r][:-1], marks[r][1:]))) for r in range(n)]


def digests(sim, peers: bool = True, t0: int = 10 ** 12) -> list:
    out = []
    for rank, (calls, steps) in enumerate(sim):
        d = pb.Digest()
        d.window.world_size = len(sim)
        for i, (kind, peer, start, end) in enumerate(calls):
            c = d.communication.calls.add(kind=kind, group="", start_ns=t0 + start, dur_ns=end - start, seq=i,
                                          comm_type="p2p", bytes=16384)
            if peers:
                c.peer = peer
        for number, (start, end) in enumerate(steps):
            d.steps.add(number=number + 1, start_ns=t0 + start, dur_ns=end - start)
        out.append(d)
    return out


def _step_times(sim) -> list:
    ends = [max(sim[r][1][k][1] for r in range(len(sim))) for k in range(len(sim[0][1]))]
    return [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]


def test_sends_pair_with_their_receives_and_the_replay_gives_back_the_times():
    sim = simulate(_programs(6, 2))
    sk = R.skeleton(digests(sim), [0, 1])
    assert sum(sk.p2p) == len(sk.instances) == len(sim[0][0])  # every call is in one pair
    for k, (send, recv) in enumerate(sk.instances):
        s, r = sk.ranks[send[0]], sk.ranks[recv[0]]
        assert s.label[send[1]].startswith("Send") and r.label[recv[1]].startswith("Recv")
        assert s.end[send[1]] == r.end[recv[1]]  # the simulation ends both together
    for got, rc in zip(R.replay_ranks(sk), sk.ranks):
        assert got.tolist() == rc.end.tolist()


def test_without_the_peer_in_the_trace_two_ranks_still_pair():
    sk = R.skeleton(digests(simulate(_programs(6, 2)), peers=False), [0, 1])
    assert sum(sk.p2p) == len(sk.instances) > 0


def test_a_receive_never_ends_before_its_send_started():
    sim = simulate(_programs(2, 2))
    sk = R.skeleton(digests(sim), [0, 1])
    leads = R._leads(sk)
    ends = R.replay_ranks(sk, {0: leads[0] * 5})  # stage 0 five times slower: stage 1 waits in every receive
    for send, recv in sk.instances:
        arrival = ends[send[0]][send[1] - 1] + leads[0][send[1]] * 5 if send[1] else None
        if arrival is not None and send[0] == 0:
            assert ends[recv[0]][recv[1]] >= arrival
    assert ends[1][-1] > sk.ranks[1].end[-1]


def test_a_buffered_send_keeps_its_own_time():
    """A send that ended before its receive was posted (gloo buffers small ones) does not wait for it."""
    calls = [[("Send", 1, 0, 1 * MS)], [("Recv", 0, 5 * MS, 6 * MS)]]
    sim = [(calls[0], [(0, 2 * MS)]), (calls[1], [(0, 7 * MS)])]
    sk = R.skeleton(digests(sim), [0, 1])
    ends = R.replay_ranks(sk, {1: R._leads(sk)[1] * 2})  # the receiver comes 5 ms later still
    assert ends[0][0] == sk.ranks[0].end[0]
    assert ends[1][0] == sk.ranks[1].end[0] + 5 * MS


def test_balancing_the_stages_gains_what_the_balanced_pipeline_runs_faster():
    before, after = simulate(_programs(6, 2)), simulate(_programs(4, 4))
    sk = R.skeleton(digests(before), [0, 1])
    own = [R.own_work(sk, i) for i in range(2)]
    assert own == [48 * MS, 16 * MS]  # 4 micro-batches x (6 + 6) ms; 4 x (2 + 2) ms
    gain = R.scale_gain(sk, {0: 32 / 48, 1: 32 / 16})
    expected = [b - a for b, a in zip(_step_times(before), _step_times(after))]
    assert expected[1] == expected[2] == 8 * MS  # 48 ms against 40 ms, by hand (docs of the lab pair)
    assert abs(gain[0] - sum(expected) / 3) <= 1000 and gain[3] == 3


def test_the_stage_finding_states_the_replayed_gain():
    ds = digests(simulate(_programs(6, 2)))
    par = recognise(ds, [0, 1])
    sk = R.skeleton(ds, [0, 1])
    rows = [{"rank": r, "computing_ns": c, "p2p_wait_ns": 0, "step_ns": 48 * MS, "source": "trace",
             "per_step": [{"step": s, "compute_ns": c, "overlapped_ns": 0} for s in (1, 2, 3)]}
            for r, c in ((0, 48 * MS), (1, 16 * MS))]
    found = stage_imbalance({"ranks": rows}, par, sk)
    assert [f.rule for f in found] == ["stage_imbalance"]
    assert found[0].edit and found[0].gain_ns > 0 and not found[0].gain_is_bound
    assert found[0].gain_low_ns <= found[0].gain_ns <= found[0].gain_high_ns


def test_the_path_goes_to_the_sender_when_a_receive_waits():
    """Stage 1 holds 6 layers: stage 0 waits in its receives for it, so the path of a step runs mostly on rank 1,
    and back to rank 0 through the first activation's receive (stage 1 waited for it)."""
    sim = simulate(_programs(2, 6))
    paths = R.cross_rank_paths(R.skeleton(digests(sim), [0, 1]))
    for p in paths[1:]:
        assert p["by_rank"].get(1, 0) > p["by_rank"].get(0, 0) > 0, p
        assert sum(p["by_rank"].values()) == p["dur_ns"]


def _one_transfer(steps: int = 2):
    """Per step (13 ms): rank 0 works 2 ms and sends; the data takes 8 ms (both sides wait for it); rank 1 then
    works 3 ms. Rank 0 sends again from rank 1's next step (it waits 3 ms for the receive)."""
    calls0, calls1, s0, s1 = [], [], [], []
    for k in range(steps):
        t = 13 * MS * k
        calls0.append(("Send", 1, t + 2 * MS, t + 10 * MS))
        calls1.append(("Recv", 0, t, t + 10 * MS))
        s0.append((t, t + 13 * MS))
        s1.append((t, t + 13 * MS))
    return [(calls0, s0), (calls1, s1)]


def test_a_faster_link_gains_its_transfer_time_off_the_step():
    sk = R.skeleton(digests(_one_transfer()), [0, 1])
    assert R.link_gain(sk, 0, 1, 0.5) == (4 * MS, 4 * MS, 4 * MS, 2)  # 8 ms of transfer -> 4 ms, by hand
    assert R.link_gain(sk, 1, 0, 0.5) is None  # nothing sent that way


def test_the_slow_link_finding_replays_its_sends_at_the_median_rate():
    from canning_tb.analysis.rules.cluster_rules import _slow_transport
    from canning_tb.analysis.rules import thresholds as th
    ds = digests(_one_transfer())
    size = th.LOW_BANDWIDTH_MIN_BYTES
    ds[0].communication.links.add(src=0, dst=1, transport="HCCS", bytes=2 * size, time_ns=16 * MS)  # 2 steps x 8 ms
    ds[1].communication.links.add(src=1, dst=0, transport="HCCS", bytes=2 * size, time_ns=8 * MS)  # twice as fast
    sk = R.skeleton(ds, [0, 1])
    found = _slow_transport(ds, {"ranks": [{"rank": 0, "step_ns": 13 * MS}, {"rank": 1, "step_ns": 13 * MS}]}, sk)
    assert [f.rule for f in found] == ["slow_link"]
    assert found[0].edit and found[0].gain_ns == 4 * MS  # at the other link's rate: 8 ms -> 4 ms per step


def _pipeline_fixture():
    import gzip
    import json
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto import read_kineto
    from conftest import fixture_path
    files = sorted(fixture_path("kineto", "gloo_pipeline_2stages").glob("rank*.pt.trace.json.gz"))
    raw = [json.load(gzip.open(f))["traceEvents"] for f in files]
    return [build_digest(read_kineto(str(f))) for f in files], raw


def test_a_real_pipeline_pairs_every_send_with_its_receive():
    ds, raw = _pipeline_fixture()
    for rank, (d, events) in enumerate(zip(ds, raw)):
        ops = [e for e in events if e.get("name") in ("c10d::send", "c10d::recv_") and e.get("ph") == "X"]
        # independent: the operators' own arguments name the other rank (dst / src: the 3rd concrete input)
        assert {int(e["args"]["Concrete Inputs"][2]) for e in ops} == {1 - rank}
        p2p = [c for c in d.communication.calls if c.kind in ("Send", "Recv")]
        assert len(p2p) == len(ops) and all(c.HasField("peer") and c.peer == 1 - rank for c in p2p)
    sk = R.skeleton(ds, [0, 1])
    assert sum(sk.p2p) == len(sk.instances) == len(ops)
    for got, rc in zip(R.replay_ranks(sk), sk.ranks):
        assert got.tolist() == rc.end.tolist()


def test_a_real_pipelines_path_runs_through_its_slow_stage():
    """Stage 0 holds 3x the layers of stage 1: the path of every step holds more of rank 0 than of rank 1."""
    ds, _ = _pipeline_fixture()
    for p in R.cross_rank_paths(R.skeleton(ds, [0, 1])):
        assert p["by_rank"].get(0, 0) > p["by_rank"].get(1, 0), p


def test_asynchronous_sends_leave_the_stage_finding_an_observation():
    """isend ranges that last until their wait (the rank works inside them, here each send reaches 10 ms past its
    rank's next call) are no waits: the graph cannot tell work from waiting, so no edit is stated."""
    sim = simulate(_programs(6, 2))
    calls0 = [(k, q, s, e + 10 * MS if k == "Send" else e) for k, q, s, e in sim[0][0]]
    ds = digests([(calls0, sim[0][1]), sim[1]])
    sk = R.skeleton(ds, [0, 1])
    assert R.p2p_overlaps(sk) > 0 and R.p2p_overlaps(R.skeleton(digests(sim), [0, 1])) == 0
    rows = [{"rank": r, "computing_ns": c, "p2p_wait_ns": 0, "step_ns": 48 * MS, "source": "trace",
             "per_step": [{"step": s, "compute_ns": c, "overlapped_ns": 0} for s in (1, 2, 3)]}
            for r, c in ((0, 48 * MS), (1, 16 * MS))]
    (f,) = stage_imbalance({"ranks": rows}, recognise(ds, [0, 1]), sk)
    assert not f.edit and f.gain_is_bound  # the spread it is about, left for cluster_hits to show as an observation
