"""The CSV files of a torch_npu folder as columns: kernel_details.csv (device tasks), memory_record.csv
(the memory curve), and the side tables (operator_memory, npu_module_mem, operator_details as Columns;
the small step_trace_time.csv and op_statistic.csv as rows). Each file is parsed by pyarrow.csv, or the csv
module where pyarrow refuses it (rows.CsvTable.scan), and every column converted at once (columns.py) by the
rules of the plain reading: exact µs text to ns, N/A to None / -1, malformed rows skipped with one warning;
text cells are mapped once per distinct cell. Units per file are in docs/formats/ascend.md.
"""
from __future__ import annotations

import json
import re

import numpy as np

from canning_tb.ingest import op_args
from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import (EVENT_COLUMNS, METRIC_AIC_TIME, METRIC_AIV_TIME, METRIC_MIX_BLOCK_DIM, NONE, Kind,
                                     Problem, blank_events, is_comm_kernel_name)

from .columns import (cell, dense, distinct, each, float_column, int_column, mapped, mapped_rows, scaled_column, take,
                      texts, us_to_ns_column)
from .rows import (CsvTable, device_digits, device_index, device_name, norm_shapes, norm_stack, read_table,
                   step_value, to_int, unreadable, us_to_ns)

_PMU_FIXED = ((("aicore_time(us)", "aic_total_time(us)"), METRIC_AIC_TIME, 1000.0),
              (("aiv_time(us)", "aiv_total_time(us)"), METRIC_AIV_TIME, 1000.0),
              (("Mix Block Dim", "Mix Block Num"), METRIC_MIX_BLOCK_DIM, 1.0),
              (("cube_utilization(%)",), "cube_utilization_pct", 1.0))


class Mapped(dict):
    """Cell text -> the table's string id of fn(text) (None -> NONE), computed once per distinct cell."""

    def __init__(self, strings, fn):
        super().__init__()
        self.strings, self.fn = strings, fn

    def __missing__(self, cell):
        v = self.fn(cell)
        out = self[cell] = NONE if v is None else self.strings.id(v)
        return out

    def column(self, cells) -> np.ndarray:
        return mapped(cells, self.__getitem__)


def _known_or(values: tuple[np.ndarray, np.ndarray], absent: int) -> np.ndarray:
    a, known = values
    return np.where(known, a, absent)


def _pmu(f: CsvTable) -> list[tuple[str, int, float]]:
    """(metric, column index, scale) of the PMU columns the file has (they depend on aic_metrics)."""
    out = {name: (f.col(*headers), scale) for headers, name, scale in _PMU_FIXED if f.has(*headers)}
    for header in f.header:
        name = header.strip()
        if name.startswith(("aic_", "aiv_")) and name.endswith(("_ratio", "_rate")):
            out[name] = (f.col(header), 1.0)
    return [(name, i, scale) for name, (i, scale) in out.items()]


# kernel_details.csv columns -> `args` parts (ingest/op_args.py), after the kernel's Type
_ARG_HEADERS = ("Input Data Types", "Input Formats", "Output Shapes", "Output Data Types", "Output Formats")


def _kernel_args(cells: tuple) -> str | None:
    """A kernel's `args`: its CANN op type, input dtypes and formats, output shapes, dtypes and formats."""
    typ, types, formats, out_shapes, out_types, out_formats = cells
    shapes = norm_shapes(out_shapes)
    return op_args.encode(op_type=(typ or "").strip() or None, types=op_args.split_list(types),
                          formats=op_args.split_list(formats), out_shapes=json.loads(shapes) if shapes else None,
                          out_types=op_args.split_list(out_types), out_formats=op_args.split_list(out_formats))


def _strip(v):
    return (v or "").strip() or None


