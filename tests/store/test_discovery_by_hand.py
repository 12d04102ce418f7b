"""Discovery (store/discover.py, store/discover_ascend.py) on folders laid out by hand: which files make which
windows of which worker and rank, their ids, order and labels, what is never a window, and what each window
carries (files, steps, status, trigger, root). Every expected value is read off the layout written in the test
(issue 46: fast tests for a mutation run over the store's discovery)."""
import gzip
import importlib
import json
import os

import pytest

from canning_tb.store import discover_ascend as asc
from canning_tb.store.links import Policy

disc = importlib.import_module("canning_tb.store.discover")  # the package exports a function of that name
TRACE = b'{"schemaVersion": 1, "traceEvents": []}'


def put(path, data=TRACE):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def windows(logdir, **kw):
    """{run: {worker: [(id, format, label, rank), ...]}} and the runs themselves."""
    runs = disc.discover(str(logdir), **kw)
    return {name: {wk: [(w.id, w.format, w.label, w.rank) for w in worker.windows]
                   for wk, worker in run.workers.items()} for name, run in runs.items()}, runs


# -- the times a window id stands for ---------------------------------------------------------------------
# 1,700,000,000 s after the epoch is 2023-11-14 22:13:20 UTC (19,675 days = 2023-11-14, plus 80,000 s = 22:13:20)
@pytest.mark.parametrize("span, shown", [
    ("1700000000000", "2023-11-14 22:13:20 UTC"),  # epoch ms, 13 digits (older torch.profiler)
    ("1700000000000000", "2023-11-14 22:13:20 UTC"),  # epoch µs, 16 digits
    ("1700000000000000000", "2023-11-14 22:13:20 UTC"),  # epoch ns, 19 digits
    ("1700000000999", "2023-11-14 22:13:20 UTC"),  # the fraction of a second is not shown
    ("20231114221320123", "2023-11-14 22:13:20"),  # torch_npu: %Y%m%d%H%M%S + ms, its own clock (no zone)
    ("20231114221320.123", "2023-11-14 22:13:20"),  # ... with a dot before the ms
    ("20231314221320123", "20231314221320123"),  # month 13: not a time, shown as written
    ("170000000000", "170000000000"),  # 12 digits: no unit known
    ("17000000000000", "17000000000000"),  # 14
    ("1700000000000.5", "1700000000000.5"),  # a dot in an epoch id
    ("default", "default"),
])
def test_a_window_id_that_is_a_time_is_shown_as_one(span, shown):
    assert disc._span_time(span) == shown


# -- Kineto's rank: from the file, the name only for traces that carry none --------------------------------
def dist(rank):
    return f'"distributedInfo": {{"backend": "gloo", "rank": {rank}, "world_size": 8}}'


@pytest.mark.parametrize("name, body, rank", [
    ("worker3.pt.trace.json", '{"schemaVersion": 1, %s, "traceEvents": []}' % dist(5), 5),  # the file wins
    ("job_rank3.pt.trace.json", '{"schemaVersion": 1, "traceEvents": []}', 3),  # no rank in it: the name's
    ("rank-4.pt.trace.json", '{"traceEvents": []}', 4),
    ("Rank_6.pt.trace.json", '{"traceEvents": []}', 6),  # either case, _ or - or nothing before the number
    ("myrank7.pt.trace.json", '{"traceEvents": []}', -1),  # "rank" inside a word is not a rank
    ("w.pt.trace.json", '{"traceEvents": [], %s}' % dist(2147483647), 2147483647),  # 2**31 - 1: the last rank
    ("w.pt.trace.json", '{"traceEvents": [], %s}' % dist(2147483648), -1),  # 2**31: absurd, no rank
    ("rank1.pt.trace.json", '{"traceEvents": [], %s}' % dist(99999999999), 1),  # 11 digits: the name's
    ("w.pt.trace.json", '{"traceEvents": [], %s}' % dist(0), 0),  # rank 0 is a rank
])
def test_a_kineto_rank_is_the_files_else_the_names(tmp_path, name, body, rank):
    path = put(tmp_path / name, body.encode())
    assert disc._kineto_rank(str(path), disc.KINETO_RE.match(name).group("worker")) == rank


