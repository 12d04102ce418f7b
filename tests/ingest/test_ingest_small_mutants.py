"""The small ingest helpers by hand (issue 46, mutation testing): devices.py (a device index or memory that
cannot be one read as unknown, with one warning), file_head.py (the first bytes, gunzipped; canning's own
report told by its schema tag), step_marks.py (the loop's wall-clock step marks moved onto the trace's
clock) and op_args.py (the `args` column's JSON text). Every expected value is worked out in the test."""
import gzip

from canning_tb.ingest import devices, op_args, step_marks
from canning_tb.ingest.file_head import file_head, is_canning_report
from canning_tb.ingest.table import NONE, EventTable


# -- devices.py -------------------------------------------------------------------------------------

def test_indexes_and_sizes_at_their_edges():
    """Index: -1 to 2**31 - 1 fit; memory: NONE (-1) to 2**63 - 1 fit; a bool or a text is not checked
    (not an int of ours); each misfit is one clause of one warning, two shown and the rest counted."""
    problems = []
    devs = [{"index": -1, "memory": -1, "name": "a"}, {"index": 2 ** 31 - 1, "memory": 2 ** 63 - 1},
            {"index": True, "memory": "big"}, {"name": "no index"}]
    assert devices.fit_devices(devs, "f.json", problems) == devs
    assert problems == []
    bad = [{"index": -2, "memory": -2, "name": "x"}, {"index": 2 ** 31, "memory": 2 ** 63}]
    got = devices.fit_devices(bad, "f.json", problems)
    assert got == [{"index": -1, "memory": NONE, "name": "x"}, {"index": -1, "memory": NONE}]
    assert bad[0]["index"] == -2  # the caller's dicts are copied, not changed
    assert [(p.file, p.message, p.severity) for p in problems] == [
        ("f.json", "device index -2 is no index (0 to 2147483647); device memory -2 is no size in bytes "
                   "(and 2 more): read as unknown", "warning")]


def test_one_or_two_misfits_say_no_more():
    problems = []
    devices.fit_devices([{"index": 2 ** 31}], "g", problems)
    devices.fit_devices([{"memory": 2 ** 64}, {"index": -5}], "g", problems)
    assert [p.message for p in problems] == [
        "device index 2147483648 is no index (0 to 2147483647): read as unknown",
        "device memory 18446744073709551616 is no size in bytes; device index -5 is no index (0 to 2147483647): "
        "read as unknown"]


def test_three_misfits_count_the_one_not_shown():
    problems = []
    devices.fit_devices([{"index": -2, "memory": -3}, {"index": -4}], "h", problems)
    assert [p.message for p in problems] == [
        "device index -2 is no index (0 to 2147483647); device memory -3 is no size in bytes (and 1 more): "
        "read as unknown"]


def test_shown_int_by_size():
    """24 characters are shown whole; 25 as the first 10 and the count; past 128 bits (39 digits and more) by
    their size only; a negative number counts its sign."""
    assert devices.shown_int(10 ** 23) == "1" + "0" * 23  # 24 digits
    assert devices.shown_int(-(10 ** 22)) == "-1" + "0" * 22  # 24 characters
    assert devices.shown_int(10 ** 24) == "1000000000...(25 digits)"
    assert devices.shown_int(2 ** 128 - 1) == "3402823669...(39 digits)"  # 128 bits: still written
    assert devices.shown_int(2 ** 128) == "of more than 38 digits"
    assert devices.shown_int(-(2 ** 128)) == "of more than 38 digits"


# -- file_head.py -----------------------------------------------------------------------------------

def test_file_head_plain_gzip_and_unreadable(tmp_path):
    plain = tmp_path / "a.json"
    plain.write_bytes(b'{"traceEvents": []}')
    assert file_head(str(plain), 5) == b'{"tra'
    assert file_head(str(plain), 100) == b'{"traceEvents": []}'
    gz = tmp_path / "a.json.gz"
    gz.write_bytes(gzip.compress(b"[1, 2, 3]" * 100))
    assert file_head(str(gz), 4096) == b"[1, 2, 3]" * 100  # the whole content, decompressed
    assert file_head(str(gz), 4) == b""  # 4 compressed bytes are not yet past gzip's 10-byte header
    bad = tmp_path / "b.json.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 30)  # a gzip magic and no valid header
    assert file_head(str(bad), 100) == b""
    assert file_head(str(tmp_path / "none.json"), 10) == b""
    assert file_head(str(tmp_path), 10) == b""  # a folder is no regular file


