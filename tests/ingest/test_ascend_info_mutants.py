"""ingest/ascend/info.py under mutation: profiler_info / profiler_metadata / CANN's device info.json and what
the data says of the rank and world size, on small hand-made files; every value worked out by hand."""
from __future__ import annotations

import json
import os

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend.info import (apply_info, apply_metadata, device_facts, info_files, rank_from_data,
                                           read_device_info, read_info, set_devices, worker_of)
from canning_tb.ingest.table import NONE, EventTable, Meta


def _write(path, obj) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def test_worker_of():
    """The name before '[_pid]_<timestamp>_ascend_pt|ms': the shortest head, the last number dropped."""
    assert worker_of("host_123_20240101120000123_ascend_pt") == "host_123"
    assert worker_of("rank0_ascend_pt") == "rank0"
    assert worker_of("w_1.5_ascend_ms") == "w"
    assert worker_of("_5_ascend_pt") == "_5_ascend_pt"  # nothing before the number: the name itself
    assert worker_of("a_ascend_pt_b") == "a_ascend_pt_b"
    assert worker_of("plain") == "plain"


def test_info_files(tmp_path):
    """profiler_info.json and profiler_info_N.json, sorted ('.' before '_'), in a folder whose name
    holds glob characters; other names are not info files."""
    d = tmp_path / "w[1]*_ascend_pt"
    for n in ("profiler_info_3.json", "profiler_info.json", "profiler_info_x.json", "profiler_info_3.json.bak",
              "xprofiler_info.json"):
        _write(d / n, {})
    assert [os.path.basename(p) for p in info_files(str(d))] == ["profiler_info.json", "profiler_info_3.json"]
    (tmp_path / "w1x_ascend_pt").mkdir()  # what the unescaped pattern would also match
    _write(tmp_path / "w1x_ascend_pt" / "profiler_info_9.json", {})
    assert len(info_files(str(d))) == 2


def test_apply_info_config_versions_and_window():
    """rank_id, versions, the config flattened (leading '_' dropped, the common/experimental prefixes
    dropped, lists joined by ',', None as ''), and the window from collectionTimeBegin/End."""
    meta = Meta()
    info = {"rank_id": "5", "torch_npu_version": "2.1.0", "cann_version": 8, "extra": None,
            "config": {"common_config": {"activities": ["CPU", "NPU"], "schedule": {"wait": 0}, "with_stack": True},
                       "experimental_config": {"_profiler_level": "Level1", "_gc": None}, "_top": 1, 7: "n"},
            "start_info": {"collectionTimeBegin": "100"}, "end_info": {"collectionTimeEnd": 900}}
    apply_info(info, None, meta)
    assert meta.rank == 5
    assert (meta.start_ns, meta.end_ns) == (100, 900)
    assert meta.environment == {
        "rank_source": "profiler_info", "torch_npu_version": "2.1.0", "cann_version": "8",
        "profiler.activities": "CPU,NPU", "profiler.schedule.wait": "0", "profiler.with_stack": "True",
        "profiler.profiler_level": "Level1", "profiler.gc": "", "profiler.top": "1", "profiler.7": "n"}


def test_apply_info_tuple_and_torch_version_only():
    """A tuple is joined like a list; cann_version None is left out; only leading '_' are dropped
    ('_Xy' is 'Xy', 'X_z' stays)."""
    meta = Meta()
    apply_info({"torch_npu_version": 2, "cann_version": None,
                "config": {"t": (1, 2), "d": {"_e": {"f": "g", "_Xy": 1}}, "X_z": 2}}, None, meta)
    assert meta.environment == {"rank_source": "profiler_info", "torch_npu_version": "2",
                                "profiler.t": "1,2", "profiler.d.e.f": "g", "profiler.d.e.Xy": "1",
                                "profiler.X_z": "2"}


def test_apply_info_config_not_a_map():
    """A config that is a list or a scalar is one value under the key 'profiler.config' ('a,b'; '3'), not a bare
    'profiler.'."""
    for config, want in ((["a", "b"], "a,b"), (3, "3")):
        meta = Meta()
        apply_info({"config": config}, None, meta)
        assert meta.environment == {"rank_source": "profiler_info", "profiler.config": want}


def test_apply_info_rank_rules():
    """rank_id wins (0 included); a negative or missing one gives the file name's N; neither: unchanged."""
    for info, from_name, want in (({"rank_id": 0}, 3, 0), ({"rank_id": -1}, 3, 3), ({}, 3, 3),
                                  ({"rank_id": "x"}, 3, 3), ({"rank_id": -1}, None, 7)):
        meta = Meta(rank=7)
        apply_info(info, from_name, meta)
        assert meta.rank == want, info


