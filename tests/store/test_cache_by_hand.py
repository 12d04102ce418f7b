"""store/cache.py by hand (issue 46: fast tests for a mutation run): where a run's entries go, what of a file is in
a window's key, and which entries the size budget removes (least recently used windows first, a window's files
together, the entry being written kept, nothing that is not ours). Entries are files the test writes, with sizes
and times it chooses; the expected survivors are worked out from them."""
import hashlib
import os

import pytest

from canning_tb.store import cache

KEY = "0123456789abcdef0123"  # a window key: 20 hex digits


@pytest.fixture(autouse=True)
def own_settings(monkeypatch, tmp_path):
    for name in (cache.BESIDE_ENV, cache.BUDGET_ENV, "CANNING_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def entry(folder, key, what, size, mtime_s):
    path = folder / f"{key}.{what}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime_s, mtime_s))
    return path


def run_folder(root, run_path):
    return root / hashlib.sha1(os.path.abspath(run_path).encode()).hexdigest()[:16]


# -- where -----------------------------------------------------------------------------------------------------------
def test_the_user_cache_folder_by_setting(tmp_path, monkeypatch):
    assert cache.user_cache_root() == str(tmp_path / "home" / ".cache" / "canning-tb")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.user_cache_root() == str(tmp_path / "xdg" / "canning-tb")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.user_cache_root() == str(tmp_path / "mine")


def test_a_runs_folder_is_named_by_its_path(tmp_path, monkeypatch):
    run = tmp_path / "log" / "run"
    run.mkdir(parents=True)
    expected = run_folder(tmp_path / "home" / ".cache" / "canning-tb", run)
    assert cache.cache_dir_for(str(run)) == str(expected)
    assert cache.cache_dir_for(str(run), str(tmp_path / "c")) == str(run_folder(tmp_path / "c", run))
    assert cache.digest_file(str(run), KEY) == str(expected / f"{KEY}.digest.pb")


@pytest.mark.parametrize("value, beside", [("1", True), ("yes", True), (" On ", True), ("TRUE", True), ("0", False),
                                           ("", False), ("no", False)])
def test_beside_the_data_only_when_asked_and_writable(tmp_path, monkeypatch, value, beside):
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.setenv(cache.BESIDE_ENV, value)
    user = str(run_folder(tmp_path / "home" / ".cache" / "canning-tb", run))
    assert cache.cache_dir_for(str(run)) == (str(run / ".canning") if beside else user)
    assert cache.cache_dir_for(str(run), str(tmp_path / "c")) == str(run_folder(tmp_path / "c", run))  # --cache-dir wins


def test_beside_the_data_never_through_a_link_nor_into_a_read_only_run(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.BESIDE_ENV, "1")
    user = tmp_path / "home" / ".cache" / "canning-tb"
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(tmp_path, linked / ".canning")
    assert cache.cache_dir_for(str(linked)) == str(run_folder(user, linked))
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)  # root may write anyway: the owner's write bit is what counts
    try:
        assert cache.cache_dir_for(str(ro)) == str(run_folder(user, ro))
    finally:
        os.chmod(ro, 0o755)
    assert cache.cache_dir_for(str(tmp_path / "missing")) == str(run_folder(user, tmp_path / "missing"))


# -- a file's identity in a key ----------------------------------------------------------------------------------------
def test_what_of_a_file_is_its_identity(tmp_path):
    f = tmp_path / "run" / "t.json"
    f.parent.mkdir()
    f.write_bytes(b"abc")
    os.utime(f, ns=(5_000_000_123, 5_000_000_123))
    st = os.stat(f)
    assert cache._file_identity(str(f), str(tmp_path)) == f"|run/t.json:3:5000000123:{st.st_dev}:{st.st_ino}"
    assert cache._file_identity(str(f), str(tmp_path), device=False) == f"|run/t.json:3:5000000123::{st.st_ino}"
    assert cache._file_identity(str(tmp_path / "run" / "gone"), str(tmp_path)) == "|run/gone:missing"
    for side in ("x.db-shm", "x.db-journal"):
        (tmp_path / side).write_bytes(b"1234")
        assert cache._file_identity(str(tmp_path / side), str(tmp_path)) == ""
    (tmp_path / "x.db-wal").write_bytes(b"")
    assert cache._file_identity(str(tmp_path / "x.db-wal"), str(tmp_path)) == ""  # made empty by a reader
    (tmp_path / "x.db-wal").write_bytes(b"12345")
    assert cache._file_identity(str(tmp_path / "x.db-wal"), str(tmp_path)) == "|x.db-wal:5"


