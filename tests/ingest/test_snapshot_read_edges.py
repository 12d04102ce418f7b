"""The snapshot reader's edges on pickles written here (issue 46: the survivors of a mutation run over
ingest/snapshot): what each odd value is read as, the count of values read as unknown, the sniffer's protocol and
head limits, the refusals' words. Expected values are the dicts written in each test, read by hand."""
import importlib
import os
import pickle

import pytest

from canning_tb.ingest import InputError
from canning_tb.ingest.snapshot import model, read, sniff, unpickle
from canning_tb.ingest.snapshot.read import snapshot_of
from canning_tb.ingest.snapshot.window import snapshot_only_table

I64_MAX = (1 << 63) - 1


def frame(name="f", filename="/job/train.py", line=1):
    return {"name": name, "filename": filename, "line": line}


def test_the_package_gives_its_names_lazily():
    pkg = importlib.import_module("canning_tb.ingest.snapshot")
    assert pkg.read_snapshot is read.read_snapshot
    assert pkg.Snapshot is model.Snapshot and pkg.ACTIONS is model.ACTIONS and pkg.STATES is model.STATES
    with pytest.raises(AttributeError, match=r"^module 'canning_tb.ingest.snapshot' has no attribute 'nothing'$"):
        pkg.nothing


def test_snapshot_names():
    assert [sniff.has_snapshot_name(n) for n in ("a.pkl", "B.PICKLE", "a.pkl.txt", "notes.txt", ".hidden.pkl")] == [
        True, True, False, False, False]


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_the_sniffer_takes_protocols_2_to_5_only(tmp_path):
    d = {"segments": [], "device_traces": []}
    for protocol in (2, 3, 4, 5):
        assert sniff.looks_like_snapshot(write(tmp_path, f"p{protocol}.pkl", pickle.dumps(d, protocol=protocol)))
    data = bytearray(pickle.dumps(d, protocol=5))
    data[1] = 6  # a protocol not made yet
    assert not sniff.looks_like_snapshot(write(tmp_path, "p6.pkl", bytes(data)))
    assert not sniff.looks_like_snapshot(write(tmp_path, "p1.pkl", pickle.dumps(d, protocol=1)))  # no PROTO opcode


def test_the_sniffer_reads_the_first_64_kib_only(tmp_path):
    key = b"\x8c\x08segments"  # SHORT_BINUNICODE of "segments", 10 bytes
    inside = pickle.dumps({"pad": "x" * 65500, "segments": []}, protocol=4)
    assert inside.find(key) + len(key) == 65536  # its last byte is the head's last
    assert sniff.looks_like_snapshot(write(tmp_path, "inside.pkl", inside))
    past = pickle.dumps({"pad": "x" * 65501, "segments": []}, protocol=4)
    assert past.find(key) + len(key) == 65537  # one byte past the head: not seen (the reader checks in full)
    assert not sniff.looks_like_snapshot(write(tmp_path, "past.pkl", past))


def test_frames_with_odd_values_are_read_as_unknown_and_counted():
    trace = [{"action": "alloc", "addr": 0, "size": 8, "frames": [
        frame(None, 5, -5), frame("g", "/x/torch_free.py", 0), frame("h", "/x/h.py", I64_MAX),
        frame("i", "/x/i.py", 1 << 63), frame("j", "/x/j.py", "12"), frame("k", "/x/k.py", True)]}]
    s = snapshot_of({"device_traces": [trace]}, "odd.pkl")
    assert s.stack(int(s.tr_stack[0])) == [("?", "?", -1), ("g", "/x/torch_free.py", 0), ("h", "/x/h.py", I64_MAX),
                                            ("i", "/x/i.py", -1), ("j", "/x/j.py", -1), ("k", "/x/k.py", -1)]
    assert s.frame_line.tolist() == [-1, 0, I64_MAX, -1, -1, -1]
    assert [s.frame_text(i) for i in (0, 1)] == ["? (?:?)", "g (/x/torch_free.py:0)"]
    assert s.flavour == "pytorch" and s.warnings == []  # odd frame fields are unknown, not wrong types


