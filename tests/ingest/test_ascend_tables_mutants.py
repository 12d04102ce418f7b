"""ingest/ascend/tables.py under mutation (docs/mutants.md, issue 46): communication.json and
communication_matrix.json read from small hand-made files in torch_npu's layout (step -> kind -> 'op@group' ->
info), every expected value worked out by hand: ms * 1e6 = ns, µs * 1e3 = ns, decimal MB * 1e6 = bytes."""
from __future__ import annotations

import json

from canning_tb.ingest._json import TOO_DEEP
from canning_tb.ingest.ascend import tables as T


def _json(tmp_path, name, value, bom=False):
    p = tmp_path / name
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + json.dumps(value).encode())
    return str(p)


COMM = {
    "step0": ["not", "an", "object"],
    "step50": {
        "p2p": "not an object",
        "collective": {
            "hcom_allReduce__586_0_1@1752": {
                "Communication Time Info": {"Start Timestamp(us)": 1000.5, "Elapse Time(ms)": 2.5,
                                            "Transit Time(ms)": 0.25, "Wait Time(ms)": 1.125,
                                            "Synchronization Time(ms)": 0.5, "Idle Time(ms)": 1.0},
                "Communication Bandwidth Info": {
                    "HCCS": {"Transit Size(MB)": 28.5, "Transit Time(ms)": 1.5, "Bandwidth(GB/s)": 19.0,
                             "Large Packet Ratio": 0.25,
                             "Size Distribution": {"2.064384": [12, 1.5], "bad": [1, 1], "1.0": [3],
                                                   "0.5": "x", "0.25": [2, 0.125]}},
                    "PCIE": "not an object",
                    "RDMA": {"Transit Size(MB)": "N/A", "Size Distribution": []}}},
            "Total Op Info": {"Communication Time Info": {"Elapse Time(ms)": 9.0}},
            "hcom_broadcast__1_0_1": {"Communication Time Info": "x"},
            "hcom_skipped": 5}},
    "step51": {"p2p": {"hcom_send__2_0_1@g@2": {}}},
}


def test_communication_by_hand(tmp_path):
    """Calls: allReduce (group '1752') with its times: start 1000.5 us -> 1000500 ns, elapse 2.5 ms -> 2500000,
    transit 0.25 -> 250000, wait 1.125 -> 1125000, sync 0.5 -> 500000, idle 1.0 -> 1000000; broadcast with no
    group and no time object (every time None); send: 'op@g@2' splits at its last '@' (op 'hcom_send__2_0_1@g',
    group '2'), kind p2p, step 51. 'Total Op Info' is no call; 5 and the p2p text are no info objects.
    Bandwidth: HCCS 28.5 MB = 28500000 B, 1.5 ms = 1500000 ns, 19.0 GB/s, ratio 0.25; RDMA 'N/A' size None;
    PCIE no object: no row. Packets: 2.064384 MB = 2064384 B x 12 in 1.5 ms; 0.25 MB = 250000 B x 2 in 0.125 ms =
    125000 ns; 'bad' (no size), [3] (one item) and 'x' (no list) left out."""
    problems = []
    out = T.read_communication(_json(tmp_path, "communication.json", COMM, bom=True), "c", problems)
    assert problems == []
    key = {"step": 50, "kind": "collective", "op": "hcom_allReduce__586_0_1", "group": "1752"}
    assert out.ops == [
        {**key, "start_ns": 1000500, "elapse_ns": 2500000, "transit_ns": 250000, "wait_ns": 1125000,
         "synchronization_ns": 500000, "idle_ns": 1000000},
        {"step": 50, "kind": "collective", "op": "hcom_broadcast__1_0_1", "group": "", "start_ns": None,
         "elapse_ns": None, "transit_ns": None, "wait_ns": None, "synchronization_ns": None, "idle_ns": None},
        {"step": 51, "kind": "p2p", "op": "hcom_send__2_0_1@g", "group": "2", "start_ns": None, "elapse_ns": None,
         "transit_ns": None, "wait_ns": None, "synchronization_ns": None, "idle_ns": None}]
    assert out.bandwidth == [
        {**key, "transport": "HCCS", "size_bytes": 28500000, "time_ns": 1500000, "bandwidth_gbps": 19.0,
         "large_packet_ratio": 0.25},
        {**key, "transport": "RDMA", "size_bytes": None, "time_ns": None, "bandwidth_gbps": None,
         "large_packet_ratio": None}]
    assert out.packets == [
        {**key, "transport": "HCCS", "packet_bytes": 2064384, "count": 12, "time_ns": 1500000},
        {**key, "transport": "HCCS", "packet_bytes": 250000, "count": 2, "time_ns": 125000}]
    assert out.groups() == {"hcom_allReduce__586_0_1": "1752", "hcom_send__2_0_1@g": "2"}