class _Kernels:
    """kernel_details.csv chunk by chunk -> event columns (KERNEL / COMM_KERNEL) and PMU metrics."""

    def __init__(self, f: CsvTable, strings, device_hint: int):
        self.f, self.hint = f, device_hint
        self.name = Mapped(strings, lambda v: (v or "").strip())
        self.core = Mapped(strings, _strip)
        self.type = Mapped(strings, _strip)
        self.shapes = Mapped(strings, norm_shapes)
        self.args = Mapped(strings, _kernel_args)
        self.cat = strings.id("kernel_details")
        self.dev: dict = {}
        self.has_dev = f.has("Device_id", "Device ID", "Device Id")
        self.pmu = _pmu(f)
        self.odd = _OddCells()
        self.parts: list[dict] = []
        self.bad_ts = self.bad_dur = 0
        self.strings = strings

    def wanted(self) -> list:
        f = self.f
        return [f.col("Start Time(us)", "Task Start Time(us)"), f.col("Duration(us)", "Task Duration(us)"),
                f.col("Name", "Op Name"), f.col("Type", "OP Type"), f.col("Accelerator Core", "Task Type"),
                f.col("Block Dim", "Block Num"), f.col("Device_id", "Device ID", "Device Id"),
                f.col("Stream ID", "Stream Id"), f.col("Input Shapes")] + [i for _, i, _ in self.pmu] + \
            [f.col(h) for h in _ARG_HEADERS]

    def numbers(self) -> set[int]:
        """The positions in wanted() of number columns (block dim, stream, PMU metrics)."""
        return {5, 7, *range(9, 9 + len(self.pmu))}

    def chunk(self, cols: list) -> None:
        at = {6: None, 8: "Input Shapes", 9 + len(self.pmu) + _ARG_HEADERS.index("Output Shapes"): "Output Shapes"}
        seen = {k: distinct(cols[k]) for k in at}  # each once, for the checks and the columns
        for k, column in at.items():
            if column:
                self.odd.shapes(seen[k], column)
            elif self.has_dev:
                self.odd.devices(seen[k], _header(self.f, ("Device_id", "Device ID", "Device Id")))
        self.odd.rows += len(cols[0])
        ts, ok = us_to_ns_column(cols[0])
        self.bad_ts += int((~ok).sum())
        dur, dok = us_to_ns_column(cols[1])
        for k in np.flatnonzero(ok & ~dok).tolist():  # inf, 1e400: the row, not a silent 0
            if unreadable(cell(cols[1], k)):
                ok[k] = False
                self.bad_dur += 1
        keep = np.flatnonzero(ok)
        if len(keep) != len(ok):
            cols = [take(c, keep) for c in cols]
        else:
            cols = [seen.get(k, c) for k, c in enumerate(cols)]
        part = {"ts": ts[keep], "dur": np.maximum(np.where(dok[keep], dur[keep], 0), 0),
                "name": self.name.column(cols[2]), "core": self.core.column(cols[4]),
                "type": self.type.column(cols[3]), "shapes": self.shapes.column(cols[8]),
                "blocks": _known_or(int_column(cols[5]), NONE), "stream": _known_or(int_column(cols[7]), NONE)}
        dev = mapped(cols[6], self._device)
        part["device"] = np.where(dev == NONE, self.hint, dev).astype(np.int32)
        part["metrics"] = {name: _scaled(float_column(cols[9 + j]), scale)
                           for j, (name, _, scale) in enumerate(self.pmu)}
        more = cols[9 + len(self.pmu):]
        part["args"] = mapped_rows([cols[3], *more], self.args.__getitem__)
        self.parts.append(part)

    def _device(self, cell) -> int:
        d = self.dev.get(cell)
        if d is None:
            d = self.dev[cell] = device_index(cell) if self.has_dev else NONE
        return d

    def result(self):
        parts = self.parts
        n = sum(len(p["ts"]) for p in parts)
        cols = blank_events(n)
        for k in ("ts", "dur", "name", "core", "shapes", "blocks", "stream", "device", "args"):
            if parts:
                cols[k] = _joined([p[k] for p in parts], EVENT_COLUMNS[k])
        cols["cat"][:] = self.cat
        typ = _joined([p["type"] for p in parts], np.int32)
        cols["kind"] = self._kinds(cols["name"], cols["core"], typ)
        metrics = {}
        for name, _, _ in self.pmu:
            m = _joined([p["metrics"][name] for p in parts], np.float64)
            if (~np.isnan(m)).any():
                metrics[name] = m
        return KernelRows(cols, metrics)

    def _kinds(self, name, core, typ) -> np.ndarray:
        comm = _flag(self.strings, core, lambda v: v.upper() in ("HCCL", "COMMUNICATION")) | \
            _flag(self.strings, name, is_comm_kernel_name) | _flag(self.strings, typ, lambda v: v.startswith("hcom"))
        return np.where(comm, Kind.COMM_KERNEL, Kind.KERNEL).astype(np.uint8)


