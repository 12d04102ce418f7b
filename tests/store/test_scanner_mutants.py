"""The Scanner (a Store built and refreshed in a background thread), its listing, and the Prefetcher
under mutation (issue 46), with stand-in stores: what a scan builds once and refreshes after, what a
failed scan says and keeps, the listing's fields, and a prefetch's progress. Threads are held on
Events and joined, never timed: a wait that expires is only ever one that must not block."""
import logging
import math
import threading

from canning_tb.store import scanner as scanner_mod
from canning_tb.store.discover import Window, Worker
from canning_tb.store.prefetcher import Prefetcher
from canning_tb.store.scanner import ISOLATE_BYTES, Scanner, listing
from canning_tb.util.remote_fs import RemoteError


class Store:
    """Stands in for a Store: two runs ("b" listed before "a": the listing keeps runs() order), the
    second one gone by the time its workers are asked (KeyError) when `vanish`."""
    def __init__(self, logdir, vanish=False):
        self.logdir, self.vanish, self.refreshed = logdir, vanish, 0
        win = Window(id="w1", label="window 1", format="kineto", path="/x/r/a.pt.trace.json",
                     files=("/x/r/a.pt.trace.json", "/x/r/s.pickle"), trigger="", snapshots=("/x/r/s.pickle",))
        win2 = Window(id="w2", label="window 2", format="canning", path="/x/r/m.canning.json",
                      files=(), status="analysing", trigger="slow step")
        self.workers_of = {"b": [Worker("rank1", 1, [win, win2])], "a": [Worker("w", -1, [])]}

    def refresh(self):
        self.refreshed += 1

    def runs(self):
        return ["b", "a"]

    def workers(self, run):
        if self.vanish and run == "a":
            raise KeyError(run)
        return self.workers_of[run]

    def windows(self, run, worker):
        return next(w for w in self.workers_of[run] if w.name == worker).windows


def test_listing_by_hand():
    expected_b = {"name": "b", "workers": [{"name": "rank1", "rank": 1, "windows": [
        {"id": "w1", "label": "window 1", "format": "kineto", "status": "ready",
         "files": ["a.pt.trace.json", "s.pickle"], "trigger": None, "snapshots": 1},
        {"id": "w2", "label": "window 2", "format": "canning", "status": "analysing", "files": [],
         "trigger": "slow step", "snapshots": 0}]}]}
    assert listing(Store("/x")) == {"runs": [expected_b, {"name": "a", "workers": [
        {"name": "w", "rank": -1, "windows": []}]}]}
    assert listing(Store("/x", vanish=True)) == {"runs": [expected_b]}
    first_gone = Store("/x", vanish=True)
    first_gone.runs = lambda: ["a", "b"]  # the vanished run listed first: the others still listed
    assert listing(first_gone) == {"runs": [expected_b]}


def test_default_store_isolates_16_mib_and_indexes_timelines(monkeypatch):
    from canning_tb.store import store as store_mod
    made = []
    monkeypatch.setattr(store_mod, "Store", lambda logdir, **kw: made.append((logdir, kw)) or "store")
    assert scanner_mod.default_store("/logs") == "store"
    assert ISOLATE_BYTES == 16 * 1024 * 1024
    assert made == [("/logs", {"isolate_bytes": 16 * 1024 * 1024, "timeline_index": True})]


def test_no_logdir_is_loaded_at_once_and_builds_nothing():
    made = []
    scanner = Scanner(None, 0, store_factory=made.append)
    assert scanner.loading is True and scanner.wait_first(0) is False
    scanner.kick()
    assert scanner.loading is False and scanner.wait_first(0) is True
    assert made == [] and scanner._thread is None and scanner.store is None and scanner.listing is None
    Scanner("", 0, store_factory=made.append).kick()
    assert made == []


def test_the_first_scan_builds_the_store_and_the_next_ones_refresh_it():
    made = []
    scanner = Scanner("/logs", 0, store_factory=lambda logdir: made.append(Store(logdir)) or made[-1])
    assert scanner.logdir == "/logs" and scanner.interval == 0
    assert scanner.prefetcher is None and scanner.error is None and scanner.listing is None
    scanner.join(1)  # no scan yet: returns at once
    scanner.kick()
    thread = scanner._thread
    assert thread.name == "canning-discovery" and thread.daemon
    scanner.join(None)
    assert scanner.wait_first(0) is True and scanner.loading is False
    assert [s.logdir for s in made] == ["/logs"] and scanner.store is made[0] and made[0].refreshed == 0
    assert isinstance(scanner.prefetcher, Prefetcher) and scanner.prefetcher.store is made[0]
    assert scanner.listing == listing(made[0]) and scanner.error is None
    scanner.kick()  # interval 0: scans again, with the same store
    scanner.join(None)
    assert len(made) == 1 and made[0].refreshed == 1 and scanner._thread is not thread