def test_bad_json_files(tmp_path):
    """Not JSON, a list, a missing file and JSON nested past the parser's depth: each one error, None."""
    bad = tmp_path / "bad.json"
    bad.write_text("{\"step50\": ")
    problems = []
    assert T.read_communication(str(bad), "c", problems) is None
    assert len(problems) == 1 and problems[0].file == "c" and problems[0].severity == "error"
    assert problems[0].message.startswith("not valid JSON (truncated or still being written?): ")
    problems = []
    assert T.read_communication_matrix(_json(tmp_path, "l.json", [1]), "m", problems) is None
    assert [(p.file, p.message, p.severity) for p in problems] == [("m", "expected a JSON object", "error")]
    problems = []
    assert T.read_json_dict(str(tmp_path / "none.json"), "n", problems) is None
    assert len(problems) == 1 and problems[0].message.startswith("not valid JSON")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200000 + "]" * 200000)
    problems = []
    assert T.read_json_dict(str(deep), "d", problems) is None
    assert [(p.file, p.message, p.severity) for p in problems] == [("d", TOO_DEEP, "error")]
    assert T.read_json_dict(_json(tmp_path, "e.json", {}), "e", []) == {}


def test_a_read_past_its_deadline_names_the_file(tmp_path, monkeypatch):
    """safe_files' read deadline set to -1 s (no clock raced): the read is refused after its first block, and the
    error names the file's path."""
    from canning_tb.util import safe_files
    monkeypatch.setattr(safe_files, "READ_DEADLINE_S", -1.0)
    path = _json(tmp_path, "c.json", {"a": 1})
    problems = []
    assert T.read_communication(path, "c", problems) is None
    assert len(problems) == 1 and "reading took longer than -1 s" in problems[0].message
    assert problems[0].message.endswith(f"'{path}'")


MATRIX = {
    "step50": {
        "collective": {
            "allreduce-top1@1752": {"0-0": "x",
                                    "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 37.5,
                                            "Transit Time(ms)": 2.25, "Bandwidth(GB/s)": 17.5,
                                            "Op Name": "hcom_allReduce__586_2_1"}},
            "allreduce-total@1752": {"1-0": {"Transport Type": "LOCAL", "Transit Size(MB)": 4, "Transit Time(ms)": 0}},
            "hcom_allReduce__586_0_1": {"x-2": {}},
            "Total Op Info": {"3": {"Transit Size(MB)": 1e-06}}},
        "p2p": {"send-middle@9": {"0-1": {"Op Name": 7}}, "send-bottom12": {"0-1": {}}}},
    "step": {"p2p": {"send-topx": {"0-1": {}}}},
}


