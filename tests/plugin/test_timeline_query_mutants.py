"""queries/timeline.py's parts that need no event table (issue 46: fast tests for a mutation run): a track's name,
the tracks asked, the ranks side by side, the critical path's share of a range, what the tile, search and summary
routes refuse before reading a window, the loading stage said, and a window's original trace downloaded. Each
expected value is worked out by hand in the test (the routes over real tables: tests/timeline/test_timeline.py)."""
import os
from types import SimpleNamespace

import numpy as np
import pytest

from _hand_store import HandStore, RunStore
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.queries import timeline
from canning_tb.queries.errors import BadParameter, NotFound


def meta(processes=None, threads=None):
    return SimpleNamespace(meta=SimpleNamespace(process_names=processes or {}, thread_names=threads or {}))


def test_a_tracks_name():
    named = meta({7: "python3"}, {"7:9": "MainThread"})
    assert timeline._track_name(named, 7, 9, -1, False) == "python3 / MainThread"
    assert timeline._track_name(named, 7, 9, -1, True) == "python3 / MainThread / Python"
    assert timeline._track_name(named, 7, 8, -1, False) == "python3 / thread 8"
    assert timeline._track_name(meta(), 5, 3, -1, False) == "process 5 / thread 3"
    assert timeline._track_name(meta(), -1, -1, -1, False) == "no process id in the file / no thread id in the file"
    assert timeline._track_name(meta(), 2, 4, 0, False) == "device 0 / stream 4"
    assert timeline._track_name(meta(), -1, 4, 1, False) == "device 1 / stream 4"
    assert timeline._track_name(meta({2: "GPU 0"}), 2, -1, 0, False) == "GPU 0 / no thread id in the file"


def loaded(tracks: int):
    return SimpleNamespace(index=SimpleNamespace(track_pid=np.zeros(tracks, np.int64)), origin=1000)


def test_the_tracks_asked():
    assert timeline._tracks_filter(loaded(3), None) is None
    chosen = timeline._tracks_filter(loaded(3), [2, 0])
    assert chosen.tolist() == [2, 0] and chosen.dtype == np.int64
    empty = timeline._tracks_filter(loaded(3), [])
    assert empty.tolist() == [] and empty.dtype == np.int64  # not numpy's float64 of an empty list
    for asked, first_bad in (([3], 3), ([0, -1], -1), ([1, 5, 7], 5)):
        with pytest.raises(BadParameter, match=rf"^unknown track {first_bad} \(the window has 3\)$"):
            timeline._tracks_filter(loaded(3), asked)


def window(rank, start, end, step_starts=()):
    d = pb.Digest()
    d.window.rank, d.window.start_ns, d.window.end_ns = rank, start, end
    for s in step_starts:
        d.steps.add(start_ns=s)
    return d


def test_the_ranks_side_by_side(tmp_path):
    digests = {("r", "w0", "a"): window(3, 1000, 5000, (1200, 1500)), ("r", "w1", "a"): window(4, 700, 900),
               ("r", "w2", "a"): window(5, 1500, 1600, (1550,))}
    store = RunStore(tmp_path, "r", {"w0": (0, ["a"]), "w1": (1, ["a"]), "w9": (9, ["a"]), "w2": (2, ["a"])},
                     digests)
    body = timeline.ranks_impl(store, "r", 0)
    assert (body["run"], body["position"]) == ("r", 0)
    # offsets against the first readable rank (w0, 1000): -300 and +500; w9's digest is not there
    assert body["ranks"] == [
        {"worker": "w0", "window": "a", "rank": 3, "start_ns": 1000, "duration_ns": 4000, "first_step_ns": 200,
         "offset_ns": 0},
        {"worker": "w1", "window": "a", "rank": 4, "start_ns": 700, "duration_ns": 200, "first_step_ns": 0,
         "offset_ns": -300},
        {"worker": "w9", "window": "a", "rank": 9, "error": "unknown run/worker/window: 'r' / 'w9' / 'a'"},
        {"worker": "w2", "window": "a", "rank": 5, "start_ns": 1500, "duration_ns": 100, "first_step_ns": 50,
         "offset_ns": 500}]
    with pytest.raises(NotFound, match=r"^no worker of run 'r' has a window at position 1$"):
        timeline.ranks_impl(store, "r", 1)
    store.digests.clear()  # no rank readable: each says why, none has an offset
    assert [sorted(m) for m in timeline.ranks_impl(store, "r", 0)["ranks"]] == [["error", "rank", "window",
                                                                                "worker"]] * 4


