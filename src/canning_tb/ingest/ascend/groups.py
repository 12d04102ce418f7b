"""The job's communicators from msprof-analyze's communication_group.json, and the world size they imply.

msprof-analyze's cluster analysis writes `cluster_analysis_output/communication_group.json` into the
run folder: `{"collective": [[ranks]], "p2p": [[ranks]], "comm_group_parallel_info": [{type, rank_set,
group_name, group_id, pg_name}]}` (2023 versions: only the two rank-set lists). `group_name` is the
HCCL id communication.json names (`op@group_name`), `group_id` the communicator name torch_npu's
profiler_metadata.json keys `parallel_group_info` by, `rank_set` the sorted global ranks.

Each record becomes a `comm_groups` row (communicators profiler_metadata.json already declared are kept
as they are, with their group order). The world size: the job has every rank any group holds, so it is
at least the largest of them + 1; it replaces a smaller figure that was only a lower bound (the ranks
the communication matrix links, numbered inside their communicator), never a declared one
(distributed_args.world_size).
"""
from __future__ import annotations

import os

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import EventTable

from .csv.rows import to_int
from .tables import read_json_dict

GROUP_FILE = os.path.join("cluster_analysis_output", "communication_group.json")
DECLARED_WORLD = ("profiler_metadata",)  # world_size_source values a group file does not overrule


def _records(data: dict) -> list[dict]:
    """(group, name, ranks) of each communicator the file lists."""
    out = []
    info = data.get("comm_group_parallel_info")
    for rec in info if isinstance(info, list) else ():
        if isinstance(rec, dict) and rec.get("group_name"):
            ranks = sorted(r for r in (to_int(x) for x in rec.get("rank_set") or ()) if r is not None)
            name = str(rec.get("pg_name") or "")
            out.append({"group": str(rec["group_name"]), "name": name, "ranks": ranks,
                        "comm_name": str(rec.get("group_id") or "")})
    return out


def _all_rank_sets(data: dict) -> list[list[int]]:
    sets = [r["ranks"] for r in _records(data)]
    for key in ("collective", "p2p"):
        for ranks in data.get(key) or ():
            if isinstance(ranks, list):
                sets.append([r for r in (to_int(x) for x in ranks) if r is not None])
    return sets


def read_group_file(run_folder: str, table: EventTable, used: list[str]) -> None:
    """communication_group.json of the run folder (module doc) into comm_groups and the world size."""
    path = os.path.join(run_folder, GROUP_FILE)
    if not os.path.isfile(path):
        return
    used.append(path)
    data = read_json_dict(path, GROUP_FILE, table.problems) or {}
    rows = list(side.rows(table.side, "comm_groups"))
    known = {g["group"] for g in rows} | {g["name"] for g in rows}
    rank = table.meta.rank
    for rec in _records(data):
        if rec["group"] in known or (rec["comm_name"] and rec["comm_name"] in known):
            continue
        rows.append(side.row("comm_groups", group=rec["group"], name=rec["name"],
                             rank_in_group=rec["ranks"].index(rank) if rank in rec["ranks"] else None,
                             ranks=",".join(map(str, rec["ranks"]))))
    added = len(rows) > len(side.rows(table.side, "comm_groups"))
    side.put(table.side, "comm_groups", rows)
    env = table.meta.environment
    if added:
        env["source.comm_groups"] = " + ".join(x for x in (env.get("source.comm_groups"), GROUP_FILE) if x)
    _world_size(table, _all_rank_sets(data))


def _world_size(table: EventTable, rank_sets: list[list[int]]) -> None:
    ranks = [r for s in rank_sets for r in s]
    env = table.meta.environment
    if not ranks or env.get("world_size_source") in DECLARED_WORLD:
        return
    implied = max(ranks) + 1
    if implied > table.meta.world_size:
        table.meta.world_size = implied
        env["world_size"] = str(implied)
        env["world_size_source"] = GROUP_FILE