def _scaled(values: np.ndarray, scale: float) -> np.ndarray:
    return values if scale == 1.0 else values * scale  # (x * 1.0 is x, bit for bit)


def _joined(parts: list, dtype) -> np.ndarray:
    """The parts one after another, of `dtype` (the one part itself when there is one: pyarrow's whole file)."""
    if len(parts) == 1:
        return np.asarray(parts[0], dtype)
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


class _OddCells:
    """Cells no torch_npu file holds (a damaged or hand-made file), read as text all the same: a shape dimension
    of 19 digits or more (past int64: norm_shapes keeps the part as text), a device number of 10 digits or more
    (no device index). One warning per kind and column: how many rows, the first one's data row (1-based)."""

    def __init__(self):
        self.rows = 0  # the data rows of the chunks seen before this one
        self.found: dict[str, list[int]] = {}

    def _check(self, cells, what: str, test) -> None:
        flags = mapped(cells, test, bool)
        if flags.any():
            at = np.flatnonzero(flags)
            self.found.setdefault(what, [0, self.rows + int(at[0]) + 1])[0] += len(at)

    def shapes(self, cells, column: str) -> None:
        self._check(cells, f"a dimension of 19 digits or more in {column} (kept as text)", _giant_dimension)

    def devices(self, cells, column: str) -> None:
        self._check(cells, f"a {column} cell that names no device (a number of 10 digits or more)", _giant_device)

    def report(self, problems: list[Problem], display: str) -> None:
        for what, (count, first) in self.found.items():
            problems.append(Problem(display, f"{count} row(s) with {what}; first at data row {first}", "warning"))


_DIGITS19 = re.compile(r"\d{19}")


def _giant_dimension(cell) -> bool:
    return cell is not None and _DIGITS19.search(cell) is not None


def _giant_device(cell) -> bool:
    return len(device_digits(cell)) > 9


def _flag(strings, ids: np.ndarray, fn) -> np.ndarray:
    """fn(text) of each string id (NONE: fn("")), computed once per distinct id."""
    uniq, inverse = dense(ids)
    return np.array([fn(strings[int(i)] or "") for i in uniq], bool)[inverse] if len(uniq) else np.zeros(0, bool)


class KernelRows:
    """kernel_details.csv as event columns (EVENT_COLUMNS) and their metrics (METRIC_*)."""

    def __init__(self, events: dict[str, np.ndarray], metrics: dict[str, np.ndarray]):
        self.events, self.metrics = events, metrics

    def __len__(self) -> int:
        return len(self.events["ts"])


def read_kernel_details(path: str, display: str, problems: list[Problem], strings,
                        device_hint: int) -> KernelRows | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    need = [("Name",), ("Start Time(us)", "Task Start Time(us)"), ("Duration(us)", "Task Duration(us)")]
    missing = [n[0] for n in need if not f.has(*n)]
    if missing:
        problems.append(Problem(display, f"missing column(s) {', '.join(missing)}"))
        return None
    k = _Kernels(f, strings, device_hint)
    for chunk in f.scan(k.wanted(), k.numbers()):
        k.chunk(chunk)
    k.odd.report(problems, display)
    if k.bad_ts:
        problems.append(Problem(display, f"{k.bad_ts} row(s) without a start time skipped", "warning"))
    if k.bad_dur:
        problems.append(Problem(display, f"{k.bad_dur} row(s) with a duration that is no number in range skipped",
                                "warning"))
    return k.result()


