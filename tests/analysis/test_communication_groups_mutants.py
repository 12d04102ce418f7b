"""Communicators across ranks (analysis/communication/groups.py), by hand (issue 46, mutation round).

Hand-made digests: a few links numbered inside their communicator as communication_matrix.json writes them, the
groups a file declares, the calls; every expected value is worked out in the docstring or comment beside it.
"""
from __future__ import annotations

import numpy as np

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.communication import groups as G


def _poly_hash(text: str, base: int) -> int:
    """sum(ord(c_i) * base^(n-1-i)) mod 2^32: the polynomial hash as one sum, not HCCL's loop."""
    n = len(text)
    return sum(ord(ch) * pow(base, n - 1 - i, 2 ** 32) for i, ch in enumerate(text)) % 2 ** 32


def _digest(links=(), calls=(), declared=(), world=0, env=None) -> pb.Digest:
    """links: (group, src, dst[, bytes, time, transport, numbering]); calls: (group, op[, kind]); declared: CommGroup
    keyword dicts."""
    d = pb.Digest()
    for group, src, dst, *rest in links:
        nbytes, time, transport, numbering = (list(rest) + [0, 0, "HCCS", "communicator"][len(rest):])
        d.communication.links.add(group=group, src=src, dst=dst, bytes=nbytes, time_ns=time, transport=transport,
                                  numbering=numbering)
    for group, op, *kind in calls:
        d.communication.calls.add(group=group, op=op, kind=kind[0] if kind else "AllReduce")
    for g in declared:
        d.communication.groups.add(**g)
    d.window.world_size = world
    d.window.environment.update(env or {})
    return d


# ---- double_hash, declared_id ----

def test_double_hash_is_two_polynomial_hashes_side_by_side():
    """"a": 97 and 97 -> 97 * 2^32 + 97 = 416,611,827,809; "ab": 97 * 29 + 98 = 2,911 and 97 * 131 + 98 = 12,805."""
    assert G.double_hash("") == 0
    assert G.double_hash("a") == 416_611_827_809
    assert G.double_hash("ab") == 2911 * 2 ** 32 + 12805
    for name in ("127.0.0.1%enp189s0f0_60000_0_1736408867914549", "dp_group_of_ranks_0_2"):  # long: both wrap at 2^32
        assert G.double_hash(name) == (_poly_hash(name, 29) << 32) | _poly_hash(name, 131)
        assert G.double_hash(name) < 2 ** 64


def test_declared_id_is_the_name_or_its_hash_whichever_the_calls_carry():
    h = str(G.double_hash("comm"))
    assert G.declared_id("comm", {"comm"}) == "comm"
    assert G.declared_id("comm", {h, "x"}) == h
    assert G.declared_id("comm", {"comm", h}) == "comm"
    assert G.declared_id("comm", {"x"}) == "comm"


# ---- member_maps ----

def test_a_ranks_own_link_or_its_one_source_names_its_member():
    """Rank 2's file: dp 1->1 (its own copy: member 1 is rank 2) and 1->0; rank 0's: dp 0->0, 0->1. Rank 5's file: g
    1->0, 1->2 (no own link, one source: member 1 is rank 5); rank 6's: g 0->1, 2->1 (two sources: nothing), a global
    link and a link of src -1 (not read). Rank 3: h 2->2 first, then 1->1: the first wins."""
    digests = [_digest([("dp", 1, 1), ("dp", 1, 0)]), _digest([("dp", 0, 0), ("dp", 0, 1)]),
               _digest([("g", 1, 0), ("g", 1, 2)]),
               _digest([("g", 0, 1), ("g", 2, 1), ("g", 4, 4, 0, 0, "HCCS", "global"), ("g", -1, -1)]),
               _digest([("h", 2, 2), ("h", 1, 1)])]
    assert G.member_maps(digests, [2, 0, 5, 6, 3]) == {"dp": {1: 2, 0: 0}, "g": {1: 5}, "h": {2: 3}}
    assert G.member_maps(digests[3:4], [6]) == {}
    # links not numbered in their communicator, or without a source, first in the file: the rest are still read
    late = _digest([("g", 4, 4, 0, 0, "HCCS", "global"), ("g", -1, 0), ("dp", 0, 0)])
    assert G.member_maps([late], [9]) == {"dp": {0: 9}}


