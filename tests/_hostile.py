"""Builders of the bad-input corpus (tests/plugin/test_hostile_inputs.py): each case is one run folder made
from a real fixture changed in one hostile or unlucky way.

To add a case, append `Case(name, build, status, words)` to CASES: `build(run_dir)` writes the run's
files (run_dir does not exist yet); `status` is what /overview answers for the run's window(s)
(200: read, maybe with problems; 422: an input error naming the file; None: no window is listed);
`words` is a regular expression the 422's error must match (the file and the problem), or for a 200 one
of the answer's problems ("<file>: <message>").
"""
from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conftest import fixture_path

KINETO = ("param", "dlrm_8ranks", "worker0_step_12.1694128201545.pt.trace.json.gz")
TRACE = "worker0.1694128201545.pt.trace.json"
OUT = "ASCEND_PROFILER_OUTPUT"
DEEP = 100_000  # nesting levels: past any recursion limit


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], None]
    status: int | None
    words: str = ""


# -- Kineto ----------------------------------------------------------------------------------------

def kineto_text() -> bytes:
    return gzip.decompress(fixture_path(*KINETO).read_bytes())


def kineto_doc() -> dict:
    return json.loads(kineto_text())


def _write(run: Path, data: bytes, name: str = TRACE) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    path = run / name
    path.write_bytes(data)
    return path


