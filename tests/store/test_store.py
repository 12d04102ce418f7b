"""Discovery and caching on real fixtures (expected layout read independently with os.listdir)."""
import gzip
import json
import os
import shutil

import pytest

from canning_tb.store import Store, discover
from canning_tb.store.cache import cache_dir_for

from conftest import fixture_path


def own_run(tmp_path, *fixture):
    """A writable copy of a fixture as run "r" of tmp_path/logdir (the shared fixtures are read-only)."""
    run = tmp_path / "logdir" / "r"
    shutil.copytree(fixture_path(*fixture), run)
    os.chmod(run, 0o755)
    return run


def only_window(store):
    """(worker name, window id) of a run "r" holding one worker with one window."""
    (worker,) = store.workers("r")
    (win,) = store.windows("r", worker.name)
    return worker.name, win.id


def test_discovers_every_format_with_ranks():
    root = fixture_path()
    runs = discover(str(root))
    # independent: one run per folder that directly holds *_ascend_pt folders / trace files
    ascend_runs = {os.path.relpath(os.path.join(root, "ascend", d), root)
                   for d in os.listdir(root / "ascend")}
    assert ascend_runs <= set(runs)
    lvl1 = runs["ascend/level1"]
    assert sorted(w.rank for w in lvl1.workers.values()) == [0, 1]
    kin = runs["kineto/resnet50_v100"]
    files = sorted(f for f in os.listdir(root / "kineto/resnet50_v100") if ".pt.trace.json" in f)
    assert [w.path for w in kin.workers["worker0"].windows] == [str(root / "kineto/resnet50_v100" / f) for f in files]
    dlrm = runs["param/dlrm_8ranks"]
    assert len(dlrm.workers) == len([f for f in os.listdir(root / "param/dlrm_8ranks") if "trace" in f])
    # HTA-style names without .pt.trace are recognised by content
    assert "hta/df_index_resolver" in runs


def test_handler_windows_claim_their_trace(tmp_path):
    (tmp_path / "run").mkdir()
    trace = tmp_path / "run" / "rank0.h.1.000001.pt.trace.json.gz"
    with gzip.open(trace, "wt") as f:
        json.dump({"traceEvents": []}, f)
    man = tmp_path / "run" / "rank0.h.1.000001.canning.json"
    man.write_text(json.dumps({"rank": 0, "files": [{"name": trace.name, "bytes": trace.stat().st_size}],
                               "steps": [3, 4]}))
    (tmp_path / "run" / ".rank0.h.1.000002.pt.trace.json.gz.tmp").write_text("partial")
    runs = discover(str(tmp_path))
    wins = [w for wk in runs["run"].workers.values() for w in wk.windows]
    assert [(w.format, w.steps) for w in wins] == [("canning", (3, 4))]
    assert str(trace) in wins[0].files


def test_unknown_ids_are_lookups_not_paths(tmp_path):
    store = Store(str(fixture_path("kineto")), cache_dir=str(tmp_path))
    with pytest.raises(KeyError):
        store.workers("../../etc")
    with pytest.raises(KeyError):
        store.window("resnet50_v100", "worker0", "../../../etc/passwd")


def test_caches_go_to_the_user_cache_unless_asked_beside_the_data(tmp_path, monkeypatch):
    """Nothing written into a logdir by default, writable or not; beside the data only when the user
    turns it on (CANNING_CACHE_BESIDE_DATA=1), and then only where the run folder can be written."""
    src = fixture_path("hta", "cpu_only")
    run = tmp_path / "logdir" / "cpu"
    shutil.copytree(src, run)
    os.chmod(run, 0o755)
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "usercache"))
    try:
        assert cache_dir_for(str(run)).startswith(str(tmp_path / "usercache"))
        monkeypatch.setenv("CANNING_CACHE_BESIDE_DATA", "1")
        assert cache_dir_for(str(run)) == str(run / ".canning")
        os.chmod(run, 0o555)
        assert cache_dir_for(str(run)).startswith(str(tmp_path / "usercache"))
    finally:
        os.chmod(run, 0o755)


