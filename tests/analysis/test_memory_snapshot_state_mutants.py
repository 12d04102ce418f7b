"""The allocator's state rebuilt at an entry (analysis/memory_snapshot/state.at_entry, _ranges_at, _merge,
_fragmentation) and the release list's default bound (events.releases), on snapshots of one or two entries, each
figure counted by hand in the comments (issue 46: the survivors of a mutation run over these functions)."""
from test_memory_snapshot_mutants import e, fr, seg, snap

from canning_tb.analysis.memory_snapshot import events, state
from canning_tb.analysis.memory_snapshot.replay import replay

OOM = e("oom", size=1)  # an entry that changes no address: the state after it is the snapshot's


def at_first(s):
    got = state.at_entry(s, replay(s, 0), 0)
    return got["segments"], got["largest_free_block_at_most"], got["free_ranges"]


def test_free_gaps_between_blocks_in_address_order():
    # [0, 1024): 100 B from before the history at 0 (read after the traced block), 200 B traced at 512 and kept
    # free [100, 512) 412 B and [712, 1024) 312 B: two gaps, the largest 412
    s = snap([e("alloc", 512, 200, frames=[fr("a")])],
             [seg(0, 1024, [(0, 128, 100, "active_allocated"), (512, 256, 200, "active_allocated")])])
    got = state.at_entry(s, replay(s, 0), 0)
    assert (got["segments"], got["largest_free_block_at_most"], got["free_ranges"]) == (1, 412, 2)
    assert (got["reserved"], got["requested"], got["blocks"]) == (1024, 300, 2)


def test_a_full_segment_has_no_free_range():
    # one 1024 B block from before the history fills [0, 1024): nothing free, not a free range of 0 B
    s = snap([OOM], [seg(0, 1024, [(0, 1024, 1024, "active_allocated")])])
    assert at_first(s) == (1, 0, 0)


def test_a_0_byte_block_takes_no_byte():
    # 1000 B from before the history at 0, a 0 B block traced at 1000: free [1000, 1024), 24 B
    s = snap([e("alloc", 1000, 0, frames=[fr("a")])],
             [seg(0, 1024, [(0, 1000, 1000, "active_allocated"), (1000, 24, 0, "active_allocated")])])
    assert at_first(s) == (1, 24, 1)


def test_a_segment_without_its_size_is_no_range_and_does_not_hide_the_next():
    # the segment at 0 has no total_size (unknown: no range, not 1 B); the one at 4096 is 1024 B, free
    s = snap([OOM], [{"device": 0, "address": 0, "blocks": []}, seg(4096, 1024, [])])
    assert at_first(s) == (1, 1024, 1)


def test_an_unmapped_piece_inside_a_mapped_one_leaves_the_outer_end():
    # [0, 4096) expandable at the snapshot; [1024, 2048) unmapped after entry 0 is put back, inside it: the
    # union is [0, 4096), one range of 4096 B free (not cut at 2048)
    s = snap([OOM, e("segment_unmap", 1024, 1024)], [seg(0, 4096, [], expandable=True)])
    assert at_first(s) == (1, 4096, 1)


def test_one_reserved_byte_has_a_fragmentation():
    # 1 B reserved, nothing requested: 1 - 0 / 1 = 100 % (not unknown)
    s = snap([], [seg(0, 1, [])])
    assert state.at_snapshot(s, 0)["fragmentation"] == 1.0


def test_releases_are_bounded_by_50_by_default():
    # 51 releases of 10 B at 0, each after an alloc so that no two are one run: 51 runs, 50 listed
    trace = []
    for k in range(51):
        trace += [e("alloc", 4096 + 16 * k, 1), e("segment_free", 0, 10)]
    s = snap(trace)
    got = events.releases(s, replay(s, 0))
    assert got["release_count"] == 51 and len(got["releases"]) == 50
    assert got["releases"][-1]["entry"] == 99  # the 50th release: entry 2 * 49 + 1
