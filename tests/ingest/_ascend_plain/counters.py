"""The plain reading of the NPU counters: a row dict per sample (the units and labels are canning-tb's
own: counters.py)."""
from __future__ import annotations

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.ascend.counters import _label, _unit

from .csv_io import to_float, us_to_ns


def trace_counter_rows(event: dict, group: str, device: int) -> list[dict]:
    """Rows of one counter event: one per numeric arg; args named *id (acc_id) name the series."""
    ts = us_to_ns(event.get("ts"))
    args = event.get("args")
    if ts is None or not isinstance(args, dict):
        return []
    name = str(event.get("name", ""))
    ids = [f"{key} {value}" for key, value in args.items() if key.lower().endswith("id")]
    values = {key: to_float(value) for key, value in args.items() if not key.lower().endswith("id")}
    rows = []
    for key, value in values.items():
        if value is None:
            continue
        unit, factor = _unit(key)
        series = " ".join([name, *ids]) + (f"/{key}" if len(values) > 1 else "")
        rows.append(side.row("npu_counters", group=group, counter=series, unit=unit, device=f"npu:{device}",
                             ts_ns=ts, value=value * factor))
    return rows


def _rows(group: str, unit: str, samples) -> list[dict]:
    return [side.row("npu_counters", group=group, counter=counter, unit=unit, device=f"npu:{int(device)}",
                     ts_ns=int(ts), value=float(value))
            for counter, device, ts, value in samples if ts is not None and value is not None]


def db_counter_rows(db) -> list[dict]:
    """The counter tables of a profiler db (those it has), as side table rows."""
    out = _rows("AI Core Freq", "MHz", (("AI Core Freq", d, ts, f) for d, ts, f in db.rows(
        "AICORE_FREQ", "select deviceId, timestampNs, freq from AICORE_FREQ")))
    out += _rows("HBM", "bytes/s", ((f"HBM {i}/{_label(db, t)}", d, ts, bw) for d, ts, bw, i, t in db.rows(
        "HBM", "select deviceId, timestampNs, bandwidth, hbmId, type from HBM")))
    for column, suffix, unit in (("throughput", "Throughput", "bytes/s"), ("hitRate", "Hit Rate", "%")):
        out += _rows("LLC", unit, ((f"LLC {i} {_label(db, mode)}/{suffix}", d, ts, v) for d, i, ts, v, mode in db.rows(
            "LLC", f"select deviceId, llcId, timestampNs, {column}, mode from LLC")))
    for column in ("hbm", "ddr"):
        out += _rows("NPU MEM", "bytes", ((f"{_label(db, t)}/{column.upper()}", d, ts, v)
                                          for t, d, ts, v in db.rows(
            "NPU_MEM", f"select type, deviceId, timestampNs, {column} from NPU_MEM")))
    for column, series in (("readBwLevel", "read_bandwidth"), ("writeBwLevel", "write_band_width"),
                           ("readOstLevel", "read_ost"), ("writeOstLevel", "write_ost")):
        out += _rows("Acc PMU", "", ((f"{series} acc_id {acc}", d, ts, v) for acc, d, ts, v in db.rows(
            "ACC_PMU", f"select accId, deviceId, timestampNs, {column} from ACC_PMU")))
    for column, series in (("mataBwLevel", "Mata Bw Level"), ("l2BufferBwLevel", "L2 Buffer Bw Level")):
        out += _rows("Stars Soc Info", "", ((series, d, ts, v) for d, ts, v in db.rows(
            "SOC_BANDWIDTH_LEVEL", f"select deviceId, timestampNs, {column} from SOC_BANDWIDTH_LEVEL")))
    return out
