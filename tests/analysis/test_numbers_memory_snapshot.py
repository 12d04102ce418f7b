"""Snapshot analysis against an independent plain reading of the real Ascend NPU snapshots
(tests/fixtures/memory_snapshot, SOURCES.md): `pickle.load` of the trusted fixture walked as dicts, here, with
the rules written out again (an alloc adds its size, a free_completed takes it back, as memory_viz counts).

Where the fixtures cannot hold a case (they have no OOM and no times: Ascend's recorder wrote none), the
snapshot is a small dict written in the test and the figures are counted by hand."""
import collections
import pickle

import numpy as np
import pytest

from canning_tb.analysis.memory_snapshot import events, peak, state, steps, summary
from canning_tb.analysis.memory_snapshot.replay import replay
from canning_tb.ingest.snapshot import read_snapshot
from canning_tb.ingest.snapshot.read import snapshot_of
from conftest import fixture_path

PLAIN, EMPTY_CACHE, EXPANDABLE = ("snapshot_1768383987920985470.pkl", "snapshot_with_empty_cache.pkl",
                                  "snapshot_with_empty_cache_expandable.pkl")
ALL = [PLAIN, EMPTY_CACHE, EXPANDABLE]


def load(name):
    path = fixture_path("memory_snapshot", name)
    with open(path, "rb") as f:
        return pickle.load(f), read_snapshot(str(path))


def entries(d):
    return d["device_traces"][0]


def final_requested(d):
    return sum(b["requested_size"] for g in d["segments"] for b in g["blocks"] if b["state"] != "inactive")


def plain_live(d):
    """Requested bytes after each entry, walked backwards from the snapshot's own blocks."""
    trace = entries(d)
    live = [0] * len(trace)
    now = final_requested(d)
    for i in range(len(trace) - 1, -1, -1):
        live[i] = now
        e = trace[i]
        if e["action"] == "alloc":
            now -= e["size"]
        elif e["action"] == "free_completed":
            now += e["size"]
    return live, now  # now: before the first entry


def is_user(frame):
    return "site-packages" not in frame["filename"] and not frame["filename"].startswith("<")


def top_frame(frames):
    for f in frames:
        if is_user(f):
            return f"{f['name']} ({f['filename']}:{f['line']})"
    return f"{frames[0]['name']} ({frames[0]['filename']}:{frames[0]['line']})" if frames else "(no stack recorded)"


