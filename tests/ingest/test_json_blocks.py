"""_json.iter_file_chunks reads a big array a block at a time into one buffer, reused while nothing holds
it (fresh memory costs a page fault per page), and a new one whenever a decoded value still holds a view
of the last block (msgspec.Raw is a view, not a copy). Checked on a real file of many blocks: the elements
a decode keeps as Raw views are, at the end, byte for byte the file's (json reads them here), and a
decode that keeps nothing needs a single buffer."""
import json

import msgspec

from canning_tb.ingest import _json

RAWS = msgspec.json.Decoder(list[msgspec.Raw])


def _array_file(tmp_path, n=6000):
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "args": {"k": "v" * (i % 50)}} for i in range(n)]
    path = tmp_path / "a.json"
    path.write_text("[" + ",\n  ".join(json.dumps(e) for e in events) + "]")
    return str(path), events


def _elements(path):
    text = open(path, "rb").read()
    return 1, len(text) - 1  # inside the brackets


def test_kept_views_of_earlier_blocks_stay_as_the_file_says(tmp_path, monkeypatch):
    path, events = _array_file(tmp_path)
    monkeypatch.setattr(_json, "_BLOCK", 20_000)  # about 40 blocks
    kept = []
    for piece in _json.iter_file_chunks(path, *_elements(path), RAWS.decode, lambda: None):
        kept.extend(piece)  # Raw views into the block buffers, held to the end
    assert [json.loads(bytes(r)) for r in kept] == events


def test_a_decode_that_keeps_nothing_reads_every_block_into_one_buffer(tmp_path, monkeypatch):
    path, events = _array_file(tmp_path)
    monkeypatch.setattr(_json, "_BLOCK", 20_000)
    made = []
    monkeypatch.setattr(_json, "bytearray", lambda n: made.append(n) or bytearray(n), raising=False)
    names = []
    for got in _json.iter_file_chunks(path, *_elements(path), lambda piece: [e["name"] for e in json.loads(bytes(piece))],
                                      lambda: None):
        names.extend(got)
    assert names == [e["name"] for e in events]
    assert len(made) == 1, f"{len(made)} buffers for {len(names)} elements"


def test_block_buffer_by_hand():
    buf = bytearray(100)
    assert _json._block_buffer(buf, 50) is buf
    assert _json._block_buffer(buf, 101) is not buf  # too small
    view = memoryview(buf)
    assert _json._block_buffer(buf, 50) is not buf  # held
    view.release()
    assert _json._block_buffer(buf, 50) is buf
    assert len(_json._block_buffer(None, 7)) == 7
