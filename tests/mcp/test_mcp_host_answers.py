"""mcp/host.py without a scan or a digest: the time a digest typically takes (files of known sizes laid out here,
the rates the module's comment states), the store and its waits with a scanner stood in for, the "digesting"
answers on a clock set by hand, and what the background prefetch is asked (issue 46: fast tests for a mutation run
over host.py; test_mcp_digest_wait.py runs the real Host over a fixture). No test waits on a timer."""
import os
from types import SimpleNamespace

import pytest

from canning_tb.mcp import host as host_mod
from canning_tb.mcp.host import Host, digesting_windows, estimate_s
from canning_tb.queries.errors import NotFound, Unavailable


def files(tmp_path, sizes: dict) -> list[str]:
    out = []
    for name, size in sizes.items():
        with open(tmp_path / name, "wb") as f:
            f.truncate(size)  # sparse: only the size is read
        out.append(str(tmp_path / name))
    return out


def test_a_digest_takes_a_second_plus_25_mb_a_second_of_expanded_trace(tmp_path):
    # 1 MB plain + 0.5 MB gzip (20x: 10 MB) = 11 MB expanded: 1 + 11 / 25 = 1.44 s, shown as 1.4
    names = files(tmp_path, {"b.json.gz": 500_000, "a.json": 1_000_000})
    gone = str(tmp_path / "gone.json")
    assert estimate_s([gone] + names + [gone]) == (1_500_000, 1.4)  # a missing file is left out, the others counted
    assert estimate_s([]) == (0, 1.0)
    # 0.9 MB plain: 1.036 s, shown as 1.0; 2.25 MB gzip: 1 + 45 / 25 = 2.8 s; "gz" without the dot is plain
    assert estimate_s(files(tmp_path, {"c.json": 900_000})) == (900_000, 1.0)
    assert estimate_s(files(tmp_path, {"d.gz": 2_250_000})) == (2_250_000, 2.8)
    assert estimate_s(files(tmp_path, {"e.jsongz": 2_500_000})) == (2_500_000, 1.1)
    # at the rounding edge: 1.25 MB is 1.05 s, shown as 1.1; a byte less is 1.0499... s, shown as 1.0
    assert estimate_s(files(tmp_path, {"f.json": 1_250_000})) == (1_250_000, 1.1)
    assert estimate_s(files(tmp_path, {"g.json": 1_249_999})) == (1_249_999, 1.0)


class Scanner:
    """The plugin's Scanner stood in for: a store (or none), what it was asked."""

    def __init__(self, store=None, error=None, prefetcher=None, found_after_wait=None):
        self.store, self.error, self.prefetcher = store, error, prefetcher
        self.found_after_wait, self.kicks, self.waits = found_after_wait, 0, []

    def kick(self):
        self.kicks += 1

    def wait_first(self, timeout):
        self.waits.append(timeout)
        if self.found_after_wait is not None:
            self.store = self.found_after_wait


def a_host(tmp_path, scanner, digest_wait_s=1.0) -> Host:
    host = Host(str(tmp_path), str(tmp_path / "cache"), digest_wait_s=digest_wait_s)
    host.scanner = scanner
    return host


def test_the_host_over_a_logdir_and_its_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "user_cache"))
    monkeypatch.chdir(tmp_path)
    os.mkdir("log")
    host = Host("log")
    assert host.logdir == str(tmp_path / "log") and host.cache_dir == str(tmp_path / "user_cache")
    assert host.digest_wait_s == 1.0 and host.scanner.interval == 5.0 and host.scanner.logdir == host.logdir
    assert host.scanner.store is None  # nothing scanned before start()
    other = Host("log", "c", rescan_s=2.5, digest_wait_s=0.0)
    assert (other.cache_dir, other.scanner.interval, other.digest_wait_s) == ("c", 2.5, 0.0)