def test_declared_ranks_fill_the_members_not_already_known_and_not_taken():
    """tp: the matrix shows 3 members (0..2, from rank 8's 0->2); rank 8's own link says member 0 is rank 8. The
    declaration [4, 6, 8]: member 0 is known (kept 8), member 1 -> 6, member 2 would be 8, taken: left out."""
    digests = [_digest([("tp", 0, 0), ("tp", 0, 2)], declared=[dict(group="tp", ranks=[4, 6, 8])])]
    assert G.member_maps(digests, [8]) == {"tp": {0: 8, 1: 6}}


def test_a_declaration_with_fewer_ranks_than_the_matrix_has_members_is_not_used():
    """pp: members 0..2 seen (rank 0's 0->2 and 0->0); declared [0, 9]: 2 < 3, not the whole group: only member 0
    (rank 0's own link). With as many ranks as members ([0, 9, 7]): 9 and 7 fill 1 and 2. The first file that declares
    the group with ranks wins (an empty declaration is none)."""
    links = [("pp", 0, 0), ("pp", 0, 2)]
    assert G.member_maps([_digest(links, declared=[dict(group="pp", ranks=[0, 9])])], [0]) == {"pp": {0: 0}}
    first = _digest(links, declared=[dict(group="pp"), dict(group="pp", ranks=[0, 9, 7])])
    second = _digest(declared=[dict(group="pp", ranks=[0, 1, 2])])
    assert G.member_maps([first, second], [0, 1]) == {"pp": {0: 0, 1: 9, 2: 7}}
    # a short declaration first does not stop the next group's: tp [3, 4] fills tp's members 0 and 1
    both = _digest(links, declared=[dict(group="pp", ranks=[0, 9]), dict(group="tp", ranks=[3, 4])])
    assert G.member_maps([both], [0]) == {"pp": {0: 0}, "tp": {0: 3, 1: 4}}


def test_the_calling_ranks_in_order_number_a_group_nothing_else_maps():
    """x: 2 members seen (7's 0->1 and 1->0: two sources, no own link), called by ranks 7 and 3: sorted, member 0 is
    rank 3, member 1 rank 7. y: 3 members seen (7's 0->2 and 1->2) but 2 callers: unmapped. z: member 0 from rank 3's
    own link, 2 seen, callers 3 and 7: member 1 filled with 7."""
    a = _digest([("x", 0, 1), ("x", 1, 0), ("y", 0, 2), ("y", 1, 2)], calls=[("x", "op"), ("y", "op"), ("z", "op")])
    b = _digest([("z", 0, 0), ("z", 0, 1)], calls=[("x", "op"), ("y", "op"), ("z", "op")])
    assert G.member_maps([a, b], [7, 3]) == {"x": {0: 3, 1: 7}, "z": {0: 3, 1: 7}}


def test_the_calling_ranks_do_not_fill_a_member_the_other_rules_left_when_as_many_are_mapped():
    """q: rank 5's own link says member 0 (0->0, 0->2: 3 members seen); the declaration [1, 5, 3, 7] says 5 is
    member 1: taken, so member 1 stays open, 2 -> 3, 3 -> 7. Three members are mapped, as many as the matrix shows:
    the callers (1, 3, 5 sorted) are not asked, which would put rank 3 on member 1 as well as on member 2."""
    d5 = _digest([("q", 0, 0), ("q", 0, 2)], calls=[("q", "op")], declared=[dict(group="q", ranks=[1, 5, 3, 7])])
    d1, d3 = _digest(calls=[("q", "op")]), _digest(calls=[("q", "op")])
    assert G.member_maps([d5, d1, d3], [5, 1, 3]) == {"q": {0: 5, 2: 3, 3: 7}}


