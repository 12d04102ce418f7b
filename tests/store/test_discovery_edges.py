"""Discovery's edges, on folders laid out by hand (issue 46: the survivors of a mutation run over
store/discover.py, discover_ascend.py and links.py): memory snapshots attached to their windows or standing
alone, labels, files that change under the same name (each answer is remembered per version of a file), links
inside and out of the logdir and what is said of them, link loops, the walk's order, and a window's status.
Each expected value is read off the layout the test writes."""
import importlib
import json
import logging
import os
import pickle
import time

import pytest

from canning_tb.store import discover_ascend as asc
from canning_tb.store.links import Policy
from canning_tb.util import safe_files

disc = importlib.import_module("canning_tb.store.discover")  # the package exports a function of that name
TRACE = b'{"schemaVersion": 1, "traceEvents": []}'
SNAPSHOT = pickle.dumps({"segments": [], "device_traces": []}, protocol=4)  # what the sniffer looks for


@pytest.fixture(autouse=True)
def no_process_setting(monkeypatch):
    monkeypatch.delenv(safe_files.FOLLOW_ENV, raising=False)


def put(path, data=TRACE, mtime_s=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))
    return path


def found(logdir, **kw):
    return disc.discover(str(logdir), **kw)


def wins(logdir, run=".", worker="w", **kw):
    return found(logdir, **kw)[run].workers[worker].windows


# -- memory snapshots ---------------------------------------------------------------------------------------------
def test_our_manifests_snapshot_is_its_windows_once(tmp_path):
    put(tmp_path / "w.1.pt.trace.json")
    snap = put(tmp_path / "w.1.snapshot.pickle", SNAPSHOT)
    put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1, "files": [
        {"name": "w.1.pt.trace.json"}, {"name": "w.1.snapshot.pickle"}]})
    (w,) = wins(tmp_path)
    assert w.format == "canning" and w.snapshots == (str(snap),) and w.files.count(str(snap)) == 1
    assert w.label == "window 1 (with a memory snapshot)"


def test_a_snapshot_joins_the_window_of_its_id_else_the_workers_only_one(tmp_path):
    put(tmp_path / "w.5.pt.trace.json")
    put(tmp_path / "w.6.pt.trace.json")
    five = put(tmp_path / "w.5.snapshot.pickle", SNAPSHOT)
    also_five = put(tmp_path / "w.5.pkl", SNAPSHOT)
    seven = put(tmp_path / "w.7.pickle", SNAPSHOT)  # no window 7: a window of its own
    put(tmp_path / "v.pt.trace.json")
    only = put(tmp_path / "v.pickle", SNAPSHOT)  # v's only window, and no id: joins it
    got = found(tmp_path)["."].workers
    by_id = {w.id: w for w in got["w"].windows}
    assert sorted(by_id) == ["5", "6", "7"]
    assert by_id["5"].snapshots == (str(also_five), str(five)) and by_id["5"].files[-2:] == (str(also_five), str(five))
    assert by_id["6"].snapshots == () and by_id["6"].label == "window 2 (6)"
    assert (by_id["7"].format, by_id["7"].path, by_id["7"].snapshots) == ("snapshot", str(seven), (str(seven),))
    assert by_id["7"].label == "window 3 (7, memory snapshot)"
    (v,) = got["v"].windows
    assert v.format == "kineto" and v.snapshots == (str(only),) and v.files == (str(tmp_path / "v.pt.trace.json"), str(only))