def test_the_store_is_made_for_the_logdir_with_its_cache_outside_and_the_timeline_index(tmp_path, monkeypatch):
    from canning_tb.store import store as store_mod
    from canning_tb.store.scanner import ISOLATE_BYTES
    made = []
    monkeypatch.setattr(store_mod, "Store", lambda *a, **k: made.append((a, k)) or "the store")
    host = Host(str(tmp_path), str(tmp_path / "cache"))
    assert host.scanner._factory(str(tmp_path)) == "the store"
    assert made == [((str(tmp_path),), {"cache_dir": str(tmp_path / "cache"), "isolate_bytes": ISOLATE_BYTES,
                                        "timeline_index": True, "follow_links": False})]
    Host(str(tmp_path), str(tmp_path / "cache"), follow_links=True).scanner._factory(str(tmp_path))
    assert made[-1][1]["follow_links"] is True  # canning-prof mcp --follow-links reaches the store


def test_the_store_kicks_a_scan_and_waits_five_seconds_for_the_first(tmp_path):
    scanner = Scanner(store="s")
    host = a_host(tmp_path, scanner)
    host.start()
    assert scanner.kicks == 1
    assert host.store() == "s" and scanner.kicks == 2 and scanner.waits == []  # a rescan asked each call
    scanner = Scanner(found_after_wait="late")
    assert a_host(tmp_path, scanner).store() == "late" and scanner.waits == [5.0]
    with pytest.raises(Unavailable) as still:
        a_host(tmp_path, Scanner()).store()
    assert str(still.value) == "still discovering the profiles under the logdir: ask again in a few seconds"
    with pytest.raises(Unavailable, match="^the logdir cannot be listed$"):
        a_host(tmp_path, Scanner(error="the logdir cannot be listed")).store()


def test_the_prefetcher_is_the_scanned_stores(tmp_path):
    scanner = Scanner(found_after_wait="s", prefetcher="p")
    assert a_host(tmp_path, scanner).prefetcher == "p" and scanner.waits == [5.0]  # the store first
    with pytest.raises(Unavailable):
        a_host(tmp_path, Scanner(prefetcher="p")).prefetcher


def test_the_timeline_index_cache_is_made_once(tmp_path):
    from canning_tb.queries.timeline import IndexCache
    host = a_host(tmp_path, Scanner())
    first = host.timeline
    assert isinstance(first, IndexCache) and host.timeline is first


class Store:
    """Windows of known files; `digested` lists the windows whose digest is there."""

    def __init__(self, found: dict, digested=()):
        self.found, self.digested = found, set(digested)

    def window(self, run, worker, window):
        return self.found[(run, worker, window)]

    def has_digest(self, run, worker, window):
        return (run, worker, window) in self.digested

    def digest_key(self, run, found):
        return f"key-{run}-{found.label}"


class Prefetcher:
    def __init__(self, answers):
        self.answers, self.asked = list(answers), []

    def progress(self, key, items, wait):
        self.asked.append((key, items, wait))
        return self.answers.pop(0)


class Clock:
    def __init__(self, now):
        self.now = now

    def monotonic(self):
        return self.now


def pending_host(tmp_path, monkeypatch, answers, digested=(), wait=1.0, clock=100.0):
    names = files(tmp_path, {"t.json": 1_050_000})  # 1 + 1.05 / 25 = 1.042 s, shown as 1.0
    found = {("r", "w", "7"): SimpleNamespace(label="step 7", files=names),
             ("r", "w", "8"): SimpleNamespace(label="step 8", files=names),
             ("r", "w", "9"): SimpleNamespace(label="step 9", files=names)}
    prefetcher = Prefetcher(answers)
    host = a_host(tmp_path, Scanner(store=Store(found, digested), prefetcher=prefetcher), digest_wait_s=wait)
    time = Clock(clock)
    monkeypatch.setattr(host_mod, "time", time)
    return host, prefetcher, time


def test_a_digested_window_is_not_pending_and_nothing_is_prefetched(tmp_path, monkeypatch):
    host, prefetcher, _ = pending_host(tmp_path, monkeypatch, [], digested=[("r", "w", "7")])
    assert host.pending("r", "w", "7") is None and prefetcher.asked == []


def test_an_unknown_window_is_not_found(tmp_path, monkeypatch):
    host, _, _ = pending_host(tmp_path, monkeypatch, [])
    with pytest.raises(NotFound, match="^unknown run/worker/window: 'r' / 'w' / '6'$"):
        host.pending("r", "w", "6")


def test_a_window_digested_within_the_wait_is_not_pending(tmp_path, monkeypatch):
    host, prefetcher, _ = pending_host(tmp_path, monkeypatch, [None], wait=0.25)
    assert host.pending("r", "w", "7") is None
    assert prefetcher.asked == [(("mcp", "r", "w", "7", "key-r-step 7"), [("r", "w", "7")], 0.25)]


