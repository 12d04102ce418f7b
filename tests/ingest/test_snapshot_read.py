"""The snapshot reader against an independent plain reading of the same real pickles (Ascend NPU snapshots,
tests/fixtures/memory_snapshot, SOURCES.md), and hostile pickles refused without running anything.

The independent reading: `pickle.load` of the trusted fixture (ours, checked in), walked as plain dicts here."""
import collections
import os
import pickle
import pickletools
import sys

import numpy as np
import pytest

from canning_tb.ingest import InputError
from canning_tb.ingest.snapshot import read_snapshot
from canning_tb.ingest.snapshot.model import ACTIONS, STATES
from canning_tb.ingest.snapshot.sniff import looks_like_snapshot
from conftest import fixture_path

NAMES = ["snapshot_1768383987920985470.pkl", "snapshot_with_empty_cache.pkl",
         "snapshot_with_empty_cache_expandable.pkl"]


def plain(name):
    with open(fixture_path("memory_snapshot", name), "rb") as f:
        return pickle.load(f)  # the trusted fixture, as the independent reading


@pytest.mark.parametrize("name", NAMES)
def test_columns_equal_a_plain_walk(name):
    d = plain(name)
    s = read_snapshot(str(fixture_path("memory_snapshot", name)))
    assert s.warnings == []
    assert s.flavour == "torch_npu"
    segs = d["segments"]
    assert len(s.seg_total) == len(segs)
    assert s.seg_total.tolist() == [g["total_size"] for g in segs]
    assert s.seg_allocated.tolist() == [g["allocated_size"] for g in segs]
    assert s.seg_expandable.tolist() == [g["is_expandable"] for g in segs]
    blocks = [b for g in segs for b in g["blocks"]]
    assert s.blk_size.tolist() == [b["size"] for b in blocks]
    assert [STATES[c] for c in s.blk_state] == [b["state"] for b in blocks]
    assert s.seg_blocks.tolist() == [0] + list(np.cumsum([len(g["blocks"]) for g in segs]))
    entries = [(dev, e) for dev, tr in enumerate(d["device_traces"]) for e in tr]
    assert len(s.tr_action) == len(entries)
    assert [ACTIONS[c] for c in s.tr_action] == [e["action"] for _, e in entries]
    assert s.tr_size.tolist() == [e["size"] for _, e in entries]
    assert s.tr_addr.tolist() == [e.get("addr", -1) for _, e in entries]
    assert s.tr_device.tolist() == [dev for dev, _ in entries]
    assert (s.tr_time_us == -1).all() and not s.has_times  # these snapshots have no times: unknown, not 0
    # every entry's stack, frame by frame
    for i in range(0, len(entries), 97):
        want = [(f["name"], f["filename"], f["line"]) for f in entries[i][1]["frames"]]
        assert s.stack(int(s.tr_stack[i])) == want
    # frames interned: one row per distinct (name, file, line)
    distinct = {(f["name"], f["filename"], f["line"]) for _, e in entries for f in e["frames"]}
    distinct |= {(f["name"], f["filename"], f["line"]) for b in blocks for f in b["frames"]}
    assert len(s.frame_name) == len(distinct)


def test_expandable_segments_are_marked():
    s = read_snapshot(str(fixture_path("memory_snapshot", NAMES[2])))
    assert s.seg_expandable.all() and len(s.seg_total) == 3
    counts = collections.Counter(ACTIONS[c] for c in s.tr_action)
    assert counts["segment_map"] == 75 and counts["segment_unmap"] == 10  # counted by hand with pickletools


@pytest.mark.parametrize("name", NAMES)
def test_fixtures_are_recognised_by_content(name, tmp_path):
    src = fixture_path("memory_snapshot", name)
    odd = tmp_path / "whatever.pickle"
    odd.write_bytes(src.read_bytes())
    assert looks_like_snapshot(str(odd))
    (tmp_path / "notes.pkl").write_bytes(pickle.dumps({"loss": [1.0, 2.0]}))
    assert not looks_like_snapshot(str(tmp_path / "notes.pkl"))


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Persistent(pickle.Pickler):
    def persistent_id(self, obj):
        return "pid" if obj == "hidden" else None


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_pickle_that_names_a_global_runs_nothing(tmp_path, protocol):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(pickle.dumps({"segments": [], "device_traces": [[{"action": _RunsCode(marker)}]]},
                                  protocol=protocol))
    ops = {op.name for op, _, _ in pickletools.genops(evil.read_bytes())}
    assert ops & {"GLOBAL", "STACK_GLOBAL"} and "REDUCE" in ops  # the file really tries to call os.system
    with pytest.raises(InputError) as err:
        read_snapshot(str(evil))
    assert str(evil) in str(err.value) and "system" in str(err.value) and "refused" in str(err.value)
    assert not marker.exists()


def test_other_ways_of_naming_code_are_refused(tmp_path):
    marker = tmp_path / "ran"
    # INST (protocol 0 opcode) inside a protocol-2 header: find_class is asked, and refuses
    inst = tmp_path / "inst.pickle"
    inst.write_bytes(b"\x80\x02(S'touch " + str(marker).encode() + b"'\nios\nsystem\n.")
    buf = tmp_path / "persistent.pkl"
    import io
    out = io.BytesIO()
    _Persistent(out, protocol=4).dump({"segments": ["hidden"]})
    buf.write_bytes(out.getvalue())
    for path in (inst, buf):
        with pytest.raises(InputError) as err:
            read_snapshot(str(path))
        assert str(path) in str(err.value)
    assert not marker.exists()


@pytest.mark.parametrize("content,words", [
    (b"", "empty"),
    (b"{\"segments\": []}", "not a pickle"),
    (pickle.dumps({"segments": []})[:-5], "damaged"),
    (pickle.dumps([1, 2, 3]), "without 'segments'"),
    (pickle.dumps({"segments": 7}), "not a list"),
])
def test_bad_files_get_a_clear_error(tmp_path, content, words):
    p = tmp_path / "bad.pkl"
    p.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_snapshot(str(p))
    assert str(p) in str(err.value) and words in str(err.value)


def test_wrong_types_are_unknown_not_a_crash(tmp_path):
    p = tmp_path / "odd.pkl"
    p.write_bytes(pickle.dumps({"segments": [{"total_size": "big", "blocks": [{"size": 1 << 70, "state": 3}]}],
                                "device_traces": [[{"action": "alloc", "addr": 1, "size": [], "frames": "x"}, 5]]}))
    s = read_snapshot(str(p))
    assert s.seg_total.tolist() == [-1] and s.blk_size.tolist() == [-1] and STATES[s.blk_state[0]] == "other"
    assert s.tr_size.tolist() == [-1] and s.tr_stack.tolist() == [-1]
    assert s.warnings and "wrong type" in s.warnings[0]


def test_the_size_cap_applies(tmp_path, monkeypatch):
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", "1000")
    with pytest.raises(InputError) as err:
        read_snapshot(str(fixture_path("memory_snapshot", NAMES[0])))
    assert "cap" in str(err.value) and NAMES[0] in str(err.value)


def test_several_devices(tmp_path):
    d = plain(NAMES[1])
    # the job's device 0 trace, also recorded as device 3's (a second device with the same history)
    d["device_traces"][3] = d["device_traces"][0][:100]
    p = tmp_path / "two.pickle"
    p.write_bytes(pickle.dumps(d))
    s = read_snapshot(str(p))
    assert s.devices == [0, 3]
    assert int((s.tr_device == 3).sum()) == 100
    assert s.tr_size[s.tr_device == 3].tolist() == [e["size"] for e in d["device_traces"][0][:100]]