def test_snapshots_alone_are_windows_in_id_order(tmp_path):
    put(tmp_path / "rank3.pickle", SNAPSHOT)
    put(tmp_path / "rank3.pkl", SNAPSHOT)  # a second one without an id: not joined to the first
    put(tmp_path / "rank3.1.pickle", SNAPSHOT)
    put(tmp_path / "rank3.2.pickle", SNAPSHOT)
    put(tmp_path / "rank3.10.pickle", SNAPSHOT)  # after 2 in time, before it as text
    put(tmp_path / ".rank3.3.pickle", SNAPSHOT)  # a hidden name: never a window
    put(tmp_path / "two.pt.trace.json")
    put(tmp_path / "two.1.pt.trace.json")
    put(tmp_path / "two.pickle", SNAPSHOT)  # two windows, no id: which one is unknown, so its own
    got = found(tmp_path)["."].workers
    assert sorted(got) == ["rank3", "two"]
    w = got["rank3"]
    assert [(x.id, x.format) for x in w.windows] == [("default", "snapshot"), ("default-1", "snapshot"),
                                                     ("1", "snapshot"), ("2", "snapshot"), ("10", "snapshot")]
    assert [os.path.basename(x.path) for x in w.windows[:2]] == ["rank3.pickle", "rank3.pkl"]
    assert w.rank == 3 and all(x.rank == 3 for x in w.windows)
    assert w.windows[0].label == "window 1 (memory snapshot)"
    # by name within an id: "two.pickle" before "two.pt.trace.json"
    assert [(x.id, x.format) for x in got["two"].windows] == [("default", "snapshot"), ("default-1", "kineto"),
                                                              ("1", "kineto")]


def test_a_second_snapshot_without_an_id_is_not_joined_to_a_snapshot(tmp_path):
    put(tmp_path / "s.pickle", SNAPSHOT)
    put(tmp_path / "s.pkl", SNAPSHOT)
    got = found(tmp_path)["."].workers["s"].windows
    assert [(w.id, w.format, len(w.snapshots)) for w in got] == [("default", "snapshot", 1), ("default-1", "snapshot", 1)]
    assert got[0].rank == -1 and found(tmp_path)["."].workers["s"].rank == -1  # no rank anywhere: unknown


def test_a_file_listed_then_gone_is_neither_a_snapshot_nor_a_trace(tmp_path):
    assert not disc._is_snapshot(str(tmp_path / "gone.pickle"))
    assert not disc._looks_like_trace(str(tmp_path / "gone.json"))


def test_a_generic_trace_sorts_as_a_window_0_among_manifests(tmp_path):
    put(tmp_path / "w.0.canning.json", {"worker": "w", "window": 0})
    put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1})
    put(tmp_path / "w.json")
    assert [w.id for w in wins(tmp_path)] == ["0", "default", "1"]


# -- labels -----------------------------------------------------------------------------------------------------------
def test_labels_say_the_steps_the_time_the_snapshot_and_the_trigger(tmp_path):
    put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1, "steps": [3, 4],
                                        "trigger": {"kind": "slow_step", "reason": "slow"}})
    put(tmp_path / "w.2.canning.json", {"worker": "w", "window": 2, "steps": [8]})
    put(tmp_path / "k.1700000000000.pt.trace.json")
    put(tmp_path / "k.1700000000000.pickle", SNAPSHOT)
    got = found(tmp_path)["."].workers
    assert [x.label for x in got["w"].windows] == ["window 1 (steps 3-4, triggered)", "window 2 (step 8)"]
    assert got["k"].windows[0].label == "window 1 (2023-11-14 22:13:20 UTC, with a memory snapshot)"


def test_epoch_ids_are_shown_in_utc_whatever_the_machines_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+5:30
    time.tzset()
    try:
        assert disc._span_time("1700000000000") == "2023-11-14 22:13:20 UTC"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_an_id_of_digits_that_is_not_17_long_is_no_torch_npu_time():
    assert disc._span_time("202311142213201234") == "202311142213201234"  # 18 digits: its first 14 parse


# -- each answer is remembered per version of a file -------------------------------------------------------------------
def rewrite(path, data, mtime_s):
    path.write_bytes(data)
    os.utime(path, (mtime_s, mtime_s))


