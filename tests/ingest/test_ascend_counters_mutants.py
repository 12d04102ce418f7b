"""ingest/ascend/counters.py under mutation (docs/mutants.md, issue 46): trace_view.json's "ph":"C" samples
(CounterParts) and the profiler db's counter tables (db_counter_rows) on small hand-made inputs, every expected row
worked out by hand: KB * 1024 = bytes, MB/s * 1048576 = bytes/s, MHz as is, µs text * 1000 = ns."""
from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace

import numpy as np

from canning_tb.ingest.ascend import counters as C
from canning_tb.ingest.ascend.db.read import Db
from canning_tb.ingest.ascend.trace.decode import decode_piece


def _events(*evs):
    events, bad = decode_piece(json.dumps([{"ph": "C", **e} for e in evs]).encode())
    assert bad == 0
    return events


def _rows(cols):
    return [(r["group"], r["counter"], r["unit"], r["device"], r["ts_ns"], r["value"]) for r in cols]


def test_trace_samples_by_hand():
    """Nine events of two processes (pid 10 -> id 0: group g0 on npu:3; pid 20 -> id 1: g1 on npu:1), seq 100-108:
    HBM 0 at 1.5 us: Read 2 MB/s = 2097152 B/s and Write 3 -> 3145728 (two values: '/key' suffixes);
    AI Core Freq 1800 MHz at 2 us; HBM 0 at 3 us: Read 'x' no number (dropped), Write 1 -> 1048576;
    Acc PMU acc 1 at 4 us: 5 (its id names the series, one value: no suffix, no unit); a time 'bad': dropped;
    args that are a list: no sample; Acc PMU acc 2 at 5 us: 7; no name (None) at 6 us: value 1.5; NPU MEM 2 KB at
    7 us = 2048 B. Rows in file order (seq * 64 + the key's place)."""
    cs = _events({"name": "HBM 0", "pid": 10, "ts": "1.5", "args": {"Read(MB/s)": 2, "Write(MB/s)": 3}},
                 {"name": "AI Core Freq", "pid": 10, "ts": "2", "args": {"MHz": 1800}},
                 {"name": "HBM 0", "pid": 10, "ts": "3", "args": {"Read(MB/s)": "x", "Write(MB/s)": 1}},
                 {"name": "Acc PMU", "pid": 20, "ts": "4", "args": {"acc_id": 1, "read_bandwidth": 5}},
                 {"name": "Acc PMU", "pid": 20, "ts": "bad", "args": {"acc_id": 1, "read_bandwidth": 6}},
                 {"name": "X", "pid": 10, "ts": "4.5", "args": [1]},
                 {"name": "Acc PMU", "pid": 20, "ts": "5", "args": {"acc_id": 2, "read_bandwidth": 7}},
                 {"name": None, "pid": 10, "ts": "6", "args": {"value": 1.5}},
                 {"name": "NPU MEM", "pid": 10, "ts": "7", "args": {"KB": 2}})
    parts = C.CounterParts()
    parts.add(SimpleNamespace(ids={"pid": {10: 0, 20: 1}}), cs, np.arange(100, 109))
    got = parts.columns(np.array([0, 1], np.int32), np.array([3, 1]), ["g0", "g1"])
    assert _rows(got) == [
        ("g0", "HBM 0/Read(MB/s)", "bytes/s", "npu:3", 1500, 2097152.0),
        ("g0", "HBM 0/Write(MB/s)", "bytes/s", "npu:3", 1500, 3145728.0),
        ("g0", "AI Core Freq", "MHz", "npu:3", 2000, 1800.0),
        ("g0", "HBM 0/Write(MB/s)", "bytes/s", "npu:3", 3000, 1048576.0),
        ("g1", "Acc PMU acc_id 1", "", "npu:1", 4000, 5.0),
        ("g1", "Acc PMU acc_id 2", "", "npu:1", 5000, 7.0),
        ("g0", "None", "", "npu:3", 6000, 1.5),
        ("g0", "NPU MEM", "bytes", "npu:3", 7000, 2048.0)]
    # pid 20 on no device (-1): its samples dropped, the rest kept in order
    got = parts.columns(np.array([0, 1], np.int32), np.array([0, -1]), ["g0", "g1"])
    assert [r[1] for r in _rows(got)] == ["HBM 0/Read(MB/s)", "HBM 0/Write(MB/s)", "AI Core Freq",
                                          "HBM 0/Write(MB/s)", "None", "NPU MEM"]
    assert {r[3] for r in _rows(got)} == {"npu:0"}
    assert C.CounterParts().columns(np.zeros(0, np.int32), np.zeros(0, np.int64), []) is None