def _doc_with(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def build(run: Path) -> None:
        doc = kineto_doc()
        change(doc)
        _write(run, json.dumps(doc).encode())
    return build


def _text_with(change: Callable[[bytes], bytes], name: str = TRACE) -> Callable[[Path], None]:
    return lambda run: _write(run, change(kineto_text()), name)


def _first(doc: dict, cat: str) -> dict:
    return next(e for e in doc["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X")


def _nth_cpu_op(doc: dict, n: int) -> dict:
    return [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"][n]


def deep(levels: int = DEEP) -> bytes:
    return b"[" * levels + b"]" * levels


def _marker(doc: dict, key_path: tuple, marker: str = "@DEEP@") -> None:
    target = doc
    for k in key_path[:-1]:
        target = target[k]
    target[key_path[-1]] = marker


def _replace_marker(change: Callable[[dict], None], payload: bytes, marker: bytes = b'"@DEEP@"'):
    def build(run: Path) -> None:
        doc = kineto_doc()
        change(doc)
        _write(run, json.dumps(doc).encode().replace(marker, payload, 1))
    return build


def _deep_arg(doc):
    _nth_cpu_op(doc, 0)["args"]["nested"] = "@DEEP@"


def _deep_top(doc):
    doc["deepKey"] = "@DEEP@"


def _deep_event(doc):
    doc["traceEvents"].insert(5, "@DEEP@")


def _deep_dist(doc):
    doc["distributedInfo"]["nested"] = "@DEEP@"


def _rank(value):
    def change(doc):
        doc["distributedInfo"]["rank"] = value
    return change


def _device(key: str, value, n: int = 0):
    """deviceProperties[n][key] = value: ids and sizes no device can have (Device.index is an int32)."""
    def change(doc):
        doc["deviceProperties"][n][key] = value
    return change


def _step_number(text: str):
    """Every ProfilerStep#N renamed ProfilerStep#<text>: a number no int64 holds names no step."""
    def change(doc):
        for e in doc["traceEvents"]:
            if str(e.get("name", "")).startswith("ProfilerStep#"):
                e["name"] = f"ProfilerStep#{text}"
    return change


def _ts(field: str, n: int = 0):
    return lambda doc: _marker(doc, ("traceEvents", doc["traceEvents"].index(_nth_cpu_op(doc, n)), field), "@NUM@")


def _number(field: str, text: bytes):
    return _replace_marker(_ts(field), text, b'"@NUM@"')


def _surrogate(doc):
    _nth_cpu_op(doc, 0)["name"] = "@SUR@"


def _gzip_bomb(run: Path, start: bytes = b'{"schemaVersion": 1, "traceEvents": [', end: bytes = b"]}",
               blocks: int = 64) -> None:
    """~1 MB of gzip that expands to ~1 GB: a valid start, then spaces (legal JSON whitespace: the
    reader drops it as it comes, so this costs nothing), then `end`."""
    run.mkdir(parents=True)
    with gzip.open(run / (TRACE + ".gz"), "wb", compresslevel=9) as f:
        f.write(start)
        block = b" " * (16 << 20)
        for _ in range(blocks):
            f.write(block)
        f.write(end)


def _gzip_bomb_in_string(run: Path) -> None:
    """The same spaces inside a string (an event's name): they are data, kept, so the cap stops them."""
    _gzip_bomb(run, b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "', b'"}]}')


def _isize_lies(run: Path) -> None:
    """A good trace whose gzip trailer claims 1 byte: the size check of the trailer fails (corrupt)."""
    data = bytearray(gzip.compress(kineto_text()))
    data[-4:] = (1).to_bytes(4, "little")
    _write(run, bytes(data), TRACE + ".gz")


def _multi_member(run: Path) -> None:
    text = kineto_text()
    half = len(text) // 2
    _write(run, gzip.compress(text[:half]) + gzip.compress(text[half:]), TRACE + ".gz")


def _junk(prefix: bytes, size: int = 4 << 20):
    def build(run: Path) -> None:
        body = (prefix + bytes(range(256)) * (size // 256))[:size]
        _write(run, body)
    return build


def _truncate(fraction: float):
    return _text_with(lambda t: t[: int(len(t) * fraction)])


KINETO_CASES = [
    Case("k_good_copy", _text_with(lambda t: t), 200),
    Case("k_truncated_half", _truncate(0.5), 422, r"pt\.trace\.json: not JSON"),
    Case("k_truncated_first_byte", _truncate(0.0001), 422, r"pt\.trace\.json: "),
    Case("k_truncated_gzip", lambda run: _write(run, gzip.compress(kineto_text())[:5000], TRACE + ".gz"), 422,
         "truncated gzip"),
    Case("k_corrupt_gzip", lambda run: _write(run, b"\x1f\x8b\x08\x00" + b"\x00" * 20 + b"\xff" * 4000,
                                              TRACE + ".gz"), 422, "gzip"),
    Case("k_empty", _text_with(lambda t: b""), 422, "empty file"),
    Case("k_empty_gzip", _text_with(lambda t: gzip.compress(b""), TRACE + ".gz"), 422, "empty"),
    Case("k_whitespace_only", _text_with(lambda t: b" \n" * 1000), 422, r"pt\.trace\.json: "),
    Case("k_top_number", _text_with(lambda t: b'{"traceEvents": 42}'), 422, "traceEvents is not a list"),
    Case("k_no_trace_events", _text_with(lambda t: b'{"schemaVersion": 1, "x": []}'), 422, "no traceEvents"),
    Case("k_trace_events_empty", _text_with(lambda t: b'{"schemaVersion": 1, "traceEvents": []}'), 200),
    Case("k_top_string", _text_with(lambda t: b'"traceEvents"'), 422, "not a trace|expected an object"),
    Case("k_deep_arg", _replace_marker(_deep_arg, deep()), 422, "nest"),
    Case("k_deep_top_key", _replace_marker(_deep_top, deep()), 422, "nest"),
    Case("k_deep_event", _replace_marker(_deep_event, deep()), 422, "nest"),
    Case("k_deep_distributed_info", _replace_marker(_deep_dist, deep()), 422, "nest"),
    Case("k_deep_1500_objects", _replace_marker(_deep_arg, b'{"a":' * 1500 + b"1" + b"}" * 1500), 422, "nest"),
    Case("k_rank_2_80", _doc_with(_rank(2 ** 80)), 422, "rank"),
    Case("k_rank_negative", _doc_with(_rank(-5)), 422, "rank"),
    Case("k_rank_text", _doc_with(_rank("zero")), 200),
    Case("k_device_id_2_70", _doc_with(_device("id", 2 ** 70)), 200, r"pt\.trace\.json: device index 1180591620"),
    Case("k_device_id_2_31", _doc_with(_device("id", 2 ** 31)), 200, "device index 2147483648.*read as unknown"),
    Case("k_device_id_5000_digit_text", _doc_with(_device("id", "7" * 5000)), 200,
         "device index of more than 38 digits is no index"),
    Case("k_device_id_5000_digits", _replace_marker(_device("id", "@NUM@"), b"7" * 5000, b'"@NUM@"'), 200),
    Case("k_device_memory_2_80", _doc_with(_device("totalGlobalMem", 2 ** 80)), 200, "device memory 1208925819"),
    Case("k_rank_5000_digit_text", _doc_with(_rank("9" * 5000)), 422, "rank of more than 38 digits: not a rank"),
    Case("k_step_number_2_63", _doc_with(_step_number(str(2 ** 63))), 200),
    Case("k_step_number_30_digits", _doc_with(_step_number("9" * 30)), 200),
    Case("k_step_number_2_63_minus_1", _doc_with(_step_number(str(2 ** 63 - 1))), 200),
    Case("k_ts_1e400", _number("ts", b"1e400"), 200),
    Case("k_ts_minus_1e400", _number("ts", b"-1e400"), 200),
    Case("k_dur_1e400", _number("dur", b"1e400"), 200),
    Case("k_ts_1e300", _number("ts", b"1e300"), 200, "out of range"),
    Case("k_dur_1e300", _number("dur", b"1e300"), 200),
    Case("k_ts_huge_int", _number("ts", b"9" * 40), 200),
    Case("k_dur_2_63", _number("dur", str(2 ** 63).encode()), 200),
    Case("k_ts_string_1e400", _number("ts", b'"1e400"'), 200),
    Case("k_lone_surrogate", _replace_marker(_surrogate, b'"op\\ud800name"', b'"@SUR@"'), 200, "surrogate"),
    Case("k_lone_low_surrogate", _replace_marker(_surrogate, b'"op\\udc00name"', b'"@SUR@"'), 200),
    Case("k_gzip_bomb", _gzip_bomb, 200),
    Case("k_gzip_bomb_in_string", _gzip_bomb_in_string, 422, "cap"),
    Case("k_isize_lies", _isize_lies, 422, "gzip"),
    Case("k_multi_member_gzip", _multi_member, 200),
    Case("k_junk_binary", _junk(b"\x00\x01junk"), 422, "not a trace: starts with bytes 00 01"),
    Case("k_junk_brace", _junk(b'{"traceEvents": [\x00'), 422, r"pt\.trace\.json: "),
    Case("k_utf16", _text_with(lambda t: t.decode().encode("utf-16")), 422, "not a trace"),
    Case("k_bom", _text_with(lambda t: b"\xef\xbb\xbf" + t), 200),
    Case("k_nan_tokens", _text_with(lambda t: t.replace(b'"dur": 1,', b'"dur": NaN,', 3)), 200),
    Case("k_control_chars", _text_with(lambda t: t.replace(b'"name": "', b'"name": "\x01', 5)), 200),
    Case("k_invalid_utf8", _text_with(lambda t: t.replace(b'"name": "', b'"name": "\xff\xfe', 5)), 200),
    Case("k_huge_name", _doc_with(lambda doc: _nth_cpu_op(doc, 0).__setitem__("name", "x" * (4 << 20))), 200),
    Case("k_escaped_key", _text_with(lambda t: t.replace(b'"traceEvents"', b'"trace\\u0045vents"', 1)), 200),
    Case("k_duplicate_trace_events", _text_with(lambda t: t[:-1] + b', "traceEvents": []}'), 200),
    Case("k_events_not_objects", _doc_with(lambda doc: doc["traceEvents"].extend([1, "x", None, [], True])), 200),
    Case("k_args_not_object", _doc_with(lambda doc: _nth_cpu_op(doc, 0).__setitem__("args", [1, 2])), 200),
    Case("k_pid_object", _doc_with(lambda doc: _nth_cpu_op(doc, 0).__setitem__("pid", {"a": 1})), 200),
    Case("k_bare_array_deep", lambda run: _write(run, b'[{"ph": "X", "ts": "1", "dur": 1, "args": '
                                                 + deep() + b"}]"), 422, "nest"),
    Case("k_bare_array_truncated", lambda run: _write(run, b'[{"ph": "X", "ts": "1", "dur": 1, "name": "a", '
                                                      b'"pid": 1, "tid": 1}, {"ph": "X", "ts'), 422, ""),
]


# -- torch_npu output ----------------------------------------------------------------------------

def _ascend_copy(run: Path, level: str = "level1") -> Path:
    src = fixture_path("ascend", level, "rank0_ascend_pt")
    dst = run / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _ascend_with(change: Callable[[Path], None], level: str = "level1") -> Callable[[Path], None]:
    return lambda run: change(_ascend_copy(run, level))


def _cut_half(relative: str):
    def change(window: Path) -> None:
        path = window / relative
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    return change


def _rewrite(relative: str, data: bytes):
    return lambda window: (window / relative).write_bytes(data)


def _csv_cell(relative: str, column: str, value: str):
    """Every row's `column` cell set to `value` (the header names the column)."""
    def change(window: Path) -> None:
        path = window / relative
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
        at = rows[0].index(column)
        for row in rows[1:]:
            row[at] = value
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
    return change


def _info_file(window: Path) -> Path:
    return next(window.glob("profiler_info*.json"))


def _deep_info(window: Path) -> None:
    _info_file(window).write_bytes(b'{"config": ' + deep() + b"}")


def _info_list(window: Path) -> None:
    _info_file(window).write_bytes(b"[1, 2, 3]")


def _info_cut(window: Path) -> None:
    path = _info_file(window)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _comm_deep(window: Path) -> None:
    (window / OUT / "communication.json").write_bytes(b'{"step1": ' + deep() + b"}")


def _trace_view_deep_event(window: Path) -> None:
    path = window / OUT / "trace_view.json"
    data = path.read_bytes()
    at = data.index(b"[") + 1
    path.write_bytes(data[:at] + deep() + b"," + data[at:])


def _trace_view_deep_args(window: Path) -> None:
    path = window / OUT / "trace_view.json"
    path.write_bytes(path.read_bytes().replace(b'"args": {', b'"args": {"nested": ' + deep() + b", ", 1))


ASCEND_FILES = ["trace_view.json", "kernel_details.csv", "operator_details.csv", "step_trace_time.csv",
                "communication.json", "communication_matrix.json", "memory_record.csv", "op_statistic.csv",
                "operator_memory.csv", "npu_module_mem.csv", "api_statistic.csv", "l2_cache.csv"]

ASCEND_CASES = [
    Case("a_good_copy", _ascend_with(lambda w: None), 200),
    *[Case(f"a_half_{name.replace('.', '_')}", _ascend_with(_cut_half(f"{OUT}/{name}")), 200) for name in ASCEND_FILES],
    Case("a_half_profiler_info", _ascend_with(_info_cut), 200),
    Case("a_half_profiler_metadata", _ascend_with(_cut_half("profiler_metadata.json")), 200),
    Case("a_every_file_half", _ascend_with(lambda w: [_cut_half(str(p.relative_to(w)))(w) for p in w.rglob("*")
                                                      if p.is_file()]), 200),
    Case("a_trace_view_not_json", _ascend_with(_rewrite(f"{OUT}/trace_view.json", b"<html>oops</html>")), 200),
    Case("a_trace_view_object", _ascend_with(_rewrite(f"{OUT}/trace_view.json", b'{"traceEvents": 1}')), 200),
    Case("a_trace_view_deep_event", _ascend_with(_trace_view_deep_event), 200, "trace_view.json.*nested deeper"),
    Case("a_trace_view_deep_args", _ascend_with(_trace_view_deep_args), 200, "trace_view.json.*nested deeper"),
    Case("a_communication_not_json", _ascend_with(_rewrite(f"{OUT}/communication.json", b"{{{")), 200),
    Case("a_communication_list", _ascend_with(_rewrite(f"{OUT}/communication.json", b"[1, [2], {}]")), 200),
    Case("a_communication_deep", _ascend_with(_comm_deep), 200, "communication.json.*nested deeper"),
    Case("a_matrix_deep", _ascend_with(_rewrite(f"{OUT}/communication_matrix.json", b'{"s": ' + deep() + b"}")), 200),
    Case("a_profiler_info_deep", _ascend_with(_deep_info), 200, "profiler_info_0.json.*nested deeper"),
    Case("a_profiler_info_list", _ascend_with(_info_list), 200),
    Case("a_profiler_info_junk", _ascend_with(lambda w: _info_file(w).write_bytes(b"\x00\xff" * 100)), 200),
    Case("a_kernel_start_inf", _ascend_with(_csv_cell(f"{OUT}/kernel_details.csv", "Start Time(us)", "inf")), 200,
         "kernel_details.csv"),
    Case("a_kernel_start_minus_1e400",
         _ascend_with(_csv_cell(f"{OUT}/kernel_details.csv", "Start Time(us)", "-1e400")), 200),
    Case("a_kernel_duration_1e400", _ascend_with(_csv_cell(f"{OUT}/kernel_details.csv", "Duration(us)", "1e400")), 200,
         "kernel_details.csv"),
    Case("a_memory_time_inf", _ascend_with(_csv_cell(f"{OUT}/memory_record.csv", "Timestamp(us)", "inf")), 200,
         "memory_record.csv"),
    Case("a_step_trace_inf", _ascend_with(_csv_cell(f"{OUT}/step_trace_time.csv", "Computing", "inf")), 200),
    Case("a_op_details_inf", _ascend_with(_csv_cell(f"{OUT}/operator_details.csv", "Host Total Duration(us)", "-1e400")),
         200),
    Case("a_op_memory_time_inf", _ascend_with(_csv_cell(f"{OUT}/operator_memory.csv", "Allocation Time(us)", "inf")),
         200),
]


# -- the SQLite export -------------------------------------------------------------------------

def _db_path(window: Path) -> Path:
    return next((window / OUT).glob("ascend_pytorch_profiler*.db"))


def _db_junk(window: Path) -> None:
    _db_path(window).write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)


def _db_empty_schema(window: Path) -> None:
    path = _db_path(window)
    path.unlink()
    for extra in (window / OUT).glob("*.db-*"):
        extra.unlink()
    sqlite3.connect(path).close()


def _db_npu_id(value: int):
    """NPU_INFO's device id set to `value` (SQLite holds any int64): no int32 device index."""
    def change(window: Path) -> None:
        with sqlite3.connect(_db_path(window)) as db:
            db.execute("update NPU_INFO set id = ?", (value,))
        db.close()
    return change


DB_CASES = [
    Case("d_good_copy", _ascend_with(lambda w: None, "db_level1"), 200),
    Case("d_db_half", _ascend_with(lambda w: _cut_half(str(_db_path(w).relative_to(w)))(w), "db_level1"), 422,
         r"\.db: "),
    Case("d_db_junk", _ascend_with(_db_junk, "db_level1"), 422, r"\.db: "),
    Case("d_db_no_tables", _ascend_with(_db_empty_schema, "db_level1"), 422, r"\.db: "),
    Case("d_npu_id_2_40", _ascend_with(_db_npu_id(2 ** 40), "db_level1"), 200,
         "rank0_ascend_pt: device index 1099511627776 is no index"),
]

# -- our handler's windows: a manifest naming the trace ---------------------------------------------

def _canning(**fields):
    """The Kineto trace as a window of our handler: the gzip trace and its manifest (the keys util/manifest.py
    documents, written with json), `fields` changed in the manifest."""
    def build(run: Path) -> None:
        stem = "rank0.1694128201545"
        trace = _write(run, gzip.compress(kineto_text()), f"{stem}.pt.trace.json.gz")
        manifest = {"format_version": 1, "kind": "kineto", "worker": "rank0", "window": 0,
                    "manifest": f"{stem}.canning.json", "rank": 0, "world_size": 8, "local_rank": 0, "host": "h",
                    "pid": 1234, "devices": [{"kind": "cuda", "index": 0, "name": "Tesla V100-SXM2-32GB"}],
                    "files": [{"name": trace.name, "bytes": trace.stat().st_size}]}
        manifest.update(fields)
        _write(run, json.dumps(manifest).encode(), f"{stem}.canning.json")
    return build


CANNING_CASES = [
    Case("c_good_copy", _canning(), 200),
    Case("c_rank_2_70", _canning(rank=2 ** 70), 422, r"rank0\.1694128201545\.canning\.json: rank 1180591620.*not a rank"),
    Case("c_pid_world_size_huge", _canning(pid=2 ** 70, world_size=2 ** 40, local_rank=2 ** 33), 200,
         r"canning\.json: world_size 1099511627776, local_rank 8589934592, pid 1180591620.*out of range"),
    Case("c_device_index_2_70", _canning(devices=[{"kind": "cuda", "index": 2 ** 70, "name": "x", "memory": -2}]),
         200, r"canning\.json: device index 1180591620.*; device memory -2 is no size in bytes"),
]

CASES = KINETO_CASES + ASCEND_CASES + DB_CASES + CANNING_CASES