def test_a_gzip_head_is_limited_to_the_limit(tmp_path):
    """The decompressed head is cut at `limit` bytes of content (decompressobj's max_length)."""
    gz = tmp_path / "c.json.gz"
    gz.write_bytes(gzip.compress(b"0123456789" * 1000))
    assert file_head(str(gz), 4096) == (b"0123456789" * 1000)[:4096]


def test_canning_report_by_its_tag():
    tag = b'{"schema": "canning-prof/1", "x": 1}'
    assert is_canning_report(tag) and is_canning_report(b" \n\t" + tag)
    assert not is_canning_report(b'[{"schema": "canning-prof/1"}]')  # not an object
    assert not is_canning_report(b'{"schema": "canning-prof"}')  # no "/": another tag
    # the tag must start within the first 256 bytes (its last character may be the 256th)
    pad = b'{"a": "' + b"x" * 200 + b'", '
    tail = b'"schema": "canning-prof/'
    head = pad + b" " * (256 - len(pad) - len(tail)) + tail
    assert len(head) == 256 and is_canning_report(head + b'1"}')
    assert not is_canning_report(b" " + head + b'1"}')


# -- step_marks.py ----------------------------------------------------------------------------------

def _table(base):
    t = EventTable()
    if base is not None:
        t.meta.environment[step_marks.BASE_KEY] = base
    return t


def test_trace_base_is_a_positive_int():
    assert step_marks.trace_base_ns(_table("1700000000000000000")) == 1_700_000_000_000_000_000
    assert step_marks.trace_base_ns(_table("1")) == 1
    for base in ("0", "-5", "", "1.5", "x", None):
        assert step_marks.trace_base_ns(_table(base)) is None, base


def test_marks_move_onto_the_trace_clock_in_step_order():
    """base 1,000: wall (3, 5000, 6000) -> (3, 4000, 5000); a mark that ends before it begins is dropped; one
    that ends where it begins is kept; the marks are sorted by step; text numbers are read as ints."""
    t = _table("1000")
    assert step_marks.attach(t, [[3, 5000, 6000], ["1", "2000", "2500"], [2, 4000, 3999], [4, 7000, 7000]])
    assert t.side["step_marks"] == [{"step": 1, "start_ns": 1000, "end_ns": 1500},
                                    {"step": 3, "start_ns": 4000, "end_ns": 5000},
                                    {"step": 4, "start_ns": 6000, "end_ns": 6000}]


def test_no_marks_without_a_base_or_marks():
    for base, marks in ((None, [[1, 5, 6]]), ("1000", []), ("1000", None), ("1000", [[1, 9, 8]])):
        t = _table(base)
        assert step_marks.attach(t, marks) is False and "step_marks" not in t.side


# -- op_args.py -------------------------------------------------------------------------------------

def test_encode_keeps_the_given_parts_in_key_order():
    assert op_args.encode() is None
    assert op_args.encode(types=None, concrete="", formats=[], out_shapes=()) is None
    assert op_args.encode(out_types=["bf16"], types=["float", ""], op_type="MatMulV2") == \
        '{"types":["float",""],"op_type":"MatMulV2","out_types":["bf16"]}'
    assert op_args.encode(concrete=["é"], formats=["ND"], out_shapes=[[2]], out_formats=["NZ"]) == \
        '{"concrete":["é"],"formats":["ND"],"out_shapes":[[2]],"out_formats":["NZ"]}'
    assert op_args.encode(types=0) == '{"types":0}'  # 0 is a value, not an empty one


def test_json_object_and_decode():
    for text in (None, "", "not json", "[1]", "3"):
        assert op_args.json_object(text) == {} and op_args.decode(text) == {}
    assert op_args.json_object('{"a": [1]}') == {"a": [1]} == op_args.decode('{"a": [1]}')


def test_split_list():
    assert op_args.split_list(None) is None
    assert op_args.split_list("  ") is None and op_args.split_list(" N/A ") is None
    assert op_args.split_list('FLOAT; "INT32" ;\r\nScalar') == ["FLOAT", "INT32", "Scalar"]
    assert op_args.split_list(' " x " ') == ["x"]  # stripped, unquoted, stripped again
    assert op_args.split_list(5) == ["5"]
    assert op_args.split_list("INDEX;X") == ["INDEX", "X"]  # only quotes and spaces are stripped


def test_json_list():
    assert op_args.json_list(b"") is None and op_args.json_list(b"null") is None
    assert op_args.json_list(b'{"a": 1}') is None and op_args.json_list(b"not") is None
    assert op_args.json_list(b"\xff[") is None  # not UTF-8
    assert op_args.json_list(b'["float", "Scalar"]') == ["float", "Scalar"]
