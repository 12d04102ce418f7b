"""queries/memory_snapshot.py on snapshots written by hand (issue 46: fast tests for a mutation run): what each
route refuses (bounds, unknown snapshot, device, entry, run), an unreadable snapshot named relative to the logdir,
the fields each answer adds, the window's clock, and the ranks' rows. The figures are analysis/memory_snapshot's
(tests/analysis/test_memory_snapshot_*mutants.py); the expected values here are read off the snapshot by hand."""
from types import SimpleNamespace

import pytest

from canning_tb.analysis.memory_snapshot.summary import summarize
from canning_tb.ingest.snapshot.read import snapshot_of
from canning_tb.ingest.table import InputError, Kind
from canning_tb.queries import memory_snapshot as ms
from canning_tb.queries.errors import BadParameter, NotFound, Unreadable
from _synthetic import ev, table

LOG = "/data/log"


def e(action, addr, size, t=None):
    x = {"action": action, "stream": 0, "frames": [], "addr": addr, "size": size}
    if t is not None:
        x["time_us"] = t
    return x


def snap(times=True, path=f"{LOG}/r/w.pickle"):
    """Device 0: alloc 100 B, alloc 50 B, free the first: three entries."""
    trace = [e("alloc", 0, 100, 1 if times else None), e("alloc", 512, 50, 2 if times else None),
             e("free_completed", 0, 100, 3 if times else None)]
    return snapshot_of({"segments": [], "device_traces": [trace]}, path)


class Store:
    """Windows of run r: w/1 (a snapshot beside a trace), w/2 (no snapshot), v/1 (a snapshot that cannot be read),
    u/1 (two snapshots, the format "snapshot": no trace)."""

    def __init__(self, trace=None):
        self.logdir, self.trace, self.read = LOG, trace, []
        self.found = {("w", "1"): SimpleNamespace(snapshots=[f"{LOG}/r/w.pickle"], format="kineto", id="1"),
                      ("w", "2"): SimpleNamespace(snapshots=[], format="kineto", id="2"),
                      ("v", "1"): SimpleNamespace(snapshots=[f"{LOG}/r/v.pickle"], format="kineto", id="1"),
                      ("u", "1"): SimpleNamespace(snapshots=[f"{LOG}/r/u0.pickle", "/else/u1.pickle"],
                                                  format="snapshot", id="1")}
        self.errors = {("v", "1"): InputError(f"{LOG}/r/v.pickle", "not a pickle")}

    def window(self, run, worker, window):
        if run != "r":
            raise KeyError(run)
        return self.found[(worker, window)]

    def snapshot(self, run, worker, window, index):
        if run != "r":
            raise KeyError(run)
        self.read.append((worker, window, index))
        if (worker, window) in self.errors:
            raise self.errors[(worker, window)]
        return snap()

    def table(self, run, worker, window):
        if self.trace is None:
            raise OSError("no trace")
        return self.trace

    def windows_at(self, run, position):
        if run != "r":
            raise KeyError(run)
        return [(SimpleNamespace(name="w", rank=9), self.found[("w", "2")])] + [
            (SimpleNamespace(name=w, rank=k), self.found[(w, "1")]) for k, w in enumerate(("w", "v", "u"))
            if position == 0]


def test_which_snapshot_and_what_is_refused():
    store = Store()
    with pytest.raises(NotFound, match=r"^r / w / 2 has no memory snapshot$"):
        ms.snapshot_impl(store, "r", "w", "2")
    with pytest.raises(NotFound, match=r"^no snapshot 1: the window has 1$"):
        ms.snapshot_impl(store, "r", "w", "1", index=1)
    with pytest.raises(NotFound, match=r"^no snapshot -1: the window has 1$"):
        ms.snapshot_impl(store, "r", "w", "1", index=-1)
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'q' / 'w' / '1'$"):
        ms.snapshot_impl(store, "q", "w", "1")
    with pytest.raises(BadParameter, match=r"^snapshot is out of range"):
        ms.snapshot_impl(store, "r", "w", "1", index=1 << 63)
    for limit in (0, 201):
        with pytest.raises(BadParameter, match=r"^limit must be 1 to 200$"):
            ms.snapshot_impl(store, "r", "w", "1", limit=limit)
    with pytest.raises(BadParameter, match=r"^limit is out of range"):
        ms.snapshot_impl(store, "r", "w", "1", limit=1 << 63)
    assert store.read == []
    assert ms.has_snapshot(store, "r", "w", "1") is True and ms.has_snapshot(store, "r", "w", "2") is False