def path_store(tmp_path, total=None):
    d = pb.Digest()
    p = d.critical_path.add(start_ns=100, dur_ns=100)  # [100, 200)
    for name, ts, dur in (("a", 100, 30), ("", 130, 20), ("b", 150, 40), ("c", 190, 10)):
        p.segments.add(name=name, ts_ns=ts, dur_ns=dur)
    p.segments_total = len(p.segments) if total is None else total
    q = d.critical_path.add(start_ns=300, dur_ns=50)  # [300, 350)
    q.segments.add(name="d", ts_ns=300, dur_ns=50)
    q.segments_total = 1
    return HandStore(tmp_path, {("r", "w", "1"): d})


def test_the_critical_paths_share_of_a_range(tmp_path):
    store = path_store(tmp_path)
    share = lambda t0, t1: timeline._critical_path_share(store, "r", "w", "1", t0, t1)  # noqa: E731
    # [100, 200): a 30 + b 40 + c 10 = 80 (the 20 ns gap has no name) of 100
    assert share(100, 200) == 0.8
    # [140, 170): b's [150, 170) = 20 of 30
    assert share(140, 170) == round(20 / 30, 6)
    # [195, 310): c's [195, 200) 5 + d's [300, 310) 10 = 15 of 115
    assert share(195, 310) == round(15 / 115, 6)
    assert share(200, 300) is None  # no step there: [100, 200) ends at 200, [300, 350) starts at 300
    assert share(350, 400) is None and share(0, 100) is None
    assert share(99, 101) == 0.5  # a's [100, 101) of 2
    assert share(100, 101) == 1.0  # one ns, on a
    assert timeline._critical_path_share(store, "r", "w", "9", 100, 200) is None  # an unknown window: no line


def test_a_range_touching_a_step_with_only_its_longest_pieces_has_no_share(tmp_path):
    store = path_store(tmp_path, total=9)
    assert timeline._critical_path_share(store, "r", "w", "1", 120, 310) is None
    assert timeline._critical_path_share(store, "r", "w", "1", 300, 310) == 1.0  # only the whole step


def test_the_routes_refuse_before_reading_the_window():
    cache = SimpleNamespace(get=lambda *a: pytest.fail("read"))
    for width in (0, 20_001):  # tiles.MAX_WIDTH: 20,000 pixels
        with pytest.raises(BadParameter, match=f"^width must be between 1 and 20000 pixels, not {width}$"):
            timeline.tile_impl(cache, None, "r", "w", "1", None, 0, 10, width)
    with pytest.raises(BadParameter, match=r"^end_ns \(5\) must be after start_ns \(5\)$"):
        timeline.tile_impl(cache, None, "r", "w", "1", None, 5, 5, 10)
    with pytest.raises(BadParameter, match=r"^end_ns \(4\) must be after start_ns \(5\)$"):
        timeline.summary_impl(cache, None, "r", "w", "1", 5, 4, None)
    with pytest.raises(BadParameter, match=r"^end_ns \(5\) must be after start_ns \(5\)$"):
        timeline.summary_impl(cache, None, "r", "w", "1", 5, 5, None)
    for args in ({"from_ns": 1}, {"to_ns": 1}):
        with pytest.raises(BadParameter, match="^from_ns and to_ns go together$"):
            timeline.search_impl(cache, None, "r", "w", "1", "x", 0, None, **args)
    with pytest.raises(BadParameter, match=r"^to_ns \(4\) must not be before from_ns \(5\)$"):
        timeline.search_impl(cache, None, "r", "w", "1", "x", 0, None, from_ns=5, to_ns=4)