def test_no_second_scan_while_one_runs_or_within_the_interval():
    release, made = threading.Event(), []

    def slow(logdir):
        release.wait()
        made.append(Store(logdir))
        return made[-1]
    scanner = Scanner("/logs", 0, store_factory=slow)
    scanner.kick()
    first = scanner._thread
    scanner.kick()  # one runs: not a second
    assert scanner._thread is first and scanner.loading is True
    scanner.join(0)  # waits no longer than asked
    assert first.is_alive()
    release.set()
    scanner.join(None)
    assert len(made) == 1 and scanner.loading is False
    waiting = Scanner("/logs", math.inf, store_factory=lambda logdir: Store(logdir))
    waiting.kick()
    waiting.join(None)
    thread = waiting._thread
    waiting.kick()  # ended less than an infinite interval ago
    assert waiting._thread is thread and waiting.store.refreshed == 0


def test_a_failed_scan_says_why_and_keeps_the_last_listing(caplog):
    caplog.set_level(logging.WARNING, logger="canning_tb.store")
    outcome = {}

    class Failing(Store):
        def refresh(self):
            if "raise" in outcome:
                raise outcome["raise"]
    scanner = Scanner("/logs", 0, store_factory=lambda logdir: Failing(logdir))
    scanner.kick()
    scanner.join(None)
    good = scanner.listing
    outcome["raise"] = RemoteError("s3://b: access denied")
    scanner.kick()
    scanner.join(None)
    assert scanner.error == "s3://b: access denied" and scanner.listing == good
    outcome["raise"] = ValueError("boom")
    scanner.kick()
    scanner.join(None)
    assert scanner.error == "discovery of the logdir failed: ValueError: boom" and scanner.listing == good
    assert scanner.wait_first(0) and not scanner.loading
    assert [r.getMessage() for r in caplog.records] == ["canning: s3://b: access denied",
                                                        "canning: discovery of /logs failed"]
    assert caplog.records[1].exc_info[0] is ValueError
    outcome.clear()
    scanner.kick()
    scanner.join(None)
    assert scanner.error is None


def test_a_failed_first_scan_still_ends_the_loading():
    def broken(logdir):
        raise OSError("no such folder")
    scanner = Scanner("/logs", 0, store_factory=broken)
    scanner.kick()
    scanner.join(None)
    assert scanner.error == "discovery of the logdir failed: OSError: no such folder"
    assert scanner.loading is False and scanner.store is None and scanner.listing is None


# -- the Prefetcher ------------------------------------------------------------------------------------
class Prefetching:
    """A store whose prefetch finds one window digested already and says that one more is done, then
    waits for `release`."""
    def __init__(self, fail=False):
        self.release, self.calls, self.fail = threading.Event(), [], fail

    def prefetch(self, items, progress):
        self.calls.append(list(items))
        if self.fail:
            raise RuntimeError("a bug")
        progress(0, len(items) - 1)
        progress(1, len(items) - 1)
        self.release.wait()


def reported(pre, key, done):
    """Until the prefetch under `key` has said `done` (its thread then waits on release)."""
    while pre._jobs[key]["done"] != done:
        threading.Event().wait(0.01)


def test_progress_counts_windows_already_digested_as_done():
    """3 items, 1 digested already, so 2 to do, 1 of them done: 3 - 2 + 1 = 2 of 3."""
    store = Prefetching()
    pre = Prefetcher(store)
    items = [("r", "w", "1"), ("r", "w", "2"), ("r", "w", "3")]
    assert pre.progress("k", items, wait=0) in ({"done": d, "total": 3} for d in range(3))
    reported(pre, "k", 2)
    assert pre.progress("k", items, wait=0) == {"done": 2, "total": 3}
    thread = pre._jobs["k"]["thread"]
    assert thread.name == "canning-prefetch-k" and thread.daemon
    other = [("r", "w", "4"), ("r", "w", "5")]
    assert pre.progress("k", other, wait=0) == {"done": 2, "total": 3}  # still running: followed, not restarted
    store.release.set()
    thread.join()
    assert pre.progress("k", items, wait=0) is None and store.calls == [items]  # done: not started again
    store.release.clear()
    pre.progress("k", other, wait=0)  # other items after the end: a new prefetch
    reported(pre, "k", 2)  # 2 items, 1 to do, 1 done: 2 - 1 + 1 = 2 of 2
    assert pre.progress("k", other, wait=0) == {"done": 2, "total": 2}
    store.release.set()
    pre._jobs["k"]["thread"].join()
    assert store.calls == [items, other]


def test_before_any_report_none_of_the_items_is_done():
    class Held:
        def __init__(self):
            self.release = threading.Event()

        def prefetch(self, items, progress):
            self.release.wait()
    store = Held()
    pre = Prefetcher(store)
    assert pre.progress("k", [("r", "w", "1"), ("r", "w", "2")], wait=0) == {"done": 0, "total": 2}
    store.release.set()
    pre._jobs["k"]["thread"].join()


def test_a_failed_prefetch_is_logged_and_ends(caplog):
    failing = Prefetcher(Prefetching(fail=True))
    assert failing.progress("k", [("r", "w", "1")], wait=None) is None
    assert [r.getMessage() for r in caplog.records] == ["canning: prefetch of k failed"]


def test_progress_waits_for_a_quick_prefetch():
    class Quick:
        def prefetch(self, items, progress):
            progress(0, 0)
    pre = Prefetcher(Quick())
    assert pre.progress("k", [("r", "w", "1")], wait=None) is None
    assert pre._jobs["k"]["done"] == 1 and pre._jobs["k"]["total"] == 1  # 1 - 0 + 0