def test_a_trace_rewritten_in_place_is_read_again(tmp_path):
    """Same path; first a new time at the same size, then a new size at the old time: each is another version."""
    path = put(tmp_path / "w.pt.trace.json", b'{"distributedInfo": {"rank": 1}, "traceEvents": []}', 1000)
    assert wins(tmp_path)[0].rank == 1
    rewrite(path, b'{"distributedInfo": {"rank": 2}, "traceEvents": []}', 2000)
    assert wins(tmp_path)[0].rank == 2
    rewrite(path, b'{"distributedInfo": {"rank": 33}, "traceEvents": []}', 2000)
    assert wins(tmp_path)[0].rank == 33


def test_a_trace_whose_rank_is_at_its_end_rewritten_is_read_again(tmp_path):
    events = b'{"ph": "X", "name": "a", "ts": 1, "dur": 1},' * 2000
    body = b'{"traceEvents": [' + events + b'{"ph": "X"}], "distributedInfo": {"rank": %d}}'
    path = put(tmp_path / "w.pt.trace.json", body % 4, 1000)
    assert len(body % 4) > 65536 and wins(tmp_path)[0].rank == 4
    rewrite(path, body % 5, 2000)
    assert wins(tmp_path)[0].rank == 5


def test_a_manifest_rewritten_in_place_is_read_again(tmp_path):
    path = put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1, "rank": 1}, 1000)
    assert wins(tmp_path)[0].rank == 1
    rewrite(path, json.dumps({"worker": "w", "window": 1, "rank": 2}).encode(), 2000)
    assert wins(tmp_path)[0].rank == 2
    rewrite(path, json.dumps({"worker": "w", "window": 1, "rank": 33}).encode(), 2000)
    assert wins(tmp_path)[0].rank == 33


def test_a_generic_json_and_a_pickle_rewritten_in_place_are_sniffed_again(tmp_path):
    trace = put(tmp_path / "rank-1.json", b'{"metrics": "........"}', 1000)  # no trace (23 bytes)
    snap = put(tmp_path / "rank-2.pickle", b"x" * len(SNAPSHOT), 1000)  # no snapshot
    assert found(tmp_path) == {}
    rewrite(trace, b'{"traceEvents": [1, 2]}', 2000)  # the same 23 bytes, another time
    rewrite(snap, SNAPSHOT, 2000)
    assert sorted(found(tmp_path)["."].workers) == ["rank-1", "rank-2"]
    rewrite(trace, b'{"metrics": "........."}', 2000)  # 24 bytes, the same time
    rewrite(snap, b"y" * (len(SNAPSHOT) + 1), 2000)
    assert found(tmp_path) == {}


def test_a_torch_npu_rank_file_rewritten_in_place_is_read_again(tmp_path):
    info = put(tmp_path / "profiler_info.json", {"rank_id": 1}, 1000)
    assert asc.window_rank((str(info),)) == 1
    rewrite(info, b'{"rank_id": 2}', 2000)
    assert asc.window_rank((str(info),)) == 2
    rewrite(info, b'{"rank_id": 33}', 2000)
    assert asc.window_rank((str(info),)) == 33


