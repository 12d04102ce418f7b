"""Tables paged, sorted and searched on the server (GET /operators, /kernels, their CSV downloads),
and CSV formula neutralisation (issue 14, items 7 and 9).

Expected pages come from sorting the route's full list here (Python's stable sort); the 200,000
names and the formula names are in real Kineto trace files written by the test (a hostile trace is
a file anyone can write), read through the real plugin app (werkzeug's test client).
"""
import csv
import gzip
import io
import json

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from canning_tb.analysis.report import Table
from test_plugin_routes import RESNET_WINDOW, build_logdir, make_plugin

ROUTE = "/data/plugin/canning/"
FORMULAS = ["=HYPERLINK(\"http://evil.example/\",\"click\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
            "\tleading tab", "\rleading return"]
MANY = 200_000


def kineto_trace(path, names):
    """A Kineto trace: one ProfilerStep#1 holding one 1 µs cpu_op per name, one after the other."""
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
               "dur": 2 * len(names) + 2}]
    events += [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 1 + 2 * i, "dur": 1 + i % 7}
               for i, name in enumerate(names)]
    with gzip.open(path, "wt") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("paging")
    build_logdir(root)
    (root / "formulas").mkdir()
    kineto_trace(root / "formulas" / "worker0.1.pt.trace.json.gz", FORMULAS + ["aten::mm"])
    (root / "many").mkdir()
    kineto_trace(root / "many" / "worker0.1.pt.trace.json.gz", [f"op_{i:06d}" for i in range(MANY)])
    plugin = make_plugin(root)
    return Client(application.TensorBoardWSGI([plugin]))


def get(client, route, **params):
    resp = client.get(ROUTE + route, query_string=params)
    return resp.status_code, resp.get_data()


def get_json(client, route, **params):
    code, body = get(client, route, **params)
    assert code == 200, body[:300]
    return json.loads(body)