# ---- global_links ----

def test_links_in_global_ranks_and_what_could_not_be_mapped():
    """dp {0, 2}: rank 0's 0->0 (10 B, 1 ns) and 0->1 (20 B), rank 2's 1->1 (30 B) and 1->0 (40 B) -> 0->0, 0->2,
    2->2, 2->0. A link numbered globally (5->6, 50 B) passes. Lost: z 3->4 (-7 B: counted as 0), a global link with
    src -1 (group ''), dp 3->0 (11 B: member 3 unknown, member 0 known), a 0->1 (9 B), w 0->1 and 1->0 (2 + 3 B: a
    group nothing maps): 6 links, 0 + 0 + 11 + 9 + 2 + 3 = 25 bytes, groups sorted ['', 'a', 'dp', 'w', 'z']."""
    d0 = _digest([("dp", 0, 0, 10, 1, "LOCAL"), ("dp", 0, 1, 20, 2), ("g0", 5, 6, 50, 5, "RDMA", "global"),
                  ("z", 3, 4, -7, 1), ("", -1, 1, 0, 0, "HCCS", "global")])
    d2 = _digest([("dp", 1, 1, 30, 3, "LOCAL"), ("dp", 1, 0, 40, 4), ("dp", 3, 0, 11, 1), ("a", 0, 1, 9, 1),
                  ("w", 0, 1, 2, 1), ("w", 1, 0, 3, 1)])
    cols, lost = G.global_links([d0, d2], [0, 2])
    assert cols["src"].tolist() == [0, 0, 5, 2, 2] and cols["dst"].tolist() == [0, 2, 6, 2, 0]
    assert cols["bytes"].tolist() == [10, 20, 50, 30, 40] and cols["time_ns"].tolist() == [1, 2, 5, 3, 4]
    assert cols["transport"] == ["LOCAL", "HCCS", "RDMA", "LOCAL", "HCCS"] and cols["group"] == ["dp", "dp", "g0", "dp", "dp"]
    assert all(cols[k].dtype == np.int64 for k in ("src", "dst", "bytes", "time_ns"))
    assert lost == {"links": 6, "bytes": 25, "groups": ["", "a", "dp", "w", "z"]}


def test_no_links_give_empty_int_columns():
    cols, lost = G.global_links([_digest()], [0])
    assert all(cols[k].dtype == np.int64 and len(cols[k]) == 0 for k in ("src", "dst", "bytes", "time_ns"))
    assert (cols["transport"], cols["group"], lost) == ([], [], {"links": 0, "bytes": 0, "groups": []})


# ---- group_rows ----