def test_one_event_and_ids_that_are_no_key():
    """One event alone (the one-row pick); an id that is a list (no dict key: the uncached path), two values:
    'Acc acc_id [1, 2]/a' and '/b'; a second group of the same series reuses its code."""
    cs = _events({"name": "Acc", "pid": 5, "ts": "1", "args": {"acc_id": [1, 2], "a": 1, "b": 2}})
    parts = C.CounterParts()
    parts.add(SimpleNamespace(ids={"pid": {5: 0}}), cs, np.array([0]))
    cs = _events({"name": "Acc", "pid": 5, "ts": "2", "args": {"acc_id": [1, 2], "a": 3}})
    parts.add(SimpleNamespace(ids={"pid": {5: 0}}), cs, np.array([1]))
    got = _rows(parts.columns(np.array([0], np.int32), np.array([2]), ["g"]))
    assert got == [("g", "Acc acc_id [1, 2]/a", "", "npu:2", 1000, 1.0), ("g", "Acc acc_id [1, 2]/b", "", "npu:2", 1000, 2.0),
                   ("g", "Acc acc_id [1, 2]", "", "npu:2", 2000, 3.0)]
    assert list(parts.series) == ["Acc acc_id [1, 2]/a", "Acc acc_id [1, 2]/b", "Acc acc_id [1, 2]"]


def test_absorb_maps_the_other_readers_codes():
    """Ours: series 'A' (unit MHz) at seq 1. Theirs: 'B' (bytes/s) then 'A' (MHz), their pid 0 is our pid 1,
    their seq 0 and 1 come after our seq_offset 5: 5 * 64 + 0 and 6 * 64 + 0, after ours (1 * 64)."""
    ours, theirs = C.CounterParts(), C.CounterParts()
    one = np.array([7.0])
    ours.add_group(0, "A", ("MHz",), lambda pos, key: one, None, np.array([10]), np.array([1]))
    theirs.add_group(0, "B", ("MB/s",), lambda pos, key: np.array([1.0]), None, np.array([20]), np.array([0]))
    theirs.add_group(0, "A", ("MHz",), lambda pos, key: np.array([2.0]), None, np.array([30]), np.array([1]))
    ours.absorb(theirs, np.array([1]), 5)
    got = _rows(ours.columns(np.array([0, 1], np.int32), np.array([0, 4]), ["g0", "g1"]))
    assert got == [("g0", "A", "MHz", "npu:0", 10, 7.0), ("g1", "B", "bytes/s", "npu:4", 20, 1048576.0),
                   ("g1", "A", "MHz", "npu:4", 30, 2.0)]
    assert list(ours.series) == ["A", "B"] and list(ours.units) == ["MHz", "bytes/s"]
    assert ours.parts[1]["pid"].dtype == np.int32 and ours.parts[1]["seq"].tolist() == [5 * 64]


def test_the_64th_key_and_beyond_keep_their_event_order():
    """An event with 300 value keys (seq 0), added after an event of 1 key (seq 1): keys 63 to 299 all sort at
    0 * 64 + 63, after keys 0-62, in their own order (a stable sort), and all before the other event's 1 * 64 + 0
    = 64, though its part came first."""
    keys = tuple(f"k{i}" for i in range(300))
    parts = C.CounterParts()
    parts.add_group(0, "F", ("v",), lambda pos, key: np.array([-1.0]), None, np.array([2]), np.array([1]))
    parts.add_group(0, "E", keys, lambda pos, key: np.array([float(pos)]), None, np.array([1]), np.array([0]))
    got = _rows(parts.columns(np.array([0], np.int32), np.array([0]), ["g"]))
    assert [r[5] for r in got] == [float(i) for i in range(300)] + [-1.0]


