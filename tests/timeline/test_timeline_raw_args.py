"""The args store of the slice details (timeline/raw_args.py) on trace files written here by hand: a
Kineto object (float µs) and a torch_npu bare array (text µs, one event of a wrong type), beside a CSV and
a broken file that give no args. Each table row's args are the ones its (start, duration, name) has in
the file, the k-th of equal keys with the k-th; the stored chunks are read back here with numpy and zlib
(issue 46: mutation testing of timeline/)."""
import json
import zlib

import numpy as np
import pytest

from _synthetic import ev, table

from canning_tb.ingest.table import Kind
from canning_tb.timeline import raw_args
from canning_tb.timeline.raw_args import build_from_cache, build_raw_args, has_raw_args, read_raw_args
from canning_tb.util import safe_files

# the args as the files write them (compact), by hand
MM0, MM1, NEG, NODUR, LIST = ('{"External id":7,"Input Dims":[[2,3]]}', '{"External id":8}', '{"z":1}', '{"w":2}',
                              '[1,2]')
NPU_ARGS = '{"a":1,"Input Dims":[[1,2]]}'
KINETO = ('{"schemaVersion":1,"traceEvents":['
          '{"ph":"X","name":"aten::mm","ts":1.5,"dur":2.25,"args":' + MM0 + '},'
          '{"ph":"X","name":"aten::mm","ts":1.5,"dur":2.25,"args":' + MM1 + '},'
          '{"ph":"X","name":"unknown_op","ts":3.0,"dur":1.0,"args":{"u":1}},'
          '{"ph":"X","name":"k","ts":4.0,"dur":1.001},'
          '{"ph":"i","name":"inst","ts":5.0,"args":{"x":1}},'
          '{"ph":"X","name":null,"ts":6.0,"dur":1.0,"args":{"y":1}},'
          '{"ph":"X","name":"neg","ts":7.0,"dur":-1.0,"args":' + NEG + '},'
          '{"ph":"X","name":"nodur","ts":8.0,"dur":null,"args":' + NODUR + '},'
          '{"ph":"X","name":"list","ts":9.75,"dur":1.0,"args":' + LIST + '},'
          '{"ph":"X","name":"inf","ts":12.0,"dur":1e400,"args":{"v":1}},'
          '{"ph":"X","name":"epoch","ts":1700000000000.12451171875,"dur":1.0,"args":{"x":1}}]}')
NPU = ('  [{"ph":"X","name":"npu_op","ts":"20.123","dur":"2.0025","args":' + NPU_ARGS + '},'
       '{"ph":"X","name":"bad","ts":"abc","dur":"1","args":{"b":1}},'
       '{"ph":"X","name":"mixed","ts":30.75,"dur":"1","args":{"c":1}},'
       '{"ph":"X","name":5,"ts":"40","dur":"1","args":{"d":1}},'
       '{"ph":"X","name":"late","ts":"50","dur":"0.001","args":{"e":1}},'
       '{"ph":"X","name":"untimed","ts":"65","dur":"x","args":{"f":1}}]\n')
TAB = '{"traceEvents":[{"ph":"X","name":"tabbed","ts":70.0,"dur":1.0,"args":{"s":"a\tb"}}]}'  # a raw TAB
UTF8 = b'[{"ph":"X","name":"utf","ts":80.0,"dur":1.0,"args":{"e":"a\xffb"}}]'  # a byte that is no UTF-8
NAME8 = b'[{"ph":"X","name":"n\xffn","ts":81.0,"dur":1.0,"args":{"g":1}}]'  # ... in a name: the piece is read again

