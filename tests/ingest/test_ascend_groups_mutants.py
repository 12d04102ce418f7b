"""ingest/ascend/groups.py under mutation: msprof-analyze's communication_group.json into comm_groups and the
world size, on small hand-made files; every value worked out by hand."""
from __future__ import annotations

import json
import os

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend.groups import read_group_file
from canning_tb.ingest.table import EventTable

REL = "cluster_analysis_output/communication_group.json"


def _write(run, obj) -> str:
    path = os.path.join(run, "cluster_analysis_output", "communication_group.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def _groups(t):
    return list(side.rows(t.side, "comm_groups"))


def test_records_and_rank_sets(tmp_path):
    """Two records (one without a name is skipped, a non-object skipped): ranks sorted with the bad ones
    dropped ([3, 1, '2', 'x'] -> 1,2,3), this rank 2's index 1 in them; pg_name None is ''. The world
    size: the largest rank of any set + 1 (p2p's '7' -> 8)."""
    path = _write(tmp_path, {"comm_group_parallel_info": [
        {"group_name": "hccl_1", "rank_set": [3, 1, "2", "x"], "pg_name": "tp", "group_id": "11"},
        {"group_name": "", "rank_set": [0, 9]},
        "not a record",
        {"group_name": "hccl_2", "rank_set": [0, 4], "pg_name": None, "group_id": None}],
        "collective": [[0, 1, 2, 3]], "p2p": [[6, "7"], "not a list"]})
    t, used = EventTable(), []
    t.meta.rank = 2
    read_group_file(str(tmp_path), t, used)
    assert used == [path]
    assert _groups(t) == [{"group": "hccl_1", "name": "tp", "rank_in_group": 1, "ranks": "1,2,3"},
                          {"group": "hccl_2", "name": "", "rank_in_group": None, "ranks": "0,4"}]
    assert t.meta.world_size == 8
    assert t.meta.environment == {"source.comm_groups": REL, "world_size": "8", "world_size_source": REL}


def test_rank_zero_and_2023_lists(tmp_path):
    """Rank 0 (the default) is index 0 of 0,5; the 2023 file (only the rank-set lists) gives only the world
    size: collective [[0, 5]], p2p [[2, 9]] -> 10."""
    _write(tmp_path / "a", {"comm_group_parallel_info": [{"group_name": "h", "rank_set": [5, 0]}]})
    t = EventTable()
    read_group_file(str(tmp_path / "a"), t, [])
    assert _groups(t) == [{"group": "h", "name": "", "rank_in_group": 0, "ranks": "0,5"}]
    assert t.meta.world_size == 6
    _write(tmp_path / "b", {"collective": [[0, 5]], "p2p": [[2, 9]], "comm_group_parallel_info": {"x": 1}})
    t = EventTable()
    read_group_file(str(tmp_path / "b"), t, [])
    assert _groups(t) == [] and "source.comm_groups" not in t.meta.environment
    assert t.meta.world_size == 10 and t.meta.environment["world_size_source"] == REL


def test_known_communicators_are_kept(tmp_path):
    """profiler_metadata's rows stay as they are and first; a record whose HCCL id or group_id is already
    known (as a group or a name) is not added; the sources are joined by ' + '."""
    _write(tmp_path, {"comm_group_parallel_info": [
        {"group_name": "hccl_a", "rank_set": [0, 1], "group_id": "11"},  # its group_id is a known group
        {"group_name": "dp", "rank_set": [0, 1]},  # a known name
        {"group_name": "hccl_b", "rank_set": [0, 1], "group_id": "tp"},  # group_id is a known name
        {"group_name": "hccl_c", "rank_set": [1, 3], "group_id": "33", "pg_name": "pp"}]})
    t = EventTable()
    t.meta.rank = 3
    known = [side.row("comm_groups", group="11", name="tp", rank_in_group=0, ranks="0,1"),
             side.row("comm_groups", group="22", name="dp", rank_in_group=0, ranks="0,1")]
    side.put(t.side, "comm_groups", known)
    t.meta.environment["source.comm_groups"] = "profiler_metadata.json"
    read_group_file(str(tmp_path), t, [])
    assert _groups(t) == known + [{"group": "hccl_c", "name": "pp", "rank_in_group": 1, "ranks": "1,3"}]
    assert t.meta.environment["source.comm_groups"] == "profiler_metadata.json + " + REL


def test_nothing_new_keeps_the_source(tmp_path):
    """Every record already known: the source stays profiler_metadata.json alone."""
    _write(tmp_path, {"comm_group_parallel_info": [{"group_name": "11", "rank_set": [0, 1]}]})
    t = EventTable()
    known = [side.row("comm_groups", group="11", name="tp", rank_in_group=0, ranks="0,1")]
    side.put(t.side, "comm_groups", known)
    t.meta.environment["source.comm_groups"] = "profiler_metadata.json"
    read_group_file(str(tmp_path), t, [])
    assert _groups(t) == known
    assert t.meta.environment["source.comm_groups"] == "profiler_metadata.json"


def test_world_size_rules(tmp_path):
    """A declared world size is never overruled (even by a larger set); a larger implied size replaces a
    lower bound; an equal or smaller one changes nothing."""
    _write(tmp_path, {"collective": [[0, 1, 2, 3]]})  # implies 4
    for size, source, want, env_size in ((2, "profiler_metadata", 2, "2"),
                                         (2, "communication_matrix ranks", 4, "4"),
                                         (4, None, 4, None), (6, None, 6, None)):
        t = EventTable()
        t.meta.world_size = size
        if source:
            t.meta.environment.update(world_size=str(size), world_size_source=source)
        read_group_file(str(tmp_path), t, [])
        assert t.meta.world_size == want, (size, source)
        assert t.meta.environment.get("world_size") == env_size, (size, source)


def test_no_or_bad_file(tmp_path):
    """No file: nothing used; a broken file: a problem, no group, no world size; a folder of that name: none."""
    t, used = EventTable(), []
    read_group_file(str(tmp_path), t, used)
    assert used == [] and t.meta.environment == {} and t.problems == []
    path = _write(tmp_path / "b", "{")
    t, used = EventTable(), []
    read_group_file(str(tmp_path / "b"), t, used)
    assert used == [path] and [p.file for p in t.problems] == [REL]
    assert _groups(t) == [] and t.meta.environment == {} and t.meta.world_size == 1
    os.makedirs(tmp_path / "c" / REL)
    t, used = EventTable(), []
    read_group_file(str(tmp_path / "c"), t, used)
    assert used == [] and t.problems == []


def test_empty_rank_sets(tmp_path):
    """Records with no rank_set and empty lists: rows with no ranks, no world size."""
    _write(tmp_path, {"comm_group_parallel_info": [{"group_name": "h", "rank_set": None}], "collective": [[]],
                      "p2p": None})
    t = EventTable()
    read_group_file(str(tmp_path), t, [])
    assert _groups(t) == [{"group": "h", "name": "", "rank_in_group": None, "ranks": ""}]
    assert t.meta.world_size == 1 and "world_size" not in t.meta.environment


def test_a_record_without_group_id_is_never_known_by_it(tmp_path):
    """A record with no group_id (or a null one) is matched only by its HCCL id: a known communicator of
    any name ('XXXX', '', 'None') does not hide it."""
    _write(tmp_path, {"comm_group_parallel_info": [{"group_name": "h1", "rank_set": [0]},
                                                   {"group_name": "h2", "rank_set": [0], "group_id": None}]})
    for name in ("XXXX", "", "None"):
        t = EventTable()
        known = [side.row("comm_groups", group="g", name=name, rank_in_group=0, ranks="0")]
        side.put(t.side, "comm_groups", known)
        read_group_file(str(tmp_path), t, [])
        assert [g["group"] for g in _groups(t)] == ["g", "h1", "h2"], name