def read_memory_record(path: str, display: str, problems: list[Problem], strings) -> dict | None:
    """memory_record.csv -> memory columns (unsorted; bytes); None if unreadable."""
    from canning_tb.ingest.table import MEMORY_COLUMNS
    f = read_table(path, display, problems)
    if f is None:
        return None
    if not f.has("Timestamp(us)"):
        problems.append(Problem(display, "missing column Timestamp(us)"))
        return None
    dev, comp = Mapped(strings, device_name), Mapped(strings, _strip)
    parts, bad = [], 0
    wanted = [f.col("Timestamp(us)"), f.col("Device Type", "Device"), f.col("Total Allocated(MB)"),
              f.col("Total Reserved(MB)"), f.col("Total Active(MB)"), f.col("Component")]
    odd = _OddCells()
    for c in f.scan(wanted, {2, 3, 4}):
        ts, ok = us_to_ns_column(c[0])
        bad += sum(1 for k in np.flatnonzero(~ok).tolist() if unreadable(cell(c[0], k)))
        odd.devices(c[1], _header(f, ("Device Type", "Device")))
        odd.rows += len(ok)
        keep = np.flatnonzero(ok)
        c = [take(col, keep) for col in c] if len(keep) != len(ok) else c
        parts.append({"ts": ts[keep], "device": dev.column(c[1]), "component": comp.column(c[5]),
                      **{key: _known_or(scaled_column(c[i], 1 << 20), NONE)
                         for i, key in ((2, "allocated"), (3, "reserved"), (4, "active"))}})
    if bad:
        problems.append(Problem(display, f"{bad} row(s) with a timestamp that is no number in range skipped",
                                "warning"))
    odd.report(problems, display)
    n = sum(len(p["ts"]) for p in parts)
    cols = {k: np.full(n, NONE, t) for k, t in MEMORY_COLUMNS.items()}
    cols["bytes"][:] = 0
    for k in ("ts", "device", "component", "allocated", "reserved", "active"):
        if parts:
            cols[k] = np.concatenate([p[k] for p in parts]).astype(MEMORY_COLUMNS[k])
    return cols


def _side_columns(f: CsvTable, name: str, spec: dict, odd: _OddCells | None = None) -> side.Columns:
    """A side table from a CSV: spec = column -> (CSV header names, convert(cells) -> encoded column[, True: a
    number column])."""
    keys = list(spec)
    numbers = {k for k, key in enumerate(keys) if spec[key][2:] == (True,)}
    parts = []
    for chunk in f.scan([f.col(*spec[k][0]) for k in keys], numbers):
        parts.append(dict(zip(keys, (spec[k][1](cells) for k, cells in zip(keys, chunk)))))
        if odd is not None:
            odd.rows += len(chunk[0])
    cols = {}
    for k in keys:
        if not parts:
            cols[k] = []
        elif isinstance(parts[0][k], list):
            cols[k] = [v for p in parts for v in p[k]]
        else:
            cols[k] = np.concatenate([p[k] for p in parts])
    return side.Columns.build(name, **cols)


def _ns_or(absent):
    return lambda cells: _known_or(us_to_ns_column(cells), absent)


def _text_or_empty(cells) -> list:
    return each(cells, lambda c: c or "")


def _scaled_or_null(factor: int):
    return lambda cells: _known_or(scaled_column(cells, factor), side.INT_NULL)