def test_group_rows_from_declarations_member_links_and_callers():
    """Ranks 0, 1, 2. dp: declared by rank 1 (name data, comm_name hcomm, ranks 0-2 from profiler_metadata.json; rank
    0 declares it bare first), called by 0 and 1: rank 2 missing; 3 ranks, all known: "data (ranks 0-2)". mm: no
    declaration, rank 1's own link (member 0) and rank 2's (member 1): ranks [1, 2] from the member links, rank 1 not
    calling. pp: only
    called, rank 0's 0->3 shows 4 members, one mapped: no ranks, "4 ranks (pp)". qq: declared [7] by rank 0, but the
    matrix shows 3 members: 3 members, the label does not take [7] for the whole. tp: declared [2, 5] without a source
    ("declared"), called by nobody: rank 2 (here) missing, 5 (not here) not. The '' caller is no group. bare:
    declared without ranks, nothing maps it: no ranks, no ranks source, members unknown. Rank 2's later
    declaration of dp ([9]) does not replace rank 1's."""
    d0 = _digest([("pp", 0, 3), ("qq", 0, 2)], declared=[dict(group="dp"), dict(group="qq", ranks=[7]),
                                                         dict(group="bare", name="b")])
    d1 = _digest([("mm", 0, 0), ("mm", 0, 1)],
                 declared=[dict(group="dp", name="data", comm_name="hcomm", ranks=[0, 1, 2], source="profiler_metadata.json")])
    d2 = _digest([("mm", 1, 1), ("mm", 1, 0)], declared=[dict(group="tp", ranks=[2, 5], name="", source=""),
                                                         dict(group="dp", ranks=[9], source="x")])
    rows = G.group_rows([d0, d1, d2], [0, 1, 2], {"dp": [1, 0, 0], "mm": [2], "pp": [0], "": [1]})
    got = [(r["group"], r["name"], r["comm_name"], r["source"], r["ranks"], r["ranks_source"], r["members"],
            r["calling_ranks"], r["missing"], r["label"]) for r in rows]
    assert got == [
        ("bare", "b", "", "", [], "", -1, [], [], "b"),
        ("dp", "data", "hcomm", "profiler_metadata.json", [0, 1, 2], "profiler_metadata.json", 3, [0, 1], [2],
         "data (ranks 0-2)"),
        ("mm", "", "", "", [1, 2], "member links", 2, [2], [1], "ranks 1,2 (mm)"),
        ("pp", "", "", "", [], "", 4, [0], [], "4 ranks (pp)"),
        ("qq", "", "", "", [7], "declared", 3, [], [], "3 ranks (qq)"),
        ("tp", "", "", "", [2, 5], "declared", 2, [], [2], "ranks 2,5 (tp)")]


def test_member_links_with_a_hole_are_no_ranks_and_an_unknown_group_has_no_members():
    """hh: members 0 (rank 4's own link) and 2 (rank 6's) mapped, 1 not: no ranks; 3 members seen (the largest
    member is only a source: rank 6's 2->0, its one source). ee: called only, nothing known: members -1, its id as
    label."""
    d4 = _digest([("hh", 0, 0)])
    d6 = _digest([("hh", 2, 0)])
    rows = G.group_rows([d4, d6], [4, 6], {"ee": [6]})
    got = [(r["group"], r["ranks"], r["ranks_source"], r["members"], r["label"]) for r in rows]
    assert got == [("ee", [], "", -1, "ee")]  # hh is no declared group and no caller's: not a row
    rows = G.group_rows([d4, d6], [4, 6], {"ee": [6], "hh": [4, 6]})
    assert [(r["group"], r["ranks"], r["members"], r["label"]) for r in rows] == [
        ("ee", [], -1, "ee"), ("hh", [], 3, "3 ranks (hh)")]


# ---- with_groups ----

def test_calls_without_communicator_take_the_one_another_rank_gives_their_operator():
    """Rank 0 names hcom_a in g and hcom_b in g1, hcom_z in y; rank 2 names hcom_z in x (two: not known). Rank 1
    names none: hcom_a -> g, hcom_b -> g1, hcom_z and hcom_c stay ''. Its AllReduce collective -> g, Broadcast -> g1,
    AllGather (no call) stays ''. Ranks 0 and 2 come back as they are; rank 1 as a copy (its digest unchanged)."""
    d0 = _digest(calls=[("g", "hcom_a"), ("g1", "hcom_b", "Broadcast"), ("y", "hcom_z")])
    d1 = _digest(calls=[("", "hcom_a"), ("", "hcom_b", "Broadcast"), ("", "hcom_z"), ("", "hcom_c"), ("", "")])
    for kind in ("AllReduce", "Broadcast", "AllGather"):
        d1.communication.collectives.add(kind=kind)
    d1.communication.collectives.add(kind="Send", group="pp")
    d2 = _digest(calls=[("x", "hcom_z")])
    out = G.with_groups([d0, d1, d2])
    assert out[0] is d0 and out[2] is d2 and out[1] is not d1
    assert [(c.op, c.group) for c in out[1].communication.calls] == [
        ("hcom_a", "g"), ("hcom_b", "g1"), ("hcom_z", ""), ("hcom_c", ""), ("", "")]
    assert [(s.kind, s.group) for s in out[1].communication.collectives] == [
        ("AllReduce", "g"), ("Broadcast", "g1"), ("AllGather", ""), ("Send", "pp")]
    assert [c.group for c in d1.communication.calls] == [""] * 5