def test_window_from_monotonic_clocks():
    """No collectionTimeBegin: begin = end - (MonotonicTimeEnd - start_monotonic), when that is >= 0."""
    cases = [({"start_monotonic": 1000}, {"MonotonicTimeEnd": 1500}, 10000 - 500),
             ({"start_monotonic": 1000}, {"MonotonicTimeEnd": 1000}, 10000),  # equal clocks: begin == end
             ({"start_monotonic": 1001}, {"MonotonicTimeEnd": 1000}, NONE),  # backwards: no begin
             ({"start_monotonic": 1000}, {}, NONE),
             ({}, {"MonotonicTimeEnd": 1000}, NONE)]
    for start, end, want in cases:
        meta = Meta()
        apply_info({"start_info": start, "end_info": dict(end, collectionTimeEnd=10000)}, None, meta)
        assert (meta.start_ns, meta.end_ns) == (want, 10000), (start, end)


def test_window_needs_an_end():
    """No collectionTimeEnd (or a null end_info / start_info): neither end is set."""
    for info in ({"start_info": {"collectionTimeBegin": 5}, "end_info": {}},
                 {"start_info": {"collectionTimeBegin": 5}, "end_info": None},
                 {"start_info": {"collectionTimeBegin": 5}}):
        meta = Meta()
        apply_info(info, None, meta)
        assert (meta.start_ns, meta.end_ns) == (NONE, NONE)
    meta = Meta()
    apply_info({"start_info": None, "end_info": {"collectionTimeEnd": 9}}, None, meta)
    assert (meta.start_ns, meta.end_ns) == (NONE, 9)


def test_read_info_takes_the_first_info_file(tmp_path):
    """profiler_info.json sorts before profiler_info_2.json: it is read (no rank in its name), and only it."""
    d = tmp_path / "w_ascend_pt"
    a = _write(d / "profiler_info.json", {"rank_id": 4})
    _write(d / "profiler_info_2.json", {"rank_id": 6})
    t, used = EventTable(), []
    read_info(str(d), t, used)
    assert used == [a] and t.meta.rank == 4
    assert t.meta.environment == {"rank_source": "profiler_info"}


def test_read_info_rank_from_the_name(tmp_path):
    """profiler_info_3.json without rank_id: rank 3."""
    d = tmp_path / "w"
    _write(d / "profiler_info_3.json", {"cann_version": "8.0"})
    t, used = EventTable(), []
    read_info(str(d), t, used)
    assert t.meta.rank == 3 and t.meta.environment["rank_source"] == "profiler_info"


def test_read_info_unreadable_file_keeps_the_name_rank(tmp_path):
    """A broken, a non-object and an empty profiler_info_N.json: the rank from the name, said so; the broken
    one is a problem named '<folder>/<file>'."""
    for body, problems in (("{broken", 1), ("[1]", 1), ("{}", 0)):
        d = tmp_path / f"w{problems}{len(body)}"
        p = _write(d / "profiler_info_4.json", body)
        t, used = EventTable(), []
        read_info(str(d), t, used)
        assert used == [p]
        assert t.meta.rank == 4
        assert t.meta.environment == {"rank_source": "profiler_info file name"}
        assert [x.file for x in t.problems] == [f"{d.name}/profiler_info_4.json"] * problems


def test_read_info_unreadable_file_without_rank(tmp_path):
    """A broken profiler_info.json (no N): the rank is not touched, no source said."""
    d = tmp_path / "w"
    _write(d / "profiler_info.json", "{broken")
    t = EventTable()
    t.meta.rank = 9
    read_info(str(d), t, [])
    assert t.meta.rank == 9 and t.meta.environment == {}


def test_read_info_reads_the_metadata(tmp_path):
    """profiler_metadata.json beside profiler_info: its distributed_args; the info's rank wins; used lists
    both in order. A broken metadata file is a problem named '<folder>/profiler_metadata.json'."""
    d = tmp_path / "w"
    i = _write(d / "profiler_info_1.json", {"rank_id": 1})
    m = _write(d / "profiler_metadata.json", {"distributed_args": {"rank": 3, "world_size": 4}})
    t, used = EventTable(), []
    read_info(str(d), t, used)
    assert used == [i, m]
    assert (t.meta.rank, t.meta.world_size) == (1, 4)
    assert t.meta.environment["distributed.rank"] == "3"
    d2 = tmp_path / "v"
    m2 = _write(d2 / "profiler_metadata.json", "{")
    t, used = EventTable(), []
    read_info(str(d2), t, used)
    assert used == [m2] and [x.file for x in t.problems] == ["v/profiler_metadata.json"]
    assert t.meta.environment == {}
    os.makedirs(d2 / "x" / "profiler_metadata.json")  # a folder of that name is no file
    t, used = EventTable(), []
    read_info(str(d2 / "x"), t, used)
    assert used == [] and t.problems == []


