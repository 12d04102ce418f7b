"""Communicators across ranks: which global ranks each one holds, and the link matrix in global ranks.

HCCL names a communicator in communication(_matrix).json by a 64-bit id, msprof-analyze's
`double_hash` of its communicator name (two 32-bit polynomial hashes, primes 29 and 131, of its
characters, side by side); torch_npu's profiler_metadata.json keys `parallel_group_info` by that
name. `declared_id` says which id the calls carry.

communication_matrix.json numbers the ranks of each cell set *inside its communicator* (member 0..n-1,
as HCCL numbers them), not globally: a data-parallel group {0, 2} writes rank 2's link to rank 0 as
"1-0". `member_maps` finds, per communicator, which global rank each member index is, from (first
wins where they disagree):
1. the link a rank's own file gives itself (src == dst, CANN's "LOCAL" copy): that member is the rank
   whose file it is (msprof-analyze's rule); else the one src all of a rank's links in the group
   share (each rank's file lists the links it sends on);
2. the group's global ranks in group order as a file declares them (profiler_metadata.json
   parallel_group_info `global_ranks`, msprof-analyze's communication_group.json `rank_set`), when
   they are not fewer than the members the matrix shows (msprof-analyze's rank_set holds only the
   ranks whose files name the group);
3. the ranks whose files name the communicator, sorted, when they are as many as the members the
   matrix shows (torch numbers a new group's members in the order of their global ranks).
A member none of these names stays unmapped: its links are counted in `unmapped`, never put on a
global rank they may not belong to.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import digest_pb2 as pb


def double_hash(text: str) -> int:
    """msprof-analyze's id of an HCCL communicator name (module doc)."""
    first = second = 0
    for ch in text:
        first = (first * 29 + ord(ch)) & 0xFFFFFFFF
        second = (second * 131 + ord(ch)) & 0xFFFFFFFF
    return (first << 32) | second


def declared_id(group: str, called: set[str]) -> str:
    """The id the calls carry for a communicator declared as `group`: itself, or the hash of that name."""
    if group in called:
        return group
    hashed = str(double_hash(group))
    return hashed if hashed in called else group


def _self_members(digest, rank: int) -> dict[str, int]:
    """{group: this rank's member index} from its own links (module doc, rule 1)."""
    found: dict[str, int] = {}
    sources: dict[str, set] = defaultdict(set)
    for link in digest.communication.links:
        if link.numbering != "communicator" or link.src < 0:
            continue
        sources[link.group].add(link.src)
        if link.src == link.dst:
            found.setdefault(link.group, link.src)
    for group, srcs in sources.items():
        if group not in found and len(srcs) == 1:
            found[group] = next(iter(srcs))
    return found


def _declared(digests: list) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for digest in digests:
        for g in digest.communication.groups:
            if g.ranks:
                out.setdefault(g.group, list(g.ranks))
    return out


def _members_seen(digests: list) -> dict[str, int]:
    """Per group: how many members the matrix shows (largest member index + 1)."""
    out: dict[str, int] = defaultdict(int)
    for digest in digests:
        for link in digest.communication.links:
            if link.numbering == "communicator":
                out[link.group] = max(out[link.group], link.src + 1, link.dst + 1)
    return out


def member_maps(digests: list, ranks: list[int]) -> dict[str, dict[int, int]]:
    """{group: {member index: global rank}} for the communicators of the links (module doc)."""
    maps: dict[str, dict[int, int]] = defaultdict(dict)
    callers: dict[str, set] = defaultdict(set)
    for digest, rank in zip(digests, ranks):
        for group, member in _self_members(digest, rank).items():
            maps[group].setdefault(member, rank)
        for call in digest.communication.calls:
            callers[call.group].add(rank)
    seen = _members_seen(digests)
    for group, members in _declared(digests).items():
        if len(members) < seen.get(group, 0):
            continue  # fewer ranks than the matrix has members: not the whole group (msprof-analyze's rank_set
            # lists the ranks whose files name it), so their order says nothing of the member numbers
        taken = set(maps[group].values())
        for index, rank in enumerate(members):
            if rank not in taken:
                maps[group].setdefault(index, rank)
    for group, size in seen.items():
        found = sorted(callers.get(group, ()))
        if len(found) == size and len(maps[group]) < size:
            for index, rank in enumerate(found):
                maps[group].setdefault(index, rank)
    return dict(maps)


def global_links(digests: list, ranks: list[int]) -> tuple[dict, dict]:
    """(columns of the links in global ranks: src, dst, transport, group, bytes, time_ns, and what could
    not be mapped: {"links", "bytes", "groups"}). Links a file already numbers globally pass as they are."""
    maps = member_maps(digests, ranks)
    cols: dict = {name: [] for name in ("src", "dst", "transport", "group", "bytes", "time_ns")}
    lost = {"links": 0, "bytes": 0, "groups": set()}
    for digest in digests:
        for link in digest.communication.links:
            src, dst = link.src, link.dst
            if link.numbering == "communicator":
                member = maps.get(link.group, {})
                src, dst = member.get(link.src, -1), member.get(link.dst, -1)
            if src < 0 or dst < 0:
                lost["links"] += 1
                lost["bytes"] += max(link.bytes, 0)
                lost["groups"].add(link.group)
                continue
            for name, value in (("src", src), ("dst", dst), ("transport", link.transport), ("group", link.group),
                                ("bytes", link.bytes), ("time_ns", link.time_ns)):
                cols[name].append(value)
    for name in ("src", "dst", "bytes", "time_ns"):
        cols[name] = np.asarray(cols[name], np.int64)
    lost["groups"] = sorted(lost["groups"])
    return cols, lost


