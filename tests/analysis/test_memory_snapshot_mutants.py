"""The snapshot analysis (analysis/memory_snapshot) on tiny snapshots written here, every figure counted by hand
in the comments (issue 46: the survivors of a mutation run over the package). The dicts are what the allocator
pickles; `snapshot_of` turns them into columns (its own tests: tests/ingest)."""
import pytest

from canning_tb.analysis.memory_snapshot import bands, events, findings, frames, join, peak, state, steps, summary
from canning_tb.analysis.memory_snapshot.replay import alive_at, before_alive_at, replay
from canning_tb.analysis.memory_snapshot.text import share, size, snapshot_text
from canning_tb.ingest.snapshot.read import snapshot_of
from canning_tb.ingest.table import Kind
from _synthetic import ev, table

MIB = 1 << 20


def fr(name, filename="/job/train.py", line=1):
    return {"name": name, "filename": filename, "line": line}


LIB = fr("forward", "/usr/lib/python3.10/site-packages/torch/nn/module.py", 1500)


def e(action, addr=None, size=None, t=None, frames=(), **more):
    x = {"action": action, "stream": 0, "frames": list(frames), **more}
    for k, v in (("addr", addr), ("size", size), ("time_us", t)):
        if v is not None:
            x[k] = v
    return x


def seg(address, total, blocks, expandable=False, device=0, allocated=-1, active=-1):
    return {"device": device, "address": address, "total_size": total, "allocated_size": allocated,
            "active_size": active, "stream": 0, "segment_type": "large", "is_expandable": expandable,
            "blocks": [{"address": a, "size": n, "requested_size": q, "state": st, "frames": []}
                       for a, n, q, st in blocks]}


def snap(trace, segs=()):
    return snapshot_of({"segments": list(segs), "device_traces": [trace]}, "hand.pickle")