def test_apply_metadata_in_full():
    """ENV_VARIABLES (None as ''), distributed_args, the communicators (non-dict entries skipped, bad
    ranks dropped, the group's own name else its key), the declared world size, the other keys as JSON."""
    t = EventTable()
    md = {"ENV_VARIABLES": {"A": "1", "B": None, 3: 4},
          "distributed_args": {"rank": 2, "world_size": 4, "backend": "hccl"},
          "parallel_group_info": {"g1": {"group_name": "dp", "group_rank": "1", "global_ranks": [0, "2", "x", None]},
                                  "g2": "bad",
                                  "g3": {"global_ranks": None}},
          "other": {"a": [1]}, "s": "text"}
    apply_metadata(md, t)
    assert (t.meta.rank, t.meta.world_size) == (2, 4)
    assert t.meta.environment == {
        "env.A": "1", "env.B": "", "env.3": "4",
        "distributed.rank": "2", "distributed.world_size": "4", "distributed.backend": "hccl",
        "rank_source": "profiler_metadata",
        "source.comm_groups": "profiler_metadata.json", "parallel_groups": "dp:2,g3:0",
        "world_size": "4", "world_size_source": "profiler_metadata",
        "metadata.other": '{"a": [1]}', "metadata.s": "text"}
    assert list(side.rows(t.side, "comm_groups")) == [
        {"group": "g1", "name": "dp", "rank_in_group": 1, "ranks": "0,2"},
        {"group": "g3", "name": "g3", "rank_in_group": None, "ranks": ""}]


def test_apply_metadata_world_from_the_groups():
    """No world_size declared: the largest global rank of the groups + 1 (5 + 1 = 6), said to come from
    them; a rank already known from profiler_info is kept; rank 0 of distributed_args is a rank."""
    t = EventTable()
    t.meta.rank, t.meta.environment["rank_source"] = 1, "profiler_info"
    apply_metadata({"distributed_args": {"rank": 3},
                    "parallel_group_info": {"a": {"global_ranks": [5, 0]}, "b": {"global_ranks": [1]}}}, t)
    assert (t.meta.rank, t.meta.world_size) == (1, 6)
    assert t.meta.environment["world_size"] == "6"
    assert t.meta.environment["world_size_source"] == "parallel groups"
    assert t.meta.environment["parallel_groups"] == "a:2,b:1"
    t = EventTable()
    t.meta.rank = 5
    apply_metadata({"distributed_args": {"rank": 0}}, t)
    assert t.meta.rank == 0 and t.meta.environment["rank_source"] == "profiler_metadata"
    assert "world_size" not in t.meta.environment


def test_apply_metadata_declared_world_wins_over_the_groups():
    """world_size 2 declared, groups up to rank 7: the declared 2."""
    t = EventTable()
    apply_metadata({"distributed_args": {"world_size": "2"},
                    "parallel_group_info": {"a": {"global_ranks": [7]}}}, t)
    assert t.meta.world_size == 2
    assert t.meta.environment["world_size_source"] == "profiler_metadata"


def test_apply_metadata_odd_values():
    """A negative rank is none; world size 0 is none (left at its default 1); distributed_args that is
    not an object is skipped and the groups give the world size; an empty group map writes no table."""
    t = EventTable()
    apply_metadata({"distributed_args": {"rank": -1, "world_size": 0}, "parallel_group_info": {}}, t)
    assert (t.meta.rank, t.meta.world_size) == (0, 1)
    assert "rank_source" not in t.meta.environment and "world_size" not in t.meta.environment
    assert "comm_groups" not in t.side and "parallel_groups" not in t.meta.environment
    t = EventTable()
    apply_metadata({"distributed_args": [1, 2], "parallel_group_info": {"a": {"global_ranks": [1]}}}, t)
    assert t.meta.world_size == 2
    assert t.meta.environment["world_size_source"] == "parallel groups"
    assert not any(k.startswith("distributed.") for k in t.meta.environment)
    t = EventTable()
    apply_metadata({"parallel_group_info": {"a": "x"}}, t)  # no group is an object: no rows, no world size
    assert "comm_groups" not in t.side and t.meta.world_size == 1
    assert "source.comm_groups" not in t.meta.environment