def test_second_open_comes_from_cache(tmp_path, monkeypatch):
    run = own_run(tmp_path, "hta", "df_index_resolver")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "usercache"))
    before = sorted(os.listdir(run))
    store = Store(str(tmp_path / "logdir"))
    worker, wid = only_window(store)
    d1 = store.digest("r", worker, wid)
    assert sorted(os.listdir(run)) == before, "nothing written beside the data"
    (folder,) = os.listdir(tmp_path / "usercache")
    assert any(name.endswith(".digest.pb") for name in os.listdir(tmp_path / "usercache" / folder))
    def not_again(window):
        raise AssertionError("the window was read again")
    monkeypatch.setattr("canning_tb.store.compute.read_window", not_again)
    assert Store(str(tmp_path / "logdir")).digest("r", worker, wid) == d1  # a cached read, not a re-parse


def _plain_trace(run):
    """run/w.pt.trace.json: the hta cpu_only trace, uncompressed (so that a rename keeps its size)."""
    src = next(fixture_path("hta", "cpu_only").glob("*.json.gz"))
    run.mkdir(parents=True, exist_ok=True)
    (run / "w.pt.trace.json").write_bytes(gzip.decompress(src.read_bytes()))
    return run / "w.pt.trace.json"


def _same_size_other_names(src, dst, mtime_ns):
    """dst: the trace src with every "aten::" renamed "aten;:" (same length, so same size), given the
    mtime `mtime_ns`: a file that only its path, content and inode tell from src."""
    dst.write_bytes(src.read_bytes().replace(b'"aten::', b'"aten;:'))
    os.utime(dst, ns=(mtime_ns, mtime_ns))


def test_two_runs_with_equal_files_keep_their_own_digests(tmp_path, monkeypatch):
    """Issue 23 item 6: two runs whose traces have the same name, size and mtime (cp -a, touch -r) show
    each their own data, in one viewer and from the cache; expected names read here with json."""
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "usercache"))
    first = _plain_trace(tmp_path / "logdir" / "a")
    (tmp_path / "logdir" / "b").mkdir()
    _same_size_other_names(first, tmp_path / "logdir" / "b" / first.name, first.stat().st_mtime_ns)
    assert [(p.stat().st_size, p.stat().st_mtime_ns) for p in (tmp_path / "logdir").glob("*/w.pt.trace.json")] == \
        [(first.stat().st_size, first.stat().st_mtime_ns)] * 2
    names = {run: {e.get("name") for e in json.loads((tmp_path / "logdir" / run / first.name).read_text())["traceEvents"]
                   if e.get("cat") == "cpu_op"} for run in ("a", "b")}
    assert any(n.startswith("aten;:") for n in names["b"]) and not any(n.startswith("aten;:") for n in names["a"])
    for store in (Store(str(tmp_path / "logdir")), Store(str(tmp_path / "logdir"))):  # computed, then cached
        for run in ("a", "b"):
            (worker,) = store.workers(run)
            (win,) = store.windows(run, worker.name)
            ops = {o.name for o in store.digest(run, worker.name, win.id).ops_by_name}
            assert ops and ops <= names[run] | {""}, run


def test_a_file_replaced_by_one_of_equal_size_and_mtime_is_read_again(tmp_path, monkeypatch):
    """Its inode tells it apart (a copy over it, mtime kept: cp -a)."""
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "usercache"))
    trace = _plain_trace(tmp_path / "logdir" / "r")
    store = Store(str(tmp_path / "logdir"))
    worker, wid = only_window(store)
    assert not any(o.name.startswith("aten;:") for o in store.digest("r", worker, wid).ops_by_name)
    _same_size_other_names(trace, tmp_path / "other.gz", trace.stat().st_mtime_ns)
    os.replace(tmp_path / "other.gz", trace)
    fresh = Store(str(tmp_path / "logdir"))
    assert any(o.name.startswith("aten;:") for o in fresh.digest("r", worker, wid).ops_by_name)


def test_changed_file_is_read_again(tmp_path):
    run = own_run(tmp_path, "hta", "cpu_only")
    store = Store(str(tmp_path / "logdir"))
    worker, wid = only_window(store)
    store.digest("r", worker, wid)
    trace = next(p for p in run.iterdir() if p.name.endswith(".gz"))
    trace.write_bytes(b"not gzip")
    from canning_tb.ingest.table import InputError
    with pytest.raises(InputError) as e:
        Store(str(tmp_path / "logdir")).digest("r", worker, wid)
    assert trace.name in str(e.value)