@pytest.mark.parametrize("name", ALL)
def test_live_bytes_and_the_peak(name):
    d, s = load(name)
    r = replay(s, 0)
    live, before = plain_live(d)
    for p in (0, 1000, 2500, len(live) // 2, len(live) - 1):
        assert int(r.live[p]) == live[p], p
    assert r.live_before == before
    want_peak = max(live)
    pk = peak.peak(s, r)
    assert pk["requested"] == want_peak and pk["entry"] == live.index(want_peak)


def test_history_from_the_start_counts_forward_too():
    d, s = load(PLAIN)
    r = replay(s, 0)
    now, forward = 0, []
    for e in entries(d):
        now += e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
        forward.append(now)
    assert r.live_before == 0 and r.live.tolist() == forward
    assert r.reserved_before == 0  # every segment of this job was made inside the history


@pytest.mark.parametrize("name", ALL)
def test_blocks_at_the_peak_by_top_user_frame(name):
    d, s = load(name)
    r = replay(s, 0)
    pk = peak.peak(s, r, limit=50)
    alive = {}
    for i, e in enumerate(entries(d)[:pk["entry"] + 1]):
        if e["action"] == "alloc":
            alive[e["addr"]] = e
        elif e["action"] == "free_completed":
            alive.pop(e["addr"], None)
    by_frame = collections.Counter()
    for e in alive.values():
        by_frame[top_frame(e["frames"])] += e["size"]
    assert {g["frame"]: g["bytes"] for g in pk["by_frame"]} == dict(by_frame)
    assert pk["traced_blocks"] == len(alive)
    assert pk["before_history"] == pk["requested"] - sum(by_frame.values())


@pytest.mark.parametrize("name", ALL)
def test_state_at_the_snapshot_and_at_the_end_of_the_history(name):
    d, s = load(name)
    segs = d["segments"]
    snap = state.at_snapshot(s, 0)
    assert snap["segments"] == len(segs)
    assert snap["reserved"] == sum(g["total_size"] for g in segs)
    assert snap["allocated"] == sum(g["allocated_size"] for g in segs)
    free = [b["size"] for g in segs for b in g["blocks"] if b["state"] == "inactive"]
    assert snap["largest_free_block"] == max(free) and snap["free_blocks"] == len(free)
    assert snap["fragmentation"] == round(1 - final_requested(d) / snap["reserved"], 6)
    r = replay(s, 0)
    end = state.at_entry(s, r, r.n - 1)
    # rebuilt from the history: the same segments, and a gap bound never below the real largest free block
    assert end["segments"] == len(segs) and end["reserved"] == snap["reserved"]
    assert end["largest_free_block_at_most"] >= max(free)


def test_reserved_over_the_history():
    d, s = load(EMPTY_CACHE)
    r = replay(s, 0)
    now = sum(g["total_size"] for g in d["segments"])
    trace = entries(d)
    for i in range(len(trace) - 1, -1, -1):
        assert int(r.reserved[i]) == now
        e = trace[i]
        now += -e["size"] if e["action"] == "segment_alloc" else e["size"] if e["action"] == "segment_free" else 0


@pytest.mark.parametrize("name,calls", [(PLAIN, 0), (EMPTY_CACHE, 3), (EXPANDABLE, 3)])
def test_empty_cache_calls(name, calls):
    d, s = load(name)
    rel = events.releases(s, replay(s, 0))
    released = [e for e in entries(d) if e["action"] in ("segment_free", "segment_unmap")
                and any(f["name"] == "empty_cache" for f in e["frames"])]
    assert rel["empty_cache_calls"] == calls
    assert rel["empty_cache_bytes"] == sum(e["size"] for e in released)
    assert sum(x["segments"] for x in rel["releases"] if x["kind"] == "empty_cache") == len(released)
    assert bool(rel["warning"]) == (calls > 0)
    for x in rel["releases"]:
        assert "post_step" in " ".join(x["stack"])  # the job's hook that calls it (hooker.py:92)


@pytest.mark.parametrize("name", [EMPTY_CACHE, EXPANDABLE])
def test_the_leak_grows_every_step(name):
    d, s = load(name)
    r = replay(s, 0)
    found = steps.pattern_steps(s, r)
    assert len(found) == 3  # the job ran three steps (memory_leaks_demo.py)
    leaks = steps.leaks(s, r, found)
    # by a plain walk: allocations from train_one_step line 11 that are never freed in the history
    open_allocs = {}
    for e in entries(d):
        if e["action"] == "alloc":
            open_allocs[e["addr"]] = e
        elif e["action"] == "free_completed":
            open_allocs.pop(e["addr"], None)
    kept = [e for e in open_allocs.values() if e["frames"] and e["frames"][0]["line"] == 11
            and e["frames"][0]["name"] == "train_one_step"]
    assert len(kept) == 3 and {e["size"] for e in kept} == {40 * 1024 * 1024}  # 10 Mi float32 a step
    assert len(leaks) == 1 and leaks[0]["frame"].startswith("train_one_step (") and leaks[0]["frame"].endswith(":11)")
    assert leaks[0]["bytes_per_step"] == [40 << 20, 40 << 20]
    g = steps.growth(s, r, found)
    assert [x["grown"] >= (40 << 20) for x in g] == [True, True, True]
    assert g[2]["live_end"] - g[1]["live_end"] == 40 << 20


def test_no_leak_in_the_job_that_frees_everything():
    _, s = load(PLAIN)
    r = replay(s, 0)
    assert steps.leaks(s, r, steps.pattern_steps(s, r)) == []


def hand_snapshot(times=True):
    """Two steps by hand: 100 B then 300 B allocated, an OOM asking for 1000 B with 50 B free on the device."""
    def e(action, addr, size, t, **more):
        x = {"action": action, "addr": addr, "size": size, "stream": 0,
             "frames": [{"name": "step", "filename": "/job/train.py", "line": 7}], **more}
        if times:
            x["time_us"] = t
        return x
    trace = [e("segment_alloc", 0, 2048, 1000), e("alloc", 0, 100, 1001), e("alloc", 512, 300, 1002),
             e("free_requested", 0, 100, 1003), e("free_completed", 0, 100, 1004), e("alloc", 1024, 200, 2001),
             {"action": "oom", "size": 1000, "device_free": 50, "stream": 0, "frames": [],
              **({"time_us": 2002} if times else {})}]
    segs = [{"device": 0, "address": 0, "total_size": 2048, "allocated_size": 1024, "active_size": 1024,
             "requested_size": 500, "stream": 0, "segment_type": "small", "is_expandable": False,
             "blocks": [{"address": 0, "size": 512, "requested_size": 0, "state": "inactive", "frames": []},
                        {"address": 512, "size": 512, "requested_size": 300, "state": "active_allocated",
                         "frames": []},
                        {"address": 1024, "size": 512, "requested_size": 200, "state": "active_allocated",
                         "frames": []},
                        {"address": 1536, "size": 512, "requested_size": 0, "state": "inactive", "frames": []}]}]
    return snapshot_of({"segments": segs, "device_traces": [trace]}, "hand.pickle")


def test_oom_entry():
    s = hand_snapshot()
    (oom,) = events.ooms(s, replay(s, 0))
    assert oom["requested"] == 1000 and oom["device_free"] == 50
    assert oom["requested"] > oom["device_free"]
    assert oom["allocated"] == 500 and oom["reserved"] == 2048  # 300 + 200 alive, one 2048 B segment


def test_join_by_time_puts_entries_on_the_window_steps():
    s = hand_snapshot()
    base = 500_000  # the window's wall clock at its 0, in ns: entry time_us 1001 is at 501_000 ns there
    got = summary.summarize(s, window_steps=[(5, 500_000, 1_000_000), (6, 1_000_000, 1_600_000)], base_ns=base)
    dev = got["devices"][0]
    assert dev["joined"] and dev["steps_source"] == steps.SOURCE_TIME
    assert [(g["step"], g["first_entry"], g["last_entry"]) for g in dev["growth"]] == [(5, 0, 4), (6, 5, 6)]
    assert [g["grown"] for g in dev["growth"]] == [300, 200]


def test_without_times_nothing_is_joined():
    s = hand_snapshot(times=False)
    got = summary.summarize(s, window_steps=[(5, 0, 10**12)], base_ns=1)
    dev = got["devices"][0]
    assert not dev["joined"] and "no times" in dev["join"] and dev["steps_source"] != steps.SOURCE_TIME
    s = hand_snapshot()
    dev = summary.summarize(s, window_steps=[(5, 0, 10)], base_ns=None)["devices"][0]
    assert not dev["joined"] and "baseTimeNanoseconds" in dev["join"]


def test_series_keeps_the_peak():
    d, s = load(EMPTY_CACHE)
    live, _ = plain_live(d)
    got = summary.series(s, 0, points=50)
    assert max(got["requested"]) == max(live) and len(got["requested"]) <= 50


# -- findings in bytes ----------------------------------------------------------------------------------------
def test_leak_and_empty_cache_findings_on_the_leaking_job():
    _, s = load(EMPTY_CACHE)
    dev = summary.summarize(s)["devices"][0]
    rules = {f["rule"]: f for f in dev["findings"]}
    assert set(rules) == {"snapshot_leak", "snapshot_empty_cache_in_loop"}
    leak = rules["snapshot_leak"]
    assert leak["gain_bytes"] == 2 * (40 << 20) and leak["figure_value"] == 40 << 20 and "bytes" in leak["gain"]
    assert leak["stack"][0].startswith("train_one_step (") and leak["stack"][0].endswith(":11)")
    ec = rules["snapshot_empty_cache_in_loop"]
    assert ec["figure_value"] == 3 and ec["gain_bytes"] == 0 and "hooker.py:92" in ec["title"]


def test_no_finding_on_the_job_that_frees_everything():
    _, s = load(PLAIN)
    assert summary.summarize(s)["devices"][0]["findings"] == []


def big_snapshot(expandable):
    """By hand: a 1 GiB segment holding one 100 MiB tensor, then a 600 MiB segment made and freed in one step."""
    gib, mib = 1 << 30, 1 << 20
    f = [{"name": "step", "filename": "/job/train.py", "line": 3}]
    trace = [{"action": "segment_alloc", "addr": 0, "size": gib, "stream": 0, "frames": f},
             {"action": "alloc", "addr": 0, "size": 100 * mib, "stream": 0, "frames": f}]
    segs = [{"device": 0, "address": 0, "total_size": gib, "allocated_size": 100 * mib, "active_size": 100 * mib,
             "requested_size": 100 * mib, "stream": 0, "segment_type": "large", "is_expandable": expandable,
             "blocks": [{"address": 0, "size": 100 * mib, "requested_size": 100 * mib, "state": "active_allocated"},
                        {"address": 100 * mib, "size": gib - 100 * mib, "requested_size": 0, "state": "inactive"}]}]
    return snapshot_of({"segments": segs, "device_traces": [trace]}, "big.pickle")


def test_fragmentation_finding_in_bytes_unless_expandable():
    dev = summary.summarize(big_snapshot(False))["devices"][0]
    (frag,) = [f for f in dev["findings"] if f["rule"] == "snapshot_fragmentation"]
    assert frag["gain_bytes"] == (1 << 30) - 100 * (1 << 20)  # 924 MiB reserved that no tensor asked for
    assert frag["figure_value"] == pytest.approx(1024 / 100)
    dev = summary.summarize(big_snapshot(True))["devices"][0]
    assert not [f for f in dev["findings"] if f["rule"] == "snapshot_fragmentation"]


def test_transient_bytes_at_the_peak():
    s = hand_snapshot()
    r = replay(s, 0)
    # one step over the whole history: at the peak (after entry 2: 100 + 300 alive) the 100 B block is freed
    # later in the step, the 300 B one never
    got = steps.transient_at(s, r, [(1, 0, r.n)], 2)
    assert got == {"step": 1, "bytes": 100, "by_frame": [{"frame": "step (/job/train.py:7)", "bytes": 100}]}
    assert steps.transient_at(s, r, [], 2)["bytes"] == -1  # no steps: unknown, not 0


def test_bands_of_the_history():
    from canning_tb.analysis.memory_snapshot.bands import bands
    d, s = load(EMPTY_CACHE)
    r = replay(s, 0)
    got = bands(s, r, 0, r.n - 1, limit=50)
    # by a plain walk: every alloc with the entry of its free_completed (or the history's end)
    open_allocs, spans = {}, []
    for i, e in enumerate(entries(d)):
        if e["action"] == "alloc":
            open_allocs[e["addr"]] = (i, e["size"])
        elif e["action"] == "free_completed" and e["addr"] in open_allocs:
            a, n = open_allocs.pop(e["addr"])
            spans.append((a, i, n))
    spans += [(a, len(entries(d)), n) for a, n in open_allocs.values()]
    assert got["alive"] == len(spans) and got["alive_bytes"] == sum(n for _, _, n in spans)
    biggest = sorted(spans, key=lambda x: (-x[2], x[0]))[:50]
    assert sorted(zip(got["alloc"], got["free"], got["bytes"])) == sorted(biggest)
    # no two bands of one lane overlap
    by_lane = {}
    for a, f, lane in zip(got["alloc"], got["free"], got["lane"]):
        by_lane.setdefault(lane, []).append((a, f))
    for lane in by_lane.values():
        lane.sort()
        assert all(prev[1] < nxt[0] for prev, nxt in zip(lane, lane[1:]))
    # a range: only what is alive in it
    mid = bands(s, r, 4000, 4100, limit=5000)
    assert mid["alive"] == sum(1 for a, f, _ in spans if a <= 4100 and f >= 4000)