def test_a_kind_whose_calls_went_to_two_communicators_names_none_and_nothing_known_copies_nothing():
    d0 = _digest(calls=[("g", "hcom_a"), ("h", "hcom_b")])
    d1 = _digest(calls=[("", "hcom_a"), ("", "hcom_b")])
    d1.communication.collectives.add(kind="AllReduce")
    out = G.with_groups([d0, d1])
    assert [c.group for c in out[1].communication.calls] == ["g", "h"]
    assert [s.group for s in out[1].communication.collectives] == [""]
    lone = _digest(calls=[("", "hcom_a")])
    assert G.with_groups([lone])[0] is lone  # no operator named anywhere
    named = _digest(calls=[("g", "hcom_q")])
    assert G.with_groups([named, d0])[1] is d0  # every call of d0 names its communicator


# ---- world_size ----

def test_world_size_the_largest_a_file_gives_else_the_ranks_seen():
    """Files say 8 (profiler_metadata.json) and 4: 8 from that file. Ranks 0..7 seen: 7 + 1 = 8, not above: kept.
    A group member 11: 12 (at least). A file's 16 without a named source: "the window's files"; 0: no source."""
    files = [_digest(world=8, env={"world_size_source": "profiler_metadata.json"}), _digest(world=4)]
    assert G.world_size(files, [0, 7], []) == (8, "profiler_metadata.json")
    assert G.world_size(files, [0, 7], [{"ranks": [3, 11]}]) == (12, "the ranks and group members seen (at least)")
    assert G.world_size([_digest(world=4), _digest(world=16)], [-1], []) == (16, "the window's files")
    assert G.world_size([_digest(world=0)], [-1], []) == (0, "")
    assert G.world_size([_digest(world=1)], [-1], []) == (1, "the window's files")
    assert G.world_size([], [], []) == (-1, "")
    two = [_digest(world=8, env={"world_size_source": "a"}), _digest(world=8, env={"world_size_source": "b"})]
    assert G.world_size(two, [0], []) == (8, "a")  # the first file that gives the largest
    assert G.world_size([_digest(world=0)], [0], []) == (1, "the ranks and group members seen (at least)")


# ---- labels ----

def test_labels_name_else_ranks_else_members_with_the_end_of_a_hash():
    h = "17522688603477080586"
    assert G.group_label(pb.CommGroup(group=h, name="dp", ranks=[2, 0, 1])) == "dp (ranks 0-2)"
    assert G.group_label(pb.CommGroup(group=h, name="dp")) == "dp"
    assert G.group_label(pb.CommGroup(group="dp", name="dp", ranks=[0, 1])) == "ranks 0,1 (dp)"  # name == id
    assert G.group_label(pb.CommGroup(group=h, ranks=[0, 2, 3])) == "ranks 0,2,3 (1752…0586)"
    assert G.group_label(pb.CommGroup(group=h, ranks=[5])) == "ranks 5 (1752…0586)"
    assert G.group_label(pb.CommGroup(group=h, members=8)) == "8 ranks (1752…0586)"
    assert G.group_label(pb.CommGroup(group=h, members=0)) == "1752…0586"
    assert G.group_label(pb.CommGroup(group="1234567890123")) == "1234…0123"  # 13 digits: shortened
    assert G.group_label(pb.CommGroup(group="123456789012")) == "123456789012"  # 12: kept
    assert G.group_label(pb.CommGroup(group="abcdefghijklmnopq")) == "abcdefghijklmnopq"  # not a number: kept