# -- text -------------------------------------------------------------------------------------------------------
def test_sizes_and_shares_in_words():
    assert [size(x) for x in (None, -1, 0, 1023, 1024, 1536, (1 << 20) - 1, 1 << 20, 3 << 30)] == [
        "-", "-", "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "1024.0 KiB", "1.0 MiB", "3.0 GiB"]
    assert [share(x) for x in (None, -0.5, 0.0, 0.25, 0.12345)] == ["-", "-", "0.0 %", "25.0 %", "12.3 %"]


def test_the_text_of_a_summary_written_by_hand():
    dev0 = {"device": 0, "at_snapshot": {"reserved": 2048, "allocated": 1024, "requested": 1000,
                                         "fragmentation": 0.5, "largest_free_block": 512, "segments": 2,
                                         "expandable_segments": 1},
            "peak": {"entry": 4, "requested": 1900, "reserved": 4096, "before_history": 1000,
                     "by_frame": [{"bytes": 600, "blocks": 1, "frame": "a (/a.py:1)"},
                                  {"bytes": 2048, "blocks": 12, "frame": "b (/b.py:2)"},
                                  {"bytes": 1, "blocks": 1, "frame": "c (/c.py:3)"}]},
            "empty_cache": {"empty_cache_calls": 2, "empty_cache_bytes": 3072, "warning": "W."},
            "ooms": [{"entry": 6, "requested": 1000, "device_free": 50, "frame": "g (/g.py:9)"},
                     {"entry": 7, "requested": 1, "device_free": 0, "frame": "h"},
                     {"entry": 8, "requested": 1, "device_free": 0, "frame": "i"}],
            "growth": [{"step": k, "grown": 1024 * k} for k in range(1, 14)], "steps_source": "SRC",
            "leaks": [{"frame": "L", "bytes_per_step": [1024, 2048], "steps": [2, 3]},
                      {"frame": "M", "bytes_per_step": [1], "steps": [2]},
                      {"frame": "N", "bytes_per_step": [1], "steps": [2]}],
            "findings": [{"severity": "warning", "title": "T", "gain": "G"}], "join": "not joined: J"}
    dev1 = {"device": 1, "at_snapshot": {"reserved": 0, "allocated": 0, "requested": 0, "fragmentation": -1.0,
                                         "largest_free_block": 0, "segments": 0, "expandable_segments": 0},
            "peak": {"entry": -1}, "empty_cache": {"empty_cache_calls": 0}, "ooms": [], "growth": [], "leaks": [],
            "join": "not joined: K"}
    text = snapshot_text({"file": "f.pkl", "flavour": "pytorch", "segments": 2, "blocks": 5, "entries": 9,
                          "warnings": ["w1"], "devices": [dev0, dev1]}, top=2)
    growth = ", ".join(f"step {k} +{k}.0 KiB" for k in range(1, 13))  # 12 steps shown of 13
    assert text.split("\n") == [
        "memory snapshot f.pkl (pytorch): 2 segments, 5 blocks, 9 history entries",
        "  warning: w1",
        "device 0: at the snapshot reserved 2.0 KiB, allocated 1.0 KiB, requested 1000 B, fragmentation 50.0 %, "
        "largest free block 512 B, 2 segments (1 expandable)",
        "  peak 1.9 KiB requested (4.0 KiB reserved) at entry 4; 1000 B from before the history",
        "         600 B       1 blocks  a (/a.py:1)",  # right-aligned in 10 and 6 characters
        "       2.0 KiB      12 blocks  b (/b.py:2)",
        "  empty_cache(): 2 calls released 3.0 KiB. W.",
        "  OOM at entry 6: asked 1000 B, the device had 50 B free; g (/g.py:9)",
        "  OOM at entry 7: asked 1 B, the device had 0 B free; h",
        f"  growth per step (SRC): {growth}",
        "  LEAK: L keeps 1.0 KiB, 2.0 KiB more in steps 2, 3",
        "  LEAK: M keeps 1 B more in steps 2",
        "  finding [warning] T (gain: G)",
        "  not joined: J",
        "device 1: at the snapshot reserved 0 B, allocated 0 B, requested 0 B, fragmentation -, largest free block "
        "0 B, 0 segments (0 expandable)",
        "  not joined: K"]


# -- findings ---------------------------------------------------------------------------------------------------
def rank(r, peak_bytes):
    return {"worker": f"w{r}", "rank": r, "peak_requested": peak_bytes}


def test_a_rank_peak_at_exactly_the_thresholds_is_a_finding_and_a_byte_less_is_not():
    # ranks 1280, 1280, 1536 MiB (and one unknown): the median is 1280 MiB; 1536 = 1.2 x 1280 and 256 MiB above
    rows = [rank(0, 1280 * MIB), rank(1, 1536 * MIB), rank(2, 1280 * MIB), rank(3, -1)]
    (f,) = findings.rank_findings(rows)
    assert f["rule"] == "snapshot_rank_peak" and f["severity"] == "warning"
    assert f["title"] == "Rank 1 (w1) peaks far above the others"
    assert "is 1.5 GiB, 1.20x the ranks' median" in f["detail"]
    assert f["gain_bytes"] == 256 * MIB and f["gain"] == "256.0 MiB on that rank, bytes"
    assert f["figure"] == "peak_over_median" and f["figure_value"] == 1.2 and f["threshold"] == 1.2
    rows[1] = rank(1, 1536 * MIB - 1)
    assert findings.rank_findings(rows) == []


def test_a_rank_peak_needs_both_the_ratio_and_the_bytes():
    assert findings.rank_findings([rank(0, 100 * MIB), rank(1, 300 * MIB)]) == []  # x3 but 200 MiB over
    # 300 MiB over the median of 2000 MiB, but 1.15x
    assert findings.rank_findings([rank(0, 2000 * MIB), rank(1, 2000 * MIB), rank(2, 2300 * MIB)]) == []
    assert findings.rank_findings([rank(0, 1 << 40)]) == []  # one rank: nothing to compare with
    assert findings.rank_findings([rank(0, 0), rank(1, 0), rank(2, 1 << 30)]) == []  # a median of 0: no ratio


def test_an_even_number_of_ranks_takes_the_mean_of_the_middle_two():
    # 100, 200, 300, 2000 MiB: the median is (200 + 300) / 2 = 250 MiB; 2000 - 250 = 1750 MiB
    rows = [rank(0, 2000 * MIB), rank(1, 100 * MIB), rank(2, 300 * MIB), rank(3, 200 * MIB)]
    (f,) = findings.rank_findings(rows)
    assert f["title"].startswith("Rank 0 (w0)") and f["gain_bytes"] == 1750 * MIB
    assert f["figure_value"] == 2000 / 250 and "8.00x the ranks' median 250.0 MiB" in f["detail"]


def device(at_peak=None, expandable=0, releases=(), transient=None, peak_requested=-1, leaks=()):
    return {"leaks": list(leaks), "at_peak": at_peak, "at_snapshot": {"expandable_segments": expandable},
            "empty_cache": {"releases": list(releases)}, "transient_at_peak": transient,
            "peak": {"requested": peak_requested}}


def rules_of(dev):
    return [f["rule"] for f in findings.device_findings(dev)]


def test_fragmentation_at_exactly_its_thresholds():
    # 768 MiB reserved for 512 MiB requested: 1.5x and 256 MiB over, both thresholds met exactly
    at = {"reserved": 768 * MIB, "requested": 512 * MIB, "largest_free_block_at_most": 100 * MIB}
    (f,) = findings.device_findings(device(at))
    assert f["rule"] == "snapshot_fragmentation" and f["severity"] == "info"
    assert f["detail"] == ("At the peak 768.0 MiB is reserved for 512.0 MiB requested (1.5x); largest free block at "
                           "most 100.0 MiB.")
    assert f["gain_bytes"] == 256 * MIB and f["gain"] == "up to 256.0 MiB of reserved memory, bytes"
    assert f["figure_value"] == 1.5 and f["threshold"] == 1.5 and f["stack"] == []
    assert f["change_torch"] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert rules_of(device(dict(at, reserved=768 * MIB - 1))) == []
    assert rules_of(device(at, expandable=1)) == []  # one expandable segment is enough
    assert rules_of(device({"reserved": 300 * MIB, "requested": 100 * MIB})) == []  # 3x but 200 MiB over
    assert rules_of(device({"reserved": 768 * MIB, "requested": 0})) == []  # nothing requested: no ratio
    assert rules_of(device(None)) == []


def test_activations_at_exactly_half_the_peak():
    by = [{"frame": f"f{k}", "bytes": 100 * k} for k in range(4, 0, -1)]
    tr = {"step": 3, "bytes": 500, "by_frame": by}
    (f,) = findings.device_findings(device(transient=tr, peak_requested=1000))
    assert f["rule"] == "snapshot_activations_peak" and f["gain_bytes"] == 500
    assert f["figure_value"] == 0.5 and f["threshold"] == 0.5
    assert f["detail"] == ("At the peak 500 B of 1000 B (50 %) was allocated in step 3 and freed before it ends "
                           "(activations, temporaries): f4 400 B, f3 300 B, f2 200 B.")
    assert f["gain"] == "up to 500 B of the peak (what checkpointing can recompute), bytes"
    assert rules_of(device(transient=dict(tr, bytes=499), peak_requested=1000)) == []
    assert rules_of(device(transient={"step": None, "bytes": -1, "by_frame": []}, peak_requested=1000)) == []
    assert rules_of(device(transient=tr, peak_requested=0)) == []
    assert rules_of(device(transient=None, peak_requested=1000)) == []


def release(kind, stack, nbytes, frame="F"):
    return {"kind": kind, "stack": stack, "bytes": nbytes, "frame": frame}


def test_empty_cache_twice_from_one_place_by_its_first_four_frames():
    same = ["a", "b", "c", "d"]
    rel = [release("empty_cache", same + ["e"], 100, "first"), release("allocator", same, 7),
           release("empty_cache", same + ["x"], 300), release("empty_cache", ["z"], 50),
           release("oom_retry", ["z"], 5)]
    (f,) = findings.device_findings(device(releases=rel))
    assert f["rule"] == "snapshot_empty_cache_in_loop" and f["title"] == "empty_cache() called 2 times from first"
    assert f["detail"].startswith("empty_cache() released 400 B in 2 calls from the same place;")
    assert f["gain_bytes"] == 0 and f["gain"] == "none in bytes: 400 B released and reserved again"
    assert f["figure_value"] == 2.0 and f["threshold"] == 2.0 and f["stack"] == same + ["e"]


def test_a_leak_finding_states_its_bytes():
    leak = {"frame": "F", "bytes_per_step": [1024, 2048], "steps": [2, 3], "bytes": 3072, "stack": ["a", "b"]}
    (f,) = findings.device_findings(device(leaks=[leak]))
    assert f["title"] == "Memory grows every step at F" and f["severity"] == "warning"
    assert f["detail"] == ("Allocations from F stay alive: 1.0 KiB, 2.0 KiB more in steps 2, 3, never freed in the "
                           "history.")
    assert f["gain_bytes"] == 3072 and f["gain"] == "3.0 KiB over 2 steps (2.0 KiB a step), bytes"
    assert f["figure"] == "leak_bytes_per_step" and f["figure_value"] == 2048.0 and f["threshold"] == 0.0
    assert f["stack"] == ["a", "b"]


# -- frames -----------------------------------------------------------------------------------------------------
def test_user_frames_are_the_ones_outside_libraries():
    files = ["/job/train.py", "/v/lib/python3.10/site-packages/torch/a.py", "/usr/lib/python3/dist-packages/b.py",
             "/usr/lib/python3.11/threading.py", "<frozen runpy>", "?", r"C:\py\Lib\site-packages\x.py",
             "/job/lib/pythonic.py", "/job/<gen>.py", "??", "/job/lib/python3x/y.py"]
    trace = [e("alloc", 16 * i, 1, frames=[fr("f", name)]) for i, name in enumerate(files)]
    s = snap(trace)
    assert s.frame_file == files
    assert frames.user_frames(s) == [True, False, False, False, False, False, False, True, True, True, True]


def test_the_top_user_frame_is_the_innermost_user_one_else_the_innermost():
    user_a, user_b = fr("a", "/job/a.py", 1), fr("b", "/job/b.py", 2)
    s = snap([e("alloc", 0, 1, frames=[LIB, user_a, user_b]), e("alloc", 16, 1, frames=[LIB, fr("g", "<x>", 3)]),
              e("alloc", 32, 1, frames=[fr(f"n{k}", "/job/n.py", k) for k in range(20)])])
    ids = s.tr_stack.tolist()
    tops = frames.top_user_frames(s, ids + [-1])
    assert [frames.frame_text(s, f) for f in tops] == [
        "a (/job/a.py:1)", "forward (/usr/lib/python3.10/site-packages/torch/nn/module.py:1500)", "n0 (/job/n.py:0)",
        "(no stack recorded)"]
    assert frames.stack_text(s, ids[2]) == [f"n{k} (/job/n.py:{k})" for k in range(16)]  # 16 frames at most
    lib = "forward (/usr/lib/python3.10/site-packages/torch/nn/module.py:1500)"
    assert frames.stack_text(s, ids[0], limit=2) == [lib, "a (/job/a.py:1)"]
    assert frames.stack_text(s, -1) == []
    assert frames.frame_text(s, 0) == "forward (/usr/lib/python3.10/site-packages/torch/nn/module.py:1500)"


# -- replay, peak -----------------------------------------------------------------------------------------------
def history():
    """One 4096 B segment. A block of 1000 B at 0 from before the history, still alive; a block of 500 B at 1024
    from before it, freed at entry 0; 200 B at 1024 made and freed; 600 B at 2048 kept; 300 B at 3072 made, freed."""
    trace = [e("free_completed", 1024, 500), e("alloc", 1024, 200, frames=[fr("x")]), e("free_completed", 1024, 200),
             e("alloc", 2048, 600, frames=[fr("a", line=10)]), e("alloc", 3072, 300, frames=[LIB, fr("b", line=20)]),
             e("free_requested", 3072, 300), e("free_completed", 3072, 300)]
    segs = [seg(0, 4096, [(0, 1024, 1000, "active_allocated"), (1024, 1024, 0, "inactive"),
                          (2048, 1024, 600, "active_allocated"), (3072, 1024, 0, "inactive")])]
    return snap(trace, segs)


def test_replay_pairs_allocs_with_their_frees_and_counts_what_came_before():
    s = history()
    r = replay(s, 0)
    # at the end 1000 + 600 alive; the entries add -500 + 200 - 200 + 600 + 300 - 300 = 100, so 1500 before
    assert (r.live_end, r.live_before) == (1600, 1500)
    assert r.live.tolist() == [1000, 1200, 1000, 1600, 1900, 1900, 1600]
    assert r.reserved.tolist() == [4096] * 7 and (r.reserved_before, r.reserved_end) == (4096, 4096)
    assert r.allocs.tolist() == [1, 3, 4] and r.freed_at.tolist() == [2, 7, 6]
    # the 500 B freed at entry 0, then the 1000 B block no alloc of the history made (alive to the end: 7)
    assert (r.before_addr.tolist(), r.before_size.tolist(), r.before_freed_at.tolist()) == ([1024, 0], [500, 1000],
                                                                                            [0, 7])
    assert alive_at(r, 1).tolist() == [0] and alive_at(r, 2).tolist() == [] and alive_at(r, 4).tolist() == [1, 2]
    assert before_alive_at(r, 0).tolist() == [1] and before_alive_at(r, -1).tolist() == [0, 1]


def test_the_peak_its_blocks_and_what_came_before():
    s = history()
    pk = peak.peak(s, replay(s, 0))
    # after entry 4: 1000 from before (the 500 B block went at entry 0) + 600 + 300 = 1900
    assert (pk["entry"], pk["requested"], pk["reserved"], pk["traced_blocks"], pk["before_history"]) == (
        4, 1900, 4096, 2, 1000)
    assert pk["time_us"] == -1  # no times in this history: unknown
    assert [(g["frame"], g["bytes"], g["blocks"]) for g in pk["by_frame"]] == [
        ("a (/job/train.py:10)", 600, 1), ("b (/job/train.py:20)", 300, 1)]
    assert [(g["bytes"], g["stack"]) for g in pk["by_stack"]] == [
        (600, ["a (/job/train.py:10)"]),
        (300, ["forward (/usr/lib/python3.10/site-packages/torch/nn/module.py:1500)", "b (/job/train.py:20)"])]
    assert pk["by_stack"][1]["frame"] == "b (/job/train.py:20)" and pk["by_frame_groups"] == 2
    assert pk["by_stack_groups"] == 2
    assert [(b["entry"], b["addr"], b["bytes"]) for b in pk["top_blocks"]] == [(3, 2048, 600), (4, 3072, 300)]
    assert pk["top_blocks"][1]["frame"] == "b (/job/train.py:20)" and len(pk["top_blocks"][1]["stack"]) == 2
    one = peak.peak(s, replay(s, 0), limit=1)
    assert len(one["by_frame"]) == len(one["by_stack"]) == len(one["top_blocks"]) == 1 and one["by_frame_groups"] == 2


def test_ties_at_the_peak_go_by_frame_stack_and_entry():
    # two 300 B blocks from two frames, alive together: the frame read first (its id smaller) first
    s = snap([e("alloc", 0, 300, frames=[fr("p")]), e("alloc", 512, 300, frames=[fr("q")])],
             [seg(0, 1024, [(0, 512, 300, "active_allocated"), (512, 512, 300, "active_allocated")])])
    pk = peak.peak(s, replay(s, 0))
    assert [g["frame"] for g in pk["by_frame"]] == ["p (/job/train.py:1)", "q (/job/train.py:1)"]
    assert [g["stack_id"] for g in pk["by_stack"]] == [0, 1]
    assert [b["entry"] for b in pk["top_blocks"]] == [0, 1]
    # the first of two equal peaks is the peak
    s = snap([e("alloc", 0, 300), e("free_completed", 0, 300), e("alloc", 0, 300)],
             [seg(0, 512, [(0, 512, 300, "active_allocated")])])  # live 300, 0, 300
    assert peak.peak(s, replay(s, 0))["entry"] == 0


def test_a_device_without_history_has_no_peak_position():
    s = snap([], [seg(0, 1024, [(0, 1024, 700, "active_allocated")])])
    pk = peak.peak(s, replay(s, 0))
    assert pk == {"entry": -1, "requested": 700, "reserved": 1024, "before_history": 700, "by_frame": [],
                  "by_stack": [], "top_blocks": []}


# -- state ------------------------------------------------------------------------------------------------------
def mapped_history():
    """An expandable segment mapped piece by piece at 0 (3072 B at the snapshot) and a plain one at 8192.
    0 map [0, 1024)  1 map [1024, 2048)  2 alloc 1500 B at 0  3 map [2048, 3072)  4 unmap [3072, 4096)
    5 segment_alloc [8192, 9216)  6 segment_free [9216, 10240) (a plain segment beside it, released)
    The plain segment holds a 400 B block from before the history at 8192."""
    trace = [e("segment_map", 0, 1024), e("segment_map", 1024, 1024), e("alloc", 0, 1500, frames=[fr("a")]),
             e("segment_map", 2048, 1024), e("segment_unmap", 3072, 1024), e("segment_alloc", 8192, 1024),
             e("segment_free", 9216, 1024)]
    segs = [seg(0, 3072, [(0, 1536, 1500, "active_allocated"), (1536, 1536, 0, "inactive")], expandable=True,
                allocated=1536, active=1536),
            seg(8192, 1024, [(8192, 512, 400, "active_allocated"), (8704, 512, 0, "inactive")], allocated=512,
                active=512)]
    return snap(trace, segs)


def test_state_at_the_snapshot_by_hand():
    s = mapped_history()
    got = state.at_snapshot(s, 0)
    assert got == {"segments": 2, "expandable_segments": 1, "reserved": 4096, "allocated": 2048,
                   "requested": 1900, "active": 2048, "free": 2048, "fragmentation": round(1 - 1900 / 4096, 6),
                   "largest_free_block": 1536, "free_blocks": 2, "blocks": 4}
    # a block without its requested size counts its size; no free block: the largest is 0
    s = snapshot_of({"segments": [{"device": 0, "address": 0, "total_size": 512,
                                   "blocks": [{"address": 0, "size": 512, "state": "active_allocated"}]}]}, "b.pkl")
    got = state.at_snapshot(s, 0)
    assert (got["requested"], got["largest_free_block"], got["fragmentation"]) == (512, 0, 0.0)
    assert state.at_snapshot(s, 1)["fragmentation"] == -1.0  # nothing reserved on device 1: unknown


def test_segments_rebuilt_at_an_entry_merge_only_touching_mapped_pieces():
    s = mapped_history()
    r = replay(s, 0)
    # live: 400 from before; 1500 from entry 2. reserved at the end 3072 + 1024; the entries add 1024 x (1 + 1 + 1
    # - 1 + 1 - 1) = 2048, so 2048 before (the pieces [3072, 4096) and [9216, 10240))
    assert r.reserved.tolist() == [3072, 4096, 4096, 5120, 4096, 5120, 4096]
    at2 = state.at_entry(s, r, 2)
    # after entry 2: [0, 2048) mapped, [3072, 4096) not unmapped yet (apart: two), [9216, 10240) plain
    assert (at2["segments"], at2["reserved"], at2["requested"]) == (3, 4096, 1900)
    # free: [1500, 2048) 548, [3072, 4096) 1024, [9216, 10240) 1024; the 400 B block's segment not made yet
    assert (at2["largest_free_block_at_most"], at2["free_ranges"], at2["blocks"]) == (1024, 3, 2)
    at3 = state.at_entry(s, r, 3)
    # after entry 3: [0, 3072) and [3072, 4096) touch and are both mapped: one range, free [1500, 4096) 2596
    assert (at3["segments"], at3["largest_free_block_at_most"], at3["free_ranges"]) == (2, 2596, 2)
    at5 = state.at_entry(s, r, 5)
    # after entry 5: [0, 3072), [8192, 9216) and [9216, 10240) touch but are plain segments: three
    # free [1500, 3072) 1572, [8592, 9216) 624, [9216, 10240) 1024
    assert (at5["segments"], at5["largest_free_block_at_most"], at5["free_ranges"]) == (3, 1572, 3)
    assert at5["fragmentation"] == round(1 - 1900 / 5120, 6) and at5["entry"] == 5 and at5["time_us"] == -1


# -- events -----------------------------------------------------------------------------------------------------
EMPTY = fr("empty_cache", "/usr/lib/python3.10/site-packages/torch/cuda/memory.py", 170)
HOOK = fr("post_step", "/job/hook.py", 5)


def release_history():
    """0-1 two segments made; 2-3 both released by empty_cache() (3000 B); 4 one made; 5 an OOM; 6 released
    after it; 7 made; 8-9 an explicit empty_cache entry (no size) and its release (700 B); 10 made; 11 an alloc;
    12 released by the allocator; 13 the alloc freed; 14 an OOM. Nothing is reserved or allocated at the snapshot."""
    step = [fr("step", line=7)]
    trace = [e("segment_alloc", 0, 1000, t=100), e("segment_alloc", 4096, 2000, t=101),
             e("segment_free", 0, 1000, t=102, frames=[EMPTY, HOOK]), e("segment_free", 4096, 2000, t=103),
             e("segment_alloc", 0, 1000, t=104), e("oom", size=5000, t=105, frames=step, device_free=10),
             e("segment_free", 0, 1000, t=106, frames=step), e("segment_alloc", 0, 700, t=107),
             e("empty_cache", t=108), e("segment_free", 0, 700, t=109, frames=[fr("train", line=20)]),
             e("segment_alloc", 0, 300, t=110), e("alloc", 8192, 10, t=111), e("segment_free", 0, 300, t=112),
             e("free_completed", 8192, 10, t=113), e("oom", size=7, t=114, frames=step, device_free=3)]
    return snap(trace)


def test_releases_by_kind_by_hand():
    s = release_history()
    r = replay(s, 0)
    assert r.reserved.tolist() == [1000, 3000, 2000, 0, 1000, 1000, 0, 700, 700, 0, 300, 300, 0, 0, 0]
    got = events.releases(s, r)
    assert (got["empty_cache_calls"], got["empty_cache_bytes"], got["release_count"]) == (2, 3700, 4)
    assert got["warning"] == events.WARNING
    rows = [(x["entry"], x["time_us"], x["kind"], x["segments"], x["bytes"], x["reserved_before"], x["reserved_after"])
            for x in got["releases"]]
    assert rows == [(2, 102, "empty_cache", 2, 3000, 3000, 0), (6, 106, "oom_retry", 1, 1000, 1000, 0),
                    (8, 108, "empty_cache", 2, 700, 700, 0), (12, 112, "allocator", 1, 300, 300, 0)]
    first, third = got["releases"][0], got["releases"][2]
    assert first["frame"] == "post_step (/job/hook.py:5)"
    assert first["stack"] == ["empty_cache (/usr/lib/python3.10/site-packages/torch/cuda/memory.py:170)",
                              "post_step (/job/hook.py:5)"]
    assert third["frame"] == "train (/job/train.py:20)"  # the explicit entry has no stack: the next one's
    two = events.releases(s, r, limit=2)
    assert len(two["releases"]) == 2 and two["release_count"] == 4 and two["empty_cache_calls"] == 2
    assert events.releases(s, r)["empty_cache_bytes"] == 3700


def test_a_release_is_an_oom_retry_only_right_after_an_oom():
    # [oom, free, alloc, free, oom]: the first release follows the OOM at entry 0; the second an alloc
    s = snap([e("oom", size=9), e("segment_free", 0, 10), e("alloc", 64, 1), e("segment_free", 0, 5), e("oom", size=9)])
    got = events.releases(s, replay(s, 0))
    assert [x["kind"] for x in got["releases"]] == ["oom_retry", "allocator"]
    assert got["warning"] == "" and got["empty_cache_calls"] == 0
    # a release at the first entry has no entry before it (the last one, an OOM, is not before it)
    s = snap([e("segment_free", 0, 10), e("alloc", 64, 1), e("oom", size=9)])
    assert [x["kind"] for x in events.releases(s, replay(s, 0))["releases"]] == ["allocator"]


def test_ooms_by_hand():
    s = release_history()
    r = replay(s, 0)
    first, second = events.ooms(s, r)
    # at entry 5: nothing allocated yet, 1000 B reserved (entry 4's segment)
    assert first == {"entry": 5, "time_us": 105, "requested": 5000, "device_free": 10, "allocated": 0,
                     "reserved": 1000, "frame": "step (/job/train.py:7)", "stack": ["step (/job/train.py:7)"]}
    assert (second["entry"], second["allocated"], second["reserved"]) == (14, 0, 0)
    assert len(events.ooms(s, r, limit=1)) == 1


# -- bands ------------------------------------------------------------------------------------------------------
def band_history():
    """A 100 B at 0 (entries 0-2), B 300 B (1-4, library frames only), C 200 B (3-6), D 300 B (5, kept)."""
    trace = [e("alloc", 0, 100, frames=[fr("a")]), e("alloc", 1000, 300, frames=[LIB]), e("free_completed", 0, 100),
             e("alloc", 2000, 200, frames=[fr("c")]), e("free_completed", 1000, 300),
             e("alloc", 3000, 300, frames=[fr("a")]), e("free_completed", 2000, 200)]
    segs = [seg(0, 4096, [(0, 3000, 0, "inactive"), (3000, 1024, 300, "active_allocated"),
                          (4024, 72, 0, "inactive")])]
    return snap(trace, segs)


def test_bands_on_lanes_by_hand():
    s = band_history()
    r = replay(s, 0)
    got = bands.bands(s, r, -5, 100, limit=4)
    # A [0, 2] lane 0; B [1, 4] lane 1; C [3, 6]: A ended before 3, lane 0; D [5, 7]: B ended before 5, lane 1
    assert (got["start_entry"], got["end_entry"], got["entries"], got["alive"], got["shown"]) == (0, 6, 7, 4, 4)
    assert (got["alloc"], got["free"], got["bytes"], got["lane"], got["lanes"]) == (
        [0, 1, 3, 5], [2, 4, 6, 7], [100, 300, 200, 300], [0, 1, 0, 1], 2)
    lib = "forward (/usr/lib/python3.10/site-packages/torch/nn/module.py:1500)"
    assert got["frames"] == ["a (/job/train.py:1)", lib, "c (/job/train.py:1)"]
    assert got["frame"] == [0, 1, 2, 0] and got["alive_bytes"] == got["shown_bytes"] == 900
    two = bands.bands(s, r, 0, 6, limit=2)  # the two 300 B ones (B before D: the earlier first on a tie)
    assert (two["alloc"], two["free"], two["lane"], two["lanes"]) == ([1, 5], [4, 7], [0, 0], 1)
    assert two["shown_bytes"] == 600
    assert two["alive"] == 4 and two["frames"] == [got["frames"][1], got["frames"][0]] and two["frame"] == [0, 1]


def test_bands_alive_in_a_range_include_its_edges():
    s = band_history()
    r = replay(s, 0)
    assert bands.bands(s, r, 4, 4)["alloc"] == [1, 3]  # B freed at 4, C made at 3
    assert bands.bands(s, r, 3, 3)["alloc"] == [1, 3]  # C made at 3
    assert bands.bands(s, r, 5, 6)["alloc"] == [3, 5] and bands.bands(s, r, 5, 6)["alive_bytes"] == 500
    assert bands.bands(s, r, 5, 4)["alive"] == 0  # an empty range


# -- steps ------------------------------------------------------------------------------------------------------
X, T, U, W = fr("x", line=1), fr("t", line=2), fr("u", line=3), fr("w", line=4)


def step_history():
    """Steps [0, 4), [4, 8), [8, 11) (entries). X (10, 20, 30 B) and W (100 B in the later two) kept; T (5 B)
    made and freed in each; U (7 B) made at the first step's last entry, freed at the second's first."""
    trace = [e("alloc", 0, 10, frames=[X]), e("alloc", 100, 5, frames=[T]), e("free_completed", 100, 5),
             e("alloc", 500, 7, frames=[U]),
             e("free_completed", 500, 7), e("alloc", 200, 20, frames=[X]), e("alloc", 100, 5, frames=[T]),
             e("free_completed", 100, 5), e("alloc", 600, 100, frames=[W]),
             e("alloc", 300, 30, frames=[X]), e("alloc", 700, 100, frames=[W])]
    kept = [(0, 16, 10, "active_allocated"), (200, 32, 20, "active_allocated"), (300, 32, 30, "active_allocated"),
            (600, 100, 100, "active_allocated"), (700, 100, 100, "active_allocated")]
    return snap(trace, [seg(0, 1024, kept)])


STEPS = [(1, 0, 4), (2, 4, 8), (3, 8, 11)]


def test_growth_per_step_by_hand():
    s = step_history()
    r = replay(s, 0)
    assert r.live.tolist() == [10, 15, 10, 17, 10, 30, 35, 30, 130, 160, 260]
    got = steps.growth(s, r, STEPS)
    # step 1: X 10 and U 7 (freed at the next step's first entry: alive at this one's end); T freed inside
    assert [(g["step"], g["first_entry"], g["last_entry"], g["live_start"], g["live_end"], g["grown"],
             g["grown_blocks"]) for g in got] == [(1, 0, 3, 0, 17, 17, 2), (2, 4, 7, 17, 30, 20, 1),
                                                  (3, 8, 10, 30, 260, 230, 3)]
    assert got[0]["by_frame"] == [{"frame": "x (/job/train.py:1)", "bytes": 10},
                                  {"frame": "u (/job/train.py:3)", "bytes": 7}]
    assert got[2]["by_frame"] == [{"frame": "w (/job/train.py:4)", "bytes": 200},
                                  {"frame": "x (/job/train.py:1)", "bytes": 30}]
    assert [g["by_frame"] for g in steps.growth(s, r, STEPS[:1], limit=1)] == [[{"frame": "x (/job/train.py:1)",
                                                                                   "bytes": 10}]]
    assert len(steps.growth(s, r, STEPS, most=2)) == 2 and steps.growth(s, r, []) == []
    # a step that starts at an alloc holds it; allocs outside every step count nowhere
    assert [g["grown"] for g in steps.growth(s, r, [(2, 5, 8)])] == [20]
    assert [(g["grown"], g["live_start"]) for g in steps.growth(s, r, [(2, 4, 8)])] == [(20, 17)]


def test_leaks_by_hand():
    s = step_history()
    r = replay(s, 0)
    got = steps.leaks(s, r, STEPS)
    # later steps 2 [4, 8) and 3 [8, 11): W is made twice in step 3, never in step 2 (not every step): no leak;
    # X grows 20 then 30 and is never freed
    assert [(x["frame"], x["bytes_per_step"], x["bytes"], x["steps"]) for x in got] == [
        ("x (/job/train.py:1)", [20, 30], 50, [2, 3])]
    assert got[0]["stack"] == ["x (/job/train.py:1)"] and got[0]["stack_id"] == 0
    assert steps.leaks(s, r, STEPS[:2]) == []  # two steps: one later step is no repetition
    # with steps [0, 4), [4, 9), [9, 11): W grows 100 in both later steps, X 20 and 30: W first (more bytes)
    wide = [(1, 0, 4), (2, 4, 9), (3, 9, 11)]
    got = steps.leaks(s, r, wide)
    assert [(x["frame"], x["bytes_per_step"], x["bytes"]) for x in got] == [
        ("w (/job/train.py:4)", [100, 100], 200), ("x (/job/train.py:1)", [20, 30], 50)]
    assert [x["frame"] for x in steps.leaks(s, r, wide, limit=1)] == ["w (/job/train.py:4)"]


def test_transient_at_the_peak_by_hand():
    s = step_history()
    r = replay(s, 0)
    # entry 6 (step 2): T made at 6 and freed at 7, inside the step
    assert steps.transient_at(s, r, STEPS, 6) == {"step": 2, "bytes": 5,
                                                  "by_frame": [{"frame": "t (/job/train.py:2)", "bytes": 5}]}
    assert steps.transient_at(s, r, STEPS, 7)["bytes"] == 0  # freed at 7: not alive after it
    # entry 3: U made at 3 is freed at 4, the next step's first entry: not freed before this step ends
    assert steps.transient_at(s, r, STEPS, 3)["bytes"] == 0
    assert steps.transient_at(s, r, STEPS, 4)["step"] == 2  # a step's first entry is in it
    assert steps.transient_at(s, r, STEPS, 11)["bytes"] == -1  # past the last step


def pattern(seq, free_after=()):
    """Allocs whose frames are the letters of `seq` ("-": no frames), each freed at once where listed."""
    trace = []
    for i, c in enumerate(seq):
        trace.append(e("alloc", 64 * i, 8, frames=[] if c == "-" else [fr(c)]))
        if i in free_after:
            trace.append(e("free_completed", 64 * i, 8))
    return snap(trace)


def test_pattern_steps_by_hand():
    s = pattern("XYZXYZXYZ", free_after=(1,))
    # X at allocs 0, 3, 6: entries 0, 4, 7 (a free after the second alloc); gaps 3, 3
    assert steps.pattern_steps(s, replay(s, 0)) == [(1, 0, 4), (2, 4, 7), (3, 7, 10)]
    s = pattern("XYXYYYX")  # X at 0, 2, 6: gaps 2 and 4, within a factor of 2
    assert steps.pattern_steps(s, replay(s, 0)) == [(1, 0, 2), (2, 2, 6), (3, 6, 7)]
    s = pattern("XYXYYYYX")  # X: gaps 2 and 5; Y at 1, 3, 4, 5, 6: gaps of 1
    assert steps.pattern_steps(s, replay(s, 0)) == []
    s = pattern("XXXY")  # X: gaps of 1 (not a step); Y once
    assert steps.pattern_steps(s, replay(s, 0)) == []
    s = pattern("-Y-Y-Y")  # no frames: not a stack; Y (stack id 0) at 1, 3, 5
    assert steps.pattern_steps(s, replay(s, 0)) == [(1, 1, 3), (2, 3, 5), (3, 5, 6)]
    s = pattern("XYX")  # three allocs: too few
    assert steps.pattern_steps(s, replay(s, 0)) == []


def test_time_steps_take_the_entries_from_a_steps_start_up_to_its_end():
    s = snap([e("alloc", 16 * i, 1, t=1000 + i) for i in range(11)])  # entries at 1,000 ... 1,010 µs
    r = replay(s, 0)
    got = steps.time_steps(s, r, [(7, 1_000_000, 1_002_000), (8, 1_002_000, 1_002_000), (9, 1_002_000, 10 ** 7),
                                  (10, 5 * 10 ** 7, 6 * 10 ** 7)], 0)
    assert got == [(7, 0, 2), (9, 2, 11)]
    # an offset of 999 µs puts entry 0 at 1,000 ns and entry 1 at 2,000 ns, the step's end (not in it)
    assert steps.time_steps(s, r, [(1, 0, 2_000)], 999_000) == [(1, 0, 1)]


# -- join, summary, series --------------------------------------------------------------------------------------
def test_the_clocks_are_tied_only_when_the_history_overlaps_the_window():
    s = snap([e("alloc", 16 * i, 1, t=1000 + i) for i in range(7)])  # 1,000 ... 1,006 µs
    r = replay(s, 0)
    # base 500,000 ns: the history spans 500,000 ... 506,000 ns on the window's clock
    for window in (None, (506_000, 10 ** 9), (0, 500_000)):
        assert join.clock_offset(s, r, 500_000, window) == (500_000, "")
    for window in ((506_001, 10 ** 9), (0, 499_999)):
        assert join.clock_offset(s, r, 500_000, window) == (
            None, "not joined: the snapshot's history does not overlap the window in time")
    assert join.clock_offset(s, r, None, None) == (
        None, "not joined: the window's trace does not give its wall clock (baseTimeNanoseconds)")
    s = snap([e("alloc", 0, 1, t=5), e("alloc", 16, 1)])
    assert join.clock_offset(s, replay(s, 0), 0, None) == (None, "not joined: the snapshot's entries carry no times")
    s = snap([])
    assert join.clock_offset(s, replay(s, 0), 0, None) == (None, "not joined: the snapshot has no history")


def op_table():
    """outer [0, 1,000,000] ns, inner [100,000, 300,000] inside it, later [2,000,000, 2,010,000]; a kernel."""
    return table([ev("outer", Kind.CPU_OP, 0, 1_000_000), ev("inner", Kind.CPU_OP, 100_000, 200_000),
                  ev("later", Kind.CPU_OP, 2_000_000, 10_000), ev("k", Kind.KERNEL, 150_000, 10)])


def test_the_innermost_operator_at_each_entry_ends_included():
    import numpy as np
    # the entries' wall clock is 7 ms ahead of the window's: 7,150 µs is at 150,000 ns there
    s = snap([e("alloc", 16 * i, 1, t=t + 7000) for i, t in enumerate((150, 300, 301, 1000, 1001, 2000))])
    r = replay(s, 0)
    got = join.operators_at(s, r, op_table(), 7_000_000, np.arange(6))
    assert got == ["inner", "inner", "outer", "outer", "", "later"]
    nameless = table([ev(None, Kind.CPU_OP, 0, 10 ** 9)])  # an operator without a name: "" (not a made-up one)
    assert join.operators_at(s, r, nameless, 7_000_000, np.arange(1)) == [""]
    assert join.operators_at(s, r, op_table(), 0, np.zeros(0, dtype=np.int64)) == []
    kernels_only = table([ev("k", Kind.KERNEL, 150_000, 10)])
    assert join.operators_at(s, r, kernels_only, 0, np.arange(2)) == ["", ""]


def joined_history():
    """0 a 4096 B segment; 1 a (1000 B, kept) at 150 µs; 2 b (500 B) at 400 µs, freed at 3; 4 c (2000 B) at
    1,500 µs, freed at 5. Window steps [0, 1 ms) and [1 ms, 2 ms) on a clock whose 0 is the wall clock's 0."""
    trace = [e("segment_alloc", 0, 4096, t=100), e("alloc", 0, 1000, t=150, frames=[fr("a")]),
             e("alloc", 1024, 500, t=400, frames=[fr("b")]), e("free_completed", 1024, 500, t=500),
             e("alloc", 2048, 2000, t=1500, frames=[fr("c")]), e("free_completed", 2048, 2000, t=1600)]
    return snap(trace, [seg(0, 4096, [(0, 1024, 1000, "active_allocated"), (1024, 3072, 0, "inactive")])])


WINDOW_STEPS = [(1, 0, 1_000_000), (2, 1_000_000, 2_000_000)]


def test_a_summary_joined_to_its_window_by_hand():
    got = summary.summarize(joined_history(), table=op_table(), window_steps=WINDOW_STEPS, base_ns=0,
                            window_span=(0, 2_000_000))
    assert {k: got[k] for k in ("schema", "file", "flavour", "has_times", "segments", "blocks", "entries", "frames",
                                "warnings")} == {
        "schema": 1, "file": "hand.pickle", "flavour": "pytorch", "has_times": True, "segments": 1, "blocks": 2,
        "entries": 6, "frames": 3, "warnings": []}
    (dev,) = got["devices"]
    assert dev["device"] == 0 and dev["entries"] == 6
    assert dev["actions"] == {"alloc": 3, "free_completed": 2, "segment_alloc": 1}
    assert dev["joined"] and dev["join"] == "joined by time to the window's trace"
    assert (dev["steps_source"], dev["steps"]) == (steps.SOURCE_TIME, 2)
    # live 0, 1000, 1500, 1000, 3000, 1000: the peak after entry 4, c (2000 B, no operator at 1.5 ms) and a
    # (1000 B, at 150 µs: inside inner)
    assert (dev["peak"]["entry"], dev["peak"]["requested"]) == (4, 3000)
    assert [(b["bytes"], b["operator"]) for b in dev["peak"]["top_blocks"]] == [(2000, ""), (1000, "inner")]
    assert dev["before_history"] == {"requested": 0, "reserved": 0}
    assert (dev["at_peak"]["entry"], dev["at_peak"]["reserved"]) == (4, 4096)
    assert [(g["step"], g["grown"], g["live_start"], g["live_end"]) for g in dev["growth"]] == [
        (1, 1000, 0, 1000), (2, 0, 1000, 1000)]
    assert dev["growth_last"] == dev["growth"][1] and dev["leaks"] == []
    # c is made and freed in step 2: 2000 of the peak's 3000 B
    assert dev["transient_at_peak"] == {"step": 2, "bytes": 2000,
                                        "by_frame": [{"frame": "c (/job/train.py:1)", "bytes": 2000}]}
    assert [f["rule"] for f in dev["findings"]] == ["snapshot_activations_peak"]
    assert dev["ooms"] == [] and dev["empty_cache"]["release_count"] == 0
    one = summary.summarize(joined_history(), table=op_table(), limit=1, window_steps=WINDOW_STEPS, base_ns=0)
    assert len(one["devices"][0]["peak"]["top_blocks"]) == 1 and len(one["devices"][0]["growth"]) == 1


def test_a_summary_not_joined_places_nothing():
    got = summary.summarize(joined_history(), table=op_table(), window_steps=WINDOW_STEPS, base_ns=0,
                            window_span=(5_000_000, 6_000_000))
    (dev,) = got["devices"]
    assert not dev["joined"] and dev["join"] == "not joined: the snapshot's history does not overlap the window in time"
    assert (dev["steps_source"], dev["steps"], dev["growth"], dev["growth_last"]) == (steps.SOURCE_NONE, 0, [], None)
    assert all("operator" not in b for b in dev["peak"]["top_blocks"])
    assert dev["transient_at_peak"] == {"step": None, "bytes": -1, "by_frame": []}
    # joined, but without a table: no operators either
    dev = summary.summarize(joined_history(), window_steps=WINDOW_STEPS, base_ns=0)["devices"][0]
    assert dev["joined"] and all("operator" not in b for b in dev["peak"]["top_blocks"])
    # a device with segments and no history
    s = snap([], [seg(0, 1024, [(0, 1024, 700, "active_allocated")])])
    dev = summary.summarize(s)["devices"][0]
    assert dev["at_peak"] is None and dev["transient_at_peak"] is None and dev["actions"] == {}


def test_series_keep_each_bins_maximum():
    s = step_history()
    # live 10, 15, 10, 17, 10, 30, 35, 30, 130, 160, 260; 3 points: bins [0, 3), [3, 7), [7, 11)
    got = summary.series(s, 0, points=3)
    assert got == {"device": 0, "entry": [0, 3, 7], "requested": [15, 35, 260], "reserved": [1024] * 3,
                   "time_us": [-1] * 3}
    assert summary.series(s, 0, points=1)["requested"] == [17, 260]  # at least 2 points: bins [0, 5), [5, 11)
    live = [10, 15, 10, 17, 10, 30, 35, 30, 130, 160, 260]
    assert summary.series(s, 0, points=100)["requested"] == live and summary.series(s, 0, 10 ** 9)["entry"] == list(
        range(11))
    assert summary.series(s, 5) == {"device": 5, "entry": [], "requested": [], "reserved": [], "time_us": []}


def test_rank_findings_with_two_ranks_an_odd_median_and_ranks_that_peaked_at_zero():
    # two ranks, 1000 and 3000 MiB: median 2000; 3000 is 1.5x and 1000 MiB above
    (f,) = findings.rank_findings([rank(0, 1000 * MIB), rank(1, 3000 * MIB)])
    assert f["gain_bytes"] == 1000 * MIB and f["why"] == (
        "One rank holds more: an uneven split of the batch, of pipeline stages or of parameters, or work only rank 0 "
        "does (logging, evaluation, checkpoint gathering); the job's memory limit is that rank's.")
    assert f["change_torch"] == "balance the split; move rank-0-only work out of the step or onto the CPU"
    assert f["change_npu"] == "the same on torch_npu"
    # three ranks 1000, 1200, 3000 MiB: the median is the middle one, 1200 (not 1100)
    (f,) = findings.rank_findings([rank(0, 1000 * MIB), rank(1, 1200 * MIB), rank(2, 3000 * MIB)])
    assert f["gain_bytes"] == 1800 * MIB
    # four ranks whose middle two sum to an odd number of bytes: the median is rounded down to a whole byte
    (f,) = findings.rank_findings([rank(0, 100 * MIB), rank(1, 200 * MIB + 1), rank(2, 300 * MIB),
                                   rank(3, 2000 * MIB)])
    assert f["gain_bytes"] == 1750 * MIB and f["figure_value"] == 2000 * MIB / (250 * MIB)
    # a rank that peaked at 0 bytes is a known peak: median of 0, 1000, 3000 MiB is 1000
    (f,) = findings.rank_findings([rank(0, 0), rank(1, 1000 * MIB), rank(2, 3000 * MIB)])
    assert f["gain_bytes"] == 2000 * MIB
    # a median of one byte still gives a ratio
    (f,) = findings.rank_findings([rank(0, 1), rank(1, 1), rank(2, 1 << 30)])
    assert f["gain_bytes"] == (1 << 30) - 1


def test_defaults_bound_the_bands_series_and_summary_lists():
    # 2001 allocations of 1 B, each from its own line, all kept
    trace = [e("alloc", 16 * i, 1, frames=[fr("f", line=i)]) for i in range(2001)]
    s = snap(trace, [seg(0, 16 * 2001, [(16 * i, 16, 1, "active_allocated") for i in range(2001)])])
    r = replay(s, 0)
    assert bands.bands(s, r, 0, r.n - 1)["shown"] == 1000  # the default limit
    assert len(summary.series(s, 0)["entry"]) == 2000  # the default number of points
    pk = summary.summarize(s)["devices"][0]["peak"]
    assert (pk["entry"], len(pk["by_frame"]), len(pk["top_blocks"])) == (2000, 20, 20)  # 20 of each by default


def test_an_allocation_of_0_bytes_is_a_band_of_0_bytes():
    s = snap([e("alloc", 0, 0, frames=[fr("a")]), e("free_completed", 0, 0)])
    got = bands.bands(s, replay(s, 0), 0, 1)
    assert (got["bytes"], got["alive_bytes"]) == ([0], 0)


def test_a_segment_mapped_at_its_start_after_the_entry_leaves_its_end():
    # an expandable segment [0, 2048) at the snapshot; [0, 1024) mapped at entry 1: after entry 0 only
    # [1024, 2048) was there, holding the 100 B at 1024: free 924 B after it
    s = snap([e("alloc", 1024, 100, frames=[fr("a")]), e("segment_map", 0, 1024)],
             [seg(0, 2048, [(1024, 128, 100, "active_allocated")], expandable=True)])
    got = state.at_entry(s, replay(s, 0), 0)
    assert (got["segments"], got["reserved"], got["largest_free_block_at_most"], got["free_ranges"]) == (
        1, 1024, 924, 1)
    assert type(got["largest_free_block_at_most"]) is int  # bytes, also with no block from before the history


def test_the_text_with_its_defaults_a_peak_at_the_first_entry_and_no_warnings_key():
    dev = {"device": 0, "at_snapshot": {"reserved": 0, "allocated": 0, "requested": 0, "fragmentation": -1.0,
                                        "largest_free_block": 0, "segments": 0, "expandable_segments": 0},
           "peak": {"entry": 0, "requested": 1, "reserved": 2, "before_history": 0,
                    "by_frame": [{"bytes": k, "blocks": 1, "frame": f"f{k}"} for k in range(6)]},
           "empty_cache": {"empty_cache_calls": 0}, "ooms": [], "growth": [], "leaks": [], "join": "J"}
    lines = snapshot_text({"file": "f", "flavour": "pytorch", "segments": 0, "blocks": 0, "entries": 1,
                           "devices": [dev]}).split("\n")
    assert lines[2] == "  peak 1 B requested (2 B reserved) at entry 0; 0 B from before the history"
    assert [x.split()[-1] for x in lines[3:-1]] == ["f0", "f1", "f2", "f3", "f4"]  # 5 frames by default


def test_four_allocations_and_a_stack_seen_twice_make_steps():
    s = pattern("XYXY")  # X at 0 and 2: one gap of 2
    assert steps.pattern_steps(s, replay(s, 0)) == [(1, 0, 2), (2, 2, 4)]


@pytest.mark.parametrize("bad,found", [(511, True), (512, False)])
def test_at_most_512_recurring_stacks_are_tried(bad, found):
    # `bad` stacks each made twice in a row (a gap of 1: no step), then G, A, G, A, G: G is the candidate after them
    seq = [f"s{k}" for k in range(bad) for _ in range(2)] + ["G", "A", "G", "A", "G"]
    trace = [e("alloc", 16 * i, 8, frames=[fr(c)]) for i, c in enumerate(seq)]
    s = snap(trace)
    got = steps.pattern_steps(s, replay(s, 0))
    first = 2 * bad  # G's first alloc
    assert got == ([(1, first, first + 2), (2, first + 2, first + 4), (3, first + 4, first + 5)] if found else [])


def test_the_state_at_the_snapshot_counts_its_own_device_and_unknowns_as_nothing():
    segs = [{"device": 0, "address": 0, "total_size": 1024,  # allocated and active sizes not given: unknown
             "blocks": [{"address": 0, "size": 512, "requested_size": 0, "state": "active_allocated"},  # 0 B asked
                        {"address": 512, "state": "active_allocated"}]},  # no size at all: 0 B
            {"device": 0, "address": 4096, "allocated_size": 8, "active_size": 8, "blocks": []},  # no total size
            {"device": 1, "address": 0, "total_size": 64, "allocated_size": 64, "active_size": 64,
             "blocks": [{"address": 0, "size": 64, "requested_size": 77, "state": "active_allocated"}]}]
    s = snapshot_of({"segments": segs}, "two.pkl")
    got = state.at_snapshot(s, 0)
    assert (got["reserved"], got["allocated"], got["active"], got["requested"], got["blocks"]) == (1024, 8, 8, 0, 2)
    assert state.at_snapshot(s, 1)["requested"] == 77
    r = replay(s, 0)  # the replay's end state is counted alike
    assert (r.live_end, r.reserved_end) == (0, 1024)


def test_an_entry_at_time_0_has_a_time():
    s = snap([e("alloc", 0, 1, t=0), e("alloc", 16, 1, t=1)])
    assert join.clock_offset(s, replay(s, 0), 0, None) == (0, "")


def test_ooms_are_bounded_by_20_by_default():
    s = snap([e("oom", size=k, t=k) for k in range(21)])
    got = events.ooms(s, replay(s, 0))
    assert [x["requested"] for x in got] == list(range(20))


def test_a_summary_with_steps_from_the_pattern_says_so():
    dev = summary.summarize(pattern("XYZXYZXYZ"))["devices"][0]
    assert (dev["steps_source"], dev["steps"]) == (steps.SOURCE_PATTERN, 3)
    assert not dev["joined"] and dev["join"] == "not joined: the snapshot's entries carry no times"


def test_segment_events_after_the_entry_are_undone_last_first():
    # the segment [0, 1024) is there after entry 0, released at 2 and made again at 3: undoing 3 then 2 puts it back
    # (2 then 3 would take it away); a release of unknown size (entry 4) undoes nothing
    s = snap([e("alloc", 0, 100, frames=[fr("a")]), e("free_completed", 0, 100), e("segment_free", 0, 1024),
              e("segment_alloc", 0, 1024), e("segment_free", 4096)], [seg(0, 1024, [(0, 1024, 0, "inactive")])])
    got = state.at_entry(s, replay(s, 0), 0)
    assert (got["segments"], got["largest_free_block_at_most"], got["free_ranges"]) == (1, 924, 1)


def test_a_0_byte_block_at_the_peak_counts_0_bytes_and_blocks_keep_their_times():
    # 0 B at 5 µs, then 100 B at 6 µs, both kept: the peak (100 B, after entry 1) holds both, the empty one as 0 B
    s = snap([e("alloc", 512, 0, t=5, frames=[fr("z")]), e("alloc", 0, 100, t=6, frames=[fr("a")])],
             [seg(0, 1024, [(0, 512, 100, "active_allocated"), (512, 512, 0, "active_allocated")])])
    pk = peak.peak(s, replay(s, 0))
    assert [(g["frame"], g["bytes"], g["blocks"]) for g in pk["by_frame"]] == [
        ("a (/job/train.py:1)", 100, 1), ("z (/job/train.py:1)", 0, 1)]
    assert [(b["bytes"], b["time_us"]) for b in pk["top_blocks"]] == [(100, 6), (0, 5)]


def test_two_frees_from_before_the_history_side_by_side_are_both_from_before():
    # frees of 10 B at 100 and 20 B at 200 with no alloc before them, then 5 B at 300 made and kept
    s = snap([e("free_completed", 100, 10), e("free_completed", 200, 20), e("alloc", 300, 5)])
    r = replay(s, 0)
    assert (r.before_addr.tolist(), r.before_size.tolist(), r.before_freed_at.tolist()) == ([100, 200], [10, 20], [0, 1])
    assert r.freed_at.tolist() == [3]  # never freed: the history's length
