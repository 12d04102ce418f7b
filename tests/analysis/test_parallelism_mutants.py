"""How a job is parallel (analysis/parallelism.py) on hand-made digests: each group's kind, its members,
the pipeline stages and the tied-embedding group worked out by hand from the module doc (issue 46,
mutation testing). The older tests reach it only through simulated pipelines and the rules corpus."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.parallelism import kind_of_name, recognise


def _digest(rank, world=0, groups=(), calls=()):
    """groups: (id, name, ranks); calls: (kind, group, start_ns, dur_ns)."""
    d = pb.Digest()
    d.window.rank, d.window.world_size = rank, world
    for group, name, ranks in groups:
        d.communication.groups.add(group=group, name=name, ranks=ranks)
    for kind, group, start, dur in calls:
        d.communication.calls.add(kind=kind, group=group, start_ns=start, dur_ns=dur)
    return d


@pytest.mark.parametrize("name, kind", [
    ("dp", "data"), ("dp_cp", "data"), ("DATA_PARALLEL_GROUP", "data"), ("tp", "tensor"), ("mp", "tensor"),
    ("TENSOR_MODEL_PARALLEL_GROUP", "tensor"), ("pp", "pipeline"), ("mesh_pp", "pipeline"),
    ("PIPELINE_MODEL_PARALLEL_GROUP", "pipeline"), ("ep", "expert"), ("exp", "expert"), ("moe", "expert"),
    ("EXPERT_MODEL_PARALLEL_GROUP", "expert"), ("cp", "context"), ("CONTEXT_PARALLEL_GROUP", "context"),
    ("embd", "embedding"), ("embedding_pp", "embedding"), ("app", "unknown"), ("dpx", "unknown"),
    ("xtp", "unknown"), ("cpu", "unknown"), ("ep2", "expert"), ("default_group", "unknown"), ("", "unknown"),
    (None, "unknown"),
])
def test_kind_of_a_name(name, kind):
    """A short name as a word (no letter either side: "app", "dpx", "cpu" are none), a long one anywhere, in
    the order of the module doc: embedding first, then pipeline, data, expert, tensor, context."""
    assert kind_of_name(name) == kind


def _pp2_dp2(pp1_ranks=(3, 1)):
    """4 ranks, pipeline of 2 stages x 2 replicas. Declared: pp groups [0, 2] and [3, 1] (ranks in pipeline
    order: stage 0 = {0, 3}, stage 1 = {2, 1}), dp groups [0, 3] and [2, 1]. Rank 1 declares pp1 again with
    other ranks: the first declaration stands."""
    return [_digest(0, 4, [("g_pp0", "pp", [0, 2]), ("g_dp0", "dp", [0, 3]), ("g_pp1", "pp", list(pp1_ranks))]),
            _digest(1, 4, [("g_pp1", "pp", [1, 3]), ("g_dp1", "dp", [2, 1])]),
            _digest(2, 4), _digest(3, 4)]


def test_declared_pipeline_groups_give_the_stages_in_their_order():
    p = recognise(_pp2_dp2())
    assert p.source == "declared groups" and p.pipeline
    assert p.stages == [[0, 3], [1, 2]]
    assert p.groups == {"g_dp0": "data", "g_dp1": "data", "g_pp0": "pipeline", "g_pp1": "pipeline"}
    assert p.members == {"g_dp0": [0, 3], "g_dp1": [1, 2], "g_pp0": [0, 2], "g_pp1": [1, 3]}
    assert [p.stage_of(r) for r in (0, 1, 2, 3, 9)] == [0, 1, 1, 0, -1]
    assert (p.peers(0), p.peers(1), p.peers(3)) == ([0, 3], [1, 2], [0, 3])
    assert p.peers(9) == [0, 1, 2, 3, 9]  # no stage: every member, itself too
    assert (p.kind("g_dp1"), p.kind("nope")) == ("data", "unknown")


def test_the_ranks_argument_names_the_digests():
    """The same digests named 10-13: the declared ranks stay, the callers take the names given."""
    d = [_digest(0, 0, calls=[("AllReduce", "g", 0, 5)]), _digest(1, 0, calls=[("AllReduce", "g", 0, 5)])]
    assert recognise(d, ranks=[10, 11]).members == {"g": [10, 11]}
    assert recognise(d).members == {"g": [0, 1]}


def test_declared_pipelines_of_unequal_lengths_are_no_stages():
    """pp groups of 2 and 3 ranks: no consistent stage list, and no send / receive to fall back on."""
    d = [_digest(0, 5, [("a", "pp", [0, 1]), ("b", "pp", [2, 3, 4])])] + [_digest(r, 5) for r in range(1, 5)]
    p = recognise(d)
    assert (p.stages, p.source, p.pipeline) == ([], "", False)
    assert p.peers(2) == [0, 1, 2, 3, 4]


def test_a_one_rank_pipeline_group_is_no_pipeline():
    """A declared pp group of one rank gives no stage order; its calls none either (no Send / Recv)."""
    p = recognise([_digest(0, 1, [("a", "pp", [0])])])
    assert (p.stages, p.source) == ([], "")


def test_the_name_and_the_id_both_say_the_kind():
    """A declared group named "" whose id says tp; one named "default_group" whose id is "mesh_pp": the
    kind reads "name id"; an undeclared group's id alone."""
    d = [_digest(0, 2, [("tp_3", "", [0, 1]), ("mesh_pp", "default_group", [0, 1])],
                 calls=[("AllReduce", "ep_7", 0, 5)])]
    p = recognise(d)
    assert p.groups == {"ep_7": "expert", "mesh_pp": "pipeline", "tp_3": "tensor"}
    assert p.members["ep_7"] == [0]