def test_one_part_alone():
    """One group of one sample: its row (the columns of the only part)."""
    parts = C.CounterParts()
    parts.add_group(0, "A", ("MHz",), lambda pos, key: np.array([5.0]), None, np.array([7]), np.array([0]))
    assert _rows(parts.columns(np.array([0], np.int32), np.array([1]), ["g"])) == [("g", "A", "MHz", "npu:1", 7, 5.0)]


def test_small_rules_by_hand():
    """_unit: the file's unit -> ours and the factor; is_id_key; _series; _codes with small and large ids
    (1 << 16 and more: np.unique's way, same answer)."""
    assert C._unit("KB") == ("bytes", 1024.0) and C._unit("MHz") == ("MHz", 1.0)
    assert C._unit("Read(MB/s)") == ("bytes/s", 1048576.0) and C._unit("Hit Rate(%)") == ("%", 1.0)
    assert C._unit("value") == ("", 1.0) and C._unit("a(KB) x") == ("", 1.0) and C._unit("a(KB)  ") == ("bytes", 1024.0)
    assert C._unit("x (a)(y)") == ("y", 1.0) and C._unit("x(y))") == ("", 1.0)
    assert C.is_id_key("acc_id") and C.is_id_key("llcID") and not C.is_id_key("idle")
    assert C._series("N", ["a", "b"], (1, "x")) == "N a 1 b x" and C._series("N", [], ()) == "N"
    for values, uniq, inverse in (([3, 1, 3, 0], [0, 1, 3], [2, 1, 2, 0]), ([70000, 5, 70000], [5, 70000], [1, 0, 1]),
                                  ([65535, 2], [2, 65535], [1, 0]), ([65536], [65536], [0])):
        u, i = C._codes(np.array(values, np.int64))
        assert u.tolist() == uniq and i.tolist() == inverse
    u, i = C._codes(np.zeros(0, np.int64))
    assert u.tolist() == [] and i.tolist() == []
    made = C._Made(lambda k: k * 2)
    assert made[3] == 6 and dict(made) == {3: 6}


def _db(tables: dict[str, tuple[str, list]], strings=None):
    c = sqlite3.connect(":memory:")
    c.execute("create table STRING_IDS (id integer primary key, value text)")
    c.executemany("insert into STRING_IDS values (?, ?)", list((strings or {}).items()))
    for name, (cols, rows) in tables.items():
        c.execute(f"create table {name} ({cols})")
        if rows:
            c.executemany(f"insert into {name} values ({','.join('?' * len(rows[0]))})", rows)
    return Db(c)