def test_a_frame_that_is_not_a_dict_is_an_unknown_frame_of_its_own():
    trace = [{"action": "alloc", "addr": 0, "size": 8, "frames": [frame("a"), 5, frame("b")]},
             {"action": "alloc", "addr": 64, "size": 8, "frames": [frame("c", "/v/site-packages/torch_npu/x.py")]}]
    s = snapshot_of({"device_traces": [trace]}, "odd.pkl")
    assert s.stack(int(s.tr_stack[0])) == [("a", "/job/train.py", 1), ("?", "?", -1), ("b", "/job/train.py", 1)]
    assert s.warnings == ["1 values of the wrong type were read as unknown"]
    assert s.flavour == "torch_npu"  # a frame in torch_npu's package


def test_integers_at_the_int64_edges_bools_and_the_count_of_wrong_types():
    trace = [{"action": "alloc", "addr": I64_MAX, "size": -I64_MAX, "stream": True, "device_free": False,
              "time_us": 2.5, "frames": []},
             {"action": "free_completed", "addr": 1 << 63, "size": -(1 << 63), "stream": "0", "frames": None}]
    s = snapshot_of({"device_traces": [trace]}, "ints.pkl")
    assert s.tr_addr.tolist() == [I64_MAX, -1] and s.tr_size.tolist() == [-I64_MAX, -1]
    assert s.tr_stream.tolist() == [1, -1] and s.tr_device_free.tolist() == [0, -1]
    assert s.tr_time_us.tolist() == [-1, -1] and s.tr_stack.tolist() == [-1, -1]
    # wrong types: 2.5, 2**63, -2**63, "0" (missing keys and None are unknown without a warning)
    assert s.warnings == ["4 values of the wrong type were read as unknown"]


def test_segments_fields_by_hand():
    segs = [{"device": 1, "address": 4096, "total_size": 2048, "allocated_size": 512, "active_size": 512,
             "requested_size": 500, "stream": 7, "segment_type": "small", "is_expandable": 1,
             "segment_pool_id": (3, 4), "frames": [frame("s")],
             "blocks": [{"address": 4096, "size": 512, "requested_size": 500, "state": "active_awaiting_free",
                         "history": [{"frames": [frame("old")]}, {"frames": [frame("mid")]},
                                     {"frames": [frame("new")]}]},
                        {"address": 4608, "size": 1536, "state": "nonsense", "frames": [frame("b")]}]},
            {"device": 0, "total_size": 1024, "segment_type": "LARGE", "segment_pool_id": [1 << 63, -2, 9],
             "blocks": [{"address": 0, "size": 1024, "state": 7, "history": []}]},
            {"device": 0, "total_size": 512, "segment_type": "large", "segment_pool_id": [5], "blocks": None},
            "not a segment"]
    s = snapshot_of({"segments": segs}, "segs.pkl")
    assert s.seg_device.tolist() == [1, 0, 0] and s.seg_address.tolist() == [4096, -1, -1]
    assert s.seg_total.tolist() == [2048, 1024, 512] and s.seg_stream.tolist() == [7, -1, -1]
    assert s.seg_requested.tolist() == [500, -1, -1] and s.seg_active.tolist() == [512, -1, -1]
    assert s.seg_expandable.tolist() == [False, False, False]  # only True itself is expandable
    assert s.seg_large.tolist() == [0, -1, 1]
    assert s.seg_pool.tolist() == [[3, 4], [-1, -2], [-1, -1]]
    assert s.seg_blocks.tolist() == [0, 2, 3, 3] and s.blk_segment.tolist() == [0, 0, 1]
    assert [model.STATES[c] for c in s.blk_state] == ["active_awaiting_free", "other", "other"]
    assert s.blk_requested.tolist() == [500, -1, -1] and s.blk_address.tolist() == [4096, 4608, 0]
    # a block's stack: its frames, else the last history entry's (PyTorch 2.0)
    assert [s.stack(int(i)) for i in s.blk_stack] == [[("new", "/job/train.py", 1)], [("b", "/job/train.py", 1)], []]
    assert s.stack(int(s.seg_stack[0])) == [("s", "/job/train.py", 1)] and s.seg_stack.tolist()[1:] == [-1, -1]
    assert s.devices == [0, 1] and len(s.tr_action) == 0 and s.stack_offsets.tolist()[0] == 0
    assert s.warnings == ["1 values of the wrong type were read as unknown"]  # the string in the list