def test_a_group_of_send_and_receive_only_is_a_pipeline():
    """Group x: only Send / Recv, kind unknown by name, so pipeline; group y: Send and an AllReduce, unknown;
    group z: a declared group with no ranks listed takes its callers as members; w, declared with no ranks and
    no calls, has none."""
    d = [_digest(0, 2, [("z", "", []), ("w", "", [])],
                 calls=[("Send", "x", 0, 5), ("Send", "y", 0, 5), ("AllReduce", "y", 9, 5),
                        ("Broadcast", "z", 20, 5)]),
         _digest(1, 2, calls=[("Recv", "x", 0, 8), ("Broadcast", "z", 20, 5)])]
    p = recognise(d)
    assert p.groups == {"w": "unknown", "x": "pipeline", "y": "unknown", "z": "unknown"}
    assert p.members == {"w": [], "x": [0, 1], "y": [0], "z": [0, 1]}


def _chain(world=3):
    """Ranks 0 > 2 > 1 over one group "p": rank 0 sends first (at 10); rank 2 receives 10-30, then sends 40-45;
    rank 1 receives 5-50 and sends 20-25, its Send listed first. Given in the order 1, 0, 2."""
    return [_digest(1, world, calls=[("Send", "p", 20, 5), ("Recv", "p", 5, 45)]),
            _digest(0, world, calls=[("Send", "p", 10, 5), ("Recv", "p", 70, 10)]),
            _digest(2, world, calls=[("Recv", "p", 10, 20), ("Send", "p", 40, 5)])]


def test_stages_from_send_and_receive_calls():
    """By hand: rank 0's first p2p call by time is a Send: stage 0. Ranks 1 and 2 start with a Recv (rank 1's at
    5, though its list names its Send first); their first Recvs end at 50 and 30: rank 2, then rank 1 (not the
    rank order, nor the order of their Sends' ends, 25 and 45)."""
    p = recognise(_chain())
    assert (p.stages, p.source) == ([[0], [2], [1]], "send / receive calls")
    assert p.groups == {"p": "pipeline"}


def test_without_every_rank_of_the_job_no_stage_order():
    """World size 4, ranks 0-2 at hand: the order would be a guess."""
    assert (recognise(_chain(world=4)).stages, recognise(_chain(world=4)).source) == ([], "")
    assert recognise(_chain(world=3)).stages == [[0], [2], [1]]


def test_send_receive_ranks_outside_any_pipeline_group_make_one_pipeline():
    """Group q carries an AllReduce too (unknown, no pipeline group): the ranks making p2p calls form one
    pipeline; a tie of the first receive's end goes to the lower rank (2 before 3, both receive 5-20)."""
    d = [_digest(0, 4, calls=[("Send", "q", 0, 5), ("AllReduce", "q", 100, 5)]),
         _digest(3, 4, calls=[("Recv", "q", 5, 15)]), _digest(2, 4, calls=[("Recv", "q", 5, 15)]),
         _digest(1, 4, calls=[("AllReduce", "q", 100, 5)])]
    p = recognise(d)
    assert (p.stages, p.source) == ([[0], [2], [3]], "send / receive calls")