def group_rows(digests: list, ranks: list[int], callers: dict[str, list[int]]) -> list[dict]:
    """The communicators of the run, one row each: its id, name (where a file names it), global ranks
    with where they come from (a file's declaration, else the member links / calling ranks mapped as
    `member_maps` does), the ranks here that called into it, and declared members here that did not
    (`missing`); `label` as communication/ascend.py words it."""
    maps = member_maps(digests, ranks)
    out: dict[str, dict] = {}
    for digest in digests:
        for g in digest.communication.groups:
            row = out.setdefault(g.group, {"group": g.group, "name": "", "ranks": [], "ranks_source": "",
                                           "comm_name": "", "source": ""})
            row["name"] = row["name"] or g.name
            row["comm_name"] = row["comm_name"] or g.comm_name
            row["source"] = row["source"] or g.source
            if g.ranks and not row["ranks"]:
                row["ranks"], row["ranks_source"] = list(g.ranks), g.source or "declared"
    for group in callers:
        out.setdefault(group, {"group": group, "name": "", "ranks": [], "ranks_source": "", "comm_name": "",
                               "source": ""})
    present, seen = set(ranks), _members_seen(digests)
    for group, row in out.items():
        mapped = maps.get(group, {})
        if not row["ranks"] and mapped and sorted(mapped) == list(range(max(len(mapped), seen.get(group, 0)))):
            row["ranks"], row["ranks_source"] = [mapped[i] for i in range(len(mapped))], "member links"
        row["members"] = max(len(row["ranks"]), seen.get(group, 0)) or -1
        row["calling_ranks"] = sorted(set(callers.get(group, ())))
        row["missing"] = sorted((set(row["ranks"]) & present) - set(row["calling_ranks"]))
        whole = len(row["ranks"]) == row["members"]  # else the ranks known are only some of its members
        label = pb.CommGroup(group=group, name=row["name"], ranks=row["ranks"] if whole else [], members=row["members"])
        row["label"] = group_label(label)
    return [out[k] for k in sorted(out) if k]


def with_groups(digests: list) -> list:
    """The digests, those whose calls name no communicator (kernel_details.csv without
    communication.json) copied with the communicator another rank's files give the same HCCL
    operator name (the name is the same on every member of the communicator)."""
    named: dict[str, set] = defaultdict(set)
    for digest in digests:
        for call in digest.communication.calls:
            if call.group and call.op:
                named[call.op].add(call.group)
    known = {op: next(iter(groups)) for op, groups in named.items() if len(groups) == 1}
    out = []
    for digest in digests:
        calls = digest.communication.calls
        if not known or not any(not c.group and c.op in known for c in calls):
            out.append(digest)
            continue
        copy = type(digest)()
        copy.CopyFrom(digest)
        by_kind: dict[str, set] = defaultdict(set)
        for call in copy.communication.calls:
            if not call.group and call.op in known:
                call.group = known[call.op]
                by_kind[call.kind].add(call.group)
        for stat in copy.communication.collectives:
            if not stat.group and len(by_kind.get(stat.kind, ())) == 1:
                stat.group = next(iter(by_kind[stat.kind]))
        out.append(copy)
    return out


def world_size(digests: list, ranks: list[int], groups: list[dict]) -> tuple[int, str]:
    """(the job's world size, where it comes from): the largest any rank's files give, and at least
    every rank and group member seen + 1 (-1 when nothing says)."""
    best, source = -1, ""
    for digest in digests:
        w = digest.window
        if w.world_size > best:
            best = w.world_size
            source = w.environment.get("world_size_source", "") or ("the window's files" if w.world_size > 0 else "")
    seen = [r for r in ranks if r >= 0] + [r for g in groups for r in g["ranks"]]
    if seen and max(seen) + 1 > best:
        best, source = max(seen) + 1, "the ranks and group members seen (at least)"
    return best, source


def _short(group: str) -> str:
    """A long number (HCCL's hash of the communicator) shortened; readable ids kept whole."""
    return f"{group[:4]}…{group[-4:]}" if group.isdigit() and len(group) > 12 else group


def _ranks_text(ranks: list[int]) -> str:
    ordered = sorted(ranks)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"ranks {ordered[0]}-{ordered[-1]}"
    return "ranks " + ",".join(str(r) for r in ordered)


def group_label(g: pb.CommGroup) -> str:
    """What views show for a communicator instead of its raw id (a 20-digit hash on HCCL): its name,
    else the ranks it holds, else how many ranks the matrix links, with the end of its id."""
    if g.name and g.name != g.group:
        return f"{g.name} ({_ranks_text(list(g.ranks))})" if g.ranks else g.name
    if g.ranks:
        return f"{_ranks_text(list(g.ranks))} ({_short(g.group)})"
    if g.members > 0:
        return f"{g.members} ranks ({_short(g.group)})"
    return _short(g.group)