def test_the_loading_stage_said(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(timeline, "time", SimpleNamespace(monotonic=lambda: now[0]))
    cache = timeline.IndexCache()
    said = cache.progress("r", "w", "1")
    assert said["stage"] == "reading the trace" and said["elapsed_s"] >= 0 and set(said) == {"stage", "elapsed_s"}
    cache._note(("r", "w", "1"), "indexing", {"rank": 3})
    cache._note(("r", "w", "1"), "loading the events")
    now[0] = 112.345
    said = cache.progress("r", "w", "1")
    assert said == {"stage": "loading the events", "rank": 3, "elapsed_s": 12.3}  # 112.345 - 100, to 0.1 s
    assert cache.progress("r", "w", "2")["stage"] == "reading the trace"


class Local:
    """local_window of r / w / 1 only: its files, under `root`."""

    def __init__(self, files, root):
        self.files, self.root = files, root

    def local_window(self, run, worker, window):
        if (run, worker, window) != ("r", "w", "1"):
            raise KeyError(window)
        return SimpleNamespace(files=self.files, root=self.root)


def test_a_windows_original_trace_is_downloaded(tmp_path):
    (tmp_path / "w.1.pt.trace.json").write_bytes(b"x" * ((1 << 20) + 5))
    store = Local([str(tmp_path / "w.1.csv"), str(tmp_path / "w.1.pt.trace.json")], str(tmp_path))
    name, chunks = timeline.download_impl(None, store, "r", "w", "1")
    assert name == "w.1.pt.trace.json" and [len(c) for c in chunks] == [1 << 20, 5]
    (tmp_path / "w.1.pt.trace.json.gz").write_bytes(b"gz")
    name, chunks = timeline.download_impl(None, Local([str(tmp_path / "w.1.pt.trace.json.gz")], ""), "r", "w", "1")
    assert name == "w.1.pt.trace.json.gz" and list(chunks) == [b"gz"]


def test_a_download_opens_the_original_inside_the_logdir_only(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "out.pt.trace.json").write_bytes(b"elsewhere")
    os.symlink(tmp_path / "out.pt.trace.json", tmp_path / "root" / "w.1.pt.trace.json")
    with pytest.raises(OSError, match="a link to outside the logdir"):
        timeline.download_impl(None, Local([str(tmp_path / "root" / "w.1.pt.trace.json")], str(tmp_path / "root")),
                               "r", "w", "1")


def test_a_window_without_its_original_is_written_from_its_events(tmp_path):
    import json
    from canning_tb.ingest.table import Kind
    from _synthetic import ev, table
    events = table([ev("aten::mm", Kind.CPU_OP, 100, 50)])
    asked = []
    cache = SimpleNamespace(get=lambda *a: asked.append(a) or SimpleNamespace(table=events))
    store = Local([str(tmp_path / "w.1.csv")], "")
    name, chunks = timeline.download_impl(cache, store, "r", "w", "1")
    assert name == "w.1.pt.trace.json" and asked == [(store, "r", "w", "1")]
    written = json.loads(b"".join(chunks))
    assert [e["name"] for e in written["traceEvents"] if e.get("ph") == "X"] == ["aten::mm"]

    def unknown(*a):
        raise KeyError("1")
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'r' / 'w' / '1'$"):
        timeline.download_impl(None, SimpleNamespace(local_window=unknown), "r", "w", "1")


class Events(HandStore):
    """The digest of r / w / 1 and its events (a table made by hand); the events' prefix in the logdir."""

    def __init__(self, logdir, digests, events):
        super().__init__(logdir, digests)
        self.events, self.tables, self.waited = events, [], []

    def events_prefix(self, run, worker, window):
        return os.path.join(self.logdir, f"{worker}.{window}")

    def table(self, run, worker, window):
        self.tables.append((run, worker, window))
        return self.events

    def wait_timeline_index(self, run, worker, window):
        self.waited.append((run, worker, window))


def test_a_windows_events_loaded_once_and_kept(tmp_path):
    from canning_tb.ingest.table import Kind
    from _synthetic import ev, table
    d = window(6, 1000, 1500, (1100, 1300))
    d.steps[0].number, d.steps[0].dur_ns, d.step_source = 4, 200, "trace"
    store = Events(tmp_path, {("r", "w", "1"): d}, table([ev("aten::mm", Kind.CPU_OP, 1100, 50)]))
    cache = timeline.IndexCache()
    got = cache.ready(store, "r", "w", "1", wait_s=60)
    assert (got.origin, got.end, got.rank, got.step_source) == (1000, 1500, 6, "trace")
    # steps relative to the window start: 1100 - 1000 and 1300 - 1000
    assert got.steps == [{"number": 4, "start_ns": 100, "dur_ns": 200}, {"number": 0, "start_ns": 300, "dur_ns": 0}]
    assert got.table is store.events and len(got.index.track_pid) == 1 and (got.counters, got.memory) == ([], [])
    assert store.tables == [("r", "w", "1")] and store.waited == [("r", "w", "1")]
    assert cache.get(store, "r", "w", "1") is got and store.tables == [("r", "w", "1")]  # kept: not read again
    assert cache.ready(store, "r", "w", "1", wait_s=60) is got and cache._jobs == {}
    assert cache.progress("r", "w", "1")["stage"] == "reading the trace"  # nothing being loaded now
    with pytest.raises(NotFound, match="unknown run/worker/window"):
        cache.ready(store, "r", "w", "2", wait_s=60)