# -- the budget --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, limit", [(None, 4 << 30), ("1000", 1000), ("0", 0), ("-5", 0), ("lots", 4 << 30),
                                          ("", 4 << 30)])
def test_the_budget_setting(monkeypatch, value, limit):
    if value is not None:
        monkeypatch.setenv(cache.BUDGET_ENV, value)
    assert cache.budget() == limit


def keys(n):
    return [f"{i:020x}" for i in range(1, n + 1)]


def left(folder):
    return sorted(p.name for p in folder.iterdir())


def test_the_least_recently_used_windows_go_first_their_files_together(tmp_path, monkeypatch):
    """Four windows of 300 bytes (a digest of 100 + events of 200), used at t = 10, 40, 20, 30 (a window's time: its
    newest file's). Budget 700: 1,200 bytes - 300 (t=10) - 300 (t=20) = 600 fits; the entry being written is kept."""
    monkeypatch.setenv(cache.BUDGET_ENV, "700")
    run = tmp_path / "run" / ".canning"
    a, b, c, d = keys(4)
    for key, t in ((a, 10), (b, 40), (c, 20), (d, 30)):
        entry(run, key, "digest.pb", 100, t - 5)
        entry(run, key, "events.npz", 200, t)
    (run / "notes.txt").write_bytes(b"y" * 5000)  # not ours: never removed, never counted
    entry(run, "f" * 20, "digest.pb.tmp", 5000, 1)  # being written
    removed = cache.enforce_budget(str(run / f"{b}.digest.pb"))
    assert removed == 600
    assert left(run) == sorted([f"{b}.digest.pb", f"{b}.events.npz", f"{d}.digest.pb", f"{d}.events.npz",
                                "notes.txt", "f" * 20 + ".digest.pb.tmp"])


def test_the_entry_being_written_is_kept_even_when_oldest(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.BUDGET_ENV, "250")
    run = tmp_path / "run" / ".canning"
    a, b, c = keys(3)
    entry(run, a, "digest.pb", 100, 10)  # the oldest, and the one being written
    entry(run, b, "digest.pb", 100, 20)
    entry(run, c, "digest.pb", 100, 30)
    assert cache.enforce_budget(str(run / f"{a}.digest.pb")) == 100  # 300 - b's 100 = 200 <= 250
    assert left(run) == [f"{a}.digest.pb", f"{c}.digest.pb"]


def test_within_the_budget_nothing_goes(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.BUDGET_ENV, "300")
    run = tmp_path / "run" / ".canning"
    for key, t in zip(keys(3), (1, 2, 3)):
        entry(run, key, "digest.pb", 100, t)
    assert cache.enforce_budget(str(run / f"{keys(3)[2]}.digest.pb")) == 0 and len(left(run)) == 3


def test_the_user_cache_is_one_budget_over_every_runs_folder(tmp_path, monkeypatch):
    """Two runs' folders (16 hex digits) and a folder not ours; budget 250 over 400 bytes: the two oldest go,
    whichever run they belong to, and the keep is by folder and key (the same key in another run may go)."""
    monkeypatch.setenv(cache.BUDGET_ENV, "250")
    root = tmp_path / "usercache"
    one, two, other = root / ("1" * 16), root / ("2" * 16), root / "not-a-run"
    a, b = keys(2)
    entry(one, a, "digest.pb", 100, 10)
    entry(two, a, "digest.pb", 100, 5)  # the same key in another run: not the one kept
    entry(two, b, "digest.pb", 100, 30)
    entry(one, b, "digest.pb", 100, 40)
    entry(other, a, "digest.pb", 9999, 1)
    # oldest first: two/a (t=5) goes, one/a (t=10) is the one written, kept; two/b (t=30) goes: 200 <= 250
    assert cache.enforce_budget(str(one / f"{a}.digest.pb")) == 200
    assert left(one) == [f"{a}.digest.pb", f"{b}.digest.pb"] and left(two) == [] and len(left(other)) == 1