def read_operator_memory(path: str, display: str, problems: list[Problem]) -> side.Columns | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    odd = _OddCells()
    device = ("Device Type", "Device")
    out = _side_columns(f, "operator_memory", {
        "name": (("Name",), _text_or_empty), "bytes": (("Size(KB)",), _scaled_or_null(1024), True),
        "alloc_ns": (("Allocation Time(us)",), _ns_or(NONE)), "free_ns": (("Release Time(us)",), _ns_or(NONE)),
        "device": (device, _device_names(odd, _header(f, device)))}, odd)
    odd.report(problems, display)
    return out


def _header(f: CsvTable, names: tuple) -> str:
    i = f.col(*names)
    return names[0] if i is None else f.header[i]


def _device_names(odd: _OddCells, column: str):
    def convert(cells) -> list:
        odd.devices(cells, column)
        return each(cells, device_name)
    return convert


def read_npu_module_mem(path: str, display: str, problems: list[Problem]) -> side.Columns | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    odd = _OddCells()
    device = ("Device", "Device Type")
    out = _side_columns(f, "npu_module_mem", {
        "component": (("Component",), _text_or_empty), "ts_ns": (("Timestamp(us)",), _ns_or(side.INT_NULL)),
        "reserved_bytes": (("Total Reserved(MB)",), _scaled_or_null(1 << 20), True),
        "device": (device, _device_names(odd, _header(f, device)))}, odd)
    odd.report(problems, display)
    return out


def read_operator_details(path: str, display: str, problems: list[Problem]) -> side.Columns | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    odd = _OddCells()
    times = {"host_self_ns": "Host Self Duration(us)", "host_total_ns": "Host Total Duration(us)",
             "device_self_ns": "Device Self Duration(us)", "device_total_ns": "Device Total Duration(us)"}

    def shapes(cells) -> list:
        odd.shapes(cells, "Input Shapes")
        return each(cells, norm_shapes)
    out = _side_columns(f, "operator_details", {
        "name": (("Name",), _text_or_empty), "input_shapes": (("Input Shapes",), shapes),
        "call_stack": (("Call Stack",), lambda c: each(c, norm_stack)),
        **{k: ((h,), _ns_or(side.INT_NULL)) for k, h in times.items()}}, odd)
    odd.report(problems, display)
    return out


STEP_FIELDS = [("computing_ns", "Computing"), ("communication_not_overlapped_ns", "Communication(Not Overlapped)"),
               ("overlapped_ns", "Overlapped"), ("communication_ns", "Communication"), ("free_ns", "Free"),
               ("stage_ns", "Stage"), ("bubble_ns", "Bubble"),
               ("communication_not_overlapped_exclude_receive_ns", "Communication(Not Overlapped and Exclude Receive)"),
               ("preparing_ns", "Preparing")]


def _rows(f: CsvTable, headers: list[tuple]) -> list[list]:
    """The cells of a small file, row by row (one scan)."""
    out = []
    for chunk in f.scan([f.col(*h) for h in headers]):
        out.extend(zip(*map(texts, chunk)))
    return out


def read_step_trace(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    return [side.row("step_trace", step=step_value(r[0]), **{k: us_to_ns(v) for (k, _), v in zip(STEP_FIELDS, r[1:])})
            for r in _rows(f, [("Step",)] + [(c,) for _, c in STEP_FIELDS])]


def read_op_statistic(path: str, display: str, problems: list[Problem]) -> list[dict] | None:
    f = read_table(path, display, problems)
    if f is None:
        return None
    heads = [("OP Type", "Op Type"), ("Core Type",), ("Count",), ("Total Time(us)",), ("Min Time(us)",),
             ("Avg Time(us)",), ("Max Time(us)",)]
    return [side.row("op_statistic", op_type=r[0] or "", core_type=r[1] or "", count=to_int(r[2]),
                     total_ns=us_to_ns(r[3]), min_ns=us_to_ns(r[4]), avg_ns=us_to_ns(r[5]), max_ns=us_to_ns(r[6]))
            for r in _rows(f, heads)]