def test_a_window_being_digested_says_since_when_and_when_to_ask_again(tmp_path, monkeypatch):
    running = {"done": 0, "total": 1}
    host, prefetcher, clock = pending_host(tmp_path, monkeypatch, [running] * 3, wait=0.5)
    first = host.pending("r", "w", "7")
    # the first call counts from now, plus the wait it spent; 1.05 MB (shown 1.1) typically 1.0 s: ask again in
    # 0.5 s, at least 1
    assert first == {"run": "r", "worker": "w", "window": "7", "status": "digesting",
                     "message": "w / step 7 is being digested (for 0.5 s now); a window of 1.1 MB of files typically "
                                "takes about 1.0 s here: ask again",
                     "elapsed_s": 0.5, "typical_s": 1.0, "size_bytes": 1_050_000, "retry_after_s": 1.0}
    clock.now += 30.04  # the same window asked again: counted from the first call, in tenths of a second
    again = host.pending("r", "w", "7")
    assert again["elapsed_s"] == 30.5 and again["retry_after_s"] == 1.0 and "(for 30.5 s now)" in again["message"]
    assert host.pending("r", "w", "8")["elapsed_s"] == 0.5  # another window: its own count
    assert [key for key, _, _ in prefetcher.asked] == [("mcp", "r", "w", "7", "key-r-step 7")] * 2 + [
        ("mcp", "r", "w", "8", "key-r-step 8")]


@pytest.mark.parametrize("size, retry", [(50_000_000, 2.5), (400_000_000, 10.0), (47_500_000, 2.4)])
def test_the_retry_is_the_typical_time_left_between_one_and_ten_seconds(tmp_path, monkeypatch, size, retry):
    host, _, _ = pending_host(tmp_path, monkeypatch, [{"done": 0, "total": 1}], wait=0.5)
    big = files(tmp_path, {"big.json": size})  # 50 MB: 3.0 s typical, 2.5 left; 400 MB: 17 s, 10 at most
    host.scanner.store.found[("r", "w", "7")].files = big  # 47.5 MB: 2.9 s, 2.4 left
    assert host.pending("r", "w", "7")["retry_after_s"] == retry


def test_many_windows_all_digested_or_one_left(tmp_path, monkeypatch):
    items = [("r", "w", "7"), ("r", "w", "8"), ("r", "w", "9")]
    host, prefetcher, _ = pending_host(tmp_path, monkeypatch, [], digested=items)
    assert host.pending_many("r", items) is None and prefetcher.asked == []
    host, prefetcher, _ = pending_host(tmp_path, monkeypatch, [{"done": 0, "total": 1}], digested=items[:2], wait=0.5)
    one = host.pending_many("r", items)  # one window left: its own answer
    assert one["window"] == "9" and one["status"] == "digesting" and "window_index" not in one
    assert prefetcher.asked == [(("mcp", "r", "w", "9", "key-r-step 9"), [("r", "w", "9")], 0.5)]


def test_many_windows_being_digested_say_how_many_are_done(tmp_path, monkeypatch):
    items = [("r", "w", "7"), ("r", "w", "8"), ("r", "w", "9")]
    host, prefetcher, _ = pending_host(tmp_path, monkeypatch, [{"done": 1, "total": 2}, None],
                                       digested=items[:1], wait=0.5)
    got = host.pending_many("r", items)  # one digested before, one of the two being digested done since
    assert got == {"run": "r", "window_index": None, "status": "digesting", "done": 2, "total": 3,
                   "message": "2 of 3 windows are digested; the others are being digested in the background: "
                              "ask again", "retry_after_s": 2.0}
    assert prefetcher.asked == [(("mcp", "r", (items[1], items[2])), items[1:], 0.5)]
    assert host.pending_many("r", items) is None  # the prefetch finished within the wait


def test_the_answer_about_many_windows_names_the_position():
    assert digesting_windows("r", 3, 0, 8) == {
        "run": "r", "window_index": 3, "status": "digesting", "done": 0, "total": 8,
        "message": "0 of 8 windows are digested; the others are being digested in the background: ask again",
        "retry_after_s": 2.0}