# (name, ts ns, dur ns) of the table, by time, and the args text each row gets (None: the files have none for
# it). µs -> ns by hand: 1.5 -> 1500, 2.25 -> 2250, 1.001 -> 1001, a negative or null duration -> 0, "20.123" ->
# 20123, "2.0025" -> 2003 (a 4th decimal of 5 rounds up; 2.0025 as a float is 2.00249999...), 9.75 and 30.75 ->
# 9750 and 30750, "0.001" -> 1; 1700000000000.12451171875
# (exact in binary) -> 1700000000000 µs and 124.51171875 ns -> ...125; "abc" and "x" are no time (that event is
# left out); 1e400 is a number msgspec refuses (an odd event: left out). "k" at 3 µs: the file's event there is named what no table row is. "inst" is an instant, not a
# complete event. A TAB inside a string is read as a space, a byte that is no UTF-8 as U+FFFD (ingest's repairs).
ROWS = [("aten::mm", 1500, 2250, MM0), ("aten::mm", 1500, 2250, MM1), ("k", 3000, 1000, None),
        ("k", 4000, 1001, "{}"), ("inst", 5000, 0, None), ("neg", 7000, 0, NEG), ("nodur", 8000, 0, NODUR),
        ("list", 9750, 1000, LIST), ("absent", 10000, 5, None), ("aten::mm", 11000, 5, None), ("inf", 12000, 0, None),
        ("npu_op", 20123, 2003, NPU_ARGS), ("mixed", 30750, 1000, '{"c":1}'), ("late", 50000, 1, '{"e":1}'),
        ("bad", 60000, 1, None), ("untimed", 65000, 0, None), ("tabbed", 70000, 1000, '{"s":"a b"}'), ("utf", 80000, 1000, '{"e":"a\ufffdb"}'),
        ("epoch", 1700000000000125, 1000, '{"x":1}')]


def _args(text):
    """What the details show of a row's args text: the object, a non-object wrapped as {"args": ...}."""
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else {"args": value}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "trace.json").write_text(KINETO)
    (tmp_path / "trace_view.json").write_text(NPU)
    (tmp_path / "tab.json").write_text(TAB)
    (tmp_path / "utf.json").write_bytes(UTF8)
    (tmp_path / "name8.json").write_bytes(NAME8)
    (tmp_path / "kernel_details.csv").write_text("Name,Start Time(us)\nk,4.0\n")
    (tmp_path / "broken.json").write_text('{"traceEvents":[{"ph":"X",')
    (tmp_path / "other.json").write_text('{"deviceProperties":[]}')
    t = table([ev(name, Kind.CPU_OP, ts, dur) for name, ts, dur, _ in ROWS])
    assert [(t.name(r), int(t.events["ts"][r])) for r in range(len(t))] == [(n, ts) for n, ts, _, _ in ROWS]
    sources = [str(tmp_path / name) for name in ("broken.json", "trace.json", "kernel_details.csv", "other.json",
                                                 "trace_view.json", "tab.json", "utf.json", "name8.json")]
    return t, sources, str(tmp_path / "w")


def test_each_row_gets_the_args_of_its_key_in_the_files(files):
    t, sources, prefix = files
    assert build_raw_args(t, sources, prefix) == 12
    assert [read_raw_args(prefix, row) for row in range(len(t))] == [_args(text) for *_, text in ROWS]
    assert has_raw_args(prefix, len(t)) and not has_raw_args(prefix, len(t) + 1)