def test_an_unreadable_snapshot_is_named_relative_to_the_logdir():
    store = Store()
    with pytest.raises(Unreadable, match=r"^r/v.pickle: not a pickle$") as e:
        ms.snapshot_impl(store, "r", "v", "1")
    assert e.value.body["file"] == "r/v.pickle"
    store.errors[("v", "1")] = PermissionError(13, "Permission denied")
    with pytest.raises(Unreadable, match=r"^r/v.pickle: cannot read: Permission denied$"):
        ms.snapshot_impl(store, "r", "v", "1")
    store.errors[("v", "1")] = OSError("odd")
    with pytest.raises(Unreadable, match=r"^r/v.pickle: cannot read: odd$"):
        ms.snapshot_impl(store, "r", "v", "1")


def test_the_snapshots_answer_adds_where_it_comes_from():
    body = ms.snapshot_impl(Store(), "r", "u", "1", index=1, limit=200)
    assert (body["run"], body["worker"], body["window"], body["index"]) == ("r", "u", "1", 1)
    assert body["file"] == "r/w.pickle" and body["snapshots"] == ["r/u0.pickle", "/else/u1.pickle"]
    assert body["devices"] == summarize(snap(), limit=200)["devices"]  # the analysis' own, as it is


def test_the_windows_clock():
    found = SimpleNamespace(format="snapshot")
    assert ms._window_clock(Store(), "r", "w", "1", found) == (None, None, None, None)
    found.format = "kineto"
    assert ms._window_clock(Store(), "r", "w", "1", found) == (None, None, None, None)  # the trace unreadable
    t = table([ev("ProfilerStep#4", Kind.CPU_OP, 100, 50), ev("ProfilerStep#5", Kind.CPU_OP, 150, 70),
               ev("k", Kind.KERNEL, 230, 40)])
    t.meta.environment["baseTimeNanoseconds"] = "7000"
    got, steps, base, span = ms._window_clock(Store(trace=t), "r", "w", "1", found)
    # steps 4 [100, 150) and 5 [150, 220); the events from 100 to 230 + 40
    assert got is t and steps == [(4, 100, 150), (5, 150, 220)] and base == 7000 and span == (100, 270)
    empty = table([])
    assert ms._window_clock(Store(trace=empty), "r", "w", "1", found)[1:] == ([], None, None)


def test_the_series_state_and_bands_refuse_out_of_range():
    store = Store()
    for points in (1, 20_001):
        with pytest.raises(BadParameter, match=r"^points must be 2 to 20000$"):
            ms.snapshot_series_impl(store, "r", "w", "1", points=points)
    with pytest.raises(NotFound, match=r"^unknown device 1: the snapshot has \[0\]$"):
        ms.snapshot_series_impl(store, "r", "w", "1", device=1)
    with pytest.raises(BadParameter, match=r"^device is out of range"):
        ms.snapshot_series_impl(store, "r", "w", "1", device=1 << 63)
    series = ms.snapshot_series_impl(store, "r", "w", "1", points=2)
    assert (series["run"], series["worker"], series["window"], series["device"]) == ("r", "w", "1", 0)
    assert ms.snapshot_series_impl(store, "r", "w", "1", points=20_000)["entry"] == [0, 1, 2]
    for entry in (-1, 3):
        with pytest.raises(BadParameter, match=r"^entry must be 0 to 2$"):
            ms.snapshot_state_impl(store, "r", "w", "1", entry)
    with pytest.raises(BadParameter, match=r"^entry is out of range"):
        ms.snapshot_state_impl(store, "r", "w", "1", 1 << 63)
    state = ms.snapshot_state_impl(store, "r", "w", "1", 2)
    assert (state["run"], state["worker"], state["window"], state["device"]) == ("r", "w", "1", 0)
    assert ms.snapshot_state_impl(store, "r", "w", "1", 0)["device"] == 0  # the first entry is one
    for limit in (0, 5001):
        with pytest.raises(BadParameter, match=r"^limit must be 1 to 5000$"):
            ms.snapshot_bands_impl(store, "r", "w", "1", limit=limit)
    for name, args in (("start_entry", {"start_entry": 1 << 63}), ("end_entry", {"end_entry": -(1 << 63)}),
                       ("limit", {"limit": 1 << 63})):
        with pytest.raises(BadParameter, match=f"^{name} is out of range"):
            ms.snapshot_bands_impl(store, "r", "w", "1", **args)
    with pytest.raises(BadParameter, match=r"^start_entry is after end_entry$"):
        ms.snapshot_bands_impl(store, "r", "w", "1", start_entry=2, end_entry=1)
    with pytest.raises(BadParameter, match=r"^start_entry is after end_entry$"):
        ms.snapshot_bands_impl(store, "r", "w", "1", start_entry=3)  # past the last entry (2)
    bands = ms.snapshot_bands_impl(store, "r", "w", "1", start_entry=1, end_entry=1, limit=5000)
    assert (bands["run"], bands["worker"], bands["window"], bands["device"]) == ("r", "w", "1", 0)
    # at entry 1 both blocks are alive (the first is freed at entry 2)
    assert (bands["start_entry"], bands["end_entry"], bands["entries"], bands["alive"]) == (1, 1, 3, 2)
    assert ms.snapshot_bands_impl(store, "r", "w", "1", end_entry=0)["device"] == 0


