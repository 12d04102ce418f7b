"""Communication figures CANN measured itself (Ascend), added to the digest's communication section.

- Per collective (kind, group): transfer = sum of CANN's transit times of its calls, wait = sum of
  its wait times, synchronization likewise, each unknown (-1) where a call's is; transit_bytes = the
  bytes CANN saw on the links (SDMA + RDMA, analysis/cann.py), bandwidth = transit bytes / their
  link time; `source` names the file.
  When the events give no payload size (kernel_details.csv without the trace, communication.json
  alone), `bytes` is the transit bytes too (`source` says so).
- Per call: the CANN figures of the operator of the same name; seq = HCCL's index of the call in
  its communicator (from the name), else its order in the group; comm_type "p2p" for what CANN
  files under p2p and for Send / Recv, else "collective".
- A window whose events hold no communication but whose communication.json does (analysis-off
  exports, kernel list missing) gets its collectives and calls from CANN alone.
- Links: per communicator, the communication matrix rows CANN summed over the step ("-total");
  without them the per-call rows (2023's layout, whose "Total Op Info" names no communicator and is
  used only where no per-call row is there); never both, never CANN's top/middle/bottom slices;
  src / dst stay as the file numbers them, inside their communicator (`numbering`).
"""
from __future__ import annotations

from collections import defaultdict

from ...ingest import side_tables as side
from ...ingest.table import EventTable
from .. import digest_pb2 as pb
from ..cann import CannCall, cann_calls, hccl_seq, source_of
from ..common import collective_kind
from .groups import declared_id, group_label

P2P_KINDS = ("Send", "Recv")


def comm_type(kind: str, cann: CannCall | None = None) -> str:
    if cann is not None and cann.comm_type == "p2p":
        return "p2p"
    return "p2p" if kind in P2P_KINDS else "collective"


def known_sum(values) -> int:
    """Sum of CANN figures, -1 (unknown) if any is: a file without a transfer time says nothing of it,
    and a sum of the known ones would read as the whole (a collective that moved data, "0.000")."""
    values = list(values)
    return sum(values) if values and min(values) >= 0 else -1


def add_cann_figures(stat: pb.CollectiveStat, ops: list[str], calls: dict[str, CannCall], source: str) -> None:
    """Fill a collective's CANN figures from its calls' op names (each name once)."""
    found = [calls[o] for o in dict.fromkeys(ops) if o in calls]
    stat.comm_type = comm_type(stat.kind, found[0] if found else None)
    stat.synchronization_ns, stat.transit_bytes = -1, -1
    if not found:
        return
    stat.source = source
    stat.transfer_ns = known_sum(c.transit_ns for c in found)
    stat.wait_ns = known_sum(c.wait_ns for c in found)
    stat.synchronization_ns = known_sum(c.synchronization_ns for c in found)
    moved = [c for c in found if c.transit_bytes >= 0]
    if moved:
        stat.transit_bytes = sum(c.transit_bytes for c in moved)
        if stat.bytes < 0:  # no payload size in the events: what CANN saw moving is the best figure
            stat.bytes = stat.transit_bytes
        link_ns = sum(c.link_time_ns for c in moved)
        if link_ns > 0:
            stat.bandwidth_gbps = stat.transit_bytes / link_ns


def add_call_figures(call: pb.CommCall, op: str, calls: dict[str, CannCall]) -> None:
    cann = calls.get(op)
    call.op = op
    call.seq = hccl_seq(op)
    call.comm_type = comm_type(call.kind, cann)
    if call.bytes < 0 and cann is not None and cann.transit_bytes >= 0:  # no payload in the events: CANN's bytes
        call.bytes = cann.transit_bytes
    call.wait_ns = cann.wait_ns if cann else -1
    call.transit_ns = cann.transit_ns if cann else -1
    call.synchronization_ns = cann.synchronization_ns if cann else -1


def number_unsequenced(c: pb.Communication) -> None:
    """Calls HCCL did not number get their order (by start) within their group."""
    seen: dict[str, int] = defaultdict(int)
    for call in sorted(c.calls, key=lambda x: x.start_ns):
        if call.seq < 0:
            call.seq = seen[call.group]
        seen[call.group] = max(seen[call.group], call.seq) + 1


def totals(c: pb.Communication) -> None:
    """Window totals of the CANN figures over its collectives."""
    measured = [s for s in c.collectives if s.source]
    if not measured:
        c.synchronization_ns, c.p2p_wait_ns = -1, -1
        return
    c.source = measured[0].source
    c.transfer_ns = known_sum(s.transfer_ns for s in measured)
    c.wait_ns = known_sum(s.wait_ns for s in measured)
    c.synchronization_ns = known_sum(s.synchronization_ns for s in measured)
    p2p = [s.wait_ns for s in measured if s.comm_type == "p2p"]
    c.p2p_wait_ns = known_sum(p2p) if p2p else 0