def test_db_counters_by_hand():
    """Every table of the profiler db's schema; rows without a time or a device dropped, NULL values dropped.
    Labels: type 1 -> 'read' -> 'Read', 99 (no string) -> '99', 'app' -> 'APP', 'device' -> 'Device'."""
    db = _db({
        "AICORE_FREQ": ("deviceId INTEGER, timestampNs NUMERIC, freq INTEGER",
                        [(0, 100, 1800), (1, 200, 900), (0, None, 5), (None, 300, 7)]),
        "HBM": ("deviceId INTEGER, timestampNs INTEGER, bandwidth NUMERIC, hbmId INTEGER, type INTEGER",
                [(0, 10, 5.5, 0, 1), (0, 20, None, 1, 1), (0, 30, 7, 1, 99)]),
        "LLC": ("deviceId INTEGER, llcId INTEGER, timestampNs INTEGER, hitRate REAL, throughput INTEGER, mode INTEGER",
                [(0, 3, 40, 85.5, 1000, 1)]),
        "NPU_MEM": ("type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, deviceId INTEGER",
                    [(4, 0, 2048, 50, 0), (5, 1, 2, 60, 0)]),
        "ACC_PMU": ("accId INTEGER, readBwLevel INTEGER, writeBwLevel INTEGER, readOstLevel INTEGER, "
                    "writeOstLevel INTEGER, timestampNs NUMERIC, deviceId INTEGER", [(2, 1, 2, 3, 4, 70, 0)]),
        "SOC_BANDWIDTH_LEVEL": ("l2BufferBwLevel INTEGER, mataBwLevel INTEGER, timestampNs NUMERIC, deviceId INTEGER",
                                [(5, 6, 80, 0)])}, {1: "read", 4: "app", 5: "device"})
    assert _rows(C.db_counter_rows(db)) == [
        ("AI Core Freq", "AI Core Freq", "MHz", "npu:0", 100, 1800.0),
        ("AI Core Freq", "AI Core Freq", "MHz", "npu:1", 200, 900.0),
        ("HBM", "HBM 0/Read", "bytes/s", "npu:0", 10, 5.5), ("HBM", "HBM 1/99", "bytes/s", "npu:0", 30, 7.0),
        ("LLC", "LLC 3 Read/Throughput", "bytes/s", "npu:0", 40, 1000.0),
        ("LLC", "LLC 3 Read/Hit Rate", "%", "npu:0", 40, 85.5),
        ("NPU MEM", "APP/HBM", "bytes", "npu:0", 50, 2048.0), ("NPU MEM", "Device/HBM", "bytes", "npu:0", 60, 2.0),
        ("NPU MEM", "APP/DDR", "bytes", "npu:0", 50, 0.0), ("NPU MEM", "Device/DDR", "bytes", "npu:0", 60, 1.0),
        ("Acc PMU", "read_bandwidth acc_id 2", "", "npu:0", 70, 1.0),
        ("Acc PMU", "write_band_width acc_id 2", "", "npu:0", 70, 2.0),
        ("Acc PMU", "read_ost acc_id 2", "", "npu:0", 70, 3.0), ("Acc PMU", "write_ost acc_id 2", "", "npu:0", 70, 4.0),
        ("Stars Soc Info", "Mata Bw Level", "", "npu:0", 80, 6.0),
        ("Stars Soc Info", "L2 Buffer Bw Level", "", "npu:0", 80, 5.0)]


def test_db_tables_without_their_columns():
    """HBM without hbmId: not read; LLC without hitRate: throughput still read; NPU_MEM without either value
    column: not read; a key that is NULL names 'None'; no table with a sample: None."""
    db = _db({"HBM": ("deviceId INTEGER, timestampNs INTEGER, bandwidth NUMERIC, type INTEGER", [(0, 1, 1, 1)]),
              "LLC": ("deviceId INTEGER, llcId INTEGER, timestampNs INTEGER, throughput INTEGER, mode INTEGER",
                      [(2, None, 5, 10, 7), (2, 1, 6, 11, 7)]),
              "NPU_MEM": ("type INTEGER, timestampNs INTEGER, deviceId INTEGER", [(1, 1, 0)])})
    assert _rows(C.db_counter_rows(db)) == [("LLC", "LLC None 7/Throughput", "bytes/s", "npu:2", 5, 10.0),
                                            ("LLC", "LLC 1 7/Throughput", "bytes/s", "npu:2", 6, 11.0)]
    assert C.db_counter_rows(_db({})) is None
    assert C.db_counter_rows(_db({"AICORE_FREQ": ("deviceId INTEGER, timestampNs NUMERIC, freq INTEGER",
                                                  [(0, 1, None)])})) is None
    assert C.db_counter_rows(_db({"AICORE_FREQ": ("deviceId INTEGER, timestampNs NUMERIC, freq INTEGER", [])})) is None
    # an empty table beside one with a sample: that sample alone
    db = _db({"AICORE_FREQ": ("deviceId INTEGER, timestampNs NUMERIC, freq INTEGER", []),
              "SOC_BANDWIDTH_LEVEL": ("l2BufferBwLevel INTEGER, mataBwLevel INTEGER, timestampNs NUMERIC, "
                                      "deviceId INTEGER", [(1, None, 9, 0)])})
    assert _rows(C.db_counter_rows(db)) == [("Stars Soc Info", "L2 Buffer Bw Level", "", "npu:0", 9, 1.0)]