def test_a_window_key_is_20_hex_digits_with_the_device_only_in_this_machines_cache(tmp_path, monkeypatch):
    """The key's device part is asked of _file_identity: a spy records what each file is asked with."""
    from canning_tb.store.discover import Window
    f = tmp_path / "t.json"
    f.write_bytes(b"x")
    w = Window(id="1", label="", format="kineto", path=str(f), files=(str(f),))
    key = cache.window_key(w, 6, str(tmp_path))
    assert len(key) == 20 and all(c in "0123456789abcdef" for c in key) and cache._ENTRY.match(key + ".digest.pb")
    asked, real = [], cache._file_identity
    monkeypatch.setattr(cache, "_file_identity", lambda *a: asked.append(a[2]) or real(*a))
    cache.window_key(w, 6, str(tmp_path))
    monkeypatch.setenv(cache.BESIDE_ENV, "1")  # shared between machines (NFS numbers devices per client)
    cache.window_key(w, 6, str(tmp_path))
    assert asked == [True, False]


def test_the_digest_file_of_a_cache_folder_given(tmp_path):
    run = tmp_path / "run"
    assert cache.digest_file(str(run), KEY, str(tmp_path / "c")) == str(run_folder(tmp_path / "c", run) / f"{KEY}.digest.pb")


def test_write_atomic_writes_the_bytes(tmp_path):
    cache.write_atomic(str(tmp_path / "a.pb"), b"abc")
    assert (tmp_path / "a.pb").read_bytes() == b"abc"


def test_links_in_the_cache_are_never_followed_nor_removed(tmp_path, monkeypatch):
    """A run folder that is a link (to a folder outside the cache) and an entry that is a link to a file outside:
    neither is counted, entered or removed, and what they lead to stays."""
    monkeypatch.setenv(cache.BUDGET_ENV, "100")
    root = tmp_path / "usercache"
    mine = root / ("1" * 16)
    a, b = keys(2)
    entry(mine, a, "digest.pb", 100, 10)
    outside = tmp_path / "outside"
    target = entry(outside, b, "digest.pb", 5000, 1)
    os.symlink(outside, root / ("2" * 16))
    os.symlink(target, mine / f"{b}.events.npz")
    assert cache.enforce_budget(str(mine / f"{a}.digest.pb")) == 0  # only a's 100 bytes are the cache's: within
    assert target.exists() and (mine / f"{b}.events.npz").is_symlink()


def test_a_windows_time_is_its_newest_files_whatever_their_sizes(tmp_path, monkeypatch):
    """Window a: five small files and a sparse one of 10^12 bytes, all at t=10 s; window b: one file at t=20 s. Over the
    budget, a (older) goes first and that is enough: b stays. Sizes never stand in for times."""
    monkeypatch.setenv(cache.BUDGET_ENV, str(1 << 30))
    run = tmp_path / "run" / ".canning"
    a, b = keys(2)
    for what in ("digest.pb", "x1", "x2", "x3", "x4"):
        entry(run, a, what, 10, 10)
    big = run / f"{a}.events.npz"
    with open(big, "wb") as f:
        f.truncate(10 ** 12)  # sparse: no disk used
    os.utime(big, (10, 10))
    entry(run, b, "digest.pb", 10, 20)
    assert cache.enforce_budget(str(run / f"{keys(3)[2]}.digest.pb")) == 10 ** 12 + 50
    assert left(run) == [f"{b}.digest.pb"]


def test_a_file_another_viewer_removed_first_does_not_stop_the_rest(tmp_path, monkeypatch):
    """os.unlink stands in for a second viewer evicting the same entry at once: one file is already gone."""
    monkeypatch.setenv(cache.BUDGET_ENV, "100")
    run = tmp_path / "run" / ".canning"
    a, b = keys(2)
    entry(run, a, "a.pb", 100, 10)
    entry(run, a, "b.pb", 100, 10)
    entry(run, b, "digest.pb", 100, 20)
    real, calls = os.unlink, []

    def unlink(path):  # the first file removed is found gone (the other viewer was first), the rest as usual
        calls.append(path)
        real(path)
        if len(calls) == 1:
            raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(cache.os, "unlink", unlink)
    cache.enforce_budget(str(run / f"{b}.digest.pb"))
    assert left(run) == [f"{b}.digest.pb"]