def test_no_history_no_state():
    store = Store()
    segment = {"device": 0, "address": 0, "total_size": 1024, "allocated_size": 0, "active_size": 0, "stream": 0,
               "segment_type": "large", "is_expandable": False, "blocks": []}
    store.snapshot = lambda *a: snapshot_of({"segments": [segment], "device_traces": [[]]}, "x.pickle")
    with pytest.raises(BadParameter, match=r"^the snapshot has no history$"):
        ms.snapshot_state_impl(store, "r", "w", "1", 0)


def test_the_ranks_rows():
    body = ms.snapshot_ranks_impl(Store(), "r", 0)
    assert (body["run"], body["window_index"]) == ("r", 0)
    w, v, u = body["ranks"]  # w/2 has no snapshot: no row
    assert (w["worker"], w["rank"], w["window"], w["file"], w["device"]) == ("w", 0, "1", "r/w.pickle", 0)
    dev = summarize(snap(), limit=1)["devices"][0]  # the row: the analysis' figures of the first device
    assert (w["peak_requested"], w["peak_reserved"]) == (dev["peak"]["requested"], dev["peak"]["reserved"])
    assert (w["reserved"], w["fragmentation"]) == (dev["at_snapshot"]["reserved"], dev["at_snapshot"]["fragmentation"])
    assert (w["largest_free_block"], w["steps"]) == (dev["at_snapshot"]["largest_free_block"], dev["steps"])
    assert (w["leaks"], w["empty_cache_calls"]) == (len(dev["leaks"]), dev["empty_cache"]["empty_cache_calls"])
    assert w["last_step_grown"] == (dev["growth_last"]["grown"] if dev["growth_last"] else -1)
    assert v == {"worker": "v", "rank": 1, "window": "1", "file": "r/v.pickle",
                 "error": "r/v.pickle: not a pickle", "peak_requested": -1}
    assert u["file"] == "r/u0.pickle" and isinstance(body["findings"], list)
    assert ms.snapshot_ranks_impl(Store(), "r", 1)["ranks"] == []
    with pytest.raises(NotFound, match=r"^unknown run: 'q'$"):
        ms.snapshot_ranks_impl(Store(), "q", 0)
    with pytest.raises(BadParameter, match=r"^window_index is out of range"):
        ms.snapshot_ranks_impl(Store(), "r", 1 << 63)


def test_a_rank_whose_snapshot_cannot_be_opened():
    store = Store()
    store.errors[("v", "1")] = InputError(f"{LOG}/r/v.pickle.part", "cut short")
    v = ms.snapshot_ranks_impl(store, "r", 0)["ranks"][1]
    assert v["error"] == "r/v.pickle.part: cut short"  # the file the error names
    store.errors[("v", "1")] = OSError("gone")
    v = ms.snapshot_ranks_impl(store, "r", 0)["ranks"][1]
    assert v["error"] == "r/v.pickle: gone" and v["peak_requested"] == -1


def test_a_rank_whose_snapshot_holds_no_device():
    store = Store()
    store.snapshot = lambda *a: snapshot_of({"segments": [], "device_traces": []}, f"{LOG}/r/x.pickle")
    w = ms.snapshot_ranks_impl(store, "r", 0)["ranks"][0]
    assert w == {"worker": "w", "rank": 0, "window": "1", "file": "r/w.pickle", "device": -1, "peak_requested": -1,
                 "peak_reserved": -1, "reserved": -1, "fragmentation": -1.0, "largest_free_block": -1, "steps": 0,
                 "last_step_grown": -1, "leaks": 0, "empty_cache_calls": 0}