RESNET = {"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW}


def expected(rows, sort, order, search, offset, limit):
    """The page by hand: filter by name, stable sort (text casefolded; equal numbers by name), slice."""
    needle = search.casefold()
    chosen = [r for r in rows if needle in r["name"].casefold()]
    if sort and isinstance(rows[0][sort], str):
        chosen = sorted(chosen, key=lambda r: r[sort].casefold(), reverse=order == "desc")
    elif sort:
        chosen = sorted(chosen, key=lambda r: r["name"].casefold())
        chosen = sorted(chosen, key=lambda r: r[sort], reverse=order == "desc")
    return chosen[offset:offset + limit], len(chosen)


@pytest.mark.parametrize("group_by", ["name", "shape"])
@pytest.mark.parametrize("sort,order", [("host_self_ns", "desc"), ("calls", "asc"), ("name", "asc"),
                                        ("name", "desc"), ("device_total_ns", "desc")])
@pytest.mark.parametrize("search,offset,limit", [("", 0, 1000), ("", 7, 5), ("CONV", 0, 3), ("aten::", 4, 9),
                                                 ("no such op", 0, 10)])
def test_operator_pages_equal_a_sort_of_the_full_list(client, group_by, sort, order, search, offset, limit):
    full = get_json(client, "operators", **RESNET, group_by=group_by)
    assert full["total"] == full["all_rows"] == len(full["rows"]) > 20  # the fixture fits in one page
    page = get_json(client, "operators", **RESNET, group_by=group_by, sort=sort, order=order, search=search,
                    offset=offset, limit=limit)
    rows, total = expected(full["rows"], sort, order, search, offset, limit)
    assert page["rows"] == rows and page["total"] == total and page["all_rows"] == full["all_rows"]
    assert (page["offset"], page["limit"], page["sort"], page["order"], page["search"]) == (offset, limit, sort, order,
                                                                                           search)


def test_kernel_pages_search_the_operator_name_too(client):
    full = get_json(client, "kernels", **RESNET)
    page = get_json(client, "kernels", **RESNET, search="convolution", sort="total_ns", limit=4)
    by_op = [k for k in full["kernels_by_op"] if "convolution" in k["name"].lower() or "convolution" in k["op_name"]]
    assert page["kernels_by_op"] == sorted(by_op, key=lambda k: -k["total_ns"])[:4]
    assert page["kernels_by_op_total"] == len(by_op) > 4
    by_name = [k for k in full["kernels_by_name"] if "convolution" in k["name"].lower()]
    assert page["total"] == len(by_name) and page["kernels_by_name_all"] == len(full["kernels_by_name"])


@pytest.mark.parametrize("params,message", [
    ({"sort": "nope"}, "sort must be one of"), ({"order": "up"}, "order must"), ({"offset": "-1"}, "offset must"),
    ({"limit": "0"}, "limit must"), ({"limit": "1001"}, "limit must"), ({"limit": "x"}, "limit must be an integer")])
def test_bad_page_parameters_are_400(client, params, message):
    code, body = get(client, "operators", **RESNET, **params)
    assert code == 400 and message in json.loads(body)["error"]


def test_200000_distinct_names_answer_a_bounded_page(client):
    many = {"run": "many", "worker": "worker0", "window": "1"}
    code, body = get(client, "operators", **many)
    answer = json.loads(body)
    assert code == 200 and answer["all_rows"] == answer["total"] == MANY
    assert len(answer["rows"]) == 1000 and len(body) < 1_000_000  # whole: 54 MB in the issue
    # the 3 longest: durations cycle 1..7 µs, so the first names with 7 µs (equal times go by name)
    top = get_json(client, "operators", **many, sort="host_self_ns", limit=3)
    names = [r["name"] for r in answer["rows"]]
    want = [f"op_{i:06d}" for i in range(MANY) if i % 7 == 6][:3]
    assert [r["name"] for r in top["rows"]] == want and all(r["host_self_ns"] == 7000 for r in top["rows"])
    found = get_json(client, "operators", **many, search="OP_19999", sort="name", order="desc")
    assert [r["name"] for r in found["rows"]] == [f"op_{i:06d}" for i in range(199999, 199989, -1)]
    assert found["total"] == 10 and names[:2] == sorted(names)[:2]


def test_200000_rows_stream_as_csv(client):
    code, body = get(client, "operators.csv", run="many", worker="worker0", window="1", sort="name")
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert code == 200 and rows[0][:2] == ["name", "calls"] and len(rows) == MANY + 1
    assert [r[0] for r in rows[1:4]] == ["op_000000", "op_000001", "op_000002"]


def test_csv_download_neutralises_formulas(client):
    resp = client.get(ROUTE + "operators.csv", query_string={"run": "formulas", "worker": "worker0", "window": "1"})
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in resp.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(resp.get_data(as_text=True), newline="")))
    head, names = rows[0], {r[0] for r in rows[1:]}
    assert names == {"'" + name for name in FORMULAS} | {"aten::mm"}
    calls = head.index("calls")
    assert all(r[calls] == "1" for r in rows[1:])  # numbers stay numbers
    kernels = client.get(ROUTE + "kernels.csv", query_string={"run": "formulas", "worker": "worker0", "window": "1"})
    assert kernels.status_code == 200
    assert get(client, "kernels.csv", run="formulas", worker="worker0", window="1", group_by="x")[0] == 400


def test_text_twins_csv_neutralises_formulas_and_text_report_cuts_long_names():
    table = Table("t", ["Name", "Calls"], [[FORMULAS[0], -1], ["x" * 5000, 2]])
    rows = list(csv.reader(io.StringIO(table.to_csv())))
    assert rows[1] == ["'" + FORMULAS[0], "-1"] and rows[2][0] == "x" * 5000
    assert max(len(line) for line in str(table).splitlines()) < 120
    assert "x" * 97 + "..." in str(table)