def test_two_ranks_outside_any_pipeline_group_are_a_pipeline():
    """Group q carries an AllReduce too (no pipeline group); rank 1 sends first, rank 0 receives: 1 > 0."""
    d = [_digest(0, 2, calls=[("Recv", "q", 5, 10), ("AllReduce", "q", 100, 5)]),
         _digest(1, 2, calls=[("Send", "q", 5, 5), ("AllReduce", "q", 100, 5)])]
    assert recognise(d).stages == [[1], [0]]


def test_send_receive_pipelines_of_unequal_lengths_are_no_stages():
    """Pipeline groups a (0 > 1) and b (2 > 3 > 4): no one stage list."""
    d = [_digest(0, 5, calls=[("Send", "a", 0, 5)]), _digest(1, 5, calls=[("Recv", "a", 0, 9)]),
         _digest(2, 5, calls=[("Send", "b", 0, 5)]), _digest(3, 5, calls=[("Recv", "b", 0, 9), ("Send", "b", 20, 5)]),
         _digest(4, 5, calls=[("Recv", "b", 20, 9)])]
    p = recognise(d)
    assert (p.stages, p.source) == ([], "")


def test_no_digest_is_no_parallelism():
    p = recognise([])
    assert (p.groups, p.members, p.stages, p.source) == ({}, {}, [], "")


def test_a_single_rank_with_send_and_receive_is_no_pipeline():
    p = recognise([_digest(0, 1, calls=[("Send", "p", 0, 5), ("Recv", "p", 10, 5)])])
    assert (p.stages, p.source, p.pipeline) == ([], "", False)


def test_a_rank_that_only_sends_has_its_receive_end_zero():
    """Two pipelines of two over groups a (0 > 1) and b (2 > 3). Ranks 0 and 2 only send (first Send: stage 0),
    1 and 3 receive: stage 0 = {0, 2}, stage 1 = {1, 3}."""
    d = [_digest(0, 4, calls=[("Send", "a", 0, 5)]), _digest(1, 4, calls=[("Recv", "a", 0, 9)]),
         _digest(2, 4, calls=[("Send", "b", 0, 5)]), _digest(3, 4, calls=[("Recv", "b", 0, 9)])]
    assert recognise(d).stages == [[0, 2], [1, 3]]


def _embedded(kind_name="", callers=(0, 1), kind="AllReduce"):
    """The 0 > 2 > 1 chain, and a group e (named kind_name) whose calls `kind` the `callers` make."""
    digests = _chain()
    for d in digests:
        if d.window.rank in callers:
            d.communication.calls.add(kind=kind, group="e", start_ns=200, dur_ns=5)
    if kind_name:
        digests[1].communication.groups.add(group="e", name=kind_name, ranks=list(callers))
    return digests


def test_an_all_reduce_of_the_first_and_last_stage_is_the_tied_embedding():
    """Ranks 0 (first stage) and 1 (last) all-reduce over e: embedding, whether unnamed or named dp."""
    assert recognise(_embedded()).kind("e") == "embedding"
    assert recognise(_embedded("dp")).kind("e") == "embedding"


@pytest.mark.parametrize("name, callers, kind, expected", [
    ("", (0, 2), "AllReduce", "unknown"),  # first and middle stage
    ("", (1, 2), "AllReduce", "unknown"),  # last and middle
    ("", (0, 1, 2), "AllReduce", "unknown"),  # three members
    ("", (0,), "AllReduce", "unknown"),  # one member
    ("", (0, 1), "Broadcast", "unknown"),  # not an all-reduce
    ("tp", (0, 1), "AllReduce", "tensor"),  # named otherwise: the name stands
])
def test_other_groups_are_not_the_embedding(name, callers, kind, expected):
    assert recognise(_embedded(name, callers, kind)).kind("e") == expected


def test_no_embedding_without_a_pipeline():
    """Two ranks all-reducing, no Send / Recv: no stages, the group stays unknown."""
    d = [_digest(r, 2, calls=[("AllReduce", "e", 0, 5)]) for r in (0, 1)]
    p = recognise(d)
    assert (p.pipeline, p.kind("e")) == (False, "unknown")
