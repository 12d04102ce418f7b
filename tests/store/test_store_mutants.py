"""The Store's own logic under mutation (issue 46), on tiny hand-written Kineto traces: the catalog's
order, which windows cross-rank views compare, where a window's digest is cached, what is computed
once, in a child or here, what is remembered, and the prefetch's answers. Where a test only asks
which way the Store went (a child process, a background job, a remote copy), a stand-in records the
call instead of starting a process; every expected value is worked out by hand in the test."""
import hashlib
import os

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.ingest.table import InputError
from canning_tb.store import store as store_mod
from canning_tb.store.store import Store

# one operator in one step, so that a digest is quick to build
TRACE = ('{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5, "pid": 1, '
         '"tid": 1}, {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": 99, "dur": 10, '
         '"pid": 1, "tid": 1}]}')
BROKEN = '{"traceEvents": ['  # not JSON: an InputError naming the file


def trace(path, text=TRACE):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def logdir_of(tmp_path, *names, text=TRACE):
    """tmp_path/logdir with run "r" holding the trace files `names` (each its own worker)."""
    for name in names:
        trace(tmp_path / "logdir" / "r" / name, text)
    return str(tmp_path / "logdir")


def one(store, run="r"):
    (worker,) = store.workers(run)
    (window,) = store.windows(run, worker.name)
    return run, worker.name, window.id


# -- the catalog ---------------------------------------------------------------------------------
def test_runs_sorted_workers_by_rank_then_unranked_by_name(tmp_path):
    """rank from the name (rank2, rank10), then the rank-less ones (a, b) by name: 2 < 10 as numbers."""
    for run in ("zz", "aa", "mm"):
        trace(tmp_path / "logdir" / run / "w.pt.trace.json")
    for name in ("b", "rank10", "a", "rank2", "rank0"):
        trace(tmp_path / "logdir" / "mm" / f"{name}.pt.trace.json")
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    assert store.runs() == ["aa", "mm", "zz"]
    assert [(w.name, w.rank) for w in store.workers("mm")] == [
        ("rank0", 0), ("rank2", 2), ("rank10", 10), ("a", -1), ("b", -1), ("w", -1)]
    with pytest.raises(KeyError):
        store.run("nope")


def test_positions_and_the_windows_at_a_position(tmp_path):
    """worker "two" has windows at spans 1 and 2, "one" only one window: position 1 is "two"'s only."""
    for name in ("two.1.pt.trace.json", "two.2.pt.trace.json", "one.pt.trace.json"):
        trace(tmp_path / "logdir" / "r" / name)
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    ids = [w.id for w in store.windows("r", "two")]
    assert len(ids) == 2
    assert [store.position("r", "two", i) for i in ids] == [0, 1]
    with pytest.raises(KeyError) as e:
        store.position("r", "two", "nope")
    assert e.value.args == ("nope",)
    with pytest.raises(KeyError) as e:
        store.window("r", "two", "nope")
    assert e.value.args == ("nope",)
    at0 = [(wk.name, win.id) for wk, win in store.windows_at("r", 0)]
    assert at0 == [("one", store.windows("r", "one")[0].id), ("two", ids[0])]
    assert [(wk.name, win.id) for wk, win in store.windows_at("r", 1)] == [("two", ids[1])]
    assert store.windows_at("r", 2) == [] and store.windows_at("r", -1) == []