def test_a_bare_list_of_segments_and_its_refusals(tmp_path):
    seg = {"device": 0, "total_size": 64, "blocks": []}
    assert snapshot_of([seg, dict(seg)], "list.pkl").seg_total.tolist() == [64, 64]
    for bad, words in (([], "a pickled list without 'segments'"), ([{"size": 1}], "a pickled list without"),
                       ([seg, 5], "a pickled list without"), ({"other": 1}, "a pickled dict without"),
                       ({"device_traces": {"0": []}}, "'device_traces' is a dict, not a list"),
                       ({"segments": [{"blocks": 3}]}, "a segment's 'blocks' is a int, not a list")):
        with pytest.raises(InputError) as err:
            snapshot_of(bad, "bad.pkl")
        assert str(err.value).startswith("bad.pkl: not a memory snapshot: ") and words in str(err.value)
    # only the first 16 are looked at: a 17th that is no segment is a value of the wrong type, not a refusal
    many = snapshot_of([dict(seg) for _ in range(16)] + [5], "many.pkl")
    assert len(many.seg_total) == 16 and many.warnings == ["1 values of the wrong type were read as unknown"]


def test_traces_of_several_devices_with_odd_entries():
    traces = [[{"action": "alloc", "addr": 0, "size": 4, "frames": []}, 5,
               {"action": "snapshot_taken", "addr": 0, "size": 0}, {"action": 3, "size": 0}],
              "not a list",
              [{"action": "oom", "size": 9, "device_free": 2}, {"action": "segment_unmap", "addr": 0, "size": 2}]]
    s = snapshot_of({"segments": None, "device_traces": traces}, "tr.pkl")
    assert s.tr_device.tolist() == [0, 0, 0, 2, 2]
    assert [model.ACTIONS[c] for c in s.tr_action] == ["alloc", "other", "other", "oom", "segment_unmap"]
    assert s.tr_device_free.tolist() == [-1, -1, -1, 2, -1] and s.devices == [0, 2]
    assert s.tr_device.dtype.name == "int32" and s.tr_action.dtype.name == "int8" and s.tr_stack.dtype.name == "int32"
    assert s.warnings == ["2 values of the wrong type were read as unknown",
                          "trace actions not known here, kept as 'other': 3, snapshot_taken"]
    assert traces[0] == [None] * 4  # the entries are given back as they are read


def test_the_other_actions_are_listed_sorted_eight_at_most_each_cut_at_40():
    names = [f"act{k:02d}" for k in range(10, 0, -1)] + ["z" * 50]
    s = snapshot_of({"device_traces": [[{"action": a} for a in names]]}, "acts.pkl")
    assert s.warnings == ["trace actions not known here, kept as 'other': "
                          + ", ".join(f"act{k:02d}" for k in range(1, 9))]
    s = snapshot_of({"device_traces": [[{"action": "z" * 50}]]}, "z.pkl")
    assert s.warnings == ["trace actions not known here, kept as 'other': " + "z" * 40]