def test_apply_metadata_world_of_one_and_odd_groups():
    """A declared world size of 1 is said (a single-card job); parallel_group_info that is a list, not a
    map, is no group."""
    t = EventTable()
    apply_metadata({"distributed_args": {"world_size": 1}, "parallel_group_info": [{"global_ranks": [3]}]}, t)
    assert t.meta.world_size == 1
    assert t.meta.environment["world_size"] == "1"
    assert t.meta.environment["world_size_source"] == "profiler_metadata"
    assert "comm_groups" not in t.side
    assert "metadata.parallel_group_info" not in t.meta.environment


def test_apply_metadata_long_values():
    """A text value is kept whole; any other value is its JSON, cut at 4,096 characters."""
    t = EventTable()
    apply_metadata({"s": "x" * 5000, "l": ["y" * 5000], "n": None}, t)
    env = t.meta.environment
    assert env["metadata.s"] == "x" * 5000
    assert env["metadata.l"] == '["' + "y" * 4094  # 2 characters of JSON, then 4,094 of the text
    assert env["metadata.n"] == "null"


def _device_info(path, cores, mhz):
    return _write(path, {"DeviceInfo": [{"ai_core_num": cores, "aic_frequency": mhz}]})


def test_read_device_info(tmp_path):
    """PROF_*/device_*/info.json.N in sorted order (the later one's figures stay); PROF_ names only,
    folders only; info.json.N with 1 to 3 digits only."""
    a = _device_info(tmp_path / "PROF_1" / "device_0" / "info.json.0", 20, "1800")
    b = _device_info(tmp_path / "PROF_2" / "device_1" / "info.json.123", 24, 1850)
    _device_info(tmp_path / "PROF_2" / "device_1" / "info.json.1234", 99, 99)
    _device_info(tmp_path / "PROF_2" / "device_1" / "info.json.", 99, 99)
    _device_info(tmp_path / "PROF_2" / "device_1" / "xinfo.json.1", 99, 99)
    _device_info(tmp_path / "XPROF_3" / "device_0" / "info.json.0", 99, 99)
    _device_info(tmp_path / "PROF_2" / "host" / "info.json.0", 99, 99)
    _write(tmp_path / "PROF_2" / "device_9", "a file")
    _write(tmp_path / "PROF_0", "a file")
    t, used = EventTable(), []
    read_device_info(str(tmp_path), t, used)
    assert used == [a, b]
    assert t.meta.environment == {"npu.ai_core_num": "24", "npu.aic_frequency_mhz": "1850.0"}


def test_read_device_info_follows_no_linked_folder(tmp_path):
    """A PROF_ link to a folder is not read; a root that is no folder reads nothing."""
    real = tmp_path / "elsewhere"
    _device_info(real / "device_0" / "info.json.0", 20, 1800)
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(real, root / "PROF_1")
    t, used = EventTable(), []
    read_device_info(str(root), t, used)
    read_device_info(str(tmp_path / "missing"), t, used)
    assert used == [] and t.meta.environment == {}


def test_device_info_odd_files(tmp_path):
    """No DeviceInfo list, an empty one, a first entry that is no object: not used; 0 cores and a 0 MHz
    clock are not figures; a broken file is a problem named by its last three path parts."""
    bodies = [{"DeviceInfo": {"ai_core_num": 1}}, {"DeviceInfo": []}, {"DeviceInfo": [1, {"ai_core_num": 1}]}, "{"]
    for i, body in enumerate(bodies):
        _write(tmp_path / f"PROF_{i}" / "device_0" / "info.json.0", body)
    t, used = EventTable(), []
    read_device_info(str(tmp_path), t, used)
    assert used == [] and t.meta.environment == {}
    assert [p.file for p in t.problems] == ["PROF_3/device_0/info.json.0"]
    z = _device_info(tmp_path / "PROF_9" / "device_0" / "info.json.0", 0, "0")
    t, used = EventTable(), []
    read_device_info(str(tmp_path), t, used)
    assert used == [z] and t.meta.environment == {}
    _device_info(tmp_path / "PROF_9" / "device_0" / "info.json.0", -2, -5)
    t = EventTable()
    read_device_info(str(tmp_path), t, [])
    assert t.meta.environment == {}
    _device_info(tmp_path / "PROF_9" / "device_0" / "info.json.0", 1, 0.5)
    t = EventTable()
    read_device_info(str(tmp_path), t, [])
    assert t.meta.environment == {"npu.ai_core_num": "1", "npu.aic_frequency_mhz": "0.5"}


