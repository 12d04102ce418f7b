"""Damaged torch_npu CSVs, each built from a copy of a real window (the level1 rank0 fixture) in tmp_path: a NUL
byte and a dimension of hundreds of digits in an "Input Shapes" cell (kernel_details.csv, operator_details.csv),
a 5,000-digit Device cell (npu_module_mem.csv) and a 12-digit Device_id (kernel_details.csv), kernel_details.csv
with its columns in another order (read by name) or without a column it needs (refused). Each window reads, with
a Problem naming the file and what is wrong with it, and every route of the plugin answers it (never a 500); the
cells the damage left alone read as before."""
import csv
import io
import json
import shutil
import time
from pathlib import Path

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.csv import arrow as csv_arrow
from canning_tb.ingest.ascend.csv import tables as C
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.table import EventTable

from conftest import fixture_path

OUT = "ASCEND_PROFILER_OUTPUT"
HUGE = "9" * 400  # a dimension of 400 digits


def _copy(dst: Path) -> Path:
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _write(path: Path, rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    path.write_bytes(out.getvalue().encode())


def _first_shape_cell(rows: list[list[str]]) -> tuple[int, int]:
    """(row, column) of the first data row's non-empty Input Shapes cell."""
    k = rows[0].index("Input Shapes")
    return next(i for i, r in enumerate(rows) if i and r[k].strip()), k


def _shape_cell(d: Path, name: str, change) -> None:
    path = d / OUT / name
    rows = _rows(path)
    i, k = _first_shape_cell(rows)
    rows[i][k] = change(rows[i][k])
    _write(path, rows)


def _no_trace(d: Path) -> None:
    """operator_details.csv is read when the window has no usable trace_view.json."""
    (d / OUT / "trace_view.json").unlink()


def kernels_nul(d):
    _shape_cell(d, "kernel_details.csv", lambda cell: cell[:3] + "\x00" + cell[3:])


def operator_details_nul(d):
    _no_trace(d)
    _shape_cell(d, "operator_details.csv", lambda cell: cell[:3] + "\x00" + cell[3:])


def kernels_huge_dimension(d):
    _shape_cell(d, "kernel_details.csv", lambda cell: '"' + HUGE + "," + cell.lstrip('"'))


def operator_details_huge_dimension(d):
    _no_trace(d)
    _shape_cell(d, "operator_details.csv", lambda cell: '"' + HUGE + "," + cell.lstrip('"'))


def module_mem_huge_device(d):
    path = d / OUT / "npu_module_mem.csv"
    rows = _rows(path)
    rows[1][rows[0].index("Device")] = "NPU:" + "7" * 5000
    _write(path, rows)


def kernels_huge_device_id(d):
    """The newer kernel_details.csv's leading Device_id column, one cell of 12 digits (past int32)."""
    path = d / OUT / "kernel_details.csv"
    rows = _rows(path)
    _write(path, [["Device_id", *rows[0]]] + [["1" * 12 if i == 1 else "0", *r] for i, r in enumerate(rows[1:], 1)])


def _reordered(rows: list[list[str]]) -> list[list[str]]:
    order = list(range(len(rows[0])))[::-1]  # every column moved
    return [[r[i] for i in order] for r in rows]


def kernels_reordered(d):
    path = d / OUT / "kernel_details.csv"
    _write(path, _reordered(_rows(path)))


def kernels_reordered_without_start(d):
    path = d / OUT / "kernel_details.csv"
    rows = _reordered(_rows(path))
    rows[0][rows[0].index("Start Time(us)")] = "Begin"
    _write(path, rows)


# name -> (change, file, severity, words of the Problem; None: no Problem at all)
CASES = {
    "kernels_nul": (kernels_nul, "kernel_details.csv", "error",
                    "holds a NUL byte (line 2, byte {at}): damaged (torch_npu writes none); file not read"),
    "operator_details_nul": (operator_details_nul, "operator_details.csv", "error", "holds a NUL byte (line 14"),
    "kernels_huge_dimension": (kernels_huge_dimension, "kernel_details.csv", "warning",
                               "1 row(s) with a dimension of 19 digits or more in Input Shapes (kept as text); "
                               "first at data row 1"),
    "operator_details_huge_dimension": (operator_details_huge_dimension, "operator_details.csv", "warning",
                                        "1 row(s) with a dimension of 19 digits or more in Input Shapes"),
    "module_mem_huge_device": (module_mem_huge_device, "npu_module_mem.csv", "warning",
                               "1 row(s) with a Device cell that names no device (a number of 10 digits or more); "
                               "first at data row 1"),
    "kernels_huge_device_id": (kernels_huge_device_id, "kernel_details.csv", "warning",
                               "1 row(s) with a Device_id cell that names no device (a number of 10 digits or more); "
                               "first at data row 1"),
    "kernels_reordered": (kernels_reordered, "kernel_details.csv", None, None),
    "kernels_reordered_without_start": (kernels_reordered_without_start, "kernel_details.csv", "error",
                                        "missing column(s) Start Time(us)"),
}


WINDOW = "rank0_ascend_pt"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A logdir of one run per case (and "good", the window undamaged), each of one window: RUN/WINDOW."""
    root = tmp_path_factory.mktemp("bad_csv")
    _copy(root / "good" / WINDOW)
    for name, (change, *_) in CASES.items():
        change(_copy(root / name / WINDOW))
    return root


def _problems(table, name: str) -> list:
    return [(p.severity, p.message) for p in table.problems if p.file.endswith(name)]


@pytest.mark.parametrize("arrow", ["pyarrow", "csv module"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_damaged_csv_reads_with_a_problem_naming_it(run, case, arrow, monkeypatch):
    monkeypatch.setenv(csv_arrow.ENV, "1" if arrow == "pyarrow" else "0")
    _, name, severity, words = CASES[case]
    table = read_ascend(str(run / case / WINDOW))
    build_digest(table)  # and the analysis takes what was read
    got = _problems(table, name)
    if words is None:
        assert not [p for p in got if p[0] != "info"], got
        return
    if "{at}" in words:
        words = words.format(at=(run / case / WINDOW / OUT / name).read_bytes().index(b"\x00"))
    assert any(s == severity and words in m for s, m in got), got


def _kernels(path: Path) -> tuple:
    strings, problems = EventTable().strings, []
    k = C.read_kernel_details(str(path), "kernel_details.csv", problems, strings, 0)
    text = {c: [strings[int(i)] for i in k.events[c]] for c in ("name", "core", "shapes", "args")}
    numbers = {c: v.tolist() for c, v in k.events.items() if c not in text and c != "cat"}
    return text, numbers, {m: v.tobytes() for m, v in k.metrics.items()}, problems  # (NaN: by its bits)


@pytest.mark.parametrize("arrow", ["pyarrow", "csv module"])
def test_columns_in_another_order_read_by_name(run, arrow, monkeypatch):
    """Every column of kernel_details.csv moved: the same kernels, cell for cell, as the file in its own order."""
    monkeypatch.setenv(csv_arrow.ENV, "1" if arrow == "pyarrow" else "0")
    good = _kernels(run / "good" / WINDOW / OUT / "kernel_details.csv")
    moved = _kernels(run / "kernels_reordered" / WINDOW / OUT / "kernel_details.csv")
    assert moved == good and len(good[1]["ts"]) == 191 and good[2]


@pytest.mark.parametrize("arrow", ["pyarrow", "csv module"])
def test_what_the_damage_left_alone_reads_as_before(run, arrow, monkeypatch):
    """The huge dimension's shape is kept as text (its part quoted, valid JSON); every other cell as in the
    undamaged file; the huge Device cell names no device and its row keeps its other cells."""
    monkeypatch.setenv(csv_arrow.ENV, "1" if arrow == "pyarrow" else "0")
    good = _kernels(run / "good" / WINDOW / OUT / "kernel_details.csv")
    huge = _kernels(run / "kernels_huge_dimension" / WINDOW / OUT / "kernel_details.csv")
    (changed,) = [i for i, (a, b) in enumerate(zip(good[0]["shapes"], huge[0]["shapes"])) if a != b]
    first = json.loads(good[0]["shapes"][changed])[0]  # e.g. [32, 3, 224, 224]: now behind the huge dimension
    assert json.loads(huge[0]["shapes"][changed])[0] == ",".join([HUGE, *map(str, first)])
    assert huge[1] == good[1] and huge[2] == good[2]
    problems = []
    mem = C.read_npu_module_mem(str(run / "module_mem_huge_device" / WINDOW / OUT / "npu_module_mem.csv"), "m",
                                problems)
    plain = C.read_npu_module_mem(str(run / "good" / WINDOW / OUT / "npu_module_mem.csv"), "m", [])
    rows, want = list(mem), list(plain)
    assert rows[0]["device"] == "npu:" + "7" * 5000 and rows[0]["ts_ns"] == want[0]["ts_ns"]
    assert rows[1:] == want[1:]


@pytest.mark.parametrize("arrow", ["pyarrow", "csv module"])
def test_rows_without_a_time_are_skipped_and_the_others_read_as_before(tmp_path, arrow, monkeypatch):
    """A start that is N/A and a duration of 1e400 skip their rows (one warning each), in a file whose third row
    has a huge dimension: the other 188 rows are the undamaged file's, the third's shape kept as text."""
    monkeypatch.setenv(csv_arrow.ENV, "1" if arrow == "pyarrow" else "0")
    src = fixture_path("ascend", "level1", "rank0_ascend_pt", OUT, "kernel_details.csv")
    rows = _rows(src)
    head = rows[0]
    rows[1][head.index("Start Time(us)")] = "N/A"
    rows[2][head.index("Duration(us)")] = "1e400"
    shapes = head.index("Input Shapes")
    third = next(i for i in range(3, len(rows)) if rows[i][shapes].strip())
    rows[third][shapes] = HUGE + "," + rows[third][shapes].strip('"')
    _write(tmp_path / "kernel_details.csv", rows)
    good, got = _kernels(src), _kernels(tmp_path / "kernel_details.csv")
    assert [m for _, m in [(p.severity, p.message) for p in got[3]]] == [
        "1 row(s) with a dimension of 19 digits or more in Input Shapes (kept as text); first at data row "
        f"{third}", "1 row(s) without a start time skipped",
        "1 row(s) with a duration that is no number in range skipped"]
    kept = [k for k in range(len(rows) - 1) if k not in (0, 1)]
    assert got[1]["ts"] == [good[1]["ts"][k] for k in kept] and len(kept) == 189
    for column in ("name", "args"):
        assert got[0][column] == [good[0][column][k] for k in kept]
    at = kept.index(third - 1)
    assert json.loads(got[0]["shapes"][at])[0].startswith(HUGE + ",")
    assert got[0]["shapes"][:at] + got[0]["shapes"][at + 1:] == [good[0]["shapes"][k] for k in kept if k != third - 1]


def test_every_route_answers_the_damaged_windows(run):
    """The plugin over the damaged windows (in-process, TensorBoard's own WSGI app): each window's routes answer
    200, the problem in the overview, never a 500."""
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from canning_tb.plugin.plugin import CanningPlugin
    plugin = CanningPlugin(base_plugin.TBContext(logdir=str(run)), refresh_interval=0.0)
    client = Client(application.TensorBoardWSGI([plugin]))

    def get(route, **query):
        r = client.get("/data/plugin/canning" + route, query_string=query)
        return r.status_code, json.loads(r.data) if r.data else {}
    for _ in range(600):
        status, runs = get("/runs")
        if status == 200 and not runs["loading"] and len(runs["runs"]) == len(CASES) + 1:
            break
        time.sleep(0.1)
    windows = {r["name"]: (r["name"], w["name"], win["id"]) for r in runs["runs"] for w in r["workers"]
               for win in w["windows"]}
    assert sorted(windows) == sorted([*CASES, "good"])
    for case, (run_name, worker, window) in windows.items():
        for route in ("/overview", "/operators", "/kernels", "/memory", "/modules", "/suggestions", "/communication"):
            status, body = get(route, run=run_name, worker=worker, window=window)
            assert status == 200, (case, route, body)
        _, overview = get("/overview", run=run_name, worker=worker, window=window)
        _, name, _, words = CASES.get(case, (None, None, None, None))
        if words is not None:  # the Problem in the answer, naming the file
            problems = [f"{p['file']}: {p['message']}" for p in overview["problems"]]
            assert any(name in p and words.split(" (line")[0] in p for p in problems), problems