def test_many_entries_are_read_in_chunks_to_the_same_columns(monkeypatch):
    monkeypatch.setattr(read, "_CHUNK", 3)
    trace = [{"action": "alloc" if k % 2 else "free_completed", "addr": 16 * k, "size": k,
              "frames": [frame(line=k % 3)]} for k in range(8)]
    s = snapshot_of({"device_traces": [trace, [{"action": "alloc", "size": 99}]]}, "chunks.pkl")
    assert s.tr_size.tolist() == list(range(8)) + [99] and s.tr_addr.tolist() == [16 * k for k in range(8)] + [-1]
    assert s.tr_device.tolist() == [0] * 8 + [1] and s.tr_stack.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, -1]
    assert s.stack_offsets.tolist() == [0, 1, 2, 3] and s.stack_frames.tolist() == [0, 1, 2]


def test_refusals_name_the_global_cut_at_80_characters(tmp_path):
    module, name = "m" * 100, "n" * 90
    path = write(tmp_path, "g.pkl", b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n.")
    with pytest.raises(InputError) as err:
        read.read_snapshot(path)
    assert str(err.value) == (f"{path}: not a memory snapshot: the pickle names the global {'m' * 80}.{'n' * 80} "
                              "(code, not data): refused, nothing was run")


def test_a_persistent_id_is_refused_in_words(tmp_path):
    path = write(tmp_path, "pid.pkl", b"\x80\x02X\x03\x00\x00\x00pidQ.")  # BINPERSID of the string "pid"
    with pytest.raises(InputError) as err:
        read.read_snapshot(path)
    assert str(err.value) == (f"{path}: not a memory snapshot: the pickle holds a persistent id (not plain data): "
                              "refused")


def test_a_window_of_a_snapshot_alone(tmp_path):
    path = write(tmp_path, "alone.pkl", pickle.dumps({"segments": []}))
    t = snapshot_only_table(path)
    assert t.meta.format == "snapshot" and t.meta.source_files == ["alone.pkl"] and len(t) == 0
    path = write(tmp_path, "list.pkl", pickle.dumps([1, 2]))
    with pytest.raises(InputError) as err:
        snapshot_only_table(path)
    assert str(err.value).startswith(f"{path}: not a memory snapshot")


def test_each_value_of_the_wrong_type_is_counted_once():
    # a size "x", a frame 5, frames "str" (not a list), an entry 7: four, in four places of the reader
    trace = [{"action": "alloc", "size": "x", "frames": [5]}, {"action": "alloc", "frames": "str"}, 7,
             {"action": ["alloc"]}]  # an action that is no string (unhashable, too) is "other"
    s = snapshot_of({"device_traces": [trace]}, "bad.pkl")
    assert s.warnings == ["4 values of the wrong type were read as unknown",
                          "trace actions not known here, kept as 'other': ['alloc']"]
    assert [model.ACTIONS[c] for c in s.tr_action] == ["alloc", "alloc", "other"]


def test_columns_keep_their_types_when_a_device_has_no_entry_left():
    # device 0's one entry is no dict: its chunk is empty, and the columns stay integers
    s = snapshot_of({"device_traces": [[5], [{"action": "alloc", "addr": 1, "size": 2, "stream": 3, "time_us": 4,
                                              "device_free": 5}]]}, "types.pkl")
    cols = (s.tr_addr, s.tr_size, s.tr_stream, s.tr_time_us, s.tr_device_free)
    assert [c.dtype.name for c in cols] == ["int64"] * 5 and [c.tolist() for c in cols] == [[1], [2], [3], [4], [5]]


def test_the_files_refusals_in_words(tmp_path, monkeypatch):
    missing = str(tmp_path / "gone.pkl")
    with pytest.raises(InputError) as err:
        read.read_snapshot(missing)
    assert str(err.value) == f"{missing}: cannot open: {os.strerror(2)}"
    empty = write(tmp_path, "empty.pkl", b"")
    with pytest.raises(InputError) as err:
        read.read_snapshot(empty)
    assert str(err.value) == f"{empty}: is empty: not a memory snapshot"
    text = write(tmp_path, "text.pkl", b'{"segments": []}')
    with pytest.raises(InputError) as err:
        read.read_snapshot(text)
    assert str(err.value) == f"{text}: not a memory snapshot: starts with bytes 7b 22 73 65 67 6d 65 6e, not a pickle"


def test_a_file_of_exactly_the_cap_is_read(tmp_path, monkeypatch):
    data = pickle.dumps({"segments": [], "device_traces": []})
    path = write(tmp_path, "cap.pkl", data)
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", str(len(data)))
    assert read.read_snapshot(path).devices == []
    monkeypatch.setenv("CANNING_MAX_TRACE_BYTES", str(len(data) - 1))
    with pytest.raises(InputError, match="cap on one file"):
        read.read_snapshot(path)


@pytest.mark.parametrize("error,words", [
    (RecursionError(), "not a memory snapshot: the pickle is nested too deep"),
    (MemoryError(), "not a memory snapshot: the pickle needs more memory than there is"),
    (ValueError(""), "damaged or not a pickle: ValueError"),  # no message: the error's name
    (EOFError("e" * 300), "damaged or not a pickle: " + "e" * 200),  # cut at 200 characters
])
def test_what_goes_wrong_while_loading_is_said_in_words(monkeypatch, error, words):
    # Python's unpickler loads nesting without recursing and asks for memory as it goes: these are raised by hand
    def fail(self):
        raise error
    monkeypatch.setattr(unpickle.PlainUnpickler, "load", fail)
    with pytest.raises(InputError) as err:
        unpickle.loads_plain(b"\x80\x02N.", "p.pkl")
    assert str(err.value) == f"p.pkl: {words}"


DTYPES = {"seg_device": "int64", "seg_address": "int64", "seg_total": "int64", "seg_allocated": "int64",
          "seg_active": "int64", "seg_requested": "int64", "seg_stream": "int64", "seg_expandable": "bool",
          "seg_large": "int8", "seg_pool": "int64", "seg_stack": "int32", "seg_blocks": "int64",
          "blk_segment": "int32", "blk_address": "int64", "blk_size": "int64", "blk_requested": "int64",
          "blk_state": "int8", "blk_stack": "int32", "tr_device": "int32", "tr_action": "int8", "tr_addr": "int64",
          "tr_size": "int64", "tr_stream": "int64", "tr_time_us": "int64", "tr_device_free": "int64",
          "tr_stack": "int32", "frame_line": "int64", "stack_offsets": "int64", "stack_frames": "int32"}


@pytest.mark.parametrize("obj", [
    {"segments": [], "device_traces": []},  # empty: numpy would make float64 of an empty list
    {"segments": [{"device": 0, "total_size": 8, "is_expandable": True, "segment_type": "small",
                   "segment_pool_id": (0, 1), "frames": [frame()],
                   "blocks": [{"address": 0, "size": 8, "state": "inactive", "frames": [frame()]}]}],
     "device_traces": [[{"action": "alloc", "addr": 0, "size": 8, "frames": [frame()]}]]},
])
def test_every_column_has_its_type(obj):
    s = snapshot_of(obj, "types.pkl")
    assert {k: getattr(s, k).dtype.name for k in DTYPES} == DTYPES
    assert s.seg_pool.shape == (len(s.seg_total), 2) and s.path == "types.pkl"


def test_odd_segment_lists_block_states_and_pool_ids():
    with pytest.raises(InputError) as err:
        snapshot_of({"segments": 7}, "seven.pkl")
    assert str(err.value) == "seven.pkl: not a memory snapshot: 'segments' is a int, not a list"
    s = snapshot_of({"segments": [{"total_size": 8, "segment_pool_id": [I64_MAX, -I64_MAX],
                                   "blocks": [{"size": 8, "state": ["inactive"]}]}]}, "odd.pkl")
    assert s.seg_pool.tolist() == [[I64_MAX, -I64_MAX]] and model.STATES[s.blk_state[0]] == "other"