def long_snap():
    """2,001 allocations of 1 B each (none freed): 2,001 entries, 2,001 bands."""
    trace = [e("alloc", 512 * i, 1, i + 1) for i in range(2001)]
    return snapshot_of({"segments": [], "device_traces": [trace]}, f"{LOG}/r/w.pickle")


def test_the_defaults_and_edges_of_the_series_and_bands():
    store = Store()
    store.snapshot = lambda *a: long_snap()
    assert len(ms.snapshot_series_impl(store, "r", "w", "1")["entry"]) == 2000  # 2,000 points by default
    assert ms.snapshot_bands_impl(store, "r", "w", "1")["shown"] == 1000  # the 1,000 largest by default
    assert ms.snapshot_bands_impl(store, "r", "w", "1", limit=1)["shown"] == 1
    whole = ms.snapshot_bands_impl(store, "r", "w", "1")
    assert (whole["start_entry"], whole["end_entry"], whole["alive"]) == (0, 2000, 2001)  # every entry by default
    store = Store()
    # 3 entries in 2 points: edges 0, 1.5, 3 as whole entries 0, 1, 3: the points start at entries 0 and 1
    assert ms.snapshot_series_impl(store, "r", "w", "1", points=2)["entry"] == [0, 1]
    with pytest.raises(BadParameter, match=r"^points is out of range"):
        ms.snapshot_series_impl(store, "r", "w", "1", points=1 << 63)


def test_a_ranks_row_takes_the_first_devices_figures(monkeypatch):
    import canning_tb.analysis.memory_snapshot.summary as summary
    asked = []
    first = {"device": 1, "peak": {"requested": 10, "reserved": 20},
             "at_snapshot": {"reserved": 30, "fragmentation": 0.25, "largest_free_block": 40}, "steps": 5,
             "growth_last": {"grown": 7}, "leaks": ["a", "b"], "empty_cache": {"empty_cache_calls": 3}}
    monkeypatch.setattr(summary, "summarize", lambda s, limit=20: asked.append(limit) or {"devices": [first, {}]})
    store = Store()
    w = ms.snapshot_ranks_impl(store, "r", 0)["ranks"][0]
    assert w == {"worker": "w", "rank": 0, "window": "1", "file": "r/w.pickle", "device": 1, "peak_requested": 10,
                 "peak_reserved": 20, "reserved": 30, "fragmentation": 0.25, "largest_free_block": 40, "steps": 5,
                 "last_step_grown": 7, "leaks": 2, "empty_cache_calls": 3}
    assert asked == [1, 1] and store.read == [("w", "1", 0), ("v", "1", 0), ("u", "1", 0)]  # each first snapshot
    first["growth_last"] = None
    assert ms.snapshot_ranks_impl(store, "r", 0)["ranks"][0]["last_step_grown"] == -1


def test_the_snapshot_is_explained_with_the_windows_clock_when_it_has_times(monkeypatch):
    import canning_tb.analysis.memory_snapshot.summary as summary
    clocks, given = [], []
    monkeypatch.setattr(ms, "_window_clock", lambda *a: clocks.append(a[:4]) or ("T", [(1, 0, 5)], 9, (0, 5)))
    monkeypatch.setattr(summary, "summarize", lambda s, **k: given.append(k) or {})
    store = Store()
    ms.snapshot_impl(store, "r", "u", "1", index=1, limit=1)
    assert clocks == [(store, "r", "u", "1")] and store.read == [("u", "1", 1)]
    assert given == [{"table": "T", "limit": 1, "window_steps": [(1, 0, 5)], "base_ns": 9, "window_span": (0, 5)}]
    store.snapshot = lambda *a: snap(times=False)
    ms.snapshot_impl(store, "r", "w", "1")
    assert len(clocks) == 1  # no times: not joined, the window not read
    assert given[-1] == {"table": None, "limit": 20, "window_steps": None, "base_ns": None, "window_span": None}


def test_the_windows_clock_reads_that_windows_trace_unless_it_is_a_snapshot_alone():
    t = table([ev("ProfilerStep#1", Kind.CPU_OP, 10, 5)])
    asked = []
    store = Store(trace=t)
    store.table = lambda *a: asked.append(a) or t
    assert ms._window_clock(store, "r", "u", "1", SimpleNamespace(format="snapshot")) == (None, None, None, None)
    assert asked == []
    assert ms._window_clock(store, "r", "w", "1", SimpleNamespace(format="ascend"))[1] == [(1, 10, 15)]
    assert asked == [("r", "w", "1")]