def tail_trace(path, rank, size=70000, gz=False):
    """A trace past 64 KiB whose distributedInfo comes after the events (Kineto's on-demand traces)."""
    event = b'{"ph": "X", "name": "a", "ts": 1, "dur": 1},'
    end = ('{"ph": "X", "name": "b", "ts": 2, "dur": 1}], %s}' % dist(rank)).encode()
    body = b'{"traceEvents": [' + event * ((size - len(end) - 17) // len(event)) + end
    put(path, gzip.compress(body) if gz else body)
    return body


def test_the_rank_written_after_the_events_is_read_from_the_files_end(tmp_path):
    body = tail_trace(tmp_path / "w.pt.trace.json", 6)
    assert len(body) > 65536 and body.index(b'"distributedInfo"') > 65536  # not in the head
    assert disc._kineto_rank(str(tmp_path / "w.pt.trace.json"), "w") == 6
    # gzip's end is not text: the name's rank (none here)
    tail_trace(tmp_path / "g.pt.trace.json.gz", 6, size=400000, gz=True)
    assert disc._kineto_rank(str(tmp_path / "g.pt.trace.json.gz"), "g") == -1
    tail_trace(tmp_path / "rank2.pt.trace.json.gz", 6, size=400000, gz=True)
    assert disc._kineto_rank(str(tmp_path / "rank2.pt.trace.json.gz"), "rank2") == 2
    assert disc._kineto_rank(str(tmp_path / "gone_rank9.pt.trace.json"), "gone_rank9") == 9  # no file: the name


# -- what is a window, of which worker ----------------------------------------------------------------------
def test_plain_traces_are_windows_of_the_worker_their_name_gives(tmp_path):
    run = tmp_path / "log" / "job"
    put(run / "host_7.1700000000000.pt.trace.json")
    put(run / "host_7.1700000001000.pt.trace.json.gz", gzip.compress(TRACE))
    put(run / "solo.pt.trace.json")
    put(run / ".hidden.pt.trace.json")  # an atomic writer's temporary name
    put(run / "notes.txt", b"x")
    found, runs = windows(tmp_path / "log")
    assert found == {"job": {
        "host_7": [("1700000000000", "kineto", "window 1 (2023-11-14 22:13:20 UTC)", -1),
                   ("1700000001000", "kineto", "window 2 (2023-11-14 22:13:21 UTC)", -1)],
        "solo": [("default", "kineto", "window 1", -1)]}}
    (w,) = runs["job"].workers["solo"].windows
    assert (w.path, w.files, w.status) == (str(run / "solo.pt.trace.json"), (str(run / "solo.pt.trace.json"),), "ready")
    assert w.root == os.path.realpath(tmp_path / "log")  # confined to the logdir wherever it is read


def test_windows_sort_by_their_time_not_their_name(tmp_path):
    put(tmp_path / "w.900.pt.trace.json")
    put(tmp_path / "w.1000.pt.trace.json")  # after 900 in time, before it as text
    found, _ = windows(tmp_path)
    assert [w[0] for w in found["."]["w"]] == ["900", "1000"]


@pytest.mark.parametrize("head, is_trace", [
    (b'{"schemaVersion": 1, "traceEvents": []}', True),
    (b'{"traceEvents": [{"ph": "X"}]}', True),
    (b'  {"deviceProperties": [], "schemaVersion": 1}', True),
    (b'[{"ph": "X", "ts": 1, "dur": 2, "name": "a"}]', True),  # a bare array of events (export_chrome_trace)
    (b'[{"name": "a", "ts": 1}]', False),  # an array without phases
    (b'[{"ph": "X", "name": "a"}]', False),  # ... without times
    (b'{"metrics": [1, 2, 3]}', False),  # some other JSON
    (b'{"schema": "canning-prof/2", "traceEvents": []}', False),  # our own report (performance.json)
])
def test_other_json_files_are_windows_only_when_their_head_is_a_trace(tmp_path, head, is_trace):
    put(tmp_path / "rank-1.json", head)
    put(tmp_path / "rank-2.json.gz", gzip.compress(head))
    found, _ = windows(tmp_path)
    expected = {"rank-1": [("default", "kineto", "window 1", 1)],
                "rank-2": [("default", "kineto", "window 1", 2)]} if is_trace else {}
    assert found.get(".", {}) == expected


def manifest(folder, worker, window, files=(), **extra):
    return put(folder / f"{worker}.{window}.canning.json",
               {"worker": worker, "window": window, "files": [{"name": n} for n in files], **extra})


def test_a_manifest_claims_the_files_it_names(tmp_path):
    run = tmp_path / "run"
    put(run / "w.1.pt.trace.json")
    put(run / "w.2.pt.trace.json")  # no manifest names it: a window of its own
    manifest(run, "w", 1, ["w.1.pt.trace.json"], steps=[3, 4, 5], rank=2)
    manifest(run, "w", 3, [], steps=[9])
    found, runs = windows(tmp_path)
    assert found == {"run": {"w": [("1", "canning", "window 1 (steps 3-5)", 2), ("2", "kineto", "window 2 (2)", -1),
                                   ("3", "canning", "window 3 (step 9)", -1)]}}
    w = runs["run"].workers["w"]
    assert w.rank == 2  # the worker's rank: the first known among its windows
    first = w.windows[0]
    assert first.files == (str(run / "w.1.canning.json"), str(run / "w.1.pt.trace.json")) and first.steps == (3, 4, 5)
    assert first.path == str(run / "w.1.canning.json") and first.order == (1,)


def test_a_manifests_sizes_and_trigger_are_carried(tmp_path):
    run = tmp_path / "run"
    put(run / "w.1.pt.trace.json")
    put(run / "w.1.names.json", b"{}")
    put(run / "w.1.canning.json", {"worker": "w", "window": 1, "files": [
        {"name": "w.1.pt.trace.json", "bytes": 39}, {"name": "w.1.names.json", "bytes": 2}],
        "trigger": {"kind": "slow_step", "reason": "step 7 took 2.1x the median"}})
    put(run / "w.2.pt.trace.json")
    put(run / "w.2.canning.json", {"worker": "w", "window": 2, "files": [
        {"name": "w.2.pt.trace.json", "bytes": 39}, {"name": "w.2.more.json"}]})  # a size missing: none kept
    found, runs = windows(tmp_path)
    one, two = runs["run"].workers["w"].windows
    assert one.sizes == ((str(run / "w.1.pt.trace.json"), 39), (str(run / "w.1.names.json"), 2))
    assert one.trigger == "step 7 took 2.1x the median" and one.label == "window 1 (triggered)"
    assert two.sizes == () and two.trigger == "" and two.label == "window 2"


def test_an_unreadable_manifest_still_marks_its_window(tmp_path):
    put(tmp_path / "w.4.canning.json", b"not json")
    found, runs = windows(tmp_path)
    assert found == {".": {"w": [("4", "canning", "window 1", -1)]}}
    assert runs["."].workers["w"].windows[0].files == (str(tmp_path / "w.4.canning.json"),)


def test_ids_shared_within_a_worker_are_made_unique(tmp_path):
    put(tmp_path / "w.pt.trace.json")
    put(tmp_path / "w.json", TRACE)  # also "default" of worker w
    found, _ = windows(tmp_path)
    assert [x[0] for x in found["."]["w"]] == ["default", "default-1"]


# -- runs: which folders, how deep -----------------------------------------------------------------------------
def test_runs_are_the_folders_that_hold_windows_named_from_the_logdir(tmp_path):
    put(tmp_path / "a" / "b" / "w.pt.trace.json")
    put(tmp_path / "a" / "v.pt.trace.json")
    put(tmp_path / ".canning" / "x.pt.trace.json")  # our cache folder
    put(tmp_path / "node_modules" / "x.pt.trace.json")
    put(tmp_path / "__pycache__" / "x.pt.trace.json")
    put(tmp_path / "logs" / "x.pt.trace.json")
    put(tmp_path / ".git" / "x.pt.trace.json")
    put(tmp_path / "PROF_000001_20231114_abc" / "x.pt.trace.json")  # msprof's raw data
    found, runs = windows(tmp_path)
    assert sorted(found) == ["a", "a/b"]
    assert runs["a/b"].path == str(tmp_path / "a" / "b") and runs["a/b"].name == "a/b"
    assert sorted(windows(tmp_path, recursive=False)[0]) == []  # the logdir alone holds none
    put(tmp_path / "top.pt.trace.json")
    assert sorted(windows(tmp_path, recursive=False)[0]) == ["."]


def test_select_keeps_only_the_windows_it_accepts(tmp_path):
    put(tmp_path / "r" / "a.pt.trace.json")
    put(tmp_path / "r" / "b.pt.trace.json")
    put(tmp_path / "s" / "c.pt.trace.json")
    found, _ = windows(tmp_path, select=lambda w: os.path.basename(w.path) != "c.pt.trace.json"
                       and not w.path.endswith("b.pt.trace.json"))
    assert found == {"r": {"a": [("default", "kineto", "window 1", -1)]}}  # s: no window left, no run


def test_a_missing_logdir_has_no_runs(tmp_path):
    assert disc.discover(str(tmp_path / "nowhere")) == {} and disc.discover("") == {}


# -- torch_npu folders: by content, ranks from the files ------------------------------------------------------
def npu_window(folder, info=None, info_name="profiler_info.json", metadata=None, db=None):
    put(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", b"Name\n")
    if info is not None:
        put(folder / info_name, info)
    if metadata is not None:
        put(folder / "profiler_metadata.json", metadata)
    if db:
        put(folder / "ASCEND_PROFILER_OUTPUT" / db, b"")
    return folder


@pytest.mark.parametrize("name, prefix, span", [
    ("host1_1234_20231114221320123_ascend_pt", "host1_1234", "20231114221320123"),
    ("host1_1234_20231114221320.123_ascend_ms", "host1_1234", "20231114221320.123"),
    ("_20231114221320123_ascend_pt", "_20231114221320123_ascend_pt", "20231114221320123"),  # no prefix: the name
    ("host_12345678901_ascend_pt", "host_12345678901", ""),  # 11 digits: not a time
    ("host_123456789012_ascend_pt", "host", "123456789012"),  # 12: the least that is one
    ("my_profile", "my_profile", ""),  # a free name (2023)
    ("_ascend_pt", "_ascend_pt", ""),
])
def test_a_torch_npu_folder_name_splits_into_worker_and_time(name, prefix, span):
    assert asc.split_name(name) == (prefix, span)


@pytest.mark.parametrize("files, rank", [
    ({"profiler_info.json": {"rank_id": 3}}, 3),
    ({"profiler_info_5.json": {"rank_id": 3}}, 3),  # rank_id wins over the name's number
    ({"profiler_info_5.json": {"rank_id": -1}}, 5),  # no rank in it (torch_npu writes -1): the name's
    ({"profiler_info_5.json": {}}, 5),
    ({"profiler_info.json": {"rank_id": "x"}}, -1),
    ({"profiler_info.json": {"rank_id": 2147483648}}, -1),  # 2**31: absurd
    ({"profiler_info.json": {"rank_id": 2147483647}}, 2147483647),
    ({"profiler_info.json": {}, "profiler_metadata.json": {"distributed_args": {"rank": 7}}}, -1),  # info first
    ({"profiler_metadata.json": {"distributed_args": {"rank": 7}}}, 7),
    ({"profiler_metadata.json": {"distributed_args": {"rank": 7}}, "ascend_pytorch_profiler_2.db": b""}, 7),
    ({"profiler_metadata.json": {"rank": 7}, "ascend_pytorch_profiler_2.db": b""}, 2),  # not at its key: the db's
    ({"ascend_pytorch_profiler.db": b""}, -1),
    ({"ascend_pytorch_profiler_0.db": b""}, 0),
    ({"kernel_details.csv": b""}, -1),
])
def test_a_torch_npu_windows_rank_comes_from_its_files(tmp_path, files, rank):
    paths = tuple(str(put(tmp_path / n, v)) for n, v in files.items())
    assert asc.window_rank(paths) == rank


def test_torch_npu_windows_of_one_rank_are_one_worker_named_by_it(tmp_path):
    run = tmp_path / "job"
    npu_window(run / "node0_11_20231114221320123_ascend_pt", info={"rank_id": 0})
    npu_window(run / "node0_11_20231114221420123_ascend_pt", info={"rank_id": 0})
    npu_window(run / "node0_12_20231114221320456_ascend_pt", info={"rank_id": 1})
    found, runs = windows(tmp_path)
    assert found == {"job": {
        "node0_11": [("20231114221320123", "ascend", "window 1 (2023-11-14 22:13:20)", 0),
                     ("20231114221420123", "ascend", "window 2 (2023-11-14 22:14:20)", 0)],
        "node0_12": [("20231114221320456", "ascend", "window 1 (2023-11-14 22:13:20)", 1)]}}
    assert runs["job"].workers["node0_12"].rank == 1


def test_a_prefix_two_ranks_share_names_neither(tmp_path):
    """Folders all named `prof_<time>_ascend_pt` (one name for every rank): the rank names each worker."""
    npu_window(tmp_path / "prof_20231114221320123_ascend_pt", info={"rank_id": 0})
    npu_window(tmp_path / "prof_20231114221320999_ascend_pt", info={"rank_id": 1})
    npu_window(tmp_path / "other_20231114221320555_ascend_pt")  # no rank: grouped by its own name
    found, _ = windows(tmp_path)
    assert {wk: [x[3] for x in v] for wk, v in found["."].items()} == {"rank0": [0], "rank1": [1], "other": [-1]}
    assert asc.worker_names([{"rank": 0, "prefix": "a"}, {"rank": 0, "prefix": "b"}, {"rank": 1, "prefix": "c"},
                             {"rank": -1, "prefix": "a"}, {"rank": -1, "prefix": "d"}]) == \
        ["rank0", "rank0", "c", "a", "d"]


def test_raw_and_bare_and_many_db_folders(tmp_path):
    """A window folder is a window of the run that holds it (the folder above it)."""
    raw = tmp_path / "r" / "job_20231114221320123_ascend_pt"
    put(raw / "profiler_info_4.json", {"rank_id": 4})
    (raw / "FRAMEWORK").mkdir()
    (raw / "PROF_000001_20231114221320123_ABC").mkdir()
    dbs = tmp_path / "d"
    put(dbs / "ascend_pytorch_profiler_0.db", b"")
    put(dbs / "ascend_pytorch_profiler_1.db", b"")
    found, runs = windows(tmp_path)
    assert found["r"] == {"job": [("20231114221320123", "ascend", "window 1 (2023-11-14 22:13:20)", 4)]}
    assert runs["r"].workers["job"].windows[0].status == "incomplete"
    assert found["."] == {"rank0": [("default", "ascend", "window 1", 0)], "rank1": [("default", "ascend", "window 1", 1)]}
    assert [w.path for wk in ("rank0", "rank1") for w in runs["."].workers[wk].windows] == \
        [str(dbs / "ascend_pytorch_profiler_0.db"), str(dbs / "ascend_pytorch_profiler_1.db")]


def test_a_bare_output_folder_given_as_the_logdir_is_its_window_folders_window(tmp_path):
    out = tmp_path / "b" / "ASCEND_PROFILER_OUTPUT"
    put(out / "step_trace_time.csv", b"Step\n")
    put(out.parent / "profiler_info_2.json", {"rank_id": 2})  # beside it, in the folder that names it
    found, runs = windows(out)
    assert found == {".": {"b": [("default", "ascend", "window 1", 2)]}}
    (w,) = runs["."].workers["b"].windows
    assert (w.path, w.status) == (str(out), "ready")
    assert w.files == (str(out / "step_trace_time.csv"), str(out.parent / "profiler_info_2.json"))  # in path order
    found, runs = windows(out.parent)  # the folder above: the same window, as that folder
    assert found == {".": {"b": [("default", "ascend", "window 1", 2)]}} and runs["."].workers["b"].windows[0].path \
        == str(out.parent)


def test_a_torch_npu_folder_holding_a_link_out_is_no_window(tmp_path):
    secret = put(tmp_path / "outside" / "s.csv", b"x")
    window = npu_window(tmp_path / "log" / "run" / "p_20231114221320123_ascend_pt", info={"rank_id": 0})
    os.symlink(secret, window / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv")
    assert asc.folder_windows(str(window), Policy(str(tmp_path / "log"))) == []
    assert disc.discover(str(tmp_path / "log")) == {}
    assert len(asc.folder_windows(str(window), Policy(str(tmp_path / "log"), follow_links=True))) == 1


def test_a_folder_a_manifest_names_is_its_window_not_another(tmp_path):
    run = tmp_path / "run"
    npu_window(run / "w_20231114221320123_ascend_pt", info={"rank_id": 1})
    put(run / "w.1.canning.json", {"worker": "w", "window": 1, "rank": 1,
                                   "files": [{"name": "w_20231114221320123_ascend_pt", "kind": "ascend_pt"}]})
    found, runs = windows(tmp_path)
    assert found == {"run": {"w": [("1", "canning", "window 1", 1)]}}
    (w,) = runs["run"].workers["w"].windows
    inside = str(run / "w_20231114221320123_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")
    assert inside in w.files and str(run / "w_20231114221320123_ascend_pt" / "profiler_info.json") in w.files