def test_device_facts():
    """Each NPU device takes the figures it lacks; its own stay; other devices take none."""
    meta = Meta(devices=[{"kind": "npu", "index": 0}, {"kind": "npu", "index": 1, "ai_core_num": "8"},
                         {"kind": "cpu", "index": 0}],
                environment={"npu.ai_core_num": "24", "npu.aic_frequency_mhz": "1850.0"})
    device_facts(meta)
    assert meta.devices == [{"kind": "npu", "index": 0, "ai_core_num": "24", "aic_frequency_mhz": "1850.0"},
                            {"kind": "npu", "index": 1, "ai_core_num": "8", "aic_frequency_mhz": "1850.0"},
                            {"kind": "cpu", "index": 0}]
    meta = Meta(devices=[{"kind": "npu", "index": 0}], environment={"npu.aic_frequency_mhz": "1"})
    device_facts(meta)
    assert meta.devices == [{"kind": "npu", "index": 0, "aic_frequency_mhz": "1"}]


def test_set_devices():
    """New device indexes in order, named by npu_name (else 'Ascend'); known ones and NONE skipped."""
    meta = Meta(devices=[{"kind": "npu", "index": 1, "name": "old"}], environment={"npu_name": "Ascend910B"})
    set_devices(meta, {3, NONE, 1, 0})
    assert meta.devices == [{"kind": "npu", "index": 1, "name": "old"}, {"kind": "npu", "index": 0, "name": "Ascend910B"},
                            {"kind": "npu", "index": 3, "name": "Ascend910B"}]
    meta = Meta()
    set_devices(meta, {2})
    assert meta.devices == [{"kind": "npu", "index": 2, "name": "Ascend"}]


def _link(src, dst, group="g"):
    return side.row("comm_matrix", step=0, kind="collective", group=group, link="x", aggregate="", src=src, dst=dst,
                    transport="HCCS", bytes=1, time_ns=1, bandwidth_gbps=1.0, op="x")


def _table(links, groups=(), env=None):
    t = EventTable()
    side.put(t.side, "comm_matrix", links)
    side.put(t.side, "comm_groups", [side.row("comm_groups", group=g, name=g, rank_in_group=None, ranks=r)
                                     for g, r in groups])
    t.meta.environment.update(env or {})
    return t


def test_rank_from_data_world_and_self_link():
    """Links 0->3 and 1->1 in group g of global ranks 4,5,6,7: world >= 3 + 1 = 4; the self link says
    this rank is the group's index 1, global rank 5."""
    t = _table([_link(0, 3), _link(1, 1)], [("g", "4,5,6,7")])
    rank_from_data(t)
    assert (t.meta.rank, t.meta.world_size) == (5, 4)
    assert t.meta.environment == {"world_size": "4", "world_size_source": "communication_matrix ranks",
                                  "rank_source": "communication_matrix self link"}


def test_rank_from_data_local_index_when_no_group_holds_it():
    """Self link 2->2: group of 2 ranks (index 2 past it) or unknown group or a group without ranks: the
    rank is the local index 2; links with no ranks are skipped; the first self link decides."""
    for groups in ([("g", "4,5")], [("h", "0,1,2")], [("g", "")]):
        t = _table([_link(None, None), _link(2, 2), _link(1, 1)], groups)
        rank_from_data(t)
        assert t.meta.rank == 2, groups
        assert t.meta.world_size == 3
    t = _table([_link(0, 0), _link(2, 2)], [("g", "4,5,6")])
    rank_from_data(t)
    assert t.meta.rank == 4


def test_rank_from_data_says_nothing_it_does_not_know():
    """A declared world size and rank are kept; no link: the world size is unknown (-1), never 1; links
    only up to rank 0 (0 + 1 = 1, not above 1): unknown too."""
    t = _table([_link(0, 7), _link(1, 1)], [("g", "4,5")], {"world_size": "2", "rank_source": "profiler_info"})
    t.meta.world_size, t.meta.rank = 2, 0
    rank_from_data(t)
    assert (t.meta.rank, t.meta.world_size) == (0, 2)
    t = _table([])
    rank_from_data(t)
    assert (t.meta.rank, t.meta.world_size) == (0, -1)
    assert t.meta.environment == {}
    t = _table([_link(0, 0)])
    rank_from_data(t)
    assert t.meta.world_size == -1 and "world_size" not in t.meta.environment
    t = _table([_link(1, 0)])
    t.meta.world_size = 5  # not said by a file: the matrix's 2 is no news, still unknown
    rank_from_data(t)
    assert t.meta.world_size == -1