def test_the_store_is_chunks_of_rows_each_rows_text_where_the_positions_say(files, monkeypatch):
    """Two rows a chunk: 19 rows -> 10 chunks (11 offsets). Each chunk, decompressed, is its matched rows'
    args texts end to end, as the files write them ({} for an event without args), in UTF-8."""
    monkeypatch.setattr(raw_args, "ROWS_PER_CHUNK", 2)
    t, sources, prefix = files
    build_raw_args(t, sources, prefix)
    with np.load(prefix + ".args.npz") as z:
        offsets, starts, lengths = z["offsets"].tolist(), z["starts"].tolist(), z["lengths"].tolist()
    with open(prefix + ".args.bin", "rb") as f:
        data = f.read()
    texts = [None if text is None else text.encode() for *_, text in ROWS]
    texts[17] = UTF8[UTF8.index(b'{"e"'):-2]  # kept as the file's bytes; read back as U+FFFD
    assert len(offsets) == 11 and offsets[0] == 0 and offsets[-1] == len(data)
    for chunk in range(10):
        rows = range(2 * chunk, min(2 * chunk + 2, len(ROWS)))
        got = zlib.decompress(data[offsets[chunk]:offsets[chunk + 1]])
        assert got == b"".join(texts[r] or b"" for r in rows)
        at = 0
        for r in rows:
            if texts[r] is None:
                assert lengths[r] == -1
                continue
            assert (starts[r], lengths[r]) == (at, len(texts[r]))
            at += len(texts[r])
    assert [read_raw_args(prefix, row) for row in range(len(t))] == [_args(text) for *_, text in ROWS]


def test_a_window_without_a_trace_has_no_args_for_any_row(files):
    t, sources, prefix = files
    assert build_raw_args(t, [s for s in sources if s.endswith(("broken.json", ".csv", "other.json"))], prefix) == 0
    assert [read_raw_args(prefix, row) for row in range(len(t))] == [None] * len(t)
    assert has_raw_args(prefix, len(t))


def test_a_store_built_again_is_read_again(files):
    """Built from every file, then again from the Kineto file only: the NPU rows have no args any more."""
    t, sources, prefix = files
    build_raw_args(t, sources, prefix)
    assert read_raw_args(prefix, 11) == {"a": 1, "Input Dims": [[1, 2]]}
    assert build_raw_args(t, [s for s in sources if s.endswith("trace.json")], prefix) == 7
    assert read_raw_args(prefix, 11) is None and read_raw_args(prefix, 0) == json.loads(MM0)


def test_a_row_at_zero_with_no_trace_has_no_args(tmp_path):
    t = table([ev("z", Kind.CPU_OP, 0, 0)])
    assert build_raw_args(t, [], str(tmp_path / "w")) == 0 and read_raw_args(str(tmp_path / "w"), 0) is None


def test_a_trace_of_several_pieces_keeps_each_events_args(tmp_path):
    """A bare array of 40,000 events (about 5 MB: more than one 4 MB piece of the reader): the first and the
    last event's args."""
    events = [f'{{"ph":"X","name":"e{i}","ts":{i}.0,"dur":0.5,"args":{{"i":{i},"pad":"{"p" * 90}"}}}}'
              for i in range(40_000)]
    path = tmp_path / "big.json"
    path.write_text("[" + ",".join(events) + "]")
    assert path.stat().st_size > 4 << 20
    t = table([ev("e0", Kind.CPU_OP, 0, 500), ev("e39999", Kind.CPU_OP, 39_999_000, 500)])
    assert build_raw_args(t, [str(path)], str(tmp_path / "w")) == 2
    assert [read_raw_args(str(tmp_path / "w"), row)["i"] for row in (0, 1)] == [0, 39_999]


def test_no_store_or_half_a_store_is_none(files, tmp_path):
    t, sources, prefix = files
    assert not has_raw_args(str(tmp_path / "nothing"), len(t))
    build_raw_args(t, sources, prefix)
    (tmp_path / "w.args.bin").unlink()
    assert not has_raw_args(prefix, len(t))


def test_a_cached_windows_store_is_built_from_its_own_files_inside_the_logdir(files, tmp_path, monkeypatch):
    monkeypatch.setattr(safe_files, "_roots", {})  # confine() here touches no other test's roots
    t, sources, prefix = files
    t.meta.source_files = sources
    t.save(prefix)
    assert build_from_cache(prefix, str(tmp_path)) == 12
    assert str(tmp_path) in safe_files._roots
    assert read_raw_args(prefix, 0) == json.loads(MM0) and read_raw_args(prefix, 14) is None