def collectives_from_cann(table: EventTable, c: pb.Communication) -> None:
    """Collectives and calls of a window whose events hold no communication."""
    calls = cann_calls(table)
    source = source_of(table, "comm_ops")
    groups: dict[tuple[str, str], list[CannCall]] = defaultdict(list)
    for cc in sorted(calls.values(), key=lambda x: x.start_ns):
        groups[(collective_kind(cc.op), cc.group)].append(cc)
        call = c.calls.add(kind=collective_kind(cc.op), group=cc.group, start_ns=cc.start_ns, dur_ns=cc.elapse_ns,
                           bytes=-1, step=cc.step)
        add_call_figures(call, cc.op, calls)
    for (kind, group), members in groups.items():
        durs = [m.elapse_ns for m in members]
        stat = c.collectives.add(kind=kind, group=group, calls=len(members), total_ns=sum(durs), min_ns=min(durs),
                                 max_ns=max(durs), bytes=-1, bandwidth_gbps=-1.0, wait_ns=-1, transfer_ns=-1)
        add_cann_figures(stat, [m.op for m in members], calls, source)
    c.collectives.sort(key=lambda s: (-s.total_ns, s.kind, s.group))


def add_calls_only_cann_has(c: pb.Communication, calls: dict[str, CannCall], source: str) -> None:
    """The calls communication.json holds that the events lack (module doc), into the calls and the
    collectives of their (kind, group), whose CANN figures are then taken over all their calls."""
    have = {call.op for call in c.calls}
    missing = sorted((cc for op, cc in calls.items() if op not in have), key=lambda x: x.start_ns)
    if not missing:
        return
    stats = {(s.kind, s.group): s for s in c.collectives}
    for cc in missing:
        kind = collective_kind(cc.op)
        call = c.calls.add(kind=kind, group=cc.group, start_ns=cc.start_ns, dur_ns=cc.elapse_ns, bytes=-1, step=cc.step)
        add_call_figures(call, cc.op, calls)
        stat = stats.get((kind, cc.group))
        if stat is None:
            stat = stats[(kind, cc.group)] = c.collectives.add(kind=kind, group=cc.group, min_ns=cc.elapse_ns,
                                                               bytes=-1, bandwidth_gbps=-1.0)
        stat.calls += 1
        stat.total_ns += cc.elapse_ns
        stat.min_ns, stat.max_ns = min(stat.min_ns, cc.elapse_ns), max(stat.max_ns, cc.elapse_ns)
    touched = {(collective_kind(cc.op), cc.group) for cc in missing}
    for key in touched:
        stat = stats[key]
        if stat.bytes >= 0 and stat.source == "":  # payload sizes of some calls only: not the whole
            stat.bytes = -1
        add_cann_figures(stat, [x.op for x in c.calls if (x.kind, x.group) == key], calls, source)
    sorted_stats = sorted(c.collectives, key=lambda s: (-s.total_ns, s.kind, s.group))
    del c.collectives[:]
    c.collectives.extend(sorted_stats)
    c.calls.sort(key=lambda x: x.start_ns)


def _chosen_links(rows: list[dict]) -> list[dict]:
    """Per (step, kind, communicator): CANN's sums over the step where it wrote them, else the per-call
    cells; a sum that names no communicator (2023's "Total Op Info") only where no per-call cell is there."""
    def key(r):
        return (r["step"], r["kind"], r["group"] or "")
    total = {key(r) for r in rows if r["aggregate"] == "total"}
    per_call = {(r["step"], r["kind"]) for r in rows if r["aggregate"] == "" and r["group"]}
    out = []
    for r in rows:
        k = key(r)
        if r["aggregate"] == "total":
            if k[2] or (k[0], k[1]) not in per_call:
                out.append(r)
        elif r["aggregate"] == "" and k not in total:
            out.append(r)
    return out


def links(table: EventTable) -> list:
    """The matrix cells of the window (`_chosen_links`: never a sum and its parts, never CANN's
    top / middle / bottom slices); src / dst as the file numbers them (inside the communicator)."""
    return [pb.Link(src=-1 if r["src"] is None else r["src"], dst=-1 if r["dst"] is None else r["dst"],
                    transport=r["transport"] or "", bytes=r["bytes"] or 0, time_ns=r["time_ns"] or 0,
                    bandwidth_gbps=r["bandwidth_gbps"] or 0.0, op=r["op"] or r["link"] or "",
                    group=r["group"] or "", numbering="communicator")
            for r in _chosen_links(side.rows(table.side, "comm_matrix"))]


def groups(table: EventTable, called: list[str]) -> list:
    """The communicators the files declare, and those the calls name (`called`) that no file declares,
    with how many ranks the communication matrix links in each; every one with its `label`."""
    source = table.meta.environment.get("source.comm_groups", "")
    linked: dict[str, set] = defaultdict(set)
    for link in side.rows(table.side, "comm_matrix"):
        linked[link["group"] or ""].update(x for x in (link["src"], link["dst"]) if x is not None)
    seen = set(called) | set(linked)
    out = []
    for g in side.rows(table.side, "comm_groups"):
        group = declared_id(g["group"], seen)
        out.append(pb.CommGroup(group=group, name=g["name"] or "", ranks=[int(x) for x in g["ranks"].split(",") if x],
                                rank_in_group=-1 if g["rank_in_group"] is None else g["rank_in_group"], source=source,
                                comm_name=g["group"] if group != g["group"] else ""))
    declared = {g.group for g in out}
    matrix_source = source_of(table, "comm_matrix") or "communication matrix"
    for group in dict.fromkeys(called):
        if group and group not in declared:
            out.append(pb.CommGroup(group=group, rank_in_group=-1, source=matrix_source if linked.get(group) else ""))
    for g in out:
        g.members = len(g.ranks) or len(linked.get(g.group, ())) or -1
        g.label = group_label(g)
    return out