# -- torch_npu details -----------------------------------------------------------------------------------------------------
def npu(folder, rank=None):
    put(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", b"Name\n")
    if rank is not None:
        put(folder / "profiler_info.json", {"rank_id": rank})
    return folder


def test_a_torch_npu_windows_files_are_its_own_and_its_outputs_not_hidden_ones(tmp_path):
    w = npu(tmp_path / "run" / "p_20231114221320123_ascend_pt", rank=0)
    put(w / ".partial.json", b"{}")
    put(w / "ASCEND_PROFILER_OUTPUT" / ".tmp.csv", b"")
    (win,) = wins(tmp_path, run="run", worker="p")
    assert win.files == (str(w / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"), str(w / "profiler_info.json"))
    assert win.status == "ready"


def test_a_rank_file_that_vanished_leaves_the_rank_its_name_gives(tmp_path):
    assert asc.window_rank((str(tmp_path / "profiler_info_5.json"),)) == 5  # listed, then gone: not rank 1


def test_rank_0_in_the_metadata_is_rank_0(tmp_path):
    meta = put(tmp_path / "profiler_metadata.json", {"distributed_args": {"rank": 0}})
    db = put(tmp_path / "ascend_pytorch_profiler_2.db", b"")
    assert asc.window_rank((str(meta), str(db))) == 0


def test_hidden_folders_are_never_torch_npu_windows(tmp_path):
    npu(tmp_path / ".old_20231114221320123_ascend_pt", rank=0)
    npu(tmp_path / "p_20231114221320123_ascend_pt", rank=1)
    got = found(tmp_path)["."].workers
    assert list(got) == ["p"] and got["p"].rank == 1


def test_a_folder_of_dbs_one_without_a_rank(tmp_path):
    put(tmp_path / "d" / "ascend_pytorch_profiler.db", b"")
    put(tmp_path / "d" / "ascend_pytorch_profiler_1.db", b"")
    got = found(tmp_path)["."].workers
    assert {k: [(w.rank, w.status, os.path.basename(w.path)) for w in v.windows] for k, v in got.items()} == {
        "ascend_pytorch_profiler": [(-1, "ready", "ascend_pytorch_profiler.db")],
        "rank1": [(1, "ready", "ascend_pytorch_profiler_1.db")]}


def test_windows_of_one_rank_under_two_names_sort_by_time(tmp_path):
    npu(tmp_path / "b_20231114221320123_ascend_pt", rank=0)  # earlier, later in name order
    npu(tmp_path / "a_20231114221420123_ascend_pt", rank=0)
    got = found(tmp_path)["."].workers
    assert [os.path.basename(w.path)[0] for w in got["rank0"].windows] == ["b", "a"] and got["rank0"].rank == 0


def test_a_window_folder_with_a_space_in_its_name_is_one_window(tmp_path):
    npu(tmp_path / "run" / "my prof_20231114221320123_ascend_pt", rank=0)
    got = found(tmp_path)
    assert list(got) == ["run"] and [w.path for w in got["run"].workers["my prof"].windows] == [
        str(tmp_path / "run" / "my prof_20231114221320123_ascend_pt")]


def test_the_logdir_itself_a_window_with_a_link_out_and_a_selection(tmp_path):
    secret = put(tmp_path / "outside" / "s.csv", b"x")
    log = npu(tmp_path / "log", rank=0)
    assert [w.rank for w in found(log)["."].workers["log"].windows] == [0]
    assert found(log, select=lambda w: False) == {}
    os.symlink(secret, log / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv")
    assert found(log) == {}


@pytest.mark.parametrize("analysis, done, status", [("sync", False, "ready"), ("async", True, "ready"),
                                                     ("async", False, "analysing")])
def test_a_manifests_torch_npu_folder_has_its_analysis_status(tmp_path, analysis, done, status):
    folder = npu(tmp_path / "w_20231114221320123_ascend_pt", rank=0)
    put(folder / ".partial.json", b"{}")  # a writer's temporary file: not part of the window
    if done:
        put(folder / "ASCEND_PROFILER_OUTPUT" / "analyse.done", b"")
    put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1, "analysis": analysis,
                                        "files": [{"name": folder.name, "kind": "ascend_pt"}]})
    (w,) = wins(tmp_path)
    assert (w.format, w.status) == ("canning", status)
    assert str(folder / "profiler_info.json") in w.files and str(folder / "ASCEND_PROFILER_OUTPUT") not in w.files
    assert str(folder / ".partial.json") not in w.files


# -- what scan_folder takes and leaves ---------------------------------------------------------------------------------
def test_scan_folder_alone_and_what_it_leaves(tmp_path):
    put(tmp_path / "w.1.pt.trace.json")
    put(tmp_path / "w.1.canning.json", {"worker": "w", "window": 1, "files": [{"name": "w.1.pt.trace.json"}]})
    put(tmp_path / ".w.2.canning.json", {"worker": "w", "window": 2})  # a writer's temporary name
    put(tmp_path / "w.pt.trace.json")  # no id: before window 1 (order 0)
    put(tmp_path / "a.json", b'{"metrics": []}')  # not a trace, listed before the next
    put(tmp_path / "rank-1.json")
    put(tmp_path / ".rank-2.json")
    put(tmp_path / "trace.txt")  # a trace's content, not its name
    names = sorted(os.listdir(tmp_path))
    got = disc.scan_folder(str(tmp_path), [], names)  # its own policy (store/source_digest.py calls it so)
    assert {k: [(w.id, w.format) for w in v] for k, v in got.items()} == {
        "w": [("default", "kineto"), ("1", "canning")], "rank-1": [("default", "kineto")]}
    (generic,) = got["rank-1"]
    assert (generic.path, generic.files, generic.rank) == (str(tmp_path / "rank-1.json"), (str(tmp_path / "rank-1.json"),), 1)


def test_a_manifest_whose_file_vanished_is_still_a_window(tmp_path):
    m = disc.MANIFEST_RE.match("w.1.canning.json")
    w = disc._manifest_window(str(tmp_path), "w.1.canning.json", m, Policy(str(tmp_path)))
    assert (w.id, w.files, w.status, w.rank, w.steps) == ("1", (str(tmp_path / "w.1.canning.json"),), "ready", -1, ())


def test_a_manifest_naming_a_missing_file_or_a_link_out(tmp_path):
    secret = put(tmp_path / "outside" / "t.json")
    log = tmp_path / "log"
    put(log / "a" / "a.1.canning.json", {"worker": "a", "window": 1, "files": [{"name": "gone.json"}]})
    put(log / "b" / "b.1.canning.json", {"worker": "b", "window": 1, "files": [{"name": "t.json"}]})
    os.symlink(secret, log / "b" / "t.json")
    put(log / "c" / "c.1.canning.json", {"worker": "c", "window": 1, "files": [{"name": "t.json"}]})
    os.symlink(tmp_path / "outside" / "gone.json", log / "c" / "t.json")  # dangling, and out
    put(log / "d" / "d.1.canning.json", {"worker": "d", "window": 1, "files": [{"name": "t.json"}]})
    os.symlink(log / "d" / "gone.json", log / "d" / "t.json")  # dangling, inside: the reader says so
    put(log / "e" / "t.json")
    put(log / "f" / "f.1.canning.json", {"worker": "f", "window": 1, "files": [{"name": "t.json"}]})
    os.symlink(log / "e" / "t.json", log / "f" / "t.json")  # to another run of the logdir: inside it
    os.mkfifo(log / "g.json")
    put(log / "h" / "h.1.canning.json", {"worker": "h", "window": 1, "files": [{"name": "p.json"}]})
    os.mkfifo(log / "h" / "p.json")
    assert sorted(found(log)) == ["a", "d", "e", "f"]


# -- links, loops, the walk and what is said ---------------------------------------------------------------------
def test_links_inside_are_followed_each_real_folder_once_in_name_order(tmp_path):
    log = tmp_path / "log"
    put(log / "b" / "x.pt.trace.json")
    os.symlink(log / "b", log / "a")  # the same run under a name that comes first
    os.symlink(log, log / "loop")  # a loop back to the logdir
    put(log / "z" / "y.pt.trace.json")  # walked after the loop
    assert sorted(found(log)) == ["a", "z"]


def test_following_links_out_is_the_callers_choice(tmp_path):
    theirs = put(tmp_path / "outside" / "run" / "t.pt.trace.json").parent
    log = tmp_path / "log"
    log.mkdir()
    os.symlink(theirs, log / "theirs")
    assert found(log) == {}
    with pytest.raises(safe_files.Refused):  # the logdir is registered: the open is checked too
        safe_files.read_file(str(log / "theirs" / "t.pt.trace.json"))
    got = found(log, follow_links=True)
    (w,) = got["theirs"].workers["t"].windows
    assert w.root == "" and safe_files.read_file(w.path) == TRACE


def test_a_refused_torch_npu_window_is_not_walked_into(tmp_path):
    """Its profiler_info.json links out: the window is refused, and its ASCEND_PROFILER_OUTPUT, which holds no link,
    was then found as a window of a run of its own (rank unknown: the linked file is refused when opened)."""
    secret = put(tmp_path / "outside" / "profiler_info.json", {"rank_id": 0})
    window = npu(tmp_path / "log" / "n" / "p_20231114221320123_ascend_pt")
    os.symlink(secret, window / "profiler_info.json")
    assert found(tmp_path / "log") == {}


def test_a_logdir_at_the_root_holds_every_path(monkeypatch):
    monkeypatch.setattr(safe_files, "_roots", {})  # the root registered here touches no other test
    assert Policy("/").inside("/tmp") and Policy("/").inside("/")


def test_what_is_skipped_is_said_once_relative_to_the_logdir(tmp_path, caplog):
    secret = put(tmp_path / "outside" / "s.json")
    log = tmp_path / "log"
    put(log / "run" / "ok.pt.trace.json")
    os.symlink(secret, log / "run" / "leak.pt.trace.json")
    os.symlink(secret, log / "run" / ".hidden.pt.trace.json")  # hidden: skipped without a word
    put(log / "m" / "m.1.canning.json", {"worker": "m", "window": 1, "files": [{"name": "p.json"}]})
    os.mkfifo(log / "m" / "p.json")
    npu(log / "n" / "p_20231114221320123_ascend_pt", rank=0)
    os.symlink(secret, log / "n" / "p_20231114221320123_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "x.csv")
    put(log / "k" / "k.1.canning.json", {"worker": "k", "window": 1, "files": [{"name": "t.json"}]})
    os.symlink(secret, log / "k" / "t.json")
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        found(log)
        found(log)  # the scan runs every few seconds: said once
    link_out = "a link to outside the logdir (set CANNING_FOLLOW_LINKS=1 to follow it)"
    assert sorted(r.getMessage() for r in caplog.records) == sorted([
        "canning: skipped m/p.json: not a regular file",
        f"canning: skipped k/t.json: {link_out}",
        f"canning: skipped run/leak.pt.trace.json: {link_out}",
        f"canning: skipped n/p_20231114221320123_ascend_pt: holds {link_out}"])


def test_a_folder_that_cannot_be_listed_is_said_the_logdir_itself_is_not(tmp_path, monkeypatch, caplog):
    """Root lists every folder here, so os.scandir stands in for a folder the user cannot read (EACCES)."""
    import canning_tb.store.links as links
    log = tmp_path / "log"
    put(log / "locked" / "t.pt.trace.json")
    put(log / "open" / "t.pt.trace.json")
    real = os.scandir

    def scandir(path):
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(links.os, "scandir", scandir)
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        assert sorted(found(log)) == ["open"]
        assert found(log / "locked") == {}
    assert [r.getMessage() for r in caplog.records] == ["canning: skipped locked: cannot list it: Permission denied"]


def test_a_link_that_loops_on_itself_stops_nothing_after_it(tmp_path):
    """Its stat fails (ELOOP); the other entries of the folder, in whatever order the file system lists them, are
    still looked at."""
    runs = [f"r{i}" for i in range(10)]
    for name in runs:
        put(tmp_path / name / "t.pt.trace.json")
    for name in ("a_loop", "g_loop", "m_loop", "s_loop", "z_loop"):  # some among the runs in any listing order
        os.symlink(tmp_path / name, tmp_path / name)
    assert sorted(found(tmp_path)) == runs


def test_the_process_setting_lets_links_out_too(tmp_path, monkeypatch):
    """TensorBoard's environment (CANNING_FOLLOW_LINKS=1) with no argument from a command line."""
    theirs = put(tmp_path / "outside" / "run" / "t.pt.trace.json").parent
    log = tmp_path / "log"
    log.mkdir()
    os.symlink(theirs, log / "theirs")
    monkeypatch.setenv(safe_files.FOLLOW_ENV, "1")
    assert list(found(log)) == ["theirs"] and found(log)["theirs"].workers["t"].windows[0].root == ""