def test_first_open_also_caches_the_events_for_the_timeline(tmp_path, monkeypatch):
    run = own_run(tmp_path, "hta", "cpu_only")
    store = Store(str(tmp_path / "logdir"))
    worker, wid = only_window(store)
    d = store.digest("r", worker, wid)

    def no_second_read(window):
        raise AssertionError("the window was read again")
    monkeypatch.setattr("canning_tb.store.compute.read_window", no_second_read)
    t = Store(str(tmp_path / "logdir")).table("r", worker, wid)
    # independent: count the complete events of the raw file
    trace = next(p for p in run.iterdir() if p.name.endswith(".gz"))
    with gzip.open(trace, "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    assert len(t) == len(raw)
    assert sum(o.calls for o in d.ops_by_name) > 0


def test_big_windows_are_digested_in_a_child_process(tmp_path, monkeypatch):
    run = own_run(tmp_path, "hta", "cpu_only")
    (run / "broken.1.pt.trace.json").write_text('{"traceEvents": [')
    isolated = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c1"), isolate_bytes=0)
    inline = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c2"))
    good = next(w for w in isolated.workers("r") if w.name != "broken")
    wid = isolated.windows("r", good.name)[0].id
    expected = inline.digest("r", good.name, wid)

    def not_here(window):
        raise AssertionError("parsed in the TensorBoard process")
    monkeypatch.setattr("canning_tb.store.compute.read_window", not_here)  # the spawned child is unaffected
    assert isolated.digest("r", good.name, wid) == expected
    from canning_tb.ingest.table import InputError
    with pytest.raises(InputError) as e:
        isolated.digest("r", "broken", isolated.windows("r", "broken")[0].id)
    assert "broken.1.pt.trace.json" in str(e.value)


def test_digests_of_older_code_are_not_served(tmp_path, monkeypatch):
    run = own_run(tmp_path, "hta", "cpu_only")
    store = Store(str(tmp_path / "logdir"))
    worker, wid = only_window(store)
    store.digest("r", worker, wid)
    import canning_tb.store.compute as compute_mod
    reads = []
    real = compute_mod.read_window
    monkeypatch.setattr(compute_mod, "read_window", lambda w: reads.append(w) or real(w))
    Store(str(tmp_path / "logdir")).digest("r", worker, wid)
    assert reads == []  # same code: from the cache
    monkeypatch.setattr("canning_tb.store.cache.code_revision", lambda: "a-newer-reader")
    Store(str(tmp_path / "logdir")).digest("r", worker, wid)
    assert len(reads) == 1  # an upgrade that changes the reader or analysis recomputes


def test_a_manifest_that_is_not_an_object_still_marks_its_window(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "rank0.h.1.000001.canning.json").write_text("[1, 2]")
    (tmp_path / "run" / "rank1.h.2.000001.canning.json").write_text('{"files": "x", "steps": 3, "rank": "1"}')
    runs = discover(str(tmp_path))
    wins = sorted((wk.name, w.format, w.rank, w.steps) for wk in runs["run"].workers.values() for w in wk.windows)
    assert wins == [("rank0.h.1", "canning", -1, ()), ("rank1.h.2", "canning", -1, ())]


def test_kineto_ranks_come_from_the_trace_not_the_name(tmp_path):
    """DLRM's 8 traces renamed so that their names say nothing (or the wrong rank): the ranks are
    the ones each file's distributedInfo holds, read here with gzip/json."""
    src = fixture_path("param", "dlrm_8ranks")
    run = tmp_path / "run"
    run.mkdir()
    truth = {}
    for i, f in enumerate(sorted(src.glob("*.pt.trace.json.gz"))):
        with gzip.open(f, "rt") as fh:
            rank = json.load(fh)["distributedInfo"]["rank"]
        name = f"node{chr(97 + i)}.pt.trace.json.gz" if i % 2 else f"rank{7 - i}.pt.trace.json.gz"
        shutil.copy(f, run / name)
        truth[name.split(".")[0]] = rank
    store = Store(str(tmp_path))
    got = {w.name: w.rank for w in store.workers("run")}
    assert got == truth
    assert sorted(got.values()) == list(range(8))