def test_discovery_settings_reach_discover(tmp_path):
    """recursive=False: only the logdir's own folder is a run; select keeps the windows it names;
    refresh() sees a run added since."""
    trace(tmp_path / "logdir" / "top.pt.trace.json")
    trace(tmp_path / "logdir" / "deep" / "w.pt.trace.json")
    logdir = str(tmp_path / "logdir")
    assert Store(logdir, cache_dir=str(tmp_path / "c")).runs() == [".", "deep"]
    assert Store(logdir, cache_dir=str(tmp_path / "c"), recursive=False).runs() == ["."]
    store = Store(logdir, cache_dir=str(tmp_path / "c"), select=lambda w: "deep" in w.path)
    assert store.runs() == ["deep"]
    trace(tmp_path / "logdir" / "new" / "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    store.refresh()
    assert store.runs() == [".", "deep", "new"]
    assert Store(logdir, follow_links=True).follow_links is True
    assert Store(logdir).follow_links is False


def test_follow_links_reaches_discovery(tmp_path):
    """A trace that is a link to a file outside the logdir: no window by default, one when links are followed
    (the refused one first: once a root lets links out, it stays so in this process)."""
    outside = trace(tmp_path / "outside" / "w.pt.trace.json")
    os.makedirs(tmp_path / "logdir" / "r")
    os.symlink(outside, tmp_path / "logdir" / "r" / "w.pt.trace.json")
    assert Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c")).runs() == []
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"), follow_links=True)
    assert store.runs() == ["r"]
    store.refresh()
    assert store.runs() == ["r"]


def test_max_workers_is_the_cores_between_1_and_8(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    for cores, expected in ((32, 8), (3, 3), (None, 1), (1, 1)):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        assert Store(logdir).max_workers == expected
    assert Store(logdir, max_workers=5).max_workers == 5


def test_the_chip_is_its_canonical_name(tmp_path):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    assert Store(logdir, chip="ascend910b1").chip == "910B1"
    assert Store(logdir).chip is None


# -- where a window's digest is --------------------------------------------------------------------
def test_cache_path_key_and_events_prefix_by_hand(tmp_path):
    """The cache folder is sha1(the run's absolute path)[:16] under cache_dir (cache.py's layout), the file
    <key>.digest.pb, the events beside it as <key>.events; the key changes with the file."""
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    key = store.digest_key("r", store.window(*ident))
    folder = hashlib.sha1(os.path.abspath(os.path.join(logdir, "r")).encode()).hexdigest()[:16]
    assert store.digest_cache_path(*ident) == str(tmp_path / "c" / folder / (key + ".digest.pb"))
    assert store.events_prefix(*ident) == str(tmp_path / "c" / folder / (key + ".events"))
    assert len(key) == 20
    trace(tmp_path / "logdir" / "r" / "w.pt.trace.json", TRACE + " ")
    assert Store(logdir, cache_dir=str(tmp_path / "c")).digest_key("r", store.window(*ident)) != key


def test_the_key_follows_the_schema_and_not_where_the_logdir_is(tmp_path, monkeypatch):
    """A logdir moved whole (rename: the same inodes and times) keeps its windows' keys: the files are named
    relative to it; a new digest schema changes every key."""
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    ident = one(Store(logdir))
    key = Store(logdir).digest_key("r", Store(logdir).window(*ident))
    os.rename(logdir, tmp_path / "moved")
    moved = Store(str(tmp_path / "moved"))
    assert moved.digest_key("r", moved.window(*ident)) == key
    schema = store_mod.lookup.schema()
    monkeypatch.setattr(store_mod.lookup, "schema", lambda: schema + 1)
    assert moved.digest_key("r", moved.window(*ident)) != key


def test_a_remote_logdir_is_read_from_its_local_copy(tmp_path, monkeypatch):
    from test_mirror_mutants import Bucket
    bucket = Bucket()
    bucket.put_bytes("bkt/logs/r/w.pt.trace.json", TRACE.encode())
    monkeypatch.setattr("canning_tb.util.remote_fs.open_fs", lambda url: (bucket, url.split("://", 1)[1]))
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "user"))
    store = Store("s3://bkt/logs")
    assert store.url == "s3://bkt/logs" and store.remote.url == "s3://bkt/logs"
    assert store.logdir == store.remote.local and store.logdir.startswith(str(tmp_path / "user"))
    assert store.runs() == ["r"] and store.digest(*one(store)).window.worker == "w"
    assert Store(str(tmp_path)).url is None