def test_communication_matrix_by_hand(tmp_path):
    """Links: 'allreduce-top1@1752' -> link 'allreduce-top1', aggregate 'top' (the slice name, any digits after),
    group 1752, 37.5 MB -> 37500000 B, 2.25 ms -> 2250000 ns; '-total' -> 'total'; an op key -> ''; 'Total Op Info'
    (2023) -> 'total', pair '3' without '-': src 3, dst None, 1e-06 MB -> 1 B; 'middle' and 'bottom12' slices;
    'topx' is no slice (''); 'x-2' src None; step 'step' -> None; an Op Name 7 -> '7'; no Transport -> None;
    the cell '0-0' that is no object is skipped and the next one read."""
    problems = []
    got = T.read_communication_matrix(_json(tmp_path, "communication_matrix.json", MATRIX), "m", problems)
    assert problems == []
    base = {"transport": None, "bytes": None, "time_ns": None, "bandwidth_gbps": None, "op": None}
    assert got == [
        {"step": 50, "kind": "collective", "group": "1752", "link": "allreduce-top1", "aggregate": "top", "src": 0,
         "dst": 1, "transport": "HCCS", "bytes": 37500000, "time_ns": 2250000, "bandwidth_gbps": 17.5,
         "op": "hcom_allReduce__586_2_1"},
        {"step": 50, "kind": "collective", "group": "1752", "link": "allreduce-total", "aggregate": "total", "src": 1,
         "dst": 0, **base, "transport": "LOCAL", "bytes": 4000000, "time_ns": 0},
        {"step": 50, "kind": "collective", "group": "", "link": "hcom_allReduce__586_0_1", "aggregate": "",
         "src": None, "dst": 2, **base},
        {"step": 50, "kind": "collective", "group": "", "link": "Total Op Info", "aggregate": "total", "src": 3,
         "dst": None, **base, "bytes": 1},
        {"step": 50, "kind": "p2p", "group": "9", "link": "send-middle", "aggregate": "middle", "src": 0, "dst": 1,
         **base, "op": "7"},
        {"step": 50, "kind": "p2p", "group": "", "link": "send-bottom12", "aggregate": "bottom", "src": 0, "dst": 1,
         **base},
        {"step": None, "kind": "p2p", "group": "", "link": "send-topx", "aggregate": "", "src": 0, "dst": 1, **base}]
    assert T.read_communication_matrix(str(tmp_path / "none.json"), "m", []) is None


def test_small_rules_by_hand():
    """split_op_group at the last '@'; as_dict; mb_decimal_to_bytes rounds (0.0000015 MB = 1.5 B -> 2);
    matrix_aggregate of the slice names only at the end; matrix_row's empty texts."""
    assert T.split_op_group("a@b@c") == ("a@b", "c") and T.split_op_group("abc") == ("abc", "")
    assert T.split_op_group("a@") == ("a", "")
    assert T.as_dict({"a": 1}) == {"a": 1} and T.as_dict([1]) == {} and T.as_dict(None) == {}
    assert T.mb_decimal_to_bytes("0.0000015") == 2 and T.mb_decimal_to_bytes("2.5") == 2500000
    assert T.mb_decimal_to_bytes("N/A") is None and T.mb_decimal_to_bytes(None) is None
    assert T.matrix_aggregate("x-bottom") == "bottom" and T.matrix_aggregate("x-top1y") == ""
    assert T.matrix_aggregate("top1") == "" and T.matrix_aggregate("a-total") == "total"
    assert T.matrix_aggregate("a-totals") == "" and T.matrix_aggregate("Total Op Info") == "total"
    assert T.matrix_row(None, None, None, "1", "2", None, None, None, None, None, None) == {
        "step": None, "kind": "", "group": "", "link": "", "aggregate": "", "src": 1, "dst": 2, "transport": None,
        "bytes": None, "time_ns": None, "bandwidth_gbps": None, "op": None}
    assert T.comm_time_row({"step": 1, "kind": "p2p", "op": "o", "group": ""}, {"Idle Time(ms)": "0.001"}) == {
        "step": 1, "kind": "p2p", "op": "o", "group": "", "start_ns": None, "elapse_ns": None, "transit_ns": None,
        "wait_ns": None, "synchronization_ns": None, "idle_ns": 1000}
    assert T.CommTables().groups() == {}