def test_has_digest_in_memory_in_the_cache_or_at_the_source(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    assert store.has_digest(*ident) is False
    store.digest(*ident)
    assert store.has_digest(*ident) is True
    assert Store(logdir, cache_dir=str(tmp_path / "c")).has_digest(*ident) is True  # the cache file
    assert Store(logdir, cache_dir=str(tmp_path / "other")).has_digest(*ident) is False
    asked = []
    monkeypatch.setattr(store_mod.lookup, "usable_source_digest",
                        lambda window, current_only=False: asked.append(current_only) or "/the/source")
    fresh = Store(logdir, cache_dir=str(tmp_path / "other"))
    assert fresh.has_digest(*ident, current=True) is True and asked == [True]
    assert fresh.has_digest(*ident) is True and asked == [True, False]


# -- digests -----------------------------------------------------------------------------------------
def count_computes(monkeypatch):
    """Count the in-process computations (the real one runs)."""
    calls = []
    real = store_mod.compute_and_cache

    def counted(window, worker, path):
        calls.append((window.id, worker, path))
        return real(window, worker, path)
    monkeypatch.setattr(store_mod, "compute_and_cache", counted)
    return calls


def test_a_digest_is_computed_once_then_served_from_memory(tmp_path, monkeypatch):
    calls = count_computes(monkeypatch)
    store = Store(logdir_of(tmp_path, "w.pt.trace.json"), cache_dir=str(tmp_path / "c"))
    ident = one(store)
    first = store.digest(*ident)
    assert first.window.worker == "w" and first.window.end_ns - first.window.start_ns == 10_000  # 10 us
    assert store.digest(*ident) is first
    assert calls == [(ident[2], "w", store.digest_cache_path(*ident))]
    assert store._once("k") is store._once("k") and store._once("k") is not store._once("j")


def test_memory_holds_memory_items_digests(tmp_path, monkeypatch):
    """memory_items=1: a second window pushes the first out; it is read back from the cache file, not
    computed again (two computations for three asks), and is another object."""
    calls = count_computes(monkeypatch)
    store = Store(logdir_of(tmp_path, "a.pt.trace.json", "b.pt.trace.json"), cache_dir=str(tmp_path / "c"),
                  memory_items=1)
    a = store.digest("r", "a", store.windows("r", "a")[0].id)
    store.digest("r", "b", store.windows("r", "b")[0].id)
    again = store.digest("r", "a", store.windows("r", "a")[0].id)
    assert again is not a and again == a and len(calls) == 2


def test_an_unreadable_window_is_remembered_not_read_again(tmp_path, monkeypatch):
    calls = count_computes(monkeypatch)
    logdir = logdir_of(tmp_path, "w.pt.trace.json", text=BROKEN)
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    path = os.path.join(logdir, "r", "w.pt.trace.json")
    for _ in range(2):
        with pytest.raises(InputError) as e:
            store.digest(*ident)
        assert e.value.file == path and "not JSON" in e.value.problem
    assert len(calls) == 1
    with pytest.raises(InputError):  # digest_part of a failed window: the error, not a part read
        store.digest_part(*ident, (("schema_version", None),))
    assert len(calls) == 1


def test_isolate_bytes_sends_bigger_windows_to_a_child(tmp_path, monkeypatch):
    """A window of exactly isolate_bytes stays here; one byte over goes to the child; None: always here."""
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    size = len(TRACE)
    children = []

    def child(window, worker, path):  # stands in for the spawned process: the same work, here
        children.append((window.id, worker, path))
        store_mod.compute_and_cache(window, worker, path)
        return None
    monkeypatch.setattr(store_mod, "compute_in_child", child)
    for limit, in_child in ((size, 0), (size - 1, 1), (None, 0)):
        children.clear()
        store = Store(logdir, cache_dir=str(tmp_path / f"c{limit}"), isolate_bytes=limit)
        ident = one(store)
        assert store.digest(*ident).window.worker == "w"
        assert children == ([(ident[2], "w", store.digest_cache_path(*ident))] if in_child else [])


def test_a_window_that_grows_past_the_host_limit_goes_to_the_child(tmp_path, monkeypatch):
    from canning_tb.ingest import _json
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    limits, children = [], []

    def too_big(window, worker, path):
        limits.append(path)
        raise _json.TooBigForThisProcess("grew")

    def child(window, worker, path):
        children.append(path)
        return ("the file", "the problem")
    monkeypatch.setattr(store_mod, "compute_and_cache", too_big)
    monkeypatch.setattr(store_mod, "compute_in_child", child)
    store = Store(logdir, cache_dir=str(tmp_path / "c"), isolate_bytes=10**9)
    ident = one(store)
    with pytest.raises(InputError) as e:
        store.digest(*ident)
    assert (e.value.file, e.value.problem) == ("the file", "the problem")
    assert limits == children == [store.digest_cache_path(*ident)]


def test_a_gzip_that_expands_past_isolate_bytes_goes_to_the_child(tmp_path, monkeypatch):
    """The trace with a 20,000-character argument, gzipped to far below 5,000 bytes: the file is small enough
    for this process, its content is not (whitespace would not do: the reader drops it as it inflates)."""
    import gzip
    padded = TRACE.replace('"tid": 1}', '"tid": 1, "args": {"pad": "' + "x" * 20_000 + '"}}', 1)
    path = tmp_path / "logdir" / "r" / "w.pt.trace.json.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(padded.encode()))
    assert os.path.getsize(path) < 5_000
    children = []

    def child(window, worker, path):
        children.append(path)
        return ("the file", "read in the child")
    monkeypatch.setattr(store_mod, "compute_in_child", child)
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"), isolate_bytes=5_000)
    ident = one(store)
    with pytest.raises(InputError, match="read in the child"):
        store.digest(*ident)
    assert children == [store.digest_cache_path(*ident)]


def test_a_child_whose_digest_cannot_be_read_back_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.setattr(store_mod, "compute_in_child", lambda window, worker, path: None)  # wrote nothing
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"), isolate_bytes=0)
    ident = one(store)
    with pytest.raises(InputError) as e:
        store.digest(*ident)
    assert e.value.file == store.window(*ident).path
    assert e.value.problem == "the digest computed in a child process could not be read back"


class Jobs:
    """Stands in for BackgroundJobs: records what is submitted and waited for."""
    def __init__(self):
        self.submitted, self.waited = [], []

    def submit(self, key, job, *args):
        self.submitted.append((key, job, args))

    def wait(self, key, timeout):
        self.waited.append((key, timeout))


def test_the_timeline_index_is_built_in_the_background_once_per_digest(tmp_path, monkeypatch):
    jobs = Jobs()
    monkeypatch.setattr(store_mod, "BackgroundJobs", lambda: jobs)
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"), timeline_index=True)
    ident = one(store)
    store.digest(*ident)
    store.digest(*ident)
    path = store.digest_cache_path(*ident)
    assert jobs.submitted == [(path, store_mod.build_timeline_index, (path,))]
    store.wait_timeline_index(*ident, timeout=7.5)
    assert jobs.waited == [(path, 7.5)]
    store.wait_timeline_index(*ident)
    assert jobs.waited[-1] == (path, 60.0)
    plain = Store(logdir, cache_dir=str(tmp_path / "c"))
    plain.digest(*ident)
    plain.wait_timeline_index(*ident)  # no background jobs: returns at once
    assert len(jobs.submitted) == 1 and len(jobs.waited) == 2


def test_digest_part_is_the_whole_one_in_memory_else_the_part_read_from_the_cache(tmp_path):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    fields = (("schema_version", None), ("window", None))
    computed = store.digest_part(*ident, fields)  # nothing anywhere: computed whole
    assert isinstance(computed, digest_pb2.Digest) and store.digest_part(*ident, fields) is computed
    fresh = Store(logdir, cache_dir=str(tmp_path / "c"))
    part = fresh.digest_part(*ident, fields)
    assert not isinstance(part, digest_pb2.Digest) and part.window.worker == "w"
    chip = Store(logdir, cache_dir=str(tmp_path / "c"), chip="910B1")
    assert isinstance(chip.digest_part(*ident, fields), digest_pb2.Digest)


def test_a_chip_entry_of_another_schema_or_bad_bytes_is_built_again(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    built = []
    real = store_mod.build_for_chip
    monkeypatch.setattr(store_mod, "build_for_chip", lambda *a: built.append(a[1:]) or real(*a))
    first = store.digest(*ident, chip="910B1")
    assert built == [("w", "910B1")] and store.digest(*ident, chip="910B1") is first  # the memory's
    (entry,) = [n for n in os.listdir(os.path.dirname(store.digest_cache_path(*ident))) if ".chip-" in n]
    entry = os.path.join(os.path.dirname(store.digest_cache_path(*ident)), entry)
    assert Store(logdir, cache_dir=str(tmp_path / "c")).digest(*ident, chip="910B1").window.worker == "w"
    assert len(built) == 1  # read back from its entry
    old = digest_pb2.Digest.FromString(open(entry, "rb").read())
    old.schema_version -= 1
    with open(entry, "wb") as f:
        f.write(old.SerializeToString())
    Store(logdir, cache_dir=str(tmp_path / "c")).digest(*ident, chip="910B1")
    with open(entry, "wb") as f:
        f.write(b"\xff\xff not a message")
    Store(logdir, cache_dir=str(tmp_path / "c")).digest(*ident, chip="910B1")
    assert len(built) == 3


# -- a remote logdir's copies ------------------------------------------------------------------------------
class Remote:
    """Stands in for the Mirror: records which files were asked for; `copies`: what ensure() answers."""
    def __init__(self, copies=False):
        self.asked, self.copies = [], copies

    def ensure(self, files):
        self.asked.append(tuple(files))
        return self.copies


def test_a_remote_windows_files_are_fetched_unless_a_source_digest_will_do(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    files = store.window(*ident).files
    assert store._fetch(store.window(*ident)) is False  # a local logdir: nothing to copy
    store.remote = Remote(copies=True)
    assert store.local_window(*ident) == store.window(*ident) and store.remote.asked == [files]
    store.remote = Remote()
    store.digest(*ident)
    assert store.remote.asked == [files, files]  # before the digest (none at the source), after none loaded
    monkeypatch.setattr(store_mod.lookup, "usable_source_digest", lambda window, current_only=False: "/src")
    store.remote = Remote()
    assert store._fetch(store.window(*ident), unless_digested=True) is False and store.remote.asked == []
    assert store._fetch(store.window(*ident)) is False and store.remote.asked == [files]


# -- the columnar events and the snapshots -------------------------------------------------------------
def test_the_events_are_read_from_their_cache_else_from_the_files(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    table = store.table(*ident)
    assert len(table) == 2  # two events in the file
    prefix = store.events_prefix(*ident)
    assert os.path.exists(prefix + ".npz")
    os.utime(prefix + ".npz", ns=(10**9, 10**9))
    monkeypatch.setattr(store_mod, "table_into_cache", lambda *a: pytest.fail("read again"))
    assert len(store.table(*ident)) == 2
    assert os.stat(prefix + ".npz").st_mtime_ns > 10**9  # marked used (the budget evicts the oldest)


def test_a_host_store_reads_missing_events_through_the_digests_computation(tmp_path, monkeypatch):
    """isolate_bytes set: the events come from _compute (in-process, or the child: a stand-in doing the same
    work here), then from the cache; the digest computed on the way names its worker."""
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    monkeypatch.setattr(store_mod, "table_into_cache", lambda *a: pytest.fail("not through _compute"))
    monkeypatch.setattr(store_mod, "compute_in_child",
                        lambda window, worker, path: store_mod.compute_and_cache(window, worker, path) and None)
    for limit in (10**9, 0):
        store = Store(logdir, cache_dir=str(tmp_path / f"c{limit}"), isolate_bytes=limit)
        assert len(store.table(*one(store))) == 2
        assert Store(logdir, cache_dir=str(tmp_path / f"c{limit}")).digest(*one(store)).window.worker == "w"


def test_a_remote_copy_that_changes_the_files_is_looked_up_under_the_new_key(tmp_path, monkeypatch):
    """The remote window was rewritten: the copy made while digesting brings the new version (step of 20 µs,
    not 10), whose digest is in the cache already: it is served, nothing is computed."""
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    path = os.path.join(logdir, "r", "w.pt.trace.json")
    newer = TRACE.replace('"dur": 10', '"dur": 20')

    def put(text, ns):
        with open(path, "w") as f:  # in place: the same inode, as the mirror's copy keeps a path
            f.write(text)
        os.utime(path, ns=(ns, ns))
    put(newer, 2 * 10**18)
    assert Store(logdir, cache_dir=str(tmp_path / "c")).digest("r", "w", "default").window.end_ns == 119_000
    put(TRACE, 10**18)
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)

    class Copying(Remote):
        def ensure(self, files):
            super().ensure(files)
            if len(self.asked) == 2:  # the copy after no digest was found: the new version lands
                put(newer, 2 * 10**18)
                return True
            return False
    store.remote = Copying()
    calls = count_computes(monkeypatch)
    digest = store.digest(*ident)
    assert digest.window.end_ns - digest.window.start_ns == 20_000 and calls == []



def test_snapshots_by_index_read_once_per_version(tmp_path, monkeypatch):
    """A window with one snapshot: index 0 read once (a second ask is the memory's), index 1 and -1 are
    KeyErrors; five versions (mtimes) of the file: the first version is read again (a memory of four)."""
    import canning_tb.ingest.snapshot.read as read_mod
    import shutil

    from conftest import fixture_path
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    snap = run / "w.pickle"
    shutil.copy(fixture_path("memory_snapshot", "snapshot_with_empty_cache.pkl"), snap)
    reads = []
    monkeypatch.setattr(read_mod, "read_snapshot", lambda path: reads.append(path) or {"read": len(reads)})
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "c"))
    ident = one(store)
    assert store.snapshot(*ident) == {"read": 1} and store.snapshot(*ident, index=0) == {"read": 1}
    assert reads == [str(snap)]
    for bad in (1, -1):
        with pytest.raises(KeyError) as e:
            store.snapshot(*ident, index=bad)
        assert e.value.args == (f"snapshot {bad}",)
    for second in range(1, 6):  # versions 1..5: five reads, the memory keeps 2..5
        os.utime(snap, ns=(second * 10**9, second * 10**9))
        store.snapshot(*ident)
    assert len(reads) == 6
    os.utime(snap, ns=(5 * 10**9, 5 * 10**9))
    store.snapshot(*ident)
    assert len(reads) == 6
    os.utime(snap, ns=(10**9, 10**9))
    store.snapshot(*ident)
    assert len(reads) == 7


# -- many windows at once --------------------------------------------------------------------------------
def test_prefetch_digests_what_is_not_digested_and_says_each_error(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "a.pt.trace.json", "b.pt.trace.json")
    trace(tmp_path / "logdir" / "r" / "bad.pt.trace.json", BROKEN)
    store = Store(logdir, cache_dir=str(tmp_path / "c"), max_workers=1)
    items = [("r", w, store.windows("r", w)[0].id) for w in ("a", "b", "bad")]
    store.digest(*items[0])  # digested already: not done again
    progress = []
    errors = store.prefetch(items, progress=lambda done, total: progress.append((done, total)))
    bad = os.path.join(logdir, "r", "bad.pt.trace.json")
    assert list(errors) == [items[2]] and errors[items[2]].startswith(bad + ": not JSON")
    assert progress == [(0, 2), (1, 2), (2, 2)]
    assert os.path.exists(store.digest_cache_path(*items[1]))
    calls = count_computes(monkeypatch)
    with pytest.raises(InputError):  # remembered: the window is not read again
        store.digest(*items[2])
    assert calls == []
    assert store.prefetch(items[:2], progress=lambda d, t: progress.append((d, t))) == {}
    assert progress[-1] == (0, 0)


def test_an_error_that_is_not_lasting_is_not_remembered(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"))
    ident = one(store)
    monkeypatch.setattr(store_mod, "compute_many",
                        lambda todo, workers: iter([(todo[0][0], ("f", "no process"), False)]))
    assert store.prefetch([ident]) == {ident: "f: no process"}
    assert os.path.isdir(os.path.dirname(store.digest_cache_path(*ident)))
    assert store.digest(*ident).window.worker == "w"  # computed now: nothing was remembered


def test_prefetch_counts_a_source_digest_of_other_code_as_digested(tmp_path, monkeypatch):
    """Served until the files change (lookup.py): prefetch asks without `current_only`, and digests nothing."""
    store = Store(logdir_of(tmp_path, "w.pt.trace.json"), cache_dir=str(tmp_path / "c"))
    monkeypatch.setattr(store_mod.lookup, "usable_source_digest",
                        lambda window, current_only=False: None if current_only else "/old/code/digest")
    monkeypatch.setattr(store_mod, "compute_many", lambda todo, workers: pytest.fail(f"digested {todo}"))
    assert store.prefetch([one(store)]) == {}


def test_prefetch_and_digest_part_copy_a_remote_windows_files_unless_a_source_digest_will_do(tmp_path, monkeypatch):
    logdir = logdir_of(tmp_path, "w.pt.trace.json")
    store = Store(logdir, cache_dir=str(tmp_path / "c"), max_workers=1)
    ident = one(store)
    files = store.window(*ident).files
    store.remote = Remote()
    store.prefetch([ident])
    assert store.remote.asked == [files]
    fields = (("schema_version", None), ("window", None))
    fresh = Store(logdir, cache_dir=str(tmp_path / "c"))
    fresh.remote = Remote()
    assert fresh.digest_part(*ident, fields).window.worker == "w"  # the part from the cache
    assert fresh.remote.asked == [files]  # no digest at the source: the files are copied
    monkeypatch.setattr(store_mod.lookup, "usable_source_digest", lambda window, current_only=False: "/src")
    fresh = Store(logdir, cache_dir=str(tmp_path / "c"))
    fresh.remote = Remote()
    assert fresh.digest_part(*ident, fields).window.worker == "w"
    assert fresh.digest(*ident).window.worker == "w"  # from the cache ("/src" cannot be read)
    assert fresh.remote.asked == []
